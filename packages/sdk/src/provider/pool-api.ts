/**
 * The {@link PoolApi} of one reconcile: what the phases may reach beyond the pool and the driver — the
 * workload cluster's Nodes (readiness, the autoscaler's taint, labels and taints, the drain) through
 * the ClusterCache, Secrets, InfraMachines, other pools' claims, the control plane's version, the
 * MachinePool's replicas, the pool's access (InfraCluster and credentials) and the move block.
 *
 * @module
 */
import type { KubernetesObject } from "@kubernetes/client-node";
import type { Cluster, MachinePool } from "../api/cluster.x-k8s.io/v1beta2.js";
import type { ClusterCache } from "../clustercache/clustercache.js";
import { isNodeReady, NODE_PROVIDER_ID_INDEX } from "../clustercache/workload-node.js";
import { CoreMachinePool } from "../contract/core-kinds.js";
import { PatchHelper } from "../patch/helper.js";
import type { Clock } from "../runtime/clock.js";
import type { ReconcileContext } from "../runtime/controller.js";
import { isNotFound } from "../runtime/errors.js";
import { NodeResource, type ResourceDescriptor, SecretResource } from "../runtime/resource.js";
import { providerIDClaims } from "./claims.js";
import { readControlPlane } from "./control-plane-api.js";
import type { CredentialsReader, PoolCredentialsCache } from "./credentials.js";
import { workloadDrainApi } from "./drain-api.js";
import type { InfrastructureClusterObject } from "./driver.js";
import type { InfraMachineKind } from "./machines.js";
import { infraMachinesApi } from "./machines-api.js";
import { type PoolNode, poolNodeOf } from "./nodes.js";
import type { MachinePoolControllerOptions } from "./options.js";
import type { PoolRedactions } from "./pool-redaction.js";
import type { PoolApi, PoolObject } from "./scope.js";

/** What the controller lends every reconcile's {@link PoolApi}. */
export interface PoolApiSources {
  /** The pool kind. */
  readonly resource: ResourceDescriptor<PoolObject>;
  /** The InfraMachine kind, with MachinePool Machines. */
  readonly machines: InfraMachineKind | undefined;
  readonly clusterCache: ClusterCache | undefined;
  /** The InfraCluster kind whose object the driver gets, if the provider names one. */
  readonly infrastructureCluster: MachinePoolControllerOptions<unknown>["infrastructureCluster"];
  readonly credentials: PoolCredentialsCache | undefined;
  readonly redactions: PoolRedactions;
  readonly clock: Clock;
}

/** The pool one reconcile serves, and what it was read with. */
export interface PoolApiTarget {
  /** The pool's Cluster (its name may be "" while a deleted pool has lost it). */
  readonly cluster: { namespace: string; name: string };
  readonly pool: PoolObject;
  readonly machinePool: MachinePool | undefined;
  readonly clusterObject: Cluster | undefined;
  /** Marks the pool so clusterctl move waits while a cloud call runs. */
  readonly blockMove: (step: string) => Promise<void>;
}

export function poolApiOf(
  controller: PoolApiSources,
  rc: ReconcileContext,
  { cluster, pool, machinePool, clusterObject, blockMove }: PoolApiTarget,
): PoolApi {
  const machineKind = controller.machines;
  const clusterCache = controller.clusterCache;
  const resource = controller.resource;
  const resolveAccess = accessResolver(controller, rc, cluster, pool, clusterObject);
  return {
    blockMove,
    ...(resolveAccess ? { resolveAccess } : {}),
    ...(machineKind
      ? {
          machines: infraMachinesApi(rc, machineKind, {
            namespace: cluster.namespace,
            clusterName: cluster.name,
            poolKind: resource.kind,
            poolName: pool.metadata?.name ?? "",
            poolUid: pool.metadata?.uid,
            machinePoolName: machinePool?.metadata?.name,
          }),
        }
      : {}),
    readSecret: async (namespace, name) => {
      const cached = await rc.cache.get(SecretResource, { namespace, name });
      if (cached) return cached.data ? { data: cached.data } : {};
      try {
        const secret = await rc.client.get(SecretResource, { namespace, name });
        return secret.data ? { data: secret.data } : {};
      } catch (error) {
        if (isNotFound(error)) return undefined;
        throw error;
      }
    },
    // The workload cluster's Nodes, through its kubeconfig Secret: never the management cluster's.
    // Looked up by providerID: a workload cluster may hold thousands of Nodes, a pool a few.
    readyNodeProviderIDs: async (providerIDs) => {
      if (!clusterCache) {
        throw new Error(
          'readyNodeProviderIDs: the controller has no ClusterCache (readiness is "instance")',
        );
      }
      const { nodes } = await clusterCache.connect(cluster);
      const ready = new Set<string>();
      for (const id of providerIDs) {
        if (nodes.byIndex(NODE_PROVIDER_ID_INDEX, id).some(isNodeReady)) ready.add(id);
      }
      return ready;
    },
    ...(clusterCache && !machineKind ? { drain: workloadDrainApi(clusterCache, cluster) } : {}),
    ...(clusterCache
      ? {
          // Same index as readiness: the pool's own instances, never a scan of every Node.
          taintedNodeProviderIDs: async (providerIDs: Iterable<string>, taintKey: string) => {
            const { nodes } = await clusterCache.connect(cluster);
            const tainted = new Set<string>();
            for (const id of providerIDs) {
              const found = nodes.byIndex(NODE_PROVIDER_ID_INDEX, id);
              if (found.some((node) => node.spec?.taints?.some((t) => t.key === taintKey))) {
                tainted.add(id);
              }
            }
            return tainted;
          },
        }
      : {}),
    ...(clusterCache
      ? {
          nodes: {
            get: async (providerIDs: Iterable<string>) => {
              const { nodes } = await clusterCache.connect(cluster);
              const found = new Map<string, PoolNode>();
              for (const id of providerIDs) {
                const [node] = nodes.byIndex(NODE_PROVIDER_ID_INDEX, id);
                if (node) found.set(id, poolNodeOf(node));
              }
              return found;
            },
            patch: async (node, patch) => {
              rc.fence();
              const { client } = await clusterCache.connect(cluster);
              const metadata = {
                ...(patch.labels ? { labels: patch.labels } : {}),
                ...(patch.annotations ? { annotations: patch.annotations } : {}),
                // Taints are one atomic list: the lock makes a list changed since the cache saw
                // it a 409 instead of an overwrite of someone else's taint.
                ...(patch.taints ? { resourceVersion: node.resourceVersion } : {}),
              };
              await client.mergePatch(
                NodeResource,
                { name: node.name },
                {
                  ...(Object.keys(metadata).length > 0 ? { metadata } : {}),
                  ...(patch.taints
                    ? { spec: { taints: patch.taints.length > 0 ? patch.taints : null } }
                    : {}),
                },
              );
            },
          },
        }
      : {}),
    claimedProviderIDs: async () => {
      const namespace = cluster.namespace;
      const self = pool.metadata?.name;
      const pools = await rc.cache.list(resource, { namespace });
      const machinePools = await rc.cache.list(CoreMachinePool, { namespace });
      return providerIDClaims([
        { kind: resource.kind, objects: pools.filter((p) => p.metadata?.name !== self) },
        {
          kind: "MachinePool",
          objects: machinePools.filter((m) => m.metadata?.name !== machinePool?.metadata?.name),
        },
      ]);
    },
    readControlPlane: (ref, namespace) => readControlPlane(rc.client, ref, namespace, rc.signal),
    setMachinePoolReplicas: async (machinePool: MachinePool, replicas: number) => {
      rc.fence();
      const copy = structuredClone(machinePool);
      const patch = PatchHelper.snapshot(copy, { resource: CoreMachinePool });
      copy.spec = { ...copy.spec, replicas } as MachinePool["spec"];
      await patch.apply(rc.client, copy);
    },
  };
}

/**
 * `PoolApi.resolveAccess`: the InfraCluster the pool's Cluster names (from the cache) and the
 * pool's credentials (cached by {@link PoolCredentialsCache}); `undefined` when the controller has
 * neither option.
 */
function accessResolver(
  controller: PoolApiSources,
  rc: ReconcileContext,
  cluster: { namespace: string; name: string },
  pool: PoolObject,
  clusterObject: Cluster | undefined,
): PoolApi["resolveAccess"] {
  const infraKind = controller.infrastructureCluster;
  const credentials = controller.credentials;
  if (!infraKind && !credentials) return undefined;
  return async () => {
    let infrastructureCluster: InfrastructureClusterObject | undefined;
    const ref = clusterObject?.spec?.infrastructureRef;
    if (infraKind && ref?.name && ref.apiGroup === infraKind.group && ref.kind === infraKind.kind) {
      infrastructureCluster = await rc.cache.get(infraKind, {
        namespace: cluster.namespace,
        name: ref.name,
      });
    }
    if (!credentials) return { credentials: undefined, infrastructureCluster };
    const meta = pool.metadata ?? {};
    const value = await credentials.resolve({
      pool: {
        namespace: meta.namespace ?? "",
        name: meta.name ?? "",
        uid: meta.uid ?? "",
        clusterName: cluster.name,
      },
      infrastructureCluster,
      now: controller.clock.now(),
      signal: rc.signal,
      reader: credentialsReader(rc),
      redaction: controller.redactions.of({
        namespace: meta.namespace ?? "",
        name: meta.name ?? "",
      }),
    });
    return { credentials: value, infrastructureCluster };
  };
}

/**
 * What the credentials cache reads through: Secrets from the manager's cache when its Secret watch
 * holds them (labelled `cluster.x-k8s.io/cluster-name`), else with a GET; other objects with a GET.
 */
function credentialsReader(rc: ReconcileContext): CredentialsReader {
  const cachedSecret = async (namespace: string, name: string) => {
    try {
      return await rc.cache.get(SecretResource, { namespace, name });
    } catch {
      // No Secret watch (bootstrap data "none" and no credentials watch yet): read it directly.
      return undefined;
    }
  };
  const get = async <T extends KubernetesObject>(
    resource: ResourceDescriptor<T>,
    key: { namespace?: string; name: string },
  ): Promise<T | undefined> => {
    try {
      return await rc.client.get(resource, key, { signal: rc.signal });
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
  };
  return {
    async secret(namespace, name) {
      return (
        (await cachedSecret(namespace, name)) ?? (await get(SecretResource, { namespace, name }))
      );
    },
    async cachedSecretVersion(namespace, name) {
      return (await cachedSecret(namespace, name))?.metadata?.resourceVersion;
    },
    object: (resource, key) => get(resource, key),
  };
}
