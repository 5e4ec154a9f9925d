import type { SchemaNode } from "./types.js";

/** The fields of ObjectMeta; anything else under an embedded resource's `metadata` is dropped. */
const OBJECT_META_FIELDS = new Set([
  "name",
  "generateName",
  "namespace",
  "selfLink",
  "uid",
  "resourceVersion",
  "generation",
  "creationTimestamp",
  "deletionTimestamp",
  "deletionGracePeriodSeconds",
  "labels",
  "annotations",
  "ownerReferences",
  "finalizers",
  "managedFields",
]);

type Path = { parent: Path | undefined; segment: string; index: boolean } | undefined;

function render(path: Path): string {
  const parts: string[] = [];
  for (let p = path; p !== undefined; p = p.parent) {
    parts.push(p.index ? `[${p.segment}]` : p.parent === undefined ? p.segment : `.${p.segment}`);
  }
  return parts.reverse().join("");
}

function child(parent: Path, key: string): Path {
  return { parent, segment: key, index: false };
}

function subscript(parent: Path, key: string): Path {
  return { parent, segment: key, index: true };
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

function pruneValue(
  node: SchemaNode,
  value: unknown,
  path: Path,
  isResourceRoot: boolean,
  pruned: string[],
): void {
  if (Array.isArray(value)) {
    const items = node.items;
    if (items === undefined) return;
    for (let i = 0; i < value.length; i++) {
      pruneValue(items, value[i], subscript(path, String(i)), false, pruned);
    }
    return;
  }
  if (!isPlainObject(value)) return;
  const embedded = isResourceRoot || node.embeddedResource;
  for (const key of Object.keys(value)) {
    const v = value[key];
    if (embedded) {
      if ((key === "apiVersion" || key === "kind") && typeof v === "string") continue;
      if (key === "metadata" && isPlainObject(v)) {
        if (!isResourceRoot) pruneObjectMeta(v, child(path, key), pruned);
        continue;
      }
    }
    const prop = node.properties?.get(key);
    if (prop !== undefined) {
      pruneValue(prop, v, child(path, key), false, pruned);
    } else if (node.additionalProperties !== undefined) {
      const ap = node.additionalProperties;
      pruneValue(ap, v, subscript(path, key), false, pruned);
    } else if (!node.preserveUnknownFields) {
      delete value[key];
      pruned.push(render(child(path, key)));
    }
  }
}

function pruneObjectMeta(meta: Record<string, unknown>, path: Path, pruned: string[]): void {
  for (const key of Object.keys(meta)) {
    if (!OBJECT_META_FIELDS.has(key)) {
      delete meta[key];
      pruned.push(render(child(path, key)));
    }
  }
}

/**
 * Drops unknown fields in place, as the server does when decoding a custom resource, and returns the
 * dropped paths in the server's notation (`spec.foo`, `spec.items[0].bar`, `spec.labels[key].x`).
 */
export function prune(root: SchemaNode, obj: Record<string, unknown>): string[] {
  const pruned: string[] = [];
  pruneValue(root, obj, undefined, true, pruned);
  return pruned;
}
