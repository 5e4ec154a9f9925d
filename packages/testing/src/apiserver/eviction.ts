// The `pods/eviction` subresource (policy/v1 Eviction) as kube-apiserver's eviction REST handler
// answers it: a Pod that needs no budget (finished, pending, terminating) is deleted; a Pod covered
// by one PodDisruptionBudget is deleted only while the budget allows a disruption, else 429
// TooManyRequests with a `DisruptionBudget` cause naming the budget; more than one budget is a 500.
// The real server reads the budget's status, which kube-controller-manager's disruption controller
// keeps; this server has no such controller, so it computes that status here, as the controller
// would, from the Pods the budget selects (DIVERGENCES.md).
import type { ApiCore } from "./core.js";
import { ApiError, badRequest, notFound } from "./errors.js";
import { type LabelRequirement, matchesLabels } from "./selectors.js";
import type { KubeObject } from "./types.js";

interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: { key: string; operator: string; values?: string[] }[];
}

/** A metav1.LabelSelector as requirements; `undefined` for a null selector (it selects nothing). */
function requirementsOf(
  selector: LabelSelector | null | undefined,
): LabelRequirement[] | undefined {
  if (selector === undefined || selector === null) return undefined;
  const out: LabelRequirement[] = [];
  for (const [key, value] of Object.entries(selector.matchLabels ?? {})) {
    out.push({ key, op: "=", value });
  }
  for (const e of selector.matchExpressions ?? []) {
    const values = e.values ?? [];
    if (e.operator === "In") out.push({ key: e.key, op: "in", values });
    else if (e.operator === "NotIn") out.push({ key: e.key, op: "notin", values });
    else if (e.operator === "Exists") out.push({ key: e.key, op: "exists" });
    else if (e.operator === "DoesNotExist") out.push({ key: e.key, op: "!" });
  }
  return out;
}

function isReady(pod: KubeObject): boolean {
  const conditions = (pod.status as { conditions?: { type?: string; status?: string }[] })
    ?.conditions;
  return conditions?.some((c) => c.type === "Ready" && c.status === "True") ?? false;
}

function phaseOf(pod: KubeObject): string | undefined {
  return (pod.status as { phase?: string } | undefined)?.phase;
}

/** `intstr.GetScaledValueFromIntOrPercent` of a budget's field against `total`. */
function scaled(value: unknown, total: number, roundUp: boolean): number | undefined {
  if (typeof value === "number") return value;
  if (typeof value === "string" && /^\d+%$/.test(value)) {
    const exact = (Number(value.slice(0, -1)) * total) / 100;
    return roundUp ? Math.ceil(exact) : Math.floor(exact);
  }
  return undefined;
}

/** What the disruption controller would write in the budget's status. */
function budgetStatus(
  budget: KubeObject,
  selected: readonly KubeObject[],
): { desiredHealthy: number; currentHealthy: number; disruptionsAllowed: number } {
  const spec = (budget.spec ?? {}) as { minAvailable?: unknown; maxUnavailable?: unknown };
  const expected = selected.length;
  const currentHealthy = selected.filter((p) => !p.metadata.deletionTimestamp && isReady(p)).length;
  let desiredHealthy = 0;
  if (spec.maxUnavailable !== undefined && spec.maxUnavailable !== null) {
    desiredHealthy = Math.max(0, expected - (scaled(spec.maxUnavailable, expected, true) ?? 0));
  } else if (spec.minAvailable !== undefined && spec.minAvailable !== null) {
    desiredHealthy = scaled(spec.minAvailable, expected, true) ?? 0;
  }
  return {
    desiredHealthy,
    currentHealthy,
    disruptionsAllowed: Math.max(0, currentHealthy - desiredHealthy),
  };
}

/**
 * Answers `POST …/pods/{name}/eviction`: deletes the Pod when it may go (the Status the real
 * server answers with), throws the real server's error otherwise.
 */
export function evictPod(
  core: ApiCore,
  namespace: string,
  name: string,
  body: unknown,
): Record<string, unknown> {
  const pods = core.registry.lookup("", "v1", "pods");
  const budgets = core.registry.lookup("policy", "v1", "poddisruptionbudgets");
  if (!pods || !budgets) throw notFound("", "pods", name);
  const eviction = (body ?? {}) as { metadata?: { name?: string; namespace?: string } };
  if (eviction.metadata?.name !== undefined && eviction.metadata.name !== name) {
    throw badRequest("name in URL does not match name in Eviction object");
  }
  const pod = core.get(pods, namespace, name).obj;
  const success = { kind: "Status", apiVersion: "v1", metadata: {}, status: "Success", code: 201 };
  const remove = () => {
    core.delete(pods, namespace, name, {});
    return success;
  };
  const phase = phaseOf(pod);
  // Already going, or not running: no budget protects it (canIgnorePDB).
  if (pod.metadata.deletionTimestamp) return success;
  if (phase === "Succeeded" || phase === "Failed" || phase === "Pending") return remove();

  const inNamespace = core
    .list(pods, { namespace, labels: [], fields: [] })
    .items.map((s) => s.obj);
  const covering = core
    .list(budgets, { namespace, labels: [], fields: [] })
    .items.map((s) => s.obj)
    .filter((b) => {
      const requirements = requirementsOf((b.spec as { selector?: LabelSelector })?.selector);
      return requirements !== undefined && matchesLabels(requirements, pod.metadata.labels);
    });
  if (covering.length === 0) return remove();
  if (covering.length > 1) {
    throw new ApiError(
      500,
      "InternalError",
      "Internal error occurred: This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
    );
  }
  const budget = covering[0] as KubeObject;
  const requirements = requirementsOf((budget.spec as { selector?: LabelSelector }).selector) ?? [];
  const selected = inNamespace.filter((p) => matchesLabels(requirements, p.metadata.labels));
  const status = budgetStatus(budget, selected);
  const policy = (budget.spec as { unhealthyPodEvictionPolicy?: string })
    .unhealthyPodEvictionPolicy;
  if (!isReady(pod)) {
    // An unhealthy Pod costs no disruption (IfHealthyBudget: while the budget is met).
    if (policy === "AlwaysAllow") return remove();
    if (status.currentHealthy >= status.desiredHealthy && status.desiredHealthy > 0)
      return remove();
  }
  if (status.disruptionsAllowed <= 0) {
    throw new ApiError(
      429,
      "TooManyRequests",
      "Cannot evict pod as it would violate the pod's disruption budget.",
      {
        causes: [
          {
            reason: "DisruptionBudget",
            message: `The disruption budget ${budget.metadata.name} needs ${status.desiredHealthy} healthy pods and has ${status.currentHealthy} currently`,
          },
        ],
      },
    );
  }
  return remove();
}
