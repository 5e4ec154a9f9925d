/**
 * Builds the {@link PoolScope} of one reconcile ({@link createPoolScope}) with its section store, and
 * the driver's context ({@link contextOf}).
 *
 * @module
 */
import type { Cluster, MachinePool } from "../api/cluster.x-k8s.io/v1beta2.js";
import { Labels } from "../contract/constants.js";
import { readMachinePool } from "../contract/readers.js";
import type { Clock } from "../runtime/clock.js";
import { FencedError } from "../runtime/errors.js";
import type { RuntimeLogger } from "../runtime/logging.js";
import type { AnyPoolDriver, PoolContext } from "./driver.js";
import { callDriver } from "./errors.js";
import type { PoolMemory } from "./memory.js";
import { DEFAULT_MOVE_BLOCKING_CALLS } from "./move.js";
import { PoolConditionTypes } from "./reasons.js";
import type { ResolvedPoolOptions } from "./resolved-options.js";
import type { PoolApi, PoolObject, PoolScope } from "./scope.js";
import { attachSections, SectionStore, sectionsOf } from "./sections.js";

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
  "capacity",
  "nodeInfo",
]);
const KIT_CONDITIONS = new Set([
  "Ready",
  "Paused",
  PoolConditionTypes.AutoscalerBounds,
  PoolConditionTypes.NodeMetadata,
  PoolConditionTypes.Draining,
  PoolConditionTypes.VersionRollout,
]);

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
}

/**
 * Builds a {@link PoolScope} and its section store. The kit builds one per reconcile; the test kit
 * builds one around a fake driver and a fake {@link PoolApi} to run a single phase.
 *
 * @example
 * ```ts
 * const scope = createPoolScope({ pool, driver: fakeDriver, options: resolvePoolOptions({}),
 *   clock: new ManualClock(), memory: new PoolMemory(), api: fakeApi, log: silentLogger() });
 * await runPhase(observePhase, scope);
 * ```
 */
export function createPoolScope<Spec, Settings>(
  init: PoolScopeInit<Spec, Settings>,
): PoolScope<Spec, Settings> {
  const pool = init.pool;
  const meta = pool.metadata ?? {};
  const log = init.log;
  const record = init.recordEvent ?? (() => undefined);
  const store = new SectionStore<Spec, Settings>();
  const moveBlocking = new Set(init.driver.moveBlockingCalls ?? DEFAULT_MOVE_BLOCKING_CALLS);
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
        store.setCondition(condition.type, {
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
    call: async (step, run) => {
      fence();
      if (init.api.blockMove && moveBlocking.has(step)) await init.api.blockMove(step);
      return callDriver(init.driver, step, () => run(contextOf(scope)));
    },
  };
  attachSections(scope, store);
  return scope;
}

/**
 * The driver's view of the pool: identity, spec, version, failure domains, abort signal. The
 * validated spec once `validateSpec` wrote it (its context, built once); before that, and in the
 * delete pipeline, the pool's raw spec.
 */
export function contextOf<Spec, Settings>(scope: PoolScope<Spec, Settings>): PoolContext<Spec> {
  return (
    sectionsOf(scope).peek("spec")?.context ?? contextFor(scope, (scope.pool.spec ?? {}) as Spec)
  );
}

/** The driver's context for `spec` (what `validateSpec` stores with the validated spec). */
export function contextFor<Spec, Settings>(
  scope: PoolScope<Spec, Settings>,
  spec: Spec,
): PoolContext<Spec> {
  const meta = scope.pool.metadata ?? {};
  const mp = scope.machinePool ? readMachinePool(scope.machinePool) : undefined;
  const access = sectionsOf(scope).peek("access");
  return {
    pool: {
      namespace: meta.namespace ?? "",
      name: meta.name ?? "",
      uid: meta.uid ?? "",
      clusterName: scope.clusterName ?? "",
    },
    spec,
    version: mp?.version,
    failureDomains: [...(mp?.failureDomains ?? [])],
    replicas:
      mp === undefined || mp.replicasManagedByExternalAutoscaler ? undefined : (mp.replicas ?? 1),
    signal: scope.signal,
    credentials: access?.credentials,
    infrastructureCluster: access?.infrastructureCluster,
  };
}
