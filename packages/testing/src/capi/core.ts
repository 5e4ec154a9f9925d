import { type LoggerOptions, Manager, type ManagerOptions, type RuntimeLogger } from "@capi-ts/sdk";
import { clusterv1beta2 } from "@capi-ts/sdk/api";
import {
  CLUSTER_API_GROUP,
  formatLabelValue,
  hasWatchFilterLabel,
  Labels,
} from "@capi-ts/sdk/contract";
import {
  type Controller,
  type InformerHandler,
  isNotFound,
  type Predicate,
  type RateLimiter,
  type ReconcileRequest,
  type ReconcileResult,
  type ResourceDescriptor,
  resourceId,
  resourceVersionChanged,
  SecretResource,
} from "@capi-ts/sdk/runtime";
import type { KubeConfig, KubernetesObject, V1Node } from "@kubernetes/client-node";
import {
  type BootstrapStandIn,
  BootstrapStandInController,
  type BootstrapStandInOptions,
} from "./bootstrap.js";
import { type CoreClusterCacheTimings, WorkloadClusterCache } from "./clustercache.js";
import { ContractResolver, type ResolvedKind } from "./contract-version.js";
import { CorePanicError } from "./controller-helpers.js";
import { type MachineObject, MachineReconciler } from "./machine.js";
import { MachinePoolReconciler, type ProvisionedFrom, type ReconcileTrace } from "./machinepool.js";
import {
  type ClusterObject,
  ClusterResource,
  CrdResource,
  type MachinePoolObject,
  MachinePoolResource,
} from "./types.js";
import { type CoreWrite, type CoreWriteFilter, RecordingWriter, WriteLog } from "./writes.js";

/** Options of {@link startCapiCore}. */
export interface CapiCoreOptions {
  /**
   * The management cluster (for tests: `api.kubeConfig` of the in-memory API server). Workload
   * clusters are reached only through each Cluster's `<cluster>-kubeconfig` Secret, as core does (see
   * {@link markWorkloadClusterReady}).
   */
  kubeConfig: KubeConfig;
  /** Watch only this namespace. */
  namespace?: string;
  /** Reconcile only MachinePools labelled `cluster.x-k8s.io/watch-filter=<value>` (core's `--watch-filter`). */
  watchFilterValue?: string;
  /** Field manager and logger name. Default `capi-core-emulator`. */
  name?: string;
  /**
   * How core decides the InfraMachinePool is provisioned:
   * - `"ready"` (default): CAPI core v1.14.2 — `status.ready` only (`external.IsReady`), and
   *   `MachinePool.status.initialization.infrastructureProvisioned` re-computed every reconcile, so it
   *   flips back to false if `ready` does (contract G1, G3);
   * - `"initialization"`: a preview of PR #14030, not in any release yet —
   *   `status.initialization.provisioned`, falling back to `status.ready` only when absent (v1beta1-contract
   *   CRDs: `status.ready`), and `infrastructureProvisioned` sticky once true (G2).
   */
  provisionedFrom?: ProvisionedFrom;
  /**
   * The bootstrap stand-in: `true` (default) with default options, options, or `false` when the test
   * provides bootstrap data itself.
   */
  bootstrap?: boolean | BootstrapStandInOptions;
  /**
   * Apply the MachinePool defaulting webhook (replicas, cluster-name label, node deletion timeout,
   * version prefix) as a patch when a MachinePool lacks its defaults — there are no admission webhooks
   * in a test API server. Default true.
   */
  defaulting?: boolean;
  /**
   * Refuse MachinePools core's validating webhook would have rejected (see {@link validateMachinePool}):
   * such a pool gets the webhook's denial as a reconcile error and no writes. Off by default because a
   * test API server admits them anyway and many tests rely on the bootstrap stand-in serving pools with
   * `bootstrap: {}`, which the real webhook rejects.
   */
  validation?: boolean;
  /** How long core waits before re-checking Nodes that are not all ready, ms. Core: 30,000 (the default). */
  nodeRefRequeueMs?: number;
  /**
   * Run the emulated MachinePool controller. Default true; `false` leaves only the bootstrap stand-in
   * (and its token rotation), to serve as the bootstrap provider next to real CAPI core
   * (`startControlPlane({ capiCore: true })`), which has none.
   */
  machinePools?: boolean;
  /**
   * Run the emulated Machine controller for MachinePool Machines (contract R11): the
   * `machine.cluster.x-k8s.io` finalizer, the Machine as controller owner of its InfraMachine,
   * `spec.providerID`, `status.nodeRef`, the Ready/Available conditions the MachinePool counts, and
   * deletion (cordon and drain the Node, delete the InfraMachine and wait until it is gone, delete the
   * Node, remove the finalizer). Default true (only with `machinePools`); `false` leaves the Machines
   * with only what the MachinePool controller writes; options change its timings.
   */
  machines?: boolean | CoreMachineOptions;
  /** Parallel MachinePool reconciles (core's `--machinepool-concurrency`). Default 50, as core. */
  maxConcurrentReconciles?: number;
  /**
   * Core reconciles one object at most once per this interval (feature gate `ReconcilerRateLimiting`,
   * on by default): an earlier request is deferred, a shorter `requeueAfter` is stretched to it, and
   * error retries wait this long plus an exponential 5 ms · 2ⁿ. Default 1,000 ms, as core; 0 turns it
   * off (tests that count reconciles).
   */
  rateLimitIntervalMs?: number;
  /** How often every informer replays its objects (core's `--sync-period`). Default 600,000 (10 min). */
  syncPeriodMs?: number;
  /**
   * Timings of the emulated ClusterCache. Defaults are core's: retry a failed connection after
   * 30,000 ms, probe every 10,000 ms, disconnect after 5 failed probes, 300,000 ms initial sync timeout.
   */
  clusterCache?: Partial<CoreClusterCacheTimings>;
  /** Logger, or options to create one. Default: silent. */
  logger?: RuntimeLogger | LoggerOptions;
  /** Informer tuning (watch timeout, backoff); mostly for fault-injection tests. */
  informer?: ManagerOptions["informer"];
  /** How long {@link startCapiCore} waits for caches to sync, ms. Default 30,000. */
  startTimeoutMs?: number;
  /** How many reconcile records {@link CapiCore.reconciles} keeps (oldest dropped first). Default 10,000. */
  maxReconcileRecords?: number;
}

/** Timings of the emulated Machine controller (see {@link CapiCoreOptions.machines}). */
export interface CoreMachineOptions {
  /**
   * How long a Machine's NodeReady/NodeHealthy conditions keep their last known state once the
   * workload cluster stops answering, ms. Default 300,000 (core's `--remote-conditions-grace-period`).
   */
  remoteConditionsGracePeriodMs?: number;
  /**
   * How long a deleting Machine waits before it looks at its Node's Pods (or attached volumes) again
   * while they are not gone, ms. Default 20,000, as core.
   */
  drainRetryIntervalMs?: number;
  /** How long one reconcile retries a failing Node deletion (every 2 s), ms. Default 10,000, as core. */
  nodeDeletionRetryTimeoutMs?: number;
  /** Parallel Machine reconciles (core's `--machine-concurrency`). Default 10, as core. */
  maxConcurrentReconciles?: number;
}

/** What one reconcile of a MachinePool (or of one of its Machines) did, besides its writes. */
export interface CoreReconcileRecord {
  /**
   * `machinepool` for core's MachinePool controller, `machine` for its Machine controller (MachinePool
   * Machines), `bootstrap` for the stand-in.
   */
  actor: "machinepool" | "machine" | "bootstrap";
  /** `namespace/name` of the MachinePool (for a Machine: the pool that controls it, if any). */
  machinePool: string;
  /** `namespace/name` of the Machine, for the Machine controller's reconciles. */
  machine?: string;
  /** When it started. */
  startedAt: Date;
  /** How long it took, ms. */
  durationMs: number;
  /**
   * Decisions core made, in order, e.g. `InfrastructureRead` (detail: the InfraMachinePool's
   * resourceVersion and what core concluded), `ProviderIDListCopied`, `DeprecatedCountersReset`,
   * `EmptyProviderIDListIgnored`, `InfrastructureNotProvisioned`, `InfrastructureProvisionedReverted`,
   * `RetiredNodeDeleted`, `MachineCreated`, `WaitingForExternalDeletion`, `FinalizerRemoved`,
   * `Paused`, `Panic`, `WebhookDenied`; the Machine controller's: `FinalizerAdded`,
   * `InfraMachineAdopted`, `ProviderIDCopied`, `NodeRefSet`, `NodeDeletionNotAllowed` (detail: why),
   * `NodeCordoned`, `DrainCompleted`, `DrainNotCompleted`, `InfraMachineDeleted`,
   * `WaitingForInfrastructureDeletion`, `NodeDeleted`, `NodeDeletionTimeoutExpired`, `FinalizerRemoved`.
   */
  notes: { event: string; detail?: string }[];
  /** The error the reconcile returned (core retries with backoff), if any. */
  error?: Error;
  /** True when the error stands for a panic in core (see {@link CorePanicError}). */
  panicked: boolean;
  /** The requested requeue delay, ms, if any. */
  requeueAfterMs?: number;
}

/** A filter over {@link CoreReconcileRecord}s. */
export interface CoreReconcileFilter {
  /** Only this MachinePool (`namespace/name`). */
  machinePool?: string;
  /** Only this Machine (`namespace/name`). */
  machine?: string;
  /** Only this actor. */
  actor?: CoreReconcileRecord["actor"];
  /** Only records with (true) or without (false) an error. */
  failed?: boolean;
  /** Only records containing this note event. */
  event?: string;
}

/**
 * A running emulation of what Cluster API core does to an InfraMachinePool: core's MachinePool
 * controller (contract §2) and, optionally, a bootstrap provider stand-in. Every write is recorded.
 * Create it with {@link startCapiCore}.
 */
export interface CapiCore {
  /** The SDK manager running the emulator's controllers (its client, cache and metrics). */
  readonly manager: Manager;
  /** The bootstrap stand-in, unless disabled with `bootstrap: false`. */
  readonly bootstrap: BootstrapStandIn | undefined;
  /** Every write the emulator sent, in order (optionally filtered). */
  writes(filter?: CoreWriteFilter): CoreWrite[];
  /** Forgets the recorded writes (e.g. before asserting on a steady state). */
  clearWrites(): void;
  /** The recorded reconciles, in order of completion (optionally filtered). */
  reconciles(filter?: CoreReconcileFilter): CoreReconcileRecord[];
  /** Forgets the recorded reconciles. */
  clearReconciles(): void;
  /** Stops the controllers and informers; resolves once everything is closed. */
  stop(): Promise<void>;
}

function matchesRecord(record: CoreReconcileRecord, filter: CoreReconcileFilter): boolean {
  if (filter.machinePool && record.machinePool !== filter.machinePool) return false;
  if (filter.machine && record.machine !== filter.machine) return false;
  if (filter.actor && record.actor !== filter.actor) return false;
  if (filter.failed !== undefined && (record.error !== undefined) !== filter.failed) return false;
  if (filter.event && !record.notes.some((n) => n.event === filter.event)) return false;
  return true;
}

function ownerMachinePools(obj: KubernetesObject): ReconcileRequest[] {
  const namespace = obj.metadata?.namespace;
  return (obj.metadata?.ownerReferences ?? [])
    .filter(
      (ref) => ref.kind === "MachinePool" && ref.apiVersion.split("/")[0] === CLUSTER_API_GROUP,
    )
    .map((ref) => (namespace ? { namespace, name: ref.name } : { name: ref.name }));
}

function ownerMachines(obj: KubernetesObject): ReconcileRequest[] {
  const namespace = obj.metadata?.namespace;
  return (obj.metadata?.ownerReferences ?? [])
    .filter((ref) => ref.kind === "Machine" && ref.apiVersion.split("/")[0] === CLUSTER_API_GROUP)
    .map((ref) => (namespace ? { namespace, name: ref.name } : { name: ref.name }));
}

/** Core's `ClusterControlPlaneInitialized`: only updates where ControlPlaneInitialized turns True. */
const clusterControlPlaneInitialized: Predicate<ClusterObject> = {
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
const clusterPausedTransitions: Predicate<ClusterObject> = {
  create: () => false,
  delete: () => false,
  update: (oldObj, newObj) => (oldObj.spec?.paused === true) !== (newObj.spec?.paused === true),
};

const POOL_BY_PROVIDER_ID = "capi-ts.core/machinepool-provider-id";
const POOL_BY_NODE = "capi-ts.core/machinepool-node-name";
const MACHINE_BY_PROVIDER_ID = "capi-ts.core/machine-provider-id";
const MACHINE_BY_NODE = "capi-ts.core/machine-node-name";

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

const silent: LoggerOptions = { level: "silent" };

const MachineResource: ResourceDescriptor<clusterv1beta2.Machine> = clusterv1beta2.MachineResource;

/**
 * Core's reconciler rate limiter (`ReconcilerRateLimiting`): a failed item waits the rate-limit interval
 * plus 5 ms · 2^failures, at most 1000 s; forgetting is left to success and `requeueAfter`.
 */
class CoreRateLimiter implements RateLimiter {
  private readonly failures = new Map<string, number>();
  private readonly intervalMs: number;

  constructor(intervalMs: number) {
    this.intervalMs = intervalMs;
  }

  when(item: string): number {
    const failures = this.failures.get(item) ?? 0;
    this.failures.set(item, failures + 1);
    return Math.min(this.intervalMs + 5 * 2 ** failures, 1_000_000);
  }

  forget(item: string): void {
    this.failures.delete(item);
  }

  numRequeues(item: string): number {
    return this.failures.get(item) ?? 0;
  }
}

/**
 * Starts the CAPI core emulator against any API server: core v1.14.2's MachinePool controller as it
 * treats an InfraMachinePool (owner reference and `cluster-name` label, readiness, copying
 * `providerIDList` and `replicas` only when ready with the empty-list guard and the order-sensitive
 * counter reset, MachinePool Machines, Node references, retired Node deletion, phases, deletion
 * ordering, the failureReason panic), its Machine controller for MachinePool Machines (the finalizer,
 * the Machine as controller owner of its InfraMachine, `providerID`, `nodeRef`, the Ready/Available
 * conditions the pool counts, and deletion: cordon and drain the Node, delete the InfraMachine and wait
 * until it is gone, delete the Node, remove the finalizer; see {@link CapiCoreOptions.machines}), its
 * ClusterCache (workload clusters reached only through `<cluster>-kubeconfig` once the Cluster's
 * infrastructure is provisioned) plus a bootstrap stand-in. The CAPI CRDs must be installed; referenced
 * provider CRDs — InfraMachine kinds included — need their contract label (R4) exactly as with real
 * core. Resolves once its caches have synced.
 *
 * @remarks
 * Ported from `core/reconcilers/machinepool`, `core/reconcilers/machine` (for Machines a MachinePool
 * controls) and `controllers/clustercache` of CAPI v1.14.2 (and PR
 * #14030 for `provisionedFrom: "initialization"`). Every remaining difference from real core is listed,
 * with its reason, in the "CAPI core emulator vs real core v1.14.2" section of the testing package's
 * DIVERGENCES.md; the main ones:
 * - defaulting runs after admission, as a recorded patch, since a test API server has no webhooks;
 *   validation is opt-in (`validation: true`) and reported as a reconcile error;
 * - the Machine controller reconciles only Machines a MachinePool controls, and its drain knows no
 *   MachineDrainRules (E6); as in core, a Node is drained and deleted only when the Cluster has a
 *   control plane Machine or an externally managed control plane;
 * - no Events and no metrics of core's own;
 * - the bootstrap stand-in, and pools with neither `configRef` nor `dataSecretName` wait for it
 *   instead of failing (unless `validation` is on).
 *
 * @example
 * ```ts
 * const api = await startApiServer();
 * await api.installCRDs([capiCrdsFolder]);
 * const core = await startCapiCore({ kubeConfig: api.kubeConfig, rateLimitIntervalMs: 0 });
 * // … create a Cluster, then let core reach its workload cluster (here: the same API server) …
 * await markWorkloadClusterReady(client, { namespace: "default", name: "c1" }, api.kubeConfig);
 * // … create a MachinePool and its InfraMachinePool, run the provider …
 * expect(core.writes({ kind: "FooMachinePool" })).toHaveLength(1); // owner ref + label, once
 * expect(core.reconciles({ failed: true, event: "Panic" })).toEqual([]);
 * await core.stop();
 * ```
 */
export async function startCapiCore(options: CapiCoreOptions): Promise<CapiCore> {
  const name = options.name ?? "capi-core-emulator";
  const managerOptions: ManagerOptions = {
    kubeConfig: options.kubeConfig,
    name,
    logger: options.logger ?? silent,
    maxConcurrentReconciles: options.maxConcurrentReconciles ?? 50,
    syncPeriodMs: options.syncPeriodMs ?? 600_000,
    gracefulShutdownTimeoutMs: 5_000,
  };
  if (options.namespace) managerOptions.namespace = options.namespace;
  if (options.watchFilterValue) managerOptions.watchFilterValue = options.watchFilterValue;
  if (options.informer) managerOptions.informer = options.informer;
  const manager = new Manager(managerOptions);
  const rateLimitIntervalMs = options.rateLimitIntervalMs ?? 1_000;

  for (const crd of [
    "machinepools.cluster.x-k8s.io",
    "clusters.cluster.x-k8s.io",
    "machines.cluster.x-k8s.io",
  ]) {
    try {
      await manager.client.get(CrdResource, { name: crd });
    } catch (error) {
      if (isNotFound(error)) {
        throw new Error(
          `startCapiCore: the CRD ${crd} is not installed; install the Cluster API CRDs first (e.g. api.installCRDs([capiCrdsFolder]))`,
        );
      }
      throw error;
    }
  }

  const log = new WriteLog();
  const records: CoreReconcileRecord[] = [];
  const maxRecords = options.maxReconcileRecords ?? 10_000;
  const record = (entry: CoreReconcileRecord) => {
    records.push(entry);
    if (records.length > maxRecords) records.splice(0, records.length - maxRecords);
  };
  manager.cache.informerFor(CrdResource);
  manager.cache.informerFor(SecretResource);
  // Core's indexes (`MachinePoolProviderIDIndex`, `MachineProviderIDIndex`, plus the Node name a
  // pool or Machine already references): a Node event is mapped by lookup, not by a scan of every
  // pool or Machine of its cluster, which at a thousand pools starved the emulator's event loop.
  manager.cache.informerFor(MachineResource, {
    indexers: {
      [MACHINE_BY_PROVIDER_ID]: (m) => (m.spec?.providerID ? [m.spec.providerID] : []),
      [MACHINE_BY_NODE]: (m) => (m.status?.nodeRef?.name ? [m.status.nodeRef.name] : []),
    },
  });
  manager.cache.informerFor(MachinePoolResource, {
    indexers: {
      [POOL_BY_PROVIDER_ID]: (mp) => [...new Set(mp.spec?.providerIDList ?? [])],
      [POOL_BY_NODE]: (mp) => [
        ...new Set((mp.status?.nodeRefs ?? []).flatMap((ref) => (ref.name ? [ref.name] : []))),
      ],
    },
  });
  const resolver = new ContractResolver(manager.cache);
  const syncTimeoutMs = options.startTimeoutMs ?? 30_000;

  let controller: Controller | undefined;
  let machineController: Controller | undefined;
  const watched = new Map<string, Promise<void>>();
  const machineWatched = new Map<string, Promise<void>>();
  const read = new Map<string, Promise<void>>();
  const ensure = (
    map: Map<string, Promise<void>>,
    resource: ResourceDescriptor,
    attach: () => void,
  ): Promise<void> => {
    const id = resourceId(resource);
    let ready = map.get(id);
    if (!ready) {
      const informer = manager.cache.informerFor(resource);
      attach();
      ready = informer.waitForSync(syncTimeoutMs);
      ready.catch(() => map.delete(id));
      map.set(id, ready);
    }
    return ready;
  };
  const readExternal = (resource: ResourceDescriptor) => ensure(read, resource, () => undefined);
  // Core's external ObjectTracker: `EnqueueRequestForOwner(MachinePool)` (any owner reference of that
  // kind, not only the controller) behind `ResourceIsChanged`, and no other filter.
  const watchExternal = (kind: ResolvedKind) =>
    ensure(watched, kind.resource, () => {
      if (!controller) return;
      manager.cache
        .informerFor(kind.resource)
        .addEventHandler(controller.mapHandler(ownerMachinePools, [resourceVersionChanged()]));
    });
  const watchInfraMachines = (resource: ResourceDescriptor) =>
    ensure(watched, resource, () => {
      if (!controller) return;
      manager.cache
        .informerFor(resource)
        .addEventHandler(
          controller.mapHandler(infraMachineToMachinePool, [resourceVersionChanged()]),
        );
    });
  // The Machine controller's external ObjectTracker: `EnqueueRequestForOwner(Machine)` (any owner
  // reference of that kind) behind `ResourceIsChanged`.
  const watchMachineExternal = (kind: ResolvedKind) =>
    ensure(machineWatched, kind.resource, () => {
      if (!machineController) return;
      manager.cache
        .informerFor(kind.resource)
        .addEventHandler(machineController.mapHandler(ownerMachines, [resourceVersionChanged()]));
    });

  const clusterToMachinePools = async (cluster: {
    metadata?: { namespace?: string; name?: string };
  }): Promise<ReconcileRequest[]> =>
    (
      await manager.cache.list(MachinePoolResource, {
        namespace: cluster.metadata?.namespace ?? "",
        labelSelector: `cluster.x-k8s.io/cluster-name=${cluster.metadata?.name ?? ""}`,
      })
    ).map((mp) => ({
      namespace: mp.metadata?.namespace ?? "",
      name: mp.metadata?.name ?? "",
    }));

  /** `infraMachineToMachinePoolMapper`: by the pool-name label, among pools of the cluster-name label. */
  const infraMachineToMachinePool = async (obj: KubernetesObject): Promise<ReconcileRequest[]> => {
    const labels = obj.metadata?.labels ?? {};
    const poolName = labels[Labels.MachinePoolName];
    if (poolName === undefined) return [];
    const filter: { namespace: string; labelSelector?: string } = {
      namespace: obj.metadata?.namespace ?? "",
    };
    const clusterName = labels[Labels.ClusterName];
    if (clusterName !== undefined) filter.labelSelector = `${Labels.ClusterName}=${clusterName}`;
    const pool = (await manager.cache.list(MachinePoolResource, filter)).find(
      (mp) => formatLabelValue(mp.metadata?.name ?? "") === poolName,
    );
    return pool
      ? [{ namespace: pool.metadata?.namespace ?? "", name: pool.metadata?.name ?? "" }]
      : [];
  };

  /** `ClusterToTypedObjectsMapper` for Machines: the Machines with the Cluster's cluster-name label. */
  const clusterToMachines = async (cluster: {
    metadata?: { namespace?: string; name?: string };
  }): Promise<ReconcileRequest[]> =>
    (
      await manager.cache.list(MachineResource, {
        namespace: cluster.metadata?.namespace ?? "",
        labelSelector: `${Labels.ClusterName}=${cluster.metadata?.name ?? ""}`,
      })
    ).map((m) => ({ namespace: m.metadata?.namespace ?? "", name: m.metadata?.name ?? "" }));

  const clusterCache = new WorkloadClusterCache({
    getSecret: (key) => manager.cache.get(SecretResource, key),
    getCluster: (key) => manager.cache.get(ClusterResource, key),
    onConnectionChange: (key) => {
      // Core's cluster source: each controller that asked for it gets the Cluster's objects.
      const cluster = { metadata: { namespace: key.namespace ?? "", name: key.name } };
      const targets: [Controller | undefined, typeof clusterToMachinePools][] = [
        [controller, clusterToMachinePools],
        [machineController, clusterToMachines],
      ];
      for (const [target, map] of targets) {
        if (!target) continue;
        void map(cluster).then(
          (requests) => {
            for (const request of requests) target.enqueue(request);
          },
          () => undefined,
        );
      }
    },
    fieldManager: name,
    ...(options.informer ? { informer: options.informer } : {}),
    timings: {
      connectionRetryMs: options.clusterCache?.connectionRetryMs ?? 30_000,
      healthProbeIntervalMs: options.clusterCache?.healthProbeIntervalMs ?? 10_000,
      healthProbeFailureThreshold: options.clusterCache?.healthProbeFailureThreshold ?? 5,
      initialSyncTimeoutMs: options.clusterCache?.initialSyncTimeoutMs ?? 300_000,
    },
    log: manager.logger.child({ component: "clustercache" }),
  });

  let nodeHandler: InformerHandler<V1Node> | undefined;
  const reconciler = new MachinePoolReconciler({
    cache: manager.cache,
    writer: new RecordingWriter(manager.client, log, "machinepool"),
    resolver,
    watchExternal,
    readExternal,
    watchInfraMachines,
    clusterCache,
    nodeHandler: () => nodeHandler,
    log: manager.logger,
    options: {
      provisionedFrom: options.provisionedFrom ?? "ready",
      nodeRefRequeueMs: options.nodeRefRequeueMs ?? 30_000,
      defaulting: options.defaulting ?? true,
      validation: options.validation ?? false,
      bootstrapStandInServesPools:
        options.validation !== true &&
        options.bootstrap !== false &&
        (typeof options.bootstrap !== "object" || options.bootstrap.byMachinePool !== false),
    },
  });

  const nodeToMachinePool = async (node: V1Node): Promise<ReconcileRequest[]> => {
    const matches = nodeMatcher(node);
    const key = (mp: MachinePoolObject) => ({
      namespace: mp.metadata?.namespace ?? "",
      name: mp.metadata?.name ?? "",
    });
    const byName = matches(
      await manager.cache.byIndex(MachinePoolResource, POOL_BY_NODE, node.metadata?.name ?? ""),
    );
    if (byName.length === 1) return [key(byName[0] as MachinePoolObject)];
    const providerID = node.spec?.providerID;
    if (!providerID) return [];
    const byID = matches(
      await manager.cache.byIndex(MachinePoolResource, POOL_BY_PROVIDER_ID, providerID),
    );
    return byID.length === 1 ? [key(byID[0] as MachinePoolObject)] : [];
  };

  /**
   * The Machine controller's `nodeToMachine`: among the Machines of the Node's cluster-name/namespace
   * annotations, the one whose `status.nodeRef` names the Node, else the one with its providerID.
   */
  const nodeToMachine = async (node: V1Node): Promise<ReconcileRequest[]> => {
    const matches = nodeMatcher(node);
    const key = (m: MachineObject) => ({
      namespace: m.metadata?.namespace ?? "",
      name: m.metadata?.name ?? "",
    });
    const byName = matches(
      await manager.cache.byIndex(MachineResource, MACHINE_BY_NODE, node.metadata?.name ?? ""),
    );
    if (byName.length === 1) return [key(byName[0] as MachineObject)];
    const providerID = node.spec?.providerID;
    if (!providerID) return [];
    const byID = matches(
      await manager.cache.byIndex(MachineResource, MACHINE_BY_PROVIDER_ID, providerID),
    );
    return byID.length === 1 ? [key(byID[0] as MachineObject)] : [];
  };

  /**
   * controller-runtime's rate limiting as core wraps it, one per controller: one reconcile of an
   * object per interval; a request that comes earlier is deferred, and a shorter `requeueAfter` is
   * stretched. `defer` is core's `DeferNextReconcileForObject`.
   */
  const reconcileLimiter = () => {
    const lastStarted = new Map<string, number>();
    const deferredUntil = new Map<string, number>();
    return {
      defer: (id: string, ms: number) => {
        deferredUntil.set(id, Math.max(deferredUntil.get(id) ?? 0, Date.now() + ms));
      },
      run: async (
        request: ReconcileRequest,
        run: () => Promise<ReconcileResult | undefined>,
      ): Promise<ReconcileResult | undefined> => {
        const id = `${request.namespace ?? ""}/${request.name}`;
        const now = Date.now();
        const until = deferredUntil.get(id);
        if (until !== undefined) {
          if (now < until) return { requeueAfter: until - now };
          deferredUntil.delete(id);
        }
        if (rateLimitIntervalMs <= 0) return run();
        const last = lastStarted.get(id);
        if (last !== undefined && now - last < rateLimitIntervalMs) {
          return { requeueAfter: rateLimitIntervalMs - (now - last) };
        }
        lastStarted.set(id, now);
        const result = await run();
        if (result?.requeueAfter !== undefined && result.requeueAfter > 0) {
          const remaining = now + rateLimitIntervalMs - Date.now();
          return { requeueAfter: Math.max(result.requeueAfter, remaining, 1) };
        }
        return result;
      },
    };
  };
  const poolLimiter = reconcileLimiter();
  // Every controller of core filters its watches by --watch-filter (ResourceHasFilterLabel).
  const watchFilter = hasWatchFilterLabel(options.watchFilterValue);
  // CAPI's controller builder also bounds every reconcile to one minute.
  const controllerOptions = () => ({
    rateLimiter: new CoreRateLimiter(rateLimitIntervalMs),
    reconcileTimeoutMs: 60_000,
  });

  if (options.machinePools !== false) {
    controller = manager
      .controller("machinepool")
      .for(MachinePoolResource)
      .watches(ClusterResource, clusterToMachinePools, { predicates: [clusterPausedTransitions] })
      .withEventFilter(watchFilter)
      .withOptions(controllerOptions())
      .complete(async (request) => {
        // One record per reconcile; `keep` drops the record of a step that did nothing.
        const recorded = async <R>(
          step: (trace: ReconcileTrace) => Promise<R>,
          keep: (trace: ReconcileTrace) => boolean = () => true,
        ): Promise<R> => {
          const trace: ReconcileTrace = { notes: [] };
          const startedAt = new Date();
          const entry: CoreReconcileRecord = {
            actor: "machinepool",
            machinePool: `${request.namespace ?? ""}/${request.name}`,
            startedAt,
            durationMs: 0,
            notes: trace.notes,
            panicked: false,
          };
          let failed = false;
          try {
            const result = await step(trace);
            const requeueAfter = (result as ReconcileResult | undefined)?.requeueAfter;
            if (requeueAfter) entry.requeueAfterMs = requeueAfter;
            return result;
          } catch (error) {
            failed = true;
            entry.error = error instanceof Error ? error : new Error(String(error));
            entry.panicked = error instanceof CorePanicError;
            throw error;
          } finally {
            entry.durationMs = Date.now() - startedAt.getTime();
            if (failed || keep(trace)) record(entry);
          }
        };
        // Real core's webhooks act at admission, outside any reconcile: the emulated ones run before
        // the rate limiter, so that defaulting a new pool does not cost it a reconcile interval. An
        // admission that did nothing left no note and is not recorded.
        const admitted = await recorded(
          (trace) => reconciler.admit(request, trace),
          (trace) => trace.notes.length > 0,
        );
        if (admitted) return undefined;
        return poolLimiter.run(request, () =>
          recorded((trace) => reconciler.reconcile(request, trace)),
        );
      });
    nodeHandler = controller.mapHandler(nodeToMachinePool, [resourceVersionChanged()]);

    // Core's ClusterCache reconciler: Clusters (and, in the emulator, their kubeconfig Secrets).
    manager
      .controller("clustercache")
      .for(ClusterResource)
      .watches(SecretResource, (secret) => {
        const secretName = secret.metadata?.name ?? "";
        if (!secretName.endsWith("-kubeconfig")) return [];
        return [
          {
            namespace: secret.metadata?.namespace ?? "",
            name: secretName.slice(0, -"-kubeconfig".length),
          },
        ];
      })
      .withEventFilter(watchFilter)
      .withOptions(controllerOptions())
      .complete((request) => clusterCache.reconcile(request));
  }

  if (options.machinePools !== false && options.machines !== false) {
    const machineOptions = typeof options.machines === "object" ? options.machines : {};
    const machineLimiter = reconcileLimiter();
    let machineNodeHandler: InformerHandler<V1Node> | undefined;
    const machineReconciler = new MachineReconciler({
      cache: manager.cache,
      writer: new RecordingWriter(manager.client, log, "machine"),
      resolver,
      watchExternal: watchMachineExternal,
      readExternal,
      clusterCache,
      nodeHandler: () => machineNodeHandler,
      deferNext: machineLimiter.defer,
      options: {
        remoteConditionsGracePeriodMs: machineOptions.remoteConditionsGracePeriodMs ?? 300_000,
        drainRetryIntervalMs: machineOptions.drainRetryIntervalMs ?? 20_000,
        nodeDeletionRetryTimeoutMs: machineOptions.nodeDeletionRetryTimeoutMs ?? 10_000,
      },
    });
    machineController = manager
      .controller("machine")
      .for(MachineResource)
      .watches(ClusterResource, clusterToMachines, {
        predicates: [clusterControlPlaneInitialized],
      })
      .withEventFilter(watchFilter)
      .withOptions({
        ...controllerOptions(),
        maxConcurrentReconciles: machineOptions.maxConcurrentReconciles ?? 10,
      })
      .complete((request) =>
        machineLimiter.run(request, async () => {
          const trace: ReconcileTrace = { notes: [] };
          const startedAt = new Date();
          const key = `${request.namespace ?? ""}/${request.name}`;
          const cached = await manager.cache.get(MachineResource, request);
          const entry: CoreReconcileRecord = {
            actor: "machine",
            machinePool: (cached && MachineReconciler.poolKeyOf(cached)) ?? "",
            machine: key,
            startedAt,
            durationMs: 0,
            notes: trace.notes,
            panicked: false,
          };
          try {
            const result = await machineReconciler.reconcile(request, trace);
            if (result?.requeueAfter) entry.requeueAfterMs = result.requeueAfter;
            return result;
          } catch (error) {
            entry.error = error instanceof Error ? error : new Error(String(error));
            throw error;
          } finally {
            entry.durationMs = Date.now() - startedAt.getTime();
            // Only MachinePool Machines are the emulator's business; others leave no record.
            if (!trace.notes.some((n) => n.event === "NotAMachinePoolMachine")) record(entry);
          }
        }),
      );
    machineNodeHandler = machineController.mapHandler(nodeToMachine, [resourceVersionChanged()]);
  }

  let bootstrap: BootstrapStandInController | undefined;
  if (options.bootstrap !== false) {
    const standIn = new BootstrapStandInController({
      client: manager.client,
      cache: manager.cache,
      writer: new RecordingWriter(manager.client, log, "bootstrap"),
      resolver,
      options:
        options.bootstrap === true || options.bootstrap === undefined ? {} : options.bootstrap,
    });
    bootstrap = standIn;
    manager
      .controller("bootstrap-standin")
      .for(MachinePoolResource)
      .withEventFilter(watchFilter)
      .complete(async (request) => {
        const startedAt = new Date();
        const entry: CoreReconcileRecord = {
          actor: "bootstrap",
          machinePool: `${request.namespace ?? ""}/${request.name}`,
          startedAt,
          durationMs: 0,
          notes: [],
          panicked: false,
        };
        try {
          return await standIn.reconcile(request);
        } catch (error) {
          entry.error = error instanceof Error ? error : new Error(String(error));
          throw error;
        } finally {
          entry.durationMs = Date.now() - startedAt.getTime();
          record(entry);
        }
      });
  }

  const running = manager.start();
  let failure: unknown;
  running.catch((error: unknown) => {
    failure = error;
  });
  const deadline = Date.now() + (options.startTimeoutMs ?? 30_000);
  while (!manager.isLeader()) {
    if (failure !== undefined) throw failure;
    if (Date.now() > deadline) {
      await manager.stop();
      throw new Error(
        `startCapiCore: caches did not sync within ${options.startTimeoutMs ?? 30_000} ms; is the API server reachable and are the CAPI CRDs served?`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 10));
  }

  return {
    manager,
    bootstrap,
    writes: (filter) => log.list(filter),
    clearWrites: () => log.clear(),
    reconciles: (filter = {}) => records.filter((r) => matchesRecord(r, filter)),
    clearReconciles: () => {
      records.length = 0;
    },
    stop: async () => {
      await manager.stop();
      await running.catch(() => undefined);
      await clusterCache.stop();
    },
  };
}
