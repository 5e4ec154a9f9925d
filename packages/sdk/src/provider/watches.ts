/**
 * The watches of the kit's controller: the pool kind, its owner MachinePool, the Cluster (pause and
 * infrastructure transitions), the bootstrap Secret and, with a `ClusterCache` (`readiness: "node"`,
 * or one given), the Nodes of each pool's workload cluster (through the {@link ClusterCache}, never the management cluster). The
 * manager's watch filter (R20) applies to every watch of objects that carry the label (the pool,
 * MachinePools, Clusters); Secrets and Nodes do not carry it, so their events are mapped and the
 * reconcile itself checks the pool's label.
 *
 * @module
 */
import type { KubernetesObject, V1Secret } from "@kubernetes/client-node";
import type { Cluster, Machine, MachinePool } from "../api/cluster.x-k8s.io/v1beta2.js";
import type { ClusterCache } from "../clustercache/clustercache.js";
import { isNodeReady, type WorkloadNode } from "../clustercache/workload-node.js";
import { Labels } from "../contract/constants.js";
import { CoreCluster, CoreMachine, CoreMachinePool } from "../contract/core-kinds.js";
import { readCluster, readMachinePool } from "../contract/readers.js";
import { CLUSTER_NAME_INDEX, hasWatchFilterLabel, indexByClusterName } from "../contract/watch.js";
import type { Controller } from "../runtime/controller.js";
import type { ControllerBuilder } from "../runtime/controller-builder.js";
import type { Manager } from "../runtime/manager.js";
import { anyPredicate, type Predicate } from "../runtime/predicates.js";
import {
  type ObjectKey,
  objectKeyString,
  type ResourceDescriptor,
  SecretResource,
} from "../runtime/resource.js";
import { remediationOf } from "./machines.js";
import { poolNodeOf } from "./nodes.js";
import type { PoolObject } from "./scope.js";
import { stableStringify } from "./stamp.js";

function withoutVolatile(obj: KubernetesObject): string {
  const { resourceVersion: _rv, managedFields: _mf, ...metadata } = obj.metadata ?? {};
  return stableStringify({ metadata, spec: (obj as { spec?: unknown }).spec });
}

/** Passes creates, deletes, and updates that change metadata or spec (not status-only updates). */
function specOrMetadataChanged<T extends KubernetesObject>(): Predicate<T> {
  return { update: (oldObj, newObj) => withoutVolatile(oldObj) !== withoutVolatile(newObj) };
}

/**
 * Passes updates that change a Machine's place in MachineHealthCheck remediation: core's MHC marks
 * a Machine through its status only, which {@link specOrMetadataChanged} would drop.
 */
function remediationChanged(): Predicate<KubernetesObject> {
  return {
    create: () => false,
    delete: () => false,
    update: (oldObj, newObj) =>
      remediationOf(oldObj as Machine) !== remediationOf(newObj as Machine),
  };
}

/** Passes updates that are a new version of the object, not an informer's resync of the same one. */
function resourceVersionChanged(oldObj: KubernetesObject, newObj: KubernetesObject): boolean {
  return oldObj.metadata?.resourceVersion !== newObj.metadata?.resourceVersion;
}

/**
 * Whether an update changed what the `nodes` phase manages: the taints (core dropping its
 * uninitialized taint, someone removing one of the pool's) or the synced labels. A kubelet's status
 * update, the bulk of a Node's updates, changes neither; nor does the kit's own record on the Node.
 */
function nodeMetadataChanged(oldNode: WorkloadNode, node: WorkloadNode): boolean {
  const before = poolNodeOf(oldNode);
  const after = poolNodeOf(node);
  return (
    stableStringify([before.labels, before.taints]) !==
    stableStringify([after.labels, after.taints])
  );
}

/** What {@link watchPools} needs. */
export interface PoolWatchOptions {
  /** The manager. */
  readonly manager: Manager;
  /** The pool kind. */
  readonly resource: ResourceDescriptor<PoolObject>;
  /** Controller name. */
  readonly name: string;
  /**
   * Watch the workload clusters' Nodes through this {@link ClusterCache} (`readiness: "node"`, or
   * one the provider gave); none: no Node watch.
   */
  readonly nodes: ClusterCache | undefined;
  /** Watch bootstrap Secrets. */
  readonly secrets: boolean;
  /**
   * The pools whose credentials were read from a Secret (the `credentials` hook): its change
   * reconciles them (Secrets labelled `cluster.x-k8s.io/cluster-name`, which the kit's Secret watch
   * holds). Turns the Secret watch on.
   */
  readonly poolsReadingSecret?: ((namespace: string, name: string) => ObjectKey[]) | undefined;
  /** The provider's InfraCluster kind: its spec or metadata changes reconcile the Cluster's pools. */
  readonly infrastructureCluster?: ResourceDescriptor<KubernetesObject> | undefined;
  /**
   * MachinePool Machines: the InfraMachine kind to watch (mapped to its owner pool), and Machines
   * of MachinePools (mapped through their MachinePool).
   */
  readonly machines?: ResourceDescriptor<KubernetesObject> | undefined;
  /** Controller options. */
  readonly controllerOptions: Parameters<ControllerBuilder["withOptions"]>[0];
  /** Extra watches a provider adds (e.g. a kind of its own that maps to pools). */
  readonly extra?: (builder: ControllerBuilder) => void;
}

/** Builds the kit's controller with its watches and registers it with the manager. */
export function watchPools(
  options: PoolWatchOptions,
  reconcile: Parameters<ControllerBuilder["complete"]>[0],
): Controller {
  const { manager, resource } = options;
  const poolsOfCluster = async (cluster: Cluster) => {
    const namespace = cluster.metadata?.namespace ?? "";
    const name = cluster.metadata?.name ?? "";
    const pools = await manager.cache.byIndex(
      resource,
      CLUSTER_NAME_INDEX,
      objectKeyString({ namespace, name }),
    );
    return pools.map((pool) => ({ namespace, name: pool.metadata?.name ?? "" }));
  };
  const poolOfMachinePool = (mp: MachinePool) => {
    const ref = readMachinePool(mp).infrastructureRef;
    const namespace = mp.metadata?.namespace;
    if (!ref || !namespace || ref.apiGroup !== resource.group || ref.kind !== resource.kind) {
      return [];
    }
    return [{ namespace, name: ref.name }];
  };
  const poolsOfSecret = async (secret: V1Secret) => {
    const namespace = secret.metadata?.namespace;
    const name = secret.metadata?.name;
    if (!namespace || !name) return [];
    const pools = await manager.cache.list(CoreMachinePool, { namespace });
    const bootstrapped = pools
      .filter((mp) => readMachinePool(mp).bootstrapDataSecretName === name)
      .flatMap(poolOfMachinePool);
    return [...bootstrapped, ...(options.poolsReadingSecret?.(namespace, name) ?? [])];
  };
  const poolsOfInfrastructureCluster = async (infra: KubernetesObject) => {
    const namespace = infra.metadata?.namespace ?? "";
    const owner = infra.metadata?.ownerReferences?.find(
      (ref) => ref.kind === "Cluster" && ref.apiVersion.startsWith("cluster.x-k8s.io/"),
    );
    const clusterName = infra.metadata?.labels?.[Labels.ClusterName] ?? owner?.name;
    if (!clusterName) return [];
    const pools = await manager.cache.byIndex(
      resource,
      CLUSTER_NAME_INDEX,
      objectKeyString({ namespace, name: clusterName }),
    );
    return pools.map((pool) => ({ namespace, name: pool.metadata?.name ?? "" }));
  };
  const clusterTransitions: Predicate<Cluster> = {
    update: (oldObj, newObj) => {
      const before = readCluster(oldObj);
      const after = readCluster(newObj);
      return (
        before.paused !== after.paused ||
        before.infrastructureProvisioned !== after.infrastructureProvisioned
      );
    },
    delete: () => false,
  };
  const builder = manager
    .controller(options.name)
    .for(resource, {
      predicates: [specOrMetadataChanged()],
      cache: { indexers: { [CLUSTER_NAME_INDEX]: indexByClusterName } },
    })
    .watches(CoreMachinePool, poolOfMachinePool, { predicates: [specOrMetadataChanged()] })
    .watches(CoreCluster, poolsOfCluster, { predicates: [clusterTransitions] })
    .withEventFilter(hasWatchFilterLabel(manager.controllerDefaults.watchFilterValue))
    .withOptions(options.controllerOptions);
  if (options.nodes) {
    // Nodes live in each pool's workload cluster: its connection's Node events (a Node's Ready or
    // providerID changed, it came or went) and the connection coming or going map to its pools.
    builder.watchesRawSource(
      options.nodes.source(async (event) => {
        if (event.type === "node" && event.node && event.oldNode) {
          const { node, oldNode } = event;
          if (
            isNodeReady(oldNode) === isNodeReady(node) &&
            oldNode.spec?.providerID === node.spec?.providerID &&
            !nodeMetadataChanged(oldNode, node)
          ) {
            return [];
          }
        }
        const namespace = event.cluster.namespace ?? "";
        const pools = await manager.cache.byIndex(
          resource,
          CLUSTER_NAME_INDEX,
          objectKeyString({ namespace, name: event.cluster.name }),
        );
        return pools.map((pool) => ({ namespace, name: pool.metadata?.name ?? "" }));
      }),
    );
  }
  if (options.infrastructureCluster) {
    builder.watches(options.infrastructureCluster, poolsOfInfrastructureCluster, {
      // Not every InfraCluster carries the watch-filter label its Cluster does: the pool is filtered.
      eventFilters: false,
      predicates: [specOrMetadataChanged()],
    });
  }
  if (options.secrets || options.poolsReadingSecret) {
    builder.watches(SecretResource, poolsOfSecret, {
      eventFilters: false,
      // An informer resync re-announces every Secret unchanged: without this, every pool would be
      // reconciled (and its cloud read) once per sync period on top of the kit's own resync.
      predicates: [{ update: resourceVersionChanged, delete: () => false }],
      cache: { labelSelector: Labels.ClusterName },
    });
  }
  if (options.machines) {
    const poolOfInfraMachine = (im: KubernetesObject) => {
      const namespace = im.metadata?.namespace;
      if (!namespace) return [];
      return (im.metadata?.ownerReferences ?? [])
        .filter(
          (ref) => ref.kind === resource.kind && ref.apiVersion.startsWith(`${resource.group}/`),
        )
        .map((ref) => ({ namespace, name: ref.name }));
    };
    const poolOfMachine = async (machine: KubernetesObject) => {
      const namespace = machine.metadata?.namespace;
      const owner = (machine.metadata?.ownerReferences ?? []).find(
        (ref) => ref.controller === true && ref.kind === "MachinePool",
      );
      if (!namespace || !owner) return [];
      const mp = await manager.cache.get(CoreMachinePool, { namespace, name: owner.name });
      return mp ? poolOfMachinePool(mp) : [];
    };
    builder.watches(options.machines, poolOfInfraMachine, {
      predicates: [specOrMetadataChanged()],
    });
    // Machines carry the MachinePool template's labels, not necessarily the watch filter: the
    // reconcile checks the pool's label. A deletion, a delete-machine annotation, a new Machine or
    // a MachineHealthCheck's verdict changes what the pool must do.
    builder.watches(CoreMachine, poolOfMachine, {
      eventFilters: false,
      predicates: [anyPredicate(specOrMetadataChanged(), remediationChanged())],
      cache: { labelSelector: Labels.MachinePoolName },
    });
  }
  options.extra?.(builder);
  return builder.complete(reconcile);
}
