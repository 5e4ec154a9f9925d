/**
 * What a provider tells the kit: its kind and the controller's options, with their defaults resolved
 * in one place.
 *
 * @module
 */
import type { KubernetesObject } from "@kubernetes/client-node";
import type { ClusterCache } from "../clustercache/clustercache.js";
import type { Manager } from "../runtime/manager.js";
import type { ResourceDescriptor } from "../runtime/resource.js";
import type { PoolCredentials } from "./credentials.js";
import type { InfrastructureClusterOf, PoolEnvironment } from "./driver-types.js";
import type { InfraMachinePoolKind } from "./kind.js";
import type { PoolPhase } from "./phase.js";
import type { ResolvedPoolOptions } from "./resolved-options.js";
import { type MachinePoolStrategy, resolveStrategy } from "./strategy.js";

export type { InfraMachinePoolKind, SpecIssue, SpecParseResult } from "./kind.js";
export type { ResolvedPoolOptions } from "./resolved-options.js";

/**
 * Options of {@link machinePoolController}. Every duration has a default derived from
 * `pollIntervalMs`, so setting that one value tunes the whole cadence (tests set 50 ms; production
 * keeps 10 s).
 *
 * @typeParam Spec - the provider's InfraMachinePool `spec` type
 * @typeParam Env - the credentials and infrastructure cluster the driver's `ctx` carries
 *   ({@link PoolEnvironment}), inferred from the driver
 */
export interface MachinePoolControllerOptions<Spec, Env extends PoolEnvironment = PoolEnvironment> {
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
   * The provider's InfraCluster kind (e.g. `AWSCluster`): the kit watches it, reads the object a
   * pool's Cluster names in `spec.infrastructureRef` once per reconcile (from the cache), passes it
   * to the `credentials` hook and to the driver as `ctx.infrastructureCluster`, and reconciles the
   * Cluster's pools when its spec or metadata changes. Without it, `ctx.infrastructureCluster` is
   * `undefined`.
   */
  readonly infrastructureCluster?: ResourceDescriptor<
    InfrastructureClusterOf<Env> & KubernetesObject
  >;
  /**
   * Per-pool cloud credentials (see {@link PoolCredentials}): resolved before any cloud call, passed
   * as `ctx.credentials`, cached until what they were read from changes. A pool whose credentials
   * cannot be resolved waits with `Ready=False`, reason `CredentialsUnavailable`; a driver that sees
   * them rejected throws `DriverError.credentialsRejected` (reason `CredentialsRejected`), and the
   * kit resolves them again at the next attempt.
   */
  readonly credentials?: PoolCredentials<NoInfer<Env>>;
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
   * ones' Nodes are Ready. With `node` the MachinePool's `minReadySeconds` counts too: a Node is
   * available once it has been Ready that long.
   *
   * While the workload cluster cannot be read (no Secret yet, an invalid one, a server that does not
   * answer), `Ready` is False with reason `WorkloadClusterUnreachable`: scaling and provisioning go on
   * (core initializes Nodes only once the pool is provisioned, which counts instances, never Nodes —
   * so a first creation never waits for Nodes), but no outdated instance is deleted.
   */
  readonly readiness?: "instance" | "node";
  /**
   * The {@link ClusterCache} the kit reads the workload clusters' Nodes through (with `readiness:
   * "node"`), built by the provider with its options: `new ClusterCache(manager, { … })`. Default:
   * with `readiness: "node"`, one of the controller's own with default options, named
   * `<controller name>-clustercache`, closed when the manager stops.
   *
   * A provider that runs several controllers reaching workload clusters (the kit for two kinds, or a
   * controller of its own next to the kit) should build one and pass it to each: each workload cluster
   * then gets one connection and one Node informer instead of one per controller.
   */
  readonly clusterCache?: ClusterCache;
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
   * The reconcile pipeline. Gets the default phases (`defaultPoolPhases` of `@capi-ts/sdk/provider`)
   * and returns the list to run, e.g. with a provider phase inserted before `publish`.
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
  if (options.strategy) {
    try {
      resolveStrategy(1, false, options.strategy);
    } catch (error) {
      throw new RangeError(`machinePoolController: ${(error as Error).message}`);
    }
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
