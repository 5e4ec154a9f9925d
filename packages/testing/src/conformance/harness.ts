import { clusterv1beta2 } from "@capi-ts/sdk/api";
import { isProvisioned } from "@capi-ts/sdk/contract";
import {
  isAlreadyExists,
  KubeClient,
  NodeResource,
  type ResourceDescriptor,
} from "@capi-ts/sdk/runtime";
import type { KubeConfig } from "@kubernetes/client-node";
import type { ApiServer, RequestRecord } from "../apiserver/index.js";
import { startApiServer } from "../apiserver/index.js";
import {
  type CapiCore,
  externalControlPlaneCrd,
  externalControlPlaneTemplateCrd,
  markWorkloadClusterReady,
  setExternalControlPlane,
  startCapiCore,
} from "../capi/index.js";
import type { CRDSource } from "../controlplane/crds.js";
import { type RealCapiCore, startControlPlane } from "../controlplane/index.js";
import { capiCrdsFolder, certManagerStandInCrdsFolder } from "../crds.js";
import { type AutoscalerScenarioHost, autoscalerScenarios } from "./autoscaler-actions.js";
import { realCoreScenarios } from "./core-controllers.js";
import { isTransientCoreError } from "./core-errors.js";
import {
  apiServerFaultsScenario,
  type CoreScenarioHost,
  cloudThrottlingScenario,
  deletionInFlightScenario,
  externalAutoscalerScenario,
  MachinePools,
  SUITE_NAMESPACE as NAMESPACE,
  type Obj,
  outOfBandScenario,
  pauseScenario,
  rollEveryInstance,
  scaleScenario,
  sleep,
  templateRolloutScenario,
  tokenRotationScenario,
  WATCH_FILTER_VALUE,
  watchFilterScenario,
  writtenBy,
} from "./core-scenarios.js";
import { drainScenarios } from "./drain.js";
import { ConformanceError, type ConformancePoolObject, InvariantMonitor } from "./invariants.js";
import { checkKindDefinition } from "./kind-checks.js";
import {
  type MachinesScenarioHost,
  machinePoolMachinesScenarios,
  machinesProblem,
} from "./machines.js";
import { type MoveScenarioHost, moveScenarios } from "./move.js";
import { type NodeScenarioHost, nodeScenarios, type PoolMachinePool } from "./nodes.js";
import { type ProviderUpgradeHost, providerUpgradeScenarios } from "./provider-upgrade.js";
import { type ScaleFromZeroHost, scaleFromZeroScenarios } from "./scale-from-zero.js";
import {
  AUTOSCALER_SCENARIOS,
  DRAIN_SCENARIOS,
  MACHINE_POOL_MACHINES_SCENARIOS,
  NODE_SCENARIOS,
  PROVIDER_LIFECYCLE_SCENARIOS,
  REAL_CORE_SCENARIOS,
  SCALE_FROM_ZERO_SCENARIOS,
  STRATEGY_SCENARIOS,
  TOPOLOGY_SCENARIOS,
  WORKLOAD_CLUSTER_SCENARIOS,
} from "./scenario-ids.js";
import { crdHasStrategyField, type StrategyScenarioHost, strategyScenarios } from "./strategies.js";
import { scaled } from "./time-scale.js";
import { type TopologyScenarioHost, topologyScenarios } from "./topology.js";
import type {
  ConformanceCore,
  ConformancePool,
  ConformanceProvider,
  ConformanceScenario,
  ConformanceScenarioContext,
  MachinePoolConformanceOptions,
} from "./types.js";
import {
  openWorkloadAccess,
  realWorkloadAccess,
  type WorkloadAccessIssuer,
  type WorkloadScenarioHost,
  workloadClusterScenarios,
} from "./workload.js";

/**
 * The built-in scenarios, in the order they run: id and what each checks. Select a subset with
 * `scenarios`, add your own with `extraScenarios`.
 *
 * @example
 * ```ts
 * runMachinePoolConformance({ ...options, scenarios: CONFORMANCE_SCENARIOS.map((s) => s.id).filter((id) => id !== "autoscaler") });
 * ```
 */
export const CONFORMANCE_SCENARIOS: readonly {
  readonly id: ConformanceScenario;
  readonly title: string;
}[] = [
  { id: "crd", title: "CRD, RBAC and contract labels" },
  { id: "scale", title: "scale up, down and to zero" },
  { id: "tokenRotation", title: "bootstrap token rotation replaces no instance" },
  { id: "templateRollout", title: "a template change rolls every instance" },
  { id: "autoscaler", title: "replicas handed to an external autoscaler and back" },
  { id: "pause", title: "pause and unpause" },
  { id: "deletionInFlight", title: "deletion with instances in flight" },
  { id: "outOfBandDeletion", title: "an instance deleted out of band" },
  { id: "spotInterruption", title: "a spot interruption" },
  { id: "cloudThrottling", title: "cloud throttling" },
  { id: "apiServerFaults", title: "API server errors and cut watches" },
  ...WORKLOAD_CLUSTER_SCENARIOS,
  ...MACHINE_POOL_MACHINES_SCENARIOS,
  ...AUTOSCALER_SCENARIOS,
  ...REAL_CORE_SCENARIOS,
  ...TOPOLOGY_SCENARIOS,
  ...PROVIDER_LIFECYCLE_SCENARIOS,
  ...SCALE_FROM_ZERO_SCENARIOS,
  ...NODE_SCENARIOS,
  ...STRATEGY_SCENARIOS,
  ...DRAIN_SCENARIOS,
  { id: "watchFilter", title: "a pool outside the watch filter is never touched (R20)" },
  { id: "cleanup", title: "every pool deleted leaves nothing behind" },
];

/** How long nobody may write before a steady-state window starts, with MachinePool Machines. */
const MACHINES_QUIET_MS = 2_000;
/** The same quiet window against the emulator, whose writes follow each other without rate limits. */
const EMULATOR_QUIET_MS = 1_000;
/** Steady-state measurements when the cloud refused calls the provider may still be retrying. */
const STEADY_STATE_ATTEMPTS = 3;
const CLUSTER = "conformance";
/** The watch filter of the suite's objects; the provider must run with it (R20). */
/** A Cluster of another team, whose pools the provider must never touch. */
const WATCH_FILTER_LABEL = "cluster.x-k8s.io/watch-filter";
const FIELD_MANAGER = "capi-ts-conformance";
const READS = new Set(["get", "list", "watch"]);

/**
 * One write as a failure message names it: verb, resource, name and writer, and for an Event its type
 * and reason (an Event's name is a random suffix; its reason says which code path wrote it).
 */
function describeWrite(write: RequestRecord): string {
  const subresource = write.subresource ? `/${write.subresource}` : "";
  const writer = write.fieldManager ?? write.userAgent ?? "?";
  let what = "";
  if (write.resource === "events" && typeof write.body === "object" && write.body !== null) {
    const event = write.body as { type?: unknown; reason?: unknown; series?: unknown };
    const type = typeof event.type === "string" ? event.type : "";
    const reason = typeof event.reason === "string" ? event.reason : "";
    if (type || reason) what = ` (${[type, reason].filter(Boolean).join(" ").slice(0, 80)})`;
  } else if (write.verb === "patch" && typeof write.body === "object" && write.body !== null) {
    // Which fields a patch touched (never their values) tells a late write's cause apart.
    const fields = patchedFields(write.body, "", 3).slice(0, 6);
    if (fields.length > 0) what = ` (${fields.join(", ").slice(0, 160)})`;
    // A late condition patch names its conditions: type, status and reason (never the message).
    const conditions = patchedConditions(write.body);
    if (conditions) what += ` [conditions: ${conditions}]`;
  }
  return `${write.verb} ${write.resource}${subresource} ${write.name ?? ""}${what} by ${writer}`;
}
/** `writer ×count` of each writer of `writes`, at most five named. */
function writersOf(writes: readonly RequestRecord[]): string {
  const counts = new Map<string, number>();
  for (const write of writes) {
    const writer = write.fieldManager ?? write.userAgent ?? "?";
    counts.set(writer, (counts.get(writer) ?? 0) + 1);
  }
  const named = [...counts].slice(0, 5).map(([writer, n]) => `${writer.slice(0, 80)} ×${n}`);
  return `${named.join(", ")}${counts.size > 5 ? `, and ${counts.size - 5} more` : ""}`;
}

/** `Type=Status Reason` of each condition in a patch body's `status.conditions`, bounded. */
function patchedConditions(body: object): string | undefined {
  const status = (body as { status?: unknown }).status;
  if (typeof status !== "object" || status === null) return undefined;
  const list = (status as { conditions?: unknown }).conditions;
  if (!Array.isArray(list)) return undefined;
  const word = (v: unknown) =>
    typeof v === "string" ? v.replace(/[^\w.-]/g, "").slice(0, 60) : "?";
  return list
    .slice(0, 8)
    .map((c: unknown) => {
      const { type, status: value, reason } = (c ?? {}) as Record<string, unknown>;
      return `${word(type)}=${word(value)} ${word(reason)}`;
    })
    .join(", ");
}
/** Dotted paths of a patch body's fields, `depth` levels deep (lists and metadata bookkeeping end a path). */
function patchedFields(body: object, prefix: string, depth: number): string[] {
  const paths: string[] = [];
  for (const [key, value] of Object.entries(body)) {
    if (prefix === "" && (key === "apiVersion" || key === "kind")) continue;
    if (
      prefix === "metadata." &&
      (key === "resourceVersion" || key === "name" || key === "namespace")
    )
      continue;
    const path = `${prefix}${key}`;
    if (depth > 1 && typeof value === "object" && value !== null && !Array.isArray(value)) {
      const inner = patchedFields(value, `${path}.`, depth - 1);
      paths.push(...(inner.length > 0 ? inner : [path]));
    } else paths.push(path);
  }
  return paths;
}

const LIFECYCLE_IDS: ReadonlySet<string> = new Set(PROVIDER_LIFECYCLE_SCENARIOS.map((s) => s.id));

const Clusters = clusterv1beta2.ClusterResource as unknown as ResourceDescriptor<Obj>;
const KubeadmConfigs = {
  group: "bootstrap.cluster.x-k8s.io",
  version: "v1beta2",
  kind: "KubeadmConfig",
  plural: "kubeadmconfigs",
  scope: "Namespaced",
  subresources: { status: true },
} as ResourceDescriptor<Obj>;

/** The API server the suite runs on, whichever core judges. */
interface SuiteBackend {
  readonly kubeConfig: KubeConfig;
  /** The workload cluster: where Nodes live, reached by core only through the kubeconfig Secret. */
  readonly workloadKubeConfig: KubeConfig;
  /** Credentials of the workload cluster for the workload-cluster scenarios. */
  readonly workloadAccess: WorkloadAccessIssuer;
  /** Requests answered so far (the in-memory log, or the real server's audit log). */
  requests(): RequestRecord[];
  /** Requests the workload cluster answered so far (its Node writes). */
  workloadRequests(): RequestRecord[];
  /** Fault injection: in-memory only. */
  readonly faults: ApiServer["faults"] | undefined;
  /** Real core, when it judges. */
  readonly realCore: RealCapiCore | undefined;
  /** Installs CRDs on the management cluster. */
  installCRDs(crds: readonly CRDSource[]): Promise<void>;
  stop(): Promise<void>;
}

/** The core to judge by: the option, else CAPI_TS_CONFORMANCE_CORE, else the emulator. */
function chosenCore(option: ConformanceCore | undefined): ConformanceCore {
  const value = option ?? process.env.CAPI_TS_CONFORMANCE_CORE ?? "emulator";
  if (value !== "emulator" && value !== "real") {
    throw new Error(
      `conformance: core must be "emulator" or "real", got ${JSON.stringify(value)} (option core or CAPI_TS_CONFORMANCE_CORE)`,
    );
  }
  return value;
}

function chosenRateLimit(option: number | undefined): number {
  const raw = process.env.CAPI_TS_CONFORMANCE_RATE_LIMIT_MS;
  const value = option ?? (raw === undefined || raw === "" ? 1_000 : Number(raw));
  if (!Number.isInteger(value) || value < 0) {
    throw new Error(
      `conformance: the emulator's rate limit must be a whole number of ms ≥ 0 (1000 is core's; 0 measures the provider alone), got ${JSON.stringify(option ?? raw)} (option emulatorRateLimitMs or CAPI_TS_CONFORMANCE_RATE_LIMIT_MS)`,
    );
  }
  return value;
}

/** One scenario: a name for the report, the actor it needs, and its body. */
export interface ConformanceScenarioDefinition {
  /** Scenario id (built-in or the provider's own). */
  readonly id: string;
  /** What it does, for the test name. */
  readonly title: string;
  /** Why it was skipped, or undefined when it can run with the provider's cloud. */
  readonly skipReason: string | undefined;
  /** Runs it; throws a {@link ConformanceError} naming the broken invariant. */
  run(): Promise<void>;
}

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
  /** The cloud's refused calls when the provider was last measured at steady state. */
  #failedCallsSeen = 0;
  readonly #created: ConformancePool[] = [];
  /** The Clusters the suite created: real core's Cluster controller reconciles them too. */
  readonly #clusters = new Set<string>();
  readonly #rateLimitMs: number;

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
  }

  get #t() {
    const t = this.#options.timeouts ?? {};
    return {
      convergeMs: t.convergeMs ?? 20_000,
      steadyStateMs: t.steadyStateMs ?? 1500,
      settleMs: t.settleMs ?? 500,
      pauseMs: t.pauseMs ?? 1000,
    };
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
    const providerCrds = this.#providerCrds();
    if (this.core === "real") {
      // The workload cluster is a second kube-apiserver + etcd (no core, no CRDs): Nodes live only
      // there, and core and the provider reach it only through the <cluster>-kubeconfig Secret.
      // Bootstrap tokens give the workload scenarios credentials they can revoke.
      const [management, workload] = await Promise.allSettled([
        startControlPlane({ capiCore: true, requestLog: true }),
        startControlPlane({
          apiServerArgs: ["--enable-bootstrap-token-auth=true"],
          requestLog: true,
          // The disruption controller keeps PodDisruptionBudgets' status, which evictions read.
          controllerManagerArgs: [
            "--controllers=garbage-collector-controller,namespace-controller,disruption-controller",
          ],
        }),
      ]);
      if (management.status === "rejected" || workload.status === "rejected") {
        if (management.status === "fulfilled") await management.value.stop();
        if (workload.status === "fulfilled") await workload.value.stop();
        throw management.status === "rejected"
          ? management.reason
          : (workload as PromiseRejectedResult).reason;
      }
      const cp = management.value;
      const wl = workload.value;
      this.#api = {
        kubeConfig: cp.kubeConfig,
        workloadKubeConfig: wl.kubeConfig,
        workloadAccess: realWorkloadAccess(
          new KubeClient(wl.kubeConfig, { fieldManager: FIELD_MANAGER }),
          wl.kubeConfig,
        ),
        requests: () => cp.requests(),
        workloadRequests: () => wl.requests(),
        faults: undefined,
        realCore: cp.capiCore,
        installCRDs: (crds) => cp.installCRDs(crds),
        stop: async () => {
          await cp.stop();
          await wl.stop();
        },
      };
      await cp.installCRDs(providerCrds);
      // clusterctl finds cert-manager installed when its Issuer and Certificate kinds are served.
      if (this.#options.providerUpgrade) await cp.installCRDs([certManagerStandInCrdsFolder]);
      // Real core has no bootstrap provider: the stand-in answers the pools' KubeadmConfigs.
      this.#core = await startCapiCore({ kubeConfig: cp.kubeConfig, machinePools: false });
    } else {
      const api = await startApiServer();
      // A second in-memory API server is the workload cluster: Nodes register and are read there only,
      // so core and the provider must reach them through the <cluster>-kubeconfig Secret.
      // HTTPS, as a real workload cluster: the SDK's ClusterCache refuses a plain-HTTP server.
      const workload = await startApiServer({ tls: true });
      this.#api = {
        kubeConfig: api.kubeConfig,
        workloadKubeConfig: workload.kubeConfig,
        workloadAccess: openWorkloadAccess(workload.kubeConfig),
        requests: () => api.requests(),
        workloadRequests: () => workload.requests(),
        faults: api.faults,
        realCore: undefined,
        installCRDs: async (crds) => {
          await api.installCRDs([...crds]);
        },
        stop: async () => {
          await api.stop();
          await workload.stop();
        },
      };
      await api.installCRDs([this.#options.capiCrds ?? capiCrdsFolder]);
      await api.installCRDs(providerCrds);
      this.#core = await startCapiCore({
        kubeConfig: api.kubeConfig,
        rateLimitIntervalMs: this.#rateLimitMs,
      });
    }
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
    await this.#coreConnected(CLUSTER);
  }

  /**
   * On real core: waits until core's ClusterCache logs `Connected` for the Cluster (its connection to
   * the workload cluster, built from the kubeconfig Secret), so a test bed that core cannot reach fails
   * here with core's log instead of as a timeout in the first scenario.
   */
  async #coreConnected(cluster: string): Promise<void> {
    const realCore = this.#api?.realCore;
    if (!realCore) return;
    const deadline = Date.now() + 60_000;
    while (!realCore.connected({ namespace: NAMESPACE, name: cluster })) {
      if (Date.now() > deadline) {
        throw new Error(
          `conformance: real core's ClusterCache did not connect to the workload cluster of Cluster ${NAMESPACE}/${cluster} within 60 s (through its <cluster>-kubeconfig Secret). Core's log (${realCore.logFile}):\n${realCore.logTail(30)}`,
        );
      }
      await sleep(200);
    }
  }

  /** The CRDs the suite installs for the provider: its kinds' and the control plane stand-in's. */
  #providerCrds(): Record<string, unknown>[] {
    const kind = this.#options.kind;
    return [
      externalControlPlaneCrd(),
      externalControlPlaneTemplateCrd(),
      kind.crd,
      ...(kind.templateCrd ? [kind.templateCrd] : []),
      ...(kind.machine ? [kind.machine.crd] : []),
    ];
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
    const o = this.#options;
    const actors = () => this.#provider?.cloud.actors;
    const defs: Array<[string, string, () => string | undefined, () => Promise<void>]> = [
      [
        "crd",
        "CRD, RBAC and contract labels",
        () => undefined,
        async () => checkKindDefinition(this.#options.kind),
      ],
      [
        "scale",
        "scale up, down and to zero",
        () => undefined,
        () => scaleScenario(this.#coreHost()),
      ],
      [
        "tokenRotation",
        "bootstrap token rotation replaces no instance",
        () => undefined,
        () => tokenRotationScenario(this.#coreHost()),
      ],
      [
        "templateRollout",
        "a template change rolls every instance",
        () => (o.templateChange ? undefined : "no templateChange option"),
        () => templateRolloutScenario(this.#coreHost()),
      ],
      [
        "autoscaler",
        "replicas handed to an external autoscaler and back",
        () =>
          actors()?.setDesiredReplicas ? undefined : "cloud.actors.setDesiredReplicas missing",
        () => externalAutoscalerScenario(this.#coreHost()),
      ],
      ["pause", "pause and unpause", () => undefined, () => pauseScenario(this.#coreHost())],
      [
        "deletionInFlight",
        "deletion with instances in flight",
        () => undefined,
        () => deletionInFlightScenario(this.#coreHost()),
      ],
      [
        "outOfBandDeletion",
        "an instance deleted out of band",
        () => (actors()?.terminateInstance ? undefined : "cloud.actors.terminateInstance missing"),
        () => outOfBandScenario(this.#coreHost(), "terminateInstance"),
      ],
      [
        "spotInterruption",
        "a spot interruption",
        () => (actors()?.interruptSpot ? undefined : "cloud.actors.interruptSpot missing"),
        () => outOfBandScenario(this.#coreHost(), "interruptSpot"),
      ],
      [
        "cloudThrottling",
        "cloud throttling",
        () => (actors()?.throttle ? undefined : "cloud.actors.throttle missing"),
        () => cloudThrottlingScenario(this.#coreHost()),
      ],
      [
        "apiServerFaults",
        "API server errors and cut watches",
        () =>
          this.core === "real"
            ? "needs fault injection, which only the in-memory API server has (core: emulator)"
            : undefined,
        () => apiServerFaultsScenario(this.#coreHost()),
      ],
      ...workloadClusterScenarios(() => this.#workloadHost(), {
        hasTemplateChange: o.templateChange !== undefined,
        joinDelayActor: () => actors()?.setNodeJoinDelay !== undefined,
      }).map((w): [string, string, () => string | undefined, () => Promise<void>] => [
        w.id,
        w.title,
        () => w.skipReason(),
        () => w.run(),
      ]),
      ...machinePoolMachinesScenarios(() => this.#machinesHost()).map(
        (m): [string, string, () => string | undefined, () => Promise<void>] => [
          m.id,
          m.title,
          () => m.skipReason(),
          () => m.run(),
        ],
      ),
      ...autoscalerScenarios(() => this.#autoscalerHost()).map(
        (a): [string, string, () => string | undefined, () => Promise<void>] => [
          a.id,
          a.title,
          () => a.skipReason(),
          () => a.run(),
        ],
      ),
      ...realCoreScenarios(() => ({ ...this.#machinesHost(), core: this.core })).map(
        (r): [string, string, () => string | undefined, () => Promise<void>] => [
          r.id,
          r.title,
          () => r.skipReason(),
          () => r.run(),
        ],
      ),
      ...topologyScenarios(() => this.#topologyHost()).map(
        (t): [string, string, () => string | undefined, () => Promise<void>] => [
          t.id,
          t.title,
          () => t.skipReason(),
          () => t.run(),
        ],
      ),
      ...providerUpgradeScenarios(() => this.#providerUpgradeHost()).map(
        (u): [string, string, () => string | undefined, () => Promise<void>] => [
          u.id,
          u.title,
          () => u.skipReason(),
          () => u.run(),
        ],
      ),
      ...moveScenarios(() => this.#moveHost()).map(
        (m): [string, string, () => string | undefined, () => Promise<void>] => [
          m.id,
          m.title,
          () => m.skipReason(),
          () => m.run(),
        ],
      ),
      ...scaleFromZeroScenarios(() => this.#scaleFromZeroHost(), {
        hasCapacityChange: o.capacityChange !== undefined,
      }).map((z): [string, string, () => string | undefined, () => Promise<void>] => [
        z.id,
        z.title,
        () => z.skipReason(),
        () => z.run(),
      ]),
      ...nodeScenarios(() => this.#nodesHost(), {
        hasTemplateChange: o.templateChange !== undefined,
      }).map((n): [string, string, () => string | undefined, () => Promise<void>] => [
        n.id,
        n.title,
        () => n.skipReason(),
        () => n.run(),
      ]),
      ...strategyScenarios(() => this.#strategyHost(), {
        hasTemplateChange: o.templateChange !== undefined,
        canTerminate: () => actors()?.terminateInstance !== undefined,
        machinePoolMachines: o.kind.machine !== undefined,
        hasStrategyField: crdHasStrategyField(o.kind.crd),
      }).map((s): [string, string, () => string | undefined, () => Promise<void>] => [
        s.id,
        s.title,
        () => s.skipReason(),
        () => s.run(),
      ]),
      ...drainScenarios(() => this.#autoscalerHost()).map(
        (d): [string, string, () => string | undefined, () => Promise<void>] => [
          d.id,
          d.title,
          () => d.skipReason(),
          () => d.run(),
        ],
      ),
      [
        "watchFilter",
        "a pool outside the watch filter is never touched (R20)",
        () => undefined,
        () => watchFilterScenario(this.#coreHost()),
      ],
    ];
    for (const extra of o.extraScenarios ?? []) {
      if (defs.some(([id]) => id === extra.id) || extra.id === "cleanup") {
        throw new Error(
          `conformance: extraScenarios has the id "${extra.id}", which is taken; give your scenario its own id`,
        );
      }
      defs.push([extra.id, extra.title, () => undefined, () => extra.run(this.#context())]);
    }
    defs.push([
      "cleanup",
      "every pool deleted leaves nothing behind",
      () => undefined,
      () => this.#cleanup(),
    ]);
    const known = new Set(defs.map(([id]) => id));
    const unknown = (o.scenarios ?? []).filter((id) => !known.has(id));
    if (unknown.length > 0) {
      throw new Error(
        `conformance: unknown scenario(s) ${unknown.map((id) => JSON.stringify(id)).join(", ")} in scenarios; known: ${[...known].join(", ")}`,
      );
    }
    return defs
      .filter(([id]) => !o.scenarios || o.scenarios.includes(id))
      .map(([id, title, skip, run]) => ({
        id,
        title: `${id}: ${title}`,
        get skipReason() {
          // The upgrade replaces the kind's CRDs with the releases' and the suite's provider with the
          // second release's: it runs only when a suite lists it.
          if (LIFECYCLE_IDS.has(id) && !o.scenarios?.includes(id)) {
            return "runs only when listed in `scenarios` (clusterctl changes the management cluster's components or moves objects out of it)";
          }
          return skip();
        },
        run: async () => {
          const since = Date.now();
          await run();
          this.#monitor.assertClean();
          this.#assertCoreHealthy(since);
        },
      }));
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
      converged: (pool, replicas) => this.#converged(pool, replicas),
      steadyState: (pool, replicas) => this.#steadyState(pool, replicas),
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
      converged: (pool, replicas, timeoutMs) => this.#converged(pool, replicas, timeoutMs),
      notConverged: (pool, replicas) => this.#notConverged(pool, replicas),
      steadyState: (pool, replicas) => this.#steadyState(pool, replicas),
      quiet: (pool) => this.#quiet(pool),
      deletePool: (pool) => this.#deletePool(pool),
      until: (what, check, timeoutMs) => this.#until(what, check, timeoutMs),
      readyNodes: (pool) => this.#readyNodes(pool),
      writesSince: (since) => this.#writesSince(since),
      key: (pool) => this.#key(pool),
      mpKey: (pool) => this.#mpKey(pool),
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
      converged: (pool, replicas, timeoutMs) => this.#converged(pool, replicas, timeoutMs),
      deletePool: (pool) => this.#deletePool(pool),
      until: (what, check, timeoutMs) => this.#until(what, check, timeoutMs),
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
      converged: (pool, replicas) => this.#converged(pool, replicas),
      deletePool: (pool) => this.#deletePool(pool),
      until: (what, check, timeoutMs) => this.#until(what, check, timeoutMs),
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
      steadyState: (pool, replicas) => this.#steadyState(pool, replicas),
      converged: (pool, replicas, timeoutMs) => this.#converged(pool, replicas, timeoutMs),
      notConverged: (pool, replicas) => this.#notConverged(pool, replicas),
      until: (what, check, timeoutMs) => this.#until(what, check, timeoutMs),
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
      converged: (pool, replicas) => this.#converged(pool, replicas),
      deletePool: (pool) => this.#deletePool(pool),
      until: (what, check, timeoutMs) => this.#until(what, check, timeoutMs),
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
      providerCrds: this.#providerCrds(),
      watchFilter: { label: WATCH_FILTER_LABEL, value: WATCH_FILTER_VALUE },
      installCRDs: (crds) => api.installCRDs(crds),
      steadyStateMs: this.#t.steadyStateMs,
      until: (what, check, timeoutMs) => this.#until(what, check, timeoutMs),
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
      converged: (pool, replicas) => this.#converged(pool, replicas),
      steadyState: (pool, replicas) => this.#steadyState(pool, replicas),
      deletePool: (pool) => this.#deletePool(pool),
      until: (what, check, timeoutMs) => this.#until(what, check, timeoutMs),
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
      converged: (pool, replicas) => this.#converged(pool, replicas),
      notConverged: (pool, replicas) => this.#notConverged(pool, replicas),
      deletePool: (pool) => this.#deletePool(pool),
      until: (what, check, timeoutMs) => this.#until(what, check, timeoutMs),
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
      converged: (pool, replicas) => this.#converged(pool, replicas),
      steadyState: (pool, replicas) => this.#steadyState(pool, replicas),
      deletePool: (pool) => this.#deletePool(pool),
      until: (what, check, timeoutMs) => this.#until(what, check, timeoutMs),
      readyNodes: (pool) => this.#readyNodes(pool),
      quiet: (pool) => this.#quiet(pool),
    };
  }

  /** What the cluster-autoscaler scenarios get. */
  #autoscalerHost(): AutoscalerScenarioHost {
    return {
      ...this.#machinesHost(),
      steadyState: (pool, replicas) => this.#steadyState(pool, replicas),
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

  #key(pool: ConformancePool) {
    return { namespace: pool.namespace, name: pool.name };
  }

  /** The MachinePool of `pool` (a topology-managed pool's has its own name). */
  #mpKey(pool: ConformancePool) {
    return { namespace: pool.namespace, name: pool.machinePoolName ?? pool.name };
  }

  async #setReplicas(pool: ConformancePool, replicas: number): Promise<void> {
    await this.#env.client.mergePatch(MachinePools, this.#mpKey(pool), { spec: { replicas } });
  }

  async #setClusterPaused(paused: boolean): Promise<void> {
    await this.#env.client.mergePatch(
      Clusters,
      { namespace: NAMESPACE, name: CLUSTER },
      { spec: { paused } },
    );
  }

  /**
   * Polls `check` (which returns undefined when satisfied, or the reason it is not) until it passes;
   * stops early on a recorded invariant violation; on timeout throws with the last reason.
   * `timeoutMs` is how long the reason may stay the same: it is scaled by the machine's load
   * ({@link scaled}), and a new reason (the cloud went from 1 to 2 instances) counts as progress and
   * restarts it, up to three times the scaled budget in all. A busy machine that is slow but moving
   * waits; a pool that is stuck fails as soon as on an idle one.
   */
  async #until(
    what: string,
    check: () => Promise<string | undefined>,
    timeoutMs = this.#t.convergeMs,
    pool?: ConformancePool,
  ) {
    const budget = scaled(timeoutMs);
    const started = Date.now();
    const hardDeadline = started + budget * 3;
    let deadline = started + budget;
    let last = "not checked yet";
    for (;;) {
      this.#monitor.assertClean();
      let reason: string;
      try {
        const problem = await check();
        if (problem === undefined) return;
        reason = problem;
      } catch (error) {
        if (error instanceof ConformanceError) throw error;
        reason = error instanceof Error ? error.message : String(error);
      }
      if (reason !== last) deadline = Math.min(hardDeadline, Date.now() + budget);
      last = reason;
      if (Date.now() > deadline) {
        const [check, ...rest] = last.split(": ");
        // Reasons start with the check they belong to ("status.providerIDsMatchCloud: …").
        const prefixed = /^[a-z]+(\.[A-Za-z]+)?$/.test(check ?? "") && rest.length > 0;
        const named = prefixed ? (check as string) : "converge";
        const message = prefixed ? rest.join(": ") : last;
        const cause = pool ? await this.#rootCause(pool, message) : "";
        const waited = Date.now() - started;
        const budgetNote =
          budget === timeoutMs ? `${timeoutMs} ms` : `${budget} ms, ${timeoutMs} ms scaled by load`;
        throw new ConformanceError(
          named,
          `timed out after ${waited} ms waiting for ${what} (no progress for ${budgetNote}): ${message}${cause}`,
        );
      }
      await sleep(40);
    }
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

  /** Why the pool is not converged at `replicas`, or undefined when it is. */
  async #notConverged(pool: ConformancePool, replicas: number): Promise<string | undefined> {
    const { client, provider } = this.#env;
    const imp = await client.get(this.#pools, this.#key(pool));
    const mp = await client.get(MachinePools, this.#mpKey(pool));
    const live = [...(await provider.cloud.liveProviderIds(pool))].sort();
    const ids = [...(imp.spec?.providerIDList ?? [])].sort();
    if (live.length !== replicas) {
      return `converge: the cloud has ${live.length} live instances, MachinePool wants ${replicas}`;
    }
    if (JSON.stringify(ids) !== JSON.stringify(live)) {
      return `status.providerIDsMatchCloud: providerIDList ${JSON.stringify(imp.spec?.providerIDList ?? [])} must list exactly the live instances ${JSON.stringify(live)}`;
    }
    if ((imp.status?.replicas ?? 0) !== ids.length) {
      return `status.replicasMatchesProviderIDs: status.replicas ${imp.status?.replicas} must equal providerIDList length ${ids.length}`;
    }
    if (!isProvisioned(imp)) return "converge: the pool is not provisioned (status.ready)";
    const ready = imp.status?.conditions?.find((c) => c.type === "Ready");
    if (!ready) return "conditions.readyAlwaysPresent: the pool has no Ready condition";
    if (ready.status !== "True")
      return `converge: Ready is ${ready.status} (${ready.reason}: ${ready.message ?? ""})`;
    if ((mp.status?.replicas ?? 0) !== replicas) {
      return `converge: core has not copied the pool yet (MachinePool status.replicas ${mp.status?.replicas ?? 0})`;
    }
    // Converged as core sees it: every instance's Node found and Ready (the phase is Running only
    // when the ready Node count equals spec.replicas), and the latest spec observed. Until then
    // core itself still writes the MachinePool, so a steady-state window would catch its writes.
    const status = mp.status as {
      phase?: string;
      observedGeneration?: number;
      nodeRefs?: unknown[];
      deprecated?: { v1beta1?: { readyReplicas?: number } };
    };
    const readyNodes = status.deprecated?.v1beta1?.readyReplicas ?? 0;
    const copied = [...((mp.spec as { providerIDList?: string[] }).providerIDList ?? [])].sort();
    if (JSON.stringify(copied) !== JSON.stringify(ids)) {
      return `converge: core has not copied the pool's providerIDList into the MachinePool yet (${copied.length} of ${ids.length} IDs match)`;
    }
    if (status.phase !== "Running" || (status.nodeRefs?.length ?? 0) !== replicas) {
      return `converge: core reports the MachinePool ${status.phase ?? "without a phase"} with ${status.nodeRefs?.length ?? 0} Node references and ${readyNodes} ready Nodes of ${replicas}`;
    }
    if (status.observedGeneration !== mp.metadata?.generation) {
      return `converge: core has not observed generation ${mp.metadata?.generation} of the MachinePool yet (observedGeneration ${status.observedGeneration})`;
    }
    // MachinePool Machines: converged once core's Machines are there and Ready, each for one instance.
    if (this.#options.kind.machine) return machinesProblem(this.#machinesHost(), pool);
    return undefined;
  }

  async #converged(pool: ConformancePool, replicas: number, timeoutMs?: number): Promise<void> {
    await this.#until(
      `${pool.name} to converge at ${replicas} replicas`,
      () => this.#notConverged(pool, replicas),
      timeoutMs,
      pool,
    );
  }

  /**
   * What the pool itself says is wrong, for a timeout message: its `Ready` condition when not True
   * (the provider's own reason: a stopped runaway, a cloud failure), and providerIDs that several
   * live instances share. Empty when the message already says it or nothing more is known.
   */
  async #rootCause(pool: ConformancePool, message: string): Promise<string> {
    const parts: string[] = [];
    try {
      const imp = await this.#env.client.get(this.#pools, this.#key(pool));
      const ready = imp.status?.conditions?.find((c) => c.type === "Ready");
      if (ready && ready.status !== "True" && !message.includes(`(${ready.reason}`)) {
        parts.push(
          `the pool reports Ready=${ready.status} (${ready.reason}${ready.message ? `: ${ready.message}` : ""})`,
        );
      }
    } catch {
      // The pool is gone: the message says what was waited for.
    }
    // On real core, its latest errors about the pool's objects (Machines included) often name the cause.
    const realCore = this.#api?.realCore;
    if (realCore) {
      const recent = realCore
        .reconcileErrors({ namespace: NAMESPACE })
        .filter((e) => e.name.startsWith(pool.name) && Date.now() - e.at.getTime() < 30_000)
        .slice(-2);
      for (const e of recent)
        parts.push(`core's ${e.controller} controller failed ${e.kind} ${e.name}: ${e.error}`);
    }
    const live = await Promise.resolve(this.#env.provider.cloud.liveProviderIds(pool)).catch(
      () => [] as string[],
    );
    const shared = [...new Set(live.filter((id, i) => live.indexOf(id) !== i))];
    if (shared.length > 0) {
      parts.push(
        `status.providerIDsUnique: several live instances report the providerID ${shared.slice(0, 3).join(", ")}`,
      );
    }
    return parts.length > 0 ? `; ${parts.join("; ")}` : "";
  }

  /** Writes by anyone but the suite itself (leases excluded: leader election renews them). */
  #writesSince(since: number): RequestRecord[] {
    return this.#env.api
      .requests()
      .filter(
        (r) =>
          r.startedAt.getTime() >= since &&
          !READS.has(r.verb) &&
          r.fieldManager !== FIELD_MANAGER &&
          r.resource !== "leases" &&
          r.status < 400,
      );
  }

  /**
   * `steadyState.zeroWrites`: with nothing changing, the provider writes nothing and changes nothing
   * in the cloud. Only the provider's writes count (by {@link ConformanceProvider.identity}): core and
   * its topology controller may write their own objects in the window (real core's capi-topology
   * refreshed the suite's stand-in objects there), and a provider that makes core keep writing never
   * gets quiet before the window. A failure names the provider's writes, and counts the others' by
   * writer.
   *
   * A provider retries a cloud call the cloud refused after a delay of its own, and the pool may look
   * converged meanwhile (Ready stays True through a short throttle): when the cloud reports refused
   * calls since the provider was last measured quiet, a window that catches writes or cloud changes is
   * measured again, up to 3 times. A provider that keeps writing fails on
   * the last one.
   */
  async #steadyState(pool: ConformancePool, replicas: number): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      const cloud = this.#env.provider.cloud;
      const problem = await this.#measureSteadyState(pool, replicas);
      const failed = cloud.failedCallCount?.();
      const retrying = failed !== undefined && failed > this.#failedCallsSeen;
      if (failed !== undefined) this.#failedCallsSeen = failed;
      if (!problem) return;
      if (!retrying || attempt >= STEADY_STATE_ATTEMPTS) {
        const after =
          attempt > 1
            ? ` (measured ${attempt} times: cloud calls the cloud refused were being retried)`
            : "";
        throw new ConformanceError(problem.check, `${problem.message}${after}`);
      }
    }
  }

  /** One steady-state measurement: converged, quiet, then a window without the provider's writes. */
  async #measureSteadyState(
    pool: ConformancePool,
    replicas: number,
  ): Promise<{ check: string; message: string } | undefined> {
    await this.#converged(pool, replicas);
    await sleep(this.#t.settleMs);
    // Converged is what the suite can see; the provider may still be finishing the reconcile that got
    // there (an Event, a last status patch), and real core's Cluster controller sums the pools up into
    // the Cluster's status a rate-limited reconcile later: wait until nobody writes, then measure.
    await this.#quiet(pool);
    const since = Date.now();
    const mutating = this.#env.provider.cloud.callCount({ mutating: true });
    await sleep(this.#t.steadyStateMs);
    const identity = this.#env.provider.identity;
    const writes = this.#writesSince(since);
    const own = writes.filter((w) => writtenBy(w, identity));
    if (own.length > 0) {
      const list = own.slice(0, 5).map(describeWrite).join("; ");
      const others = writersOf(writes.filter((w) => !writtenBy(w, identity)));
      return {
        check: "steadyState.zeroWrites",
        message: `expected 0 API writes by the provider (${identity}) at steady state (${pool.name}, ${replicas} replicas), got ${own.length} in ${this.#t.steadyStateMs} ms: ${list}${others ? `; other writers in the window: ${others}` : ""}`,
      };
    }
    const changes = this.#env.provider.cloud.callCount({ mutating: true }) - mutating;
    if (changes > 0) {
      return {
        check: "steadyState.noCloudChanges",
        message: `expected no mutating cloud calls at steady state (${pool.name}), got ${changes}`,
      };
    }
    return undefined;
  }

  /**
   * With MachinePool Machines, core's Machine controller goes on writing its Machines for a while after
   * the pool converged (conditions it computes from the Node, the InfraMachine and its own clock), and
   * real core's Cluster controller writes the Cluster's status after its pools changed: wait until
   * nobody but the suite has written for 2 s there (1 s against the emulator; `settleMs`, if longer).
   * A provider that keeps writing, or that makes core keep writing, never gets quiet and fails here
   * with the writes it made.
   */
  async #quiet(pool: ConformancePool): Promise<void> {
    // Core's Machine writes come in bursts a second or more apart (and the audit log trails them);
    // the emulator and a provider finishing a reconcile write within one busy-machine pause.
    const windowMs = Math.max(
      this.#t.settleMs,
      this.#options.kind.machine || this.core === "real" ? MACHINES_QUIET_MS : EMULATOR_QUIET_MS,
    );
    await this.#until(`writes around ${pool.name} to settle`, async () => {
      const writes = this.#writesSince(Date.now() - windowMs);
      if (writes.length === 0) return undefined;
      const list = writes.slice(-3).map(describeWrite).join("; ");
      return `steadyState.zeroWrites: ${writes.length} writes in the last ${windowMs} ms after convergence: ${list}`;
    });
  }

  async #deletePool(pool: ConformancePool): Promise<void> {
    const { client, provider } = this.#env;
    await client.delete(MachinePools, this.#mpKey(pool)).catch(() => undefined);
    await this.#until(`${pool.name} to be deleted`, async () => {
      const imp = await client.get(this.#pools, this.#key(pool)).catch(() => undefined);
      if (imp) {
        return `deletion.completes: the InfraMachinePool still exists (deletionTimestamp ${imp.metadata?.deletionTimestamp ?? "unset"}, finalizers ${JSON.stringify(imp.metadata?.finalizers ?? [])})`;
      }
      const mp = await client.get(MachinePools, this.#mpKey(pool)).catch(() => undefined);
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
      const exists = await client.get(this.#pools, this.#key(pool)).then(
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
