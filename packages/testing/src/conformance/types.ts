import type { KubeConfig } from "@kubernetes/client-node";
import type {
  AutoscalerScenario,
  DrainScenario,
  MachinePoolMachinesScenario,
  NodeScenario,
  ProviderLifecycleScenario,
  RealCoreScenario,
  ScaleFromZeroScenario,
  StrategyScenario,
  TopologyScenario,
  WorkloadClusterScenario,
} from "./scenario-ids.js";

/**
 * A pool the suite created: the InfraMachinePool and its MachinePool share this name, except for a
 * pool core's topology controller made from a ClusterClass (`machinePoolName`).
 */
export interface ConformancePool {
  /** Namespace of both objects: `default`, shared by every scenario (each pool has its own name). */
  readonly namespace: string;
  /** Name of the InfraMachinePool (and of its MachinePool unless `machinePoolName` says otherwise). */
  readonly name: string;
  /** Name of the MachinePool when it differs from the InfraMachinePool's (topology-managed pools). */
  readonly machinePoolName?: string;
  /** The Cluster it belongs to. */
  readonly clusterName: string;
}

/**
 * The InfraMachinePool kind under test. The result of `defineInfraMachinePool` fits as is; a provider
 * not built on the SDK fills in the fields by hand.
 */
export interface ConformanceKind {
  /** API group, e.g. `infrastructure.foo.com`. */
  readonly group: string;
  /** Kind, e.g. `FooMachinePool`. */
  readonly kind: string;
  /** Plural resource name, e.g. `foomachinepools`. */
  readonly plural: string;
  /** The version objects are created at. */
  readonly storageVersion: string;
  /** The provider's finalizer on the InfraMachinePool (checked by `deletion.finalizerFirst`). */
  readonly finalizer?: string;
  /** The InfraMachinePool CRD (installed, and checked by the `crd.*` checks). */
  readonly crd: Record<string, unknown>;
  /** The `<Kind>Template` CRD, if the provider ships one (`crd.template`). */
  readonly templateCrd?: Record<string, unknown>;
  /** The ClusterRole aggregated into core's manager (`rbac.aggregatedClusterRole`). */
  readonly clusterRole?: Record<string, unknown>;
  /**
   * The InfraMachine kind of MachinePool Machines (R11), when the provider offers them
   * (`defineInfraMachinePool({ machinePoolMachines: true }).machine` fits): its CRD is installed and
   * the MachinePool Machines scenarios run (`machinePoolMachines`, `machineDeletePriority`,
   * `machineDeleted`, `autoscalerDeleteMachine`; `autoscalerDeleteTainted` runs without them). Leave it
   * out for a provider that runs without them.
   */
  readonly machine?: { readonly kind: string; readonly crd: Record<string, unknown> } | undefined;
}

/** Who may change the cloud behind the provider's back; each enables the scenarios that need it. */
export interface ConformanceActors {
  /** An external autoscaler sets the cloud's desired size (autoscaler hand-off). */
  setDesiredReplicas?(pool: ConformancePool, replicas: number): void | Promise<void>;
  /**
   * A user terminates one instance out of band. A cloud that replaces instances by itself (an AWS
   * Auto Scaling group) launches a replacement; one that does not leaves it to the provider. The
   * scenario holds either way: the ID leaves `providerIDList` and the pool gets back to its size.
   */
  terminateInstance?(pool: ConformancePool, providerID: string): void | Promise<void>;
  /** The cloud reclaims a spot instance (the cloud may replace it with a new ID). */
  interruptSpot?(pool: ConformancePool, providerID: string): void | Promise<void>;
  /** The next `calls` cloud API calls fail with throttling (429 + retry-after). */
  throttle?(calls: number): void | Promise<void>;
  /**
   * Nodes of instances that boot from now on join the workload cluster `ms` (wall time) after the
   * instance runs; `undefined` restores the cloud's own delay (the `nodesJoinLate` scenario).
   */
  setNodeJoinDelay?(ms: number | undefined): void | Promise<void>;
}

/** Filter of {@link ConformanceCloud.callCount}. */
export interface CloudCallFilter {
  /** Only calls that change something (`true`). */
  mutating?: boolean;
  /** Only calls that set a group's desired size. */
  resizes?: boolean;
}

/** What the suite needs to see of the provider's cloud: the truth, read without the provider. */
export interface ConformanceCloud {
  /** providerIDs of the pool's instances that are not terminated (any order). */
  liveProviderIds(pool: ConformancePool): string[] | Promise<string[]>;
  /** How many cloud API calls the provider has made so far (a counter that only grows). */
  callCount(filter?: CloudCallFilter): number;
  /**
   * How many of those calls the cloud refused (throttled, faults injected, errors), a counter that
   * only grows. A provider retries a refused call later while the pool may already look converged
   * (a throttled template update after a spec change whose capacity it already published): with this
   * count, a steady-state window that catches such a retry is measured again (up to 3 times) instead
   * of failing. Without it, every write in the window counts.
   */
  failedCallCount?(): number;
  /**
   * providerIDs of live instances that do not run the pool's latest template (rollout scenario). Without
   * it, a rollout only has to replace every instance that existed before the change.
   */
  outdatedProviderIds?(pool: ConformancePool): string[] | Promise<string[]>;
  /** How many template versions (launch configurations) the pool has had (token rotation scenario). */
  templateVersionCount?(pool: ConformancePool): number | Promise<number>;
  /**
   * The bounds of the pool's group's desired size as the cloud has them (AWS `MinSize`/`MaxSize`;
   * a side the cloud leaves open is `undefined`), `undefined` before the group exists. Enables the
   * `autoscalerBounds` scenario, which checks that the cluster-autoscaler's wider bounds reach them.
   */
  groupBounds?(
    pool: ConformancePool,
  ):
    | { min?: number | undefined; max?: number | undefined }
    | undefined
    | Promise<{ min?: number | undefined; max?: number | undefined } | undefined>;
  /** Cloud resources of the pool still present (group, templates, instances): `[]` once cleaned up. */
  resourcesLeft(pool: ConformancePool): string[] | Promise<string[]>;
  /** Out-of-band actors; scenarios whose actor is missing are skipped. */
  actors?: ConformanceActors;
}

/** What the suite hands to {@link MachinePoolConformanceOptions.startProvider}. */
export interface ConformanceEnvironment {
  /**
   * The management cluster: the suite's in-memory API server with CAPI core emulated, or a real
   * kube-apiserver with real CAPI core.
   */
  readonly kubeConfig: KubeConfig;
  /**
   * The workload cluster, where the provider's instances register their Nodes (a kubelet stand-in
   * gets this one): a second API server next to the management cluster's — in memory with the
   * emulator, a second kube-apiserver + etcd with real core — which core and the provider reach only
   * through the Cluster's `<cluster>-kubeconfig` Secret.
   */
  readonly workloadKubeConfig: KubeConfig;
  /** Which core judges this run. */
  readonly core: ConformanceCore;
  /**
   * The watch filter (R20) the provider must run with (`--watch-filter`, `ManagerOptions.watchFilterValue`).
   * Every object of the suite carries `cluster.x-k8s.io/watch-filter: <this>`; the
   * `runtime.watchFilter` check creates a pool of another team and fails if the provider touches it.
   */
  readonly watchFilterValue: string;
  /**
   * A Node registrar needs this to check bootstrap tokens: whether a token from a pool's bootstrap data
   * is still valid (the bootstrap stand-in rotates them).
   */
  isTokenValid(tokenOrUserData: string): boolean;
}

/** A provider the suite started. */
export interface ConformanceProvider {
  /**
   * How the provider's API requests are recognised in the request log: its field manager or a part of
   * its User-Agent (for steady-state write checks).
   */
  readonly identity: string;
  /** Its cloud, as the suite may observe and disturb it. */
  readonly cloud: ConformanceCloud;
  /** Stops the provider (and its cloud). */
  stop(): Promise<void>;
  /**
   * Where the API server reaches the provider's webhook server (`https://127.0.0.1:<port>`) and the
   * CA that signed its certificate, when it serves one outside the cluster. The `providerUpgrade`
   * scenario points the webhooks of the applied components (admission and CRD conversion) here.
   */
  readonly webhookServer?: { readonly url: string; readonly caBundle: string };
}

/**
 * One release of a provider for the `providerUpgrade` scenario: what `clusterctl` installs (its
 * components and metadata) and how to start the provider at that release.
 */
export interface ProviderRelease {
  /** Its version, `vMAJOR.MINOR.PATCH`, covered by a series of its `metadata`. */
  readonly version: string;
  /** The kind at this release (its CRDs are in `components`). */
  readonly kind: ConformanceKind;
  /** `infrastructure-components.yaml` (`renderComponents`, `componentsYAML`). */
  readonly components: string;
  /** `metadata.yaml` (`metadataYAML`), naming every release's series. */
  readonly metadata: string;
  /**
   * Starts the provider at this release. The second release must run on the cloud the first ran on:
   * the scenario checks that the upgrade replaced no instance. It must serve its webhooks at
   * `webhookServer` (the components' conversion webhook included).
   */
  startProvider(env: ConformanceEnvironment): Promise<ConformanceProvider>;
}

/** Option {@link MachinePoolConformanceOptions.move}: the provider on the target of a move. */
export interface ProviderMoveOptions {
  /**
   * Starts the provider against the target management cluster of the move (`env.kubeConfig`; the
   * workload cluster and watch filter are the suite's), on the cloud `source` runs on: the suite's
   * provider, which keeps running on the source, as a provider does until its cluster is retired.
   * The scenario judges both against that one cloud: nothing may change in it during the move.
   */
  startTargetProvider(
    env: ConformanceEnvironment,
    source: ConformanceProvider,
  ): Promise<ConformanceProvider>;
}

/** Option {@link MachinePoolConformanceOptions.providerUpgrade}: two releases of the provider. */
export interface ProviderUpgradeOptions {
  /** The provider's name for clusterctl (`clusterctl init --infrastructure <name>`). */
  readonly provider: string;
  /** The release installed first (`clusterctl init`). */
  readonly from: ProviderRelease;
  /** The release upgraded to (`clusterctl upgrade apply`). */
  readonly to: ProviderRelease;
  /** Values of the components' clusterctl variables without a default. */
  readonly variables?: Readonly<Record<string, string>>;
  /** Releases what the releases share (their cloud), after the scenario. */
  dispose?(): Promise<void>;
}

/** Scenario names, for {@link MachinePoolConformanceOptions.scenarios}. */
export type ConformanceScenario =
  | "crd"
  | "scale"
  | "tokenRotation"
  | "templateRollout"
  | "autoscaler"
  | "pause"
  | "deletionInFlight"
  | "outOfBandDeletion"
  | "spotInterruption"
  | "cloudThrottling"
  | "apiServerFaults"
  | WorkloadClusterScenario
  | MachinePoolMachinesScenario
  | AutoscalerScenario
  | RealCoreScenario
  | TopologyScenario
  | ScaleFromZeroScenario
  | ProviderLifecycleScenario
  | NodeScenario
  | StrategyScenario
  | DrainScenario
  | "watchFilter"
  | "cleanup";

/**
 * What a provider's own scenario ({@link ConformanceScenarioSpec}) may use: the suite's client and
 * the provider, and the suite's steps, each checking the contract's invariants as the built-in
 * scenarios do.
 */
export interface ConformanceScenarioContext {
  /** A client of the management cluster (the suite's field manager). */
  readonly kubeConfig: KubeConfig;
  /** The workload cluster (see {@link ConformanceEnvironment.workloadKubeConfig}). */
  readonly workloadKubeConfig: KubeConfig;
  /** The provider under test. */
  readonly provider: ConformanceProvider;
  /** Creates an InfraMachinePool and its MachinePool (spec: the suite's `poolSpec` unless given). */
  createPool(replicas: number, spec?: Record<string, unknown>): Promise<ConformancePool>;
  /** Sets `MachinePool.spec.replicas`. */
  setReplicas(pool: ConformancePool, replicas: number): Promise<void>;
  /** Waits until the pool is converged at `replicas` as core sees it; throws naming the reason. */
  converged(pool: ConformancePool, replicas: number): Promise<void>;
  /** Converged, then zero writes and no mutating cloud call for the steady-state window. */
  steadyState(pool: ConformancePool, replicas: number): Promise<void>;
  /** Deletes the MachinePool and waits until pool, MachinePool and cloud resources are gone. */
  deletePool(pool: ConformancePool): Promise<void>;
}

/**
 * A scenario a provider adds to the suite (its own cloud's edge cases): an id, a title and a body
 * that throws `ConformanceError` (or any error) when the provider fails it.
 */
export interface ConformanceScenarioSpec {
  /** Unique id (not one of the built-in {@link ConformanceScenario}s). */
  readonly id: string;
  /** What it checks, for the test name. */
  readonly title: string;
  /** The body. */
  run(context: ConformanceScenarioContext): Promise<void>;
}

/**
 * Time limits of the suite, in real milliseconds on an idle machine. The bounds on something that
 * must happen (convergeMs, scenarioMs) are multiplied by the machine's load and
 * `CAPI_TS_TEST_TIME_SCALE` (`timeScale()`); the windows in which nothing may happen
 * (steadyStateMs, settleMs, pauseMs) are not.
 */
export interface ConformanceTimeouts {
  /**
   * How long a wait (a pool reaching a desired state) may go without progress: the deadline restarts
   * whenever the reason it is not there yet changes, up to three times this in all. Default 20,000.
   */
  convergeMs?: number;
  /** How long "nothing changes" is watched for zero writes. Default 1,500. */
  steadyStateMs?: number;
  /** How long to settle before a steady-state window starts (resync tails). Default 500. */
  settleMs?: number;
  /** How long a paused pool is watched for cloud calls. Default 1,000. */
  pauseMs?: number;
  /** One scenario (vitest test timeout), before scaling; doubled, since waits may stretch. Default 60,000. */
  scenarioMs?: number;
}

/** Options of `runMachinePoolConformance` (`@capi-ts/testing/vitest`) and {@link MachinePoolConformance}. */
export interface MachinePoolConformanceOptions {
  /** Name shown in the test report, e.g. the provider's kind. */
  name: string;
  /** The kind under test. */
  kind: ConformanceKind;
  /** `spec` of a new InfraMachinePool (without contract fields). */
  poolSpec: Record<string, unknown>;
  /**
   * A change of the spec that must roll every instance (e.g. another instance type). Without it the
   * template rollout scenario is skipped.
   */
  templateChange?: (spec: Record<string, unknown>) => Record<string, unknown>;
  /**
   * The spec of a pool whose instances run on capacity the cloud may reclaim (spot, preemptible),
   * from `poolSpec`. With MachinePool Machines the `machineInterruptible` scenario runs a pool of
   * it; without the option that scenario is skipped.
   */
  interruptibleSpec?: (spec: Record<string, unknown>) => Record<string, unknown>;
  /**
   * A change of the spec that changes what one instance offers (another instance type), for the
   * cluster-autoscaler's scale from zero. Give it when the provider publishes `status.capacity` and
   * `status.nodeInfo` (a driver with `PoolDriver.capacity`): the `scaleFromZero` scenario then checks
   * both at 0 replicas, as the autoscaler reads them, and that they follow this change. Without it
   * that scenario is skipped.
   */
  capacityChange?: (spec: Record<string, unknown>) => Record<string, unknown>;
  /**
   * Whether a change of the MachinePool's Kubernetes version alone rolls the pool (the driver's
   * `templateInputs` read `ctx.version`, e.g. to pick the image). Default true; `false` (a pool whose
   * spec pins the image) skips `topologyUpgrade`, which a version change that rolls nothing fails.
   */
  versionRollout?: boolean;
  /**
   * Two releases of the provider, for the `providerUpgrade` scenario (real core, the real `clusterctl`
   * of the target release): `from` is installed with `clusterctl init` and runs a pool, then
   * `clusterctl upgrade apply` moves to `to` and the provider restarts at `to`. The first release's
   * kind must be the kind under test. Without it that scenario is skipped.
   */
  providerUpgrade?: ProviderUpgradeOptions;
  /**
   * How to start the provider on a second management cluster, for the `move` scenario (real core, the
   * real `clusterctl move` of the target release). Without it that scenario is skipped.
   */
  move?: ProviderMoveOptions;
  /** Starts the provider against the suite's API server. Called once, before the scenarios. */
  startProvider(env: ConformanceEnvironment): Promise<ConformanceProvider>;
  /**
   * Only these scenarios, built-in or the provider's own (default: all, skipping those whose actor
   * the cloud does not provide). See {@link CONFORMANCE_SCENARIOS} for the built-in ids.
   */
  scenarios?: readonly (ConformanceScenario | (string & {}))[];
  /** The provider's own scenarios, run after the built-in ones and before `cleanup`. */
  extraScenarios?: readonly ConformanceScenarioSpec[];
  /**
   * `maxUnavailable` of the provider's default rollout: Ready Nodes of a rolling pool never drop below
   * `replicas − maxUnavailable`. Default 0.
   */
  rolloutMaxUnavailable?: number;
  /** Time limits. */
  timeouts?: ConformanceTimeouts;
  /**
   * Where the CAPI CRDs are (default: {@link capiCrdsFolder}, the CRDs of the release the SDK
   * targets). Only with `core: "emulator"`: real core installs the CRDs of its own release.
   */
  capiCrds?: string;
  /**
   * Which CAPI core judges the provider:
   * - `"emulator"` (default): the in-memory API server with {@link startCapiCore}, fast, with
   *   fault injection (the `apiServerFaults` scenario);
   * - `"real"`: a real kube-apiserver + etcd with CAPI core itself (its MachinePool and Machine
   *   controllers and its webhooks, built from the release {@link capiRelease} names by
   *   `./dev controlplane --capi`), the workload cluster being a second kube-apiserver + etcd.
   *   Scenarios that need in-memory fault injection are skipped with the reason.
   *
   * Default: the `CAPI_TS_CONFORMANCE_CORE` environment variable, else `"emulator"`.
   */
  core?: ConformanceCore;
  /**
   * How often the emulator reconciles one object at most, in ms: core's `ReconcilerRateLimiting`
   * (on by default in core), which makes every step of core wait for the one before it by up to a
   * second. Default 1,000, as core. `0` lets the emulator answer at once while judging the same way,
   * so a run then measures the provider's own speed: a quick local loop, or a before/after of a
   * provider change. Ignored with real core.
   *
   * Default: the `CAPI_TS_CONFORMANCE_RATE_LIMIT_MS` environment variable, else 1,000.
   */
  emulatorRateLimitMs?: number;
  /**
   * How many test beds the scenarios are spread over, side by side: each bed is a whole environment
   * (API servers, core, `startProvider` called once per bed) that runs its share of the scenarios one
   * after another, so the checks that account for a whole API server (zero writes at steady state, no
   * writes while paused) still see one scenario at a time. `1` runs every scenario in a row on one
   * bed. Only `runMachinePoolConformance` and `planConformanceTestBeds` read it; a
   * {@link MachinePoolConformance} you drive yourself is one bed.
   *
   * Default: the `CAPI_TS_CONFORMANCE_TEST_BEDS` environment variable, else 4 on the emulator (2 per
   * core on a smaller machine) and 1 with real core.
   */
  testBeds?: number;
}

/** Which CAPI core runs the conformance suite: see {@link MachinePoolConformanceOptions.core}. */
export type ConformanceCore = "emulator" | "real";
