/**
 * What a provider tells the kit: its kind and the controller's options, with their defaults resolved
 * in one place.
 *
 * @module
 */
import type { ClusterCache } from "../runtime/clustercache.js";
import type { Manager } from "../runtime/manager.js";
import type { InfraMachineKind } from "./machines.js";
import type { PoolPhase } from "./pipeline.js";
import type { MachinePoolStrategy } from "./strategy.js";

/** One problem with a field, as a schema reports it (zod's `issues` fit). */
export interface SpecIssue {
  /** Where, from the object's root (`["spec", "minSize"]`). */
  readonly path: readonly PropertyKey[];
  /** What is wrong. */
  readonly message: string;
}

/** The result of parsing an object with a schema (zod's `safeParse` fits). */
export type SpecParseResult<Spec> =
  | { readonly success: true; readonly data: { readonly spec: Spec } }
  | {
      readonly success: false;
      readonly error: { readonly message: string; readonly issues?: readonly SpecIssue[] };
    };

/**
 * The provider's InfraMachinePool kind, as the kit needs it. The result of `defineInfraMachinePool`
 * fits as is.
 *
 * @typeParam Spec - the spec type the driver works with
 */
export interface InfraMachinePoolKind<Spec> {
  /** API group, e.g. `infrastructure.foo.com`. */
  readonly group: string;
  /** Kind, e.g. `FooMachinePool`. */
  readonly kind: string;
  /** Plural resource name, e.g. `foomachinepools`. */
  readonly plural: string;
  /** The version the controller reads and writes (default: the last of `versions`). */
  readonly storageVersion?: string;
  /** Served versions. */
  readonly versions?: readonly string[];
  /** The finalizer (default `<kind-lowercase>.<group>`). */
  readonly finalizer?: string;
  /**
   * Validates a whole object and yields its spec (e.g. `defineInfraMachinePool(...).schema`). An
   * invalid spec is reported as `Ready=False/InvalidSpec` with one `field: message` per problem, and
   * nothing is sent to the cloud.
   */
  readonly schema?: { safeParse(data: unknown): SpecParseResult<Spec> };
  /**
   * The InfraMachine kind of MachinePool Machines (`defineInfraMachinePool({ machinePoolMachines:
   * true }).machine`). When set, the kit keeps one InfraMachine per instance, sets
   * `status.infrastructureMachineKind`, and deletes instances only through their Machine (core
   * cordons and drains the Node first; `cluster.x-k8s.io/delete-machine` goes first).
   */
  readonly machine?: InfraMachineKind | undefined;
}

/**
 * Options of {@link machinePoolController}. Every duration has a default derived from
 * `pollIntervalMs`, so setting that one value tunes the whole cadence (tests set 50 ms; production
 * keeps 10 s).
 *
 * @typeParam Spec - the provider's InfraMachinePool `spec` type
 */
export interface MachinePoolControllerOptions<Spec> {
  /** The manager that runs the controller (its cache, client, event recorder, logger and clock). */
  readonly manager: Manager;
  /** The provider's kind. */
  readonly kind: InfraMachinePoolKind<NoInfer<Spec>>;
  /** Controller name (metrics label, event source). Default: the kind in lower case. */
  readonly name?: string;
  /**
   * `required` (default): wait for `MachinePool.spec.template.spec.bootstrap.dataSecretName` and put
   * its data into the template. `none`: managed pools (EKS/AKS/GKE node groups) that boot without
   * bootstrap data — never wait for it.
   */
  readonly bootstrapData?: "required" | "none";
  /** Wait for `Cluster.status.initialization.infrastructureProvisioned`. Default true. */
  readonly waitForClusterInfrastructure?: boolean;
  /**
   * Default rollout strategy for every pool. A pool's own `spec.strategy` (see
   * `machinePoolStrategySchema`) wins field by field; built-in defaults fill the rest.
   */
  readonly strategy?: MachinePoolStrategy;
  /** Where a pool's own strategy is read from. Default: `spec.strategy`, if it is an object. */
  readonly strategyOf?: (spec: Spec) => MachinePoolStrategy | undefined;
  /**
   * When an instance counts as available for `maxUnavailable` and for `Ready`: `node` (default) —
   * running, passing the cloud's health check, and a Ready Node with its providerID in the pool's
   * workload cluster, read through the {@link ClusterCache} from the Cluster's `<cluster>-kubeconfig`
   * Secret; `instance` — running and passing the cloud's health check only. With `node` a rollout
   * never takes Ready Nodes below `replicas − maxUnavailable`, and instances that boot but never join
   * (a stale bootstrap token) hold the rollout; with `instance` old instances may go before the new
   * ones' Nodes are Ready.
   *
   * While the workload cluster cannot be read (no Secret yet, an invalid one, a server that does not
   * answer), `Ready` is False with reason `WorkloadClusterUnreachable`: scaling and provisioning go on
   * (core initializes Nodes only once the pool is provisioned, which counts instances, never Nodes —
   * so a first creation never waits for Nodes), but no outdated instance is deleted.
   */
  readonly readiness?: "instance" | "node";
  /** Use the driver's native rollout when it has one. Default true. */
  readonly useNativeRollout?: boolean;
  /** Re-read the cloud this often while the pool converges. Default 10 s. */
  readonly pollIntervalMs?: number;
  /**
   * Re-read the cloud this often when nothing happens (drift: autoscalers, spot, users). Default
   * 90 × `pollIntervalMs` (15 min with the default poll interval): two cloud reads per pool per
   * resync make 8 reads per pool per hour at rest, less than half of CAPA's AWSMachinePool (3 reads
   * every 10 min sync period; see the performance guide). A lost instance is seen sooner with
   * `readiness: "node"`: its Node going NotReady or away reconciles the pool at once.
   */
  readonly resyncPeriodMs?: number;
  /**
   * How long a published providerID stays in `providerIDList` after its instance vanished from the
   * cloud's list unexplained (a lagging list must not delete a live Node). Instances the kit deleted,
   * or saw terminating, leave at once. Default 3 × `pollIntervalMs` (30 s with the default).
   */
  readonly missingInstanceGraceMs?: number;
  /**
   * At steady state (`Ready=True`), a transient or throttled cloud failure changes no condition and
   * writes nothing until it has failed 3 times in a row over at least this long; then `Ready` turns
   * False with the failure's reason and a Warning Event is recorded. Default 3 × `pollIntervalMs`.
   */
  readonly transientToleranceMs?: number;
  /** Parallel reconciles of different pools. Default: the manager's `--concurrency`. */
  readonly maxConcurrentReconciles?: number;
  /** Abort a reconcile that runs longer than this (the driver sees `ctx.signal`). Default 5 min. */
  readonly reconcileTimeoutMs?: number;
  /**
   * The reconcile pipeline. Gets the default phases ({@link defaultPoolPhases}) and returns the list
   * to run, e.g. with a provider phase inserted before `publish`.
   *
   * @example
   * ```ts
   * phases: (defaults) => insertPhase(defaults, { before: "publish" }, loadBalancerPhase),
   * ```
   */
  readonly phases?: (
    defaults: readonly PoolPhase<Spec, unknown>[],
  ) => readonly PoolPhase<Spec, unknown>[];
  /**
   * Condition types the provider's own phases set (with `scope.conditions.set`). The kit owns them in
   * the patch (its value wins over a concurrent writer) and summarises them into `Ready`: while one is
   * not `True`, `Ready` is False with that condition's reason.
   */
  readonly conditionTypes?: readonly string[];
}

/** {@link MachinePoolControllerOptions} with every default applied. */
export interface ResolvedPoolOptions<Spec> {
  /** See {@link MachinePoolControllerOptions.pollIntervalMs}. */
  readonly pollMs: number;
  /** See {@link MachinePoolControllerOptions.resyncPeriodMs}. */
  readonly resyncMs: number;
  /** See {@link MachinePoolControllerOptions.missingInstanceGraceMs}. */
  readonly missingGraceMs: number;
  /** See {@link MachinePoolControllerOptions.transientToleranceMs}. */
  readonly transientToleranceMs: number;
  /** See {@link MachinePoolControllerOptions.readiness}. */
  readonly readiness: "instance" | "node";
  /** See {@link MachinePoolControllerOptions.bootstrapData}. */
  readonly bootstrapData: "required" | "none";
  /** See {@link MachinePoolControllerOptions.waitForClusterInfrastructure}. */
  readonly waitForClusterInfrastructure: boolean;
  /** See {@link MachinePoolControllerOptions.useNativeRollout}. */
  readonly useNativeRollout: boolean;
  /** See {@link MachinePoolControllerOptions.strategy}. */
  readonly strategy: MachinePoolStrategy | undefined;
  /** A pool's own strategy (the option, else `spec.strategy`). */
  readonly strategyOf: (spec: Spec) => MachinePoolStrategy | undefined;
  /** The kind's schema, if any. */
  readonly schema: InfraMachinePoolKind<Spec>["schema"];
  /** See {@link MachinePoolControllerOptions.conditionTypes}. */
  readonly conditionTypes: readonly string[];
  /** The InfraMachine kind of MachinePool Machines ({@link InfraMachinePoolKind.machine}), if any. */
  readonly machines: InfraMachineKind | undefined;
}

/** The kit's default poll interval: 10 s. */
export const DEFAULT_POLL_INTERVAL_MS = 10_000;

/** The default resync period in poll intervals (15 min with the default poll interval). */
const RESYNC_POLLS = 90;

function positive(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isFinite(value) || value <= 0) {
    throw new RangeError(
      `machinePoolController: ${name} must be a positive number of milliseconds, got ${value}`,
    );
  }
  return value;
}

function specStrategy<Spec>(spec: Spec): MachinePoolStrategy | undefined {
  const candidate = (spec as { strategy?: unknown } | undefined)?.strategy;
  return candidate && typeof candidate === "object"
    ? (candidate as MachinePoolStrategy)
    : undefined;
}

/**
 * Applies the defaults of {@link MachinePoolControllerOptions} and validates the values.
 *
 * @example
 * ```ts
 * resolvePoolOptions({ pollIntervalMs: 50 }).resyncMs; // 4500
 * ```
 */
export function resolvePoolOptions<Spec>(
  options: Omit<MachinePoolControllerOptions<Spec>, "manager" | "kind"> & {
    readonly kind?: Pick<InfraMachinePoolKind<Spec>, "schema" | "machine">;
  },
): ResolvedPoolOptions<Spec> {
  const pollMs = positive("pollIntervalMs", options.pollIntervalMs, DEFAULT_POLL_INTERVAL_MS);
  if (
    options.bootstrapData !== undefined &&
    options.bootstrapData !== "required" &&
    options.bootstrapData !== "none"
  ) {
    throw new TypeError(
      `machinePoolController: bootstrapData must be "required" or "none", got ${JSON.stringify(options.bootstrapData)}`,
    );
  }
  if (
    options.readiness !== undefined &&
    options.readiness !== "instance" &&
    options.readiness !== "node"
  ) {
    throw new TypeError(
      `machinePoolController: readiness must be "instance" or "node", got ${JSON.stringify(options.readiness)}`,
    );
  }
  const strategyOf = options.strategyOf;
  return {
    pollMs,
    resyncMs: positive("resyncPeriodMs", options.resyncPeriodMs, RESYNC_POLLS * pollMs),
    missingGraceMs: positive("missingInstanceGraceMs", options.missingInstanceGraceMs, 3 * pollMs),
    transientToleranceMs: positive(
      "transientToleranceMs",
      options.transientToleranceMs,
      3 * pollMs,
    ),
    readiness: options.readiness ?? "node",
    bootstrapData: options.bootstrapData ?? "required",
    waitForClusterInfrastructure: options.waitForClusterInfrastructure ?? true,
    useNativeRollout: options.useNativeRollout ?? true,
    strategy: options.strategy,
    strategyOf: strategyOf ? (spec) => strategyOf(spec) : specStrategy,
    schema: options.kind?.schema,
    conditionTypes: [...(options.conditionTypes ?? [])],
    machines: options.kind?.machine ?? undefined,
  };
}
