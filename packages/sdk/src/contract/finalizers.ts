import { type PatchableObject, PatchHelper } from "../patch/helper.js";
import type { PatchClient, ResourceRef } from "../patch/transport.js";

/** An object whose `metadata.finalizers` the helpers add to or remove from (and patch). */
export interface ObjectWithFinalizers extends PatchableObject {
  /** Metadata with finalizers and deletion timestamp. */
  metadata?: PatchableObject["metadata"] & {
    finalizers?: string[];
    deletionTimestamp?: string | Date;
  };
}

/**
 * True when the object carries the finalizer.
 *
 * @example
 * ```ts
 * hasFinalizer(pool, "foomachinepool.infrastructure.cluster.x-k8s.io");
 * ```
 */
export function hasFinalizer(obj: ObjectWithFinalizers, finalizer: string): boolean {
  return obj.metadata?.finalizers?.includes(finalizer) === true;
}

/**
 * Adds our finalizer in memory (other entries untouched). Returns whether it was added.
 *
 * @example
 * ```ts
 * addFinalizer(pool, FINALIZER);
 * ```
 */
export function addFinalizer(obj: ObjectWithFinalizers, finalizer: string): boolean {
  if (hasFinalizer(obj, finalizer)) return false;
  obj.metadata ??= {};
  obj.metadata.finalizers = [...(obj.metadata.finalizers ?? []), finalizer];
  return true;
}

/**
 * Removes only our finalizer in memory; foreign finalizers are preserved (§9.15). Returns whether it was
 * removed; persist with the patch helper.
 *
 * @example
 * ```ts
 * removeFinalizer(pool, FINALIZER);
 * await patch.apply(kc, pool);
 * ```
 */
export function removeFinalizer(obj: ObjectWithFinalizers, finalizer: string): boolean {
  if (!hasFinalizer(obj, finalizer)) return false;
  const rest = (obj.metadata?.finalizers ?? []).filter((f) => f !== finalizer);
  if (obj.metadata) obj.metadata.finalizers = rest;
  return true;
}

/**
 * CAPI `finalizers.EnsureFinalizer`: when the object is not being deleted and lacks our finalizer, adds
 * it and **persists it right away** (a merge patch of `metadata.finalizers` guarded by the object's
 * resourceVersion, so a concurrent change fails with 409 instead of dropping someone else's finalizer).
 * Returns true when it was added: return from the reconcile before any cloud call, the update event
 * brings the next one.
 *
 * @example
 * ```ts
 * if (await ensureFinalizer(kubeConfig, pool, FINALIZER)) return;
 * ```
 */
export async function ensureFinalizer(
  client: PatchClient,
  obj: ObjectWithFinalizers,
  finalizer: string,
  options: { resource?: ResourceRef } = {},
): Promise<boolean> {
  if (obj.metadata?.deletionTimestamp) return false;
  if (hasFinalizer(obj, finalizer)) return false;
  const patch = PatchHelper.snapshot(obj, options);
  addFinalizer(obj, finalizer);
  const result = await patch.apply(client, obj, { precondition: "resourceVersion" });
  const resourceVersion = result.object?.metadata?.resourceVersion;
  if (resourceVersion && obj.metadata) obj.metadata.resourceVersion = resourceVersion;
  return true;
}
