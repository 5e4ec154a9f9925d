/**
 * Which Node labels and taints of a MachinePool the kit may apply: the label domains core syncs to
 * Nodes, the keys the kubelet, Kubernetes' controllers, core and the cluster-autoscaler own, and the
 * syntax of keys, values and effects. Pure rules, which `nodes.ts` applies to a MachinePool.
 *
 * @module
 */
import { ClusterAutoscalerTaint } from "../contract/autoscaler.js";
import { NodeUninitializedTaint } from "../contract/constants.js";

const EFFECTS: ReadonlySet<string> = new Set(["NoSchedule", "PreferNoSchedule", "NoExecute"]);
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

/** The domain of a label or taint key (`""` without one). */
function domainOf(key: string): string {
  const slash = key.indexOf("/");
  return slash < 0 ? "" : key.slice(0, slash);
}

function inDomain(domain: string, root: string): boolean {
  return domain === root || domain.endsWith(`.${root}`);
}

/** A key's syntax problem (a qualified name: an optional DNS-subdomain prefix and a name), if any. */
export function keyProblem(key: string): string | undefined {
  const slash = key.indexOf("/");
  const prefix = slash < 0 ? "" : key.slice(0, slash);
  const name = slash < 0 ? key : key.slice(slash + 1);
  if (slash >= 0 && (prefix.length === 0 || prefix.length > 253 || !DNS_SUBDOMAIN.test(prefix))) {
    return "its prefix is not a DNS subdomain";
  }
  if (name.length === 0 || name.length > 63 || !NAME.test(name)) {
    return "not a qualified name (at most 63 letters, digits, '-', '_' or '.')";
  }
  return undefined;
}

/**
 * Whether core syncs a label of this key from a Machine to its Node, and so the kit from a pool's
 * template to its Nodes: the domains `node-role.kubernetes.io`, `node-restriction.kubernetes.io` and
 * `node.cluster.x-k8s.io` (the last two with their subdomains), as CAPI's `GetManagedLabels`.
 *
 * @example
 * ```ts
 * isSyncedNodeLabel("node-role.kubernetes.io/worker"); // true
 * isSyncedNodeLabel("example.com/team"); // false: the MachinePool's own label, not its Nodes'
 * ```
 */
export function isSyncedNodeLabel(key: string): boolean {
  const domain = domainOf(key);
  return (
    domain === "node-role.kubernetes.io" ||
    inDomain(domain, "node-restriction.kubernetes.io") ||
    inDomain(domain, "node.cluster.x-k8s.io")
  );
}

/**
 * Why a label of a pool's template may not go to its Nodes, or `undefined` when it may (or is simply
 * not a Node label). Refused: the Kubernetes domains (`kubernetes.io`, `k8s.io` and their subdomains)
 * outside the synced ones, which the kubelet and Kubernetes' controllers own
 * (`kubernetes.io/hostname`, `node.kubernetes.io/instance-type`, `topology.kubernetes.io/zone`), and a
 * synced label whose key or value is not valid.
 */
export function nodeLabelRefusal(key: string, value: string): string | undefined {
  const domain = domainOf(key);
  if (isSyncedNodeLabel(key)) {
    const problem = keyProblem(key);
    if (problem) return problem;
    if (value.length > 63 || !VALUE.test(value)) return "its value is not a valid label value";
    return undefined;
  }
  if (inDomain(domain, "kubernetes.io") || inDomain(domain, "k8s.io")) {
    return "the domain belongs to the kubelet and Kubernetes' controllers; only node-role.kubernetes.io, node-restriction.kubernetes.io and node.cluster.x-k8s.io labels go to Nodes";
  }
  return undefined;
}

/**
 * Why the kit may not own a taint, or `undefined` when it may: core's own
 * (`node.cluster.x-k8s.io/uninitialized`, `…/outdated-revision`), the node lifecycle controller's and
 * kubelet's (`node.kubernetes.io/*` but `out-of-service`), the cloud controller manager's
 * (`node.cloudprovider.kubernetes.io/*`), the deprecated `node-role.kubernetes.io/master` — the keys
 * core's webhook refuses in a Machine's taints — and the cluster-autoscaler's
 * (`ToBeDeletedByClusterAutoscaler`, `DeletionCandidateOfClusterAutoscaler`); and a key, value or
 * effect that is not valid.
 */
export function nodeTaintRefusal(taint: {
  readonly key: string;
  readonly value?: string | undefined;
  readonly effect: string;
}): string | undefined {
  const { key } = taint;
  if (key === NodeUninitializedTaint.key || key === "node.cluster.x-k8s.io/outdated-revision") {
    return "Cluster API core manages it";
  }
  if (key.startsWith("node.kubernetes.io/") && key !== "node.kubernetes.io/out-of-service") {
    return "the kubelet and the node lifecycle controller manage node.kubernetes.io taints";
  }
  if (key.startsWith("node.cloudprovider.kubernetes.io/")) {
    return "the cloud controller manager manages it";
  }
  if (key === "node-role.kubernetes.io/master") return "deprecated since Kubernetes 1.24";
  if (key === ClusterAutoscalerTaint.key || key === "DeletionCandidateOfClusterAutoscaler") {
    return "the cluster-autoscaler manages it";
  }
  const problem = keyProblem(key);
  if (problem) return problem;
  if (taint.value !== undefined && (taint.value.length > 63 || !VALUE.test(taint.value))) {
    return "its value is not a valid label value";
  }
  if (!EFFECTS.has(taint.effect))
    return "its effect is not NoSchedule, PreferNoSchedule or NoExecute";
  return undefined;
}

/** `key:effect`, the identity of a taint on a Node. */
export function taintId(taint: { readonly key: string; readonly effect: string }): string {
  return `${taint.key}:${taint.effect}`;
}
