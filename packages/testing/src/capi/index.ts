export type {
  BootstrapConfigKind,
  BootstrapStandIn,
  BootstrapStandInOptions,
} from "./bootstrap.js";
export { CLUSTER_NOT_CONNECTED, type CoreClusterCacheTimings } from "./clustercache.js";
export {
  ExternalControlPlanes,
  ExternalControlPlaneTemplates,
  externalControlPlaneCrd,
  externalControlPlaneTemplate,
  externalControlPlaneTemplateCrd,
  type ManagedControlPlaneStandIn,
  playManagedControlPlanes,
  setExternalControlPlane,
} from "./control-plane.js";
export { CorePanicError } from "./controller-helpers.js";
export {
  type CapiCore,
  type CapiCoreOptions,
  type CoreMachineOptions,
  type CoreReconcileFilter,
  type CoreReconcileRecord,
  startCapiCore,
} from "./core.js";
export type { ProvisionedFrom } from "./machinepool.js";
export {
  DEFAULT_NODE_DELETION_TIMEOUT_SECONDS,
  type DefaultableMachinePool,
  defaultMachinePool,
  type ValidatableMachinePool,
  validateMachinePool,
} from "./webhook.js";
export {
  DevClusterResource,
  kubeconfigYaml,
  markWorkloadClusterReady,
  type WorkloadClusterOptions,
} from "./workload.js";
export type { CoreActor, CoreWrite, CoreWriteFilter } from "./writes.js";
