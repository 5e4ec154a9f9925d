/**
 * Label keys Cluster API reads or writes (contract §8, `api/core/v1beta2/common_types.go`).
 *
 * @example
 * ```ts
 * const clusterName = pool.metadata?.labels?.[Labels.ClusterName];
 * ```
 */
export const Labels = {
  /** Set by core on the MachinePool, the InfraMachinePool and Machines; the provider sets it on InfraMachines. */
  ClusterName: "cluster.x-k8s.io/cluster-name",
  /** On InfraMachines and Machines of a MachinePool; the value is `formatLabelValue(machinePoolName)`. */
  MachinePoolName: "cluster.x-k8s.io/pool-name",
  /** Compared with `--watch-filter` (R20). */
  WatchFilter: "cluster.x-k8s.io/watch-filter",
  /** Marks control plane Machines. */
  MachineControlPlane: "cluster.x-k8s.io/control-plane",
  /** The provider name on clusterctl-installed manifests. */
  ProviderName: "cluster.x-k8s.io/provider",
  /** Objects created by the topology controller. */
  ClusterTopologyOwned: "topology.cluster.x-k8s.io/owned",
  /** The topology name of a MachinePool / InfraMachinePool. */
  ClusterTopologyMachinePoolName: "topology.cluster.x-k8s.io/pool-name",
  /** Label on a provider ClusterRole so core's manager role aggregates it (R3); value `"true"`. */
  AggregateToManager: "cluster.x-k8s.io/aggregate-to-manager",
  /**
   * Set by core on the Node of a Machine whose InfraMachine says `status.interruptible: true`
   * (spot, preemptible); value `""`.
   */
  Interruptible: "cluster.x-k8s.io/interruptible",
} as const;

/**
 * Annotation keys Cluster API reads or writes (contract §8).
 *
 * @example
 * ```ts
 * const paused = Annotations.Paused in (pool.metadata?.annotations ?? {});
 * ```
 */
export const Annotations = {
  /** Pauses reconciliation of the annotated object (presence only). */
  Paused: "cluster.x-k8s.io/paused",
  /** On a MachinePool: replicas are managed by an external autoscaler (truthy unless `"false"`). */
  ReplicasManagedBy: "cluster.x-k8s.io/replicas-managed-by",
  /** On a Machine: delete it first when scaling down. */
  DeleteMachine: "cluster.x-k8s.io/delete-machine",
  /** On a MachinePool: cluster-autoscaler minimum size. */
  AutoscalerMinSize: "cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size",
  /** On a MachinePool: cluster-autoscaler maximum size. */
  AutoscalerMaxSize: "cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size",
  /** On Nodes: the cluster name. */
  ClusterName: "cluster.x-k8s.io/cluster-name",
  /** On Nodes: the cluster namespace. */
  ClusterNamespace: "cluster.x-k8s.io/cluster-namespace",
  /** On Nodes: the owner kind (`MachinePool`). */
  OwnerKind: "cluster.x-k8s.io/owner-kind",
  /** On Nodes: the owner name. */
  OwnerName: "cluster.x-k8s.io/owner-name",
  /** On objects cloned from a template: the template name. */
  TemplateClonedFromName: "cluster.x-k8s.io/cloned-from-name",
  /** On objects cloned from a template: the template group/kind. */
  TemplateClonedFromGroupKind: "cluster.x-k8s.io/cloned-from-groupkind",
  /** Set by the topology controller on server-side-apply dry runs; template webhooks must allow them (R19). */
  TopologyDryRun: "topology.cluster.x-k8s.io/dry-run",
  /** InfraCluster only: managed by something other than the provider. */
  ManagedBy: "cluster.x-k8s.io/managed-by",
  /**
   * On an object read at an older API version: the JSON of the hub (storage) version's fields that
   * version cannot hold, so converting back restores them (CAPI's `util/conversion` keeps the same).
   */
  ConversionData: "cluster.x-k8s.io/conversion-data",
  /**
   * Set by a provider while an operation that must not be interrupted is in flight: `clusterctl move`
   * waits (about two minutes, with backoff) for it to be gone from every object it moves, once it
   * has paused the Cluster and before it copies anything (presence only).
   */
  BlockMove: "clusterctl.cluster.x-k8s.io/block-move",
  /**
   * Set by `clusterctl move` on a source object just before it deletes it (and then removes its
   * finalizers): the object lives on in the target cluster, so its cloud resources must stay.
   */
  DeleteForMove: "clusterctl.cluster.x-k8s.io/delete-for-move",
} as const;

/**
 * Finalizers core sets (contract §8). A provider's own finalizer is named with {@link finalizerFor}.
 *
 * @example
 * ```ts
 * mp.metadata?.finalizers?.includes(Finalizers.MachinePool);
 * ```
 */
export const Finalizers = {
  /** Core's finalizer on the MachinePool. */
  MachinePool: "machinepool.cluster.x-k8s.io",
  /** Core's finalizer on Machines. */
  Machine: "machine.cluster.x-k8s.io",
  /** Core's finalizer on Clusters. */
  Cluster: "cluster.cluster.x-k8s.io",
} as const;

/** The taint bootstrap adds to new Nodes and core removes once the Node's providerID matches. */
export const NodeUninitializedTaint = {
  /** The taint's key, `node.cluster.x-k8s.io/uninitialized`. */
  key: "node.cluster.x-k8s.io/uninitialized",
  /**
   * `NoSchedule`: workloads wait until core has matched the Node to a Machine and removed the
   * taint.
   */
  effect: "NoSchedule",
} as const;

/** The API group of Cluster API core kinds. */
export const CLUSTER_API_GROUP = "cluster.x-k8s.io";

/** The conventional API group of infrastructure providers (core's manager already has RBAC on it, R3). */
export const INFRASTRUCTURE_GROUP = "infrastructure.cluster.x-k8s.io";

/** Maximum number of entries in `spec.providerIDList` (R8, the MachinePool CRD's limit). */
export const MAX_PROVIDER_IDS = 10_000;

/** Maximum length of one provider ID (R8). */
export const MAX_PROVIDER_ID_LENGTH = 512;

/**
 * The CRD label key that declares which contract a CRD implements (R4), e.g. `cluster.x-k8s.io/v1beta2`.
 *
 * @example
 * ```ts
 * contractLabel("v1beta2"); // "cluster.x-k8s.io/v1beta2"
 * ```
 */
export function contractLabel(contractVersion: "v1beta1" | "v1beta2"): string {
  return `cluster.x-k8s.io/${contractVersion}`;
}

/**
 * The conventional finalizer of a provider kind (R23): `<kind-lowercase>.<group>`.
 *
 * @example
 * ```ts
 * finalizerFor("FooMachinePool", "infrastructure.cluster.x-k8s.io"); // "foomachinepool.infrastructure.cluster.x-k8s.io"
 * ```
 */
export function finalizerFor(kind: string, group: string): string {
  if (!kind || !group)
    throw new Error(
      'finalizerFor needs a kind and a group, e.g. ("FooMachinePool", "infrastructure.cluster.x-k8s.io")',
    );
  return `${kind.toLowerCase()}.${group}`;
}
