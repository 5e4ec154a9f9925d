/**
 * The reconcile pipeline: phases over a {@link PoolScope}, run in order until one returns a
 * {@link PhaseResult}. The default lists ({@link defaultPoolPhases}, {@link defaultDeletePhases}) are
 * exported so a provider can insert its own phase with {@link insertPhase}.
 *
 * @module
 */
import { groupPhase } from "./phases/group.js";
import { machinesPhase } from "./phases/machines.js";
import { observePhase } from "./phases/observe.js";
import {
  bootstrapDataPhase,
  clusterInfrastructurePhase,
  desiredStatePhase,
  validateSpecPhase,
} from "./phases/prerequisites.js";
import { nativeRolloutPhase, prunePhase, publishPhase } from "./phases/publish.js";
import { scalePhase } from "./phases/scale.js";
import { teardownPhase } from "./phases/teardown.js";
import { templatePhase } from "./phases/template.js";
import type { PhaseResult, PoolScope } from "./scope.js";

/**
 * One step of a pool's reconcile. Return nothing to go on with the next phase, or a
 * {@link PhaseResult} to end the reconcile with that `Ready` condition. Throw a driver failure (let
 * `scope.call` throw) to hand it to the error policy.
 *
 * @typeParam Spec - the provider's spec type
 * @typeParam Settings - the driver's group settings
 *
 * @example A provider phase that records the group's ID in the provider's own status field
 * ```ts
 * const recordGroupId: PoolPhase<FooSpec, FooSettings> = {
 *   name: "recordGroupId",
 *   run(scope) {
 *     const group = scope.state.group;
 *     if (group) scope.status.setProviderStatus({ groupId: group.id });
 *   },
 * };
 * ```
 */
export interface PoolPhase<Spec, Settings> {
  /** A unique name (logs, {@link insertPhase}). */
  readonly name: string;
  /** The phase's work. */
  run(scope: PoolScope<Spec, Settings>): Promise<PhaseResult | undefined> | PhaseResult | undefined;
}

/**
 * The phases of a pool that is not being deleted, in order: `clusterInfrastructure`,
 * `validateSpec`, `bootstrapData`, `desiredState` (template inputs, settings, purity), `observe`
 * (template versions and group, duplicate IDs), `template`, `group` (create, replicas, settings,
 * bounds), `machines` (MachinePool Machines: one InfraMachine per instance, instances of drained
 * Machines deleted; does nothing for a kind without them), `scale` (scale, roll, remediate), `nativeRollout`, `prune`, `publish`.
 *
 * @example
 * ```ts
 * defaultPoolPhases().map((phase) => phase.name);
 * ```
 */
export function defaultPoolPhases<Spec, Settings>(): PoolPhase<Spec, Settings>[] {
  return [
    clusterInfrastructurePhase,
    validateSpecPhase,
    bootstrapDataPhase,
    desiredStatePhase,
    observePhase,
    templatePhase,
    groupPhase,
    machinesPhase,
    scalePhase,
    nativeRolloutPhase,
    prunePhase,
    publishPhase,
  ] as PoolPhase<Spec, Settings>[];
}

/**
 * The phases of a pool being deleted: `teardown` (delete the group, wait until it is gone, delete
 * the template).
 *
 * @example
 * ```ts
 * defaultDeletePhases().map((phase) => phase.name); // ["teardown"]
 * ```
 */
export function defaultDeletePhases<Spec, Settings>(): PoolPhase<Spec, Settings>[] {
  return [teardownPhase] as PoolPhase<Spec, Settings>[];
}

/**
 * A copy of `phases` with `phase` inserted before or after the phase named `at`.
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
  copy.splice("before" in at ? index : index + 1, 0, phase);
  return copy;
}

/**
 * Runs phases in order until one returns a result; a pipeline that runs to its end leaves the pool
 * `Ready` and comes back after the resync period.
 *
 * @example
 * ```ts
 * const result = await runPhases(defaultPoolPhases(), scope);
 * ```
 */
export async function runPhases<Spec, Settings>(
  phases: readonly PoolPhase<Spec, Settings>[],
  scope: PoolScope<Spec, Settings>,
): Promise<PhaseResult> {
  for (const phase of phases) {
    const result = await phase.run(scope);
    if (result) return result;
  }
  return {
    ready: { status: "True", reason: "Ready", message: "" },
    requeueAfterMs: scope.options.resyncMs,
  };
}
