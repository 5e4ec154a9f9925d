/**
 * The `autoscalerBounds` phase: reads the cluster-autoscaler's bounds from the MachinePool's
 * annotations (`…-node-group-min-size`, `…-max-size`) and decides which bounds the group must have,
 * so that the cloud never refuses a size the autoscaler chose (the fight of CAPA #5746 and #4654,
 * where a group's own bounds were narrower than the autoscaler's). It makes no cloud call: the
 * `group` phase writes the bounds, with or before any size change of the reconcile.
 *
 * The rule: the group's bounds are the driver's own (`groupBounds`, from the pool's spec), widened to
 * the autoscaler's bounds and to the MachinePool's replicas whenever the annotations are valid —
 * replicas outside the autoscaler's bounds are reported on the `AutoscalerBounds` condition but applied
 * as asked, never clamped — and widened to the group's current size, so a narrowing never strands it.
 * Invalid annotations are reported and ignored. Without `groupBounds` the kit writes no bounds and only
 * reports when the group's own are narrower than the autoscaler's.
 *
 * @module
 */

import { getCondition } from "../../conditions/v1beta2.js";
import { readAutoscalerBounds } from "../../contract/autoscaler.js";
import { Annotations } from "../../contract/constants.js";
import { readMachinePool } from "../../contract/readers.js";
import type { GroupBounds, PoolGroup } from "../driver.js";
import type { BoundsSection, PoolPhase } from "../phase.js";
import { PoolConditionTypes, PoolReasons } from "../reasons.js";
import type { ReadyState } from "../scope.js";

const show = (bounds: { min?: number; max?: number }): string =>
  `[${bounds.min ?? 0}, ${bounds.max ?? "∞"}]`;

/** The smallest bounds that hold `bounds` and every size of `sizes`. */
function widen(bounds: GroupBounds, sizes: readonly (number | undefined)[]): GroupBounds {
  const known = sizes.filter((s): s is number => s !== undefined);
  return { min: Math.min(bounds.min, ...known), max: Math.max(bounds.max, ...known) };
}

/** Why the driver's own bounds are unusable, or undefined. */
function badOwnBounds(own: GroupBounds): string | undefined {
  const whole = (n: unknown) => typeof n === "number" && Number.isSafeInteger(n) && n >= 0;
  if (!whole(own.min) || !whole(own.max)) {
    return `the driver's groupBounds returned ${JSON.stringify(own)}: min and max must be whole numbers ≥ 0 (fix groupBounds, or the pool's size limits it reads)`;
  }
  if (own.min > own.max) {
    return `the pool's own bounds [${own.min}, ${own.max}] have the minimum above the maximum: lower the minimum or raise the maximum`;
  }
  return undefined;
}

function boundsCondition(
  section: Pick<BoundsSection, "autoscaler" | "wanted">,
  desired: number | undefined,
  group: PoolGroup<unknown> | null,
): ReadyState | undefined {
  const { autoscaler } = section;
  if (autoscaler.state === "absent") return undefined;
  if (autoscaler.state === "invalid") {
    return {
      status: "False",
      reason: PoolReasons.InvalidAutoscalerBounds,
      message: `${autoscaler.problem}; until then the kit ignores the autoscaler's bounds, and so does the cluster-autoscaler`,
    };
  }
  const bounds = show(autoscaler);
  if (desired !== undefined && (desired < autoscaler.min || desired > autoscaler.max)) {
    return {
      status: "False",
      reason: PoolReasons.ReplicasOutsideAutoscalerBounds,
      message: `replicas ${desired} are outside the cluster-autoscaler's bounds ${bounds} (annotations ${Annotations.AutoscalerMinSize} and ${Annotations.AutoscalerMaxSize}); they are applied as asked: change spec.replicas or the annotations if that is not what you want`,
    };
  }
  if (section.wanted === undefined && group) {
    const min = group.minReplicas ?? 0;
    const max = group.maxReplicas ?? Number.POSITIVE_INFINITY;
    if (min > autoscaler.min || max < autoscaler.max) {
      const own = show({ min: group.minReplicas, max: group.maxReplicas });
      return {
        status: "False",
        reason: PoolReasons.AutoscalerBoundsNotCovered,
        message: `the group's bounds ${own} do not cover the cluster-autoscaler's ${bounds}, and the driver cannot widen them (it has no groupBounds): the cloud refuses sizes outside ${own}; widen the pool's own size limits`,
      };
    }
  }
  return {
    status: "True",
    reason: PoolReasons.WithinAutoscalerBounds,
    message: `replicas ${desired ?? "unknown"} are within the cluster-autoscaler's bounds ${bounds}`,
  };
}

/** Decides the group's bounds from the driver's own and the cluster-autoscaler's. */
export const autoscalerBoundsPhase: PoolPhase<unknown, unknown, "spec" | "observed", "bounds"> = {
  name: "autoscalerBounds",
  reads: ["spec", "observed"],
  writes: ["bounds"],
  run(scope) {
    const { context } = scope.read("spec");
    const group = scope.read("observed").group;
    const machinePool = scope.machinePool;
    if (!machinePool) {
      // The controller reconciles a pool only once its MachinePool is there; a test scope may not.
      throw new Error("the autoscalerBounds phase needs the owner MachinePool (scope.machinePool)");
    }
    const mp = readMachinePool(machinePool);
    const autoscaler = readAutoscalerBounds(machinePool);
    // Under an external autoscaler the cloud's size is the truth; else the MachinePool's.
    const desired = mp.replicasManagedByExternalAutoscaler
      ? group?.desiredReplicas
      : (mp.replicas ?? 1);
    const own = scope.driver.groupBounds?.(context);
    if (own) {
      const bad = badOwnBounds(own);
      if (bad) {
        return { ready: { status: "False", reason: PoolReasons.InvalidSpec, message: bad } };
      }
    }
    const wanted =
      own &&
      (autoscaler.state === "valid" ? widen(own, [autoscaler.min, autoscaler.max, desired]) : own);
    const target = wanted && widen(wanted, [group?.desiredReplicas]);
    const condition = boundsCondition({ autoscaler, wanted }, desired, group);
    const previous = getCondition(scope.pool, PoolConditionTypes.AutoscalerBounds);
    if (
      condition?.status === "False" &&
      (previous?.reason !== condition.reason || previous.message !== condition.message)
    ) {
      scope.events.warning(condition.reason, condition.message);
    }
    scope.write("bounds", { wanted, target, autoscaler, condition });
    return undefined;
  },
};
