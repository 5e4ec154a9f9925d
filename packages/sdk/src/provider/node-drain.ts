/**
 * Draining a Node before its instance is terminated, for pools without MachinePool Machines (with
 * them, core's Machine controller drains): what the kit asks of the workload cluster
 * ({@link NodeDrainApi}) and the pure rules of a drain, as CAPI's drain has them — which Pods are
 * left alone, which are evicted, which are waited for, and which PodDisruptionBudget a refused
 * eviction names. A leaf: the drain step (`steps/drain.ts`) and the controller's API build on it.
 *
 * @module
 */
import type { V1Pod } from "@kubernetes/client-node";

/** The Node of an instance, as the drain needs it. */
export interface DrainNode {
  /** The Node's name. */
  readonly name: string;
  /** Whether it is cordoned (`spec.unschedulable`), by the kit or anyone else. */
  readonly unschedulable: boolean;
}

/** What the Eviction API answered for one Pod. */
export type EvictionOutcome =
  /** Accepted: the Pod is being deleted (at once, or after its grace period). */
  | { readonly kind: "evicted" }
  /** The Pod is gone already. */
  | { readonly kind: "gone" }
  /**
   * 429: a PodDisruptionBudget allows no disruption now. `budget` is the budget's name as the API
   * server named it (in the Pod's namespace), when it did.
   */
  | { readonly kind: "blocked"; readonly budget: string | undefined };

/**
 * The workload cluster as a drain reaches it, with the credentials of the Cluster's kubeconfig
 * Secret. Every method throws `WorkloadClusterUnavailableError` when the workload cluster cannot be
 * reached, and the client's typed errors otherwise.
 */
export interface NodeDrainApi {
  /** The Node whose `spec.providerID` is `providerID`, or `undefined` when none registered. */
  nodeOf(providerID: string): Promise<DrainNode | undefined>;
  /** Cordons the Node (`spec.unschedulable: true`, a merge patch). */
  cordon(nodeName: string): Promise<void>;
  /** Uncordons a Node the kit cordoned for a drain it gave up (the instance no longer goes). */
  uncordon(nodeName: string): Promise<void>;
  /** The Pods bound to the Node (`spec.nodeName`), at most 1,000 (a kubelet runs 110 by default). */
  podsOn(nodeName: string): Promise<readonly V1Pod[]>;
  /** Creates a policy/v1 Eviction of the Pod (the `pods/eviction` subresource). */
  evict(pod: { readonly namespace: string; readonly name: string }): Promise<EvictionOutcome>;
}

/** The most Pods one drain reads of a Node (a kubelet runs 110 by default). */
export const MAX_DRAIN_PODS = 1_000;

/** The annotation the kubelet puts on the mirror Pod of a static Pod. */
export const MIRROR_POD_ANNOTATION = "kubernetes.io/config.mirror";

/** CAPI's label that keeps a Pod out of a drain (`cluster.x-k8s.io/drain: skip`). */
export const DRAIN_LABEL = "cluster.x-k8s.io/drain";

/**
 * What a drain does with a Pod:
 *
 * - `ignore`: left alone, as CAPI's drain leaves it — a mirror Pod (the kubelet recreates it), a
 *   DaemonSet's Pod (its controller would recreate it; it tolerates `unschedulable`), a Pod labelled
 *   `cluster.x-k8s.io/drain: skip`, a Pod that finished (`Succeeded`, `Failed`), or a terminating
 *   Pod whose grace period is over (what is left is the kubelet's to clean up);
 * - `terminating`: being deleted within its grace period: waited for, not evicted again;
 * - `evict`: evicted through the Eviction API, which honours PodDisruptionBudgets.
 */
export type PodDrainAction = "ignore" | "terminating" | "evict";

/**
 * Classifies one Pod of a Node being drained; `now` decides whether a terminating Pod's grace
 * period (its `deletionTimestamp`, which the API server sets to the deletion's time plus the grace)
 * is over.
 *
 * @example
 * ```ts
 * podDrainAction({ metadata: { annotations: { "kubernetes.io/config.mirror": "x" } } }, Date.now()); // "ignore"
 * ```
 */
export function podDrainAction(pod: V1Pod, now: number): PodDrainAction {
  const meta = pod.metadata ?? {};
  if (meta.annotations?.[MIRROR_POD_ANNOTATION] !== undefined) return "ignore";
  if (meta.labels?.[DRAIN_LABEL] === "skip") return "ignore";
  if (meta.ownerReferences?.some((ref) => ref.controller === true && ref.kind === "DaemonSet")) {
    return "ignore";
  }
  const phase = pod.status?.phase;
  if (phase === "Succeeded" || phase === "Failed") return "ignore";
  if (meta.deletionTimestamp !== undefined && meta.deletionTimestamp !== null) {
    const until = new Date(meta.deletionTimestamp as unknown as string | Date).getTime();
    return Number.isFinite(until) && until <= now ? "ignore" : "terminating";
  }
  return "evict";
}

/**
 * The eviction path of kube-apiserver names the budget in a `DisruptionBudget` cause: "The
 * disruption budget web needs 2 healthy pods and has 2 currently" (or "… is still being processed
 * by the server"). Names are DNS subdomains: at most 253 characters of a bounded alphabet.
 */
const BUDGET_CAUSE = /^The disruption budget ([a-z0-9][a-z0-9.-]{0,252}) (?:needs|is still)/;

/**
 * The name of the PodDisruptionBudget a 429 of the Eviction API names in its causes, or
 * `undefined`. Only a name that is a valid object name is taken from the (untrusted) answer.
 *
 * @example
 * ```ts
 * budgetOfRefusal([{ reason: "DisruptionBudget", message: "The disruption budget web needs 1 healthy pods and has 1 currently" }]); // "web"
 * ```
 */
export function budgetOfRefusal(
  causes: readonly { readonly reason?: string; readonly message?: string }[] | undefined,
): string | undefined {
  // A cause's type is `reason` on the wire (metav1.StatusCause).
  for (const cause of (causes ?? []).slice(0, 8)) {
    if (cause.reason !== "DisruptionBudget" || typeof cause.message !== "string") continue;
    const match = BUDGET_CAUSE.exec(cause.message.slice(0, 400));
    if (match) return match[1];
  }
  return undefined;
}

/**
 * `spec.template.spec.deletion.nodeDrainTimeoutSeconds` of a MachinePool, in milliseconds; `0`
 * (unset, or not a whole number ≥ 0) waits for as long as the drain takes, as core does.
 */
export function nodeDrainTimeoutMs(machinePool: unknown): number {
  const seconds = (
    machinePool as {
      spec?: { template?: { spec?: { deletion?: { nodeDrainTimeoutSeconds?: unknown } } } };
    }
  )?.spec?.template?.spec?.deletion?.nodeDrainTimeoutSeconds;
  return typeof seconds === "number" && Number.isInteger(seconds) && seconds > 0
    ? seconds * 1000
    : 0;
}
