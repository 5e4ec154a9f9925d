/**
 * What a delete does to an object before it is gone: the preconditions it checks, the finalizers its
 * propagation policy leaves, and the object marked as being deleted while finalizers hold it.
 *
 * @module
 */
import type { DeleteOptions } from "./core-types.js";
import { conflict } from "./errors.js";
import type { KubeObject, ResourceType } from "./types.js";
import { clone } from "./values.js";

export function checkDeletePreconditions(
  rt: ResourceType,
  name: string,
  current: KubeObject,
  pre: DeleteOptions["preconditions"],
): void {
  if (pre?.uid !== undefined && pre.uid !== current.metadata.uid) {
    throw conflict(
      rt.group,
      rt.plural,
      name,
      `Precondition failed: UID in precondition: ${pre.uid}, UID in object meta: ${current.metadata.uid}`,
    );
  }
  if (
    pre?.resourceVersion !== undefined &&
    pre.resourceVersion !== current.metadata.resourceVersion
  ) {
    throw conflict(
      rt.group,
      rt.plural,
      name,
      `Precondition failed: ResourceVersion in precondition: ${pre.resourceVersion}, ResourceVersion in object meta: ${current.metadata.resourceVersion}`,
    );
  }
}

/** The object's finalizers with those the kind and the propagation policy add or drop. */
export function finalizersAfterDelete(
  rt: ResourceType,
  current: KubeObject,
  opts: DeleteOptions,
): string[] {
  const policy =
    opts.propagationPolicy ??
    (opts.orphanDependents === true
      ? "Orphan"
      : opts.orphanDependents === false
        ? "Background"
        : undefined);
  const finalizers = [...(current.metadata.finalizers ?? [])];
  for (const f of rt.finalizersOnDelete ?? []) if (!finalizers.includes(f)) finalizers.push(f);
  if (policy === "Orphan" && !finalizers.includes("orphan")) finalizers.push("orphan");
  if (policy === "Foreground" && !finalizers.includes("foregroundDeletion")) {
    finalizers.push("foregroundDeletion");
  }
  if (policy === "Background" || policy === "Foreground") {
    const drop = policy === "Background" ? ["orphan", "foregroundDeletion"] : ["orphan"];
    for (const f of drop) {
      const i = finalizers.indexOf(f);
      if (i >= 0 && current.metadata.deletionTimestamp === undefined) finalizers.splice(i, 1);
    }
  }
  return finalizers;
}

/** The object as a delete leaves it while finalizers (or, for a namespace, its content) hold it. */
export function markedAsDeleting(
  current: KubeObject,
  finalizers: string[],
  isNamespace: boolean,
  now: () => string,
): KubeObject {
  const obj = clone(current);
  obj.metadata.finalizers = finalizers;
  if (finalizers.length === 0) delete obj.metadata.finalizers;
  // markAsDeleting: the first deletionTimestamp of an object with a generation increments it.
  if (obj.metadata.deletionTimestamp === undefined && (obj.metadata.generation ?? 0) > 0)
    obj.metadata.generation = (obj.metadata.generation ?? 0) + 1;
  obj.metadata.deletionTimestamp ??= now();
  obj.metadata.deletionGracePeriodSeconds ??= 0;
  if (isNamespace) obj.status = { ...(obj.status as object), phase: "Terminating" };
  return obj;
}

/** Metadata finalizers, and for namespaces also `spec.finalizers`, hold an object being deleted. */
export function hasPendingFinalizers(obj: KubeObject): boolean {
  if ((obj.metadata.finalizers ?? []).length > 0) return true;
  if (obj.kind === "Namespace" && obj.apiVersion === "v1") {
    const spec = obj.spec as { finalizers?: unknown[] } | undefined;
    return (spec?.finalizers ?? []).length > 0;
  }
  return false;
}
