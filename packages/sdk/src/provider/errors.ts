/**
 * The kit's error policy as one function ({@link errorPolicy}): what a failure in a reconcile means
 * for the `Ready` condition, the retry and the Events. Plus the typed failure of a driver call
 * ({@link StepFailure}) and readable spec errors ({@link describeSpecIssues}).
 *
 * @module
 */
import { classifyDriverError, type DriverFailure, type PoolDriver } from "./driver.js";
import type { SpecIssue } from "./options.js";
import { PoolReasons } from "./reasons.js";
import type { ReadyState } from "./scope.js";

/** A driver call that failed, with what the failure means. */
export class StepFailure extends Error {
  override readonly name = "StepFailure";

  /**
   * @param step - the driver method (`getGroup`, `nativeRollout.start`, …)
   * @param failure - its classification
   * @param original - what the driver threw
   */
  constructor(
    readonly step: string,
    readonly failure: DriverFailure,
    readonly original: unknown,
  ) {
    super(`${step}: ${failure.kind}: ${failure.reason}: ${failure.message}`, { cause: original });
  }
}

/** A transient failure handed to the runtime for backoff, after the status was written. */
export class TransientPoolError extends Error {
  override readonly name = "TransientPoolError";
}

/**
 * Runs one driver call; a failure is rethrown as a {@link StepFailure} with its classification.
 *
 * @example
 * ```ts
 * const group = await callDriver(driver, "getGroup", () => driver.getGroup(ctx));
 * ```
 */
export async function callDriver<T>(
  driver: Pick<PoolDriver<never, never>, "classifyError">,
  step: string,
  run: () => Promise<T>,
): Promise<T> {
  try {
    return await run();
  } catch (error) {
    throw new StepFailure(step, classifyDriverError(driver, error), error);
  }
}

/** Whether an error is a driver failure of the given kinds. */
export function isFailureOf(
  error: unknown,
  ...kinds: DriverFailure["kind"][]
): error is StepFailure {
  return error instanceof StepFailure && kinds.includes(error.failure.kind);
}

/** A streak of transient failures of one pool (see {@link errorPolicy}). */
export interface TransientStreak {
  /** When the first failure of the streak happened (clock ms). */
  readonly since: number;
  /** Failures in a row. */
  readonly count: number;
  /** Whether a Warning Event was recorded for it. */
  readonly reported: boolean;
}

/** What {@link errorPolicy} is told besides the error. */
export interface ErrorPolicyInput {
  /** The clock's reading. */
  readonly now: number;
  /** `Ready` is True now: the pool is at steady state. */
  readonly steadyState: boolean;
  /** The pool's current streak of transient failures, if any. */
  readonly streak: TransientStreak | undefined;
  /** The resync period (terminal failures are retried after it). */
  readonly resyncMs: number;
  /** How long transient failures at steady state are tolerated (with at least 3 in a row). */
  readonly toleranceMs: number;
}

/** What a failure means. */
export interface ErrorOutcome {
  /** The `Ready` condition to publish, or `undefined` to leave every condition as it is. */
  readonly ready: ReadyState | undefined;
  /** Reconcile again after this long (no error counted). */
  readonly requeueAfterMs?: number;
  /** Hand this to the runtime: it retries with its backoff and counts a reconcile error. */
  readonly retry?: Error;
  /** A Warning Event to record on the pool. */
  readonly warning?: { readonly reason: string; readonly message: string };
  /** The streak to remember (`undefined` ends it). */
  readonly streak: TransientStreak | undefined;
  /** How to log it. */
  readonly log: "debug" | "info" | "warn" | "error";
}

/** Transient failures in a row before steady state is given up (with the time bound). */
export const TRANSIENT_FAILURES_TO_REPORT = 3;

/**
 * The bounds of a cloud's retry hint (`retryAfterMs` of a `throttled` or `transient` failure): a
 * `Retry-After: 0` must not requeue a pool every millisecond, and a huge one must not stop checking it.
 */
export const RETRY_HINT_BOUNDS = { minMs: 1000, maxMs: 15 * 60_000 } as const;
/** The shortest wait of a `waiting` failure (the cloud is busy with something that takes time). */
const MIN_WAITING_MS = 100;
/** The wait of a `waiting` failure whose `retryAfterMs` is no number of milliseconds. */
const DEFAULT_WAITING_MS = 1000;

/** A hint that is a finite, non-negative number; anything else means "no hint", never "now". */
function validHint(ms: unknown): number | undefined {
  return typeof ms === "number" && Number.isFinite(ms) && ms >= 0 ? ms : undefined;
}

function clamp(ms: number, min: number, max: number): number {
  return Math.min(max, Math.max(min, ms));
}

/** The pool's own backoff after its first failure: the runtime's per-key backoff (5 ms doubling). */
const BACKOFF_BASE_MS = 5;

/**
 * The delay after the `count`-th throttled (or hinted transient) failure in a row: the cloud's hint
 * or the pool's own exponential backoff (5 ms doubling, as the runtime backs off a key), whichever is
 * longer, within {@link RETRY_HINT_BOUNDS}. A pool the cloud keeps throttling slows down even when
 * each answer says "retry now" (1 s for the first eight failures, then 1.3 s, 2.6 s, …).
 */
function hintedDelay(hint: number | undefined, count: number): number {
  const backoff = BACKOFF_BASE_MS * 2 ** Math.min(40, Math.max(0, count - 1));
  return clamp(Math.max(hint ?? 0, backoff), RETRY_HINT_BOUNDS.minMs, RETRY_HINT_BOUNDS.maxMs);
}

function seconds(ms: number): string {
  return `${Math.round(ms / 100) / 10}s`;
}

/**
 * The kit's error policy, in one place:
 *
 * | failure | `Ready` | retry | Event |
 * | --- | --- | --- | --- |
 * | `waiting` | False, driver's reason | after `retryAfterMs` (100 ms .. 15 min; 1 s when not a number ≥ 0) | — |
 * | `throttled`, `transient` at steady state | unchanged until 3 failures in a row over `toleranceMs` | after the longer of `retryAfterMs` and the pool's backoff (5 ms doubling), within 1 s .. 15 min; a `transient` without a valid hint: the runtime's backoff | Warning once it persists |
 * | `throttled`, `transient` while converging | False, driver's reason | same | Warning once it persists |
 * | `transient` with reason `DriverBug` | False, `DriverBug` | backoff | Warning at once |
 * | `terminal` | False, driver's reason | after the resync period | Warning (repeats aggregated) |
 * | anything else (API server, kit) | False, `ReconcileError` | backoff | — |
 *
 * Secrets never reach it: driver failures carry the driver's message, which must not contain any.
 *
 * @example
 * ```ts
 * const outcome = errorPolicy(error, { now: clock.now(), steadyState: true, streak, resyncMs, toleranceMs });
 * if (outcome.ready) setCondition(pool, { type: "Ready", ...outcome.ready });
 * ```
 */
export function errorPolicy(error: unknown, input: ErrorPolicyInput): ErrorOutcome {
  if (!(error instanceof StepFailure)) {
    return {
      ready: {
        status: "False",
        reason: PoolReasons.ReconcileError,
        message: error instanceof Error ? error.message : String(error),
      },
      retry: error instanceof Error ? error : new Error(String(error)),
      streak: input.streak,
      log: "error",
    };
  }
  const { failure, step } = error;
  const ready: ReadyState = {
    status: "False",
    reason: failure.reason,
    message: `${step}: ${failure.message}`,
  };
  switch (failure.kind) {
    case "waiting":
      return {
        ready,
        requeueAfterMs: clamp(
          validHint(failure.retryAfterMs) ?? DEFAULT_WAITING_MS,
          MIN_WAITING_MS,
          RETRY_HINT_BOUNDS.maxMs,
        ),
        streak: undefined,
        log: "info",
      };
    case "terminal":
      return {
        ready,
        requeueAfterMs: input.resyncMs,
        warning: { reason: failure.reason, message: ready.message },
        streak: undefined,
        log: "error",
      };
    default: {
      const previous = input.streak;
      const streak = {
        since: previous?.since ?? input.now,
        count: (previous?.count ?? 0) + 1,
        reported: previous?.reported ?? false,
      };
      const persisted =
        streak.count >= TRANSIENT_FAILURES_TO_REPORT &&
        input.now - streak.since >= input.toleranceMs;
      const bug = failure.reason === PoolReasons.DriverBug;
      let warning: ErrorOutcome["warning"];
      if ((persisted || bug) && !streak.reported) {
        streak.reported = true;
        warning = {
          reason: failure.reason,
          message: bug
            ? ready.message
            : `${ready.message} (failing for ${seconds(input.now - streak.since)}, ${streak.count} attempts)`,
        };
      }
      const keep = input.steadyState && !persisted && !bug;
      // A throttled failure always waits (its hint, else the backoff); a transient one only with a
      // valid hint, else the runtime's backoff.
      const hint =
        failure.kind === "throttled" || failure.kind === "transient"
          ? validHint(failure.retryAfterMs)
          : undefined;
      const retryAfterMs =
        failure.kind === "throttled" || hint !== undefined
          ? hintedDelay(hint, streak.count)
          : undefined;
      const base = {
        ready: keep ? undefined : ready,
        streak,
        log: keep ? ("debug" as const) : ("warn" as const),
        ...(warning ? { warning } : {}),
      };
      return retryAfterMs !== undefined
        ? { ...base, requeueAfterMs: retryAfterMs }
        : { ...base, retry: new TransientPoolError(error.message, { cause: error.original }) };
    }
  }
}

function formatPath(path: readonly PropertyKey[]): string {
  let out = "";
  for (const part of path) {
    if (typeof part === "number") out += `[${part}]`;
    else out += out === "" ? String(part) : `.${String(part)}`;
  }
  return out === "" ? "<root>" : out;
}

/**
 * A schema failure as the API server words a validation error: `field.path: message`, one per
 * problem, in brackets; a missing field reads `Required value`.
 *
 * @example
 * ```ts
 * describeSpecIssues({ message: "…", issues: [{ path: ["spec", "minSize"], message: "Too small: expected number to be >=0" }] });
 * // "[spec.minSize: Too small: expected number to be >=0]"
 * ```
 */
export function describeSpecIssues(error: {
  readonly message: string;
  readonly issues?: readonly SpecIssue[];
}): string {
  if (!error.issues || error.issues.length === 0) return error.message;
  const parts = error.issues.map((issue) => {
    const message = /received undefined$/.test(issue.message) ? "Required value" : issue.message;
    return `${formatPath(issue.path)}: ${message}`;
  });
  return `[${parts.join(", ")}]`;
}
