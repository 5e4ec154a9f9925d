import { jsonDeeperThan, MAX_JSON_DEPTH } from "../runtime/json-depth.js";
import type { ConversionRequest } from "./conversion.js";
import type { AdmissionRequest } from "./types.js";

/** The longest `request.uid` accepted: Kubernetes UIDs are 36-character UUIDs. */
export const MAX_UID_LENGTH = 128;

// An apiVersion as Kubernetes spells one (`admission.k8s.io/v1`): it is echoed into the answer.
const API_VERSION = /^[A-Za-z0-9.-]{1,253}\/[A-Za-z0-9]{1,63}$/;

const NOT_ADMISSION =
  "the body is not an AdmissionReview (admission.k8s.io/v1) with a request.uid: send the review as the API server writes it";
const NOT_CONVERSION =
  "the body is not a ConversionReview (apiextensions.k8s.io/v1) with a request.uid";

/** A decoded review, or why the body is not one (a message for the caller, naming no value). */
export type Decoded<T> = { ok: true; value: T } | { ok: false; message: string };

function parse(text: string, what: string, notJson: string): Decoded<unknown> {
  // Checked before parsing: everything after the parse (cloning, schema checks, JSON.stringify of the
  // answer) recurses, and a few thousand levels overflow the stack.
  if (jsonDeeperThan(text, MAX_JSON_DEPTH)) {
    return {
      ok: false,
      message: `the body nests JSON deeper than ${MAX_JSON_DEPTH} levels, which no ${what} does: send the review as the API server writes it`,
    };
  }
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch {
    // The parser's message quotes the body: it is not repeated.
    return { ok: false, message: notJson };
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function checkUid(uid: unknown): string | undefined {
  return typeof uid === "string" && uid.length > 0 && uid.length <= MAX_UID_LENGTH
    ? undefined
    : `request.uid must be a string of 1 to ${MAX_UID_LENGTH} characters (the API server sends a UID)`;
}

/**
 * Decodes an AdmissionReview's text: JSON at most {@link MAX_JSON_DEPTH} deep, a `request` object, a
 * `request.uid` of at most {@link MAX_UID_LENGTH} characters, an `apiVersion` (when given) spelled as
 * Kubernetes spells one — the two fields the answer echoes, as controller-runtime decodes them into
 * strings.
 */
export function decodeAdmissionReview(
  text: string,
): Decoded<{ apiVersion: string; request: AdmissionRequest }> {
  const parsed = parse(text, "AdmissionReview", NOT_ADMISSION);
  if (!parsed.ok) return parsed;
  const review = parsed.value;
  if (!isObject(review) || !isObject(review.request)) return { ok: false, message: NOT_ADMISSION };
  const uidProblem = checkUid(review.request.uid);
  if (uidProblem) return { ok: false, message: uidProblem };
  const apiVersion = review.apiVersion ?? "admission.k8s.io/v1";
  if (typeof apiVersion !== "string" || !API_VERSION.test(apiVersion))
    return {
      ok: false,
      message: "apiVersion must be a string such as admission.k8s.io/v1 (the review's API version)",
    };
  return {
    ok: true,
    value: { apiVersion, request: review.request as unknown as AdmissionRequest },
  };
}

/**
 * Decodes a ConversionReview's text as {@link decodeAdmissionReview} does an AdmissionReview (its
 * `apiVersion` is not echoed: the answer is always `apiextensions.k8s.io/v1`).
 */
export function decodeConversionReview(text: string): Decoded<ConversionRequest> {
  const parsed = parse(text, "ConversionReview", NOT_CONVERSION);
  if (!parsed.ok) return parsed;
  const review = parsed.value;
  if (!isObject(review) || !isObject(review.request)) return { ok: false, message: NOT_CONVERSION };
  const uidProblem = checkUid(review.request.uid);
  if (uidProblem) return { ok: false, message: uidProblem };
  return { ok: true, value: review.request as unknown as ConversionRequest };
}
