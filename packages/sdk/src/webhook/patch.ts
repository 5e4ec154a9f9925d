/** One RFC 6902 operation. */
export interface JsonPatchOp {
  /** add, remove or replace (a diff needs nothing else). */
  op: "add" | "remove" | "replace";
  /** JSON pointer. */
  path: string;
  /** The value (add, replace). */
  value?: unknown;
}

function pointer(segment: string): string {
  return segment.replaceAll("~", "~0").replaceAll("/", "~1");
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

// A member that is absent or `undefined` is the same to JSON: neither is serialized.
function present(object: Record<string, unknown>, key: string): boolean {
  return Object.hasOwn(object, key) && object[key] !== undefined;
}

/**
 * The JSON patch that turns `before` into `after`: objects are compared key by key, anything else
 * (arrays included) is replaced whole when it differs — what a defaulting webhook's patch needs. Keys
 * are own properties only, whatever their name (`constructor`, `__proto__`), and a member set to
 * `undefined` counts as absent, as in JSON: it is removed, or left out when it was not there.
 *
 * @example
 * ```ts
 * jsonPatchDiff({ spec: {} }, { spec: { size: 1 } }); // [{ op: "add", path: "/spec/size", value: 1 }]
 * jsonPatchDiff({ spec: { size: 1 } }, { spec: { size: undefined } }); // [{ op: "remove", path: "/spec/size" }]
 * ```
 */
export function jsonPatchDiff(before: unknown, after: unknown, path = ""): JsonPatchOp[] {
  if (isPlainObject(before) && isPlainObject(after)) {
    const ops: JsonPatchOp[] = [];
    for (const key of Object.keys(before)) {
      if (present(before, key) && !present(after, key))
        ops.push({ op: "remove", path: `${path}/${pointer(key)}` });
    }
    for (const [key, value] of Object.entries(after)) {
      if (value === undefined) continue;
      const child = `${path}/${pointer(key)}`;
      if (!present(before, key)) ops.push({ op: "add", path: child, value });
      else ops.push(...jsonPatchDiff(before[key], value, child));
    }
    return ops;
  }
  if (JSON.stringify(before) === JSON.stringify(after)) return [];
  // The document itself cannot be removed; a caller's member set to undefined is handled above.
  if (after === undefined) return path === "" ? [] : [{ op: "remove", path }];
  return [{ op: "replace", path, value: after }];
}
