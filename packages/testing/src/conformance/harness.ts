/**
 * The conformance suite as a class: it starts the suite's backend and the provider, builds each
 * scenario family's host over the suite's state, and keeps the suite's bookkeeping (the pools and
 * Clusters it created, the invariant monitor's watch, core's health after each scenario).
 *
 * @module
 */
import { clusterv1beta2 } from "@capi-ts/sdk/api";
import {
  isAlreadyExists,
  KubeClient,
  NodeResource,
  type ResourceDescriptor,
} from "@capi-ts/sdk/runtime";
import { type CapiCore, markWorkloadClusterReady, setExternalControlPlane } from "../capi/index.js";
import type { AutoscalerScenarioHost } from "./autoscaler-actions.js";
import {
  chosenCore,
  chosenRateLimit,
  coreConnected,
  FIELD_MANAGER,
  providerCrds,
  type SuiteBackend,
  startJudge,
  startSuiteBackend,
} from "./backend.js";
import { machinePoolKey, PoolConvergence, poolKey, READS, suiteTimings } from "./convergence.js";
import { isTransientCoreError } from "./core-errors.js";
import {
  type CoreScenarioHost,
  MachinePools,
  SUITE_NAMESPACE as NAMESPACE,
  type Obj,
  rollEveryInstance,
  sleep,
  WATCH_FILTER_VALUE,
} from "./core-scenarios.js";
import { ConformanceError, type ConformancePoolObject, InvariantMonitor } from "./invariants.js";
import type { MachinesScenarioHost } from "./machines.js";
import type { MoveScenarioHost } from "./move.js";
import type { NodeScenarioHost, PoolMachinePool } from "./nodes.js";
import type { ProviderUpgradeHost } from "./provider-upgrade.js";
import type { ScaleFromZeroHost } from "./scale-from-zero.js";
import { type ConformanceScenarioDefinition, conformanceScenarios } from "./scenario-registry.js";
import type { StrategyScenarioHost } from "./strategies.js";
import type { TopologyScenarioHost } from "./topology.js";
import type {
  ConformanceCore,
  ConformancePool,
  ConformanceProvider,
  ConformanceScenario,
  ConformanceScenarioContext,
  MachinePoolConformanceOptions,
} from "./types.js";
import type { WorkloadScenarioHost } from "./workload.js";

const CLUSTER = "conformance";
/** The watch filter of the suite's objects; the provider must run with it (R20). */
/** A Cluster of another team, whose pools the provider must never touch. */
const WATCH_FILTER_LABEL = "cluster.x-k8s.io/watch-filter";
const Clusters = clusterv1beta2.ClusterResource as unknown as ResourceDescriptor<Obj>;
const KubeadmConfigs = {
  group: "bootstrap.cluster.x-k8s.io",
  version: "v1beta2",
  kind: "KubeadmConfig",
  plural: "kubeadmconfigs",
  scope: "Namespaced",
  subresources: { status: true },
} as ResourceDescriptor<Obj>;

/**
 * The conformance suite without a test framework: start an environment (in-memory API server with
 * the CAPI CRDs, the CAPI core emulator, the provider), run scenarios, stop.
 * `runMachinePoolConformance` (`@capi-ts/testing/vitest`) registers these as vitest tests; use this directly to run one scenario
 * and inspect its failure.
 *
 * @example
 * ```ts
 * const suite = new MachinePoolConformance(options);
 * await suite.start();
 * try {
 *   await suite.run("pause"); // throws ConformanceError("[pause.noCloudCallsWhilePaused] …") if broken
 * } finally {
 *   await suite.stop();
 * }
 * ```
 */
export class MachinePoolConformance {
  readonly #options: MachinePoolConformanceOptions;
  readonly #monitor = new InvariantMonitor();
  readonly #pools: ResourceDescriptor<ConformancePoolObject>;
  /** Which core judges this run. */
  readonly core: ConformanceCore;
  #api: SuiteBackend | undefined;
  #core: CapiCore | undefined;
  #client: KubeClient | undefined;
  #workloadClient: KubeClient | undefined;
  #provider: ConformanceProvider | undefined;
  /** Whether the provider was stopped by a scenario that replaces it (`providerUpgrade`). */
  #providerStopped = false;
  #watch: AbortController | undefined;
  #seq = 0;
  readonly #created: ConformancePool[] = [];
  /** The Clusters the suite created: real core's Cluster controller reconciles them too. */
  readonly #clusters = new Set<string>();
  readonly #rateLimitMs: number;
  readonly #convergence: PoolConvergence;

  /** @param options - the provider under test */
  constructor(options: MachinePoolConformanceOptions) {
    this.#options = options;
    this.core = chosenCore(options.core);
    this.#rateLimitMs = chosenRateLimit(options.emulatorRateLimitMs);
    const kind = options.kind;
    this.#pools = {
      group: kind.group,
      version: kind.storageVersion,
      kind: kind.kind,
      plural: kind.plural,
      scope: "Namespaced",
      subresources: { status: true },
    };
    this.#convergence = new PoolConvergence({
      options,
      core: this.core,
      pools: this.#pools,
      monitor: this.#monitor,
      env: () => this.#env,
      realCore: () => this.#api?.realCore,
      machinesHost: () => this.#machinesHost(),
    });
  }

  get #t() {
    return suiteTimings(this.#options);
  }

  get #env() {
    if (!this.#api || !this.#core || !this.#client || !this.#provider) {
      throw new Error("MachinePoolConformance: call start() before running scenarios");
    }
    return { api: this.#api, core: this.#core, client: this.#client, provider: this.#provider };
  }

  /**
   * Starts the API server (in memory for the emulator, a real kube-apiserver for real core), installs
   * the CRDs, starts core (and the bootstrap stand-in, which plays the bootstrap provider for both),
   * creates the suite's Cluster with a reachable workload cluster, and starts the provider.
   */
  async start(): Promise<void> {
    const crds = providerCrds(this.#options);
    this.#api = await startSuiteBackend(this.core);
    this.#core = await startJudge(this.#api, {
      core: this.core,
      options: this.#options,
      providerCrds: crds,
      rateLimitMs: this.#rateLimitMs,
    });
    const kubeConfig = this.#api.kubeConfig;
    this.#client = new KubeClient(kubeConfig, { fieldManager: FIELD_MANAGER });
    this.#startWatch(this.#client);
    const core = this.#core;
    this.#provider = await this.#options.startProvider({
      kubeConfig,
      workloadKubeConfig: this.#api.workloadKubeConfig,
      core: this.core,
      watchFilterValue: WATCH_FILTER_VALUE,
      isTokenValid: (token) => core.bootstrap?.isTokenValid(token) ?? true,
    });
    await this.#createCluster(CLUSTER, WATCH_FILTER_VALUE);
    // The workload cluster is reached as core reaches one: through the <cluster>-kubeconfig Secret,
    // once the Cluster reports its control plane initialized.
    await markWorkloadClusterReady(
      this.#client,
      { namespace: NAMESPACE, name: CLUSTER },
      this.#api.workloadKubeConfig,
    );
    await coreConnected(this.#api.realCore, CLUSTER);
  }

  /** Stops the provider, the emulator and the API server (whatever was started). */
  async stop(): Promise<void> {
    this.#watch?.abort();
    if (!this.#providerStopped) await this.#provider?.stop().catch(() => undefined);
    await this.#options.providerUpgrade?.dispose?.().catch(() => undefined);
    await this.#core?.stop().catch(() => undefined);
    await this.#api?.stop().catch(() => undefined);
  }

  /** Invariants broken so far (recorded by the watch on every stored version). */
  violations(): readonly ConformanceError[] {
    return this.#monitor.violations();
  }

  #startWatch(client: KubeClient): void {
    this.#watch = new AbortController();
    const signal = this.#watch.signal;
    void (async () => {
      while (!signal.aborted) {
        try {
          for await (const event of client.watch(this.#pools, { namespace: NAMESPACE, signal })) {
            if (event.type !== "BOOKMARK") this.#monitor.observe(event.object);
          }
        } catch {
          // Watches are cut on purpose in the fault scenario; re-list and watch again.
        }
        if (!signal.aborted) {
          const list = await client
            .list(this.#pools, { namespace: NAMESPACE })
            .catch(() => undefined);
          for (const pool of list?.items ?? []) this.#monitor.observe(pool);
          await sleep(20);
        }
      }
    })();
  }

  /** Every scenario, with the reason it is skipped for this provider (if it is). */
  scenarios(): ConformanceScenarioDefinition[] {
    return conformanceScenarios(this.#options, {
      core: this.core,
      actors: () => this.#provider?.cloud.actors,
      coreHost: () => this.#coreHost(),
      workloadHost: () => this.#workloadHost(),
      machinesHost: () => this.#machinesHost(),
      autoscalerHost: () => this.#autoscalerHost(),
      topologyHost: () => this.#topologyHost(),
      providerUpgradeHost: () => this.#providerUpgradeHost(),
      moveHost: () => this.#moveHost(),
      scaleFromZeroHost: () => this.#scaleFromZeroHost(),
      nodesHost: () => this.#nodesHost(),
      strategyHost: () => this.#strategyHost(),
      context: () => this.#context(),
      cleanup: () => this.#cleanup(),
      afterScenario: (since) => {
        this.#monitor.assertClean();
        this.#assertCoreHealthy(since);
      },
    });
  }

  /** Runs one scenario by id. */
  async run(id: ConformanceScenario | (string & {})): Promise<void> {
    const scenario = this.scenarios().find((s) => s.id === id);
    if (!scenario) throw new Error(`unknown or deselected conformance scenario "${id}"`);
    const skip = scenario.skipReason;
    if (skip) throw new Error(`scenario "${id}" cannot run for this provider: ${skip}`);
    await scenario.run();
  }

  // ---------------------------------------------------------------- helpers

  /** What a provider's own scenario gets. */
  #context(): ConformanceScenarioContext {
    const { api, provider } = this.#env;
    return {
      kubeConfig: api.kubeConfig,
      workloadKubeConfig: api.workloadKubeConfig,
      provider,
      createPool: (replicas, spec) => this.#createPool(replicas, spec),
      setReplicas: (pool, replicas) => this.#setReplicas(pool, replicas),
      converged: (pool, replicas) => this.#convergence.converged(pool, replicas),
      steadyState: (pool, replicas) => this.#convergence.steadyState(pool, replicas),
      deletePool: (pool) => this.#deletePool(pool),
    };
  }

  /** What the core scenarios get (`core-scenarios.ts`). */
  #coreHost(): CoreScenarioHost {
    const { api, core, client, provider } = this.#env;
    return {
      client,
      provider,
      core,
      workloadKubeConfig: api.workloadKubeConfig,
      faults: api.faults,
      options: this.#options,
      timings: this.#t,
      pools: this.#pools,
      finalizersSeen: (uid) => this.#monitor.finalizersSeen(uid),
      createCluster: (name, watchFilter) => this.#createCluster(name, watchFilter),
      createPool: (replicas, spec, team) =>
        this.#createPool(replicas, spec ?? this.#options.poolSpec, team),
      setReplicas: (pool, replicas) => this.#setReplicas(pool, replicas),
      setClusterPaused: (paused) => this.#setClusterPaused(paused),
      converged: (pool, replicas, timeoutMs) =>
        this.#convergence.converged(pool, replicas, timeoutMs),
      notConverged: (pool, replicas) => this.#convergence.notConverged(pool, replicas),
      steadyState: (pool, replicas) => this.#convergence.steadyState(pool, replicas),
      quiet: (pool) => this.#convergence.quiet(pool),
      deletePool: (pool) => this.#deletePool(pool),
      until: (what, check, timeoutMs) => this.#convergence.until(what, check, timeoutMs),
      readyNodes: (pool) => this.#readyNodes(pool),
      writesSince: (since) => this.#convergence.writesSince(since),
      key: (pool) => poolKey(pool),
      mpKey: (pool) => machinePoolKey(pool),
    };
  }

  /** What the workload-cluster scenarios get. */
  #workloadHost(): WorkloadScenarioHost {
    const { api, client, provider } = this.#env;
    return {
      client,
      pools: this.#pools,
      workloadKubeConfig: api.workloadKubeConfig,
      access: api.workloadAccess,
      core: this.core,
      provider,
      convergeMs: this.#t.convergeMs,
      createCluster: (name) => this.#createCluster(name, WATCH_FILTER_VALUE),
      createPool: (replicas, cluster) =>
        this.#createPool(replicas, this.#options.poolSpec, {
          cluster,
          watchFilter: WATCH_FILTER_VALUE,
        }),
      setReplicas: (pool, replicas) => this.#setReplicas(pool, replicas),
      converged: (pool, replicas, timeoutMs) =>
        this.#convergence.converged(pool, replicas, timeoutMs),
      deletePool: (pool) => this.#deletePool(pool),
      until: (what, check, timeoutMs) => this.#convergence.until(what, check, timeoutMs),
      readyNodes: (pool) => this.#readyNodes(pool),
      rollout: async (replicas) => {
        const pool = await this.#createPool(replicas);
        await rollEveryInstance(this.#coreHost(), pool, replicas);
        await this.#deletePool(pool);
      },
    };
  }

  /** What the MachinePool Machines scenarios get. */
  #machinesHost(): MachinesScenarioHost {
    const { api, client, provider } = this.#env;
    this.#workloadClient ??= new KubeClient(api.workloadKubeConfig, {
      fieldManager: FIELD_MANAGER,
    });
    return {
      client,
      workload: this.#workloadClient,
      pools: this.#pools,
      kind: this.#options.kind,
      provider,
      createPool: (replicas, spec) => this.#createPool(replicas, spec),
      interruptibleSpec: this.#options.interruptibleSpec?.(this.#options.poolSpec),
      setReplicas: (pool, replicas) => this.#setReplicas(pool, replicas),
      converged: (pool, replicas) => this.#convergence.converged(pool, replicas),
      deletePool: (pool) => this.#deletePool(pool),
      until: (what, check, timeoutMs) => this.#convergence.until(what, check, timeoutMs),
    };
  }

  /** What the ClusterClass scenarios get. */
  #topologyHost(): TopologyScenarioHost {
    const { api, client, provider } = this.#env;
    this.#workloadClient ??= new KubeClient(api.workloadKubeConfig, {
      fieldManager: FIELD_MANAGER,
    });
    return {
      client,
      kubeConfig: api.kubeConfig,
      workload: this.#workloadClient,
      workloadKubeConfig: api.workloadKubeConfig,
      kind: this.#options.kind,
      provider,
      poolSpec: this.#options.poolSpec,
      versionRollout: this.#options.versionRollout ?? true,
      core: this.core,
      namespace: NAMESPACE,
      watchFilter: { label: WATCH_FILTER_LABEL, value: WATCH_FILTER_VALUE },
      convergeMs: this.#t.convergeMs,
      trackCluster: (name) => this.#clusters.add(name),
      trackPool: (pool) => this.#created.push(pool),
      steadyState: (pool, replicas) => this.#convergence.steadyState(pool, replicas),
      converged: (pool, replicas, timeoutMs) =>
        this.#convergence.converged(pool, replicas, timeoutMs),
      notConverged: (pool, replicas) => this.#convergence.notConverged(pool, replicas),
      until: (what, check, timeoutMs) => this.#convergence.until(what, check, timeoutMs),
    };
  }

  /** What the provider upgrade scenario gets. */
  #providerUpgradeHost(): ProviderUpgradeHost {
    const { api, client } = this.#env;
    const core = this.#core;
    return {
      client,
      kubeConfig: api.kubeConfig,
      env: {
        kubeConfig: api.kubeConfig,
        workloadKubeConfig: api.workloadKubeConfig,
        core: this.core,
        watchFilterValue: WATCH_FILTER_VALUE,
        isTokenValid: (token) => core?.bootstrap?.isTokenValid(token) ?? true,
      },
      kind: this.#options.kind,
      core: this.core,
      upgrade: this.#options.providerUpgrade,
      stopProvider: async () => {
        const provider = this.#provider;
        this.#providerStopped = true;
        await provider?.stop();
      },
      adoptProvider: (provider) => {
        this.#provider = provider;
        this.#providerStopped = false;
      },
      createPool: (replicas) => this.#createPool(replicas),
      setReplicas: (pool, replicas) => this.#setReplicas(pool, replicas),
      converged: (pool, replicas) => this.#convergence.converged(pool, replicas),
      deletePool: (pool) => this.#deletePool(pool),
      until: (what, check, timeoutMs) => this.#convergence.until(what, check, timeoutMs),
    };
  }

  /** What the move scenario gets. */
  #moveHost(): MoveScenarioHost {
    const { api, client, provider } = this.#env;
    const core = this.#core;
    return {
      kubeConfig: api.kubeConfig,
      client,
      env: {
        kubeConfig: api.kubeConfig,
        workloadKubeConfig: api.workloadKubeConfig,
        core: this.core,
        watchFilterValue: WATCH_FILTER_VALUE,
        isTokenValid: (token) => core?.bootstrap?.isTokenValid(token) ?? true,
      },
      kind: this.#options.kind,
      poolSpec: this.#options.poolSpec,
      core: this.core,
      provider,
      move: this.#options.move,
      providerCrds: providerCrds(this.#options),
      watchFilter: { label: WATCH_FILTER_LABEL, value: WATCH_FILTER_VALUE },
      installCRDs: (crds) => api.installCRDs(crds),
      steadyStateMs: this.#t.steadyStateMs,
      until: (what, check, timeoutMs) => this.#convergence.until(what, check, timeoutMs),
    };
  }

  /** What the scale-from-zero scenario gets. */
  #scaleFromZeroHost(): ScaleFromZeroHost {
    const { client, provider } = this.#env;
    return {
      client,
      pools: this.#pools,
      kind: this.#options.kind,
      provider,
      poolSpec: this.#options.poolSpec,
      capacityChange: this.#options.capacityChange,
      createPool: (replicas) => this.#createPool(replicas),
      setReplicas: (pool, replicas) => this.#setReplicas(pool, replicas),
      converged: (pool, replicas) => this.#convergence.converged(pool, replicas),
      steadyState: (pool, replicas) => this.#convergence.steadyState(pool, replicas),
      deletePool: (pool) => this.#deletePool(pool),
      until: (what, check, timeoutMs) => this.#convergence.until(what, check, timeoutMs),
    };
  }

  /** What the Node scenarios (taints and labels, minReadySeconds) get. */
  #nodesHost(): NodeScenarioHost {
    const { api, client, provider } = this.#env;
    this.#workloadClient ??= new KubeClient(api.workloadKubeConfig, {
      fieldManager: FIELD_MANAGER,
    });
    return {
      client,
      workload: this.#workloadClient,
      pools: this.#pools,
      machinePools: MachinePools,
      provider,
      poolSpec: this.#options.poolSpec,
      templateChange: this.#options.templateChange,
      rolloutMaxUnavailable: this.#options.rolloutMaxUnavailable ?? 0,
      steadyStateMs: this.#t.steadyStateMs,
      settleMs: this.#t.settleMs,
      createPool: (replicas, machinePool) =>
        this.#createPool(replicas, this.#options.poolSpec, undefined, machinePool),
      converged: (pool, replicas) => this.#convergence.converged(pool, replicas),
      notConverged: (pool, replicas) => this.#convergence.notConverged(pool, replicas),
      deletePool: (pool) => this.#deletePool(pool),
      until: (what, check, timeoutMs) => this.#convergence.until(what, check, timeoutMs),
      nodeWritesSince: (since) =>
        api
          .workloadRequests()
          .filter(
            (r) =>
              r.resource === "nodes" &&
              r.startedAt.getTime() >= since &&
              !READS.has(r.verb) &&
              r.status < 400 &&
              (r.fieldManager === provider.identity ||
                r.userAgent?.includes(provider.identity) === true),
          ),
    };
  }

  /** What the rollout-control and preflight scenarios get. */
  #strategyHost(): StrategyScenarioHost {
    const { client, provider } = this.#env;
    const change = this.#options.templateChange;
    return {
      client,
      pools: this.#pools,
      provider,
      core: this.core,
      poolSpec: this.#options.poolSpec,
      templateChange: (spec) => (change ? change(spec) : spec),
      machinePoolMachines: this.#options.kind.machine !== undefined,
      rolloutMaxUnavailable: this.#options.rolloutMaxUnavailable ?? 0,
      cluster: { namespace: NAMESPACE, name: CLUSTER },
      settleMs: this.#t.settleMs,
      createPool: (replicas, spec) => this.#createPool(replicas, spec),
      setReplicas: (pool, replicas) => this.#setReplicas(pool, replicas),
      converged: (pool, replicas) => this.#convergence.converged(pool, replicas),
      steadyState: (pool, replicas) => this.#convergence.steadyState(pool, replicas),
      deletePool: (pool) => this.#deletePool(pool),
      until: (what, check, timeoutMs) => this.#convergence.until(what, check, timeoutMs),
      readyNodes: (pool) => this.#readyNodes(pool),
      quiet: (pool) => this.#convergence.quiet(pool),
    };
  }

  /** What the cluster-autoscaler scenarios get. */
  #autoscalerHost(): AutoscalerScenarioHost {
    return {
      ...this.#machinesHost(),
      steadyState: (pool, replicas) => this.#convergence.steadyState(pool, replicas),
      settleMs: this.#t.settleMs,
    };
  }

  /**
   * Creates a Cluster labelled for `watchFilter` (no-op when it exists), with a control plane that
   * is managed outside the cluster (as EKS, AKS or GKE): without control-plane Machines, core's
   * Machine controller would neither drain nor delete the Nodes of deleted Machines.
   */
  async #createCluster(name: string, watchFilter: string): Promise<void> {
    const client = this.#client;
    if (!client) throw new Error("MachinePoolConformance: no client yet");
    this.#clusters.add(name);
    await client
      .create(Clusters, {
        apiVersion: "cluster.x-k8s.io/v1beta2",
        kind: "Cluster",
        metadata: { name, namespace: NAMESPACE, labels: { [WATCH_FILTER_LABEL]: watchFilter } },
        spec: {
          infrastructureRef: {
            apiGroup: "infrastructure.cluster.x-k8s.io",
            kind: "DevCluster",
            name,
          },
        },
      })
      .catch((error: unknown) => {
        if (!isAlreadyExists(error)) throw error;
      });
    await setExternalControlPlane(
      client,
      { namespace: NAMESPACE, name },
      { [WATCH_FILTER_LABEL]: watchFilter },
    );
  }

  async #createPool(
    replicas: number,
    spec = this.#options.poolSpec,
    team: { cluster: string; watchFilter: string } = {
      cluster: CLUSTER,
      watchFilter: WATCH_FILTER_VALUE,
    },
    machinePool: PoolMachinePool = {},
  ): Promise<ConformancePool> {
    const { client } = this.#env;
    const pool: ConformancePool = {
      namespace: NAMESPACE,
      name: `conf-${++this.#seq}`,
      clusterName: team.cluster,
    };
    const labels = { [WATCH_FILTER_LABEL]: team.watchFilter };
    this.#created.push(pool);
    const kind = this.#options.kind;
    // A real bootstrap config reference, as CAPI's MachinePool webhook requires one (or a data
    // Secret name); the bootstrap stand-in plays the kubeadm bootstrap provider for it.
    await client.create(KubeadmConfigs, {
      apiVersion: "bootstrap.cluster.x-k8s.io/v1beta2",
      kind: "KubeadmConfig",
      metadata: { name: pool.name, namespace: NAMESPACE },
      spec: { format: "cloud-config" },
    });
    await client.create(this.#pools, {
      apiVersion: `${kind.group}/${kind.storageVersion}`,
      kind: kind.kind,
      metadata: { name: pool.name, namespace: NAMESPACE, labels },
      spec,
    });
    await client.create(MachinePools, {
      apiVersion: "cluster.x-k8s.io/v1beta2",
      kind: "MachinePool",
      metadata: {
        name: pool.name,
        namespace: NAMESPACE,
        labels,
        ...(machinePool.annotations ? { annotations: { ...machinePool.annotations } } : {}),
      },
      spec: {
        clusterName: team.cluster,
        replicas,
        template: {
          ...(machinePool.labels ? { metadata: { labels: { ...machinePool.labels } } } : {}),
          spec: {
            ...machinePool.templateSpec,
            clusterName: team.cluster,
            version: "v1.34.1",
            bootstrap: {
              configRef: {
                apiGroup: "bootstrap.cluster.x-k8s.io",
                kind: "KubeadmConfig",
                name: pool.name,
              },
            },
            infrastructureRef: { apiGroup: kind.group, kind: kind.kind, name: pool.name },
          },
        },
      },
    });
    return pool;
  }

  async #setReplicas(pool: ConformancePool, replicas: number): Promise<void> {
    await this.#env.client.mergePatch(MachinePools, machinePoolKey(pool), { spec: { replicas } });
  }

  async #setClusterPaused(paused: boolean): Promise<void> {
    await this.#env.client.mergePatch(
      Clusters,
      { namespace: NAMESPACE, name: CLUSTER },
      { spec: { paused } },
    );
  }

  /**
   * `core.noReconcileErrors`: real core logged no reconcile error for the suite's MachinePools (and
   * their Clusters: CAPI's manager runs the Cluster controller too) during the scenario, beyond the
   * transient ones of a healthy cluster. A provider that breaks the
   * contract in a way core trips over (a missing contract label, `failureReason`, an invalid
   * reference) shows here even when the pool itself looks right.
   */
  #assertCoreHealthy(since: number): void {
    const realCore = this.#api?.realCore;
    if (!realCore) return;
    const names = new Set(this.#created.map((pool) => pool.name));
    const errors = realCore
      .reconcileErrors({ namespace: NAMESPACE })
      .filter(
        (e) =>
          e.at.getTime() >= since - 1_000 &&
          (names.has(e.name) || (e.kind === "Cluster" && this.#clusters.has(e.name))) &&
          !isTransientCoreError(e.error),
      );
    if (errors.length > 0) {
      const list = errors
        .slice(0, 3)
        .map((e) => `${e.kind} ${e.name}: ${e.error}`)
        .join("; ");
      throw new ConformanceError(
        "core.noReconcileErrors",
        `CAPI core ${realCore.release} failed ${errors.length} reconcile(s) of the suite's pools or Clusters: ${list} (core log: ${realCore.logFile})`,
      );
    }
  }

  async #deletePool(pool: ConformancePool): Promise<void> {
    const { client, provider } = this.#env;
    await client.delete(MachinePools, machinePoolKey(pool)).catch(() => undefined);
    await this.#convergence.until(`${pool.name} to be deleted`, async () => {
      const imp = await client.get(this.#pools, poolKey(pool)).catch(() => undefined);
      if (imp) {
        return `deletion.completes: the InfraMachinePool still exists (deletionTimestamp ${imp.metadata?.deletionTimestamp ?? "unset"}, finalizers ${JSON.stringify(imp.metadata?.finalizers ?? [])})`;
      }
      const mp = await client.get(MachinePools, machinePoolKey(pool)).catch(() => undefined);
      if (mp)
        return `deletion.completes: the MachinePool still exists (finalizers ${JSON.stringify(mp.metadata?.finalizers ?? [])})`;
      const left = await provider.cloud.resourcesLeft(pool);
      if (left.length > 0) return `cleanup.complete: cloud resources left: ${left.join(", ")}`;
      return undefined;
    });
  }

  async #readyNodes(pool: ConformancePool): Promise<number> {
    const { api, provider } = this.#env;
    const live = new Set(await provider.cloud.liveProviderIds(pool));
    this.#workloadClient ??= new KubeClient(api.workloadKubeConfig, {
      fieldManager: FIELD_MANAGER,
    });
    const nodes = await this.#workloadClient.list(NodeResource);
    return nodes.items.filter(
      (n) =>
        live.has(n.spec?.providerID ?? "") &&
        n.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True"),
    ).length;
  }

  // ---------------------------------------------------------------- scenarios

  async #cleanup(): Promise<void> {
    const { client, provider } = this.#env;
    for (const pool of this.#created) {
      const exists = await client.get(this.#pools, poolKey(pool)).then(
        () => true,
        () => false,
      );
      if (exists) await this.#deletePool(pool);
      const left = await provider.cloud.resourcesLeft(pool);
      if (left.length > 0) {
        throw new ConformanceError(
          "cleanup.complete",
          `${pool.name}: cloud resources left after deletion: ${left.join(", ")}`,
        );
      }
    }
  }
}
