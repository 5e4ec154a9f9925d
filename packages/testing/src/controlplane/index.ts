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
  type ClusterctlRelease,
  type ClusterctlRepository,
  type ClusterctlRepositoryOptions,
  findClusterctlBinary,
  type RunClusterctlOptions,
  runClusterctl,
  writeClusterctlRepository,
} from "./clusterctl-upgrade.js";
export {
  type BackendCapabilities,
  type ControlPlane,
  type ControlPlaneOptions,
  startControlPlane,
} from "./controlplane.js";
export type { CRDSource } from "./crds.js";
