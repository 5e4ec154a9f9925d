/**
 * The group phase: creates the group, hands the replica count back to the MachinePool under an
 * external autoscaler, keeps the group's settings, bounds (those the `autoscalerBounds` phase chose,
 * for a driver with `groupBounds`) and launch template version current — in one `updateGroup`, before
 * any size change of the reconcile — and refuses a desired size outside the pool's bounds. Stops a
 * runaway when `getGroup` never reports the settings or the bounds `updateGroup` applied.
 *
 * @module
 */
import { readMachinePool } from "../../contract/readers.js";
import { characterCount, hasUnsafeCharacters } from "../../runtime/text.js";
import type { GroupBounds, GroupUpdate, PoolGroup } from "../driver.js";
import { lostGroupRecord, MoveAnnotations } from "../move.js";
import type { BoundsSection, PoolPhase } from "../phase.js";
import { PoolReasons } from "../reasons.js";
import {
  countedSinceRelease,
  MAX_UNCONVERGED_BOUNDS_UPDATES,
  MAX_UNCONVERGED_SETTINGS_UPDATES,
  stopRunaway,
} from "../runaway.js";
import type { PoolScope } from "../scope.js";
import { stableStringify } from "../stamp.js";
import { modelInGroup } from "../steps/driver-shape.js";
import { preflightHold } from "../steps/preflight.js";
import { publishInstances } from "../steps/publish-instances.js";
import { userDataFor } from "../steps/user-data.js";

/** Creates or updates the group so that it matches the pool. */
export const groupPhase: PoolPhase<
  unknown,
  unknown,
  "observed" | "template" | "desired" | "bootstrap" | "bounds",
  "group"
> = {
  name: "group",
  reads: ["observed", "template", "desired", "bootstrap", "bounds"],
  writes: ["group"],
  async run(scope) {
    const observed = scope.read("observed").group;
    const targetVersion = scope.read("template").version;
    const { settings, stamp } = scope.read("desired");
    const bootstrap = scope.read("bootstrap");
    const bounds = scope.read("bounds");
    const machinePool = scope.machinePool;
    if (!machinePool) {
      // The controller reconciles a pool only once its MachinePool is there; a test scope may not.
      throw new Error("the group phase needs the owner MachinePool (scope.machinePool)");
    }
    const mp = readMachinePool(machinePool);
    const external = mp.replicasManagedByExternalAutoscaler;

    if (!observed) {
      const lost = lostGroupRecord(scope.pool);
      if (lost !== undefined) {
        // Moved (or restored) without its group: a second set of instances is the one thing that
        // must not happen. Say what is missing; a resync looks again.
        return {
          ready: {
            status: "False",
            reason: PoolReasons.GroupNotFound,
            message: `the pool's group ${describeRecord(lost)} (annotation ${MoveAnnotations.GroupCreated}) was not found by the pool's name and namespace, and the pool's status is empty (moved by clusterctl move or restored from a backup): nothing was created. Point the provider at the cloud account and region that hold the group, or remove the annotation to create a new group`,
          },
          requeueAfterMs: scope.options.resyncMs,
        };
      }
      const replicas = external ? undefined : (mp.replicas ?? 1);
      if (replicas !== undefined && bounds.wanted && outside(replicas, bounds.wanted)) {
        return outOfRange(scope, replicas, bounds.wanted);
      }
      // A group launches its instances as it is created: the preflight checks come first.
      const hold = replicas === 0 ? undefined : await preflightHold(scope, "Scale up");
      if (hold) return { ready: hold.ready, requeueAfterMs: scope.options.pollMs };
      const model = modelInGroup(scope.driver)
        ? await userDataFor(scope, "createGroup", bootstrap, stamp)
        : undefined;
      await scope.call("createGroup", (ctx) =>
        scope.driver.createGroup(ctx, {
          replicas,
          templateVersion: targetVersion.version,
          settings,
          ...(bounds.target ? { bounds: bounds.target } : {}),
          ...(model ? { model } : {}),
        }),
      );
      scope.events.normal(
        "GroupCreated",
        `created group with ${replicas ?? "the cloud's default number of"} replicas on template version ${targetVersion.version}`,
        { replicas, version: targetVersion.version },
      );
      return {
        ready: { status: "False", reason: PoolReasons.Provisioning, message: "group created" },
        requeueAfterMs: scope.options.pollMs,
      };
    }
    let group = observed;
    recordGroup(scope.pool, group.id);

    const desired = external ? group.desiredReplicas : (mp.replicas ?? 1);
    if (external && mp.replicas !== group.desiredReplicas) {
      await scope.api.setMachinePoolReplicas(machinePool, group.desiredReplicas);
      scope.events.normal(
        "ReplicasSynced",
        `MachinePool replicas set to ${group.desiredReplicas} from the cloud (managed by an external autoscaler)`,
        { from: mp.replicas, to: group.desiredReplicas },
      );
    }

    // Settings and template of the group (new launches only; no instance is touched).
    const update: { -readonly [K in keyof GroupUpdate<unknown>]: GroupUpdate<unknown>[K] } = {};
    const wanted = stableStringify(settings);
    if (stableStringify(group.settings) !== wanted) {
      const streak = countedSinceRelease(scope.memory, scope.memory.settingsUpdates);
      const count = streak?.desired === wanted ? streak.count : 0;
      if (count >= MAX_UNCONVERGED_SETTINGS_UPDATES) {
        return stopRunaway(
          scope,
          PoolReasons.SettingsNotConverging,
          `updateGroup applied these settings ${count} times but getGroup still reports others (differing: ${differingKeys(settings, group.settings)}); report settings in exactly the shape groupSettings returns (same keys, lists sorted)`,
        );
      }
      scope.memory.settingsUpdates = {
        desired: wanted,
        count: count + 1,
        releases: scope.memory.runawayReleases,
      };
      update.settings = settings;
    } else {
      scope.memory.settingsUpdates = undefined;
    }
    if (!modelInGroup(scope.driver) && group.templateVersion !== targetVersion.version) {
      update.templateVersion = targetVersion.version;
    }
    const target = bounds.target;
    if (target && (group.minReplicas !== target.min || group.maxReplicas !== target.max)) {
      const key = `${target.min}/${target.max}`;
      const streak = scope.memory.boundsUpdates;
      const count = streak?.desired === key ? streak.count : 0;
      if (count >= MAX_UNCONVERGED_BOUNDS_UPDATES) {
        return stopRunaway(
          scope,
          PoolReasons.BoundsNotConverging,
          `updateGroup applied the bounds [${target.min}, ${target.max}] ${count} times but getGroup still reports [${group.minReplicas ?? "unset"}, ${group.maxReplicas ?? "unset"}]; report minReplicas and maxReplicas as the cloud has them, and apply GroupUpdate.bounds`,
        );
      }
      scope.memory.boundsUpdates = { desired: key, count: count + 1 };
      update.bounds = target;
    } else {
      scope.memory.boundsUpdates = undefined;
    }
    if (
      update.settings !== undefined ||
      update.templateVersion !== undefined ||
      update.bounds !== undefined
    ) {
      await scope.call("updateGroup", (ctx) => scope.driver.updateGroup(ctx, update));
      const parts: string[] = [];
      if (update.bounds !== undefined) parts.push(boundsChange(group, update.bounds, bounds));
      if (update.settings !== undefined) parts.push("settings drifted");
      if (update.templateVersion !== undefined)
        parts.push(`launches now use template version ${update.templateVersion}`);
      scope.events.normal("GroupUpdated", parts.join("; "), {
        templateVersion: update.templateVersion,
        settings: update.settings !== undefined,
        ...(update.bounds
          ? { minReplicas: update.bounds.min, maxReplicas: update.bounds.max }
          : {}),
      });
      if (update.settings !== undefined) {
        // Bounds may have changed: plan with the cloud's view next time.
        return {
          ready: {
            status: "False",
            reason: PoolReasons.ScalingUp,
            message: "group settings updated",
          },
          requeueAfterMs: scope.options.pollMs,
        };
      }
      group = {
        ...group,
        ...(update.templateVersion !== undefined
          ? { templateVersion: update.templateVersion }
          : {}),
        ...(update.bounds
          ? { minReplicas: update.bounds.min, maxReplicas: update.bounds.max }
          : {}),
      };
    }

    // The desired size must fit the pool's bounds (a cloud 400 on every loop helps nobody): the ones
    // the kit gives the group, else the group's own.
    const limits = bounds.wanted ?? { min: group.minReplicas, max: group.maxReplicas };
    if (!external && outside(desired, limits)) {
      publishInstances(scope, group, false);
      return outOfRange(scope, desired, limits);
    }
    scope.write("group", { group, desired, external });
    return undefined;
  },
};

/**
 * Records the group on the pool once the driver reports it (not when created: a cloud that lists a
 * new group late would otherwise make a new pool look moved). The record survives `clusterctl move`.
 */
function recordGroup(pool: { metadata?: { annotations?: Record<string, string> } }, id: string) {
  const annotations = pool.metadata?.annotations ?? {};
  if (annotations[MoveAnnotations.GroupCreated] === id) return;
  pool.metadata = {
    ...pool.metadata,
    annotations: { ...annotations, [MoveAnnotations.GroupCreated]: id },
  };
}

function outside(size: number, limits: { min?: number | undefined; max?: number | undefined }) {
  return (
    (limits.min !== undefined && size < limits.min) ||
    (limits.max !== undefined && size > limits.max)
  );
}

function outOfRange<Spec, Settings>(
  scope: PoolScope<Spec, Settings>,
  desired: number,
  limits: { min?: number | undefined; max?: number | undefined },
) {
  return {
    ready: {
      status: "False" as const,
      reason: PoolReasons.ReplicasOutOfRange,
      message: `MachinePool replicas ${desired} is outside the group's bounds [${limits.min ?? 0}, ${limits.max ?? "∞"}]; change the replicas or the pool's size limits`,
    },
    requeueAfterMs: scope.options.resyncMs,
  };
}

/** The Event text of a bounds write: from, to, and for whom. */
function boundsChange(group: PoolGroup<unknown>, to: GroupBounds, bounds: BoundsSection): string {
  const from = `[${group.minReplicas ?? "unset"}, ${group.maxReplicas ?? "unset"}]`;
  const autoscaler = bounds.autoscaler;
  const why =
    autoscaler.state === "valid"
      ? ` (covering the cluster-autoscaler's [${autoscaler.min}, ${autoscaler.max}])`
      : "";
  return `bounds ${from} → [${to.min}, ${to.max}]${why}`;
}

/** The top-level keys whose values differ; values are left out, in case a setting is sensitive. */
function differingKeys(wanted: unknown, reported: unknown): string {
  const a = (wanted ?? {}) as Record<string, unknown>;
  const b = (reported ?? {}) as Record<string, unknown>;
  if (typeof a !== "object" || typeof b !== "object") return "the whole value";
  const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])]
    .filter((key) => stableStringify(a[key]) !== stableStringify(b[key]))
    .sort();
  return keys.length > 0 ? keys.join(", ") : "the whole value";
}

/**
 * The group-created record as a message shows it: anyone who may edit the pool writes it, so a long
 * or unprintable one is described by its length, never quoted.
 */
function describeRecord(record: string): string {
  const characters = characterCount(record);
  return characters <= 128 && !hasUnsafeCharacters(record)
    ? record
    : `(a record of ${characters} characters)`;
}
