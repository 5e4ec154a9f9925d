/**
 * The Node side of core's emulated MachinePool controller: the workload cluster's Nodes by providerID,
 * `status.nodeRefs` and the deprecated replica counters, the ReplicasReady condition, owner annotations
 * and the uninitialized taint on the pool's Nodes, and deletion of Nodes that left the pool.
 *
 * @module
 */
import { setV1Beta1Condition } from "@capi-ts/sdk/conditions";
import { NodeUninitializedTaint } from "@capi-ts/sdk/contract";
import { isNotFound, NodeResource, type ReconcileResult } from "@capi-ts/sdk/runtime";
import type { V1Node, V1Taint } from "@kubernetes/client-node";
import type { WorkloadConnection } from "./clustercache.js";
import { clusterKey, wrap } from "./controller-helpers.js";
import {
  type MachinePoolScope,
  type ReconcilerDeps,
  setDeprecatedCounter,
} from "./machinepool-scope.js";
import { isNodeAvailable, isNodeReady } from "./node-health.js";
import { type ClusterObject, isDeleting, type MachinePoolObject } from "./types.js";

/** The workload cluster's Nodes by providerID. */
export async function nodeRefMap(connection: WorkloadConnection): Promise<Map<string, V1Node>> {
  const nodes = await connection.cache.list(NodeResource);
  const map = new Map<string, V1Node>();
  for (const node of nodes) {
    const id = node.spec?.providerID;
    if (id) map.set(id, node);
  }
  return map;
}

/** `watchClusterNodes`: only once the control plane is initialized, and only while connected. */
function watchClusterNodes(deps: ReconcilerDeps, cluster: ClusterObject): void {
  const initialized = (cluster.status?.conditions ?? []).some(
    (c) => c.type === "ControlPlaneInitialized" && c.status === "True",
  );
  if (!initialized) return;
  const handler = deps.nodeHandler();
  if (!handler) return;
  deps.clusterCache.watchNodes(clusterKey(cluster), "machinepool-watchNodes", handler);
}

/** `reconcileNodeRefs`: `status.nodeRefs` and the ready/available counters from the pool's Nodes. */
export async function reconcileNodeRefs(
  deps: ReconcilerDeps,
  scope: MachinePoolScope,
): Promise<ReconcileResult | undefined> {
  const { mp } = scope;
  watchClusterNodes(deps, scope.cluster);
  if (isDeleting(mp)) return undefined;
  mp.status ??= {};
  const readyReplicas = mp.status.deprecated?.v1beta1?.readyReplicas ?? 0;
  const nodeRefs = mp.status.nodeRefs ?? [];
  if ((mp.status.replicas ?? 0) === readyReplicas && nodeRefs.length === readyReplicas) {
    if (scope.nodeRefMap) {
      const byName = new Map(
        [...scope.nodeRefMap.values()].map((node) => [node.metadata?.name, node]),
      );
      const valid = nodeRefs.every((ref) => {
        const node = byName.get(ref.name);
        return node !== undefined && node.metadata?.uid === ref.uid;
      });
      if (valid) {
        setV1Beta1Condition(mp, { type: "ReplicasReady", status: "True" });
        return undefined;
      }
    }
  }
  if ((mp.spec?.providerIDList ?? []).length === 0 && mp.spec?.replicas !== 0) {
    scope.trace.notes.push({ event: "WaitingForProviderIDs" });
    return undefined;
  }
  const connection = deps.clusterCache.getClient(clusterKey(scope.cluster));
  await deleteRetiredNodes(deps, scope, connection, nodeRefs, mp.spec?.providerIDList ?? []);
  if (!scope.nodeRefMap) throw new Error("failed to get Node references");

  const minReadySeconds = mp.spec?.template?.spec?.minReadySeconds ?? 0;
  const now = Date.now();
  let ready = 0;
  let available = 0;
  const references: { apiVersion: string; kind: string; name: string; uid: string }[] = [];
  for (const providerID of mp.spec?.providerIDList ?? []) {
    if (!providerID) continue;
    const node = scope.nodeRefMap.get(providerID);
    if (!node) continue;
    if (isNodeReady(node)) {
      ready++;
      if (isNodeAvailable(node, minReadySeconds, now)) available++;
    }
    references.push({
      apiVersion: "v1",
      kind: "Node",
      name: node.metadata?.name ?? "",
      uid: node.metadata?.uid ?? "",
    });
  }
  if (references.length === 0 && (mp.spec?.providerIDList ?? []).length !== 0) {
    scope.trace.notes.push({ event: "NoMatchingNodes" });
    return undefined;
  }
  setDeprecatedCounter(mp, "readyReplicas", ready);
  setDeprecatedCounter(mp, "availableReplicas", available);
  setDeprecatedCounter(mp, "unavailableReplicas", (mp.status.replicas ?? 0) - available);
  if (references.length > 0) mp.status.nodeRefs = references;
  else delete mp.status.nodeRefs;
  await patchNodes(deps, scope, connection, references);
  if ((mp.status.replicas ?? 0) !== ready || references.length !== ready) {
    setV1Beta1Condition(mp, {
      type: "ReplicasReady",
      status: "False",
      reason: "WaitingForReplicasReady",
      severity: "Info",
    });
    return { requeueAfter: deps.options.nodeRefRequeueMs };
  }
  setV1Beta1Condition(mp, { type: "ReplicasReady", status: "True" });
  return undefined;
}

/** `deleteRetiredNodes`: Nodes in `nodeRefs` whose providerID is not in the list are deleted. */
export async function deleteRetiredNodes(
  deps: ReconcilerDeps,
  scope: MachinePoolScope,
  connection: WorkloadConnection,
  nodeRefs: NonNullable<NonNullable<MachinePoolObject["status"]>["nodeRefs"]>,
  providerIDList: string[],
): Promise<void> {
  const byProviderID = new Map<string, V1Node>();
  for (const ref of nodeRefs) {
    if (!ref.name) continue;
    const node = await connection.cache.get(NodeResource, { name: ref.name });
    const id = node?.spec?.providerID;
    if (!node || !id) continue;
    byProviderID.set(id, node);
  }
  for (const id of providerIDList) if (id) byProviderID.delete(id);
  for (const [providerID, node] of byProviderID) {
    scope.trace.notes.push({
      event: "RetiredNodeDeleted",
      detail: `${node.metadata?.name} (${providerID})`,
    });
    try {
      await deps.writer.delete(
        NodeResource,
        { name: node.metadata?.name ?? "" },
        {
          reason: `providerID ${providerID} is no longer in spec.providerIDList`,
          machinePool: scope.key,
        },
        connection.client,
      );
    } catch (error) {
      if (!isNotFound(error)) throw wrap(error, "failed to delete Node");
    }
  }
}

/** `patchNodes`: owner annotations and removal of the uninitialized taint. */
async function patchNodes(
  deps: ReconcilerDeps,
  scope: MachinePoolScope,
  connection: WorkloadConnection,
  references: { name: string }[],
): Promise<void> {
  const { mp } = scope;
  const desired: Record<string, string> = {
    "cluster.x-k8s.io/cluster-name": mp.spec?.clusterName ?? "",
    "cluster.x-k8s.io/cluster-namespace": mp.metadata?.namespace ?? "",
    "cluster.x-k8s.io/owner-kind": "MachinePool",
    "cluster.x-k8s.io/owner-name": mp.metadata?.name ?? "",
  };
  for (const ref of references) {
    const node = await connection.cache.get(NodeResource, { name: ref.name });
    if (!node) continue;
    const annotations = node.metadata?.annotations ?? {};
    const changed: Record<string, string> = {};
    for (const [k, v] of Object.entries(desired)) if (annotations[k] !== v) changed[k] = v;
    const taints = node.spec?.taints ?? [];
    const kept = taints.filter(
      (t: V1Taint) =>
        !(t.key === NodeUninitializedTaint.key && t.effect === NodeUninitializedTaint.effect),
    );
    const patch: Record<string, unknown> = {};
    if (Object.keys(changed).length > 0) patch.metadata = { annotations: changed };
    if (kept.length !== taints.length) patch.spec = { taints: kept.length > 0 ? kept : null };
    if (Object.keys(patch).length === 0) continue;
    await deps.writer.mergePatch(
      NodeResource,
      { name: ref.name },
      patch,
      {
        reason:
          kept.length !== taints.length
            ? "set owner annotations and remove the node.cluster.x-k8s.io/uninitialized taint"
            : "set owner annotations",
        machinePool: scope.key,
      },
      undefined,
      connection.client,
    );
  }
}
