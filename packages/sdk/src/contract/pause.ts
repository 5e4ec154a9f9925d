import { ConditionReasons, ConditionTypes } from "../conditions/constants.js";
import type { Condition, ConditionStatus, ObjectWithConditions } from "../conditions/types.js";
import {
  getCondition,
  hasSameState,
  hasSameStateExceptObservedGeneration,
  type SetConditionOptions,
  setCondition,
} from "../conditions/v1beta2.js";
import { type PatchableObject, PatchHelper, type PatchOptions } from "../patch/helper.js";
import type { PatchClient, ResourceRef } from "../patch/transport.js";
import { Annotations } from "./constants.js";

/** The part of a Cluster that decides pausing; v1beta1 and v1beta2 Clusters both fit. */
export interface ClusterPauseFields {
  /** `cluster.x-k8s.io/v1beta1` or `/v1beta2`. */
  apiVersion?: string;
  /** `Cluster`. */
  kind?: string;
  /** Cluster spec; only `spec.paused === true` pauses. */
  spec?: unknown;
}

function clusterPaused(cluster: ClusterPauseFields | undefined | null): boolean {
  const spec = cluster?.spec;
  return (
    spec !== null && typeof spec === "object" && (spec as { paused?: unknown }).paused === true
  );
}

/** An object whose annotations are read, e.g. for `cluster.x-k8s.io/paused`. */
export interface ObjectWithAnnotations {
  /** Metadata with annotations. */
  metadata?: { annotations?: Record<string, string> };
}

/**
 * True when the object carries the `cluster.x-k8s.io/paused` annotation (any value), CAPI `HasPaused`.
 *
 * @example
 * ```ts
 * hasPausedAnnotation(pool);
 * ```
 */
export function hasPausedAnnotation(obj: ObjectWithAnnotations): boolean {
  const annotations = obj.metadata?.annotations;
  return annotations !== undefined && Object.hasOwn(annotations, Annotations.Paused);
}

/**
 * CAPI `annotations.IsPaused(cluster, obj)`: the Cluster has `spec.paused: true`, or the object has the
 * `cluster.x-k8s.io/paused` annotation. `cluster` may be undefined for objects without a Cluster.
 *
 * @example
 * ```ts
 * if (isPaused(cluster, pool)) return; // no cloud calls, no deletion
 * ```
 */
export function isPaused(
  cluster: ClusterPauseFields | undefined | null,
  obj: ObjectWithAnnotations,
): boolean {
  return clusterPaused(cluster) || hasPausedAnnotation(obj);
}

/**
 * The `Paused` condition CAPI's `EnsurePausedCondition` wants on an object: `True`/`Paused` with message
 * "Cluster spec.paused is set to true" and/or "<Kind> has the cluster.x-k8s.io/paused annotation"
 * (joined by ", "), else `False`/`NotPaused` with an empty message; observedGeneration = generation.
 *
 * @example
 * ```ts
 * pausedCondition(cluster, pool).status; // "True" when paused
 * ```
 */
export function pausedCondition(
  cluster: ClusterPauseFields | undefined | null,
  obj: ObjectWithAnnotations & ObjectWithConditions,
): Omit<Condition, "lastTransitionTime"> {
  const generation = obj.metadata?.generation ?? 0;
  const base = generation ? { observedGeneration: generation } : {};
  const isClusterPaused = clusterPaused(cluster);
  const annotated = hasPausedAnnotation(obj);
  if (isClusterPaused || annotated) {
    const parts: string[] = [];
    if (isClusterPaused) parts.push("Cluster spec.paused is set to true");
    if (annotated) parts.push(`${obj.kind || "Object"} has the ${Annotations.Paused} annotation`);
    return {
      type: ConditionTypes.Paused,
      status: "True" as ConditionStatus,
      reason: ConditionReasons.Paused,
      message: parts.join(", "),
      ...base,
    };
  }
  return {
    type: ConditionTypes.Paused,
    status: "False" as ConditionStatus,
    reason: ConditionReasons.NotPaused,
    message: "",
    ...base,
  };
}

/** The outcome of {@link updatePausedCondition}. */
export interface PausedConditionResult {
  /** The object is paused: stop reconciling (no cloud calls, no deletion handling). */
  isPaused: boolean;
  /**
   * The condition changed in a way that must be persisted right away (patch `Paused` as an owned
   * condition, then return and let the update event trigger the next reconcile).
   */
  mustPersistNow: boolean;
}

/**
 * The in-memory half of CAPI `EnsurePausedCondition`: sets the `Paused` condition and tells whether the
 * change must be persisted immediately. Same state ⇒ nothing; only observedGeneration differs and not
 * paused ⇒ set in memory (persisted by the final patch); otherwise ⇒ set and persist now.
 *
 * @example
 * ```ts
 * const patch = PatchHelper.snapshot(pool);
 * const { isPaused, mustPersistNow } = updatePausedCondition(cluster, pool);
 * if (mustPersistNow) await patch.apply(kc, pool, { ownedConditions: ["Paused"] });
 * if (isPaused || mustPersistNow) return;
 * ```
 */
export function updatePausedCondition(
  cluster: ClusterPauseFields | undefined | null,
  obj: ObjectWithAnnotations & ObjectWithConditions,
  options?: SetConditionOptions,
): PausedConditionResult {
  const desired = pausedCondition(cluster, obj);
  const isPausedNow = desired.status === "True";
  const existing = getCondition(obj, ConditionTypes.Paused, options);
  if (existing) {
    if (hasSameState(existing, desired)) return { isPaused: isPausedNow, mustPersistNow: false };
    if (hasSameStateExceptObservedGeneration(existing, desired) && !isPausedNow) {
      setCondition(obj, desired, options);
      return { isPaused: isPausedNow, mustPersistNow: false };
    }
  }
  setCondition(obj, desired, options);
  return { isPaused: isPausedNow, mustPersistNow: true };
}

/**
 * CAPI `paused.EnsurePausedCondition`: sets the `Paused` condition and, when it must be persisted now,
 * patches it (as an owned condition) before returning. Stop reconciling when `isPaused || requeue`.
 *
 * @example
 * ```ts
 * const { isPaused, requeue } = await ensurePausedCondition(kubeConfig, cluster, pool);
 * if (isPaused || requeue) return;
 * ```
 */
export async function ensurePausedCondition(
  client: PatchClient,
  cluster: ClusterPauseFields | undefined | null,
  obj: ObjectWithAnnotations & ObjectWithConditions & PatchableObject,
  options: SetConditionOptions & { resource?: ResourceRef } = {},
): Promise<{ isPaused: boolean; requeue: boolean }> {
  const patch = PatchHelper.snapshot(obj, options);
  const { isPaused: paused, mustPersistNow } = updatePausedCondition(cluster, obj, options);
  if (!mustPersistNow) return { isPaused: paused, requeue: false };
  const patchOptions: PatchOptions = { ownedConditions: [ConditionTypes.Paused] };
  if (options.resource) patchOptions.resource = options.resource;
  if (options.layout) patchOptions.layout = options.layout;
  await patch.apply(client, obj, patchOptions);
  return { isPaused: paused, requeue: true };
}
