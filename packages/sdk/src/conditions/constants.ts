/**
 * Condition types used by Cluster API v1beta2 (`metav1.Condition`) that matter to an InfraMachinePool.
 *
 * @example
 * ```ts
 * setCondition(pool, { type: ConditionTypes.Ready, status: "True", reason: ConditionReasons.Ready });
 * ```
 */
export const ConditionTypes = {
  /** The object is available for use (summary of its availability). */
  Available: "Available",
  /** The object is ready; an InfraMachinePool should report it for its whole lifecycle. */
  Ready: "Ready",
  /** A Machine is up to date with its desired spec. */
  UpToDate: "UpToDate",
  /** The bootstrap configuration is ready. */
  BootstrapConfigReady: "BootstrapConfigReady",
  /** The infrastructure is ready. */
  InfrastructureReady: "InfrastructureReady",
  /** All machines of a group are ready. */
  MachinesReady: "MachinesReady",
  /** All machines of a group are up to date. */
  MachinesUpToDate: "MachinesUpToDate",
  /** A rollout is in progress. */
  RollingOut: "RollingOut",
  /** Scaling up is in progress. */
  ScalingUp: "ScalingUp",
  /** Scaling down is in progress. */
  ScalingDown: "ScalingDown",
  /** Remediation is in progress. */
  Remediating: "Remediating",
  /** The object is being deleted. */
  Deleting: "Deleting",
  /** Reconciliation of the object is paused. */
  Paused: "Paused",
} as const;

/**
 * Condition reasons defined by Cluster API v1beta2 (`api/core/v1beta2/condition_consts.go`), plus the helper
 * reasons used by the condition utilities.
 *
 * @example
 * ```ts
 * setCondition(pool, { type: "Ready", status: "False", reason: ConditionReasons.NotReady, message: "2 of 3 instances running" });
 * ```
 */
export const ConditionReasons = {
  /** Available=True. */
  Available: "Available",
  /** Available=False. */
  NotAvailable: "NotAvailable",
  /** Available=Unknown. */
  AvailableUnknown: "AvailableUnknown",
  /** Ready=True. */
  Ready: "Ready",
  /** Ready=False. */
  NotReady: "NotReady",
  /** Ready=Unknown. */
  ReadyUnknown: "ReadyUnknown",
  /** UpToDate=True. */
  UpToDate: "UpToDate",
  /** UpToDate=False. */
  NotUpToDate: "NotUpToDate",
  /** UpToDate=Unknown. */
  UpToDateUnknown: "UpToDateUnknown",
  /** RollingOut=True. */
  RollingOut: "RollingOut",
  /** RollingOut=False. */
  NotRollingOut: "NotRollingOut",
  /** ScalingUp=True. */
  ScalingUp: "ScalingUp",
  /** ScalingUp=False. */
  NotScalingUp: "NotScalingUp",
  /** ScalingDown=True. */
  ScalingDown: "ScalingDown",
  /** ScalingDown=False. */
  NotScalingDown: "NotScalingDown",
  /** Remediating=True. */
  Remediating: "Remediating",
  /** Remediating=False. */
  NotRemediating: "NotRemediating",
  /** No replicas exist. */
  NoReplicas: "NoReplicas",
  /** Waiting for the replicas field to be set. */
  WaitingForReplicasSet: "WaitingForReplicasSet",
  /** A condition reported by another object is not valid. */
  InvalidConditionReported: "InvalidConditionReported",
  /** An internal error occurred. */
  InternalError: "InternalError",
  /** A referenced object does not exist. */
  ObjectDoesNotExist: "ObjectDoesNotExist",
  /** A referenced object has been deleted. */
  ObjectDeleted: "ObjectDeleted",
  /** Paused=True. */
  Paused: "Paused",
  /** Paused=False. */
  NotPaused: "NotPaused",
  /** The connection to the workload cluster is down. */
  ConnectionDown: "ConnectionDown",
  /** Deleting=True. */
  Deleting: "Deleting",
  /** Deleting=False. */
  NotDeleting: "NotDeleting",
  /** Deletion completed. */
  DeletionCompleted: "DeletionCompleted",
  /** Inspecting the object failed. */
  InspectionFailed: "InspectionFailed",
  /** Waiting for the Cluster infrastructure to be ready. */
  WaitingForClusterInfrastructureReady: "WaitingForClusterInfrastructureReady",
  /** Waiting for the control plane to be initialized. */
  WaitingForControlPlaneInitialized: "WaitingForControlPlaneInitialized",
  /** Waiting for bootstrap data (the MachinePool's `dataSecretName`). */
  WaitingForBootstrapData: "WaitingForBootstrapData",
  /** Provisioning completed. */
  Provisioned: "Provisioned",
  /** Provisioning not completed. */
  NotProvisioned: "NotProvisioned",
  /** Used by mirror, summary and aggregate when a source condition is missing. */
  NotYetReported: "NotYetReported",
  /** Used when a condition read from an untyped object carries no reason. */
  NoReasonReported: "NoReasonReported",
  /** Default merge reason when at least one merged condition reports an issue. */
  IssuesReported: "IssuesReported",
  /** Default merge reason when merged conditions report unknown status (and no issue). */
  UnknownReported: "UnknownReported",
  /** Default merge reason when all merged conditions report info. */
  InfoReported: "InfoReported",
} as const;

/**
 * The longest condition message the kit and these setters write, in characters: CAPI's deprecated
 * v1beta1 conditions allow 10,240 (its v1beta2 conditions and `metav1.Condition` 32,768), so a
 * message cut to this fits every condition schema. `setCondition` and
 * `setV1Beta1Condition` cut longer ones, ending `… (N more characters)`.
 */
export const MAX_CONDITION_MESSAGE_LENGTH = 10_240;
