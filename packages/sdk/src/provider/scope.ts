/**
 * The {@link PoolScope}: everything one reconcile of one pool works with, loaded once and handed to
 * every phase — the objects, the driver, the clock, the logger, and the writers of Events,
 * conditions and status. Phases talk to Kubernetes only through {@link PoolApi}, so a phase can be
 * unit-tested with a fake scope and a fake driver (`@capi-ts/sdk/provider/testing`), without an API
 * server. Types only: the kit builds the scope (`pool-scope.ts`).
 *
 * @module
 */
import type { KubernetesObject } from "@kubernetes/client-node";
import type { Cluster, MachinePool } from "../api/cluster.x-k8s.io/v1beta2.js";
import type { ConditionStatus } from "../conditions/types.js";
import type { Clock } from "../runtime/clock.js";
import type { RuntimeLogger } from "../runtime/logging.js";
import type {
  AnyPoolDriver,
  DriverFailure,
  InfrastructureClusterObject,
  PoolContext,
} from "./driver.js";
import type { PoolMachinesApi } from "./machines.js";
import type { PoolMemory } from "./memory.js";
import type { NodeDrainApi } from "./node-drain.js";
import type { PoolNodesApi } from "./nodes.js";
import type { ResolvedPoolOptions } from "./resolved-options.js";

/** A condition as a phase sets it. */
export interface ReadyState {
  /** `True`, `False` or `Unknown`. */
  readonly status: ConditionStatus;
  /** CamelCase reason. */
  readonly reason: string;
  /** Message for users (never secrets). */
  readonly message: string;
}

/** An InfraMachinePool object as the kit reads and writes it. */
export type PoolObject = KubernetesObject & {
  spec?: Record<string, unknown> & { providerIDList?: string[]; providerID?: string };
  status?: Record<string, unknown>;
};

/** A control plane object as the preflight checks read it (any provider's kind). */
export type ControlPlaneObject = KubernetesObject & { spec?: unknown; status?: unknown };

/** The Kubernetes reads and writes a phase may make (everything else goes through the pool object). */
export interface PoolApi {
  /**
   * Marks the pool `clusterctl.cluster.x-k8s.io/block-move` (value `capi-ts: <step>`), persisted at
   * once, before a driver call that must not be interrupted by `clusterctl move`; the controller
   * clears it when the reconcile ends, after the pool's status says what the calls did. Idempotent
   * within a reconcile. Absent (test scopes): no mark.
   */
  readonly blockMove?: (step: string) => Promise<void>;
  /** A Secret's data (base64 values), or `undefined` when it does not exist. */
  readSecret(
    namespace: string,
    name: string,
  ): Promise<{ data?: Record<string, string> } | undefined>;
  /**
   * Those of `providerIDs` whose Node in the workload cluster is Ready (for `readiness: "node"`):
   * one index lookup per ID, whatever the number of Nodes.
   */
  readyNodeProviderIDs(providerIDs: Iterable<string>): Promise<ReadonlySet<string>>;
  /**
   * Every providerID another pool of the namespace already lists (another pool of the kit's kind, or
   * a MachinePool other than this pool's owner), with the pool that lists it (`Kind namespace/name`).
   * Absent (test scopes): no check.
   */
  readonly claimedProviderIDs?: () => Promise<ReadonlyMap<string, string>>;
  /**
   * Those of `providerIDs` whose Node in the workload cluster carries a taint with key `taintKey`
   * (the cluster-autoscaler's `ToBeDeletedByClusterAutoscaler`): one index lookup per ID, as
   * {@link PoolApi.readyNodeProviderIDs}. Throws `WorkloadClusterUnavailableError` when the workload
   * cluster cannot be read. Absent when the kit has no `ClusterCache` (`readiness: "instance"` without
   * the `clusterCache` option): it cannot see Nodes.
   */
  readonly taintedNodeProviderIDs?: (
    providerIDs: Iterable<string>,
    taintKey: string,
  ) => Promise<ReadonlySet<string>>;
  /**
   * The object a Cluster's `spec.controlPlaneRef` names, in the Cluster's namespace (for the
   * preflight checks), resolved as core resolves a contract reference (the CRD named after group
   * and kind, the version its contract label lists); `undefined` when it does not exist. Absent:
   * the kit runs no preflight check.
   */
  readonly readControlPlane?: (
    ref: { readonly apiGroup: string; readonly kind: string; readonly name: string },
    namespace: string,
  ) => Promise<ControlPlaneObject | undefined>;
  /**
   * The pool's Cluster's infrastructure object and its credentials (the controller's
   * `infrastructureCluster` and `credentials` options), cached per pool; throws
   * `CredentialsUnavailableError`. Absent: the context carries neither.
   */
  readonly resolveAccess?: () => Promise<{
    readonly credentials: unknown;
    readonly infrastructureCluster: InfrastructureClusterObject | undefined;
  }>;
  /** Writes `MachinePool.spec.replicas` (external autoscaler hand-back). */
  setMachinePoolReplicas(machinePool: MachinePool, replicas: number): Promise<void>;
  /** InfraMachines and Machines (MachinePool Machines only; absent otherwise). */
  readonly machines?: PoolMachinesApi;
  /**
   * The pool's Nodes in the workload cluster: their taints, labels and Ready time, and patches of
   * them (the `nodes` phase; `minReadySeconds`). Absent when the kit has no `ClusterCache`.
   */
  readonly nodes?: PoolNodesApi;
  /**
   * The workload cluster's Nodes and Pods, to drain a Node before its instance is terminated (pools
   * without MachinePool Machines). Absent when the kit has no `ClusterCache` (it cannot see Nodes).
   */
  readonly drain?: NodeDrainApi;
}

/** Records Events on the pool, with a log line each. */
export interface PoolEvents {
  /** A routine change (every cloud change is one). */
  normal(reason: string, message: string, fields?: Record<string, unknown>): void;
  /** Something a user should look at: a terminal or persisting failure, a stopped runaway. */
  warning(reason: string, message: string, fields?: Record<string, unknown>): void;
}

/** Sets the provider's own conditions (declared in `conditionTypes`). */
export interface PoolConditions {
  /** Sets a condition; `Ready` and `Paused` belong to the kit and are refused. */
  set(condition: { type: string } & ReadyState): void;
}

/** One entry of `status.instances` (R13, informational). */
export interface PoolInstanceStatus {
  /** The instance's name or ID. */
  readonly instanceName?: string;
  /** Its providerID. */
  readonly providerID?: string;
  /** Whether it is available. */
  readonly ready?: boolean;
  /** Kubernetes version it runs. */
  readonly version?: string;
}

/** Writes the provider-owned parts of the pool: its own status fields, `spec.providerID`, `status.instances`. */
export interface PoolStatusWriter {
  /**
   * Merges the provider's own status fields (declared in `defineInfraMachinePool({ status })`).
   * Contract fields (`ready`, `initialization`, `replicas`, `conditions`, `failureReason`, …) are the
   * kit's and are refused.
   */
  setProviderStatus(fields: Readonly<Record<string, unknown>>): void;
  /** `spec.providerID` (R12), 1–512 characters. */
  setProviderID(providerID: string): void;
  /** `status.instances` (R13). */
  setInstances(instances: readonly PoolInstanceStatus[]): void;
}

/**
 * One reconcile of one pool.
 *
 * @typeParam Spec - the provider's spec type
 * @typeParam Settings - the driver's group settings
 */
export interface PoolScope<Spec, Settings> {
  /** Namespace and name of the pool. */
  readonly key: { readonly namespace: string; readonly name: string };
  /** The pool (a copy; changes are patched at the end of the reconcile, only if something changed). */
  readonly pool: PoolObject;
  /** The owner MachinePool (absent while deleting, if it is gone). */
  readonly machinePool: MachinePool | undefined;
  /** The Cluster (absent while deleting, if it is gone). */
  readonly cluster: Cluster | undefined;
  /** The Cluster's name. */
  readonly clusterName: string | undefined;
  /** The provider's driver. */
  readonly driver: AnyPoolDriver<Spec, Settings>;
  /** Options with defaults applied. */
  readonly options: ResolvedPoolOptions<Spec>;
  /** Time (the manager's clock). */
  readonly clock: Clock;
  /** Logger bound to the pool. */
  readonly log: RuntimeLogger;
  /** Events on the pool. */
  readonly events: PoolEvents;
  /** The provider's own conditions. */
  readonly conditions: PoolConditions;
  /** The provider's own status fields, `spec.providerID`, `status.instances`. */
  readonly status: PoolStatusWriter;
  /** Kubernetes reads and writes. */
  readonly api: PoolApi;
  /** What the kit remembers about this pool between reconciles. */
  readonly memory: PoolMemory;
  /** Aborted when the reconcile times out or the controller stops. */
  readonly signal: AbortSignal;
  /**
   * Throws `FencedError` once this reconcile may no longer act (leadership lost or unprovable, the
   * shutdown deadline passed, the reconcile timed out). {@link PoolScope.call} runs it before every
   * driver call; the kit runs it before its own writes.
   */
  fence(): void;
  /**
   * Calls the driver with the pool's context, after {@link PoolScope.fence}; a failure is thrown as a
   * `StepFailure` carrying its {@link DriverFailure}, which the error policy turns into a condition, a
   * retry and maybe an Event. A fenced call is never made: the `FencedError` ends the reconcile.
   */
  call<T>(step: string, run: (ctx: PoolContext<Spec>) => Promise<T>): Promise<T>;
}
