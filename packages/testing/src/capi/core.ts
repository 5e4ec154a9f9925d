import {
  CLUSTER_API_GROUP,
  type Controller,
  isNotFound,
  type LoggerOptions,
  Manager,
  type ManagerOptions,
  NodeResource,
  notPaused,
  type Predicate,
  type ReconcileRequest,
  type ResourceDescriptor,
  type RuntimeLogger,
  resourceId,
  resourceVersionChanged,
} from "@capi-ts/sdk";
import type { KubeConfig, KubernetesObject, V1Node } from "@kubernetes/client-node";
import {
  type BootstrapStandIn,
  BootstrapStandInController,
  type BootstrapStandInOptions,
} from "./bootstrap.js";
import { ContractResolver, type ResolvedKind } from "./contract-version.js";
import {
  CorePanicError,
  MachinePoolReconciler,
  type ProvisionedFrom,
  type ReconcileTrace,
} from "./machinepool.js";
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
  /** The management cluster (for tests: `api.kubeConfig` of the in-memory API server). Nodes are read from it too. */
  kubeConfig: KubeConfig;
  /** Watch only this namespace (Nodes are cluster-scoped and always watched). */
  namespace?: string;
  /** Reconcile only MachinePools labelled `cluster.x-k8s.io/watch-filter=<value>` (core's `--watch-filter`). */
  watchFilterValue?: string;
  /** Field manager and logger name. Default `capi-core-emulator`. */
  name?: string;
  /**
   * How core decides the InfraMachinePool is provisioned:
   * - `"ready"` (default): CAPI `main` at the studied commit — `status.ready` only, and
   *   `MachinePool.status.initialization.infrastructureProvisioned` re-computed every reconcile, so it
   *   flips back to false if `ready` does (contract G1, G3);
   * - `"initialization"`: open PR #14030 — `status.initialization.provisioned`, falling back to
   *   `status.ready` only when absent (v1beta1-contract CRDs: `status.ready`), and
   *   `infrastructureProvisioned` sticky once true (G2).
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
  /** How long core waits before re-checking Nodes that are not all ready, ms. Core: 30,000 (the default). */
  nodeRefRequeueMs?: number;
  /**
   * Run the emulated MachinePool controller. Default true; `false` leaves only the bootstrap stand-in
   * (and its token rotation), to serve as the bootstrap provider next to real CAPI core
   * (`startControlPlane({ capiCore: true })`), which has none.
   */
  machinePools?: boolean;
  /** Parallel MachinePool reconciles (core's `--machinepool-concurrency`). Default 10. */
  maxConcurrentReconciles?: number;
  /** Logger, or options to create one. Default: silent. */
  logger?: RuntimeLogger | LoggerOptions;
  /** Informer tuning (watch timeout, backoff); mostly for fault-injection tests. */
  informer?: ManagerOptions["informer"];
  /** How long {@link startCapiCore} waits for caches to sync, ms. Default 30,000. */
  startTimeoutMs?: number;
  /** How many reconcile records {@link CapiCore.reconciles} keeps (oldest dropped first). Default 10,000. */
  maxReconcileRecords?: number;
}

/** What one reconcile of a MachinePool did (besides its writes). */
export interface CoreReconcileRecord {
  /** `core` for core's MachinePool controller, `bootstrap` for the stand-in. */
  actor: "machinepool" | "bootstrap";
  /** `namespace/name` of the MachinePool. */
  machinePool: string;
  /** When it started. */
  startedAt: Date;
  /** How long it took, ms. */
  durationMs: number;
  /**
   * Decisions core made, in order, e.g. `InfrastructureRead` (detail: the InfraMachinePool's
   * resourceVersion and what core concluded), `ProviderIDListCopied`, `DeprecatedCountersReset`,
   * `EmptyProviderIDListIgnored`, `InfrastructureNotProvisioned`, `InfrastructureProvisionedReverted`,
   * `RetiredNodeDeleted`, `WaitingForExternalDeletion`, `FinalizerRemoved`, `Paused`, `Panic`.
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

/** Core's `ClusterPausedTransitions`: only updates that flip `spec.paused`. */
const clusterPausedTransitions: Predicate<ClusterObject> = {
  create: () => false,
  delete: () => false,
  update: (oldObj, newObj) => (oldObj.spec?.paused === true) !== (newObj.spec?.paused === true),
};

const silent: LoggerOptions = { level: "silent" };

/**
 * Starts the CAPI core emulator against any API server: core's MachinePool controller as it treats an
 * InfraMachinePool (owner reference and `cluster-name` label, readiness, copying `providerIDList` and
 * `replicas` only when ready with the empty-list guard and the order-sensitive counter reset, Node
 * references, retired Node deletion, phases, deletion ordering, the failureReason panic) plus a
 * bootstrap stand-in. The CAPI CRDs must be installed; referenced provider CRDs need their contract
 * label (R4) exactly as with real core. Resolves once its caches have synced.
 *
 * @remarks
 * Ported from `core/reconcilers/machinepool` at the commit the contract was studied at (and PR #14030
 * for `provisionedFrom: "initialization"`). Where it differs from a real management cluster, and why:
 * - defaulting runs after admission, as a recorded patch, since a test API server has no webhooks
 *   (validation is not emulated);
 * - the workload cluster is the same API server: Nodes are read through `kubeConfig` and watched from
 *   the start (core waits for `ControlPlaneInitialized` and uses its cluster cache);
 * - MachinePool Machines (R11) are not emulated: an InfraMachinePool that sets
 *   `status.infrastructureMachineKind` gets a reconcile error saying so;
 * - the `failureReason` panic (G4) is a {@link CorePanicError}; the writes around it are core's;
 * - no Events (`SuccessfulSetNodeRefs`, `FailedSetNodeRef`) and no metrics of core's own;
 * - a pool with neither `configRef` nor `dataSecretName` (which the webhook would reject) waits for the
 *   bootstrap stand-in instead of failing, while the stand-in serves such pools.
 *
 * @example
 * ```ts
 * const api = await startApiServer();
 * await api.installCRDs([capiCrdsFolder]);
 * const core = await startCapiCore({ kubeConfig: api.kubeConfig });
 * // … create a Cluster, a MachinePool and its InfraMachinePool, run the provider …
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
    maxConcurrentReconciles: options.maxConcurrentReconciles ?? 10,
    gracefulShutdownTimeoutMs: 5_000,
  };
  if (options.namespace) managerOptions.namespace = options.namespace;
  if (options.watchFilterValue) managerOptions.watchFilterValue = options.watchFilterValue;
  if (options.informer) managerOptions.informer = options.informer;
  const manager = new Manager(managerOptions);

  for (const crd of ["machinepools.cluster.x-k8s.io", "clusters.cluster.x-k8s.io"]) {
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
  const resolver = new ContractResolver(manager.cache);

  let controller: Controller | undefined;
  const watched = new Map<string, Promise<void>>();
  const watchExternal = (kind: ResolvedKind): Promise<void> => {
    const id = resourceId(kind.resource);
    let ready = watched.get(id);
    if (!ready) {
      const informer = manager.cache.informerFor(kind.resource as ResourceDescriptor);
      if (controller) {
        informer.addEventHandler(
          controller.mapHandler(ownerMachinePools, [resourceVersionChanged(), notPaused()]),
        );
      }
      ready = informer.waitForSync(options.startTimeoutMs ?? 30_000);
      ready.catch(() => watched.delete(id));
      watched.set(id, ready);
    }
    return ready;
  };

  const reconciler = new MachinePoolReconciler({
    cache: manager.cache,
    writer: new RecordingWriter(manager.client, log, "machinepool"),
    resolver,
    watchExternal,
    log: manager.logger,
    options: {
      provisionedFrom: options.provisionedFrom ?? "ready",
      nodeRefRequeueMs: options.nodeRefRequeueMs ?? 30_000,
      defaulting: options.defaulting ?? true,
      bootstrapStandInServesPools:
        options.bootstrap !== false &&
        (typeof options.bootstrap !== "object" || options.bootstrap.byMachinePool !== false),
    },
  });

  const nodeToMachinePool = async (node: V1Node): Promise<ReconcileRequest[]> => {
    const annotations = node.metadata?.annotations ?? {};
    const clusterName = annotations["cluster.x-k8s.io/cluster-name"];
    const namespace = annotations["cluster.x-k8s.io/cluster-namespace"];
    const filter: { namespace?: string; labelSelector?: string } = {};
    if (namespace) filter.namespace = namespace;
    if (clusterName) filter.labelSelector = `cluster.x-k8s.io/cluster-name=${clusterName}`;
    const pools = await manager.cache.list(MachinePoolResource, filter);
    const key = (mp: MachinePoolObject) => ({
      namespace: mp.metadata?.namespace ?? "",
      name: mp.metadata?.name ?? "",
    });
    const byName = pools.filter((mp) =>
      (mp.status?.nodeRefs ?? []).some((ref) => ref.name === node.metadata?.name),
    );
    if (byName.length === 1) return [key(byName[0] as MachinePoolObject)];
    const providerID = node.spec?.providerID;
    if (!providerID) return [];
    const byID = pools.filter((mp) => (mp.spec?.providerIDList ?? []).includes(providerID));
    return byID.length === 1 ? [key(byID[0] as MachinePoolObject)] : [];
  };

  if (options.machinePools !== false) {
    controller = manager
      .controller("machinepool")
      .for(MachinePoolResource)
      .watches(
        ClusterResource,
        async (cluster) =>
          (
            await manager.cache.list(MachinePoolResource, {
              namespace: cluster.metadata?.namespace ?? "",
              labelSelector: `cluster.x-k8s.io/cluster-name=${cluster.metadata?.name ?? ""}`,
            })
          ).map((mp) => ({
            namespace: mp.metadata?.namespace ?? "",
            name: mp.metadata?.name ?? "",
          })),
        { predicates: [clusterPausedTransitions] },
      )
      .watches(NodeResource, nodeToMachinePool, { predicates: [resourceVersionChanged()] })
      .complete(async (request) => {
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
        try {
          const result = await reconciler.reconcile(request, trace);
          if (result?.requeueAfter) entry.requeueAfterMs = result.requeueAfter;
          return result;
        } catch (error) {
          entry.error = error instanceof Error ? error : new Error(String(error));
          entry.panicked = error instanceof CorePanicError;
          throw error;
        } finally {
          entry.durationMs = Date.now() - startedAt.getTime();
          record(entry);
        }
      });
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
    },
  };
}
