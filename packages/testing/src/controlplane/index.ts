export {
  type ControlPlaneBinaries,
  findControlPlaneBinaries,
  requireControlPlaneBinaries,
} from "./binaries.js";
export {
  type CoreReconcileError,
  findCapiCoreBinary,
  type RealCapiCore,
  type RealCapiCoreOptions,
  type ReconcileErrorFilter,
} from "./capi-core.js";
export {
  type BackendCapabilities,
  type ControlPlane,
  type ControlPlaneOptions,
  startControlPlane,
} from "./controlplane.js";
export type { CRDSource } from "./crds.js";
