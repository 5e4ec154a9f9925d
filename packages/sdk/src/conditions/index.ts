export { ConditionReasons, ConditionTypes, MAX_CONDITION_MESSAGE_LENGTH } from "./constants.js";
export {
  type LayoutOptions,
  type StatusLayout,
  statusLayoutOf,
  v1beta1ConditionsPath,
  v1beta2ConditionsPath,
} from "./location.js";
export {
  type AggregateOptions,
  aggregateCondition,
  type ConditionOwnerInfo,
  type ConditionWithOwner,
  defaultMergePriority,
  type MergedCondition,
  type MergePriority,
  type MergeStrategyOptions,
  type SummaryOptions,
  setAggregateCondition,
  setSummaryCondition,
  summaryCondition,
} from "./merge.js";
export {
  type MirroredCondition,
  type MirrorOptions,
  mirrorCondition,
  mirrorConditions,
  setMirrorCondition,
  unstructuredGetConditions,
} from "./mirror.js";
export {
  type ApplyConditionPatchOptions,
  applyConditionPatch,
  ConditionConflictError,
  type ConditionFlavour,
  type ConditionPatchOperation,
  diffConditions,
} from "./patch.js";
export { pluralize } from "./pluralize.js";
export { compareConditionsDefault, sortConditions } from "./sort.js";
export { toConditionTime } from "./time.js";
export type {
  Condition,
  ConditionClock,
  ConditionInput,
  ConditionLike,
  ConditionStatus,
  ObjectWithConditions,
} from "./types.js";
export {
  deleteV1Beta1Condition,
  getV1Beta1Condition,
  getV1Beta1Conditions,
  setV1Beta1Condition,
  setV1Beta1MirrorCondition,
  type V1Beta1Condition,
  type V1Beta1ConditionInput,
  type V1Beta1ConditionSeverity,
  V1Beta1Conditions,
  V1Beta1Reasons,
  V1Beta1Severities,
} from "./v1beta1.js";
export {
  boolToStatus,
  deleteCondition,
  getCondition,
  getConditions,
  hasCondition,
  hasSameState,
  hasSameStateExceptObservedGeneration,
  isConditionFalse,
  isConditionTrue,
  isConditionUnknown,
  type SetConditionOptions,
  setCondition,
  setConditions,
} from "./v1beta2.js";
