import { builtinPatchMeta, type PatchField } from "./builtins.js";
import { cloneJSON, deepEqual, isObject } from "./typed.js";

/**
 * A strategic merge patch the server refuses: `status` 400 (`BadRequest`) for a malformed patch or an
 * unknown directive, 415 (`UnsupportedMediaType`) for a kind without strategic-merge metadata (custom
 * resources).
 */
export class StrategicMergePatchError extends Error {
  /** HTTP status the server answers with (500 for a keyed list item without its merge key, as it does). */
  readonly status: 400 | 415 | 500;
  /** `Status.reason` (empty for the 500, whose Status carries none). */
  readonly reason: "BadRequest" | "UnsupportedMediaType" | "";

  constructor(status: 400 | 415 | 500, message: string) {
    super(message);
    this.name = "StrategicMergePatchError";
    this.status = status;
    this.reason = status === 400 ? "BadRequest" : status === 415 ? "UnsupportedMediaType" : "";
  }
}

/** Go's `%v` of a decoded JSON value (`map[k:v]`, `[a b]`). */
function goValue(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(goValue).join(" ")}]`;
  if (isObject(value)) {
    return `map[${Object.keys(value)
      .sort()
      .map((k) => `${k}:${goValue(value[k])}`)
      .join(" ")}]`;
  }
  return value === null ? "<nil>" : String(value);
}

const PATCH = "$patch";
const RETAIN_KEYS = "$retainKeys";
const DELETE_FROM_PRIMITIVE_LIST = "$deleteFromPrimitiveList/";
const SET_ELEMENT_ORDER = "$setElementOrder/";

function clone<T>(value: T): T {
  return cloneJSON(value);
}

/** Drops directive keys from a value being inserted as-is. */
function stripDirectives(value: unknown): unknown {
  if (Array.isArray(value)) {
    return value
      .filter((item) => !(isObject(item) && item[PATCH] !== undefined))
      .map(stripDirectives);
  }
  if (!isObject(value)) return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    if (k === PATCH || k === RETAIN_KEYS || k.startsWith("$")) continue;
    if (v === null) continue;
    out[k] = stripDirectives(v);
  }
  return out;
}

function mergeMap(
  original: Record<string, unknown>,
  patch: Record<string, unknown>,
  meta: PatchField | undefined,
  path: string,
): Record<string, unknown> | undefined {
  const directive = patch[PATCH];
  if (directive !== undefined) {
    if (directive === "delete") return undefined;
    if (directive === "replace") return stripDirectives(patch) as Record<string, unknown>;
    throw new StrategicMergePatchError(
      400,
      `Unknown patch type: ${String(directive)} in map ${path}`,
    );
  }
  const out: Record<string, unknown> = clone(original);
  for (const [key, value] of Object.entries(patch)) {
    if (key === RETAIN_KEYS || key.startsWith(SET_ELEMENT_ORDER)) continue;
    if (key.startsWith(DELETE_FROM_PRIMITIVE_LIST)) {
      const field = key.slice(DELETE_FROM_PRIMITIVE_LIST.length);
      if (!Array.isArray(value)) {
        throw new StrategicMergePatchError(400, `${key} must be a list`);
      }
      const current = out[field];
      if (Array.isArray(current)) {
        out[field] = current.filter((item) => !value.some((v) => deepEqual(v, item)));
      }
      continue;
    }
    if (key.startsWith("$")) {
      throw new StrategicMergePatchError(400, `Unknown directive ${key} at ${path}`);
    }
    if (value === null) {
      delete out[key];
      continue;
    }
    const fieldMeta = meta?.fields?.[key];
    const merged = mergeValue(out[key], value, fieldMeta, `${path}.${key}`);
    if (merged === undefined) delete out[key];
    else out[key] = merged;
  }
  for (const [key, value] of Object.entries(patch)) {
    if (!key.startsWith(SET_ELEMENT_ORDER)) continue;
    const field = key.slice(SET_ELEMENT_ORDER.length);
    const list = out[field];
    if (Array.isArray(list) && Array.isArray(value)) {
      out[field] = orderList(list, value, meta?.fields?.[field]?.mergeKey);
    }
  }
  const retain = patch[RETAIN_KEYS];
  if (retain !== undefined) {
    if (!Array.isArray(retain))
      throw new StrategicMergePatchError(400, `${RETAIN_KEYS} must be a list`);
    for (const key of Object.keys(out)) if (!retain.includes(key)) delete out[key];
  }
  return out;
}

function orderList(list: unknown[], order: unknown[], mergeKey: string | undefined): unknown[] {
  const keyOf = (item: unknown) =>
    mergeKey !== undefined && isObject(item) ? item[mergeKey] : item;
  const rank = (item: unknown) => {
    const k = keyOf(item);
    const i = order.findIndex((o) => deepEqual(keyOf(o), k));
    return i < 0 ? Number.MAX_SAFE_INTEGER : i;
  };
  return list
    .map((item, i) => ({ item, i, r: rank(item) }))
    .sort((a, b) => a.r - b.r || a.i - b.i)
    .map((x) => x.item);
}

function mergeValue(
  original: unknown,
  patch: unknown,
  meta: PatchField | undefined,
  path: string,
): unknown {
  if (isObject(patch)) {
    if (!isObject(original)) {
      if (patch[PATCH] === "delete") return undefined;
      return mergeMap({}, patch, meta, path);
    }
    return mergeMap(original, patch, meta, path);
  }
  if (Array.isArray(patch)) {
    const strategy = meta?.strategy ?? "";
    if (!strategy.includes("merge")) return stripDirectives(patch);
    const current = Array.isArray(original) ? original : [];
    return mergeList(current, patch, meta, path);
  }
  return patch;
}

function mergeList(
  original: unknown[],
  patch: unknown[],
  meta: PatchField | undefined,
  path: string,
): unknown[] {
  if (patch.some((item) => isObject(item) && item[PATCH] === "replace")) {
    return stripDirectives(patch) as unknown[];
  }
  const mergeKey = meta?.mergeKey;
  if (mergeKey === undefined || patch.every((item) => !isObject(item))) {
    // A list of primitives with strategy merge: a union ordered as the server orders it.
    const identity = (item: unknown) => item;
    const patched = patch.filter(
      (item, i) => !isObject(item) && patch.findIndex((p) => deepEqual(p, item)) === i,
    );
    const serverOnly = original.filter((o) => !patched.some((p) => deepEqual(p, o)));
    return mergeSorted(clone(serverOnly), patched, original, identity);
  }
  for (const item of patch) {
    if (!isObject(item)) {
      throw new StrategicMergePatchError(
        400,
        `${path}: list items must be objects with ${mergeKey}`,
      );
    }
    if (!(mergeKey in item)) {
      throw new StrategicMergePatchError(
        500,
        `map: ${goValue(item)} does not contain declared merge key: ${mergeKey}`,
      );
    }
  }
  const keyOf = (item: unknown) => (isObject(item) ? item[mergeKey] : undefined);
  const inPatch = (item: unknown) => patch.some((p) => deepEqual(keyOf(p), keyOf(item)));
  // Items named by the patch, merged, in patch order; deletions drop out.
  const patched: unknown[] = [];
  for (const item of patch as Record<string, unknown>[]) {
    if (item[PATCH] === "delete") continue;
    const existing = original.find((o) => deepEqual(keyOf(o), item[mergeKey]));
    if (isObject(existing)) {
      const merged = mergeMap(existing, item, meta, `${path}[${String(item[mergeKey])}]`);
      if (merged !== undefined) patched.push(merged);
    } else {
      patched.push(stripDirectives(item));
    }
  }
  const serverOnly = clone(original.filter((o) => !inPatch(o)));
  return mergeSorted(serverOnly, patched, original, keyOf);
}

/**
 * Interleaves the server-only items (in server order) with the patched items (in patch order) the way
 * the server does: a patched item that also exists on the server keeps its server position relative to
 * the server-only items; new items come before the remaining server-only items.
 */
function mergeSorted(
  serverOnly: unknown[],
  patched: unknown[],
  serverOrder: unknown[],
  keyOf: (item: unknown) => unknown,
): unknown[] {
  const position = (item: unknown) =>
    serverOrder.findIndex((o) => deepEqual(keyOf(o), keyOf(item)));
  const out: unknown[] = [];
  let i = 0;
  let j = 0;
  while (i < serverOnly.length || j < patched.length) {
    if (i >= serverOnly.length) out.push(patched[j++]);
    else if (j >= patched.length) out.push(serverOnly[i++]);
    else {
      const l = position(serverOnly[i]);
      const r = position(patched[j]);
      if (l >= 0 && r >= 0 && l < r) out.push(serverOnly[i++]);
      else out.push(patched[j++]);
    }
  }
  return out;
}

/**
 * Applies a strategic merge patch (`application/strategic-merge-patch+json`) to an object of a built-in
 * kind, using the kind's `patchStrategy`/`patchMergeKey` metadata: keyed lists merge by key (Node
 * `status.conditions` and `status.addresses` by `type`, `metadata.ownerReferences` by `uid`), primitive
 * merge lists union (`metadata.finalizers`, Node `spec.podCIDRs`), other lists are replaced; `null`
 * deletes a field; directives `$patch: replace|delete`, `$retainKeys`, `$deleteFromPrimitiveList/<f>`
 * and `$setElementOrder/<f>` are honoured. Returns a new object.
 *
 * @param kindKey - The kind (`Node`, `Namespace`, `Secret`, `ConfigMap`, `Event`, `Lease`, …).
 * @throws StrategicMergePatchError 415 for kinds without strategic merge metadata (custom resources),
 * 400 for a malformed patch.
 * @example
 * ```ts
 * const node2 = strategicMergePatch("Node", node, {
 *   status: { conditions: [{ type: "Ready", status: "False" }] },
 * });
 * ```
 */
export function strategicMergePatch(kindKey: string, obj: unknown, patch: unknown): unknown {
  const meta = builtinPatchMeta(kindKey);
  if (meta === undefined) {
    throw new StrategicMergePatchError(
      415,
      `the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml`,
    );
  }
  if (!isObject(patch)) {
    throw new StrategicMergePatchError(
      400,
      "unable to unmarshal patch: the patch must be a JSON object",
    );
  }
  const base = isObject(obj) ? obj : {};
  return mergeMap(base, patch, meta, "") ?? {};
}
