/**
 * The condition and Event reasons of the provider kit.
 *
 * @module
 */
import { ConditionReasons } from "../conditions/constants.js";

/** Condition reasons the kit sets on `Ready` (besides the driver's own failure reasons). */
export const PoolReasons = {
  /** The pool matches the MachinePool. */
  Ready: ConditionReasons.Ready,
  /** No owner MachinePool yet. */
  WaitingForOwner: "WaitingForOwner",
  /** The Cluster's infrastructure is not provisioned yet. */
  WaitingForClusterInfrastructure: "WaitingForClusterInfrastructure",
  /**
   * The controller's `credentials` hook could not resolve the pool's cloud credentials (a missing
   * Secret or key, an identity object that does not exist); the message says what, never a value.
   * Retried with backoff; a fixed Secret is picked up at the next attempt.
   */
  CredentialsUnavailable: "CredentialsUnavailable",
  /**
   * The cloud rejected the pool's credentials (the driver threw `DriverError.credentialsRejected`):
   * the kit forgets them and resolves them again at the next attempt, with backoff.
   */
  CredentialsRejected: "CredentialsRejected",
  /** The MachinePool has no bootstrap data yet. */
  WaitingForBootstrapData: "WaitingForBootstrapData",
  /** The group is being created. */
  Provisioning: "Provisioning",
  /** Instances are being added. */
  ScalingUp: ConditionReasons.ScalingUp,
  /** Instances are being removed. */
  ScalingDown: ConditionReasons.ScalingDown,
  /** Outdated instances are being replaced. */
  RollingOut: ConditionReasons.RollingOut,
  /**
   * Instances the cloud reports `failed`, or whose Machine a MachineHealthCheck found unhealthy, are
   * being replaced (the message says how many wait, and what holds them).
   */
  Remediating: "Remediating",
  /**
   * A preflight check holds a launch (a new group, a scale-up, a surge or a replacement): the
   * control plane is provisioning or upgrading, or the pool's version breaks the version skew
   * policy; the message names the check. A wait, retried after the poll interval; removals go on.
   */
  PreflightCheckFailed: "PreflightCheckFailed",
  /** Instances exist but some are not available yet. */
  InstancesNotReady: "InstancesNotReady",
  /**
   * `readiness: "node"`: the workload cluster's Nodes cannot be read (its kubeconfig Secret is missing
   * or invalid, or its API server does not answer; the message says which). Scaling and provisioning
   * go on; rollouts wait, retried with the connection's backoff and at once when the Secret changes.
   */
  WorkloadClusterUnreachable: "WorkloadClusterUnreachable",
  /** The spec failed validation. */
  InvalidSpec: "InvalidSpec",
  /** The desired replicas are outside the group's bounds. */
  ReplicasOutOfRange: "ReplicasOutOfRange",
  /**
   * `AutoscalerBounds=True`: the cluster-autoscaler's bounds (the MachinePool's min-size and max-size
   * annotations) are valid, the replicas are within them and the group's bounds cover them.
   */
  WithinAutoscalerBounds: "WithinAutoscalerBounds",
  /**
   * `AutoscalerBounds=False`: the MachinePool's replicas are outside the cluster-autoscaler's bounds.
   * Reported, not corrected: the kit applies the replicas as asked (and widens the group for them).
   */
  ReplicasOutsideAutoscalerBounds: "ReplicasOutsideAutoscalerBounds",
  /**
   * `AutoscalerBounds=False`: the group's bounds are narrower than the cluster-autoscaler's and the
   * driver cannot widen them (it has no `groupBounds`), so the cloud refuses sizes the autoscaler may ask.
   */
  AutoscalerBoundsNotCovered: "AutoscalerBoundsNotCovered",
  /**
   * `AutoscalerBounds=False`: a min-size or max-size annotation is not a whole number ≥ 0, or the
   * minimum exceeds the maximum. The kit ignores them (and writes no bounds from them) until fixed.
   */
  InvalidAutoscalerBounds: "InvalidAutoscalerBounds",
  /**
   * `NodeMetadata=True`: every Node of the pool carries the taints and labels its MachinePool asks
   * for.
   */
  NodeMetadataSynced: "NodeMetadataSynced",
  /**
   * `NodeMetadata=False`: the MachinePool asks for a taint or label the pool's Nodes may not get from
   * it (a domain the kubelet, Kubernetes' controllers, core or the cluster-autoscaler own, or an
   * invalid one; the message names each). The kit applies the rest and never that one.
   */
  NodeMetadataRefused: "NodeMetadataRefused",
  /**
   * `NodeMetadata=False`: some Nodes wait for core to drop `node.cluster.x-k8s.io/uninitialized`
   * before the kit writes their taints (labels are applied already).
   */
  NodeMetadataPending: "NodeMetadataPending",
  /**
   * `NodeMetadata=False`: the workload cluster refused a Node patch (the message says how, e.g.
   * Forbidden: the kubeconfig's user needs `patch` on Nodes); retried.
   */
  NodeMetadataNotApplied: "NodeMetadataNotApplied",
  /**
   * `VersionRollout=False`: the MachinePool's Kubernetes version changed (a ClusterClass upgrade, a
   * user's edit) but the driver's `templateInputs` did not (the pool's spec pins what instances run,
   * an image say), so the kit rolls no instance for it and the Nodes keep their kubelet version; the
   * message names both versions. Change the spec with the version (or make `templateInputs` read
   * `ctx.version`). Cleared once the template inputs change or the version is set back.
   */
  VersionNotRolled: "VersionNotRolled",
  /** The group reports a failure (e.g. a partial scale-up). */
  GroupFailed: "GroupFailed",
  /** The group was deleted behind our back and is still going away. */
  GroupDeleting: "GroupDeleting",
  /**
   * The pool records that the kit created its group (annotation `capi-ts.io/group-created`), its
   * status is empty (it was moved by `clusterctl move` or restored from a backup) and the driver finds
   * no group by the pool's name and namespace: nothing is created, so a pool moved to a management
   * cluster that looks at another account or region never gets a second set of instances. The message
   * names the group the record holds. Point the provider at the cloud that has it, or remove the
   * annotation to create a new group.
   */
  GroupNotFound: "GroupNotFound",
  /** The pool is being deleted. */
  Deleting: "Deleting",
  /** The driver's native rollout failed on the target template version (retried after a resync). */
  RolloutFailed: "RolloutFailed",
  /** The bootstrap data's `format` is neither `cloud-config` nor `ignition`. */
  UnsupportedBootstrapFormat: "UnsupportedBootstrapFormat",
  /**
   * The bootstrap data, as it would be sent, is over the driver's `userData.limitBytes`: nothing is
   * created; the message gives the size, the limit and the ways out (gzip, a bootstrap store).
   */
  BootstrapDataTooLarge: "BootstrapDataTooLarge",
  /**
   * The driver's `capacity` returned a value the kit cannot publish (not a quantity, a number instead
   * of a string, no cpu or memory, an unknown nodeInfo field; the message says which). The last
   * published capacity stays; set only once the pool is otherwise Ready. Fix the driver.
   */
  InvalidCapacity: "InvalidCapacity",
  /**
   * The driver's `capacity` threw (its message follows, bounded). The last published capacity stays;
   * set only once the pool is otherwise Ready; retried after the poll interval (a terminal failure:
   * the resync period).
   */
  CapacityUnavailable: "CapacityUnavailable",
  /** Something other than a cloud call failed (an API server write); retried with backoff. */
  ReconcileError: "ReconcileError",
  /**
   * A driver method threw a programming error (`TypeError`, `ReferenceError`, …), not a cloud error.
   * Retried with backoff; fix the driver.
   */
  DriverBug: "DriverBug",
  /**
   * Runaway stopped: a template version the kit created is listed without the stamp it was given
   * (or never listed at all), so every reconcile would create another one. Store the stamp with the
   * version and return it from `getTemplate`.
   */
  TemplateStampNotStored: "TemplateStampNotStored",
  /**
   * Runaway stopped: `templateInputs` returned different values for the same pool (it reads the
   * clock, a random number, or mutable state), so every reconcile would roll the pool.
   */
  TemplateInputsNotPure: "TemplateInputsNotPure",
  /**
   * Runaway stopped: `getGroup` keeps reporting settings other than the ones `updateGroup` applied,
   * so every reconcile would update the group again. Report settings in `groupSettings`' shape.
   */
  SettingsNotConverging: "SettingsNotConverging",
  /**
   * Runaway stopped: `getGroup` keeps reporting bounds (`minReplicas`/`maxReplicas`) other than the
   * ones `updateGroup` applied, so every reconcile would write them again. Report them as the cloud has
   * them, and apply `GroupUpdate.bounds`.
   */
  BoundsNotConverging: "BoundsNotConverging",
  /**
   * Runaway stopped: two instances of the group report the same providerID, so one Node would stand
   * for several instances. Make `providerID` unique per instance, byte for byte as on the Node.
   */
  DuplicateProviderIDs: "DuplicateProviderIDs",
  /**
   * Runaway stopped: an instance reports a providerID with whitespace, control or format characters
   * (bidi overrides, zero-width characters): no Node spells its ID so, and a reader of the list would
   * be misled. Nothing is published until the driver reports it exactly as the Node does.
   */
  InvalidProviderID: "InvalidProviderID",
  /**
   * Runaway stopped: the driver reports an instance whose providerID another pool of the namespace
   * already lists (a pool of the kit's kind, or another MachinePool): a cloud query that matches too
   * much. The pool publishes nothing, touches no Node and deletes no instance until the driver
   * reports only its own instances; the message names both pools.
   */
  ProviderIDOfOtherPool: "ProviderIDOfOtherPool",
  /**
   * Runaway stopped (`model: "group"`): the group's model was updated with a stamp that `getGroup`
   * never reports back in `modelStamp`, so every reconcile would update the model again. Store the
   * stamp with the group's model (tags) and return it.
   */
  ModelStampNotStored: "ModelStampNotStored",
  /**
   * A `model: "group"` driver reported a live instance without `latestModel`: the kit cannot tell
   * whether it runs the group's model, so it changes nothing. Report `latestModel` for every instance.
   */
  InstanceModelUnknown: "InstanceModelUnknown",
  /**
   * `Draining=True`: a Node is being drained before its instance is terminated (no MachinePool
   * Machines): cordoned, its Pods evicted; the message names the Node, the Pods left and the
   * PodDisruptionBudgets that refuse an eviction.
   */
  DrainingNode: "DrainingNode",
  /**
   * `Draining=True`: a drain cannot go on because the workload cluster cannot be reached (or refused
   * a request; the message says which): the instance is not terminated until its Node is drained.
   */
  DrainHeld: "DrainHeld",
  /**
   * `Draining=True`: a drain ran past the MachinePool's `nodeDrainTimeoutSeconds`; the instance was
   * terminated with the Pods that were left (named with the budgets that held them).
   */
  NodeDrainTimedOut: "NodeDrainTimedOut",
} as const;

/**
 * The kit's own condition types besides `Ready` and `Paused` (owned in the patch; a provider may not
 * set them with `scope.conditions`).
 */
export const PoolConditionTypes = {
  /**
   * Present while the MachinePool carries a cluster-autoscaler min-size or max-size annotation: whether
   * those bounds are valid, the replicas within them and the group wide enough for them. Not folded
   * into `Ready`: the pool serves whatever it says; it tells a user what to fix.
   */
  AutoscalerBounds: "AutoscalerBounds",
  /**
   * Present while the MachinePool asks for taints or Node labels and the kit sees the workload
   * cluster's Nodes: whether every Node of the pool carries them, and what is refused. Not folded
   * into `Ready`: the pool serves; it tells a user what to fix.
   */
  NodeMetadata: "NodeMetadata",
  /**
   * Present while the kit drains a Node before terminating its instance (pools without MachinePool
   * Machines; with them core drains): which Node, how many Pods are left, which PodDisruptionBudget
   * blocks, or why the drain is held. Removed once no drain runs.
   */
  Draining: "Draining",
  /**
   * Present while a MachinePool version change rolls nothing because the driver's template inputs
   * did not change with it (reason `VersionNotRolled`): an upgrade, a ClusterClass's too, would
   * otherwise wait for new kubelets that never come. Not folded into `Ready`: the pool serves.
   */
  VersionRollout: "VersionRollout",
} as const;

/** One of the {@link PoolReasons}. */
export type PoolReason = (typeof PoolReasons)[keyof typeof PoolReasons];

/** The reasons that mean "the kit stopped a runaway loop and makes no cloud change until fixed". */
export const RUNAWAY_REASONS: ReadonlySet<string> = new Set([
  PoolReasons.TemplateStampNotStored,
  PoolReasons.TemplateInputsNotPure,
  PoolReasons.SettingsNotConverging,
  PoolReasons.BoundsNotConverging,
  PoolReasons.DuplicateProviderIDs,
  PoolReasons.InvalidProviderID,
  PoolReasons.ProviderIDOfOtherPool,
  PoolReasons.ModelStampNotStored,
  PoolReasons.InstanceModelUnknown,
]);
