export {
  type ControlPlaneBinaries,
  findControlPlaneBinaries,
  requireControlPlaneBinaries,
} from "./binaries.js";
export {
  findCapiCoreBinary,
  type RealCapiCore,
  type RealCapiCoreOptions,
} from "./capi-core.js";
export {
  type BackendCapabilities,
  type ControlPlane,
  type ControlPlaneOptions,
  startControlPlane,
} from "./controlplane.js";
export type { CRDSource } from "./crds.js";
