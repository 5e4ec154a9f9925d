import { cloneJSON, deepEqual } from "./typed.js";

/**
 * A JSON patch the server refuses. `status` is what kube-apiserver answers: 400 `BadRequest` when the
 * patch document is malformed, 413 when it has more than 10,000 operations, 422 `Invalid` when an
 * operation does not apply (the server's message is then the generic "the server rejected our request
 * due to an error in our request"; `detail` keeps the precise reason for logs and tests).
 */
export class JsonPatchError extends Error {
  /** HTTP status the server answers with. */
  readonly status: 400 | 413 | 422;
  /** `Status.reason`. */
  readonly reason: "BadRequest" | "RequestEntityTooLarge" | "Invalid";
  /** The precise problem (operation index, path). */
  readonly detail: string;

  constructor(status: 400 | 413 | 422, detail: string) {
    const reason =
      status === 400 ? "BadRequest" : status === 413 ? "RequestEntityTooLarge" : "Invalid";
    const message =
      status === 422 ? "the server rejected our request due to an error in our request" : detail;
    super(message);
    this.name = "JsonPatchError";
    this.status = status;
    this.reason = reason;
    this.detail = detail;
  }
}

/** The JSON kind as Go's decoder names it in "cannot unmarshal X" errors. */
function goJSONKind(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  if (typeof value === "object") return "object";
  return typeof value === "boolean" ? "bool" : typeof value;
}

/** The server's cap on operations in one JSON patch. */
export const MAX_JSON_PATCH_OPERATIONS = 10_000;

type Container = Record<string, unknown> | unknown[];

function isContainer(value: unknown): value is Container {
  return value !== null && typeof value === "object";
}

function parsePointer(pointer: string, opIndex: number, field: string): string[] {
  if (pointer === "") return [];
  if (!pointer.startsWith("/")) {
    throw new JsonPatchError(
      422,
      `operation ${opIndex}: ${field} ${JSON.stringify(pointer)} is not a JSON pointer (it must start with "/")`,
    );
  }
  return pointer
    .slice(1)
    .split("/")
    .map((token) => token.replaceAll("~1", "/").replaceAll("~0", "~"));
}

function arrayIndex(
  list: unknown[],
  token: string,
  allowEnd: boolean,
  op: string,
  path: string,
): number {
  if (token === "-" && allowEnd) return list.length;
  if (!/^-?(0|[1-9]\d*)$/.test(token)) {
    throw new JsonPatchError(
      422,
      `${op} operation does not apply: invalid array index "${token}" in ${path}`,
    );
  }
  let i = Number(token);
  // The server's JSON patch library accepts negative indices counted from the end.
  if (i < 0) i += list.length;
  const max = allowEnd ? list.length : list.length - 1;
  if (i < 0 || i > max) {
    throw new JsonPatchError(
      422,
      `${op} operation does not apply: Unable to access invalid index: ${token} in ${path}`,
    );
  }
  return i;
}

function parentOf(
  doc: unknown,
  tokens: string[],
  op: string,
  path: string,
): { parent: Container; last: string } {
  let current: unknown = doc;
  for (let i = 0; i < tokens.length - 1; i++) {
    const token = tokens[i] as string;
    if (Array.isArray(current)) {
      current = current[arrayIndex(current, token, false, op, path)];
    } else if (isContainer(current) && Object.hasOwn(current, token)) {
      current = (current as Record<string, unknown>)[token];
    } else {
      throw new JsonPatchError(
        422,
        `${op} operation does not apply: doc is missing path: "${path}": missing value`,
      );
    }
  }
  if (!isContainer(current)) {
    throw new JsonPatchError(
      422,
      `${op} operation does not apply: doc is missing path: "${path}": missing value`,
    );
  }
  return { parent: current, last: tokens[tokens.length - 1] as string };
}

function getAt(doc: unknown, tokens: string[], op: string, path: string): unknown {
  if (tokens.length === 0) return doc;
  const { parent, last } = parentOf(doc, tokens, op, path);
  if (Array.isArray(parent)) return parent[arrayIndex(parent, last, false, op, path)];
  if (!Object.hasOwn(parent, last)) {
    throw new JsonPatchError(
      422,
      `${op} operation does not apply: doc is missing key: ${path}: missing value`,
    );
  }
  return parent[last];
}

function addAt(doc: unknown, tokens: string[], value: unknown, op: string, path: string): unknown {
  if (tokens.length === 0) return value;
  const { parent, last } = parentOf(doc, tokens, op, path);
  if (Array.isArray(parent)) parent.splice(arrayIndex(parent, last, true, op, path), 0, value);
  else parent[last] = value;
  return doc;
}

function removeAt(doc: unknown, tokens: string[], op: string, path: string): unknown {
  if (tokens.length === 0) {
    throw new JsonPatchError(
      422,
      `${op} operation does not apply: cannot remove the whole document`,
    );
  }
  const { parent, last } = parentOf(doc, tokens, op, path);
  if (Array.isArray(parent)) {
    const i = arrayIndex(parent, last, false, op, path);
    const [removed] = parent.splice(i, 1);
    return removed;
  }
  if (!Object.hasOwn(parent, last)) {
    throw new JsonPatchError(
      422,
      `${op} operation does not apply: doc is missing key: ${path}: missing value`,
    );
  }
  const removed = parent[last];
  delete parent[last];
  return removed;
}

function stringField(
  op: Record<string, unknown>,
  field: string,
  index: number,
  kind: string,
): string {
  const value = op[field];
  if (typeof value !== "string") {
    throw new JsonPatchError(
      422,
      `operation ${index} (${kind}): "${field}" must be a string JSON pointer`,
    );
  }
  return value;
}

/**
 * Applies an RFC 6902 JSON patch (`application/json-patch+json`) as kube-apiserver does, returning a new
 * document (the input is not modified). Supports add, remove, replace, move, copy and test, `-` for
 * appending and negative array indices (as the server's library does).
 *
 * @param obj - The current object.
 * @param ops - The parsed patch body: a list of operations.
 * @throws JsonPatchError with the status the server would answer (400, 413 or 422).
 * @example
 * ```ts
 * const next = jsonPatch(obj, [
 *   { op: "test", path: "/metadata/resourceVersion", value: "12" },
 *   { op: "replace", path: "/spec/replicas", value: 3 },
 * ]);
 * ```
 */
export function jsonPatch(obj: unknown, ops: unknown): unknown {
  if (!Array.isArray(ops)) {
    throw new JsonPatchError(
      400,
      `error decoding patch: json: cannot unmarshal ${goJSONKind(ops)} into Go value of type []handlers.jsonPatchOp`,
    );
  }
  for (const op of ops) {
    if (op === null || typeof op !== "object" || Array.isArray(op)) {
      throw new JsonPatchError(
        400,
        `error decoding patch: json: cannot unmarshal ${goJSONKind(op)} into Go value of type handlers.jsonPatchOp`,
      );
    }
  }
  if (ops.length > MAX_JSON_PATCH_OPERATIONS) {
    throw new JsonPatchError(
      413,
      `The allowed maximum operations in a JSON patch is ${MAX_JSON_PATCH_OPERATIONS}, got ${ops.length}`,
    );
  }
  let doc: unknown = cloneJSON(obj);
  ops.forEach((raw: Record<string, unknown>, index) => {
    const kind = raw.op;
    switch (kind) {
      case "add": {
        const path = stringField(raw, "path", index, kind);
        doc = addAt(
          doc,
          parsePointer(path, index, "path"),
          cloneJSON(raw.value ?? null),
          kind,
          path,
        );
        break;
      }
      case "remove": {
        const path = stringField(raw, "path", index, kind);
        removeAt(doc, parsePointer(path, index, "path"), kind, path);
        break;
      }
      case "replace": {
        const path = stringField(raw, "path", index, kind);
        const tokens = parsePointer(path, index, "path");
        if (tokens.length === 0) {
          doc = cloneJSON(raw.value ?? null);
          break;
        }
        const { parent, last } = parentOf(doc, tokens, kind, path);
        if (Array.isArray(parent)) {
          parent[arrayIndex(parent, last, false, kind, path)] = cloneJSON(raw.value ?? null);
        } else {
          // The server's patch library lets replace set a missing key of an existing object.
          parent[last] = cloneJSON(raw.value ?? null);
        }
        break;
      }
      case "move": {
        const from = stringField(raw, "from", index, kind);
        const path = stringField(raw, "path", index, kind);
        if (path.startsWith(`${from}/`)) {
          throw new JsonPatchError(
            422,
            `move operation does not apply: cannot move ${from} into its own child ${path}`,
          );
        }
        const value = removeAt(doc, parsePointer(from, index, "from"), kind, from);
        doc = addAt(doc, parsePointer(path, index, "path"), value, kind, path);
        break;
      }
      case "copy": {
        const from = stringField(raw, "from", index, kind);
        const path = stringField(raw, "path", index, kind);
        const value = cloneJSON(getAt(doc, parsePointer(from, index, "from"), kind, from));
        doc = addAt(doc, parsePointer(path, index, "path"), value, kind, path);
        break;
      }
      case "test": {
        const path = stringField(raw, "path", index, kind);
        const tokens = parsePointer(path, index, "path");
        let actual: unknown;
        try {
          actual = getAt(doc, tokens, kind, path);
        } catch (error) {
          if (raw.value === null || raw.value === undefined) break;
          throw error;
        }
        if (!deepEqual(actual, raw.value)) {
          throw new JsonPatchError(422, `testing value ${path} failed: test failed`);
        }
        break;
      }
      default:
        throw new JsonPatchError(422, `Unexpected kind: ${String(kind ?? "unknown")}`);
    }
  });
  return doc;
}
