/**
 * How a driver says what a failed cloud call means: {@link DriverFailure}, the {@link DriverError} a
 * driver throws when it knows better than the cloud's error, and {@link classifyDriverError}, the one
 * place a thrown error becomes a failure the kit's error policy acts on.
 *
 * @module
 */
import { safeText } from "../runtime/text.js";

// ── errors ──────────────────────────────────────────────────────────────────────────────────────

/**
 * What a failed cloud call means for the reconciler. `reason` is a CamelCase word used as the
 * condition reason and event reason; `message` is shown to users.
 *
 * - `waiting`: the cloud is busy with something that must finish first (group still deleting,
 *   template version in use, refresh in progress). Not an error: retried after `retryAfterMs`.
 * - `transient`: a failure that may pass (5xx, timeouts, unknown errors). Retried with backoff.
 * - `throttled`: the cloud asked to slow down (429). Retried no earlier than `retryAfterMs`.
 * - `terminal`: retrying the same request cannot help (invalid spec, quota, permissions, resource
 *   owned by someone else). Reported as a condition; retried only when the spec changes or at resync.
 * - `notFound`: the resource does not exist. Done, when deleting.
 */
export type DriverFailure =
  | {
      readonly kind: "waiting";
      readonly reason: string;
      readonly message: string;
      readonly retryAfterMs: number;
    }
  | {
      readonly kind: "transient";
      readonly reason: string;
      readonly message: string;
      readonly retryAfterMs?: number;
    }
  | {
      readonly kind: "throttled";
      readonly reason: string;
      readonly message: string;
      readonly retryAfterMs: number;
    }
  | { readonly kind: "terminal"; readonly reason: string; readonly message: string }
  | { readonly kind: "notFound"; readonly reason: string; readonly message: string };

/** The `kind` of a {@link DriverFailure}. */
export type DriverFailureKind = DriverFailure["kind"];

const REASON_PATTERN = /^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$/;

function checkReason(reason: string): string {
  if (!REASON_PATTERN.test(reason)) {
    throw new TypeError(
      `DriverError: reason "${reason}" is not a valid condition reason; use a CamelCase word such as "GroupDeleting"`,
    );
  }
  return reason;
}

function checkDelay(name: string, ms: number): number {
  if (!Number.isFinite(ms) || ms < 0) {
    throw new RangeError(
      `DriverError: ${name} must be a finite number of milliseconds ≥ 0, got ${ms}`,
    );
  }
  return ms;
}

/**
 * An error a driver throws when it knows what a situation means better than the cloud's error does.
 *
 * @example
 * ```ts
 * async getGroup(ctx) {
 *   const group = await cloud.describeGroup(nameOf(ctx.pool));
 *   if (group && group.tags[POOL_TAG] !== ownerOf(ctx.pool)) {
 *     throw DriverError.terminal("GroupNotOwned", `group ${group.name} belongs to ${group.tags[POOL_TAG]}`);
 *   }
 *   …
 * }
 * ```
 */
export class DriverError extends Error {
  override readonly name = "DriverError";

  /**
   * @param failure - what the error means
   * @param options - `cause`: the underlying cloud error
   */
  constructor(
    readonly failure: DriverFailure,
    options?: { cause?: unknown },
  ) {
    super(`${failure.kind}: ${failure.reason}: ${failure.message}`, options);
    checkReason(failure.reason);
  }

  /** The cloud is busy; try again after `retryAfterMs`. */
  static waiting(
    reason: string,
    message: string,
    retryAfterMs: number,
    cause?: unknown,
  ): DriverError {
    return new DriverError(
      { kind: "waiting", reason, message, retryAfterMs: checkDelay("retryAfterMs", retryAfterMs) },
      { cause },
    );
  }

  /** A failure that may pass; retried with backoff (or after `retryAfterMs`, if given). */
  static transient(
    reason: string,
    message: string,
    retryAfterMs?: number,
    cause?: unknown,
  ): DriverError {
    return new DriverError(
      retryAfterMs === undefined
        ? { kind: "transient", reason, message }
        : {
            kind: "transient",
            reason,
            message,
            retryAfterMs: checkDelay("retryAfterMs", retryAfterMs),
          },
      { cause },
    );
  }

  /** The cloud throttles; retry no earlier than `retryAfterMs`. */
  static throttled(
    reason: string,
    message: string,
    retryAfterMs: number,
    cause?: unknown,
  ): DriverError {
    return new DriverError(
      {
        kind: "throttled",
        reason,
        message,
        retryAfterMs: checkDelay("retryAfterMs", retryAfterMs),
      },
      { cause },
    );
  }

  /** Retrying cannot help until the spec changes. */
  static terminal(reason: string, message: string, cause?: unknown): DriverError {
    return new DriverError({ kind: "terminal", reason, message }, { cause });
  }

  /**
   * The cloud rejected the pool's credentials (expired, revoked, not allowed): a transient failure
   * with reason `CredentialsRejected`. The kit forgets the credentials its `credentials` hook
   * resolved and resolves them again at the next attempt, so a fixed Secret is picked up.
   */
  static credentialsRejected(message: string, cause?: unknown): DriverError {
    return new DriverError(
      { kind: "transient", reason: "CredentialsRejected", message },
      { cause },
    );
  }

  /** The resource does not exist. */
  static notFound(reason: string, message: string, cause?: unknown): DriverError {
    return new DriverError({ kind: "notFound", reason, message }, { cause });
  }
}

/**
 * What `error`, thrown by one of `driver`'s methods, means: a {@link DriverError}'s own failure, else
 * the driver's `classifyError`, else `transient` (so an unknown error backs off
 * instead of being mistaken for success or a permanent failure): reason `DriverBug` for a
 * JavaScript programming error (`TypeError`, `ReferenceError`, `RangeError`, `SyntaxError`), else
 * `CloudError`. A reason from `classifyError` that is not a CamelCase word becomes
 * `InvalidFailureReason`, with the bad reason in the message.
 *
 * @example
 * ```ts
 * try {
 *   await driver.deleteGroup(ctx);
 * } catch (error) {
 *   const failure = classifyDriverError(driver, error);
 *   if (failure.kind !== "notFound") throw error;  // NotFound: already gone, done
 * }
 * ```
 */
export function classifyDriverError(
  driver: { classifyError?(error: unknown): DriverFailure | undefined },
  error: unknown,
): DriverFailure {
  const failure = classify(driver, error);
  // The message is the cloud's text: it reaches a condition, an Event and a log line, so it loses
  // its control and format characters and is cut here, once for all three.
  const message = safeText(String(failure.message), MAX_FAILURE_MESSAGE);
  return message === failure.message ? failure : { ...failure, message };
}

/** The longest driver failure message the kit keeps, in characters. */
const MAX_FAILURE_MESSAGE = 2048;

function classify(
  driver: { classifyError?(error: unknown): DriverFailure | undefined },
  error: unknown,
): DriverFailure {
  if (error instanceof DriverError) return error.failure;
  let classified: DriverFailure | undefined;
  try {
    classified = driver.classifyError?.(error);
  } catch (classifyFailure) {
    return {
      kind: "transient",
      reason: "ClassifyErrorFailed",
      message: `classifyError threw (${describe(classifyFailure)}) while classifying: ${describe(error)}`,
    };
  }
  if (classified) {
    if (REASON_PATTERN.test(classified.reason)) return classified;
    return {
      ...classified,
      reason: "InvalidFailureReason",
      message: `classifyError returned the reason ${JSON.stringify(classified.reason.slice(0, 64))}, which is not a CamelCase word: ${classified.message}`,
    };
  }
  if (isProgrammingError(error)) {
    return {
      kind: "transient",
      reason: "DriverBug",
      message: `the driver threw ${error.name}: ${error.message} (a bug in the driver, not a cloud error)`,
    };
  }
  return { kind: "transient", reason: "CloudError", message: describe(error) };
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * A JavaScript programming error (reading a property of `undefined`, calling a non-function, a bad
 * argument), as opposed to a cloud error. Node's `fetch` reports network failures as a `TypeError`
 * with a `cause`: those are cloud errors.
 */
function isProgrammingError(error: unknown): error is Error {
  if (
    !(error instanceof TypeError) &&
    !(error instanceof ReferenceError) &&
    !(error instanceof RangeError) &&
    !(error instanceof SyntaxError)
  ) {
    return false;
  }
  return !(error instanceof TypeError && error.cause !== undefined);
}
