/**
 * The kit's rollout and scaling engine as one pure function: the plan of cloud changes one reconcile
 * makes from one consistent snapshot of the group. No I/O: the scale phase feeds it and executes the
 * plan.
 *
 * @module
 */
import type { PoolInstance } from "./driver-types.js";
import { isInstanceAvailable, liveInstances, victimOrder } from "./instances.js";
import type { ResolvedStrategy } from "./strategy.js";

/** What {@link planPool} is given: one snapshot of the group, and what the pool should be. */
export interface PlanInput {
  /** Desired replicas (with an external autoscaler: the group's own desired size). */
  readonly desired: number;
  /** The group's desired size as the cloud reports it. */
  readonly groupDesired: number;
  /** Every instance the cloud lists (terminated ones are ignored). */
  readonly instances: readonly PoolInstance[];
  /** Whether an instance runs the target template (spec and bootstrap secret). */
  readonly isUpToDate: (instance: PoolInstance) => boolean;
  /** Whether an instance counts as available (default: running and healthy). */
  readonly isAvailable?: (instance: PoolInstance) => boolean;
  /** The resolved strategy. */
  readonly strategy: ResolvedStrategy;
  /** An autoscaler manages the size: never set it, only replace. */
  readonly externallyManaged: boolean;
  /** Leave outdated instances alone (a native rollout replaces them). */
  readonly skipReplacement?: boolean;
  /**
   * Availability is unknown (the workload cluster cannot be read): surge and scale as usual, but
   * delete no outdated instance, since nothing proves its replacement serves.
   */
  readonly holdRollout?: boolean;
  /**
   * Instances to pick first when one must go (MachinePool Machines annotated
   * `cluster.x-k8s.io/delete-machine`).
   */
  readonly deleteFirst?: (instance: PoolInstance) => boolean;
  /**
   * Instances a MachineHealthCheck marked for their owner to remediate: replaced like instances the
   * cloud reports `failed`, within the same in-flight budget, and never an available one while that
   * would leave fewer than `desired − maxUnavailable` available.
   */
  readonly remediate?: (instance: PoolInstance) => boolean;
  /** Remediations already under way outside `instances` (Machines being deleted): they use budget. */
  readonly remediationsInFlight?: number;
  /**
   * Launch nothing (a preflight check holds the pool): no size increase, no delete the cloud would
   * replace; removals that shrink the group still go ahead.
   */
  readonly holdCreates?: boolean;
}

/** One cloud change of a {@link Plan}, in execution order. */
export type PlanAction =
  | {
      readonly kind: "setReplicas";
      readonly replicas: number;
      readonly reason: "ScaleUp" | "ScaleDown" | "Surge";
    }
  | {
      readonly kind: "deleteInstance";
      readonly instance: PoolInstance;
      readonly mode: "shrink" | "replace";
      readonly reason: "ScaleDown" | "Rollout" | "Remediation";
      /** For `Remediation`: who asked — the cloud (`failed`) or a MachineHealthCheck. */
      readonly remediationOf?: "cloud" | "healthCheck";
    };

/** A member a MachineHealthCheck marked that a {@link Plan} does not replace yet, and why. */
export interface RemediationWait {
  /** The member. */
  readonly instance: PoolInstance;
  /**
   * `availability`: taking it would leave fewer than `desired − maxUnavailable` available;
   * `budget`: as many replacements are in flight as the rollout budget allows; `unknown`: the
   * workload cluster cannot be read, so nothing proves availability.
   */
  readonly why: "availability" | "budget" | "unknown";
}

/** The outcome of the kit's plan engine for one reconcile (the `scale` section's `plan`). */
export interface Plan {
  /** Cloud changes, in order. Empty when the pool is where it should be (or must wait). */
  readonly actions: readonly PlanAction[];
  /** Members (not terminating or terminated). */
  readonly live: number;
  /** Members that are available. */
  readonly available: number;
  /** Members not on the target template. */
  readonly outdated: number;
  /** The group size the plan aims at (desired plus any surge). */
  readonly targetGroupSize: number;
  /** True when nothing is left to do: size, membership, availability and templates all match. */
  readonly converged: boolean;
  /** Outdated instances wait because deleting one would break `maxUnavailable`. */
  readonly blockedByAvailability: boolean;
  /** Members the cloud reports `failed` (replaced within the rollout budget). */
  readonly failed: number;
  /**
   * Members a MachineHealthCheck marked for remediation that this plan does not replace yet, each
   * with why.
   */
  readonly remediationWaiting: readonly RemediationWait[];
  /** Members a MachineHealthCheck marked for remediation, this plan's replacements included. */
  readonly healthCheckFailed: number;
  /**
   * Whether the plan would launch instances (raise the size, or delete one the cloud replaces):
   * with `holdCreates`, what it held back. Absent: false.
   */
  readonly creates?: boolean;
}

/**
 * One reconcile's worth of scaling and rolling, from a snapshot. Stateless by design: the surge of a
 * rollout is derived from the number of outdated instances, so a surged group is never "corrected"
 * back while old instances remain, and a scale-down during a rollout removes outdated instances first.
 *
 * - Scale up: raise the group's desired size (to desired + surge while instances are outdated).
 * - Scale down: the kit picks victims ({@link victimOrder}) and deletes them with `shrink`; capacity
 *   not yet launched is removed by lowering the desired size.
 * - Rollout: outdated instances are deleted while availability stays ≥ desired − maxUnavailable; with
 *   surge capacity in the group they `shrink` it, otherwise the cloud `replace`s them from the new
 *   template.
 * - External autoscaler: the size is never set; outdated instances are only replaced.
 * - Remediation: instances the cloud reports `failed` (it gave up on them and will not replace them
 *   itself) are replaced first, while fewer than `max(1, maxSurge + maxUnavailable)` members are
 *   not yet available — the rollout budget, so a cloud that fails every launch is not hammered.
 *   Then instances a MachineHealthCheck marked (`remediate`), newest first, in the same budget; an
 *   available one only while `desired − maxUnavailable` stay available, and none while availability
 *   is unknown. The plan says how many wait and why (`remediationWaiting`).
 *
 * @example
 * ```ts
 * const plan = planPool({ desired: 3, groupDesired: 3, instances, isUpToDate, strategy, externallyManaged: false });
 * for (const action of plan.actions) await execute(action);
 * ```
 */
export function planPool(input: PlanInput): Plan {
  const { desired, strategy, externallyManaged } = input;
  const isAvailable = input.isAvailable ?? isInstanceAvailable;
  const live = liveInstances(input.instances);
  const outdated = input.skipReplacement ? [] : live.filter((i) => !input.isUpToDate(i));
  const available = live.filter(isAvailable);
  // No surge for an autoscaler's pool, nor for one going to zero (old instances just go).
  const surge =
    externallyManaged || desired === 0 ? 0 : Math.min(strategy.maxSurge, outdated.length);
  const targetGroupSize = desired + surge;
  const minAvailable = Math.max(0, desired - strategy.maxUnavailable);
  const actions: PlanAction[] = [];
  const removed = new Set<string>();
  let groupSize = input.groupDesired;
  let availableLeft = available.length;
  let liveLeft = live.length;
  const order = victimOrder(live, input.isUpToDate, strategy.deletePolicy, input.deleteFirst);
  const rolling = outdated.length > 0;

  let creates = false;
  if (!externallyManaged && groupSize < targetGroupSize) {
    creates = true;
  }
  if (!externallyManaged && groupSize < targetGroupSize && !input.holdCreates) {
    actions.push({
      kind: "setReplicas",
      replicas: targetGroupSize,
      reason: groupSize < desired ? "ScaleUp" : "Surge",
    });
    groupSize = targetGroupSize;
  }

  if (!externallyManaged && groupSize > targetGroupSize) {
    let excess = groupSize - targetGroupSize;
    for (const victim of order) {
      if (excess === 0 || liveLeft <= targetGroupSize) break;
      const availableVictim = isAvailable(victim);
      // While rolling, removing capacity must not break the availability budget either.
      if (rolling && availableVictim && availableLeft - 1 < minAvailable) continue;
      actions.push({
        kind: "deleteInstance",
        instance: victim,
        mode: "shrink",
        reason: "ScaleDown",
      });
      removed.add(victim.id);
      excess--;
      liveLeft--;
      groupSize--;
      if (availableVictim) availableLeft--;
    }
    // What is left is capacity the cloud has not launched yet (or that availability protects).
    if (excess > 0 && liveLeft <= targetGroupSize) {
      actions.push({ kind: "setReplicas", replicas: targetGroupSize, reason: "ScaleDown" });
      groupSize = targetGroupSize;
    }
  }

  // Remediation: failed members are unavailable already, so replacing them costs no availability;
  // the budget bounds how many replacements are in flight at once. Members a MachineHealthCheck
  // marked come after them, and an available one only while availability stays above the floor.
  const failed = live.filter((i) => i.state === "failed");
  const marked = input.remediate
    ? live.filter((i) => i.state !== "failed" && input.remediate?.(i) === true)
    : [];
  const isCandidate = (i: PoolInstance) => i.state === "failed" || (input.remediate?.(i) ?? false);
  let inFlight =
    live.filter((i) => !isAvailable(i) && !isCandidate(i)).length +
    (input.remediationsInFlight ?? 0);
  const budget = Math.max(1, strategy.maxSurge + strategy.maxUnavailable);
  const waiting: RemediationWait[] = [];
  const candidates = [
    ...failed.map((instance) => ({ instance, of: "cloud" as const })),
    // Newest first, as core's MachineSet remediates: a Machine failing to come up likely hosts no
    // workload yet.
    ...[...marked]
      .sort((a, b) => b.createdAt - a.createdAt)
      .map((instance) => ({ instance, of: "healthCheck" as const })),
  ];
  for (const { instance: victim, of } of candidates) {
    if (removed.has(victim.id)) continue;
    const availableVictim = isAvailable(victim);
    if (of === "healthCheck") {
      if (input.holdRollout && availableVictim) {
        waiting.push({ instance: victim, why: "unknown" });
        continue;
      }
      if (availableVictim && availableLeft - 1 < minAvailable) {
        waiting.push({ instance: victim, why: "availability" });
        continue;
      }
    }
    if (inFlight >= budget) {
      if (of === "healthCheck") waiting.push({ instance: victim, why: "budget" });
      continue;
    }
    const shrink = !externallyManaged && groupSize > desired;
    if (!shrink) {
      creates = true;
      if (input.holdCreates) continue;
    }
    actions.push({
      kind: "deleteInstance",
      instance: victim,
      mode: shrink ? "shrink" : "replace",
      reason: "Remediation",
      remediationOf: of,
    });
    removed.add(victim.id);
    inFlight++;
    if (shrink) groupSize--;
    if (availableVictim) availableLeft--;
  }

  let blockedByAvailability = false;
  for (const victim of order) {
    if (removed.has(victim.id) || input.isUpToDate(victim) || input.skipReplacement) continue;
    if (input.holdRollout) {
      blockedByAvailability = true;
      continue;
    }
    const availableVictim = isAvailable(victim);
    if (availableVictim && availableLeft - 1 < minAvailable) {
      blockedByAvailability = true;
      continue;
    }
    const shrink = !externallyManaged && groupSize > desired;
    if (!shrink) {
      creates = true;
      if (input.holdCreates) continue;
    }
    actions.push({
      kind: "deleteInstance",
      instance: victim,
      mode: shrink ? "shrink" : "replace",
      reason: "Rollout",
    });
    removed.add(victim.id);
    if (shrink) groupSize--;
    if (availableVictim) availableLeft--;
  }

  const converged =
    actions.length === 0 &&
    outdated.length === 0 &&
    marked.length === 0 &&
    input.groupDesired === desired &&
    live.length === desired &&
    available.length === live.length;
  return {
    actions,
    live: live.length,
    available: available.length,
    outdated: outdated.length,
    targetGroupSize,
    converged,
    blockedByAvailability,
    failed: failed.length,
    remediationWaiting: waiting,
    healthCheckFailed: marked.length,
    ...(creates ? { creates } : {}),
  };
}
