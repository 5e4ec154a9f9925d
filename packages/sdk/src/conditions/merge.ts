import { ConditionReasons } from "./constants.js";
import { pluralize } from "./pluralize.js";
import { compareBytewise } from "./sort.js";
import { conditionTimeMillis } from "./time.js";
import type { ConditionLike, ConditionStatus, ObjectWithConditions } from "./types.js";
import { getConditions, type SetConditionOptions, setCondition } from "./v1beta2.js";

/** How a merged condition is classified: an issue, unknown, or info (CAPI `MergePriority`). */
export type MergePriority = "issue" | "unknown" | "info";

const PRIORITY_RANK: Record<MergePriority, number> = { issue: 0, unknown: 1, info: 2 };

/** The object that reported a condition, used to build aggregate messages. */
export interface ConditionOwnerInfo {
  /** Kind of the object, e.g. `Machine`. */
  kind: string;
  /** Name of the object. */
  name: string;
  /** True for control plane Machines (their messages go first). */
  isControlPlaneMachine: boolean;
}

/** A condition together with the object that reported it. */
export interface ConditionWithOwner {
  /** Who reported the condition. */
  owner: ConditionOwnerInfo;
  /** The condition. */
  condition: ConditionLike;
}

/** The result of merging conditions: a condition without time or generation (filled by {@link setCondition}). */
export interface MergedCondition {
  /** Target condition type. */
  type: string;
  /** Merged status. */
  status: ConditionStatus;
  /** Merged reason. */
  reason: string;
  /** Merged message. */
  message: string;
}

/** Options of the default merge strategy (CAPI `DefaultMergeStrategy`). */
export interface MergeStrategyOptions {
  /** Condition types whose normal state is `False` (e.g. `Deleting`, `ScalingUp`). */
  negativePolarityConditionTypes?: readonly string[];
  /** Polarity of the resulting condition (default true: `True` means good). */
  targetConditionHasPositivePolarity?: boolean;
  /** Reasons for the result (default `IssuesReported` / `UnknownReported` / `InfoReported`). */
  reasons?: { issue: string; unknown: string; info: string };
  /** Classifies one condition; overrides `negativePolarityConditionTypes`. */
  priority?: (condition: ConditionLike) => MergePriority;
  /** Rewrites the list of summary message lines before they are joined. */
  summaryMessageTransform?: (lines: string[]) => string[];
}

/**
 * The default classification (CAPI `GetDefaultMergePriorityFunc`): positive polarity `True` is info and
 * `False` an issue, negative polarity the opposite, `Unknown` (or anything else) unknown.
 *
 * @example
 * ```ts
 * defaultMergePriority(["Deleting"])({ type: "Deleting", status: "True" }); // "issue"
 * ```
 */
export function defaultMergePriority(
  negativePolarityConditionTypes: readonly string[] = [],
): (condition: ConditionLike) => MergePriority {
  const negative = new Set(negativePolarityConditionTypes);
  return (condition) => {
    switch (condition.status) {
      case "True":
        return negative.has(condition.type) ? "issue" : "info";
      case "False":
        return negative.has(condition.type) ? "info" : "issue";
      default:
        return "unknown";
    }
  };
}

// Go's unanchored `\s*\*\s+` with ASCII whitespace: any "*" followed by whitespace marks a bullet.
const BULLET = /[\t\n\f\r ]*\*[\t\n\f\r ]+/;

/** CAPI `indentIfMultiline`: single-line messages follow the colon, others become a nested bullet list. */
export function indentIfMultiline(message: string): string {
  if (!message.includes("\n") && !BULLET.test(message)) return ` ${message}`;
  const lines = message.split("\n");
  const hasLinesWithoutBullet = lines.some((line) => !BULLET.test(line));
  const indented = lines.map((line) => {
    let prefix = "  ";
    if (hasLinesWithoutBullet) prefix += BULLET.test(line) ? "  " : "* ";
    return prefix + line;
  });
  return `\n${indented.join("\n")}`;
}

function sortByTypeOrderThenTime(conditions: ConditionWithOwner[], order: readonly string[]): void {
  const index = new Map(order.map((t, i) => [t, i]));
  conditions.sort((a, b) => {
    const ia = index.get(a.condition.type) ?? 0;
    const ib = index.get(b.condition.type) ?? 0;
    if (ia !== ib) return ia - ib;
    const ta = conditionTimeMillis(a.condition.lastTransitionTime);
    const tb = conditionTimeMillis(b.condition.lastTransitionTime);
    return ta < tb ? -1 : ta > tb ? 1 : 0;
  });
}

type MergeOperation = "summary" | "aggregate";

/** The default merge strategy, shared by summary and aggregate. */
function mergeDefault(
  operation: MergeOperation,
  input: ConditionWithOwner[],
  conditionTypes: readonly string[],
  options: MergeStrategyOptions,
): { status: ConditionStatus; reason: string; message: string } {
  if (input.length === 0) throw new Error("cannot merge an empty list of conditions");
  const priorityOf =
    options.priority ?? defaultMergePriority(options.negativePolarityConditionTypes);
  const positive = options.targetConditionHasPositivePolarity ?? true;
  const reasons = options.reasons ?? {
    issue: ConditionReasons.IssuesReported,
    unknown: ConditionReasons.UnknownReported,
    info: ConditionReasons.InfoReported,
  };
  const conditions = [...input];
  sortByTypeOrderThenTime(conditions, conditionTypes);
  const issues = conditions.filter((c) => priorityOf(c.condition) === "issue");
  const unknowns = conditions.filter((c) => priorityOf(c.condition) === "unknown");
  const infos = conditions.filter((c) => priorityOf(c.condition) === "info");

  let status: ConditionStatus;
  let reason: string;
  if (issues.length > 0) {
    status = positive ? "False" : "True";
    reason = reasons.issue;
  } else if (unknowns.length > 0) {
    status = "Unknown";
    reason = reasons.unknown;
  } else {
    status = positive ? "True" : "False";
    reason = reasons.info;
  }

  let message = "";
  if (operation === "summary") {
    let lines: string[] = [];
    for (const { condition } of conditions) {
      if (priorityOf(condition) === "info") {
        if (status !== "True") continue;
        if (!condition.message) continue;
      }
      const text = condition.message
        ? indentIfMultiline(condition.message)
        : ` ${condition.reason ?? ""}`;
      lines.push(`* ${condition.type}:${text}`);
    }
    if (options.summaryMessageTransform) lines = options.summaryMessageTransform(lines);
    message = lines.join("\n");
  } else {
    const budget = { n: 3 };
    const lines: string[] = [];
    if (issues.length > 0 || unknowns.length > 0) {
      lines.push(
        ...aggregateMessages([...issues, ...unknowns], budget, false, priorityOf, {
          issue: "with other issues",
          unknown: "with status unknown",
        }),
      );
    } else if (infos.length > 0) {
      lines.push(
        ...aggregateMessages(infos, budget, true, priorityOf, { info: "with additional info" }),
      );
    }
    message = lines.join("\n");
  }
  return { status, reason, message };
}

/** CAPI `aggregateMessages`: groups objects by kind and message, at most `budget.n` messages overall. */
export function aggregateMessages(
  conditions: readonly ConditionWithOwner[],
  budget: { n: number },
  dropEmpty: boolean,
  priorityOf: (condition: ConditionLike) => MergePriority,
  otherMessages: Partial<Record<MergePriority, string>>,
): string[] {
  const byKind = new Map<string, Map<string, string[]>>();
  const priorityByMessage = new Map<string, MergePriority>();
  const mustGoFirst = new Map<string, boolean>();
  const controlPlaneMachines = new Set<string>();

  for (const { owner, condition } of conditions) {
    const m = condition.message ?? "";
    if (dropEmpty && m === "") continue;
    let messages = byKind.get(owner.kind);
    if (!messages) {
      messages = new Map();
      byKind.set(owner.kind, messages);
    }
    messages.set(m, [...(messages.get(m) ?? []), owner.name]);
    if (owner.isControlPlaneMachine) controlPlaneMachines.add(owner.name);

    const current = priorityByMessage.get(m);
    const next = priorityOf(condition);
    if (
      current === undefined ||
      current === "info" ||
      (current === "unknown" && next === "issue")
    ) {
      priorityByMessage.set(m, next);
    }
    if (owner.isControlPlaneMachine) mustGoFirst.set(m, true);
  }

  const lines: string[] = [];
  const kinds = [...byKind.keys()].sort(compareBytewise);
  for (const kind of kinds) {
    const kindPlural = pluralize(kind);
    const messages = byKind.get(kind) as Map<string, string[]>;
    const order = [...messages.keys()].sort((a, b) => {
      const fa = mustGoFirst.get(a) === true;
      const fb = mustGoFirst.get(b) === true;
      if (fa !== fb) return fa ? -1 : 1;
      const pa = PRIORITY_RANK[priorityByMessage.get(a) ?? "issue"];
      const pb = PRIORITY_RANK[priorityByMessage.get(b) ?? "issue"];
      if (pa !== pb) return pa - pb;
      const la = (messages.get(a) ?? []).length;
      const lb = (messages.get(b) ?? []).length;
      if (la !== lb) return lb - la;
      return compareBytewise((messages.get(a) ?? []).join(","), (messages.get(b) ?? []).join(","));
    });

    const others = new Map<MergePriority, number>();
    for (const m of order) {
      const objects = messages.get(m) ?? [];
      if (budget.n === 0) {
        const p = priorityByMessage.get(m) ?? "issue";
        others.set(p, (others.get(p) ?? 0) + objects.length);
        continue;
      }
      objects.sort((a, b) => {
        const ca = controlPlaneMachines.has(a);
        const cb = controlPlaneMachines.has(b);
        if (ca !== cb) return ca ? -1 : 1;
        return compareBytewise(a, b);
      });
      let line: string;
      if (objects.length === 1) line = `* ${kind} ${objects.join(", ")}:`;
      else if (objects.length <= 3) line = `* ${kindPlural} ${objects.join(", ")}:`;
      else
        line = `* ${kindPlural} ${objects.slice(0, 3).join(", ")}, ... (${objects.length - 3} more):`;
      lines.push(line + indentIfMultiline(m));
      budget.n--;
    }

    for (const p of ["issue", "unknown", "info"] as const) {
      const count = others.get(p);
      const text = otherMessages[p];
      if (count === undefined || text === undefined) continue;
      if (count === 1) lines.push(`And ${count} ${kind} ${text}`);
      if (count > 1) lines.push(`And ${count} ${kindPlural} ${text}`);
    }
  }
  return lines;
}

function ownerInfo(obj: ObjectWithConditions): ConditionOwnerInfo {
  const kind = obj.kind ?? "Object";
  return {
    kind,
    name: obj.metadata?.name ?? "",
    isControlPlaneMachine:
      kind === "Machine" && obj.metadata?.labels?.["cluster.x-k8s.io/control-plane"] !== undefined,
  };
}

/** Options of {@link summaryCondition}. */
export interface SummaryOptions extends MergeStrategyOptions {
  /** Condition types to summarise, in order of relevance (required, must not include the target type). */
  forConditionTypes: readonly string[];
  /** Types that are simply skipped when missing (instead of counting as `Unknown`/`NotYetReported`). */
  ignoreTypesIfMissing?: readonly string[];
  /** Replacement conditions for some in-scope types (each must exist on the object). */
  overrideConditions?: readonly ConditionLike[];
}

/**
 * Merges several conditions of one object into one (CAPI `NewSummaryCondition` with the default merge
 * strategy). Missing types count as `Unknown` / `NotYetReported` / "Condition not yet reported". Throws on
 * empty `forConditionTypes`, a target type inside it, a duplicated or absent override, or nothing in scope.
 *
 * @example
 * ```ts
 * const ready = summaryCondition(pool, "Ready", { forConditionTypes: ["InstancesReady", "Paused"],
 *   negativePolarityConditionTypes: ["Paused"], reasons: { issue: "NotReady", unknown: "ReadyUnknown", info: "Ready" } });
 * setCondition(pool, ready);
 * ```
 */
export function summaryCondition(
  source: ObjectWithConditions,
  targetType: string,
  options: SummaryOptions,
): MergedCondition {
  const types = options.forConditionTypes;
  if (!types || types.length === 0) {
    throw new Error("summary: option forConditionTypes not provided or empty");
  }
  if (types.includes(targetType)) {
    throw new Error(
      `summary: option forConditionTypes cannot include ${targetType} (target condition type)`,
    );
  }
  const owner = ownerInfo(source);
  const conditions = getConditions(source);
  const present = new Set(conditions.map((c) => c.type));
  const overrides = new Map<string, ConditionLike>();
  for (const override of options.overrideConditions ?? []) {
    if (overrides.has(override.type)) {
      throw new Error(`summary: override condition ${override.type} specified multiple times`);
    }
    overrides.set(override.type, override);
    if (!present.has(override.type)) {
      throw new Error(`summary: override condition ${override.type} must exist in source object`);
    }
  }
  const expected = new Set(types);
  const inScope: ConditionWithOwner[] = [];
  const seen = new Set<string>();
  for (const condition of conditions) {
    if (!expected.has(condition.type)) continue;
    inScope.push({ owner, condition: overrides.get(condition.type) ?? condition });
    seen.add(condition.type);
  }
  const ignored = new Set(options.ignoreTypesIfMissing ?? []);
  for (const type of types) {
    if (seen.has(type) || ignored.has(type)) continue;
    inScope.push({
      owner,
      condition: {
        type,
        status: "Unknown",
        reason: ConditionReasons.NotYetReported,
        message: "Condition not yet reported",
      },
    });
  }
  if (inScope.length === 0) {
    throw new Error(
      "summary: cannot be computed when the list of conditions to be summarized is empty",
    );
  }
  const merged = mergeDefault("summary", inScope, types, options);
  return { type: targetType, ...merged };
}

/**
 * Computes the summary condition and sets it on `target` (CAPI `SetSummaryCondition`). Returns whether the
 * target changed.
 *
 * @example
 * ```ts
 * setSummaryCondition(pool, pool, "Ready", { forConditionTypes: ["InstancesReady"] });
 * ```
 */
export function setSummaryCondition(
  source: ObjectWithConditions,
  target: ObjectWithConditions,
  targetType: string,
  options: SummaryOptions & SetConditionOptions,
): boolean {
  return setCondition(target, summaryCondition(source, targetType, options), options);
}

/** Options of {@link aggregateCondition}. */
export interface AggregateOptions
  extends Omit<MergeStrategyOptions, "negativePolarityConditionTypes"> {
  /** Type of the resulting condition (default: the source type). */
  targetConditionType?: string;
  /** Only `[sourceType]` is allowed: the source (and the result) have negative polarity. */
  negativePolarityConditionTypes?: readonly string[];
}

/**
 * Merges the same condition type across many objects into one (CAPI `NewAggregateCondition` with the
 * default merge strategy): at most three message groups, grouped by kind, with counts of the rest.
 *
 * @example
 * ```ts
 * const ready = aggregateCondition(machines, "Ready", { targetConditionType: "MachinesReady" });
 * ```
 */
export function aggregateCondition(
  sources: readonly ObjectWithConditions[],
  sourceType: string,
  options: AggregateOptions = {},
): MergedCondition {
  if (sources.length === 0) throw new Error("aggregate: the list of source objects can't be empty");
  const negative = options.negativePolarityConditionTypes ?? [];
  if (negative.length !== 0 && (negative[0] !== sourceType || negative.length > 1)) {
    throw new Error(
      `aggregate: negativePolarityConditionTypes can only be set to [${JSON.stringify(sourceType)}]`,
    );
  }
  const strategy: MergeStrategyOptions = {
    ...options,
    negativePolarityConditionTypes: negative,
    targetConditionHasPositivePolarity:
      options.targetConditionHasPositivePolarity ?? !negative.includes(sourceType),
  };
  const inScope: ConditionWithOwner[] = sources.map((obj) => {
    const owner = ownerInfo(obj);
    const condition = getConditions(obj).find((c) => c.type === sourceType);
    return {
      owner,
      condition: condition ?? {
        type: sourceType,
        status: "Unknown",
        reason: ConditionReasons.NotYetReported,
        message: `Condition ${sourceType} not yet reported`,
      },
    };
  });
  const merged = mergeDefault("aggregate", inScope, [sourceType], strategy);
  return { type: options.targetConditionType ?? sourceType, ...merged };
}

/**
 * Computes the aggregate condition and sets it on `target` (CAPI `SetAggregateCondition`).
 *
 * @example
 * ```ts
 * setAggregateCondition(machines, pool, "Ready", { targetConditionType: "MachinesReady" });
 * ```
 */
export function setAggregateCondition(
  sources: readonly ObjectWithConditions[],
  target: ObjectWithConditions,
  sourceType: string,
  options: AggregateOptions & SetConditionOptions = {},
): boolean {
  return setCondition(target, aggregateCondition(sources, sourceType, options), options);
}
