/**
 * When a pool's Nodes count as available: Ready, and with the MachinePool's `minReadySeconds` Ready
 * for that long (its `Ready` condition's `lastTransitionTime`), as core counts a MachinePool's
 * `availableReplicas`. A step of `scale`: availability is what its rollout budget and `Ready` count.
 *
 * @module
 */
import { readMachinePool } from "../../contract/readers.js";
import { availableInMs } from "../nodes.js";
import type { PoolScope } from "../scope.js";

/** The providerIDs whose Node counts as available, and when the next one that waits will. */
export interface NodeAvailability {
  /** Those of the IDs asked whose Node is available. */
  readonly available: ReadonlySet<string>;
  /** How long until the next Ready Node that is not available yet becomes so; none waits: `undefined`. */
  readonly nextInMs: number | undefined;
}

/**
 * Which of `providerIDs` have an available Node in the workload cluster. Without `minReadySeconds`
 * (or without `scope.api.nodes`, which has the Ready times) that is a Ready Node. Throws
 * `WorkloadClusterUnavailableError` when the workload cluster cannot be read.
 *
 * @example
 * ```ts
 * const { available, nextInMs } = await nodeAvailability(scope, ids);
 * ```
 */
export async function nodeAvailability<Spec, Settings>(
  scope: PoolScope<Spec, Settings>,
  providerIDs: readonly string[],
): Promise<NodeAvailability> {
  const minReadySeconds = scope.machinePool
    ? (readMachinePool(scope.machinePool).minReadySeconds ?? 0)
    : 0;
  const nodes = scope.api.nodes;
  if (!(minReadySeconds > 0) || !nodes) {
    return { available: await scope.api.readyNodeProviderIDs(providerIDs), nextInMs: undefined };
  }
  const found = await nodes.get(providerIDs);
  const now = scope.clock.now();
  const available = new Set<string>();
  let nextInMs: number | undefined;
  for (const [id, node] of found) {
    const wait = availableInMs(node.readySince, minReadySeconds * 1000, now);
    if (wait === undefined) continue;
    if (wait === 0) available.add(id);
    else nextInMs = Math.min(nextInMs ?? wait, wait);
  }
  return { available, nextInMs };
}
