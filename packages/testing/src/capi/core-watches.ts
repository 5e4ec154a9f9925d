/**
 * What the emulator's controllers watch besides their own kind, as core maps it: owner references,
 * the Cluster predicates, and a workload cluster's Node to the pool or Machine it belongs to.
 *
 * @module
 */
import { CLUSTER_API_GROUP, Labels } from "@capi-ts/sdk/contract";
import type {
  InformerCache,
  Predicate,
  ReconcileRequest,
  ResourceDescriptor,
} from "@capi-ts/sdk/runtime";
import type { KubernetesObject, V1Node } from "@kubernetes/client-node";
import type { ClusterObject } from "./types.js";

/** The MachinePools an object names in its owner references (`EnqueueRequestForOwner(MachinePool)`). */
export function ownerMachinePools(obj: KubernetesObject): ReconcileRequest[] {
  const namespace = obj.metadata?.namespace;
  return (obj.metadata?.ownerReferences ?? [])
    .filter(
      (ref) => ref.kind === "MachinePool" && ref.apiVersion.split("/")[0] === CLUSTER_API_GROUP,
    )
    .map((ref) => (namespace ? { namespace, name: ref.name } : { name: ref.name }));
}

/** The Machines an object names in its owner references (`EnqueueRequestForOwner(Machine)`). */
export function ownerMachines(obj: KubernetesObject): ReconcileRequest[] {
  const namespace = obj.metadata?.namespace;
  return (obj.metadata?.ownerReferences ?? [])
    .filter((ref) => ref.kind === "Machine" && ref.apiVersion.split("/")[0] === CLUSTER_API_GROUP)
    .map((ref) => (namespace ? { namespace, name: ref.name } : { name: ref.name }));
}

/** Core's `ClusterControlPlaneInitialized`: only updates where ControlPlaneInitialized turns True. */
export const clusterControlPlaneInitialized: Predicate<ClusterObject> = {
  create: () => false,
  delete: () => false,
  update: (oldObj, newObj) => {
    const initialized = (c: ClusterObject) =>
      (c.status?.conditions ?? []).some(
        (condition) => condition.type === "ControlPlaneInitialized" && condition.status === "True",
      );
    return !initialized(oldObj) && initialized(newObj);
  },
};

/** Core's `ClusterPausedTransitions`: only updates that flip `spec.paused`. */
export const clusterPausedTransitions: Predicate<ClusterObject> = {
  create: () => false,
  delete: () => false,
  update: (oldObj, newObj) => (oldObj.spec?.paused === true) !== (newObj.spec?.paused === true),
};

/** Names of the cache indexes the Node watches look pools and Machines up by. */
export const POOL_BY_PROVIDER_ID = "capi-ts.core/machinepool-provider-id";
export const POOL_BY_NODE = "capi-ts.core/machinepool-node-name";
export const MACHINE_BY_PROVIDER_ID = "capi-ts.core/machine-provider-id";
export const MACHINE_BY_NODE = "capi-ts.core/machine-node-name";

/**
 * Keeps, of the pools or Machines an index found for a Node, those of the Node's cluster: the
 * namespace and cluster-name annotations core's Node watch filters by, each when the Node has it.
 */
function nodeMatcher(node: V1Node): <T extends KubernetesObject>(candidates: T[]) => T[] {
  const annotations = node.metadata?.annotations ?? {};
  const clusterName = annotations["cluster.x-k8s.io/cluster-name"];
  const namespace = annotations["cluster.x-k8s.io/cluster-namespace"];
  return (candidates) =>
    candidates.filter(
      (obj) =>
        (!namespace || obj.metadata?.namespace === namespace) &&
        (!clusterName || obj.metadata?.labels?.[Labels.ClusterName] === clusterName),
    );
}

/**
 * Core's `nodeToMachinePool` / `nodeToMachine`: among the pools or Machines of the Node's
 * cluster-name/namespace annotations, the one that references the Node by name (`byNodeIndex`), else
 * the one with its providerID (`byProviderIDIndex`); none when the choice is not unique.
 */
export async function nodeToObject<T extends KubernetesObject>(
  cache: InformerCache,
  resource: ResourceDescriptor<T>,
  byNodeIndex: string,
  byProviderIDIndex: string,
  node: V1Node,
): Promise<ReconcileRequest[]> {
  const matches = nodeMatcher(node);
  const key = (obj: T) => ({
    namespace: obj.metadata?.namespace ?? "",
    name: obj.metadata?.name ?? "",
  });
  const byName = matches(await cache.byIndex(resource, byNodeIndex, node.metadata?.name ?? ""));
  if (byName.length === 1) return [key(byName[0] as T)];
  const providerID = node.spec?.providerID;
  if (!providerID) return [];
  const byID = matches(await cache.byIndex(resource, byProviderIDIndex, providerID));
  return byID.length === 1 ? [key(byID[0] as T)] : [];
}
