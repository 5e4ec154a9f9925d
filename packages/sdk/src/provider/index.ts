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
 * ## What the kit decides
 *
 * - **Outdated**: an instance whose template version's {@link TemplateStamp} differs from the target in
 *   `specHash` (the driver's `templateInputs`) or `bootstrapRef` (the bootstrap secret's name). A
 *   change of `bootstrapHash` alone (token rotation) creates a template version and moves the group
 *   to it; no instance is replaced.
 * - **Scale**: the group's desired size is raised with `updateGroup({ replicas })`; on scale-down the
 *   kit picks victims (unhealthy, outdated, not running, then the delete policy) and deletes them with
 *   `shrink`. During a rollout the group may hold `desired + maxSurge`; old instances go only while
 *   `available ≥ desired − maxUnavailable` ({@link planPool}).
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
 * - Conditions `Paused` and `Ready` (reasons: {@link PoolReasons}, or the driver's failure reason).
 * - Events, one per cloud change (Normal): `TemplateVersionCreated`, `GroupCreated`, `GroupUpdated`,
 *   `ScalingUp`, `ScalingDown`, `InstanceDeleted`, `InstanceReplaced`, `InstanceRemediated`,
 *   `RolloutStarted`, `RolloutCancelled`, `TemplateVersionsPruned`, `ReplicasSynced`,
 *   `GroupDeleting`, `Deleted`; Warning Events for terminal failures, transient failures that
 *   persist, driver bugs (`DriverBug`) and stopped runaways ({@link RUNAWAY_REASONS}).
 *
 * ## The pipeline
 *
 * A reconcile is a list of phases ({@link PoolPhase}) over a {@link PoolScope}:
 * {@link defaultPoolPhases} (or {@link defaultDeletePhases} while deleting). Pass `phases` to
 * insert your own ({@link insertPhase}); failures go through {@link errorPolicy}.
 *
 * Nothing is written when nothing changed: a resync reads the cloud and sends no request.
 *
 * @module
 */
export * from "./controller.js";
export * from "./driver.js";
export {
  callDriver,
  describeSpecIssues,
  type ErrorOutcome,
  type ErrorPolicyInput,
  errorPolicy,
  isFailureOf,
  StepFailure,
  TRANSIENT_FAILURES_TO_REPORT,
  type TransientStreak,
} from "./errors.js";
export * from "./instances.js";
export {
  desiredInfraMachine,
  hasDeletePriority,
  type InfraMachineKind,
  type InfraMachineOwner,
  infraMachineName,
  infraMachineStatus,
  instanceReadyState,
  isDeleting,
  type MachinesState,
  machinesByInfraMachine,
  type PoolMachinesApi,
} from "./machines.js";
export { PoolMemory, type StoppedRunaway } from "./memory.js";
export {
  defaultDeletePhases,
  defaultPoolPhases,
  insertPhase,
  type PoolPhase,
  runPhases,
} from "./pipeline.js";
export * from "./plan.js";
export { RUNAWAY_REASONS } from "./reasons.js";
export { MAX_UNCONFIRMED_TEMPLATE_VERSIONS, MAX_UNCONVERGED_SETTINGS_UPDATES } from "./runaway.js";
export {
  contextOf,
  createPoolScope,
  type PhaseResult,
  type PoolApi,
  type PoolConditions,
  type PoolEvents,
  type PoolInstanceStatus,
  type PoolObject,
  type PoolScope,
  type PoolScopeInit,
  type PoolStatusWriter,
  type ReadyState,
} from "./scope.js";
export * from "./stamp.js";
export { need, type PoolState } from "./state.js";
export * from "./strategy.js";
