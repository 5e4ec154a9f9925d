import { compareConditionsDefault } from "./sort.js";
import type { Condition, ConditionLike } from "./types.js";
import { hasSameState, upsertCondition } from "./v1beta2.js";

/** One change to a condition list between a snapshot and the mutated object. */
export type ConditionPatchOperation<C extends ConditionLike = ConditionLike> =
  | { op: "add"; after: C }
  | { op: "change"; before: C; after: C }
  | { op: "remove"; before: C };

/** The flavour of a condition list, which decides state comparison and ordering. */
export type ConditionFlavour = "v1beta2" | "v1beta1";

/**
 * Raised when another writer changed a condition this reconcile also changed, and the condition is not
 * owned (CAPI's merge conflict). Not retried.
 */
export class ConditionConflictError extends Error {
  /** The condition type in conflict. */
  readonly conditionType: string;
  /** Creates the error. */
  constructor(conditionType: string, detail: string) {
    super(
      `condition ${JSON.stringify(conditionType)} was ${detail} by a different writer since the object was read; ` +
        `list it in ownedConditions if this controller is its only writer, or re-read the object and retry`,
    );
    this.name = "ConditionConflictError";
    this.conditionType = conditionType;
  }
}

function deepEqualCondition(a: ConditionLike, b: ConditionLike): boolean {
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
  for (const key of keys) {
    const va = (a as unknown as Record<string, unknown>)[key];
    const vb = (b as unknown as Record<string, unknown>)[key];
    if (va !== vb) return false;
  }
  return true;
}

function sameState(flavour: ConditionFlavour, a: ConditionLike, b: ConditionLike): boolean {
  if (flavour === "v1beta2") return hasSameState(a, b);
  return v1beta1SameState(a, b);
}

/** v1beta1 `HasSameState`: type, status, reason, severity, message. */
export function v1beta1SameState(a: ConditionLike, b: ConditionLike): boolean {
  const sa = (a as { severity?: string }).severity ?? "";
  const sb = (b as { severity?: string }).severity ?? "";
  return (
    a.type === b.type &&
    a.status === b.status &&
    (a.reason ?? "") === (b.reason ?? "") &&
    sa === sb &&
    (a.message ?? "") === (b.message ?? "")
  );
}

/**
 * The per-type difference between two condition lists (CAPI `conditions.NewPatch`).
 *
 * @example
 * ```ts
 * const ops = diffConditions(before.status?.conditions ?? [], after.status?.conditions ?? []);
 * ```
 */
export function diffConditions<C extends ConditionLike>(
  before: readonly C[],
  after: readonly C[],
): ConditionPatchOperation<C>[] {
  const ops: ConditionPatchOperation<C>[] = [];
  for (const a of after) {
    const b = before.find((c) => c.type === a.type);
    if (!b) ops.push({ op: "add", after: a });
    else if (!deepEqualCondition(a, b)) ops.push({ op: "change", before: b, after: a });
  }
  for (const b of before) {
    if (!after.some((c) => c.type === b.type)) ops.push({ op: "remove", before: b });
  }
  return ops;
}

/** Options of {@link applyConditionPatch}. */
export interface ApplyConditionPatchOptions {
  /** Condition types this controller owns: its value always wins. */
  ownedConditions?: readonly string[];
  /** Every condition is treated as owned. */
  forceOverwrite?: boolean;
  /** `v1beta2` (default) or `v1beta1` comparison and ordering. */
  flavour?: ConditionFlavour;
}

function lexicographicV1beta1(a: ConditionLike, b: ConditionLike): number {
  if (a.type === b.type) return 0;
  if (a.type === "Ready") return -1;
  if (b.type === "Ready") return 1;
  return a.type < b.type ? -1 : 1;
}

function put(flavour: ConditionFlavour, list: ConditionLike[], condition: ConditionLike): void {
  if (flavour === "v1beta2") {
    upsertCondition(list as Condition[], { ...(condition as Condition) });
    return;
  }
  const index = list.findIndex((c) => c.type === condition.type);
  if (index < 0) list.push({ ...condition });
  else if (!v1beta1SameState(list[index] as ConditionLike, condition))
    list[index] = { ...condition };
}

/**
 * Applies a condition diff onto the latest list read from the API server (CAPI `Patch.Apply`): owned types
 * (or force) always take our value; otherwise a concurrent change to the same condition is a
 * {@link ConditionConflictError} unless the latest value already equals ours. Returns the new, sorted list.
 *
 * @example
 * ```ts
 * const merged = applyConditionPatch(ops, latest.status?.conditions ?? [], { ownedConditions: ["Ready"] });
 * ```
 */
export function applyConditionPatch<C extends ConditionLike>(
  ops: readonly ConditionPatchOperation<C>[],
  latest: readonly C[],
  options: ApplyConditionPatchOptions = {},
): C[] {
  const flavour = options.flavour ?? "v1beta2";
  const list: ConditionLike[] = latest.map((c) => ({ ...c }));
  const owned = (type: string) =>
    options.forceOverwrite === true || (options.ownedConditions ?? []).includes(type);
  for (const op of ops) {
    if (op.op === "add") {
      const current = list.find((c) => c.type === op.after.type);
      if (owned(op.after.type) || !current) {
        put(flavour, list, op.after);
        continue;
      }
      if (!sameState(flavour, current, op.after)) {
        throw new ConditionConflictError(op.after.type, "added with a different state");
      }
    } else if (op.op === "change") {
      if (owned(op.after.type)) {
        put(flavour, list, op.after);
        continue;
      }
      const current = list.find((c) => c.type === op.after.type);
      if (!current) throw new ConditionConflictError(op.after.type, "deleted");
      if (!deepEqualCondition(current, op.before)) {
        if (!sameState(flavour, current, op.after)) {
          throw new ConditionConflictError(op.after.type, "modified");
        }
        continue;
      }
      put(flavour, list, op.after);
    } else {
      if (list.length === 0) continue;
      const type = op.before.type;
      if (!owned(type)) {
        const current = list.find((c) => c.type === type);
        if (current && !sameState(flavour, current, op.before)) {
          throw new ConditionConflictError(type, "modified");
        }
      }
      const index = list.findIndex((c) => c.type === type);
      if (index >= 0) list.splice(index, 1);
    }
  }
  list.sort(flavour === "v1beta2" ? compareConditionsDefault : lexicographicV1beta1);
  return list as C[];
}
