/**
 * The reconcile pipeline: phases over a {@link PoolScope}, run in order until one returns a
 * {@link PhaseResult}. The default lists ({@link defaultPoolPhases}, {@link defaultDeletePhases}) are
 * exported so a provider can insert its own phase with {@link insertPhase}; every list is checked
 * ({@link checkPhases}) before it runs.
 *
 * @module
 */

import type { PhaseResult, PoolPhase } from "./phase.js";
import { autoscalerBoundsPhase } from "./phases/autoscaler-bounds.js";
import { capacityPhase } from "./phases/capacity.js";
import { groupPhase } from "./phases/group.js";
import { machinesPhase } from "./phases/machines.js";
import { nativeRolloutPhase } from "./phases/native-rollout.js";
import { nodesPhase } from "./phases/nodes.js";
import { observePhase } from "./phases/observe.js";
import {
  bootstrapDataPhase,
  cloudAccessPhase,
  clusterInfrastructurePhase,
  desiredStatePhase,
  validateSpecPhase,
} from "./phases/prerequisites.js";
import { prunePhase } from "./phases/prune.js";
import { publishPhase } from "./phases/publish.js";
import { scalePhase } from "./phases/scale.js";
import { teardownPhase } from "./phases/teardown.js";
import { templatePhase } from "./phases/template.js";
import type { PoolScope } from "./scope.js";
import { checkPhaseOrder, runPhase } from "./sections.js";

/**
 * The phases of a pool that is not being deleted, in order: `clusterInfrastructure`,
 * `cloudAccess` (the Cluster's infrastructure object and the pool's credentials), `validateSpec`, `capacity` (the driver's `capacity` as `status.capacity` and `status.nodeInfo`,
 * for scale from zero), `bootstrapData`, `desiredState` (template inputs, settings, purity), `observe`
 * (template versions and group, duplicate IDs), `template`, `autoscalerBounds` (the bounds the group
 * needs for the cluster-autoscaler's annotations), `group` (create, replicas, settings, bounds),
 * `machines` (MachinePool Machines: one InfraMachine per instance, instances of drained
 * Machines deleted; does nothing for a kind without them), `nodes` (the MachinePool's taints and
 * Node labels on the pool's Nodes; does nothing without a `ClusterCache`), `scale` (scale, roll, remediate),
 * `nativeRollout` (the driver's own rollout, if it has one), `prune` (unused template versions),
 * `publish` (`providerIDList`, replicas, provisioned, `Ready`). Each reads and writes the sections
 * of `PoolSections` its declaration names.
 *
 * @example
 * ```ts
 * defaultPoolPhases().map((phase) => phase.name);
 * ```
 */
export function defaultPoolPhases<Spec, Settings>(): PoolPhase<Spec, Settings>[] {
  return [
    clusterInfrastructurePhase,
    cloudAccessPhase,
    validateSpecPhase,
    capacityPhase,
    bootstrapDataPhase,
    desiredStatePhase,
    observePhase,
    templatePhase,
    autoscalerBoundsPhase,
    groupPhase,
    machinesPhase,
    nodesPhase,
    scalePhase,
    nativeRolloutPhase,
    prunePhase,
    publishPhase,
  ] as PoolPhase<Spec, Settings>[];
}

/**
 * The phases of a pool being deleted: `cloudAccess` (the pool's credentials), `teardown` (delete
 * the group, wait until it is gone, delete the template).
 *
 * @example
 * ```ts
 * defaultDeletePhases().map((phase) => phase.name); // ["cloudAccess", "teardown"]
 * ```
 */
export function defaultDeletePhases<Spec, Settings>(): PoolPhase<Spec, Settings>[] {
  return [cloudAccessPhase, teardownPhase] as PoolPhase<Spec, Settings>[];
}

/**
 * A copy of `phases` with `phase` inserted before or after the phase named `at`. Refuses a phase
 * that reads a section no phase before it writes, or writes a section another phase writes.
 *
 * @example
 * ```ts
 * machinePoolController(driver, {
 *   manager, kind: FooMachinePool,
 *   phases: (defaults) => insertPhase(defaults, { before: "publish" }, recordGroupId),
 * });
 * ```
 */
export function insertPhase<Spec, Settings>(
  phases: readonly PoolPhase<Spec, Settings>[],
  at: { readonly before: string } | { readonly after: string },
  phase: PoolPhase<Spec, Settings>,
): PoolPhase<Spec, Settings>[] {
  const name = "before" in at ? at.before : at.after;
  const index = phases.findIndex((p) => p.name === name);
  if (index < 0) {
    throw new Error(
      `insertPhase: no phase named ${JSON.stringify(name)} (phases: ${phases.map((p) => p.name).join(", ")})`,
    );
  }
  if (phases.some((p) => p.name === phase.name)) {
    throw new Error(`insertPhase: a phase named ${JSON.stringify(phase.name)} is already there`);
  }
  const copy = [...phases];
  const position = "before" in at ? index : index + 1;
  copy.splice(position, 0, phase);
  const before = new Set(copy.slice(0, position).flatMap((p) => p.writes));
  const unwritten = phase.reads.find((section) => !before.has(section));
  if (unwritten !== undefined) {
    const writer = copy.find((p) => p.writes.includes(unwritten));
    throw new TypeError(
      `insertPhase: "${phase.name}" reads the ${unwritten} section, which ${writer ? `"${writer.name}" writes after it; insert it after "${writer.name}"` : "no phase of the list writes"}`,
    );
  }
  const owned = phase.writes.find((section) =>
    copy.some((p) => p !== phase && p.writes.includes(section)),
  );
  if (owned !== undefined) {
    const owner = copy.find((p) => p !== phase && p.writes.includes(owned));
    throw new TypeError(
      `insertPhase: "${phase.name}" writes the ${owned} section, which "${owner?.name}" writes; a section has one writer`,
    );
  }
  return copy;
}

/**
 * Checks a phase list before it runs: unique names, one writer per section, and every section a
 * phase reads written by an earlier phase. The controller runs it on its lists when it is built;
 * call it in a provider's own test of its list.
 *
 * @example
 * ```ts
 * checkPhases(insertPhase(defaultPoolPhases(), { before: "publish" }, recordGroupId));
 * ```
 */
export function checkPhases<Spec, Settings>(phases: readonly PoolPhase<Spec, Settings>[]): void {
  checkPhaseOrder(phases);
}

/**
 * Runs phases in order until one returns a result, each on its view of the scope; a pipeline that
 * runs to its end leaves the pool `Ready` and comes back after the resync period.
 */
export async function runPhases<Spec, Settings>(
  phases: readonly PoolPhase<Spec, Settings>[],
  scope: PoolScope<Spec, Settings>,
): Promise<PhaseResult> {
  for (const phase of phases) {
    const result = await runPhase(phase, scope);
    if (result) return result;
  }
  return {
    ready: { status: "True", reason: "Ready", message: "" },
    requeueAfterMs: scope.options.resyncMs,
  };
}

/**
 * A copy of `phases` with the phase named `name` replaced by `phase` (a provider's own `scale`, say),
 * checked like the list the controller runs ({@link checkPhases}).
 *
 * @example
 * ```ts
 * phases: (defaults) => replacePhase(defaults, "prune", keepEveryVersionPhase),
 * ```
 */
export function replacePhase<Spec, Settings>(
  phases: readonly PoolPhase<Spec, Settings>[],
  name: string,
  phase: PoolPhase<Spec, Settings>,
): PoolPhase<Spec, Settings>[] {
  const index = phases.findIndex((p) => p.name === name);
  if (index < 0) {
    throw new TypeError(
      `replacePhase: no phase named ${JSON.stringify(name)} (phases: ${phases.map((p) => p.name).join(", ")})`,
    );
  }
  const copy = [...phases];
  copy[index] = phase;
  try {
    checkPhaseOrder(copy);
  } catch (error) {
    throw new TypeError(`replacePhase: ${(error as Error).message.replace(/^phases: /, "")}`);
  }
  return copy;
}
