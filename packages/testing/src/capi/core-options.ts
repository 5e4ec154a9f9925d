/**
 * The public face of {@link startCapiCore}: its options, the handle of a running emulator, and the
 * records of the reconciles it ran.
 *
 * @module
 */
import type { LoggerOptions, Manager, ManagerOptions, RuntimeLogger } from "@capi-ts/sdk";
import type { KubeConfig } from "@kubernetes/client-node";
import type { BootstrapStandIn, BootstrapStandInOptions } from "./bootstrap.js";
import type { CoreClusterCacheTimings } from "./clustercache.js";
import type { ProvisionedFrom } from "./machinepool-scope.js";
import type { CoreWrite, CoreWriteFilter } from "./writes.js";

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

/** True for a record the filter keeps. */
export function matchesRecord(record: CoreReconcileRecord, filter: CoreReconcileFilter): boolean {
  if (filter.machinePool && record.machinePool !== filter.machinePool) return false;
  if (filter.machine && record.machine !== filter.machine) return false;
  if (filter.actor && record.actor !== filter.actor) return false;
  if (filter.failed !== undefined && (record.error !== undefined) !== filter.failed) return false;
  if (filter.event && !record.notes.some((n) => n.event === filter.event)) return false;
  return true;
}
