// The runtime type the bootstrap readers take. Re-exported so that this entry's declarations import
// it from its shared chunk rather than through the package root (see crd/index.ts).
export type { KubeconfigSource } from "../runtime/credentials.js";
export {
  type AutoscalerBounds,
  ClusterAutoscalerTaint,
  readAutoscalerBounds,
} from "./autoscaler.js";
export {
  BootstrapData,
  type BootstrapDataFormat,
  readBootstrapData,
  type SecretReader,
} from "./bootstrap.js";
export {
  type CapacityResources,
  checkPoolCapacity,
  InvalidCapacityError,
  MAX_CAPACITY_QUANTITY_LENGTH,
  MAX_CAPACITY_RESOURCES,
  NODE_ARCHITECTURES,
  NODE_OPERATING_SYSTEMS,
  type NodeArchitecture,
  type NodeOperatingSystem,
  type PoolCapacity,
  type PoolNodeInfo,
  REQUIRED_CAPACITY_RESOURCES,
  setPoolCapacity,
} from "./capacity.js";
export {
  Annotations,
  CLUSTER_API_GROUP,
  contractLabel,
  Finalizers,
  finalizerFor,
  INFRASTRUCTURE_GROUP,
  Labels,
  MAX_PROVIDER_ID_LENGTH,
  MAX_PROVIDER_IDS,
  NodeUninitializedTaint,
} from "./constants.js";
export { ContractViolationError } from "./errors.js";
export {
  addFinalizer,
  ensureFinalizer,
  hasFinalizer,
  type ObjectWithFinalizers,
  removeFinalizer,
} from "./finalizers.js";
export {
  calculateCRDName,
  formatLabelValue,
  isValidLabelValue,
  labelValueMatches,
} from "./format.js";
export {
  clusterNameFromMetadata,
  findOwnerMachinePoolRef,
  getClusterFromMetadata,
  getOwnerMachinePool,
  hasForeignController,
  type ObjectWithOwners,
  type OwnerReference,
} from "./owners.js";
export {
  type ClusterPauseFields,
  ensurePausedCondition,
  hasPausedAnnotation,
  isPaused,
  type ObjectWithAnnotations,
  type PausedConditionResult,
  pausedCondition,
  updatePausedCondition,
} from "./pause.js";
export {
  evaluatePreflight,
  type KubernetesVersion,
  type PreflightCheck,
  PreflightChecks,
  type PreflightFailure,
  type PreflightInput,
  parseKubernetesVersion,
  SKIP_PREFLIGHT_CHECKS_ANNOTATION,
  skippedPreflightChecks,
} from "./preflight.js";
export {
  type AnyObject,
  type ClusterView,
  type ContractReference,
  type MachinePoolView,
  readCluster,
  readMachinePool,
  replicasManagedByExternalAutoscaler,
} from "./readers.js";
export {
  assertNoFailureFields,
  canonicalProviderIDs,
  type InfraMachinePoolContractFields,
  type InfraMachinePoolLike,
  isProvisioned,
  type PoolStatusUpdate,
  setPoolStatus,
  setProviderIDs,
  setReady,
  setReplicas,
} from "./status.js";
export {
  CLUSTER_NAME_INDEX,
  hasWatchFilterLabel,
  indexByClusterName,
  notPaused,
} from "./watch.js";
