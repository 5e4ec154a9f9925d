/**
 * What the cluster-autoscaler's Cluster API provider (`cloudprovider/clusterapi` of
 * kubernetes/autoscaler) writes where an InfraMachinePool provider can read it: the node-group bounds
 * it reads from a MachinePool's annotations, and the taint it puts on a Node it is about to remove.
 *
 * @module
 */
import { hasUnsafeCharacters } from "../runtime/text.js";
import { Annotations } from "./constants.js";
import type { AnyObject } from "./readers.js";

/**
 * The taint the cluster-autoscaler puts on a Node before it drains and removes it
 * (`taints.MarkToBeDeleted`: key `ToBeDeletedByClusterAutoscaler`, effect `NoSchedule`, the value the
 * Unix time it was set). A scale-down that follows lowers the node group's replicas by one; for a
 * MachinePool without MachinePool Machines that is all it does, so the Node's taint is the only sign of
 * which instance it chose.
 */
export const ClusterAutoscalerTaint = {
  /** The taint's key. */
  key: "ToBeDeletedByClusterAutoscaler",
  /** `NoSchedule`: no new pods while the autoscaler drains the Node. */
  effect: "NoSchedule",
} as const;

/**
 * The cluster-autoscaler's bounds of a node group, as its MachinePool's annotations give them:
 * - `absent`: neither `…-node-group-min-size` nor `…-max-size` is set (the autoscaler does not manage
 *   the pool);
 * - `valid`: `min` and `max`, both inclusive (a missing one of the two is 0, as the autoscaler reads it);
 * - `invalid`: an annotation is not a whole number ≥ 0, or the minimum exceeds the maximum; `problem`
 *   says which annotation, what it holds and what to write instead.
 */
export type AutoscalerBounds =
  | { readonly state: "absent" }
  | { readonly state: "valid"; readonly min: number; readonly max: number }
  | { readonly state: "invalid"; readonly problem: string };

/** What Go's `strconv.Atoi` accepts, which the autoscaler parses the annotations with. */
const INTEGER = /^[+-]?\d+$/;
/** The largest bound a node group can have: replicas are an int32 in Cluster API. */
const MAX_AUTOSCALER_BOUND = 2_147_483_647;
/** The longest annotation value a message quotes; a longer one is described by its length. */
const QUOTED_VALUE_CHARACTERS = 32;

/** An annotation value as a message shows it: anyone who may edit the MachinePool wrote it. */
function describeValue(text: string): string {
  return text.length <= QUOTED_VALUE_CHARACTERS && !hasUnsafeCharacters(text)
    ? JSON.stringify(text)
    : `a value of ${text.length} characters`;
}

function parseSize(
  annotations: Readonly<Record<string, string>>,
  key: string,
): { value: number | undefined; problem?: string } {
  if (!Object.hasOwn(annotations, key)) return { value: undefined };
  const text = annotations[key] as string;
  const size = key === Annotations.AutoscalerMinSize ? "minimum" : "maximum";
  const value = INTEGER.test(text) ? Number(text) : Number.NaN;
  if (value > MAX_AUTOSCALER_BOUND) {
    // Never sent to the cloud: replicas beyond an int32 cannot be a MachinePool's.
    return {
      value: undefined,
      problem: `annotation ${key} is ${describeValue(text)}, above ${MAX_AUTOSCALER_BOUND} (replicas are an int32 in Cluster API): set it to the node group's ${size} size, at most ${MAX_AUTOSCALER_BOUND}`,
    };
  }
  if (!Number.isSafeInteger(value) || value < 0) {
    return {
      value: undefined,
      problem: `annotation ${key} is ${describeValue(text)}, not a whole number ≥ 0: set it to the node group's ${key === Annotations.AutoscalerMinSize ? "minimum" : "maximum"} size, e.g. "${key === Annotations.AutoscalerMinSize ? "1" : "10"}"`,
    };
  }
  return { value };
}

/**
 * Reads the cluster-autoscaler's bounds from a MachinePool's annotations
 * (`cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size` and `…-max-size`), as the autoscaler
 * does (`parseScalingBounds` in its `clusterapi_utils.go`): each a whole number from 0 to 2147483647
 * (replicas are an int32; a larger bound is never sent to the cloud), a missing one 0,
 * the minimum not above the maximum. Never throws: a value the autoscaler would refuse comes back
 * `invalid`, with what is wrong and what to do.
 *
 * @example
 * ```ts
 * readAutoscalerBounds(machinePool);
 * // { state: "valid", min: 1, max: 5 } for min-size "1", max-size "5"
 * // { state: "invalid", problem: "annotation …-min-size is \"two\", not a whole number ≥ 0: …" }
 * ```
 */
export function readAutoscalerBounds(obj: AnyObject): AutoscalerBounds {
  const annotations = obj.metadata?.annotations ?? {};
  const minKey = Annotations.AutoscalerMinSize;
  const maxKey = Annotations.AutoscalerMaxSize;
  if (!Object.hasOwn(annotations, minKey) && !Object.hasOwn(annotations, maxKey)) {
    return { state: "absent" };
  }
  const min = parseSize(annotations, minKey);
  const max = parseSize(annotations, maxKey);
  const problems = [min.problem, max.problem].filter((p): p is string => p !== undefined);
  if (problems.length > 0) return { state: "invalid", problem: problems.join("; ") };
  const low = min.value ?? 0;
  const high = max.value ?? 0;
  if (low > high) {
    return {
      state: "invalid",
      problem:
        max.value === undefined
          ? `annotation ${minKey} is ${low} but ${maxKey} is not set, which the autoscaler reads as 0: set ${maxKey} to the node group's maximum size (at least ${low})`
          : `annotation ${minKey} (${low}) is greater than ${maxKey} (${high}): lower the minimum or raise the maximum`,
    };
  }
  return { state: "valid", min: low, max: high };
}
