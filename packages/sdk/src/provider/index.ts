/**
 * MachinePool provider kit: the {@link PoolDriver} interface a provider implements, and
 * {@link machinePoolController}, the reconciler that drives it.
 *
 * ## Writing a provider
 *
 * ```ts
 * const FooMachinePool = defineInfraMachinePool({
 *   group: "infrastructure.foo.com", kind: "FooMachinePool", versions: ["v1beta2"],
 *   spec: z.object({ instanceType: z.string(), strategy: machinePoolStrategySchema.optional() }),
 * });
 * const manager = new Manager({ kubeConfig, name: "foo-provider", handleSignals: true });
 * machinePoolController(fooDriver, { manager, kind: FooMachinePool });
 * await manager.start();
 * ```
 *
 * ## Rollout configuration
 *
 * A pool's rollout strategy ({@link MachinePoolStrategy}: `maxSurge`, `maxUnavailable`,
 * `deletePolicy`) is resolved field by field, first match wins:
 *
 * 1. the pool's own `spec.strategy` — add {@link machinePoolStrategySchema} to your spec (or read it
 *    from elsewhere with the `strategyOf` option);
 * 2. the controller's `strategy` option (percentages such as `"25%"` allowed);
 * 3. {@link DEFAULT_STRATEGY}: `maxSurge: 1, maxUnavailable: 0, deletePolicy: "Oldest"`.
 *
 * If the driver has a {@link NativeRollout}, the cloud replaces outdated instances (set
 * `useNativeRollout: false` to use the kit's engine instead); it gets the resolved limits.
 *
 * `type: OnDelete` replaces nothing on the kit's (or the cloud's rollout's) own: an out-of-date
 * instance stays until it is deleted, and its replacement launches from the current template.
 * `rolloutAfter` (an RFC 3339 time) makes every instance launched before it out of date once it has
 * passed ({@link predatesRollout}). Before the kit launches instances, core's MachineSet preflight
 * checks run on the Cluster's control plane (`PoolReasons.PreflightCheckFailed` while one holds).
 *
 * ## What the kit decides
 *
 * - **Outdated**: an instance whose template version's {@link TemplateStamp} differs from the target in
 *   `specHash` (the driver's `templateInputs`) or `bootstrapRef` (the bootstrap secret's name). A
 *   change of `bootstrapHash` alone (token rotation) creates a template version and moves the group
 *   to it; no instance is replaced.
 * - **Scale**: the group's desired size is raised with `updateGroup({ replicas })`; on scale-down the
 *   kit picks victims (unhealthy, outdated, not running, then the delete policy) and deletes them with
 *   `shrink`. During a rollout the group may hold `desired + maxSurge`; old instances go only while
 *   `available ≥ desired − maxUnavailable` (the plan engine).
 * - **External autoscaler** (`cluster.x-k8s.io/replicas-managed-by` on the MachinePool): the size is
 *   never sent to the cloud; the group's desired size is written to `MachinePool.spec.replicas`;
 *   rollouts only replace (no surge).
 *
 * ## What the kit writes
 *
 * - InfraMachinePool `spec.providerIDList`: every instance not terminated, sorted and unique; an ID
 *   the cloud's list leaves out unexplained is kept for `missingInstanceGraceMs` (not one the kit
 *   deleted or saw terminating).
 * - `status.replicas` (= the list's length), `status.ready` and `status.initialization.provisioned`
 *   (together, once the pool first has as many running instances as desired; never reverted).
 * - `status.capacity` and `status.nodeInfo` from the driver's `capacity` (scale from zero: what the
 *   cluster-autoscaler builds an empty pool's Node from), at every replica count; nothing without it.
 * - Conditions `Paused` and `Ready` (reasons: {@link PoolReasons}, or the driver's failure reason),
 *   `AutoscalerBounds` ({@link PoolConditionTypes}) while the MachinePool carries the
 *   cluster-autoscaler's min-size or max-size annotation, `NodeMetadata` while it asks for taints
 *   or Node labels, `Draining` while a Node is drained before its instance is terminated (no
 *   MachinePool Machines), and `VersionRollout` while a MachinePool version change rolls nothing
 *   because the driver's template inputs did not change with it.
 * - In the workload cluster, on the pool's Nodes: the MachinePool's taints and Node labels, with
 *   what the kit applied recorded in {@link NodeMetadataAnnotations} (the `nodes` phase); without
 *   MachinePool Machines, a cordon of each Node whose instance it terminates, and Evictions of its
 *   Pods (`pods/eviction`, honouring PodDisruptionBudgets), before the instance goes
 *   ({@link NodeDrainApi}).
 * - Events, one per cloud change (Normal): `TemplateVersionCreated`, `GroupCreated`, `GroupUpdated`,
 *   `ScalingUp`, `ScalingDown`, `DrainingNode`, `NodeUncordoned`, `InstanceDeleted`, `InstanceReplaced`, `InstanceRemediated`,
 *   `RolloutStarted`, `RolloutCancelled`, `TemplateVersionsPruned`, `ReplicasSynced`,
 *   `GroupDeleting`, `Deleted`; Warning Events for terminal failures, transient failures that
 *   persist, driver bugs (`DriverBug`), drains that ran past `nodeDrainTimeoutSeconds`
 *   (`NodeDrainTimedOut`) and stopped runaways ({@link StoppedRunaway}: a {@link PoolReasons} reason
 *   such as `TemplateInputsNotPure` or `DuplicateProviderIDs`).
 *
 * ## The pipeline
 *
 * A reconcile is a list of phases ({@link PoolPhase}) over a {@link PoolScope}:
 * {@link defaultPoolPhases} (or {@link defaultDeletePhases} while deleting). Each phase declares
 * the sections of {@link PoolSections} it reads and writes; a section has one writer, and the list
 * is checked when the controller is built ({@link checkPhases}). Pass `phases` to insert your own
 * ({@link insertPhase}, {@link definePhase}) or replace one ({@link replacePhase}); unit-test it
 * with `@capi-ts/sdk/provider/testing`. A failed driver call goes through the kit's error policy.
 *
 * Nothing is written when nothing changed: a resync reads the cloud and sends no request.
 *
 * @module
 */
export { machinePoolStrategySchema } from "../crd/strategy-schema.js";
export {
  DEFAULT_POLL_INTERVAL_MS,
  type InfraMachinePoolKind,
  type MachinePoolControllerOptions,
  machinePoolController,
  PoolConditionTypes,
  type PoolReason,
  PoolReasons,
  type ResolvedPoolOptions,
  type SpecIssue,
  type SpecParseResult,
} from "./controller.js";
export {
  type CredentialsRequest,
  CredentialsUnavailableError,
  type PoolCredentials,
} from "./credentials.js";
export {
  type AnyPoolDriver,
  assertPoolOwns,
  type BootstrapDataStore,
  type CapacityResources,
  type CredentialsOf,
  classifyDriverError,
  DEFAULT_MOVE_BLOCKING_CALLS,
  type DeleteMode,
  DriverError,
  type DriverFailure,
  type DriverFailureKind,
  type GroupBounds,
  type GroupIntent,
  type GroupModelPoolDriver,
  type GroupUpdate,
  type InfrastructureClusterObject,
  type InfrastructureClusterOf,
  MoveAnnotations,
  type NativeRollout,
  type NewTemplateVersion,
  type NodeArchitecture,
  type NodeOperatingSystem,
  OWNER_TAG_PREFIX,
  type PoolAccess,
  type PoolCallContext,
  type PoolCapacity,
  type PoolContext,
  type PoolDriver,
  type PoolEnvironment,
  type PoolGroup,
  type PoolGroupStatus,
  type PoolIdentity,
  type PoolInstance,
  type PoolInstanceState,
  type PoolModelLocation,
  type PoolNodeInfo,
  poolOwnerTags,
  type RolloutOptions,
  type RolloutStatus,
  TEMPLATE_STAMP_TAG_KEYS,
  type TemplateStamp,
  type TemplateVersion,
  templateStampFromTags,
  templateStampToTags,
  type UserDataOptions,
} from "./driver.js";
export { isInstanceAvailable, liveInstances } from "./instances.js";
export type {
  InfraMachineKind,
  MachinesState,
  OwnerRemediatedState,
  PoolMachinesApi,
} from "./machines.js";
export type { DrainProgress, PoolMemory, StoppedRunaway } from "./memory.js";
export {
  DRAIN_LABEL,
  type DrainNode,
  type EvictionOutcome,
  MIRROR_POD_ANNOTATION,
  type NodeDrainApi,
  nodeDrainTimeoutMs,
} from "./node-drain.js";
export {
  NodeMetadataAnnotations,
  type NodeMetadataPatch,
  type NodeTaint,
  type PoolNode,
  type PoolNodesApi,
  type PoolNodeTaint,
  type TaintEffect,
} from "./nodes.js";
export {
  type AccessSection,
  type BootstrapSection,
  type BoundsSection,
  type CapacitySection,
  type DesiredSection,
  definePhase,
  type GroupSection,
  type MachinesSection,
  type NodesSection,
  type ObservedSection,
  type PhaseResult,
  type PhaseScope,
  POOL_SECTION_NAMES,
  type PoolPhase,
  type PoolSectionName,
  type PoolSections,
  type RolloutSection,
  type ScaleSection,
  type SpecSection,
  type TeardownSection,
  type TemplateSection,
} from "./phase.js";
export {
  checkPhases,
  defaultDeletePhases,
  defaultPoolPhases,
  insertPhase,
  replacePhase,
} from "./pipeline.js";
export type { Plan, PlanAction, RemediationWait } from "./plan.js";
export type {
  ControlPlaneObject,
  PoolApi,
  PoolConditions,
  PoolEvents,
  PoolInstanceStatus,
  PoolObject,
  PoolScope,
  PoolStatusWriter,
  ReadyState,
} from "./scope.js";
export {
  DEFAULT_STRATEGY,
  type DeletePolicy,
  type IntOrPercent,
  type MachinePoolStrategy,
  predatesRollout,
  type ResolvedStrategy,
  rolloutPercentages,
  type StrategyType,
} from "./strategy.js";
