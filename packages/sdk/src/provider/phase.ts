/**
 * The phase contract: what one step of a pool's reconcile ({@link PoolPhase}) declares, sees and
 * returns. A leaf of the kit: it imports no phase and no pipeline, so a phase — the kit's or a
 * provider's — depends on this file and on shared steps only.
 *
 * What the phases of one reconcile learn is kept in {@link PoolSections}: one section per datum,
 * each written by exactly one phase, once. A phase names the sections it `reads` and `writes`; the
 * pipeline refuses, when the controller is built, a list in which a phase reads a section that no
 * earlier phase writes, or two phases write the same one; and, while it runs, a phase that goes on
 * without writing what it declared.
 *
 * @module
 */
import type { WorkloadClusterUnavailableError } from "../clustercache/unavailable.js";
import type { AutoscalerBounds } from "../contract/autoscaler.js";
import type {
  GroupBounds,
  InfrastructureClusterObject,
  PoolCapacity,
  PoolContext,
  PoolGroup,
  PoolInstance,
  TemplateStamp,
  TemplateVersion,
} from "./driver-types.js";
import type { MachinesState } from "./machines.js";
import type { Plan } from "./plan.js";
import type { PoolScope, ReadyState } from "./scope.js";
import type { ResolvedStrategy } from "./strategy.js";

/**
 * What a phase returns to end the pipeline: the `Ready` condition to publish and when to come back
 * (default: only when something changes).
 */
export interface PhaseResult {
  /** The `Ready` condition. */
  readonly ready: ReadyState;
  /** Reconcile again after this long. */
  readonly requeueAfterMs?: number;
}

/**
 * `access` (written by `cloudAccess`): what the driver's context carries besides the spec — the
 * Cluster's infrastructure object and the pool's credentials (see `PoolCredentials`). Never logged.
 */
export interface AccessSection {
  /** What the controller's `credentials` hook resolved; `undefined` without one. */
  readonly credentials: unknown;
  /** The Cluster's infrastructure object, when the controller was told its kind. */
  readonly infrastructureCluster: InfrastructureClusterObject | undefined;
}

/** `spec` (written by `validateSpec`): the validated spec and the driver's context built from it. */
export interface SpecSection<Spec> {
  /** The spec the kind's schema returned (the raw spec without a schema). */
  readonly spec: Spec;
  /** What every driver call gets: identity, this spec, version, failure domains, abort signal. */
  readonly context: PoolContext<Spec>;
}

/**
 * `capacity` (written by `capacity`): what the driver's `capacity` hook answered, published as
 * `status.capacity` and `status.nodeInfo` (scale from zero), and why it could not be, for `publish`.
 */
export interface CapacitySection {
  /**
   * The capacity published this reconcile (checked); `undefined` without a hook, when the hook
   * answered `undefined`, or when it failed (then the last published one stays).
   */
  readonly capacity: PoolCapacity | undefined;
  /**
   * Why nothing could be published (`InvalidCapacity`, `CapacityUnavailable`), with when to try
   * again: `publish` reports it on `Ready` once the pool is otherwise Ready.
   */
  readonly problem: (ReadyState & { readonly retryAfterMs: number }) | undefined;
}

/** `bootstrap` (written by `bootstrapData`): the MachinePool's bootstrap data. Never logged. */
export interface BootstrapSection {
  /** The data itself (empty with `bootstrapData: "none"`). */
  readonly userData: string;
  /** Its format. */
  readonly format: "cloud-config" | "ignition";
  /** `namespace/name` of the Secret it came from (empty with `bootstrapData: "none"`). */
  readonly secretRef: string;
}

/** `desired` (written by `desiredState`): what the driver's two pure functions say the pool needs. */
export interface DesiredSection<Settings> {
  /** The stamp the pool's template (or group model) must carry. */
  readonly stamp: TemplateStamp;
  /** The settings the group must have (`groupSettings`). */
  readonly settings: Settings;
  /**
   * The `VersionRollout` condition to publish (reason `VersionNotRolled`): a version change that
   * leaves the template inputs as they were. `undefined` removes it.
   */
  readonly versionCondition?: ReadyState | undefined;
}

/** `observed` (written by `observe`): the cloud as this reconcile read it, once. */
export interface ObservedSection<Settings> {
  /** Template versions, oldest first (empty for a driver with `model: "group"`). */
  readonly versions: readonly TemplateVersion[];
  /** The group, or `null` when it does not exist. */
  readonly group: PoolGroup<Settings> | null;
}

/**
 * `bounds` (written by `autoscalerBounds`): the sizes the pool may have and the bounds the group must
 * get, from the driver's own bounds and the cluster-autoscaler's annotations on the MachinePool.
 */
export interface BoundsSection {
  /**
   * The desired sizes the pool may have: the driver's own bounds (`PoolDriver.groupBounds`),
   * widened to the cluster-autoscaler's valid bounds and to the size it chose. `undefined` when the
   * driver has no `groupBounds` (the group's reported bounds are then the limit).
   */
  readonly wanted: GroupBounds | undefined;
  /**
   * What the group's bounds must be this reconcile: `wanted`, widened to the group's current desired
   * size so that writing them never strands it (they narrow once the group has shrunk).
   * `undefined` without `groupBounds`: the kit writes no bounds.
   */
  readonly target: GroupBounds | undefined;
  /** The cluster-autoscaler's bounds, as the MachinePool's annotations say. */
  readonly autoscaler: AutoscalerBounds;
  /**
   * The `AutoscalerBounds` condition to publish (reasons: `WithinAutoscalerBounds`,
   * `ReplicasOutsideAutoscalerBounds`, `AutoscalerBoundsNotCovered`, `InvalidAutoscalerBounds`);
   * `undefined` when the MachinePool has no autoscaler annotation (the kit removes the condition).
   */
  readonly condition: ReadyState | undefined;
}

/** `template` (written by `template`): the version new instances launch from, and who runs it. */
export interface TemplateSection {
  /** The target version (for `model: "group"`, a name derived from the target stamp). */
  readonly version: TemplateVersion;
  /** Every template version after this phase, oldest first (with the one it created). */
  readonly versions: readonly TemplateVersion[];
  /** Whether an instance runs what the pool should run. */
  isUpToDate(instance: PoolInstance): boolean;
}

/** `group` (written by `group`): the group once it matches the pool's settings and template. */
export interface GroupSection<Settings> {
  /** The group as this phase left it (its template version updated, if it did). */
  readonly group: PoolGroup<Settings>;
  /** The replicas the pool should have. */
  readonly desired: number;
  /** Whether an external autoscaler manages the replicas (`cluster.x-k8s.io/replicas-managed-by`). */
  readonly external: boolean;
}

/**
 * `machines` (written by `machines`): MachinePool Machines — instances on their way out, their
 * Machines, delete priorities and the group's size after the drained deletes; `null` for a kind
 * without InfraMachines.
 */
export type MachinesSection = MachinesState | null;

/**
 * `nodes` (written by `nodes`): the pool's Nodes brought to the taints and labels its MachinePool asks
 * for, and how that went.
 */
export interface NodesSection {
  /**
   * The `NodeMetadata` condition to publish (reasons: `NodeMetadataSynced`, `NodeMetadataRefused`,
   * `NodeMetadataPending`, `NodeMetadataNotApplied`, `WorkloadClusterUnreachable`); `undefined` when
   * the MachinePool asks for no taint or Node label, or the kit sees no Nodes (the kit removes it).
   */
  readonly condition: ReadyState | undefined;
  /** Look again this soon: a Node patch lost a race (409), or the workload cluster was unreachable. */
  readonly retryAfterMs: number | undefined;
}

/** `scale` (written by `scale`): the plan of this reconcile and what it counted. */
export interface ScaleSection {
  /** The strategy resolved for the pool. */
  readonly strategy: ResolvedStrategy;
  /** The plan executed this reconcile. */
  readonly plan: Plan;
  /** Live instances that are not up to date. */
  readonly outdated: number;
  /** Whether the pool reached its size, counted on instances (never on Nodes). */
  readonly provisioned: boolean;
  /** Why the workload cluster's Nodes could not be read (`readiness: "node"`): rollouts hold. */
  readonly workloadUnavailable: WorkloadClusterUnavailableError | undefined;
  /**
   * With `minReadySeconds`: how long until the next Ready Node that does not count as available yet
   * does, so the pool looks again then; `undefined` when none waits.
   */
  readonly nodesAvailableInMs?: number | undefined;
  /** A preflight check held a launch this reconcile: the `Ready` condition that names it. */
  readonly preflight?: ReadyState | undefined;
  /**
   * Live instances on the target template launched before `strategy.rolloutAfter` (once it has
   * passed): out of date, and replaced by the kit like outdated ones.
   */
  readonly expired?: number;
  /** With `strategy.type: OnDelete`: out-of-date instances left alone until they are deleted. */
  readonly onDelete?: number;
  /**
   * The `Draining` condition to publish (pools without MachinePool Machines): which Nodes are
   * drained before their instances go, the Pods left and the budgets that block them; `undefined`
   * when no drain runs (the kit removes the condition).
   */
  readonly draining?: ReadyState | undefined;
}

/** `rollout` (written by `nativeRollout`): the driver's native rollout, as the `Ready` message tells it. */
export interface RolloutSection {
  /** A note for the `Ready` message, when a native rollout runs or was just started or cancelled. */
  readonly note: string | undefined;
  /** A preflight check held the start of a native rollout: the `Ready` condition that names it. */
  readonly preflight?: ReadyState | undefined;
}

/** `teardown` (written by `teardown`): the cloud resources are gone; the kit removes its finalizer. */
export interface TeardownSection {
  /** Always true: the section is written only once the group and template are deleted. */
  readonly deleted: true;
}

/**
 * Everything the kit's phases learn in one reconcile, by section. Each section has one writer (the
 * phase named in its type's comment) and is written once.
 *
 * @typeParam Spec - the provider's spec type
 * @typeParam Settings - the driver's group settings
 */
export interface PoolSections<Spec, Settings> {
  /** By `cloudAccess`. */
  readonly access: AccessSection;
  /** By `validateSpec`. */
  readonly spec: SpecSection<Spec>;
  /** By `capacity`. */
  readonly capacity: CapacitySection;
  /** By `bootstrapData`. */
  readonly bootstrap: BootstrapSection;
  /** By `desiredState`. */
  readonly desired: DesiredSection<Settings>;
  /** By `observe`. */
  readonly observed: ObservedSection<Settings>;
  /** By `template`. */
  readonly template: TemplateSection;
  /** By `autoscalerBounds`. */
  readonly bounds: BoundsSection;
  /** By `group`. */
  readonly group: GroupSection<Settings>;
  /** By `machines`. */
  readonly machines: MachinesSection;
  /** By `nodes`. */
  readonly nodes: NodesSection;
  /** By `scale`. */
  readonly scale: ScaleSection;
  /** By `nativeRollout`. */
  readonly rollout: RolloutSection;
  /** By `teardown`. */
  readonly teardown: TeardownSection;
}

/** The name of a section of {@link PoolSections}. */
export type PoolSectionName = keyof PoolSections<unknown, unknown>;

/** Every section name, in the order the default pipeline writes them. */
export const POOL_SECTION_NAMES: readonly PoolSectionName[] = [
  "access",
  "spec",
  "capacity",
  "bootstrap",
  "desired",
  "observed",
  "template",
  "bounds",
  "group",
  "machines",
  "nodes",
  "scale",
  "rollout",
  "teardown",
];

/**
 * The scope as one phase sees it: the {@link PoolScope}, plus the sections it declared — `read` the
 * ones in `reads` (written by an earlier phase), `write` the ones in `writes` (once each).
 *
 * @typeParam Spec - the provider's spec type
 * @typeParam Settings - the driver's group settings
 * @typeParam Reads - the sections the phase reads
 * @typeParam Writes - the sections the phase writes
 */
export interface PhaseScope<
  Spec,
  Settings,
  Reads extends PoolSectionName = PoolSectionName,
  Writes extends PoolSectionName = never,
> extends PoolScope<Spec, Settings> {
  /** A section an earlier phase wrote (a read-only value: copy it to change it). */
  read<K extends Reads>(section: K): PoolSections<Spec, Settings>[K];
  /** Writes a section this phase owns; once per reconcile. */
  write<K extends Writes>(section: K, value: PoolSections<Spec, Settings>[K]): void;
}

/**
 * One step of a pool's reconcile. Return nothing to go on with the next phase (having written every
 * section in `writes`), or a {@link PhaseResult} to end the reconcile with that `Ready` condition.
 * Throw a driver failure (let `scope.call` throw) to hand it to the error policy.
 *
 * @typeParam Spec - the provider's spec type
 * @typeParam Settings - the driver's group settings
 * @typeParam Reads - the sections the phase reads
 * @typeParam Writes - the sections the phase writes
 *
 * @example A provider phase that records the group's ID in the provider's own status field
 * ```ts
 * const recordGroupId = definePhase<FooSpec, FooSettings>()({
 *   name: "recordGroupId",
 *   reads: ["group"],
 *   writes: [],
 *   run(scope) {
 *     scope.status.setProviderStatus({ groupId: scope.read("group").group.id });
 *   },
 * });
 * ```
 */
export interface PoolPhase<
  Spec,
  Settings,
  Reads extends PoolSectionName = PoolSectionName,
  Writes extends PoolSectionName = PoolSectionName,
> {
  /** A unique name (logs, errors, {@link PoolPhase} placement with `insertPhase`). */
  readonly name: string;
  /** The sections it reads; each must be written by an earlier phase of the list. */
  readonly reads: readonly Reads[];
  /** The sections it writes; no other phase of the list may write them. */
  readonly writes: readonly Writes[];
  /** The phase's work. */
  run(
    scope: PhaseScope<Spec, Settings, Reads, Writes>,
  ): Promise<PhaseResult | undefined> | PhaseResult | undefined;
}

/**
 * Declares a phase with its sections inferred from `reads` and `writes`, so that `scope.read` and
 * `scope.write` accept exactly those. Curried to fix `Spec` and `Settings` while the sections are
 * inferred.
 *
 * @example
 * ```ts
 * const recordGroupId = definePhase<FooSpec, FooSettings>()({
 *   name: "recordGroupId", reads: ["group"], writes: [],
 *   run(scope) { scope.status.setProviderStatus({ groupId: scope.read("group").group.id }); },
 * });
 * ```
 */
export function definePhase<Spec, Settings>(): <
  const Reads extends PoolSectionName = never,
  const Writes extends PoolSectionName = never,
>(
  phase: PoolPhase<Spec, Settings, Reads, Writes>,
) => PoolPhase<Spec, Settings, Reads, Writes> {
  return (phase) => phase;
}
