import { ConditionReasons } from "./constants.js";
import { readPath } from "./location.js";
import type { ConditionLike, ConditionStatus, ObjectWithConditions } from "./types.js";
import { type SetConditionOptions, setCondition } from "./v1beta2.js";

/** A mirrored condition: what {@link setCondition} receives. */
export interface MirroredCondition {
  /** Target type. */
  type: string;
  /** Status copied from the source (or fallback / `Unknown`). */
  status: ConditionStatus;
  /** Reason copied from the source (or fallback / `NotYetReported`). */
  reason: string;
  /** Message copied from the source (or fallback / "Condition X not yet reported"). */
  message: string;
  /** The source's transition time, when copied from the source. */
  lastTransitionTime?: string;
}

/** Options of {@link mirrorCondition}. */
export interface MirrorOptions {
  /** Type of the condition on the target (default: the source type). */
  targetConditionType?: string;
  /** Used when the source has no such condition (instead of `Unknown`/`NotYetReported`). */
  fallback?: { status: ConditionStatus; reason: string; message?: string };
}

const STATUSES = new Set(["True", "False", "Unknown"]);

/**
 * Reads the v1beta2 conditions of any object the way CAPI's `UnstructuredGetAll` does:
 * `status.v1beta2.conditions` when it is a list, else `status.conditions`; `type` and a valid `status` are
 * required, a missing reason becomes `NoReasonReported`, other fields (e.g. `severity`) are dropped.
 *
 * @example
 * ```ts
 * const conditions = unstructuredGetConditions(someProviderObject);
 * ```
 */
export function unstructuredGetConditions(obj: unknown): ConditionLike[] {
  const v1beta2 = readPath(obj, ["status", "v1beta2", "conditions"]);
  const list = Array.isArray(v1beta2) ? v1beta2 : readPath(obj, ["status", "conditions"]);
  if (list === undefined || list === null) return [];
  if (!Array.isArray(list)) {
    throw new Error(
      "conditions of the object are not a list: expected status.conditions to be an array",
    );
  }
  return list.map((raw: unknown, index) => {
    const item = (raw ?? {}) as Record<string, unknown>;
    if (typeof item.type !== "string" || item.type === "") {
      throw new Error(`condition #${index} has no type: every condition needs a non-empty "type"`);
    }
    if (typeof item.status !== "string" || !STATUSES.has(item.status)) {
      throw new Error(
        `condition ${item.type} has status ${JSON.stringify(item.status)}: expected "True", "False" or "Unknown"`,
      );
    }
    const condition: ConditionLike = {
      type: item.type,
      status: item.status,
      reason:
        typeof item.reason === "string" && item.reason !== ""
          ? item.reason
          : ConditionReasons.NoReasonReported,
      message: typeof item.message === "string" ? item.message : "",
    };
    if (typeof item.lastTransitionTime === "string")
      condition.lastTransitionTime = item.lastTransitionTime;
    if (typeof item.observedGeneration === "number")
      condition.observedGeneration = item.observedGeneration;
    return condition;
  });
}

/**
 * Builds the mirror of a source condition (CAPI `NewMirrorCondition`): copies status, reason, message and
 * lastTransitionTime (not observedGeneration); else the fallback; else `Unknown` / `NotYetReported` /
 * "Condition <type> not yet reported". The source may be any object (read like {@link unstructuredGetConditions}).
 *
 * @example
 * ```ts
 * const mirrored = mirrorCondition(machinePool, "Ready", { targetConditionType: "MachinePoolReady" });
 * ```
 */
export function mirrorCondition(
  source: unknown,
  sourceType: string,
  options: MirrorOptions = {},
): MirroredCondition {
  const type = options.targetConditionType ?? sourceType;
  const found = unstructuredGetConditions(source).find((c) => c.type === sourceType);
  if (found) {
    const mirrored: MirroredCondition = {
      type,
      status: found.status as ConditionStatus,
      reason: found.reason ?? "",
      message: found.message ?? "",
    };
    if (found.lastTransitionTime) mirrored.lastTransitionTime = found.lastTransitionTime;
    return mirrored;
  }
  if (options.fallback) {
    return {
      type,
      status: options.fallback.status,
      reason: options.fallback.reason,
      message: options.fallback.message ?? "",
    };
  }
  return {
    type,
    status: "Unknown",
    reason: ConditionReasons.NotYetReported,
    message: `Condition ${sourceType} not yet reported`,
  };
}

/**
 * Mirrors a source condition onto the target (CAPI `SetMirrorCondition`): the target's generation is
 * stamped; the source's lastTransitionTime is used when the status changes. Returns whether the target changed.
 *
 * @example
 * ```ts
 * setMirrorCondition(infraCluster, pool, "Ready", { targetConditionType: "InfrastructureReady" });
 * ```
 */
export function setMirrorCondition(
  source: unknown,
  target: ObjectWithConditions,
  sourceType: string,
  options: MirrorOptions & SetConditionOptions = {},
): boolean {
  return setCondition(target, mirrorCondition(source, sourceType, options), options);
}

/**
 * Mirrors one or many condition types from `source` to `target` with {@link setMirrorCondition}; a `types`
 * entry may rename the condition (`{ from: "Ready", to: "InfrastructureReady" }`). Returns whether the
 * target changed.
 *
 * @example
 * ```ts
 * mirrorConditions(machinePool, pool, ["Paused", { from: "Ready", to: "MachinePoolReady" }]);
 * ```
 */
export function mirrorConditions(
  source: unknown,
  target: ObjectWithConditions,
  types: ReadonlyArray<string | { from: string; to: string }>,
  options: Omit<MirrorOptions, "targetConditionType"> & SetConditionOptions = {},
): boolean {
  let changed = false;
  for (const entry of types) {
    const from = typeof entry === "string" ? entry : entry.from;
    const to = typeof entry === "string" ? entry : entry.to;
    changed =
      setMirrorCondition(source, target, from, { ...options, targetConditionType: to }) || changed;
  }
  return changed;
}
