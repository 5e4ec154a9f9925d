/**
 * The autoscaling/v1 Scale of a custom resource whose CRD declares a scale subresource: reading it
 * from the object's replicas and selector paths, and writing a Scale's replicas back.
 *
 * @module
 */
import { conflict, invalid, STALE_OBJECT } from "./errors.js";
import type { KubeObject, ResourceType } from "./types.js";
import { clone, isObject } from "./values.js";

/** Where a CRD's scale subresource reads and writes replicas and the selector. */
export type ScalePaths = NonNullable<ResourceType["scale"]>;

/** The Scale of an object. */
export function scaleOf(scale: ScalePaths, obj: KubeObject): Record<string, unknown> {
  const status: Record<string, unknown> = {
    replicas: Number(readPath(obj, scale.statusReplicasPath) ?? 0),
  };
  if (scale.labelSelectorPath) {
    const selector = readPath(obj, scale.labelSelectorPath);
    if (typeof selector === "string") status.selector = selector;
  }
  const meta = obj.metadata;
  return {
    kind: "Scale",
    apiVersion: "autoscaling/v1",
    metadata: {
      name: meta.name,
      ...(meta.namespace ? { namespace: meta.namespace } : {}),
      uid: meta.uid,
      resourceVersion: meta.resourceVersion,
      creationTimestamp: meta.creationTimestamp,
    },
    spec: { replicas: Number(readPath(obj, scale.specReplicasPath) ?? 0) },
    status,
  };
}

/** The object with a Scale's `spec.replicas` in its replicas field, once the Scale passed its checks. */
export function withScaledReplicas(
  rt: ResourceType,
  scale: ScalePaths,
  current: KubeObject,
  name: string,
  body: unknown,
): KubeObject {
  const b = isObject(body) ? body : {};
  const meta = isObject(b.metadata) ? b.metadata : {};
  if (
    meta.resourceVersion !== undefined &&
    meta.resourceVersion !== current.metadata.resourceVersion
  ) {
    throw conflict(rt.group, rt.plural, name, STALE_OBJECT);
  }
  const replicas = isObject(b.spec) ? b.spec.replicas : undefined;
  if (typeof replicas !== "number" || !Number.isInteger(replicas) || replicas < 0) {
    throw invalid("autoscaling", "Scale", name, [
      {
        field: "spec.replicas",
        reason: "FieldValueInvalid",
        message: `Invalid value: ${JSON.stringify(replicas ?? null)}: must be greater than or equal to 0`,
      },
    ]);
  }
  const next = clone(current);
  writePath(next, scale.specReplicasPath, replicas);
  return next;
}

function jsonPathSegments(path: string): string[] {
  return path
    .replace(/^\./, "")
    .split(".")
    .filter((p) => p !== "");
}

function readPath(obj: Record<string, unknown>, path: string): unknown {
  let cur: unknown = obj;
  for (const seg of jsonPathSegments(path)) {
    if (!isObject(cur)) return undefined;
    cur = cur[seg];
  }
  return cur;
}

function writePath(obj: Record<string, unknown>, path: string, value: unknown): void {
  const segs = jsonPathSegments(path);
  let cur: Record<string, unknown> = obj;
  for (const seg of segs.slice(0, -1)) {
    const next = cur[seg];
    if (!isObject(next)) cur[seg] = {};
    cur = cur[seg] as Record<string, unknown>;
  }
  const last = segs[segs.length - 1];
  if (last !== undefined) cur[last] = value;
}
