import { systemClock } from "../runtime/clock.js";
import { cutText } from "../runtime/text.js";
import { MAX_CONDITION_MESSAGE_LENGTH } from "./constants.js";
import {
  type LayoutOptions,
  readConditionList,
  readPath,
  v1beta1ConditionsPath,
  writePath,
} from "./location.js";
import { toConditionTime } from "./time.js";
import type { ConditionClock, ConditionStatus, ObjectWithConditions } from "./types.js";

/** Severity of a deprecated v1beta1 condition (only meaningful when status is `False`). */
export type V1Beta1ConditionSeverity = "Error" | "Warning" | "Info" | "";

/**
 * The deprecated Cluster API v1beta1 condition shape: `status.conditions` of v1beta1 objects and
 * `status.deprecated.v1beta1.conditions` of v1beta2 objects.
 */
export interface V1Beta1Condition {
  /** Condition type, 1–256 characters. */
  type: string;
  /** `True`, `False` or `Unknown`. */
  status: ConditionStatus;
  /** Severity when `False`. */
  severity?: V1Beta1ConditionSeverity;
  /** RFC 3339 transition time (whole seconds). */
  lastTransitionTime: string;
  /** Reason (optional in this shape). */
  reason?: string;
  /** Message (optional in this shape). */
  message?: string;
}

/** Deprecated v1beta1 condition types core sets on the MachinePool, and severities. */
export const V1Beta1Conditions = {
  /** Overall readiness. */
  Ready: "Ready",
  /** Bootstrap data secret created. */
  BootstrapReady: "BootstrapReady",
  /** The InfraMachinePool is ready (mirrors its `Ready`). */
  InfrastructureReady: "InfrastructureReady",
  /** All replicas are ready. */
  ReplicasReady: "ReplicasReady",
} as const;

/** Deprecated v1beta1 reasons used around a MachinePool. */
export const V1Beta1Reasons = {
  /** InfrastructureReady=False before the InfraMachinePool is ready. */
  WaitingForInfrastructure: "WaitingForInfrastructure",
  /** BootstrapReady=False before the data secret exists. */
  WaitingForDataSecret: "WaitingForDataSecret",
  /** ReplicasReady=False while nodes are not ready. */
  WaitingForReplicasReady: "WaitingForReplicasReady",
  /** The referenced object could not be found. */
  IncorrectExternalRef: "IncorrectExternalRef",
  /** The object is being deleted. */
  Deleting: "Deleting",
  /** Reason while deleting the cloud resources failed; the controller retries. */
  DeletionFailed: "DeletionFailed",
  /** Deletion completed. */
  Deleted: "Deleted",
} as const;

/** Severities of deprecated v1beta1 conditions. */
export const V1Beta1Severities = {
  /**
   * Something failed and needs attention; a `False` condition of this severity outranks warnings in
   * a summary.
   */
  Error: "Error",
  /** Not as expected but possibly transient, e.g. waiting for a dependency. */
  Warning: "Warning",
  /** Information only. */
  Info: "Info",
} as const;

/** Input of {@link setV1Beta1Condition}. */
export interface V1Beta1ConditionInput {
  /** The condition type, e.g. `Ready` or `ReplicasReady`; one entry per type. */
  type: string;
  /** `True`, `False` or `Unknown`; `lastTransitionTime` moves only when it changes. */
  status: ConditionStatus;
  /** Severity (for `False`). */
  severity?: V1Beta1ConditionSeverity;
  /** A CamelCase reason, e.g. `WaitingForReplicasReady`; expected when the status is not `True`. */
  reason?: string;
  /** Human-readable detail for users; no secrets. */
  message?: string;
  /** Used only when the condition is new (default now). */
  lastTransitionTime?: string | Date;
}

/**
 * The deprecated v1beta1 conditions of an object (`status.conditions` on v1beta1 objects,
 * `status.deprecated.v1beta1.conditions` on v1beta2 objects).
 *
 * @example
 * ```ts
 * getV1Beta1Conditions(machinePoolV1beta2); // from status.deprecated.v1beta1.conditions
 * ```
 */
export function getV1Beta1Conditions(
  obj: ObjectWithConditions,
  options?: LayoutOptions,
): V1Beta1Condition[] {
  return readConditionList(obj, v1beta1ConditionsPath(obj, options)) as V1Beta1Condition[];
}

/**
 * A deprecated v1beta1 condition by type.
 *
 * @example
 * ```ts
 * getV1Beta1Condition(machinePool, "InfrastructureReady")?.status;
 * ```
 */
export function getV1Beta1Condition(
  obj: ObjectWithConditions,
  type: string,
  options?: LayoutOptions,
): V1Beta1Condition | undefined {
  return getV1Beta1Conditions(obj, options).find((c) => c.type === type);
}

function sameV1Beta1State(a: V1Beta1Condition, b: V1Beta1Condition): boolean {
  return (
    a.type === b.type &&
    a.status === b.status &&
    (a.reason ?? "") === (b.reason ?? "") &&
    (a.severity ?? "") === (b.severity ?? "") &&
    (a.message ?? "") === (b.message ?? "")
  );
}

function clean(condition: V1Beta1Condition): V1Beta1Condition {
  const out: V1Beta1Condition = {
    type: condition.type,
    status: condition.status,
    lastTransitionTime: condition.lastTransitionTime,
  };
  if (condition.severity) out.severity = condition.severity;
  if (condition.reason) out.reason = condition.reason;
  if (condition.message) out.message = condition.message;
  return out;
}

/**
 * Sets a deprecated v1beta1 condition (CAPI `v1beta1conditions.Set`): a change of state (status, reason,
 * severity or message) stamps now; same state keeps the time; the list is sorted `Ready` first, then by type.
 *
 * @example
 * ```ts
 * setV1Beta1Condition(pool, { type: "Ready", status: "False", severity: "Warning", reason: "NotReady", message: "…" });
 * ```
 */
export function setV1Beta1Condition(
  obj: ObjectWithConditions,
  input: V1Beta1ConditionInput,
  options?: LayoutOptions & { clock?: ConditionClock },
): void {
  const now = toConditionTime(new Date((options?.clock ?? systemClock).now()));
  const path = v1beta1ConditionsPath(obj, options);
  const list = getV1Beta1Conditions(obj, options).map((c) => ({ ...c }));
  const condition: V1Beta1Condition = clean({
    type: input.type,
    status: input.status,
    severity: input.severity ?? "",
    reason: input.reason ?? "",
    // Longer would make the API server refuse every status write of the object.
    message: cutText(input.message ?? "", MAX_CONDITION_MESSAGE_LENGTH),
    lastTransitionTime: input.lastTransitionTime ? toConditionTime(input.lastTransitionTime) : now,
  });
  const index = list.findIndex((c) => c.type === condition.type);
  if (index < 0) {
    list.push(condition);
  } else {
    const existing = list[index] as V1Beta1Condition;
    if (!sameV1Beta1State(existing, condition))
      list[index] = { ...condition, lastTransitionTime: now };
  }
  list.sort((a, b) => {
    if (a.type === b.type) return 0;
    if (a.type === "Ready") return -1;
    if (b.type === "Ready") return 1;
    return a.type < b.type ? -1 : 1;
  });
  writePath(obj, path, list);
}

/**
 * Removes a deprecated v1beta1 condition.
 *
 * @example
 * ```ts
 * deleteV1Beta1Condition(pool, "ReplicasReady");
 * ```
 */
export function deleteV1Beta1Condition(
  obj: ObjectWithConditions,
  type: string,
  options?: LayoutOptions,
): void {
  const list = getV1Beta1Conditions(obj, options).filter((c) => c.type !== type);
  writePath(obj, v1beta1ConditionsPath(obj, options), list.length ? list : undefined);
}

/**
 * Reads a condition list as Go's `json.Unmarshal` into `clusterv1.Conditions` would: `undefined` when the
 * value does not decode (not a list, an item not an object, a field of the wrong type), so the caller
 * falls back to the next place, as CAPI's `UnstructuredGetter` does.
 */
function decodeV1Beta1List(raw: unknown): Partial<V1Beta1Condition>[] | undefined {
  if (!Array.isArray(raw)) return undefined;
  for (const item of raw) {
    if (item === null) continue;
    if (typeof item !== "object" || Array.isArray(item)) return undefined;
    for (const field of ["type", "status", "severity", "reason", "message", "lastTransitionTime"]) {
      const value = (item as Record<string, unknown>)[field];
      if (value !== undefined && value !== null && typeof value !== "string") return undefined;
    }
  }
  return raw.filter((item) => item !== null) as Partial<V1Beta1Condition>[];
}

/**
 * The source's v1beta1 `Ready` condition the way CAPI's `UnstructuredGetter` finds it:
 * `status.deprecated.v1beta1.conditions` when present and well-formed (even empty), else
 * `status.conditions` (v1beta1 conditions, or v1beta2 ones read best-effort).
 */
function mirrorSourceConditions(source: unknown): Partial<V1Beta1Condition>[] {
  const deprecated = readPath(source, ["status", "deprecated", "v1beta1", "conditions"]);
  if (deprecated !== undefined && deprecated !== null) {
    const list = decodeV1Beta1List(deprecated);
    if (list) return list;
  }
  const current = readPath(source, ["status", "conditions"]);
  if (current !== undefined && current !== null) {
    const list = decodeV1Beta1List(current);
    if (list) return list;
  }
  return [];
}

/**
 * Mirrors the source's v1beta1 `Ready` condition onto the target as `targetType` (CAPI
 * `v1beta1conditions.SetMirror`). Like CAPI's `UnstructuredGetter`, the source's conditions are read from
 * `status.deprecated.v1beta1.conditions` first (a v1beta2 object keeps its v1beta1 conditions there), and
 * from `status.conditions` only when that field is absent or does not decode. When the source has no
 * `Ready`, the fallback is used: `true` ⇒ True, `false` ⇒ False with reason/severity/message; with no
 * fallback nothing is set. This is what core does with an InfraMachinePool's `Ready` (G5).
 *
 * @example
 * ```ts
 * setV1Beta1MirrorCondition(machinePool, "InfrastructureReady", infraMachinePool,
 *   { value: false, reason: "WaitingForInfrastructure", severity: "Info" });
 * ```
 */
export function setV1Beta1MirrorCondition(
  target: ObjectWithConditions,
  targetType: string,
  source: unknown,
  fallback?: {
    value: boolean;
    reason?: string;
    severity?: V1Beta1ConditionSeverity;
    message?: string;
  },
  options?: LayoutOptions & { clock?: ConditionClock },
): void {
  const ready = mirrorSourceConditions(source).find((c) => c?.type === "Ready");
  if (ready && typeof ready.status === "string") {
    const input: V1Beta1ConditionInput = { type: targetType, status: ready.status };
    if (ready.severity) input.severity = ready.severity;
    if (ready.reason) input.reason = ready.reason;
    if (ready.message) input.message = ready.message;
    if (ready.lastTransitionTime) input.lastTransitionTime = ready.lastTransitionTime;
    setV1Beta1Condition(target, input, options);
    return;
  }
  if (!fallback) return;
  if (fallback.value) {
    setV1Beta1Condition(target, { type: targetType, status: "True" }, options);
    return;
  }
  const input: V1Beta1ConditionInput = { type: targetType, status: "False" };
  if (fallback.reason) input.reason = fallback.reason;
  if (fallback.severity) input.severity = fallback.severity;
  if (fallback.message) input.message = fallback.message;
  setV1Beta1Condition(target, input, options);
}
