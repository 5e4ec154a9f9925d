import type { Clock } from "../runtime/clock.js";
/** The three statuses of a Kubernetes condition. */
export type ConditionStatus = "True" | "False" | "Unknown";

/**
 * A v1beta2 condition (`metav1.Condition`), as stored in `status.conditions` of a v1beta2 object.
 *
 * `lastTransitionTime` is an RFC 3339 timestamp with seconds precision (`2024-01-02T03:04:05Z`).
 */
export interface Condition {
  /** Condition type, e.g. `Ready`. */
  type: string;
  /** `True`, `False` or `Unknown`. */
  status: ConditionStatus;
  /** The `metadata.generation` the condition was computed from. */
  observedGeneration?: number;
  /** When `status` last changed (RFC 3339, whole seconds). */
  lastTransitionTime: string;
  /** CamelCase reason, 1–1024 characters. */
  reason: string;
  /** Human-readable message; may be empty. */
  message: string;
}

/**
 * What a caller passes to {@link setCondition}: `lastTransitionTime` and `observedGeneration` are filled in,
 * `message` defaults to `""`.
 */
export interface ConditionInput {
  /** Condition type, e.g. `Ready`. */
  type: string;
  /** `True`, `False` or `Unknown`. */
  status: ConditionStatus;
  /** CamelCase reason. */
  reason: string;
  /** Human-readable message (default `""`). */
  message?: string;
  /** Transition time to use when the status changes (default: now). Truncated to seconds. */
  lastTransitionTime?: string | Date;
}

/**
 * The loosest shape of a condition found on any object (v1beta2 or deprecated v1beta1), used to type the
 * objects the helpers accept, so that generated CAPI types and a provider's own types both fit.
 */
export interface ConditionLike {
  /** Condition type. */
  type: string;
  /** Condition status. */
  status: string;
  /** Reason, when present. */
  reason?: string;
  /** Message, when present. */
  message?: string;
  /** Transition time, when present. */
  lastTransitionTime?: string;
  /** Observed generation, when present. */
  observedGeneration?: number;
}

/**
 * Any object that may carry conditions: a v1beta2 object (`status.conditions`, optionally
 * `status.deprecated.v1beta1.conditions`) or a v1beta1 object (`status.conditions` in the v1beta1 shape and
 * `status.v1beta2.conditions`). Generated CAPI kinds and a provider's own kinds satisfy it structurally.
 */
export interface ObjectWithConditions {
  /** `group/version`; used to tell v1beta1 objects from v1beta2 ones. */
  apiVersion?: string;
  /** Kind; used in messages. */
  kind?: string;
  /** Object metadata. */
  metadata?: {
    name?: string;
    generation?: number;
    labels?: Record<string, string>;
  };
  /**
   * Status holding the conditions (any shape: `status.conditions`, `status.v1beta2.conditions`,
   * `status.deprecated.v1beta1.conditions` are found at run time).
   */
  status?: unknown;
}

/**
 * Where condition timestamps come from: the runtime's {@link Clock} (only `now()` is read), so a
 * controller on a `ManualClock` stamps its conditions with the same time it schedules by.
 *
 * @example
 * ```ts
 * setCondition(pool, { type: "Ready", status: "True", reason: "Ready" }, { clock: new ManualClock(0) });
 * ```
 */
export type ConditionClock = Pick<Clock, "now">;
