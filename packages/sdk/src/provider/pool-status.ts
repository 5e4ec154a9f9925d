/**
 * The pool's conditions, written in one place after the phases ran: `Ready` (the pipeline's outcome
 * with the provider's own conditions folded in), the provider's conditions, and the kit's optional
 * conditions, each derived from the section of the phase that owns it. Every message goes through
 * the redaction layer: anyone who can read the pool reads them.
 *
 * @module
 */
import { ConditionTypes } from "../conditions/constants.js";
import { deleteCondition, setCondition } from "../conditions/v1beta2.js";
import type { Clock } from "../runtime/clock.js";
import { redactText } from "../runtime/redact.js";
import { PoolConditionTypes } from "./reasons.js";
import type { PoolObject, ReadyState } from "./scope.js";
import type { SectionStore } from "./sections.js";

type Sections = Pick<SectionStore<unknown, unknown>, "peek" | "conditions">;

/**
 * The kit's own conditions besides `Ready` and `Paused`, each with the section it is derived from:
 * `undefined` when the phase did not run this reconcile (the condition stays as it was), `null` when
 * it ran and the condition no longer applies (removed), else the state to write. Each is its own
 * condition, not folded into `Ready`: the pool serves while they say why something waits.
 */
const OPTIONAL_CONDITIONS: readonly {
  readonly type: string;
  readonly state: (sections: Sections) => ReadyState | null | undefined;
}[] = [
  {
    // The pool serves whatever the autoscaler's annotations say.
    type: PoolConditionTypes.AutoscalerBounds,
    state: (s) => {
      const bounds = s.peek("bounds");
      return bounds && (bounds.condition ?? null);
    },
  },
  {
    // An upgrade that rolls nothing must not wait unexplained.
    type: PoolConditionTypes.VersionRollout,
    state: (s) => {
      const desired = s.peek("desired");
      return desired && (desired.versionCondition ?? null);
    },
  },
  {
    type: PoolConditionTypes.NodeMetadata,
    state: (s) => {
      const nodes = s.peek("nodes");
      return nodes && (nodes.condition ?? null);
    },
  },
  {
    // Ready already says the pool is scaling or rolling; this says which Node holds it and why.
    type: PoolConditionTypes.Draining,
    state: (s) => {
      const scaled = s.peek("scale");
      return scaled && (scaled.draining ?? null);
    },
  },
];

/** The condition types the kit writes on every pool (the patch helper owns them in a conflict). */
export const KIT_CONDITION_TYPES: readonly string[] = [
  ConditionTypes.Ready,
  ConditionTypes.Paused,
  ...OPTIONAL_CONDITIONS.map((c) => c.type),
];

/**
 * Writes the pool's conditions from the phases' sections: the optional ones always; `Ready` and the
 * provider's own only when the reconcile has an outcome for them (`ready`; none once the pool's
 * cloud resources are gone and its finalizer goes).
 */
export function writePoolConditions(
  pool: PoolObject,
  sections: Sections,
  ready: ReadyState | undefined,
  clock: Clock,
): void {
  for (const { type, state } of OPTIONAL_CONDITIONS) {
    const condition = state(sections);
    if (condition === undefined) continue;
    if (condition === null) deleteCondition(pool, type);
    else
      setCondition(pool, { type, ...condition, message: redactText(condition.message) }, { clock });
  }
  if (!ready) return;
  const conditions = sections.conditions;
  for (const [type, condition] of conditions) {
    setCondition(pool, { type, ...condition, message: redactText(condition.message) }, { clock });
  }
  const summary = summarise(ready, conditions);
  setCondition(
    pool,
    { type: ConditionTypes.Ready, ...summary, message: redactText(summary.message) },
    { clock },
  );
}

/**
 * `Ready` with the provider's own conditions folded in, as CAPI's summary does for an issue: while
 * one of them is not True, a True `Ready` becomes False with that condition's reason.
 */
function summarise(ready: ReadyState, conditions: ReadonlyMap<string, ReadyState>): ReadyState {
  if (ready.status !== "True") return ready;
  for (const [type, condition] of [...conditions].sort(([a], [b]) => (a < b ? -1 : 1))) {
    if (condition.status !== "True") {
      return {
        status: condition.status,
        reason: condition.reason,
        message: `${type}: ${condition.message}`,
      };
    }
  }
  return ready;
}
