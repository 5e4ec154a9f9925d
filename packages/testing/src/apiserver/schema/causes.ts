import type { FieldCause } from "./types.js";

/** Marks a field error whose value the server leaves out of the message (objects, arrays, counts). */
export const OMIT_VALUE: unique symbol = Symbol("omit value");

/** The kinds of field error kube-apiserver reports, keyed by the name of their `CauseType`. */
const ERROR_TYPES = {
  FieldValueRequired: { label: "Required value", showsValue: false },
  FieldValueInvalid: { label: "Invalid value", showsValue: true },
  FieldValueTypeInvalid: { label: "Invalid value", showsValue: true },
  FieldValueNotSupported: { label: "Unsupported value", showsValue: true },
  FieldValueForbidden: { label: "Forbidden", showsValue: false },
  FieldValueTooLong: { label: "Too long", showsValue: false },
  FieldValueTooMany: { label: "Too many", showsValue: true },
  FieldValueDuplicate: { label: "Duplicate value", showsValue: true },
  FieldValueNotFound: { label: "Not found", showsValue: true },
} as const;

/**
 * Why a field is invalid, as the server's `causes[].reason` spells it (`FieldValueRequired`,
 * `FieldValueInvalid`, …).
 */
export type FieldErrorReason = keyof typeof ERROR_TYPES;

/** Builds a cause the way the server's field errors render (`ErrorBody`). */
export function fieldError(
  reason: FieldErrorReason,
  field: string,
  value: unknown,
  detail: string,
): FieldCause {
  const type = ERROR_TYPES[reason];
  let message: string = type.label;
  if (type.showsValue && value !== OMIT_VALUE) message += `: ${formatBadValue(value)}`;
  if (detail.length > 0) message += `: ${detail}`;
  return { field, reason, message };
}

/** Renders a bad value as the server does: scalars plainly, strings quoted, the rest as sorted-key JSON. */
export function formatBadValue(value: unknown): string {
  if (typeof value === "string") return goQuote(value);
  if (typeof value === "number" || typeof value === "boolean") return goNumberOrBool(value);
  if (typeof value === "bigint") return value.toString();
  return goJSON(value);
}

function goNumberOrBool(value: number | boolean): string {
  if (typeof value === "boolean") return String(value);
  if (Number.isInteger(value) && Math.abs(value) < 1e21) return String(value);
  return formatGoFloat(value);
}

/** Go's `%v` of a float64: shortest digits, exponent form from 1e+06 up and below 1e-04. */
export function formatGoFloat(value: number): string {
  if (!Number.isFinite(value)) return value > 0 ? "+Inf" : value < 0 ? "-Inf" : "NaN";
  const exp = value === 0 ? 0 : Math.floor(Math.log10(Math.abs(value)));
  if (exp < -4 || exp >= 6) {
    const [mantissa, e = "0"] = value.toExponential().split("e");
    const n = Number(e);
    return `${mantissa}e${n < 0 ? "-" : "+"}${String(Math.abs(n)).padStart(2, "0")}`;
  }
  return String(value);
}

/** Go's `%q` for the strings the server meets (JSON escaping is the same for printable text). */
export function goQuote(value: string): string {
  return JSON.stringify(value);
}

/** `encoding/json` output: map keys sorted, `<`, `>`, `&` escaped. */
export function goJSON(value: unknown): string {
  const text = JSON.stringify(sortKeys(value)) ?? "null";
  return text.replace(
    /[<>&\u2028\u2029]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value !== null && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(value).sort()) {
      out[key] = sortKeys((value as Record<string, unknown>)[key]);
    }
    return out;
  }
  return value;
}

/**
 * The `message` of a 422 `Invalid` Status built from field causes, as the server writes it:
 * `MachinePool.cluster.x-k8s.io "mp-0" is invalid: spec.replicas: Invalid value: …` (several causes are
 * joined in `[…, …]`).
 *
 * @param qualifiedKind - `Kind.group` (just `Kind` for the core group).
 * @param name - The object's name.
 * @param causes - The causes returned by {@link StructuralSchema.validate}.
 * @example
 * ```ts
 * formatInvalidMessage("MachinePool.cluster.x-k8s.io", "mp-0", causes);
 * ```
 */
export function formatInvalidMessage(
  qualifiedKind: string,
  name: string,
  causes: readonly FieldCause[],
): string {
  const rendered = dedupe(causes.map((c) => `${c.field}: ${c.message}`));
  const body = rendered.length === 1 ? (rendered[0] ?? "") : `[${rendered.join(", ")}]`;
  return `${qualifiedKind} ${goQuote(name)} is invalid: ${body}`;
}

function dedupe(items: string[]): string[] {
  return [...new Set(items)];
}
