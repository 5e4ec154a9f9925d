import type * as z from "zod";
import { jsonDeeperThan, MAX_JSON_DEPTH } from "../runtime/json-depth.js";
import { CONTRACT_SPEC_KEYS, CONTRACT_STATUS_KEYS } from "./contract-fields.js";

/**
 * The largest conversion-data annotation read, bytes: the API server allows 256 KiB for all the
 * annotations of an object together, so a larger one was not written through it.
 */
export const MAX_CONVERSION_DATA_BYTES = 256 * 1024;

/**
 * Why the conversion-data annotation's text may not be parsed (past {@link MAX_CONVERSION_DATA_BYTES}
 * or nested deeper than {@link MAX_JSON_DEPTH}), or `undefined` when it may. Checked before
 * `JSON.parse`, so a conversion never sees a value that would overflow the stack.
 */
export function conversionDataProblem(annotation: string, text: string): string | undefined {
  const remedy = "remove the annotation (the object then converts from what it holds)";
  // Bytes are at least the UTF-16 length, at most three times it: measure only when it matters.
  if (
    text.length > MAX_CONVERSION_DATA_BYTES ||
    Buffer.byteLength(text) > MAX_CONVERSION_DATA_BYTES
  ) {
    return `the ${annotation} annotation is over ${MAX_CONVERSION_DATA_BYTES} bytes (256 KiB, what the API server allows for all annotations of an object); ${remedy}`;
  }
  if (jsonDeeperThan(text, MAX_JSON_DEPTH)) {
    return `the ${annotation} annotation nests JSON deeper than ${MAX_JSON_DEPTH} levels; ${remedy}`;
  }
  return undefined;
}

// A path segment as a schema names a field; anything else (a key a tenant chose) is not echoed.
const FIELD_NAME = /^[A-Za-z_][A-Za-z0-9_-]{0,62}$/;

function describePath(root: string, path: readonly PropertyKey[]): string {
  let text = root;
  for (const segment of path) {
    if (typeof segment === "number") text += `[${segment}]`;
    else if (typeof segment === "string" && FIELD_NAME.test(segment)) text += `.${segment}`;
    else text += ".(a field)";
  }
  return text;
}

function withoutKeys(
  content: Record<string, unknown>,
  keys: readonly string[],
): Record<string, unknown> {
  const own: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(content)) if (!keys.includes(key)) own[key] = value;
  return own;
}

/**
 * The first field of `content` that `schemas` refuses, as `spec.rootVolumeGiB`, or `undefined` when
 * both the spec and the status (when present) are valid. The contract's fields, which the SDK
 * carries rather than the conversion, are left out; the value is never part of the answer.
 */
export function invalidField(
  schemas: { readonly spec: z.ZodObject; readonly status: z.ZodObject | undefined },
  content: { spec: Record<string, unknown>; status?: Record<string, unknown> },
  template: boolean,
): string | undefined {
  const root = template ? "spec.template.spec" : "spec";
  const spec = schemas.spec.safeParse(withoutKeys(content.spec, CONTRACT_SPEC_KEYS));
  if (!spec.success) return describePath(root, spec.error.issues[0]?.path ?? []);
  if (content.status === undefined || schemas.status === undefined) return undefined;
  const status = schemas.status.safeParse(withoutKeys(content.status, CONTRACT_STATUS_KEYS));
  if (!status.success) return describePath("status", status.error.issues[0]?.path ?? []);
  return undefined;
}
