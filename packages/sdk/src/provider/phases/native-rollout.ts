/**
 * The `nativeRollout` phase: while instances are outdated, starts, watches or cancels the driver's
 * native rollout (an Auto Scaling group's instance refresh, a scale set's rolling upgrade) with the
 * resolved strategy's limits.
 *
 * @module
 */
import { StepFailure } from "../errors.js";
import type { PoolPhase } from "../phase.js";
import { PoolReasons } from "../reasons.js";
import { stampIsCurrent } from "../stamp.js";
import { modelInGroup } from "../steps/driver-shape.js";
import { preflightHold } from "../steps/preflight.js";
import { rolloutPercentages } from "../strategy.js";

/** Starts, watches or cancels the driver's native rollout while instances are outdated. */
export const nativeRolloutPhase: PoolPhase<
  unknown,
  unknown,
  "template" | "desired" | "scale" | "group",
  "rollout"
> = {
  name: "nativeRollout",
  reads: ["template", "desired", "scale", "group"],
  writes: ["rollout"],
  async run(scope) {
    const native = scope.options.useNativeRollout ? scope.driver.nativeRollout : undefined;
    const { strategy, outdated } = scope.read("scale");
    if (!native || outdated === 0) {
      scope.write("rollout", { note: undefined });
      return undefined;
    }
    const { version: targetVersion, versions } = scope.read("template");
    const target = scope.read("desired").stamp;
    const stampOf = new Map(versions.map((v) => [v.version, v.stamp]));
    const status = await scope.call("nativeRollout.get", (ctx) => native.get(ctx));
    if (status?.state === "running") {
      const started = status.startedWithVersion;
      // A rolling upgrade of a group's model always moves to the model the group has now: never stale.
      const stale =
        !modelInGroup(scope.driver) &&
        started !== undefined &&
        started !== targetVersion.version &&
        !stampIsCurrent(stampOf.get(started), target);
      if (stale) {
        await scope.call("nativeRollout.cancel", (ctx) => native.cancel(ctx));
        scope.events.normal(
          "RolloutCancelled",
          `cancelled rollout ${status.id}: it started with template version ${started}, the pool now needs ${targetVersion.version}`,
          { rollout: status.id },
        );
        scope.write("rollout", { note: "cancelling a stale rollout" });
        return undefined;
      }
      scope.write("rollout", {
        note: `native rollout ${status.id} running${status.percentComplete !== undefined ? ` (${status.percentComplete}%)` : ""}`,
      });
      return undefined;
    }
    if (status?.state === "cancelling") {
      scope.write("rollout", { note: `waiting for rollout ${status.id} to cancel` });
      return undefined;
    }
    if (
      status?.state === "failed" &&
      (modelInGroup(scope.driver) || status.startedWithVersion === targetVersion.version)
    ) {
      // Restarting a rollout that failed on this very version at once would only fail again:
      // report it and try again after a resync period.
      const failedAt = scope.memory.failedRollout;
      const now = scope.clock.now();
      if (failedAt?.id !== status.id) scope.memory.failedRollout = { id: status.id, at: now };
      if (failedAt?.id !== status.id || now - failedAt.at < scope.options.resyncMs) {
        throw new StepFailure(
          "nativeRollout",
          {
            kind: "terminal",
            reason: PoolReasons.RolloutFailed,
            message: `rollout ${status.id} to template version ${targetVersion.version} failed: ${status.message ?? "no reason given"}; retrying after the resync period`,
          },
          undefined,
        );
      }
    }
    scope.memory.failedRollout = undefined;
    // A rolling replacement launches instances: the preflight checks hold it as they hold the kit's.
    const hold = await preflightHold(scope, "Rollout");
    if (hold) {
      scope.write("rollout", { note: undefined, preflight: hold.ready });
      return undefined;
    }
    const { desired } = scope.read("group");
    await scope.call("nativeRollout.start", (ctx) =>
      native.start(ctx, {
        templateVersion: targetVersion.version,
        replicas: desired,
        maxSurge: strategy.maxSurge,
        maxUnavailable: strategy.maxUnavailable,
        ...rolloutPercentages(desired, strategy.maxSurge, strategy.maxUnavailable),
      }),
    );
    scope.events.normal(
      "RolloutStarted",
      `started the cloud's rolling replacement to template version ${targetVersion.version}${status?.state === "failed" ? ` (previous rollout failed: ${status.message ?? "no reason given"})` : ""}`,
      { version: targetVersion.version },
    );
    scope.write("rollout", { note: "native rollout started" });
    return undefined;
  },
};
