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

/**
 * The JSON patch that turns `before` into `after`: objects are compared key by key, anything else
 * (arrays included) is replaced whole when it differs — what a defaulting webhook's patch needs.
 *
 * @example
 * ```ts
 * jsonPatchDiff({ spec: {} }, { spec: { size: 1 } }); // [{ op: "add", path: "/spec/size", value: 1 }]
 * ```
 */
export function jsonPatchDiff(before: unknown, after: unknown, path = ""): JsonPatchOp[] {
  if (isPlainObject(before) && isPlainObject(after)) {
    const ops: JsonPatchOp[] = [];
    for (const key of Object.keys(before)) {
      if (!(key in after)) ops.push({ op: "remove", path: `${path}/${pointer(key)}` });
    }
    for (const [key, value] of Object.entries(after)) {
      const child = `${path}/${pointer(key)}`;
      if (!(key in before)) ops.push({ op: "add", path: child, value });
      else ops.push(...jsonPatchDiff(before[key], value, child));
    }
    return ops;
  }
  if (JSON.stringify(before) === JSON.stringify(after)) return [];
  return [{ op: "replace", path, value: after }];
}
