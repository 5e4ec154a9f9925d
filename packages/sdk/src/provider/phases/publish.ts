/**
 * The last phases: the driver's native rollout, pruning unused template versions, and publishing
 * `providerIDList`, `replicas`, provisioned and the `Ready` condition.
 *
 * @module
 */
import { setPoolStatus } from "../../contract/status.js";
import type { PoolGroup } from "../driver.js";
import { StepFailure } from "../errors.js";
import type { PoolPhase } from "../pipeline.js";
import type { Plan } from "../plan.js";
import { PoolReasons } from "../reasons.js";
import type { PoolScope, ReadyState } from "../scope.js";
import { stampIsCurrent } from "../stamp.js";
import { need } from "../state.js";
import { modelInGroup } from "./model.js";
import { pruneVersions } from "./template.js";

/**
 * Publishes every instance that is not terminated. A published ID missing from the cloud's list
 * altogether is kept for `missingInstanceGraceMs` (a lagging list must not make core delete a live
 * Node) — unless the kit deleted that instance or saw it terminating: then it leaves at once.
 * Returns how many IDs the grace kept.
 */
export function publishInstances<Spec, Settings>(
  scope: PoolScope<Spec, Settings>,
  group: PoolGroup<Settings>,
  provisioned: boolean,
): number {
  const ids = new Set(
    group.instances
      .filter((i) => i.state !== "terminated" && i.providerID !== "")
      .map((i) => i.providerID),
  );
  const listed = new Set(group.instances.map((i) => i.providerID));
  const previous = scope.pool.spec?.providerIDList ?? [];
  const { missingSince, departed } = scope.memory;
  const now = scope.clock.now();
  let kept = 0;
  for (const id of previous) {
    if (listed.has(id) || departed.has(id)) continue;
    const since = missingSince.get(id) ?? now;
    missingSince.set(id, since);
    if (now - since < scope.options.missingGraceMs) {
      ids.add(id);
      kept++;
    }
  }
  for (const id of missingSince.keys()) {
    if (listed.has(id) || !ids.has(id)) missingSince.delete(id);
  }
  // A departed ID is remembered until the cloud stops listing it and it left the published list.
  for (const id of departed.keys()) {
    if (!listed.has(id) && !ids.has(id)) departed.delete(id);
  }
  setPoolStatus(scope.pool as never, { providerIDs: ids, replicas: ids.size, ready: provisioned });
  return kept;
}

/** Starts, watches or cancels the driver's native rollout while instances are outdated. */
export const nativeRolloutPhase: PoolPhase<unknown, unknown> = {
  name: "nativeRollout",
  async run(scope) {
    const native = scope.options.useNativeRollout ? scope.driver.nativeRollout : undefined;
    if (!native || !(scope.state.outdated && scope.state.outdated > 0)) return undefined;
    const targetVersion = need(scope.state.targetVersion, "target template version", "template");
    const target = need(scope.state.target, "target stamp", "desiredState");
    const strategy = need(scope.state.strategy, "strategy", "scale");
    const stampOf = new Map((scope.state.versions ?? []).map((v) => [v.version, v.stamp]));
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
        scope.state.rolloutNote = "cancelling a stale rollout";
        return undefined;
      }
      scope.state.rolloutNote = `native rollout ${status.id} running${status.percentComplete !== undefined ? ` (${status.percentComplete}%)` : ""}`;
      return undefined;
    }
    if (status?.state === "cancelling") {
      scope.state.rolloutNote = `waiting for rollout ${status.id} to cancel`;
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
    const desired = need(scope.state.desired, "desired replicas", "group");
    await scope.call("nativeRollout.start", (ctx) =>
      native.start(ctx, {
        replicas: desired,
        maxSurge: strategy.maxSurge,
        maxUnavailable: strategy.maxUnavailable,
      }),
    );
    scope.events.normal(
      "RolloutStarted",
      `started the cloud's rolling replacement to template version ${targetVersion.version}${status?.state === "failed" ? ` (previous rollout failed: ${status.message ?? "no reason given"})` : ""}`,
      { version: targetVersion.version },
    );
    scope.state.rolloutNote = "native rollout started";
    return undefined;
  },
};

/** Prunes unused template versions once the pool is where it should be. */
export const prunePhase: PoolPhase<unknown, unknown> = {
  name: "prune",
  async run(scope) {
    const plan = scope.state.plan;
    if (plan === undefined) return undefined;
    if (plan.outdated !== 0 || plan.actions.length !== 0) return undefined;
    if (scope.options.useNativeRollout && scope.driver.nativeRollout && scope.state.outdated) {
      return undefined;
    }
    await pruneVersions(scope, scope.state.versions ?? []);
    return undefined;
  },
};

function progressState(
  desired: number,
  plan: Plan,
  outdated: number,
  rolloutNote: string | undefined,
): ReadyState {
  if (outdated > 0) {
    return {
      status: "False",
      reason: PoolReasons.RollingOut,
      message: `${outdated} of ${plan.live} instances outdated${plan.blockedByAvailability ? "; waiting for new instances to become available" : ""}${rolloutNote ? `; ${rolloutNote}` : ""}`,
    };
  }
  if (plan.failed > 0) {
    return {
      status: "False",
      reason: PoolReasons.Remediating,
      message: `${plan.failed} of ${plan.live} instances failed; replacing them`,
    };
  }
  if (plan.live < desired) {
    return {
      status: "False",
      reason: PoolReasons.ScalingUp,
      message: `${plan.live} of ${desired} instances`,
    };
  }
  if (plan.live > desired) {
    return {
      status: "False",
      reason: PoolReasons.ScalingDown,
      message: `${plan.live} instances, ${desired} desired`,
    };
  }
  return {
    status: "False",
    reason: PoolReasons.InstancesNotReady,
    message: `${plan.available} of ${desired} instances available`,
  };
}

/** Publishes the pool's status and decides `Ready`. */
export const publishPhase: PoolPhase<unknown, unknown> = {
  name: "publish",
  run(scope) {
    const group = need(scope.state.group ?? undefined, "group", "group");
    const plan = need(scope.state.plan, "plan", "scale");
    const desired = need(scope.state.desired, "desired replicas", "group");
    const outdated = scope.state.outdated ?? 0;
    const lingering = publishInstances(scope, group, scope.state.provisionedNow ?? false);
    if (group.status === "failed") {
      return {
        ready: {
          status: "False",
          reason: PoolReasons.GroupFailed,
          message: group.message ?? `group ${group.id} reports a failure`,
        },
        requeueAfterMs: scope.options.pollMs,
      };
    }
    const unreachable = scope.state.workloadUnavailable;
    if (unreachable) {
      return {
        ready: {
          status: "False",
          reason: PoolReasons.WorkloadClusterUnreachable,
          message: `${unreachable.reason}: ${unreachable.message}; rollouts wait until its Nodes can be read${outdated > 0 ? ` (${outdated} of ${plan.live} instances outdated)` : ""}`,
        },
        requeueAfterMs: Math.max(scope.options.pollMs, unreachable.retryAfterMs),
      };
    }
    const leaving = scope.state.machines?.leaving.size ?? 0;
    if (
      leaving > 0 &&
      plan.converged &&
      outdated === 0 &&
      plan.actions.length === 0 &&
      lingering === 0
    ) {
      return {
        ready: {
          status: "False",
          reason: PoolReasons.ScalingDown,
          message: `waiting for ${leaving} Machine${leaving === 1 ? "" : "s"} to be drained and ${leaving === 1 ? "its instance" : "their instances"} deleted`,
        },
        requeueAfterMs: scope.options.pollMs,
      };
    }
    if (plan.converged && outdated === 0 && plan.actions.length === 0 && lingering === 0) {
      return {
        ready: { status: "True", reason: PoolReasons.Ready, message: "" },
        requeueAfterMs: scope.options.resyncMs,
      };
    }
    return {
      ready: progressState(desired, plan, outdated, scope.state.rolloutNote),
      requeueAfterMs: scope.options.pollMs,
    };
  },
};
