/**
 * Test kit for capi-ts providers: an in-memory Kubernetes API server over real HTTP with fault
 * injection and a request log (`startApiServer`), a launcher for a real kube-apiserver + etcd
 * (`startControlPlane`), an emulator of CAPI core's MachinePool controller (`startCapiCore`) and the
 * InfraMachinePool conformance suite (`MachinePoolConformance`; its vitest binding
 * `runMachinePoolConformance` is on `@capi-ts/testing/vitest`, so this entry loads without vitest).
 *
 * @example
 * ```ts
 * import { startApiServer } from "@capi-ts/testing";
 *
 * const api = await startApiServer();
 * // api.kubeConfig is a @kubernetes/client-node KubeConfig for it
 * await api.stop();
 * ```
 *
 * @packageDocumentation
 */

/** The version of this package (semver), as in its package.json. */
export const version = "0.2.1";

export {
  type AccessReviews,
  type AccessUser,
  type ApiServer,
  type ApiServerOptions,
  type CrdSource,
  type FaultHandle,
  type FaultMatch,
  type FaultRule,
  type Faults,
  type NonResourceGrant,
  type RequestFilter,
  type RequestRecord,
  type StatusBody,
  type StatusDetails,
  startApiServer,
} from "./apiserver/index.js";
export {
  type AppliedManifest,
  type ApplyManifestsOptions,
  applyManifests,
  type ManifestObject,
} from "./apply.js";
export {
  type BootstrapConfigKind,
  type BootstrapStandIn,
  type BootstrapStandInOptions,
  type CapiCore,
  type CapiCoreOptions,
  CLUSTER_NOT_CONNECTED,
  type CoreActor,
  type CoreClusterCacheTimings,
  type CoreMachineOptions,
  CorePanicError,
  type CoreReconcileFilter,
  type CoreReconcileRecord,
  type CoreWrite,
  type CoreWriteFilter,
  DEFAULT_NODE_DELETION_TIMEOUT_SECONDS,
  type DefaultableMachinePool,
  DevClusterResource,
  defaultMachinePool,
  ExternalControlPlanes,
  ExternalControlPlaneTemplates,
  externalControlPlaneCrd,
  externalControlPlaneTemplate,
  externalControlPlaneTemplateCrd,
  kubeconfigYaml,
  type ManagedControlPlaneStandIn,
  markWorkloadClusterReady,
  type ProvisionedFrom,
  playManagedControlPlanes,
  setExternalControlPlane,
  startCapiCore,
  type ValidatableMachinePool,
  validateMachinePool,
  type WorkloadClusterOptions,
} from "./capi/index.js";
export {
  createTestCertificates,
  type TestCertificateOptions,
  type TestCertificates,
} from "./certs.js";
export {
  AUTOSCALER_SCENARIOS,
  type AutoscalerMachinePoolView,
  type AutoscalerNodeTemplate,
  type AutoscalerScenario,
  autoscalerNodeTemplate,
  type CloudCallFilter,
  CONFORMANCE_SCENARIOS,
  type ConformanceActors,
  type ConformanceCloud,
  type ConformanceCore,
  type ConformanceEnvironment,
  ConformanceError,
  type ConformanceKind,
  type ConformancePool,
  type ConformancePoolObject,
  type ConformanceProvider,
  type ConformanceScenario,
  type ConformanceScenarioContext,
  type ConformanceScenarioDefinition,
  type ConformanceScenarioSpec,
  type ConformanceTestBed,
  type ConformanceTestBedPlan,
  type ConformanceTimeouts,
  checkPoolObject,
  chosenTestBeds,
  DRAIN_SCENARIOS,
  type DrainScenario,
  InvariantMonitor,
  LATE_NODE_JOIN_MS,
  MACHINE_POOL_MACHINES_SCENARIOS,
  MachinePoolConformance,
  type MachinePoolConformanceOptions,
  type MachinePoolMachinesScenario,
  NODE_SCENARIOS,
  type NodeScenario,
  PROVIDER_LIFECYCLE_SCENARIOS,
  type ProviderLifecycleScenario,
  type ProviderMoveOptions,
  type ProviderRelease,
  type ProviderUpgradeOptions,
  planConformanceTestBeds,
  REAL_CORE_SCENARIOS,
  type RealCoreScenario,
  SCALE_FROM_ZERO_SCENARIOS,
  type ScaleFromZeroScenario,
  STRATEGY_SCENARIOS,
  type StrategyScenario,
  scaled,
  TOPOLOGY_SCENARIOS,
  type TopologyScenario,
  timeScale,
  WORKLOAD_CLUSTER_SCENARIOS,
  type WorkloadClusterScenario,
} from "./conformance/index.js";
export {
  type BackendCapabilities,
  CLUSTERCTL_LABEL,
  type ClusterctlMoveOptions,
  type ClusterctlProvider,
  ClusterctlProviders,
  type ClusterctlRelease,
  type ClusterctlRepository,
  type ClusterctlRepositoryOptions,
  type ClusterctlResult,
  type ClusterctlRun,
  type ControlPlane,
  type ControlPlaneBinaries,
  type ControlPlaneOptions,
  type CoreReconcileError,
  type CRDSource,
  capiCoreMissingReason,
  clusterctlMove,
  findCapiCoreBinary,
  findClusterctlBinary,
  findControlPlaneBinaries,
  PROVIDER_LABEL,
  prepareForClusterctl,
  type RealCapiCore,
  type RealCapiCoreOptions,
  type ReconcileErrorFilter,
  type RunClusterctlOptions,
  realCapiRelease,
  requireControlPlaneBinaries,
  runClusterctl,
  startControlPlane,
  writeClusterctlRepository,
} from "./controlplane/index.js";
export {
  capiCrdFile,
  capiCrdsFolder,
  capiRelease,
  certManagerStandInCrdsFolder,
  clusterctlCrdsFolder,
} from "./crds.js";
export {
  type FollowedInstance,
  type KubeletFollower,
  type KubeletFollowerOptions,
  type KubeletStandIn,
  type KubeletStandInOptions,
  kubeletConditions,
  kubeletFollowing,
  kubeletStandIn,
} from "./kubelet/index.js";
