export {
  type ControlPlaneBinaries,
  findControlPlaneBinaries,
  requireControlPlaneBinaries,
} from "./binaries.js";
export {
  type CoreReconcileError,
  capiCoreMissingReason,
  findCapiCoreBinary,
  type RealCapiCore,
  type RealCapiCoreOptions,
  type ReconcileErrorFilter,
  realCapiRelease,
} from "./capi-core.js";
export {
  CLUSTERCTL_LABEL,
  type ClusterctlMoveOptions,
  type ClusterctlProvider,
  ClusterctlProviders,
  type ClusterctlResult,
  type ClusterctlRun,
  clusterctlMove,
  findClusterctlBinary,
  PROVIDER_LABEL,
  prepareForClusterctl,
} from "./clusterctl.js";
export {
  type ClusterctlRelease,
  type ClusterctlRepository,
  type ClusterctlRepositoryOptions,
  type RunClusterctlOptions,
  runClusterctl,
  writeClusterctlRepository,
} from "./clusterctl-repository.js";
export {
  type BackendCapabilities,
  type ControlPlane,
  type ControlPlaneOptions,
  startControlPlane,
} from "./controlplane.js";
export type { CRDSource } from "./crds.js";
