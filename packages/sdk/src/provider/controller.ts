/**
 * `machinePoolController(driver, options)`: the InfraMachinePool reconciler a provider gets for
 * implementing a {@link PoolDriver}. This module loads the scope, runs the guards (owner, watch
 * filter, finalizer, pause), runs the phase pipeline ({@link defaultPoolPhases}), applies the error
 * policy (`errors.ts`), writes the pool's conditions (`pool-status.ts`) and the pool through the patch
 * helper.
 *
 * @module
 */
import { ClusterCache } from "../clustercache/clustercache.js";
import { ConditionTypes } from "../conditions/constants.js";
import { getCondition } from "../conditions/v1beta2.js";
import { Annotations, finalizerFor, Labels } from "../contract/constants.js";
import { CoreCluster, CoreMachinePool } from "../contract/core-kinds.js";
import { ensureFinalizer, hasFinalizer, removeFinalizer } from "../contract/finalizers.js";
import { findOwnerMachinePoolRef } from "../contract/owners.js";
import { updatePausedCondition } from "../contract/pause.js";
import { readMachinePool } from "../contract/readers.js";
import { PatchHelper } from "../patch/helper.js";
import type { Controller, ReconcileContext, ReconcileResult } from "../runtime/controller.js";
import { FencedError, isNotFound } from "../runtime/errors.js";
import type { ResourceDescriptor } from "../runtime/resource.js";
import { PoolCredentialsCache } from "./credentials.js";
import type { AnyPoolDriver, PoolEnvironment } from "./driver.js";
import { type ErrorOutcome, errorPolicy, StepFailure } from "./errors.js";
import { PoolMemories } from "./memory.js";
import { BLOCK_MOVE_VALUE_PREFIX, deletedForMove, hasKitBlockMove } from "./move.js";
import {
  type MachinePoolControllerOptions,
  type ResolvedPoolOptions,
  resolvePoolOptions,
} from "./options.js";
import type { PoolPhase } from "./phase.js";
import { defaultDeletePhases, defaultPoolPhases, runPhases } from "./pipeline.js";
import { type PoolApiSources, poolApiOf } from "./pool-api.js";
import { PoolRedactions } from "./pool-redaction.js";
import { createPoolScope } from "./pool-scope.js";
import { KIT_CONDITION_TYPES, writePoolConditions } from "./pool-status.js";
import { PoolReasons } from "./reasons.js";
import type { PoolObject } from "./scope.js";
import { checkPhaseOrder, sectionsOf } from "./sections.js";
import { checkDriverModel } from "./steps/driver-shape.js";
import { watchPools } from "./watches.js";

export * from "./options.js";
export { PoolConditionTypes, type PoolReason, PoolReasons } from "./reasons.js";

const MIN_DELAY_MS = 1;

/**
 * Builds and registers the InfraMachinePool controller of a provider: give it the provider's
 * {@link PoolDriver} (or {@link GroupModelPoolDriver}) and kind, and it reconciles every pool of
 * that kind.
 *
 * What it does for each pool (contract §2.9): waits for the owner MachinePool (a pool deleted before
 * it ever had one just loses the finalizer) and the Cluster; skips pools outside the manager's watch
 * filter; persists its finalizer before any cloud call; honours pause (`Paused=True`, no cloud call,
 * not even for deletion); then runs the phases: {@link defaultDeletePhases} while deleting, else
 * {@link defaultPoolPhases} (bootstrap data, template stamp, group, scale / roll / remediate, native
 * rollout, prune, publish). Nothing is written when nothing changed.
 *
 * Failures go through one function, the error policy (`errors.ts`): `waiting` and `throttled` requeue after
 * their delay, `transient` backs off, `terminal` is `Ready=False` with the driver's reason and a
 * Warning Event, retried at the next resync or change; a failure at steady state changes nothing
 * until it persists. Runaway drivers are stopped with a named reason ({@link PoolReasons}).
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
export function machinePoolController<
  Spec,
  Settings,
  Env extends PoolEnvironment = PoolEnvironment,
>(
  driver: AnyPoolDriver<Spec, Settings, Env>,
  options: MachinePoolControllerOptions<Spec, NoInfer<Env>>,
): Controller {
  // The kit passes `ctx.credentials` and `ctx.infrastructureCluster` through untouched: what the
  // hook returned and the object of the kind the options name, which is what `Env` declares.
  return new PoolReconciler(
    driver as AnyPoolDriver<Spec, Settings>,
    options as unknown as MachinePoolControllerOptions<Spec>,
  ).register();
}

class PoolReconciler<Spec, Settings> {
  readonly #driver: AnyPoolDriver<Spec, Settings>;
  readonly #options: MachinePoolControllerOptions<Spec>;
  readonly #resolved: ResolvedPoolOptions<Spec>;
  readonly #resource: ResourceDescriptor<PoolObject>;
  readonly #finalizer: string;
  readonly #name: string;
  readonly #apiVersion: string;
  readonly #memories = new PoolMemories();
  readonly #redactions = new PoolRedactions();
  readonly #clusterCache: ClusterCache | undefined;
  readonly #credentials: PoolCredentialsCache | undefined;
  readonly #phases: readonly PoolPhase<Spec, Settings>[];
  readonly #deletePhases: readonly PoolPhase<Spec, Settings>[];
  readonly #apiSources: PoolApiSources;

  constructor(driver: AnyPoolDriver<Spec, Settings>, options: MachinePoolControllerOptions<Spec>) {
    if (!driver || typeof driver.getGroup !== "function") {
      throw new TypeError(
        "machinePoolController: the first argument must be a PoolDriver (an object with getGroup, createGroup, …)",
      );
    }
    if (!options?.manager) {
      throw new TypeError("machinePoolController: options.manager is required (a runtime Manager)");
    }
    checkDriverModel(driver);
    const kind = options.kind;
    if (!kind?.group || !kind.kind || !kind.plural) {
      throw new TypeError(
        "machinePoolController: options.kind needs group, kind and plural (pass the result of defineInfraMachinePool)",
      );
    }
    const version = kind.storageVersion ?? kind.versions?.[kind.versions.length - 1];
    if (!version) {
      throw new TypeError(
        `machinePoolController: options.kind ${kind.kind} needs storageVersion or versions`,
      );
    }
    this.#driver = driver;
    this.#options = options;
    this.#resolved = resolvePoolOptions(options);
    this.#resource = {
      group: kind.group,
      version,
      kind: kind.kind,
      plural: kind.plural,
      scope: "Namespaced",
      subresources: { status: true },
    };
    this.#apiVersion = `${kind.group}/${version}`;
    this.#finalizer = kind.finalizer ?? finalizerFor(kind.kind, kind.group);
    this.#name = options.name ?? kind.kind.toLowerCase();
    this.#clusterCache =
      options.clusterCache ??
      (this.#resolved.readiness === "node"
        ? new ClusterCache(options.manager, { name: `${this.#name}-clustercache` })
        : undefined);
    this.#credentials = options.credentials
      ? new PoolCredentialsCache(options.credentials)
      : undefined;
    const defaults = defaultPoolPhases<Spec, Settings>();
    this.#phases = options.phases
      ? (options.phases(defaults as PoolPhase<Spec, unknown>[]) as PoolPhase<Spec, Settings>[])
      : defaults;
    this.#deletePhases = defaultDeletePhases<Spec, Settings>();
    this.#apiSources = {
      resource: this.#resource,
      machines: this.#resolved.machines,
      clusterCache: this.#clusterCache,
      infrastructureCluster: options.infrastructureCluster,
      credentials: this.#credentials,
      redactions: this.#redactions,
      clock: options.manager.clock,
    };
    // A list that cannot work fails here, with the phase and section, not at the first reconcile.
    try {
      checkPhaseOrder(this.#phases);
    } catch (error) {
      throw new TypeError(
        `machinePoolController: ${(error as Error).message.replace(/^phases: /, "the phases option: ")}`,
      );
    }
  }

  register(): Controller {
    const reconcileTimeoutMs = this.#options.reconcileTimeoutMs ?? 5 * 60_000;
    if (!Number.isFinite(reconcileTimeoutMs) || reconcileTimeoutMs <= 0) {
      throw new RangeError(
        `machinePoolController: reconcileTimeoutMs must be a positive number of milliseconds, got ${reconcileTimeoutMs}`,
      );
    }
    return watchPools(
      {
        manager: this.#options.manager,
        resource: this.#resource,
        name: this.#name,
        // Node events also bring the taints and labels of a Node that just joined or lost them.
        nodes: this.#clusterCache,
        machines: this.#resolved.machines?.resource,
        secrets: this.#resolved.bootstrapData !== "none",
        poolsReadingSecret: this.#credentials
          ? (namespace, name) => this.#credentials?.poolsReadingSecret(namespace, name) ?? []
          : undefined,
        infrastructureCluster: this.#options.infrastructureCluster,
        controllerOptions: {
          reconcileTimeoutMs,
          ...(this.#options.maxConcurrentReconciles !== undefined
            ? { maxConcurrentReconciles: this.#options.maxConcurrentReconciles }
            : {}),
        },
      },
      (request, context) =>
        this.reconcile({ namespace: request.namespace ?? "", name: request.name }, context),
    );
  }

  reconcile(
    key: { namespace: string; name: string },
    rc: ReconcileContext,
  ): Promise<ReconcileResult | undefined> {
    // Every text of this reconcile (conditions, Events, logs) also hides the pool's short secrets.
    return this.#redactions.of(key).run(() => this.#reconcilePool(key, rc));
  }

  async #reconcilePool(
    key: { namespace: string; name: string },
    rc: ReconcileContext,
  ): Promise<ReconcileResult | undefined> {
    const cached = await rc.cache.get(this.#resource, key);
    if (!cached) {
      this.#memories.drop(key);
      this.#credentials?.release(key);
      this.#redactions.drop(key);
      return undefined;
    }
    // R20: events of other kinds (Secrets, Nodes) are not filtered by label; the pool is.
    const filter = this.#options.manager.controllerDefaults.watchFilterValue;
    if (filter && cached.metadata?.labels?.[Labels.WatchFilter] !== filter) {
      rc.log.debug({ watchFilter: filter }, "pool is outside this manager's watch filter");
      return undefined;
    }
    const pool = structuredClone(cached);
    pool.apiVersion ??= this.#apiVersion;
    pool.kind ??= this.#resource.kind;
    const deleting = Boolean(pool.metadata?.deletionTimestamp);
    const clock = this.#options.manager.clock;

    // Owner MachinePool: core adopts the pool; its update event brings us back.
    const ownerRef = findOwnerMachinePoolRef(pool);
    if (!ownerRef) {
      if (deleting && hasFinalizer(pool, this.#finalizer)) {
        const patch = PatchHelper.snapshot(pool, { resource: this.#resource });
        removeFinalizer(pool, this.#finalizer);
        await patch.apply(rc.client, pool, { clock });
        rc.log.info("pool deleted before it had an owner MachinePool; finalizer removed");
      } else {
        rc.log.debug("waiting for core to set the owner MachinePool");
      }
      return undefined;
    }
    const machinePool = await rc.cache.get(CoreMachinePool, {
      namespace: key.namespace,
      name: ownerRef.name,
    });
    const clusterName =
      pool.metadata?.labels?.[Labels.ClusterName] ??
      (machinePool ? readMachinePool(machinePool).clusterName : undefined);
    const cluster = clusterName
      ? await rc.cache.get(CoreCluster, { namespace: key.namespace, name: clusterName })
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

    // A mark of ours that outlived its reconcile (the process died mid-call) would hold every move
    // for good: one reconcile of a key runs at a time, so none of our calls is in flight now.
    if (hasKitBlockMove(pool.metadata?.annotations)) {
      rc.fence();
      await rc.client.mergePatch(this.#resource, key, {
        metadata: { annotations: { [Annotations.BlockMove]: null } },
      });
      const { [Annotations.BlockMove]: _stale, ...rest } = pool.metadata?.annotations ?? {};
      pool.metadata = { ...pool.metadata, annotations: rest };
      log.info("cleared a block-move mark left by an earlier reconcile");
    }
    // clusterctl move deletes the source copy (then removes its finalizers): the pool lives on in
    // the target cluster, and so must its cloud resources. Nothing to do, not even a write.
    if (deleting && deletedForMove(pool.metadata?.annotations)) {
      log.info("deleted by clusterctl move; its cloud resources stay for the target cluster");
      return undefined;
    }

    // Pause before the finalizer: a paused pool gets no write but its Paused condition (clusterctl
    // move removes finalizers of paused objects; one put back would outlive the move).
    const patch = PatchHelper.snapshot(pool, { resource: this.#resource });
    const paused = updatePausedCondition(cluster ?? null, pool);
    if (paused.mustPersistNow) {
      await patch.apply(rc.client, pool, { ownedConditions: [ConditionTypes.Paused], clock });
      log.info({ paused: paused.isPaused }, paused.isPaused ? "paused" : "unpaused");
      // Our own status write is filtered out of the watch: come back ourselves.
      return paused.isPaused ? undefined : { requeueAfter: MIN_DELAY_MS };
    }
    if (paused.isPaused) return undefined;

    // Finalizer first, persisted before any cloud call.
    if (
      !deleting &&
      (await ensureFinalizer(rc.client, pool, this.#finalizer, { resource: this.#resource }))
    ) {
      log.info({ finalizer: this.#finalizer }, "finalizer added");
      return undefined;
    }
    if (deleting && !hasFinalizer(pool, this.#finalizer)) return undefined;

    let moveBlocked = false;
    const blockMove = async (step: string) => {
      if (moveBlocked) return;
      rc.fence();
      await rc.client.mergePatch(this.#resource, key, {
        metadata: { annotations: { [Annotations.BlockMove]: `${BLOCK_MOVE_VALUE_PREFIX}${step}` } },
      });
      moveBlocked = true;
    };

    const memory = this.#memories.of(key);
    const involved = { ...pool, apiVersion: this.#apiVersion, kind: this.#resource.kind };
    const scope = createPoolScope<Spec, Settings>({
      pool,
      machinePool,
      cluster,
      clusterName,
      driver: this.#driver,
      options: this.#resolved,
      clock,
      memory,
      api: poolApiOf(this.#apiSources, rc, {
        cluster: { namespace: key.namespace, name: clusterName ?? "" },
        pool,
        machinePool,
        clusterObject: cluster,
        blockMove,
      }),
      recordEvent: (type, reason, message) => rc.recorder.event(involved, type, reason, message),
      log,
      signal: rc.signal,
      fence: rc.fence,
    });
    const steadyState = getCondition(pool, ConditionTypes.Ready)?.status === "True";
    let outcome: Pick<ErrorOutcome, "ready" | "requeueAfterMs" | "retry">;
    try {
      outcome = await runPhases(deleting ? this.#deletePhases : this.#phases, scope);
      memory.transientStreak = undefined;
    } catch (error) {
      // Fenced: this process may not act any more, not even to write the pool's status.
      if (error instanceof FencedError) throw error;
      const failed = errorPolicy(error, {
        now: clock.now(),
        steadyState,
        streak: memory.transientStreak,
        resyncMs: this.#resolved.resyncMs,
        toleranceMs: this.#resolved.transientToleranceMs,
      });
      memory.transientStreak = failed.streak;
      if (
        error instanceof StepFailure &&
        error.failure.reason === PoolReasons.CredentialsRejected
      ) {
        this.#credentials?.forget(key);
      }
      const step = error instanceof Error && "step" in error ? error.step : undefined;
      log[failed.log]({ err: error, step, reason: failed.ready?.reason }, "reconcile failed");
      if (failed.warning) scope.events.warning(failed.warning.reason, failed.warning.message);
      outcome = failed;
    }
    const sections = sectionsOf(scope);
    const deleted = sections.peek("teardown")?.deleted === true;
    writePoolConditions(pool, sections, deleted ? undefined : outcome.ready, clock);
    if (deleted) {
      removeFinalizer(pool, this.#finalizer);
      this.#memories.drop(key);
    }
    rc.fence();
    await patch.apply(rc.client, pool, {
      ownedConditions: [...KIT_CONDITION_TYPES, ...this.#resolved.conditionTypes],
      clock,
    });
    if (moveBlocked) {
      // The status now says what the calls did: a move may copy the pool. (A failure here leaves the
      // mark to the next reconcile, which clears a stale one first.)
      await rc.client
        .mergePatch(this.#resource, key, {
          metadata: { annotations: { [Annotations.BlockMove]: null } },
        })
        .catch((error: unknown) => {
          if (!isNotFound(error)) throw error;
        });
    }
    if (outcome.retry) throw outcome.retry;
    const requeueAfterMs = minDefined(outcome.requeueAfterMs, sections.peek("nodes")?.retryAfterMs);
    return requeueAfterMs !== undefined
      ? { requeueAfter: Math.max(MIN_DELAY_MS, requeueAfterMs) }
      : undefined;
  }
}

function minDefined(a: number | undefined, b: number | undefined): number | undefined {
  if (a === undefined) return b;
  if (b === undefined) return a;
  return Math.min(a, b);
}
