/**
 * `machinePoolController(driver, options)`: the InfraMachinePool reconciler a provider gets for
 * implementing a {@link PoolDriver}. It owns the CAPI contract (guards, finalizer, pause, bootstrap
 * data, replica intent, rollouts, status, deletion), the watches, and the error policy.
 *
 * @module
 */
import type { KubernetesObject, V1Node, V1Secret } from "@kubernetes/client-node";
import {
  type Cluster,
  ClusterResource,
  type MachinePool,
  MachinePoolResource,
} from "../api/cluster.x-k8s.io/v1beta2.js";
import { ConditionReasons, ConditionTypes } from "../conditions/constants.js";
import type { ConditionStatus } from "../conditions/types.js";
import { setCondition } from "../conditions/v1beta2.js";
import { readBootstrapData, type SecretReader } from "../contract/bootstrap.js";
import { finalizerFor } from "../contract/constants.js";
import { ensureFinalizer, hasFinalizer, removeFinalizer } from "../contract/finalizers.js";
import { findOwnerMachinePoolRef } from "../contract/owners.js";
import { updatePausedCondition } from "../contract/pause.js";
import { readCluster, readMachinePool } from "../contract/readers.js";
import { setPoolStatus } from "../contract/status.js";
import { PatchHelper } from "../patch/helper.js";
import type { Controller, ReconcileContext, ReconcileResult } from "../runtime/controller.js";
import { isNotFound } from "../runtime/errors.js";
import { CLUSTER_NAME_INDEX } from "../runtime/informer.js";
import type { RuntimeLogger } from "../runtime/logging.js";
import type { Manager } from "../runtime/manager.js";
import type { Predicate } from "../runtime/predicates.js";
import {
  NodeResource,
  objectKeyString,
  type ResourceDescriptor,
  SecretResource,
} from "../runtime/resource.js";
import {
  classifyDriverError,
  type DriverFailure,
  type PoolContext,
  type PoolDriver,
  type PoolGroup,
  type PoolInstance,
  type TemplateStamp,
  type TemplateVersion,
} from "./driver.js";
import {
  isInstanceAvailable,
  liveInstances,
  type MachinePoolStrategy,
  type Plan,
  type PlanAction,
  planPool,
  prunableVersions,
  resolveStrategy,
  stableStringify,
  stampIsCurrent,
  stampIsExact,
  targetStamp,
} from "./strategy.js";

// ── public types ────────────────────────────────────────────────────────────────────────────────

/** The result of parsing an object with a schema (zod's `safeParse` fits). */
export type SpecParseResult<Spec> =
  | { readonly success: true; readonly data: { readonly spec: Spec } }
  | { readonly success: false; readonly error: { readonly message: string } };

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
   * invalid spec is reported as `Ready=False/InvalidSpec` and nothing is sent to the cloud.
   */
  readonly schema?: { safeParse(data: unknown): SpecParseResult<Spec> };
}

/**
 * Options of {@link machinePoolController}.
 *
 * @typeParam Spec - the provider's InfraMachinePool `spec` type
 */
export interface MachinePoolControllerOptions<Spec> {
  /** The manager that runs the controller (its cache, client, event recorder, logger). */
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
   * When an instance counts as available (for `maxUnavailable`, provisioned and `Ready`): `instance`
   * (default) — running and passing the cloud's health check; `node` — also a Node with its
   * providerID that is Ready, read from the manager's cluster (where this project's emulator and demo
   * register Nodes; a real workload cluster needs its own client, not built in yet). `node` catches
   * instances that boot but never join, e.g. with a stale bootstrap token.
   */
  readonly readiness?: "instance" | "node";
  /** Use the driver's native rollout when it has one. Default true. */
  readonly useNativeRollout?: boolean;
  /** Re-read the cloud this often when nothing happens (drift: autoscalers, spot, users). Default 5 min. */
  readonly resyncPeriodMs?: number;
  /** Re-read the cloud this often while the pool converges. Default 10 s. */
  readonly pollIntervalMs?: number;
  /**
   * How long a published providerID stays in `providerIDList` after its instance vanished from the
   * cloud's list without being seen terminated (a lagging list must not delete a live Node). Default 30 s.
   */
  readonly missingInstanceGraceMs?: number;
  /** Parallel reconciles of different pools. Default: the manager's `--concurrency`. */
  readonly maxConcurrentReconciles?: number;
  /** Abort a reconcile that runs longer than this (the driver sees `ctx.signal`). Default 5 min. */
  readonly reconcileTimeoutMs?: number;
}

/** Condition reasons the kit sets on `Ready` (besides the driver's own failure reasons). */
export const PoolReasons = {
  /** The pool matches the MachinePool. */
  Ready: ConditionReasons.Ready,
  /** No owner MachinePool yet. */
  WaitingForOwner: "WaitingForOwner",
  /** The Cluster's infrastructure is not provisioned yet. */
  WaitingForClusterInfrastructure: "WaitingForClusterInfrastructure",
  /** The MachinePool has no bootstrap data yet. */
  WaitingForBootstrapData: "WaitingForBootstrapData",
  /** The group is being created. */
  Provisioning: "Provisioning",
  /** Instances are being added. */
  ScalingUp: ConditionReasons.ScalingUp,
  /** Instances are being removed. */
  ScalingDown: ConditionReasons.ScalingDown,
  /** Outdated instances are being replaced. */
  RollingOut: ConditionReasons.RollingOut,
  /** Instances exist but some are not available yet. */
  InstancesNotReady: "InstancesNotReady",
  /** The spec failed validation. */
  InvalidSpec: "InvalidSpec",
  /** The desired replicas are outside the group's bounds. */
  ReplicasOutOfRange: "ReplicasOutOfRange",
  /** The group reports a failure (e.g. a partial scale-up). */
  GroupFailed: "GroupFailed",
  /** The group was deleted behind our back and is still going away. */
  GroupDeleting: "GroupDeleting",
  /** The pool is being deleted. */
  Deleting: "Deleting",
  /** The driver's native rollout failed on the target template version (retried after a resync). */
  RolloutFailed: "RolloutFailed",
  /** The bootstrap data's `format` is neither `cloud-config` nor `ignition`. */
  UnsupportedBootstrapFormat: "UnsupportedBootstrapFormat",
  /** Something other than a cloud call failed (an API server write, a driver bug); retried with backoff. */
  ReconcileError: "ReconcileError",
} as const;

// ── errors ──────────────────────────────────────────────────────────────────────────────────────

class StepFailure extends Error {
  constructor(
    readonly step: string,
    readonly failure: DriverFailure,
    readonly original: unknown,
  ) {
    super(`${step}: ${failure.kind}: ${failure.reason}: ${failure.message}`, { cause: original });
    this.name = "StepFailure";
  }
}

/** A transient failure handed to the runtime for backoff, after the status was written. */
class TransientPoolError extends Error {
  constructor(message: string, cause: unknown) {
    super(message, { cause });
    this.name = "TransientPoolError";
  }
}

interface ReadyState {
  status: ConditionStatus;
  reason: string;
  message: string;
}

interface Outcome {
  ready: ReadyState;
  result: ReconcileResult;
  error?: Error;
}

type ImpObject = KubernetesObject & {
  spec?: Record<string, unknown> & { providerIDList?: string[] };
  status?: Record<string, unknown>;
};

const MIN_DELAY_MS = 1;

function positive(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isFinite(value) || value <= 0) {
    throw new RangeError(
      `machinePoolController: ${name} must be a positive number of milliseconds, got ${value}`,
    );
  }
  return value;
}

function withoutVolatile(obj: KubernetesObject): string {
  const { resourceVersion: _rv, managedFields: _mf, ...metadata } = obj.metadata ?? {};
  return stableStringify({ metadata, spec: (obj as { spec?: unknown }).spec });
}

/** Passes creates, deletes, and updates that change metadata or spec (not status-only updates). */
function specOrMetadataChanged<T extends KubernetesObject>(): Predicate<T> {
  return { update: (oldObj, newObj) => withoutVolatile(oldObj) !== withoutVolatile(newObj) };
}

function describeError(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

// ── the controller ──────────────────────────────────────────────────────────────────────────────

/**
 * Builds and registers the InfraMachinePool controller of a provider: give it the provider's
 * {@link PoolDriver} and kind, and it reconciles every pool of that kind.
 *
 * What it does, in order, for each pool (contract §2.9):
 * 1. Waits for the owner MachinePool (a pool deleted before it ever had one just loses the finalizer),
 *    then the Cluster.
 * 2. Adds the finalizer and persists it before any cloud call.
 * 3. Pause (`Cluster.spec.paused` or the `cluster.x-k8s.io/paused` annotation): sets `Paused=True`
 *    and makes no cloud call, not even for deletion; unpausing is picked up through the Cluster watch.
 * 4. Deleting: deletes the group (non-blocking), polls until it is gone, deletes the template, drops
 *    the finalizer. NotFound counts as done at every step.
 * 5. Waits for the Cluster's infrastructure and the bootstrap data (unless `bootstrapData: "none"`).
 * 6. Ensures a template version stamped with the spec and bootstrap hashes (token-only rotation: new
 *    version, group moved to it, no instance replaced; new secret name or template inputs: rollout),
 *    the group and its settings, the replica count (externally managed: the cloud's size is written
 *    back to `MachinePool.spec.replicas`, the size is never set), then scales and rolls with
 *    maxSurge/maxUnavailable and the delete policy — or the driver's native rollout.
 * 7. Publishes `providerIDList` (sorted, unique, every non-terminated instance), `replicas`,
 *    provisioned (sticky) and the `Ready` condition through the patch helper: nothing is written
 *    when nothing changed.
 *
 * Failures are typed by the driver ({@link DriverFailure}): `waiting` and `throttled` requeue after
 * their delay, `transient` backs off, `terminal` is reported as `Ready=False` with the driver's
 * reason and retried at the next resync or change. Every cloud change is an Event and a log line with
 * its reason.
 *
 * Watches: the kind itself (status-only updates ignored), MachinePools (to their
 * `infrastructureRef`), Clusters (to every pool labelled with the cluster's name, on pause and
 * infrastructure transitions), and bootstrap Secrets labelled `cluster.x-k8s.io/cluster-name` (to
 * the pools whose MachinePool names them).
 *
 * @example
 * ```ts
 * const manager = new Manager({ kubeConfig, name: "foo-provider" });
 * machinePoolController(fooDriver, {
 *   manager,
 *   kind: FooMachinePool,                          // from defineInfraMachinePool
 *   strategy: { maxSurge: 1, maxUnavailable: 0 },   // pools may override with spec.strategy
 * });
 * await manager.start();
 * ```
 */
export function machinePoolController<Spec, Settings>(
  driver: PoolDriver<Spec, Settings>,
  options: MachinePoolControllerOptions<Spec>,
): Controller {
  const reconciler = new PoolReconciler(driver, options);
  return reconciler.register();
}

interface LoadedPool {
  imp: ImpObject;
  machinePool: MachinePool | undefined;
  cluster: Cluster | undefined;
  clusterName: string | undefined;
}

class PoolReconciler<Spec, Settings> {
  readonly #driver: PoolDriver<Spec, Settings>;
  readonly #options: MachinePoolControllerOptions<Spec>;
  readonly #resource: ResourceDescriptor<ImpObject>;
  readonly #finalizer: string;
  readonly #name: string;
  readonly #resyncMs: number;
  readonly #pollMs: number;
  readonly #apiVersion: string;
  readonly #missingGraceMs: number;
  readonly #missingSince = new Map<string, Map<string, number>>();
  readonly #failedRollouts = new Map<string, { id: string; at: number }>();

  constructor(driver: PoolDriver<Spec, Settings>, options: MachinePoolControllerOptions<Spec>) {
    if (!driver || typeof driver.getGroup !== "function") {
      throw new TypeError(
        "machinePoolController: the first argument must be a PoolDriver (an object with getGroup, createGroup, …)",
      );
    }
    if (!options?.manager) {
      throw new TypeError("machinePoolController: options.manager is required (a runtime Manager)");
    }
    const kind = options.kind;
    if (!kind?.group || !kind.kind || !kind.plural) {
      throw new TypeError(
        "machinePoolController: options.kind needs group, kind and plural (pass the result of defineInfraMachinePool)",
      );
    }
    const version =
      kind.storageVersion ?? (kind.versions ? kind.versions[kind.versions.length - 1] : undefined);
    if (!version) {
      throw new TypeError(
        `machinePoolController: options.kind ${kind.kind} needs storageVersion or versions`,
      );
    }
    this.#driver = driver;
    this.#options = options;
    this.#resource = {
      group: kind.group,
      version,
      kind: kind.kind,
      plural: kind.plural,
      namespaced: true,
      hasStatus: true,
    };
    this.#apiVersion = `${kind.group}/${version}`;
    this.#finalizer = kind.finalizer ?? finalizerFor(kind.kind, kind.group);
    this.#name = options.name ?? kind.kind.toLowerCase();
    this.#resyncMs = positive("resyncPeriodMs", options.resyncPeriodMs, 5 * 60_000);
    this.#pollMs = positive("pollIntervalMs", options.pollIntervalMs, 10_000);
    this.#missingGraceMs = positive(
      "missingInstanceGraceMs",
      options.missingInstanceGraceMs,
      30_000,
    );
    if (
      options.bootstrapData !== undefined &&
      options.bootstrapData !== "required" &&
      options.bootstrapData !== "none"
    ) {
      throw new TypeError(
        `machinePoolController: bootstrapData must be "required" or "none", got ${JSON.stringify(options.bootstrapData)}`,
      );
    }
  }

  register(): Controller {
    const manager = this.#options.manager;
    const kind = this.#options.kind;
    const poolsOfCluster = async (cluster: Cluster) => {
      const namespace = cluster.metadata?.namespace ?? "";
      const name = cluster.metadata?.name ?? "";
      const pools = await manager.cache.byIndex(
        this.#resource,
        CLUSTER_NAME_INDEX,
        objectKeyString({ namespace, name }),
      );
      return pools.map((pool) => ({ namespace, name: pool.metadata?.name ?? "" }));
    };
    const poolOfMachinePool = (mp: MachinePool) => {
      const ref = readMachinePool(mp).infrastructureRef;
      const namespace = mp.metadata?.namespace;
      if (!ref || !namespace || ref.apiGroup !== kind.group || ref.kind !== kind.kind) return [];
      return [{ namespace, name: ref.name }];
    };
    const poolsOfSecret = async (secret: V1Secret) => {
      const namespace = secret.metadata?.namespace;
      const name = secret.metadata?.name;
      if (!namespace || !name) return [];
      const pools = await manager.cache.list(MachinePoolResource, { namespace });
      return pools
        .filter((mp) => readMachinePool(mp).bootstrapDataSecretName === name)
        .flatMap(poolOfMachinePool);
    };
    const clusterTransitions: Predicate<Cluster> = {
      update: (oldObj, newObj) => {
        const before = readCluster(oldObj);
        const after = readCluster(newObj);
        return (
          before.paused !== after.paused ||
          before.infrastructureProvisioned !== after.infrastructureProvisioned
        );
      },
      delete: () => false,
    };
    const builder = manager
      .controller(this.#name)
      .for(this.#resource, { predicates: [specOrMetadataChanged()] })
      .watches(MachinePoolResource, poolOfMachinePool, {
        predicates: [specOrMetadataChanged()],
      })
      .watches(ClusterResource, poolsOfCluster, { predicates: [clusterTransitions] })
      .withOptions({
        reconcileTimeoutMs: positive(
          "reconcileTimeoutMs",
          this.#options.reconcileTimeoutMs,
          5 * 60_000,
        ),
        ...(this.#options.maxConcurrentReconciles !== undefined
          ? { maxConcurrentReconciles: this.#options.maxConcurrentReconciles }
          : {}),
      });
    if (this.#options.readiness === "node") {
      const poolsOfNode = async (node: V1Node) => {
        const providerID = node.spec?.providerID;
        if (!providerID) return [];
        const pools = await manager.cache.list(this.#resource);
        return pools
          .filter((pool) => pool.spec?.providerIDList?.includes(providerID))
          .map((pool) => ({
            namespace: pool.metadata?.namespace ?? "",
            name: pool.metadata?.name ?? "",
          }));
      };
      builder.watches(NodeResource, poolsOfNode, {
        predicates: [
          {
            update: (oldNode, newNode) =>
              nodeIsReady(oldNode) !== nodeIsReady(newNode) ||
              oldNode.spec?.providerID !== newNode.spec?.providerID,
          },
        ],
      });
    }
    if (this.#options.bootstrapData !== "none") {
      builder.watches(SecretResource, poolsOfSecret, {
        predicates: [{ delete: () => false }],
        cache: { labelSelector: "cluster.x-k8s.io/cluster-name" },
      });
    }
    return builder.complete((request, context) =>
      this.reconcile({ namespace: request.namespace ?? "", name: request.name }, context),
    );
  }

  // ── reconcile ─────────────────────────────────────────────────────────────────────────────

  async reconcile(
    key: { namespace: string; name: string },
    rc: ReconcileContext,
  ): Promise<ReconcileResult | undefined> {
    const cached = await rc.cache.get(this.#resource, key);
    if (!cached) return undefined;
    const imp = structuredClone(cached);
    const deleting = Boolean(imp.metadata?.deletionTimestamp);

    // Owner MachinePool: core adopts the pool; its update event brings us back.
    const ownerRef = findOwnerMachinePoolRef(imp as never);
    if (!ownerRef) {
      if (deleting && hasFinalizer(imp, this.#finalizer)) {
        const patch = PatchHelper.snapshot(imp, { resource: this.#resource });
        removeFinalizer(imp, this.#finalizer);
        await patch.apply(rc.client, imp);
        rc.log.info("pool deleted before it had an owner MachinePool; finalizer removed");
      } else {
        rc.log.debug("waiting for core to set the owner MachinePool");
      }
      return undefined;
    }
    const machinePool = await rc.cache.get(MachinePoolResource, {
      namespace: key.namespace,
      name: ownerRef.name,
    });
    const clusterName =
      imp.metadata?.labels?.["cluster.x-k8s.io/cluster-name"] ??
      (machinePool ? readMachinePool(machinePool).clusterName : undefined);
    const cluster = clusterName
      ? await rc.cache.get(ClusterResource, { namespace: key.namespace, name: clusterName })
      : undefined;
    const log = rc.log.child({
      pool: `${key.namespace}/${key.name}`,
      ...(clusterName ? { cluster: clusterName } : {}),
    });
    if (!deleting && (!machinePool || !cluster)) {
      log.debug(
        { machinePool: Boolean(machinePool), cluster: Boolean(cluster) },
        "waiting for the MachinePool and the Cluster",
      );
      return undefined;
    }

    // Finalizer first, persisted before any cloud call.
    if (
      !deleting &&
      (await ensureFinalizer(rc.client, imp, this.#finalizer, { resource: this.#resource }))
    ) {
      log.info({ finalizer: this.#finalizer }, "finalizer added");
      return undefined;
    }
    if (deleting && !hasFinalizer(imp, this.#finalizer)) return undefined;

    const patch = PatchHelper.snapshot(imp, { resource: this.#resource });
    const paused = updatePausedCondition(cluster ?? null, imp as never);
    if (paused.mustPersistNow) {
      await patch.apply(rc.client, imp, { ownedConditions: [ConditionTypes.Paused] });
      log.info({ paused: paused.isPaused }, paused.isPaused ? "paused" : "unpaused");
      // Our own status write is filtered out of the watch: come back ourselves.
      return paused.isPaused ? undefined : { requeueAfter: MIN_DELAY_MS };
    }
    if (paused.isPaused) return undefined;

    const loaded: LoadedPool = { imp, machinePool, cluster, clusterName };
    let outcome: Outcome;
    try {
      outcome = deleting
        ? await this.#reconcileDelete(loaded, rc, log)
        : await this.#reconcileNormal(loaded, rc, log);
    } catch (error) {
      outcome = this.#outcomeOfError(error, log);
    }
    if (!deleting || hasFinalizer(imp, this.#finalizer)) {
      setCondition(imp as never, { type: ConditionTypes.Ready, ...outcome.ready });
    }
    await patch.apply(rc.client, imp, {
      ownedConditions: [ConditionTypes.Ready, ConditionTypes.Paused],
    });
    if (outcome.error) throw outcome.error;
    return outcome.result;
  }

  #outcomeOfError(error: unknown, log: RuntimeLogger): Outcome {
    if (!(error instanceof StepFailure)) {
      log.error({ err: error }, "reconcile failed");
      return {
        ready: {
          status: "False",
          reason: PoolReasons.ReconcileError,
          message: describeError(error),
        },
        result: {},
        error: error instanceof Error ? error : new Error(String(error)),
      };
    }
    const { failure, step } = error;
    const ready: ReadyState = {
      status: "False",
      reason: failure.reason,
      message: `${step}: ${failure.message}`,
    };
    switch (failure.kind) {
      case "waiting":
        log.info(
          { step, reason: failure.reason, retryAfterMs: failure.retryAfterMs },
          failure.message,
        );
        return { ready, result: { requeueAfter: Math.max(MIN_DELAY_MS, failure.retryAfterMs) } };
      case "throttled":
        log.warn(
          { step, reason: failure.reason, retryAfterMs: failure.retryAfterMs },
          "cloud throttled the request",
        );
        return { ready, result: { requeueAfter: Math.max(MIN_DELAY_MS, failure.retryAfterMs) } };
      case "terminal":
        log.error({ step, reason: failure.reason }, failure.message);
        return { ready, result: { requeueAfter: this.#resyncMs } };
      default: {
        log.warn({ step, reason: failure.reason, err: error.original }, "cloud call failed");
        const retryAfterMs = failure.kind === "transient" ? failure.retryAfterMs : undefined;
        if (retryAfterMs !== undefined) {
          return { ready, result: { requeueAfter: Math.max(MIN_DELAY_MS, retryAfterMs) } };
        }
        return { ready, result: {}, error: new TransientPoolError(error.message, error.original) };
      }
    }
  }

  async #call<T>(step: string, run: () => Promise<T>): Promise<T> {
    try {
      return await run();
    } catch (error) {
      throw new StepFailure(step, classifyDriverError(this.#driver, error), error);
    }
  }

  /** Like {@link #call}, but NotFound counts as done. */
  async #callIgnoringNotFound(step: string, run: () => Promise<unknown>): Promise<void> {
    try {
      await run();
    } catch (error) {
      const failure = classifyDriverError(this.#driver, error);
      if (failure.kind !== "notFound") throw new StepFailure(step, failure, error);
    }
  }

  #context(loaded: LoadedPool, spec: Spec, signal: AbortSignal): PoolContext<Spec> {
    const mp = loaded.machinePool ? readMachinePool(loaded.machinePool) : undefined;
    const meta = loaded.imp.metadata ?? {};
    return {
      pool: {
        namespace: meta.namespace ?? "",
        name: meta.name ?? "",
        uid: meta.uid ?? "",
        clusterName: loaded.clusterName ?? "",
      },
      spec,
      version: mp?.version,
      failureDomains: [...(mp?.failureDomains ?? [])],
      signal,
    };
  }

  #event(
    rc: ReconcileContext,
    log: RuntimeLogger,
    loaded: LoadedPool,
    reason: string,
    message: string,
    fields: Record<string, unknown> = {},
    type: "Normal" | "Warning" = "Normal",
  ): void {
    const obj = { ...loaded.imp, apiVersion: this.#apiVersion, kind: this.#resource.kind };
    rc.recorder.event(obj, type, reason, message);
    log.info({ reason, ...fields }, message);
  }

  // ── deletion ──────────────────────────────────────────────────────────────────────────────

  async #reconcileDelete(
    loaded: LoadedPool,
    rc: ReconcileContext,
    log: RuntimeLogger,
  ): Promise<Outcome> {
    // Deletion needs no valid spec and no MachinePool or Cluster (they may be gone already).
    const ctx = this.#context(loaded, (loaded.imp.spec ?? {}) as Spec, rc.signal);
    let group: PoolGroup<Settings> | undefined;
    try {
      group = await this.#call("getGroup", () => this.#driver.getGroup(ctx));
    } catch (error) {
      if (!(error instanceof StepFailure) || error.failure.kind !== "notFound") throw error;
    }
    if (group) {
      if (group.status !== "deleting") {
        await this.#callIgnoringNotFound("deleteGroup", () => this.#driver.deleteGroup(ctx));
        this.#event(rc, log, loaded, "GroupDeleting", `deleting group ${group.id}`, {
          group: group.id,
          instances: liveInstances(group.instances).length,
        });
      }
      const remaining = liveInstances(group.instances).length;
      return {
        ready: {
          status: "False",
          reason: PoolReasons.Deleting,
          message: `waiting for group ${group.id} to be deleted (${remaining} instance${remaining === 1 ? "" : "s"} left)`,
        },
        result: { requeueAfter: this.#pollMs },
      };
    }
    await this.#callIgnoringNotFound("deleteTemplate", () => this.#driver.deleteTemplate(ctx));
    removeFinalizer(loaded.imp, this.#finalizer);
    this.#missingSince.delete(`${ctx.pool.namespace}/${ctx.pool.name}`);
    this.#event(rc, log, loaded, "Deleted", "group and template deleted; finalizer removed");
    return { ready: { status: "False", reason: PoolReasons.Deleting, message: "" }, result: {} };
  }

  // ── normal flow ───────────────────────────────────────────────────────────────────────────

  async #reconcileNormal(
    loaded: LoadedPool,
    rc: ReconcileContext,
    log: RuntimeLogger,
  ): Promise<Outcome> {
    const machinePool = loaded.machinePool as MachinePool;
    const cluster = readCluster(loaded.cluster as Cluster);
    const mp = readMachinePool(machinePool);
    const waiting = (reason: string, message: string): Outcome => ({
      ready: { status: "False", reason, message },
      result: {},
    });

    if (
      (this.#options.waitForClusterInfrastructure ?? true) &&
      !cluster.infrastructureProvisioned
    ) {
      return waiting(
        PoolReasons.WaitingForClusterInfrastructure,
        `Cluster ${cluster.name} infrastructure is not provisioned yet`,
      );
    }

    // The spec, validated.
    let spec = (loaded.imp.spec ?? {}) as Spec;
    const schema = this.#options.kind.schema;
    if (schema) {
      const parsed = schema.safeParse(loaded.imp);
      if (!parsed.success) {
        log.error({ reason: PoolReasons.InvalidSpec }, parsed.error.message);
        return {
          ready: {
            status: "False",
            reason: PoolReasons.InvalidSpec,
            message: parsed.error.message,
          },
          result: {},
        };
      }
      spec = parsed.data.spec;
    }

    // Bootstrap data.
    let userData = "";
    let format: "cloud-config" | "ignition" = "cloud-config";
    let bootstrapRef = "";
    if (this.#options.bootstrapData !== "none") {
      if (!mp.bootstrapDataSecretName) {
        return waiting(
          PoolReasons.WaitingForBootstrapData,
          `MachinePool ${mp.name} has no bootstrap data secret yet`,
        );
      }
      const reader: SecretReader = async (namespace, name) => {
        const cachedSecret = await rc.cache.get(SecretResource, { namespace, name });
        if (cachedSecret) return cachedSecret.data ? { data: cachedSecret.data } : {};
        try {
          const secret = await rc.client.get(SecretResource, { namespace, name });
          return secret.data ? { data: secret.data } : {};
        } catch (error) {
          if (isNotFound(error)) return undefined;
          throw error;
        }
      };
      let data: Awaited<ReturnType<typeof readBootstrapData>>;
      try {
        data = await readBootstrapData(reader, machinePool);
      } catch (error) {
        return {
          ready: {
            status: "False",
            reason: PoolReasons.WaitingForBootstrapData,
            message: describeError(error),
          },
          result: { requeueAfter: this.#pollMs },
        };
      }
      if (!data) {
        return waiting(PoolReasons.WaitingForBootstrapData, "no bootstrap data yet");
      }
      userData = data.text();
      const dataFormat = data.format;
      if (dataFormat !== "cloud-config" && dataFormat !== "ignition") {
        return {
          ready: {
            status: "False",
            reason: PoolReasons.UnsupportedBootstrapFormat,
            message: `bootstrap data format ${JSON.stringify(data.format)} is neither cloud-config nor ignition`,
          },
          result: { requeueAfter: this.#resyncMs },
        };
      }
      format = dataFormat === "ignition" ? "ignition" : "cloud-config";
      bootstrapRef = `${data.secretRef.namespace}/${data.secretRef.name}`;
    }

    const ctx = this.#context(loaded, spec, rc.signal);
    const target = targetStamp(this.#driver.templateInputs(ctx), userData, bootstrapRef);
    const settings = this.#driver.groupSettings(ctx);

    // Template and group, read in one pass.
    let versions = await this.#call("getTemplate", () => this.#driver.getTemplate(ctx));
    let group = await this.#call("getGroup", () => this.#driver.getGroup(ctx));
    if (group?.status === "deleting") {
      // Publish what goes away, so its IDs leave the list as the instances terminate.
      this.#publish(loaded.imp, group, false);
      return {
        ready: {
          status: "False",
          reason: PoolReasons.GroupDeleting,
          message: `group ${group.id} is being deleted outside the controller; it is recreated once gone`,
        },
        result: { requeueAfter: this.#pollMs },
      };
    }

    // The template version to run: the newest, if its stamp is exactly the target.
    let newest: TemplateVersion | undefined = versions[versions.length - 1];
    if (!newest || !stampIsExact(newest.stamp, target)) {
      const previous = newest;
      // Prune first: a version limit would otherwise make the create fail for good.
      await this.#prune(ctx, versions, group, rc, log, loaded);
      newest = await this.#call("createTemplateVersion", () =>
        this.#driver.createTemplateVersion(ctx, { userData, format, stamp: target }),
      );
      versions = [...versions, newest];
      const why = !previous
        ? "initial template"
        : stampIsCurrent(previous.stamp, target)
          ? "bootstrap data changed (token rotation): instances are kept"
          : describeStampChange(previous.stamp, target);
      this.#event(
        rc,
        log,
        loaded,
        "TemplateVersionCreated",
        `template version ${newest.version}: ${why}`,
        {
          version: newest.version,
        },
      );
    }
    const targetVersion = newest;
    const stampOf = new Map(versions.map((v) => [v.version, v.stamp]));
    const isUpToDate = (instance: PoolInstance) =>
      instance.templateVersion !== undefined &&
      stampIsCurrent(stampOf.get(instance.templateVersion), target);

    const external = mp.replicasManagedByExternalAutoscaler;
    if (!group) {
      const replicas = external ? undefined : (mp.replicas ?? 1);
      await this.#call("createGroup", () =>
        this.#driver.createGroup(ctx, {
          replicas,
          templateVersion: targetVersion.version,
          settings,
        }),
      );
      this.#event(
        rc,
        log,
        loaded,
        "GroupCreated",
        `created group with ${replicas ?? "the cloud's default number of"} replicas on template version ${targetVersion.version}`,
        { replicas, version: targetVersion.version },
      );
      return {
        ready: { status: "False", reason: PoolReasons.Provisioning, message: "group created" },
        result: { requeueAfter: this.#pollMs },
      };
    }

    // Replica intent.
    const desired = external ? group.desiredReplicas : (mp.replicas ?? 1);
    if (external && mp.replicas !== group.desiredReplicas) {
      const mpCopy = structuredClone(machinePool);
      const mpPatch = PatchHelper.snapshot(mpCopy, {
        resource: MachinePoolResource,
      });
      mpCopy.spec = { ...mpCopy.spec, replicas: group.desiredReplicas } as MachinePool["spec"];
      await mpPatch.apply(rc.client, mpCopy);
      this.#event(
        rc,
        log,
        loaded,
        "ReplicasSynced",
        `MachinePool replicas set to ${group.desiredReplicas} from the cloud (managed by an external autoscaler)`,
        { from: mp.replicas, to: group.desiredReplicas },
      );
    }

    // Settings and template of the group (new launches only; no instance is touched).
    const update: { templateVersion?: string; settings?: Settings } = {};
    const settingsDrift = stableStringify(group.settings) !== stableStringify(settings);
    if (settingsDrift) update.settings = settings;
    if (group.templateVersion !== targetVersion.version) {
      update.templateVersion = targetVersion.version;
    }
    if (update.settings !== undefined || update.templateVersion !== undefined) {
      await this.#call("updateGroup", () => this.#driver.updateGroup(ctx, update));
      const parts: string[] = [];
      if (update.settings !== undefined) parts.push("settings drifted");
      if (update.templateVersion !== undefined)
        parts.push(`launches now use template version ${update.templateVersion}`);
      this.#event(rc, log, loaded, "GroupUpdated", parts.join("; "), {
        templateVersion: update.templateVersion,
        settings: update.settings !== undefined,
      });
      if (update.settings !== undefined) {
        // Bounds may have changed: plan with the cloud's view next time.
        return {
          ready: {
            status: "False",
            reason: PoolReasons.ScalingUp,
            message: "group settings updated",
          },
          result: { requeueAfter: this.#pollMs },
        };
      }
      group = { ...group, templateVersion: targetVersion.version };
    }

    // The desired size must fit the group's bounds (a cloud 400 on every loop helps nobody).
    if (
      !external &&
      ((group.minReplicas !== undefined && desired < group.minReplicas) ||
        (group.maxReplicas !== undefined && desired > group.maxReplicas))
    ) {
      this.#publish(loaded.imp, group, false);
      return {
        ready: {
          status: "False",
          reason: PoolReasons.ReplicasOutOfRange,
          message: `MachinePool replicas ${desired} is outside the group's bounds [${group.minReplicas ?? 0}, ${group.maxReplicas ?? "∞"}]; change the replicas or the pool's size limits`,
        },
        result: { requeueAfter: this.#resyncMs },
      };
    }

    const strategy = resolveStrategy(
      desired,
      external,
      this.#options.strategy,
      this.#strategyOf(spec),
    );
    const native =
      this.#driver.nativeRollout && (this.#options.useNativeRollout ?? true)
        ? this.#driver.nativeRollout
        : undefined;
    const plan = planPool({
      desired,
      groupDesired: group.desiredReplicas,
      instances: group.instances,
      isUpToDate,
      isAvailable: await this.#availability(rc),
      strategy,
      externallyManaged: external,
      skipReplacement: native !== undefined,
    });
    const outdated = liveInstances(group.instances).filter((i) => !isUpToDate(i)).length;

    for (const action of plan.actions) await this.#execute(ctx, action, rc, log, loaded);

    // Status: every instance that is not terminated, provisioned once the pool first reaches its size.
    const provisionedNow = plan.available >= desired && group.status !== "creating";
    const lingering = this.#publish(loaded.imp, group, provisionedNow);

    let rolloutNote: string | undefined;
    if (native && outdated > 0) {
      rolloutNote = await this.#nativeRollout(
        ctx,
        native,
        {
          replicas: desired,
          maxSurge: strategy.maxSurge,
          maxUnavailable: strategy.maxUnavailable,
        },
        targetVersion,
        stampOf,
        target,
        rc,
        log,
        loaded,
      );
    } else if (plan.outdated === 0 && plan.actions.length === 0) {
      await this.#prune(ctx, versions, group, rc, log, loaded);
    }

    if (group.status === "failed") {
      return {
        ready: {
          status: "False",
          reason: PoolReasons.GroupFailed,
          message: group.message ?? `group ${group.id} reports a failure`,
        },
        result: { requeueAfter: this.#pollMs },
      };
    }
    const converged =
      plan.converged && outdated === 0 && plan.actions.length === 0 && lingering === 0;
    if (converged) {
      return {
        ready: { status: "True", reason: PoolReasons.Ready, message: "" },
        result: { requeueAfter: this.#resyncMs },
      };
    }
    return {
      ready: progressState(desired, plan, outdated, rolloutNote),
      result: { requeueAfter: this.#pollMs },
    };
  }

  /** Running and healthy; with `readiness: "node"` also a Ready Node with the instance's providerID. */
  async #availability(rc: ReconcileContext): Promise<(instance: PoolInstance) => boolean> {
    if (this.#options.readiness !== "node") return isInstanceAvailable;
    const ready = new Set(
      (await rc.cache.list(NodeResource))
        .filter(nodeIsReady)
        .map((node) => node.spec?.providerID)
        .filter((id): id is string => id !== undefined),
    );
    return (instance) => isInstanceAvailable(instance) && ready.has(instance.providerID);
  }

  #strategyOf(spec: Spec): MachinePoolStrategy | undefined {
    if (this.#options.strategyOf) return this.#options.strategyOf(spec);
    const candidate = (spec as { strategy?: unknown } | undefined)?.strategy;
    return candidate && typeof candidate === "object"
      ? (candidate as MachinePoolStrategy)
      : undefined;
  }

  /**
   * Publishes every instance that is not terminated. An ID that was published before and is now
   * missing from the cloud's list altogether (not even as terminated) is kept for
   * `missingInstanceGraceMs`: a list that lags must not make core delete a live Node. Returns how many
   * such IDs were kept.
   */
  #publish(imp: ImpObject, group: PoolGroup<Settings>, provisioned: boolean): number {
    const ids = new Set(
      group.instances
        .filter((i) => i.state !== "terminated" && i.providerID !== "")
        .map((i) => i.providerID),
    );
    const listed = new Set(group.instances.map((i) => i.providerID));
    const key = `${imp.metadata?.namespace ?? ""}/${imp.metadata?.name ?? ""}`;
    const previous = imp.spec?.providerIDList ?? [];
    const missing = this.#missingSince.get(key) ?? new Map<string, number>();
    const now = Date.now();
    let kept = 0;
    for (const id of previous) {
      if (listed.has(id)) continue;
      const since = missing.get(id) ?? now;
      missing.set(id, since);
      if (now - since < this.#missingGraceMs) {
        ids.add(id);
        kept++;
      }
    }
    for (const id of missing.keys()) {
      if (listed.has(id) || !previous.includes(id) || !ids.has(id)) missing.delete(id);
    }
    if (missing.size > 0) this.#missingSince.set(key, missing);
    else this.#missingSince.delete(key);
    setPoolStatus(imp as never, { providerIDs: ids, replicas: ids.size, ready: provisioned });
    return kept;
  }

  async #execute(
    ctx: PoolContext<Spec>,
    action: PlanAction,
    rc: ReconcileContext,
    log: RuntimeLogger,
    loaded: LoadedPool,
  ): Promise<void> {
    if (action.kind === "setReplicas") {
      await this.#call("updateGroup", () =>
        this.#driver.updateGroup(ctx, { replicas: action.replicas }),
      );
      const verb =
        action.reason === "Surge"
          ? `surging to ${action.replicas} replicas for the rollout`
          : action.reason === "ScaleUp"
            ? `scaling up to ${action.replicas} replicas`
            : `scaling down to ${action.replicas} replicas`;
      this.#event(
        rc,
        log,
        loaded,
        action.reason === "ScaleDown" ? "ScalingDown" : "ScalingUp",
        verb,
        {
          replicas: action.replicas,
        },
      );
      return;
    }
    await this.#call("deleteInstance", () =>
      this.#driver.deleteInstance(ctx, action.instance, action.mode),
    );
    const why =
      action.reason === "Rollout"
        ? `replacing outdated instance ${action.instance.id} (template version ${action.instance.templateVersion ?? "unknown"})`
        : `removing instance ${action.instance.id} to scale down`;
    this.#event(
      rc,
      log,
      loaded,
      action.reason === "Rollout" ? "InstanceReplaced" : "InstanceDeleted",
      `${why} (${action.mode})`,
      { instance: action.instance.id, mode: action.mode },
    );
  }

  async #prune(
    ctx: PoolContext<Spec>,
    versions: readonly TemplateVersion[],
    group: PoolGroup<Settings> | undefined,
    rc: ReconcileContext,
    log: RuntimeLogger,
    loaded: LoadedPool,
  ): Promise<void> {
    const prunable = prunableVersions(versions, group?.templateVersion, group?.instances ?? []);
    if (prunable.length === 0) return;
    try {
      await this.#call("deleteTemplate", () => this.#driver.deleteTemplate(ctx, prunable));
      this.#event(
        rc,
        log,
        loaded,
        "TemplateVersionsPruned",
        `deleted unused template versions ${prunable.join(", ")}`,
        {
          versions: prunable,
        },
      );
    } catch (error) {
      // A version still in use (the cloud knows better) is pruned on a later pass.
      if (error instanceof StepFailure && error.failure.kind === "waiting") {
        log.debug(
          { versions: prunable, reason: error.failure.reason },
          "template versions still in use",
        );
        return;
      }
      throw error;
    }
  }

  async #nativeRollout(
    ctx: PoolContext<Spec>,
    native: NonNullable<PoolDriver<Spec, Settings>["nativeRollout"]>,
    limits: { replicas: number; maxSurge: number; maxUnavailable: number },
    targetVersion: TemplateVersion,
    stampOf: ReadonlyMap<string, TemplateStamp | undefined>,
    target: TemplateStamp,
    rc: ReconcileContext,
    log: RuntimeLogger,
    loaded: LoadedPool,
  ): Promise<string> {
    const status = await this.#call("nativeRollout.get", () => native.get(ctx));
    if (status?.state === "running") {
      const started = status.startedWithVersion;
      const stale =
        started !== undefined &&
        started !== targetVersion.version &&
        !stampIsCurrent(stampOf.get(started), target);
      if (stale) {
        await this.#call("nativeRollout.cancel", () => native.cancel(ctx));
        this.#event(
          rc,
          log,
          loaded,
          "RolloutCancelled",
          `cancelled rollout ${status.id}: it started with template version ${started}, the pool now needs ${targetVersion.version}`,
          { rollout: status.id },
        );
        return "cancelling a stale rollout";
      }
      return `native rollout ${status.id} running${status.percentComplete !== undefined ? ` (${status.percentComplete}%)` : ""}`;
    }
    if (status?.state === "cancelling") return `waiting for rollout ${status.id} to cancel`;
    const poolKey = `${ctx.pool.namespace}/${ctx.pool.name}`;
    if (status?.state === "failed" && status.startedWithVersion === targetVersion.version) {
      // Restarting a rollout that failed on this very version at once would only fail again:
      // report it and try again after a resync period.
      const failedAt = this.#failedRollouts.get(poolKey);
      const now = Date.now();
      if (failedAt?.id !== status.id) this.#failedRollouts.set(poolKey, { id: status.id, at: now });
      if (failedAt?.id !== status.id || now - failedAt.at < this.#resyncMs) {
        throw new StepFailure(
          "nativeRollout",
          {
            kind: "terminal",
            reason: PoolReasons.RolloutFailed,
            message: `rollout ${status.id} to template version ${targetVersion.version} failed: ${status.message ?? "no reason given"}; retrying after the resync period`,
          },
          undefined,
        );
      }
    }
    this.#failedRollouts.delete(poolKey);
    await this.#call("nativeRollout.start", () => native.start(ctx, limits));
    this.#event(
      rc,
      log,
      loaded,
      "RolloutStarted",
      `started the cloud's rolling replacement to template version ${targetVersion.version}${status?.state === "failed" ? ` (previous rollout failed: ${status.message ?? "no reason given"})` : ""}`,
      { version: targetVersion.version },
    );
    return "native rollout started";
  }
}

function nodeIsReady(node: V1Node): boolean {
  return node.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") === true;
}

function describeStampChange(previous: TemplateStamp | undefined, target: TemplateStamp): string {
  if (!previous) return "the previous version has no stamp: rolling out";
  const parts: string[] = [];
  if (previous.specHash !== target.specHash) parts.push("template inputs changed");
  if (previous.bootstrapRef !== target.bootstrapRef) parts.push("bootstrap secret changed");
  return `${parts.join(" and ")}: rolling out`;
}

function progressState(
  desired: number,
  plan: Plan,
  outdated: number,
  rolloutNote: string | undefined,
): ReadyState {
  if (outdated > 0) {
    return {
      status: "False",
      reason: PoolReasons.RollingOut,
      message: `${outdated} of ${plan.live} instances outdated${plan.blockedByAvailability ? "; waiting for new instances to become available" : ""}${rolloutNote ? `; ${rolloutNote}` : ""}`,
    };
  }
  if (plan.live < desired) {
    return {
      status: "False",
      reason: PoolReasons.ScalingUp,
      message: `${plan.live} of ${desired} instances`,
    };
  }
  if (plan.live > desired) {
    return {
      status: "False",
      reason: PoolReasons.ScalingDown,
      message: `${plan.live} instances, ${desired} desired`,
    };
  }
  return {
    status: "False",
    reason: PoolReasons.InstancesNotReady,
    message: `${plan.available} of ${desired} instances available`,
  };
}
