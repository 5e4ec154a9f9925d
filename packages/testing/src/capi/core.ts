/**
 * {@link startCapiCore}: the CAPI core emulator wired together — a manager with core's caches and
 * indexes, the MachinePool, Machine and ClusterCache controllers, the bootstrap stand-in, and the
 * records of what they wrote and reconciled.
 *
 * @module
 */
import { type LoggerOptions, Manager, type ManagerOptions } from "@capi-ts/sdk";
import { formatLabelValue, hasWatchFilterLabel, Labels } from "@capi-ts/sdk/contract";
import {
  type Controller,
  type InformerHandler,
  isNotFound,
  type ReconcileRequest,
  type ReconcileResult,
  type ResourceDescriptor,
  resourceId,
  resourceVersionChanged,
  SecretResource,
} from "@capi-ts/sdk/runtime";
import type { KubernetesObject, V1Node } from "@kubernetes/client-node";
import { BootstrapStandInController } from "./bootstrap.js";
import { WorkloadClusterCache } from "./clustercache.js";
import { ContractResolver, type ResolvedKind } from "./contract-version.js";
import { CorePanicError } from "./controller-helpers.js";
import {
  type CapiCore,
  type CapiCoreOptions,
  type CoreReconcileRecord,
  matchesRecord,
} from "./core-options.js";
import { CoreRateLimiter, reconcileLimiter } from "./core-rate-limit.js";
import {
  clusterControlPlaneInitialized,
  clusterPausedTransitions,
  MACHINE_BY_NODE,
  MACHINE_BY_PROVIDER_ID,
  nodeToObject,
  ownerMachinePools,
  ownerMachines,
  POOL_BY_NODE,
  POOL_BY_PROVIDER_ID,
} from "./core-watches.js";
import { MachineReconciler } from "./machine.js";
import { MachinePoolReconciler, type ReconcileTrace } from "./machinepool.js";
import { ClusterResource, CrdResource, MachinePoolResource, MachineResource } from "./types.js";
import { RecordingWriter, WriteLog } from "./writes.js";

export type {
  CapiCore,
  CapiCoreOptions,
  CoreMachineOptions,
  CoreReconcileFilter,
  CoreReconcileRecord,
} from "./core-options.js";

const silent: LoggerOptions = { level: "silent" };

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
  const nodeToMachinePool = (node: V1Node) =>
    nodeToObject(manager.cache, MachinePoolResource, POOL_BY_NODE, POOL_BY_PROVIDER_ID, node);
  const nodeToMachine = (node: V1Node) =>
    nodeToObject(manager.cache, MachineResource, MACHINE_BY_NODE, MACHINE_BY_PROVIDER_ID, node);

  const poolLimiter = reconcileLimiter(rateLimitIntervalMs);
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
    const machineLimiter = reconcileLimiter(rateLimitIntervalMs);
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
