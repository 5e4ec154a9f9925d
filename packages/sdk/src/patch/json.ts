/** A JSON value as it travels to and from the API server. */
export type JsonValue =
  | string
  | number
  | boolean
  | null
  | JsonValue[]
  | { [key: string]: JsonValue };

/** True for plain objects (not arrays, not null). */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/** Nesting deeper than this is refused: no Kubernetes object comes near it, and recursion stays safe. */
export const MAX_JSON_DEPTH = 512;

/**
 * Thrown by the patch helper (when it copies an object) for a value that is not JSON: a circular reference or nesting deeper than
 * {@link MAX_JSON_DEPTH}. `path` is where, e.g. `["spec", "template", "self"]`.
 */
export class NotJsonError extends TypeError {
  /** Creates the error for `problem` found at `path`. */
  constructor(
    readonly problem: "circular" | "too deep",
    readonly path: readonly string[],
  ) {
    const at = path.length > 0 ? path.join(".") : "the top";
    super(
      problem === "circular"
        ? `the object is not JSON: a circular reference at ${at}; a Kubernetes object must be a tree of plain values`
        : `the object is not JSON: nested deeper than ${MAX_JSON_DEPTH} levels at ${at}…; a Kubernetes object is never this deep`,
    );
    this.name = "NotJsonError";
  }
}

/** Carries the path outwards while the recursion unwinds; becomes a {@link NotJsonError}. */
class NotJsonTrail {
  readonly path: string[] = [];
  constructor(readonly problem: "circular" | "too deep") {}
}

/**
 * A deep copy through JSON semantics: `undefined` entries disappear, Dates become strings. Throws
 * {@link NotJsonError} (with the path) on a circular reference or nesting deeper than
 * {@link MAX_JSON_DEPTH}, instead of overflowing the stack.
 */
export function jsonClone<T>(value: T): T {
  try {
    return copyJson(value, 0, new Set(), false) as T;
  } catch (error) {
    if (error instanceof NotJsonTrail) throw new NotJsonError(error.problem, error.path);
    throw error;
  }
}

/**
 * The one walk behind {@link jsonClone} and {@link normalizeJson}: a copy through JSON semantics, with
 * the path of a circular reference or of too deep a nesting. `omitEmpty` also drops what Go's
 * `omitempty` would not serialise and turns a bigint into a number.
 */
function copyJson(
  value: unknown,
  depth: number,
  ancestors: Set<object>,
  omitEmpty: boolean,
): unknown {
  if (value === null || typeof value !== "object") {
    if (typeof value === "function" || typeof value === "symbol") return undefined;
    return omitEmpty && typeof value === "bigint" ? Number(value) : value;
  }
  if (ancestors.has(value)) throw new NotJsonTrail("circular");
  if (depth >= MAX_JSON_DEPTH) throw new NotJsonTrail("too deep");
  ancestors.add(value);
  let key = "";
  try {
    if (Array.isArray(value)) {
      const out = new Array(value.length);
      for (let i = 0; i < value.length; i++) {
        key = String(i);
        out[i] = copyJson(value[i], depth + 1, ancestors, omitEmpty) ?? null;
      }
      return out;
    }
    const withToJSON = value as { toJSON?: () => unknown };
    if (typeof withToJSON.toJSON === "function") {
      return copyJson(withToJSON.toJSON(), depth + 1, ancestors, omitEmpty);
    }
    const out: Record<string, unknown> = {};
    for (key of Object.keys(value)) {
      const child = copyJson(
        (value as Record<string, unknown>)[key],
        depth + 1,
        ancestors,
        omitEmpty,
      );
      if (omitEmpty ? !isEmpty(child) : child !== undefined) out[key] = child;
    }
    return out;
  } catch (error) {
    if (error instanceof NotJsonTrail && key !== "") {
      error.path.unshift(key);
      if (error.path.length > 64) error.path.pop();
    }
    throw error;
  } finally {
    ancestors.delete(value);
  }
}

/** Structural equality of JSON-like values (object key order ignored). */
export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    return a.every((item, i) => deepEqual(item, b[i]));
  }
  if (isPlainObject(a)) {
    if (!isPlainObject(b)) return false;
    const ka = Object.keys(a).filter((k) => a[k] !== undefined);
    const kb = Object.keys(b).filter((k) => b[k] !== undefined);
    if (ka.length !== kb.length) return false;
    return ka.every((k) => Object.hasOwn(b, k) && deepEqual(a[k], b[k]));
  }
  return false;
}

function isEmpty(value: unknown): boolean {
  if (value === undefined || value === null) return true;
  if (Array.isArray(value)) return value.length === 0;
  if (isPlainObject(value)) return Object.keys(value).length === 0;
  return false;
}

/**
 * Drops what Go's `omitempty` would never serialise: `undefined`, `null`, empty arrays and empty objects
 * (recursively, so `{ a: { b: [] } }` becomes `{}`). Array elements are normalised but kept. Two objects
 * that normalise to the same value are the same object for the API server of a Go-typed CRD.
 *
 * @example
 * ```ts
 * normalizeOmitEmpty({ spec: { providerIDList: [] }, status: {} }); // {}
 * ```
 */
export function normalizeOmitEmpty(value: unknown): JsonValue | undefined {
  if (value instanceof Date) return value.toISOString();
  if (Array.isArray(value)) {
    return value.map((item) => normalizeOmitEmpty(item) ?? null);
  }
  if (isPlainObject(value)) {
    const out: Record<string, JsonValue> = {};
    for (const [key, child] of Object.entries(value)) {
      const normalized = normalizeOmitEmpty(child);
      if (!isEmpty(normalized)) out[key] = normalized as JsonValue;
    }
    return out;
  }
  if (value === undefined || typeof value === "function" || typeof value === "symbol")
    return undefined;
  if (typeof value === "bigint") return Number(value);
  return value as JsonValue;
}

/**
 * {@link normalizeOmitEmpty} of {@link jsonClone}, in one pass and one copy: JSON semantics (`toJSON`,
 * no functions), Go `omitempty` equivalence, and a {@link NotJsonError} with the path on a circular
 * reference or nesting deeper than {@link MAX_JSON_DEPTH}. The result shares nothing with `value`.
 *
 * @example
 * ```ts
 * normalizeJson({ spec: { providerIDList: [] }, status: { when: new Date(0) } });
 * // { status: { when: "1970-01-01T00:00:00.000Z" } }
 * ```
 */
export function normalizeJson(value: unknown): JsonValue | undefined {
  try {
    return copyJson(value, 0, new Set(), true) as JsonValue | undefined;
  } catch (error) {
    if (error instanceof NotJsonTrail) throw new NotJsonError(error.problem, error.path);
    throw error;
  }
}

/**
 * `obj` without the values at `paths`, copying only the objects along each path (the rest is shared):
 * for a normalised object, the same as normalising it after deleting them, objects left empty
 * included, at the cost of a path instead of a copy of the whole object.
 */
export function omitPaths(
  obj: Record<string, unknown>,
  paths: readonly (readonly string[])[],
): Record<string, unknown> {
  let root = obj;
  for (const path of paths) root = omitPath(root, path, 0) ?? {};
  return root;
}

function omitPath(
  obj: Record<string, unknown>,
  path: readonly string[],
  at: number,
): Record<string, unknown> | undefined {
  const key = path[at] as string;
  if (!Object.hasOwn(obj, key)) return obj;
  const copy = { ...obj };
  if (at === path.length - 1) {
    delete copy[key];
  } else {
    const child = obj[key];
    if (!isPlainObject(child)) return obj;
    const rest = omitPath(child, path, at + 1);
    if (rest === child) return obj;
    if (rest === undefined) delete copy[key];
    else copy[key] = rest;
  }
  return Object.keys(copy).length === 0 ? undefined : copy;
}

/** A patch that clears every key of `before` but keeps the (now empty) object itself. */
function clearObject(before: Record<string, unknown>): Record<string, JsonValue> {
  const out: Record<string, JsonValue> = {};
  for (const [key, value] of Object.entries(before)) {
    out[key] = isPlainObject(value) ? clearObject(value) : null;
  }
  return out;
}

/**
 * An RFC 7386 JSON merge patch turning `before` into `after` (both already normalised): changed values
 * are set, removed keys become `null`, arrays are replaced whole. An object that disappears entirely is
 * emptied key by key instead of nulled, so a required `spec` or `status` is never deleted by an omitempty
 * normalisation. Returns `{}` when nothing differs.
 *
 * @example
 * ```ts
 * createMergePatch({ spec: { a: 1, b: [1] } }, { spec: { a: 2 } }); // { spec: { a: 2, b: null } }
 * ```
 */
export function createMergePatch(
  before: Record<string, unknown>,
  after: Record<string, unknown>,
): Record<string, JsonValue> {
  const patch: Record<string, JsonValue> = {};
  for (const [key, value] of Object.entries(after)) {
    if (value === undefined) continue;
    const previous = before[key];
    if (isPlainObject(value) && isPlainObject(previous)) {
      const nested = createMergePatch(previous, value);
      if (Object.keys(nested).length > 0) patch[key] = nested;
    } else if (!deepEqual(previous, value)) {
      patch[key] = value as JsonValue;
    }
  }
  for (const [key, value] of Object.entries(before)) {
    if (value === undefined || (Object.hasOwn(after, key) && after[key] !== undefined)) continue;
    patch[key] = isPlainObject(value) ? clearObject(value) : null;
  }
  return patch;
}
