/**
 * The {@link PoolScope}: everything one reconcile of one pool works with, loaded once and handed to
 * every phase — the objects, the driver, the clock, the logger, and the writers of Events,
 * conditions and status. Phases talk to Kubernetes only through {@link PoolApi}, so a phase can be
 * unit-tested with a fake scope ({@link createPoolScope}) and a fake driver, without an API server.
 *
 * @module
 */
import type { KubernetesObject } from "@kubernetes/client-node";
import type { Cluster, MachinePool } from "../api/cluster.x-k8s.io/v1beta2.js";
import type { ConditionStatus } from "../conditions/types.js";
import { Labels } from "../contract/constants.js";
import { readMachinePool } from "../contract/readers.js";
import type { Clock } from "../runtime/clock.js";
import { FencedError } from "../runtime/errors.js";
import type { RuntimeLogger } from "../runtime/logging.js";
import type { AnyPoolDriver, DriverFailure, PoolContext } from "./driver.js";
import { callDriver } from "./errors.js";
import type { PoolMachinesApi } from "./machines.js";
import type { PoolMemory } from "./memory.js";
import type { ResolvedPoolOptions } from "./options.js";
import type { PoolState } from "./state.js";

/** A condition as a phase sets it. */
export interface ReadyState {
  /** `True`, `False` or `Unknown`. */
  readonly status: ConditionStatus;
  /** CamelCase reason. */
  readonly reason: string;
  /** Message for users (never secrets). */
  readonly message: string;
}

/**
 * What a phase returns to end the pipeline: the `Ready` condition to publish and when to come back
 * (default: only when something changes).
 */
export interface PhaseResult {
  /** The `Ready` condition. */
  readonly ready: ReadyState;
  /** Reconcile again after this long. */
  readonly requeueAfterMs?: number;
}

/** An InfraMachinePool object as the kit reads and writes it. */
export type PoolObject = KubernetesObject & {
  spec?: Record<string, unknown> & { providerIDList?: string[]; providerID?: string };
  status?: Record<string, unknown>;
};

/** The Kubernetes reads and writes a phase may make (everything else goes through the pool object). */
export interface PoolApi {
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
  /** Writes `MachinePool.spec.replicas` (external autoscaler hand-back). */
  setMachinePoolReplicas(machinePool: MachinePool, replicas: number): Promise<void>;
  /** InfraMachines and Machines (MachinePool Machines only; absent otherwise). */
  readonly machines?: PoolMachinesApi;
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
  /** What earlier phases found (spec, bootstrap data, group, plan…), filled in pipeline order. */
  readonly state: PoolState<Spec, Settings>;
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

const KIT_STATUS_FIELDS = new Set([
  "ready",
  "initialization",
  "replicas",
  "conditions",
  "failureReason",
  "failureMessage",
  "infrastructureMachineKind",
  "v1beta1",
  "deprecated",
  "instances",
]);
const KIT_CONDITIONS = new Set(["Ready", "Paused"]);

/** Everything {@link createPoolScope} needs; `api`, `events` and `log` have inert defaults for tests. */
export interface PoolScopeInit<Spec, Settings> {
  /** The pool object (the scope works on it directly; pass a copy). */
  readonly pool: PoolObject;
  /** The owner MachinePool. */
  readonly machinePool?: MachinePool | undefined;
  /** The Cluster. */
  readonly cluster?: Cluster | undefined;
  /** The Cluster's name (default: from the pool's label or the MachinePool). */
  readonly clusterName?: string | undefined;
  /** The driver. */
  readonly driver: AnyPoolDriver<Spec, Settings>;
  /** Resolved options. */
  readonly options: ResolvedPoolOptions<Spec>;
  /** Time. */
  readonly clock: Clock;
  /** Memory of this pool. */
  readonly memory: PoolMemory;
  /** Kubernetes access. */
  readonly api: PoolApi;
  /** Event sink: `(type, reason, message)`. */
  readonly recordEvent?: (type: "Normal" | "Warning", reason: string, message: string) => void;
  /** Logger. */
  readonly log: RuntimeLogger;
  /** Abort signal (default: never aborted). */
  readonly signal?: AbortSignal;
  /** The reconcile's fence (default: throw `FencedError` once `signal` is aborted). */
  readonly fence?: () => void;
  /** Initial state (tests start a phase from the middle of the pipeline). */
  readonly state?: PoolState<Spec, Settings>;
}

/**
 * Builds a {@link PoolScope}. The kit builds one per reconcile; tests build one around a fake driver
 * and a fake {@link PoolApi} to run a single phase.
 *
 * @example
 * ```ts
 * const scope = createPoolScope({ pool, driver: fakeDriver, options: resolvePoolOptions({}),
 *   clock: new ManualClock(), memory: new PoolMemory(), api: fakeApi, log: silentLogger() });
 * await observePhase.run(scope);
 * ```
 */
export function createPoolScope<Spec, Settings>(
  init: PoolScopeInit<Spec, Settings>,
): PoolScope<Spec, Settings> {
  const pool = init.pool;
  const meta = pool.metadata ?? {};
  const log = init.log;
  const record = init.recordEvent ?? (() => undefined);
  const state: PoolState<Spec, Settings> = init.state ?? {};
  const clusterName =
    init.clusterName ??
    meta.labels?.[Labels.ClusterName] ??
    (init.machinePool ? readMachinePool(init.machinePool).clusterName : undefined);
  const signal = init.signal ?? new AbortController().signal;
  const fence =
    init.fence ??
    (() => {
      if (signal.aborted)
        throw new FencedError(`the reconcile was aborted: ${String(signal.reason)}`);
    });
  const scope: PoolScope<Spec, Settings> = {
    key: { namespace: meta.namespace ?? "", name: meta.name ?? "" },
    pool,
    machinePool: init.machinePool,
    cluster: init.cluster,
    clusterName,
    driver: init.driver,
    options: init.options,
    clock: init.clock,
    log,
    api: init.api,
    memory: init.memory,
    signal,
    state,
    events: {
      normal(reason, message, fields = {}) {
        record("Normal", reason, message);
        log.info({ reason, ...fields }, message);
      },
      warning(reason, message, fields = {}) {
        record("Warning", reason, message);
        log.warn({ reason, ...fields }, message);
      },
    },
    conditions: {
      set(condition) {
        if (KIT_CONDITIONS.has(condition.type)) {
          throw new TypeError(
            `scope.conditions.set: ${condition.type} belongs to the kit; set a condition of your own (declared in conditionTypes)`,
          );
        }
        if (!init.options.conditionTypes.includes(condition.type)) {
          throw new TypeError(
            `scope.conditions.set: declare ${condition.type} in the controller's conditionTypes option first`,
          );
        }
        state.providerConditions = new Map(state.providerConditions ?? []).set(condition.type, {
          status: condition.status,
          reason: condition.reason,
          message: condition.message,
        });
      },
    },
    status: {
      setProviderStatus(fields) {
        for (const field of Object.keys(fields)) {
          if (KIT_STATUS_FIELDS.has(field)) {
            throw new TypeError(
              `scope.status.setProviderStatus: status.${field} is written by the kit (use setInstances for status.instances)`,
            );
          }
        }
        pool.status = { ...pool.status, ...structuredClone(fields) };
      },
      setProviderID(providerID) {
        if (providerID.length < 1 || providerID.length > 512) {
          throw new RangeError(
            `scope.status.setProviderID: spec.providerID must be 1–512 characters, got ${providerID.length}`,
          );
        }
        pool.spec = { ...pool.spec, providerID };
      },
      setInstances(instances) {
        pool.status = { ...pool.status, instances: instances.map((i) => ({ ...i })) };
      },
    },
    fence,
    call: (step, run) => {
      fence();
      return callDriver(init.driver, step, () => run(contextOf(scope)));
    },
  };
  return scope;
}

/** The driver's view of the pool: identity, validated spec, version, failure domains, abort signal. */
export function contextOf<Spec, Settings>(scope: PoolScope<Spec, Settings>): PoolContext<Spec> {
  if (scope.state.context) return scope.state.context;
  const meta = scope.pool.metadata ?? {};
  const mp = scope.machinePool ? readMachinePool(scope.machinePool) : undefined;
  const context: PoolContext<Spec> = {
    pool: {
      namespace: meta.namespace ?? "",
      name: meta.name ?? "",
      uid: meta.uid ?? "",
      clusterName: scope.clusterName ?? "",
    },
    spec: (scope.state.spec ?? scope.pool.spec ?? {}) as Spec,
    version: mp?.version,
    failureDomains: [...(mp?.failureDomains ?? [])],
    signal: scope.signal,
  };
  if (scope.state.spec !== undefined) scope.state.context = context;
  return context;
}

export type { DriverFailure };
