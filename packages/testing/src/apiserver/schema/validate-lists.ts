/**
 * `x-kubernetes-list-type` semantics: the uniqueness invariants of sets and map lists, and how the
 * items of a map list correlate with the old object's for ratcheting.
 *
 * @module
 */
import { fieldError, goJSON } from "./causes.js";
import { isPlainObject, jsonEqual } from "./json-values.js";
import type { FieldCause, SchemaNode } from "./types.js";
import { childNode, childPath, fieldPath, index, needsListCheck, type Path } from "./walk.js";

function scalarKey(value: unknown): string {
  if (value === undefined) return "u";
  if (value !== null && typeof value === "object") return `j${goJSON(value)}`;
  return `${typeof value}:${String(value)}`;
}

export function validateListTypes(
  node: SchemaNode,
  value: unknown,
  path: Path,
  out: FieldCause[],
): void {
  if (Array.isArray(value)) {
    if (node.listType === "set") {
      for (const i of firstRepeats(value.map(scalarKey))) {
        out.push(fieldError("FieldValueDuplicate", fieldPath(index(path, i)), value[i], ""));
      }
    } else if (node.listType === "map" && node.listMapKeys !== undefined) {
      validateListMap(node.listMapKeys, value, path, out);
    }
    const items = node.items;
    if (items !== undefined) {
      for (let i = 0; i < value.length; i++)
        validateListTypes(items, value[i], index(path, i), out);
    }
    return;
  }
  if (!isPlainObject(value)) return;
  for (const k of Object.keys(value)) {
    const next = childNode(node, k);
    if (next !== undefined && needsListCheck(next)) {
      validateListTypes(next, value[k], childPath(node, path, k), out);
    }
  }
}

function validateListMap(
  keys: readonly string[],
  list: unknown[],
  path: Path,
  out: FieldCause[],
): void {
  for (let i = 0; i < list.length; i++) {
    const item = list[i];
    if (item !== null && !isPlainObject(item)) {
      out.push(
        fieldError(
          "FieldValueInvalid",
          fieldPath(index(path, i)),
          item,
          "must be an object for an array of list-type map",
        ),
      );
      return;
    }
  }
  if (list.length <= 1) return;
  const signatures: string[] = new Array(list.length);
  for (let i = 0; i < list.length; i++) {
    const item = list[i];
    let signature = "";
    if (isPlainObject(item)) {
      for (const k of keys) if (k in item) signature += `${k}\u0000${scalarKey(item[k])}\u0000`;
    }
    signatures[i] = signature;
  }
  for (const i of firstRepeats(signatures)) {
    const present: Record<string, unknown> = {};
    const item = list[i];
    if (isPlainObject(item)) for (const k of keys) if (k in item) present[k] = item[k];
    out.push(fieldError("FieldValueDuplicate", fieldPath(index(path, i)), present, ""));
  }
}

/** Indices of the second occurrence of each repeated value (the server reports one per value). */
function firstRepeats(keys: string[]): number[] {
  const seen = new Map<string, number>();
  const out: number[] = [];
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i] as string;
    const times = seen.get(k) ?? 0;
    if (times === 1) out.push(i);
    seen.set(k, times + 1);
  }
  return out;
}

/** Items of a map list in `oldList` correlated with `item` by the list-map keys. */
export function correlateListItem(
  node: SchemaNode,
  item: unknown,
  oldList: unknown,
): { value: unknown } | undefined {
  if (
    node.listType !== "map" ||
    node.listMapKeys === undefined ||
    !Array.isArray(oldList) ||
    !isPlainObject(item)
  ) {
    return undefined;
  }
  const keys = node.listMapKeys;
  for (const candidate of oldList) {
    if (!isPlainObject(candidate)) continue;
    if (keys.every((k) => jsonEqual(candidate[k], item[k]))) return { value: candidate };
  }
  return undefined;
}
