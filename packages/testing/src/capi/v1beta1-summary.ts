/**
 * The deprecated v1beta1 Ready summary (`v1beta1conditions.SetSummary`) as core's Machine and
 * MachinePool controllers compute it: conditions grouped by status and severity, the best group decides.
 *
 * @module
 */
import {
  setV1Beta1Condition,
  type V1Beta1ConditionInput,
  type V1Beta1ConditionSeverity,
} from "@capi-ts/sdk/conditions";

/** A deprecated v1beta1 condition, as much of it as the summary reads. */
export interface SummarizedCondition {
  type: string;
  status: string;
  severity?: string;
  reason?: string;
  message?: string;
}

/** Conditions of one status and one severity. */
export interface ConditionGroup<C extends SummarizedCondition> {
  status: string;
  severity: string;
  conditions: C[];
}

/** What decides a summary. */
export interface V1Beta1Summary<C extends SummarizedCondition> {
  /** The conditions of the summarized types. */
  inScope: C[];
  /** The groups, in the order their first condition came. */
  groups: ConditionGroup<C>[];
  /** The group with the best merge priority. */
  top: ConditionGroup<C>;
  /** The top group's first condition in the order of the summarized types: its reason is the summary's. */
  first: C;
}

/** `conditionGroup.mergePriority`: False/Error, False/Warning, False/Info, True, Unknown, else 99. */
function mergePriority(status: string, severity: string): number {
  if (status === "False") {
    if (severity === "Error") return 0;
    if (severity === "Warning") return 1;
    if (severity === "Info") return 2;
    return 99;
  }
  if (status === "True") return 3;
  if (status === "Unknown") return 4;
  return 99;
}

/**
 * The default merge strategy over the conditions of `types`: grouped by status and severity, the group
 * with the best merge priority decides (a False one without a known severity ranks last, after
 * Unknown). Undefined when none of `types` is set.
 */
export function summarizeV1Beta1<C extends SummarizedCondition>(
  conditions: readonly C[],
  types: readonly string[],
): V1Beta1Summary<C> | undefined {
  const inScope = conditions.filter((c) => types.includes(c.type));
  if (inScope.length === 0) return undefined;
  const groups: ConditionGroup<C>[] = [];
  for (const c of inScope) {
    const severity = c.severity ?? "";
    const group = groups.find((g) => g.status === c.status && g.severity === severity);
    if (group) group.conditions.push(c);
    else groups.push({ status: c.status, severity, conditions: [c] });
  }
  // Go's sort.Sort is an insertion sort at this size: stable.
  const top = [...groups].sort(
    (a, b) => mergePriority(a.status, a.severity) - mergePriority(b.status, b.severity),
  )[0] as ConditionGroup<C>;
  const first =
    types.map((type) => top.conditions.find((c) => c.type === type)).find((c) => c !== undefined) ??
    (top.conditions[0] as C);
  return { inScope, groups, top, first };
}

/**
 * Sets the deprecated Ready condition from a summary: True when the top group is; else False (keeping
 * the group's severity, even none) or Unknown, with the first condition's reason and `message`.
 */
export function setV1Beta1Ready(
  obj: Parameters<typeof setV1Beta1Condition>[0],
  summary: V1Beta1Summary<SummarizedCondition>,
  message: string,
): void {
  const { top, first } = summary;
  if (top.status === "True") {
    setV1Beta1Condition(obj, { type: "Ready", status: "True" });
    return;
  }
  const input: V1Beta1ConditionInput = {
    type: "Ready",
    status: top.status === "False" ? "False" : "Unknown",
  };
  if (first.reason) input.reason = first.reason;
  if (message) input.message = message;
  if (top.status === "False" && top.severity)
    input.severity = top.severity as V1Beta1ConditionSeverity;
  setV1Beta1Condition(obj, input);
}
