import { systemClock } from "../runtime/clock.js";
import { cutText } from "../runtime/text.js";
import { MAX_CONDITION_MESSAGE_LENGTH } from "./constants.js";
import {
  type LayoutOptions,
  readConditionList,
  v1beta2ConditionsPath,
  writePath,
} from "./location.js";
import { compareConditionsDefault } from "./sort.js";
import { toConditionTime } from "./time.js";
import type {
  Condition,
  ConditionClock,
  ConditionInput,
  ConditionLike,
  ConditionStatus,
  ObjectWithConditions,
} from "./types.js";

/** Options of {@link setCondition}. */
export interface SetConditionOptions extends LayoutOptions {
  /** ConditionClock used when the condition carries no `lastTransitionTime` (default: system time). */
  clock?: ConditionClock;
  /**
   * Order applied after a change: the CAPI default order (default), a custom comparator, or `false` to keep
   * the current order.
   */
  sort?: ((a: Condition, b: Condition) => number) | false;
}

/** Normalises a loosely typed condition read from an object into the v1beta2 shape. */
export function toCondition(raw: ConditionLike): Condition {
  const condition: Condition = {
    type: raw.type,
    status: raw.status as ConditionStatus,
    lastTransitionTime: raw.lastTransitionTime ?? "",
    reason: raw.reason ?? "",
    message: raw.message ?? "",
  };
  if (raw.observedGeneration !== undefined) condition.observedGeneration = raw.observedGeneration;
  return condition;
}

/**
 * Returns the v1beta2 conditions of an object (`status.conditions`, or `status.v1beta2.conditions` on a
 * v1beta1 object). The returned array is the object's own array (or a new empty one).
 *
 * @example
 * ```ts
 * for (const c of getConditions(pool)) console.log(c.type, c.status);
 * ```
 */
export function getConditions(obj: ObjectWithConditions, options?: LayoutOptions): Condition[] {
  return readConditionList(obj, v1beta2ConditionsPath(obj, options)) as Condition[];
}

/**
 * Replaces the v1beta2 conditions of an object; an empty list removes the field (Go `omitempty`).
 *
 * @example
 * ```ts
 * setConditions(pool, []);
 * ```
 */
export function setConditions(
  obj: ObjectWithConditions,
  conditions: readonly Condition[],
  options?: LayoutOptions,
): void {
  writePath(
    obj,
    v1beta2ConditionsPath(obj, options),
    conditions.length ? [...conditions] : undefined,
  );
}

/**
 * Returns the condition of the given type, or `undefined` (CAPI `conditions.Get`).
 *
 * @example
 * ```ts
 * const ready = getCondition(pool, "Ready");
 * ```
 */
export function getCondition(
  obj: ObjectWithConditions,
  type: string,
  options?: LayoutOptions,
): Condition | undefined {
  return getConditions(obj, options).find((c) => c.type === type);
}

/**
 * True when the object has a condition of the given type.
 *
 * @example
 * ```ts
 * if (!hasCondition(pool, "Ready")) setCondition(pool, { type: "Ready", status: "Unknown", reason: "ReadyUnknown" });
 * ```
 */
export function hasCondition(
  obj: ObjectWithConditions,
  type: string,
  options?: LayoutOptions,
): boolean {
  return getCondition(obj, type, options) !== undefined;
}

/**
 * True when the condition exists with status `True`; false when absent.
 *
 * @example
 * ```ts
 * if (isConditionTrue(cluster, "ControlPlaneInitialized")) { … }
 * ```
 */
export function isConditionTrue(
  obj: ObjectWithConditions,
  type: string,
  options?: LayoutOptions,
): boolean {
  return getCondition(obj, type, options)?.status === "True";
}

/**
 * True when the condition exists with status `False`; false when absent.
 *
 * @example
 * ```ts
 * isConditionFalse(pool, "Ready");
 * ```
 */
export function isConditionFalse(
  obj: ObjectWithConditions,
  type: string,
  options?: LayoutOptions,
): boolean {
  return getCondition(obj, type, options)?.status === "False";
}

/**
 * True when the condition has status `Unknown` **or is absent** (CAPI `IsUnknown`).
 *
 * @example
 * ```ts
 * isConditionUnknown({ status: {} }, "Ready"); // true
 * ```
 */
export function isConditionUnknown(
  obj: ObjectWithConditions,
  type: string,
  options?: LayoutOptions,
): boolean {
  const condition = getCondition(obj, type, options);
  return condition === undefined || condition.status === "Unknown";
}

/**
 * Same type, status, observedGeneration, reason and message (lastTransitionTime ignored) — CAPI `HasSameState`.
 *
 * @example
 * ```ts
 * hasSameState(before, after);
 * ```
 */
export function hasSameState(a: ConditionLike, b: ConditionLike): boolean {
  return (
    a.type === b.type &&
    a.status === b.status &&
    (a.observedGeneration ?? 0) === (b.observedGeneration ?? 0) &&
    (a.reason ?? "") === (b.reason ?? "") &&
    (a.message ?? "") === (b.message ?? "")
  );
}

/**
 * {@link hasSameState} without comparing observedGeneration.
 *
 * @example
 * ```ts
 * hasSameStateExceptObservedGeneration(before, after);
 * ```
 */
export function hasSameStateExceptObservedGeneration(a: ConditionLike, b: ConditionLike): boolean {
  return (
    a.type === b.type &&
    a.status === b.status &&
    (a.reason ?? "") === (b.reason ?? "") &&
    (a.message ?? "") === (b.message ?? "")
  );
}

/**
 * `True` for true, `False` for false (CAPI `BoolToStatus`).
 *
 * @example
 * ```ts
 * setCondition(pool, { type: "Ready", status: boolToStatus(ok), reason: ok ? "Ready" : "NotReady" });
 * ```
 */
export function boolToStatus(value: boolean): ConditionStatus {
  return value ? "True" : "False";
}

/**
 * apimachinery `meta.SetStatusCondition` on a list, with CAPI's timestamp handling already applied to
 * `condition`. Returns whether the list changed.
 */
export function upsertCondition(list: Condition[], condition: Condition): boolean {
  const existing = list.find((c) => c.type === condition.type);
  if (!existing) {
    list.push({ ...condition });
    return true;
  }
  let changed = false;
  if (existing.status !== condition.status) {
    existing.status = condition.status;
    existing.lastTransitionTime = condition.lastTransitionTime;
    changed = true;
  }
  if (existing.reason !== condition.reason) {
    existing.reason = condition.reason;
    changed = true;
  }
  if (existing.message !== condition.message) {
    existing.message = condition.message;
    changed = true;
  }
  if ((existing.observedGeneration ?? 0) !== (condition.observedGeneration ?? 0)) {
    if (condition.observedGeneration === undefined) delete existing.observedGeneration;
    else existing.observedGeneration = condition.observedGeneration;
    changed = true;
  }
  return changed;
}

/**
 * Completes a condition input: time (now when absent) truncated to seconds, message default, a
 * message longer than {@link MAX_CONDITION_MESSAGE_LENGTH} cut (a longer one would make the API server
 * refuse every status write of the object).
 */
export function completeCondition(
  input: ConditionInput | Condition,
  clock: ConditionClock,
): Condition {
  const time = input.lastTransitionTime ? input.lastTransitionTime : new Date(clock.now());
  const condition: Condition = {
    type: input.type,
    status: input.status,
    lastTransitionTime: toConditionTime(time),
    reason: input.reason,
    message: cutText(input.message ?? "", MAX_CONDITION_MESSAGE_LENGTH),
  };
  if ("observedGeneration" in input && input.observedGeneration !== undefined) {
    condition.observedGeneration = input.observedGeneration;
  }
  return condition;
}

/**
 * Sets a v1beta2 condition with CAPI `conditions.Set` semantics: `observedGeneration` is stamped from
 * `metadata.generation`; `lastTransitionTime` only changes when `status` changes (then it takes the given
 * time or now), truncated to whole seconds; `reason`/`message` are always updated; the list is re-sorted
 * with the default order only when something changed. Returns whether the object changed.
 *
 * @example
 * ```ts
 * setCondition(pool, { type: "Ready", status: "False", reason: "NotReady", message: "0 of 3 instances running" });
 * ```
 */
export function setCondition(
  obj: ObjectWithConditions,
  condition: ConditionInput | Condition,
  options?: SetConditionOptions,
): boolean {
  const complete = completeCondition(condition, options?.clock ?? systemClock);
  if (obj.metadata) {
    // Go serialises observedGeneration with omitempty: generation 0 leaves the field out.
    const generation = obj.metadata.generation ?? 0;
    if (generation) complete.observedGeneration = generation;
    else delete complete.observedGeneration;
  }
  const list = getConditions(obj, options).map((c) => ({ ...c }));
  if (!upsertCondition(list, complete)) return false;
  const sort = options?.sort;
  if (sort !== false) list.sort(sort ?? compareConditionsDefault);
  setConditions(obj, list, options);
  return true;
}

/**
 * Removes the condition of the given type (no re-sorting), CAPI `conditions.Delete`. Returns whether a
 * condition was removed.
 *
 * @example
 * ```ts
 * deleteCondition(pool, "ScalingUp");
 * ```
 */
export function deleteCondition(
  obj: ObjectWithConditions,
  type: string,
  options?: LayoutOptions,
): boolean {
  const list = getConditions(obj, options);
  const kept = list.filter((c) => c.type !== type);
  if (kept.length === list.length) return false;
  setConditions(obj, kept, options);
  return true;
}
