/**
 * `machinePoolController(driver, options)`: the InfraMachinePool reconciler a provider gets for
 * implementing a {@link PoolDriver}. This module loads the scope, runs the guards (owner, watch
 * filter, finalizer, pause), runs the phase pipeline ({@link defaultPoolPhases}), applies the error
 * policy (the error policy (`errors.ts`)) and writes the pool through the patch helper.
 *
 * @module
 */
import type { KubernetesObject } from "@kubernetes/client-node";
import type { Cluster, MachinePool } from "../api/cluster.x-k8s.io/v1beta2.js";
import { ClusterCache } from "../clustercache/clustercache.js";
import { isNodeReady, NODE_PROVIDER_ID_INDEX } from "../clustercache/workload-node.js";
import { ConditionTypes } from "../conditions/constants.js";
import { deleteCondition, getCondition, setCondition } from "../conditions/v1beta2.js";
import { Annotations, finalizerFor, Labels } from "../contract/constants.js";
import { CoreCluster, CoreMachinePool } from "../contract/core-kinds.js";
import { ensureFinalizer, hasFinalizer, removeFinalizer } from "../contract/finalizers.js";
import { findOwnerMachinePoolRef } from "../contract/owners.js";
import { updatePausedCondition } from "../contract/pause.js";
import { readMachinePool } from "../contract/readers.js";
import { PatchHelper } from "../patch/helper.js";
import type { Controller, ReconcileContext, ReconcileResult } from "../runtime/controller.js";
import { FencedError, isNotFound } from "../runtime/errors.js";
import { redactText } from "../runtime/redact.js";
import { NodeResource, type ResourceDescriptor, SecretResource } from "../runtime/resource.js";
import { providerIDClaims } from "./claims.js";
import { readControlPlane } from "./control-plane-api.js";
import { type CredentialsReader, PoolCredentialsCache } from "./credentials.js";
import { workloadDrainApi } from "./drain-api.js";
import type { AnyPoolDriver, InfrastructureClusterObject, PoolEnvironment } from "./driver.js";
import { type ErrorOutcome, errorPolicy, StepFailure } from "./errors.js";
import { infraMachinesApi } from "./machines-api.js";
import { PoolMemories } from "./memory.js";
import { BLOCK_MOVE_VALUE_PREFIX, deletedForMove, hasKitBlockMove } from "./move.js";
import { type PoolNode, poolNodeOf } from "./nodes.js";
import {
  type MachinePoolControllerOptions,
  type ResolvedPoolOptions,
  resolvePoolOptions,
} from "./options.js";
import type { PoolPhase } from "./phase.js";
import { defaultDeletePhases, defaultPoolPhases, runPhases } from "./pipeline.js";
import { PoolRedactions } from "./pool-redaction.js";
import { createPoolScope } from "./pool-scope.js";
import { PoolConditionTypes, PoolReasons } from "./reasons.js";
import type { PoolApi, PoolObject, ReadyState } from "./scope.js";
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

  #api(
    rc: ReconcileContext,
    cluster: { namespace: string; name: string },
    pool: PoolObject,
    machinePool: MachinePool | undefined,
    clusterObject: Cluster | undefined,
    blockMove: (step: string) => Promise<void>,
  ): PoolApi {
    const machineKind = this.#resolved.machines;
    const clusterCache = this.#clusterCache;
    const resolveAccess = this.#accessResolver(rc, cluster, pool, clusterObject);
    return {
      blockMove,
      ...(resolveAccess ? { resolveAccess } : {}),
      ...(machineKind
        ? {
            machines: infraMachinesApi(rc, machineKind, {
              namespace: cluster.namespace,
              clusterName: cluster.name,
              poolKind: this.#resource.kind,
              poolName: pool.metadata?.name ?? "",
              poolUid: pool.metadata?.uid,
              machinePoolName: machinePool?.metadata?.name,
            }),
          }
        : {}),
      readSecret: async (namespace, name) => {
        const cached = await rc.cache.get(SecretResource, { namespace, name });
        if (cached) return cached.data ? { data: cached.data } : {};
        try {
          const secret = await rc.client.get(SecretResource, { namespace, name });
          return secret.data ? { data: secret.data } : {};
        } catch (error) {
          if (isNotFound(error)) return undefined;
          throw error;
        }
      },
      // The workload cluster's Nodes, through its kubeconfig Secret: never the management cluster's.
      // Looked up by providerID: a workload cluster may hold thousands of Nodes, a pool a few.
      readyNodeProviderIDs: async (providerIDs) => {
        if (!this.#clusterCache) {
          throw new Error(
            'readyNodeProviderIDs: the controller has no ClusterCache (readiness is "instance")',
          );
        }
        const { nodes } = await this.#clusterCache.connect(cluster);
        const ready = new Set<string>();
        for (const id of providerIDs) {
          if (nodes.byIndex(NODE_PROVIDER_ID_INDEX, id).some(isNodeReady)) ready.add(id);
        }
        return ready;
      },
      ...(clusterCache && !machineKind ? { drain: workloadDrainApi(clusterCache, cluster) } : {}),
      ...(clusterCache
        ? {
            // Same index as readiness: the pool's own instances, never a scan of every Node.
            taintedNodeProviderIDs: async (providerIDs: Iterable<string>, taintKey: string) => {
              const { nodes } = await clusterCache.connect(cluster);
              const tainted = new Set<string>();
              for (const id of providerIDs) {
                const found = nodes.byIndex(NODE_PROVIDER_ID_INDEX, id);
                if (found.some((node) => node.spec?.taints?.some((t) => t.key === taintKey))) {
                  tainted.add(id);
                }
              }
              return tainted;
            },
          }
        : {}),
      ...(clusterCache
        ? {
            nodes: {
              get: async (providerIDs: Iterable<string>) => {
                const { nodes } = await clusterCache.connect(cluster);
                const found = new Map<string, PoolNode>();
                for (const id of providerIDs) {
                  const [node] = nodes.byIndex(NODE_PROVIDER_ID_INDEX, id);
                  if (node) found.set(id, poolNodeOf(node));
                }
                return found;
              },
              patch: async (node, patch) => {
                rc.fence();
                const { client } = await clusterCache.connect(cluster);
                const metadata = {
                  ...(patch.labels ? { labels: patch.labels } : {}),
                  ...(patch.annotations ? { annotations: patch.annotations } : {}),
                  // Taints are one atomic list: the lock makes a list changed since the cache saw
                  // it a 409 instead of an overwrite of someone else's taint.
                  ...(patch.taints ? { resourceVersion: node.resourceVersion } : {}),
                };
                await client.mergePatch(
                  NodeResource,
                  { name: node.name },
                  {
                    ...(Object.keys(metadata).length > 0 ? { metadata } : {}),
                    ...(patch.taints
                      ? { spec: { taints: patch.taints.length > 0 ? patch.taints : null } }
                      : {}),
                  },
                );
              },
            },
          }
        : {}),
      claimedProviderIDs: async () => {
        const namespace = cluster.namespace;
        const self = pool.metadata?.name;
        const pools = await rc.cache.list(this.#resource, { namespace });
        const machinePools = await rc.cache.list(CoreMachinePool, { namespace });
        return providerIDClaims([
          { kind: this.#resource.kind, objects: pools.filter((p) => p.metadata?.name !== self) },
          {
            kind: "MachinePool",
            objects: machinePools.filter((m) => m.metadata?.name !== machinePool?.metadata?.name),
          },
        ]);
      },
      readControlPlane: (ref, namespace) => readControlPlane(rc.client, ref, namespace, rc.signal),
      setMachinePoolReplicas: async (machinePool: MachinePool, replicas: number) => {
        rc.fence();
        const copy = structuredClone(machinePool);
        const patch = PatchHelper.snapshot(copy, { resource: CoreMachinePool });
        copy.spec = { ...copy.spec, replicas } as MachinePool["spec"];
        await patch.apply(rc.client, copy);
      },
    };
  }

  /**
   * `PoolApi.resolveAccess`: the InfraCluster the pool's Cluster names (from the cache) and the
   * pool's credentials (cached by {@link PoolCredentialsCache}); `undefined` when the controller has
   * neither option.
   */
  #accessResolver(
    rc: ReconcileContext,
    cluster: { namespace: string; name: string },
    pool: PoolObject,
    clusterObject: Cluster | undefined,
  ): PoolApi["resolveAccess"] {
    const infraKind = this.#options.infrastructureCluster;
    const credentials = this.#credentials;
    if (!infraKind && !credentials) return undefined;
    return async () => {
      let infrastructureCluster: InfrastructureClusterObject | undefined;
      const ref = clusterObject?.spec?.infrastructureRef;
      if (
        infraKind &&
        ref?.name &&
        ref.apiGroup === infraKind.group &&
        ref.kind === infraKind.kind
      ) {
        infrastructureCluster = await rc.cache.get(infraKind, {
          namespace: cluster.namespace,
          name: ref.name,
        });
      }
      if (!credentials) return { credentials: undefined, infrastructureCluster };
      const meta = pool.metadata ?? {};
      const value = await credentials.resolve({
        pool: {
          namespace: meta.namespace ?? "",
          name: meta.name ?? "",
          uid: meta.uid ?? "",
          clusterName: cluster.name,
        },
        infrastructureCluster,
        now: this.#options.manager.clock.now(),
        signal: rc.signal,
        reader: credentialsReader(rc),
        redaction: this.#redactions.of({ namespace: meta.namespace ?? "", name: meta.name ?? "" }),
      });
      return { credentials: value, infrastructureCluster };
    };
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
      api: this.#api(
        rc,
        { namespace: key.namespace, name: clusterName ?? "" },
        pool,
        machinePool,
        cluster,
        blockMove,
      ),
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
    const bounds = sections.peek("bounds");
    if (bounds) {
      // Its own condition, not folded into Ready: the pool serves whatever the annotations say.
      if (bounds.condition) {
        setCondition(
          pool,
          {
            type: PoolConditionTypes.AutoscalerBounds,
            ...bounds.condition,
            message: redactText(bounds.condition.message),
          },
          { clock },
        );
      } else {
        deleteCondition(pool, PoolConditionTypes.AutoscalerBounds);
      }
    }
    const desired = sections.peek("desired");
    if (desired) {
      // Its own condition: the pool serves; an upgrade that rolls nothing must not wait unexplained.
      if (desired.versionCondition) {
        setCondition(
          pool,
          {
            type: PoolConditionTypes.VersionRollout,
            ...desired.versionCondition,
            message: redactText(desired.versionCondition.message),
          },
          { clock },
        );
      } else {
        deleteCondition(pool, PoolConditionTypes.VersionRollout);
      }
    }
    const nodeSync = sections.peek("nodes");
    if (nodeSync) {
      if (nodeSync.condition) {
        setCondition(
          pool,
          {
            type: PoolConditionTypes.NodeMetadata,
            ...nodeSync.condition,
            message: redactText(nodeSync.condition.message),
          },
          { clock },
        );
      } else {
        deleteCondition(pool, PoolConditionTypes.NodeMetadata);
      }
    }
    const scaled = sections.peek("scale");
    if (scaled) {
      // Its own condition: Ready already says the pool is scaling or rolling; this says which Node
      // holds it and why.
      if (scaled.draining) {
        setCondition(
          pool,
          {
            type: PoolConditionTypes.Draining,
            ...scaled.draining,
            message: redactText(scaled.draining.message),
          },
          { clock },
        );
      } else {
        deleteCondition(pool, PoolConditionTypes.Draining);
      }
    }
    if (sections.peek("teardown")?.deleted) {
      removeFinalizer(pool, this.#finalizer);
      this.#memories.drop(key);
    } else if (outcome.ready) {
      const conditions = sections.conditions;
      // Condition messages are read by anyone who can read the pool: through the redaction layer.
      for (const [type, condition] of conditions)
        setCondition(
          pool,
          { type, ...condition, message: redactText(condition.message) },
          { clock },
        );
      const ready = summarise(outcome.ready, conditions);
      setCondition(
        pool,
        { type: ConditionTypes.Ready, ...ready, message: redactText(ready.message) },
        { clock },
      );
    }
    rc.fence();
    await patch.apply(rc.client, pool, {
      ownedConditions: [
        ConditionTypes.Ready,
        ConditionTypes.Paused,
        PoolConditionTypes.AutoscalerBounds,
        PoolConditionTypes.NodeMetadata,
        PoolConditionTypes.Draining,
        PoolConditionTypes.VersionRollout,
        ...this.#resolved.conditionTypes,
      ],
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
    const requeueAfterMs = minDefined(outcome.requeueAfterMs, nodeSync?.retryAfterMs);
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

/**
 * `Ready` with the provider's own conditions folded in, as CAPI's summary does for an issue: while
 * one of them is not True, a True `Ready` becomes False with that condition's reason.
 */
function summarise(ready: ReadyState, conditions: ReadonlyMap<string, ReadyState>): ReadyState {
  if (ready.status !== "True") return ready;
  for (const [type, condition] of [...conditions].sort(([a], [b]) => (a < b ? -1 : 1))) {
    if (condition.status !== "True") {
      return {
        status: condition.status,
        reason: condition.reason,
        message: `${type}: ${condition.message}`,
      };
    }
  }
  return ready;
}

/**
 * What the credentials cache reads through: Secrets from the manager's cache when its Secret watch
 * holds them (labelled `cluster.x-k8s.io/cluster-name`), else with a GET; other objects with a GET.
 */
function credentialsReader(rc: ReconcileContext): CredentialsReader {
  const cachedSecret = async (namespace: string, name: string) => {
    try {
      return await rc.cache.get(SecretResource, { namespace, name });
    } catch {
      // No Secret watch (bootstrap data "none" and no credentials watch yet): read it directly.
      return undefined;
    }
  };
  const get = async <T extends KubernetesObject>(
    resource: ResourceDescriptor<T>,
    key: { namespace?: string; name: string },
  ): Promise<T | undefined> => {
    try {
      return await rc.client.get(resource, key, { signal: rc.signal });
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
  };
  return {
    async secret(namespace, name) {
      return (
        (await cachedSecret(namespace, name)) ?? (await get(SecretResource, { namespace, name }))
      );
    },
    async cachedSecretVersion(namespace, name) {
      return (await cachedSecret(namespace, name))?.metadata?.resourceVersion;
    },
    object: (resource, key) => get(resource, key),
  };
}
