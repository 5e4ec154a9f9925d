/**
 * A workload cluster's Node as the {@link ClusterCache} keeps it (a projection of what the contract
 * reads), its index by providerID, and its readiness.
 *
 * @module
 */
import type {
  KubernetesObject,
  V1NodeCondition,
  V1NodeSpec,
  V1NodeSystemInfo,
  V1ObjectMeta,
  V1Taint,
} from "@kubernetes/client-node";
import { NodeResource, type ResourceDescriptor } from "../runtime/resource.js";
/** The index of a workload cluster's Nodes by `spec.providerID` (see {@link WorkloadClusterConnection.nodes}). */
export const NODE_PROVIDER_ID_INDEX = "spec.providerID";

/** Index function: a Node's `spec.providerID`, if it has one. */
export function indexNodeByProviderID(node: WorkloadNode): readonly string[] {
  const id = node.spec?.providerID;
  return id ? [id] : [];
}

/** A Node is Ready: its `Ready` condition is `True`. */
export function isNodeReady(node: WorkloadNode): boolean {
  return node.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") === true;
}

/**
 * A workload cluster's Node as the {@link ClusterCache} keeps it: what the kit and CAPI's contract
 * read (name, providerID, Ready, taints, cordon, labels, the SDK's and CAPI's annotations, the
 * kubelet version), not the whole object. A real Node is mostly its image list, addresses,
 * capacity, daemon endpoints and heartbeats, and a manager holds every Node of every workload
 * cluster it reaches. A `V1Node` is a `WorkloadNode`, so helpers taking one take both.
 */
export interface WorkloadNode extends KubernetesObject {
  /** Name, uid and resourceVersion; all labels; only annotations of {@link WORKLOAD_NODE_ANNOTATION_DOMAINS}. */
  metadata?: Pick<V1ObjectMeta, "name" | "uid" | "resourceVersion" | "labels" | "annotations">;
  /** `providerID`, `unschedulable` (cordon) and `taints`. */
  spec?: Pick<V1NodeSpec, "providerID" | "unschedulable" | "taints">;
  /** The conditions (without heartbeats) and the kubelet's version. */
  status?: {
    /** Type, status, reason, message and transition time of each condition. */
    conditions?: V1NodeCondition[];
    /** Only the kubelet's version. */
    nodeInfo?: Pick<V1NodeSystemInfo, "kubeletVersion">;
  };
}

/**
 * The domains whose Node annotations a {@link WorkloadNode} keeps (each with its subdomains): the
 * SDK's own records on a Node (`capi-ts.io/labels-from-pool`, `capi-ts.io/taints-from-pool`) and
 * CAPI core's (`cluster.x-k8s.io/machine`, `cluster.x-k8s.io/cluster-name`, …). Others (a CNI's,
 * the volume controllers') are dropped at ingest.
 */
export const WORKLOAD_NODE_ANNOTATION_DOMAINS: readonly string[] = [
  "capi-ts.io",
  "cluster.x-k8s.io",
];

/** Core v1 Node, read into the {@link WorkloadNode} shape by the ClusterCache's transform. */
/** Nodes, read as their projection (see {@link projectWorkloadNode}). */
export const WorkloadNodeResource: ResourceDescriptor<WorkloadNode> = NodeResource;

/**
 * The {@link WorkloadNode} of a Node as the workload cluster's API server sent it: new objects of
 * the kept fields only, so nothing else of the response stays reachable. The answer is the
 * workload cluster's, which whoever controls that cluster writes: a field of the wrong type is
 * dropped, not trusted. `intern` maps the label values and the condition texts, which repeat from
 * Node to Node, to one copy each (the ClusterCache passes a bounded table per workload cluster).
 *
 * @example
 * ```ts
 * const slim = projectWorkloadNode(await client.get(NodeResource, { name: "node-1" }));
 * ```
 */
export function projectWorkloadNode(
  node: WorkloadNode,
  intern: (value: string) => string = (value) => value,
): WorkloadNode {
  const metadata = node.metadata;
  const spec = node.spec;
  const status = node.status;
  const projected: WorkloadNode = {
    apiVersion: "v1",
    kind: "Node",
    metadata: {
      ...stringField("name", metadata?.name),
      ...stringField("uid", metadata?.uid),
      ...stringField("resourceVersion", metadata?.resourceVersion),
      ...mapField("labels", metadata?.labels, () => true, intern),
      ...mapField("annotations", metadata?.annotations, isKeptAnnotation, intern),
    },
  };
  if (spec !== undefined && spec !== null) {
    const taints = Array.isArray(spec.taints) ? spec.taints.filter(isTaint).map(copyTaint) : [];
    projected.spec = {
      ...stringField("providerID", spec.providerID),
      ...(spec.unschedulable === true ? { unschedulable: true } : {}),
      ...(taints.length > 0 ? { taints } : {}),
    };
  }
  if (status !== undefined && status !== null) {
    const conditions = Array.isArray(status.conditions)
      ? status.conditions.filter(isCondition).map((c) => copyCondition(c, intern))
      : [];
    const kubeletVersion = status.nodeInfo?.kubeletVersion;
    projected.status = {
      ...(conditions.length > 0 ? { conditions } : {}),
      ...(typeof kubeletVersion === "string"
        ? { nodeInfo: { kubeletVersion: intern(kubeletVersion) } }
        : {}),
    };
  }
  return projected;
}

function stringField<K extends string>(key: K, value: unknown): { [P in K]?: string } {
  return (typeof value === "string" ? { [key]: value } : {}) as { [P in K]?: string };
}

function mapField<K extends string>(
  key: K,
  value: unknown,
  keep: (key: string) => boolean,
  intern: (value: string) => string,
): { [P in K]?: Record<string, string> } {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return {};
  const copy: Record<string, string> = {};
  let kept = 0;
  for (const [k, v] of Object.entries(value)) {
    if (typeof v === "string" && keep(k)) {
      copy[k] = intern(v);
      kept++;
    }
  }
  return (kept > 0 ? { [key]: copy } : {}) as { [P in K]?: Record<string, string> };
}

function isKeptAnnotation(key: string): boolean {
  const slash = key.indexOf("/");
  if (slash < 0) return false;
  const domain = key.slice(0, slash);
  return WORKLOAD_NODE_ANNOTATION_DOMAINS.some((d) => domain === d || domain.endsWith(`.${d}`));
}

function isTaint(taint: unknown): taint is V1Taint {
  const t = taint as V1Taint | null;
  return typeof t?.key === "string" && typeof t.effect === "string";
}

function copyTaint(taint: V1Taint): V1Taint {
  return {
    key: taint.key,
    effect: taint.effect,
    ...(typeof taint.value === "string" ? { value: taint.value } : {}),
    ...(taint.timeAdded !== undefined ? { timeAdded: taint.timeAdded } : {}),
  };
}

function isCondition(condition: unknown): condition is V1NodeCondition {
  const c = condition as V1NodeCondition | null;
  return typeof c?.type === "string" && typeof c.status === "string";
}

/** Without `lastHeartbeatTime`: the kubelet bumps it every few seconds and nothing reads it. */
function copyCondition(
  condition: V1NodeCondition,
  intern: (value: string) => string,
): V1NodeCondition {
  const text = (value: unknown) => (typeof value === "string" ? intern(value) : undefined);
  const reason = text(condition.reason);
  const message = text(condition.message);
  const since = condition.lastTransitionTime;
  return {
    type: intern(condition.type),
    status: intern(condition.status),
    ...(reason !== undefined ? { reason } : {}),
    ...(message !== undefined ? { message } : {}),
    // Typed a Date by client-node; on the wire (and so here) it is the RFC 3339 text.
    ...(since !== undefined
      ? { lastTransitionTime: (typeof since === "string" ? intern(since) : since) as Date }
      : {}),
  };
}
