/**
 * The one redaction layer of the SDK: everything the runtime and the provider kit write where people
 * read — log lines, condition messages, Events, errors — passes through it, so that bootstrap data,
 * bootstrap tokens and cloud credentials never show there.
 *
 * It removes, wherever they appear in text:
 * - every value registered with {@link registerSecret} (and its base64 form): a driver registers its
 *   cloud credentials; and every value the kit holds for a pool (the Secrets its credentials hook
 *   read, its bootstrap data), for as long as the pool needs it — short ones (4 to 7 characters) only
 *   in that pool's own texts (see `redaction-scope.ts`);
 * - what looks like a credential whatever its origin: kubeadm bootstrap tokens (`abcdef.0123456789abcdef`),
 *   JWTs, `Bearer …`/`Basic …` values, and `token=`/`password=`/`secret=`-style assignments;
 *
 * and, in structured values, the values of keys named like credentials (`authorization`, `cookie`,
 * `token`, `password`, `secret`, `apiKey`, `credentials`, `userData`…). An `Error` is reduced to its
 * name, message, code, HTTP status, stack and cause — never the request, its headers or its body that
 * HTTP clients (axios, the AWS SDK…) hang on their errors.
 *
 * @module
 */
import { registerProcessSecret, secretRanges } from "./redaction-scope.js";
import { replaceRanges } from "./secret-index.js";
import { cleanText, cutText } from "./text.js";

/** What replaces a secret. */
export const REDACTED = "[REDACTED]";

/**
 * Registers a secret value (a credential, bootstrap data): from now on it, and its base64 form, are
 * replaced by `[REDACTED]` in every log line, condition, Event and error the SDK writes. Values shorter
 * than 8 characters are ignored (they would redact ordinary words). The newest 1,024 values registered
 * this way are kept; registering is O(1). What the kit reads for a pool (the Secrets its credentials
 * hook reads, its bootstrap data) is held apart, per pool, and never evicted by these.
 *
 * @example
 * ```ts
 * registerSecret(process.env.FOO_CLOUD_API_KEY ?? "");
 * ```
 */
export function registerSecret(value: string): void {
  registerProcessSecret(value);
}

const CREDENTIAL_PATTERNS: RegExp[] = [
  // kubeadm bootstrap tokens: [a-z0-9]{6}.[a-z0-9]{16}
  /\b[a-z0-9]{6}\.[a-z0-9]{16}\b/g,
  // JWTs (service account tokens, OIDC)
  /\beyJ[\w-]{5,}\.[\w-]{5,}\.[\w-]{5,}/g,
  // HTTP authorization schemes
  /\b((?:Bearer|Basic)\s+)[\w.~+/=-]{6,}/gi,
  // key=value and "key": "value" assignments of credential-like keys
  /((?:access[_-]?key|secret[_-]?key|api[_-]?key|password|passwd|token|secret|credentials?|session[_-]?token)["']?\s*[:=]\s*["']?)[^\s"',;&}]{4,}/gi,
];

/**
 * Removes secrets from a text: registered values and credential-shaped substrings.
 *
 * @example
 * ```ts
 * redactText("join with token abcdef.0123456789abcdef"); // "join with token [REDACTED]"
 * ```
 */
export function redactText(text: string): string {
  let out = replaceRanges(text, secretRanges(text), REDACTED);
  for (const pattern of CREDENTIAL_PATTERNS) {
    out = out.replace(pattern, (match: string, prefix?: string) =>
      typeof prefix === "string" && match.startsWith(prefix) && prefix !== match
        ? `${prefix}${REDACTED}`
        : REDACTED,
    );
  }
  return out;
}

const SECRET_KEY =
  /^(authorization|proxy-authorization|cookie|set-cookie|x-api-key|x-auth-token|x-amz-security-token|password|passwd|secret|secrets|token|tokens|access[_-]?token|refresh[_-]?token|id[_-]?token|session[_-]?token|api[_-]?key|secret[_-]?key|access[_-]?key|private[_-]?key|credentials?|user[_-]?data|bootstrap[_-]?data)$/i;

const MAX_DEPTH = 8;

/**
 * A copy of `value` safe to log or show: strings redacted ({@link redactText}), credential-named keys
 * replaced, errors reduced to {@link redactError}. Depth is bounded; cycles end as `[Circular]`.
 *
 * @example
 * ```ts
 * redactValue({ headers: { authorization: "Bearer x" }, name: "pool" });
 * // { headers: { authorization: "[REDACTED]" }, name: "pool" }
 * ```
 */
export function redactValue(value: unknown): unknown {
  return redactInner(value, 0, new Set());
}

function redactInner(value: unknown, depth: number, seen: Set<object>): unknown {
  if (typeof value === "string") return redactText(value);
  if (value === null || typeof value !== "object") return value;
  if (value instanceof Error) return redactErrorInner(value, depth, seen);
  if (seen.has(value)) return "[Circular]";
  if (depth >= MAX_DEPTH) return "[Truncated]";
  seen.add(value);
  try {
    if (Array.isArray(value)) return value.map((item) => redactInner(item, depth + 1, seen));
    if (Buffer.isBuffer(value) || ArrayBuffer.isView(value)) return `[${value.byteLength} bytes]`;
    const out: Record<string, unknown> = {};
    for (const [key, child] of Object.entries(value)) {
      out[key] =
        SECRET_KEY.test(key) && child !== undefined && child !== null && child !== ""
          ? REDACTED
          : redactInner(child, depth + 1, seen);
    }
    return out;
  } finally {
    seen.delete(value);
  }
}

/** An error as it may be logged: what went wrong, never the request that carried it. */
export interface RedactedError {
  /** The error's class name. */
  type: string;
  /** Its message, redacted. */
  message: string;
  /** A string or numeric code (`ECONNREFUSED`, `ThrottlingException`). */
  code?: string | number;
  /** The HTTP status, when the error carries one. */
  status?: number;
  /** The stack, redacted. */
  stack?: string;
  /** The cause, reduced the same way. */
  cause?: RedactedError | unknown;
}

// An error's message comes from whoever raised it (a cloud's answer, a tenant's value): in a log line
// it is one line of at most 4,096 characters. A stack keeps its lines, at most 16 KiB of them.
const MAX_LOGGED_MESSAGE = 4096;
const MAX_LOGGED_STACK = 16_384;

/**
 * Reduces an error to a {@link RedactedError}: name, message, code, HTTP status, stack and cause, all
 * redacted; the message is one line (control and format characters removed) cut at 4,096 characters,
 * the stack cut at 16,384. The other fields HTTP clients attach (request config with headers and body, the raw
 * request and response) are dropped.
 *
 * @example
 * ```ts
 * log.warn({ err: redactError(error) }, "cloud call failed");
 * ```
 */
export function redactError(error: unknown): RedactedError | unknown {
  if (!(error instanceof Error)) return redactValue(error);
  return redactErrorInner(error, 0, new Set());
}

function redactErrorInner(error: Error, depth: number, seen: Set<object>): RedactedError | string {
  if (seen.has(error)) return "[Circular]";
  seen.add(error);
  try {
    const fields = error as Error & {
      code?: unknown;
      status?: unknown;
      statusCode?: unknown;
      $metadata?: { httpStatusCode?: unknown };
      response?: { status?: unknown };
    };
    // Redacted before it is cut, so a cut never leaves the head of a secret unrecognised.
    const message = cutText(cleanText(redactText(String(error.message))), MAX_LOGGED_MESSAGE);
    const out: RedactedError = { type: error.name, message };
    if (typeof fields.code === "string" || typeof fields.code === "number") out.code = fields.code;
    const status = [
      fields.status,
      fields.statusCode,
      fields.$metadata?.httpStatusCode,
      typeof fields.response === "object" ? fields.response?.status : undefined,
    ].find((candidate) => typeof candidate === "number");
    if (typeof status === "number") out.status = status;
    if (typeof error.stack === "string") {
      const lines = cutText(redactText(error.stack), MAX_LOGGED_STACK).split("\n");
      out.stack = lines.map(cleanText).join("\n");
    }
    if (error.cause !== undefined && depth < MAX_DEPTH) {
      out.cause =
        error.cause instanceof Error
          ? redactErrorInner(error.cause, depth + 1, seen)
          : redactInner(error.cause, depth + 1, seen);
    }
    return out;
  } finally {
    seen.delete(error);
  }
}
