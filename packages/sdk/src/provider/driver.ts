/**
 * The provider-facing half of the MachinePool kit: {@link PoolDriver}, the one interface a provider
 * author implements, in either shape (template versions, or {@link GroupModelPoolDriver} for a model
 * that lives in the group). The data it exchanges with the kit lives in `driver-types.ts`, its error
 * type in `driver-error.ts`, the stamp tag codec in `stamp.ts`; this module re-exports them, so a
 * driver imports everything it needs from one place.
 *
 * @module
 */
import type { DriverFailure } from "./driver-error.js";
import type {
  DeleteMode,
  GroupBounds,
  GroupIntent,
  GroupUpdate,
  NativeRollout,
  NewTemplateVersion,
  PoolCapacity,
  PoolContext,
  PoolEnvironment,
  PoolGroup,
  PoolInstance,
  TemplateVersion,
  UserDataOptions,
} from "./driver-types.js";

export * from "./driver-error.js";
export * from "./driver-types.js";
export {
  BLOCK_MOVE_VALUE_PREFIX,
  DEFAULT_MOVE_BLOCKING_CALLS,
  MoveAnnotations,
} from "./move.js";
export { assertPoolOwns, OWNER_TAG_PREFIX, poolOwnerTags } from "./ownership.js";
export { TEMPLATE_STAMP_TAG_KEYS, templateStampFromTags, templateStampToTags } from "./stamp.js";

/**
 * The cloud calls of one MachinePool provider — the only thing a provider author writes.
 *
 * It holds the cloud calls for one scaling group (AWS Auto Scaling group, Azure VM scale set, GCE
 * managed instance group, …) and its launch template. The kit's reconciler owns everything else —
 * owner lookup, finalizer, pause, bootstrap data, replica intent, rollouts, status, conditions, events,
 * deletion order, retries.
 *
 * ## What the driver does, and what it does not
 *
 * | The driver (you)                                              | The kit                                                                 |
 * |---------------------------------------------------------------|-------------------------------------------------------------------------|
 * | Reads and writes the cloud                                    | Decides *what* to write, and when                                       |
 * | Returns instances with their exact `providerID`               | Sorts, de-duplicates and publishes `providerIDList`, `replicas`, ready  |
 * | Stores a {@link TemplateStamp} on each template version      | Hashes bootstrap data and template inputs; decides refresh vs. rollout   |
 * | Reports the group's settings as the cloud has them            | Compares them with {@link PoolDriver.groupSettings} and updates on drift |
 * | Tags what it creates with the pool's identity                 | Deletes in order, treats NotFound as done                               |
 * | Maps cloud errors in {@link PoolDriver.classifyError}         | Turns them into conditions, backoff and `retry-after` waits             |
 *
 * Every method gets a {@link PoolContext} (which pool, its spec, an abort signal) and either returns
 * or throws. There is no result type to build: cloud errors propagate as they are, and
 * {@link PoolDriver.classifyError} says once what each one means ({@link DriverFailure}). When a
 * method itself knows better, it throws a {@link DriverError} (`DriverError.waiting(…)`, …).
 *
 * ## Rules every method must follow
 *
 * - **Idempotent.** The kit may call any method again after a lost response. Creating something that
 *   already exists (and is owned by this pool) succeeds; deleting something that is gone may throw
 *   NotFound (classified as `notFound`), which the kit counts as done.
 * - **Non-blocking.** Start the operation and return; never wait for the cloud to converge. The kit
 *   polls {@link PoolDriver.getGroup} on its own schedule.
 * - **Owned resources only.** Tag every group and template with the pool's identity
 *   ({@link PoolContext.pool}) and refuse (terminal error) to adopt or delete one tagged for another pool.
 * - **No decisions.** Don't compare, hash, sort or pick victims: report what the cloud has, apply what
 *   you are told. Those decisions are where providers shipped their bugs; the kit makes them once.
 *
 * ## Why the interface looks like this (design notes)
 *
 * - **No providerID codec object.** The only place a providerID is made is
 *   {@link PoolInstance.providerID}. The kit never invents or parses an ID: it relays the driver's
 *   string and looks instances up by it (Nodes, Machines and `providerIDList` are all matched by exact
 *   string). One producer means one spelling, which is what core CAPI needs byte for byte.
 * - **Instances come with the group.** {@link PoolGroup.instances} is read in the same call as the
 *   group, so desired size, template and instances are one consistent snapshot.
 * - **Template versions carry a stamp.** userData is often write-only, so "did the bootstrap data
 *   change?" can only be answered from metadata the kit put there: the {@link TemplateStamp}. A new
 *   version whose stamp differs only in `bootstrapHash` is a token rotation (refresh the template, keep
 *   the instances); a different `specHash` or `bootstrapRef` rolls the pool.
 * - **Two pure functions describe the desired state** ({@link PoolDriver.templateInputs},
 *   {@link PoolDriver.groupSettings}); the kit compares, so spurious diffs (nil vs "", unsorted zones)
 *   are caught in one place instead of in every provider.
 * - **Errors are classified, not wrapped.** One `classifyError` instead of a try/catch per method.
 *
 * ## Call order
 *
 * For orientation: `getTemplate` → (`createTemplateVersion`) → `getGroup` → (`createGroup` |
 * `updateGroup`) → (`deleteInstance`… | `nativeRollout`) → (`deleteTemplate` of unused versions). On
 * deletion: `getGroup` → `deleteGroup` → wait until `getGroup` is `undefined` → `deleteTemplate`
 * without versions.
 *
 * @typeParam Spec - the provider's InfraMachinePool `spec` type
 * @typeParam Settings - the JSON-serialisable group settings the driver manages besides size and
 *   template (bounds, zones, …)
 * @typeParam Env - the credentials and infrastructure cluster the controller resolves
 *   ({@link PoolEnvironment}); one parameter, so `ctx` is typed in every method
 *
 * @example A complete driver, in outline (see the example provider for a real one)
 * ```ts
 * import { DriverError, type PoolDriver, templateStampFromTags, templateStampToTags } from "@capi-ts/sdk";
 *
 * const driver: PoolDriver<MyPoolSpec, { minSize: number; maxSize: number }> = {
 *   templateInputs: (ctx) => ({ image: ctx.spec.image, size: ctx.spec.size, version: ctx.version }),
 *   groupSettings: (ctx) => ({ minSize: ctx.spec.minSize, maxSize: ctx.spec.maxSize }),
 *
 *   async getTemplate(ctx) {
 *     const lt = await cloud.describeLaunchTemplate(nameOf(ctx.pool));
 *     return (lt?.versions ?? []).map((v) => ({
 *       version: String(v.version), stamp: templateStampFromTags(v.tags), createdAt: v.createdAt,
 *     }));
 *   },
 *   async createTemplateVersion(ctx, { userData, stamp }) { … },
 *   async deleteTemplate(ctx, versions) { … },
 *   async getGroup(ctx) { … },
 *   async createGroup(ctx, { replicas, templateVersion, settings }) { … },
 *   async updateGroup(ctx, change) { … },
 *   async deleteGroup(ctx) { await cloud.deleteGroup(nameOf(ctx.pool), { force: true }); },
 *   async deleteInstance(ctx, instance, mode) {
 *     await cloud.terminateInstanceInGroup(instance.id, { decrementDesiredCapacity: mode === "shrink" });
 *   },
 *   classifyError(err) {
 *     if (err instanceof MyCloudError && err.status === 429)
 *       return { kind: "throttled", reason: "CloudThrottling", message: err.message, retryAfterMs: err.retryAfterMs };
 *     return undefined; // unknown errors count as transient
 *   },
 * };
 * ```
 */
export interface PoolDriver<
  Spec = unknown,
  Settings = unknown,
  Env extends PoolEnvironment = PoolEnvironment,
> {
  /**
   * `"template"` (the default): the model lives in launch template versions. A cloud whose model
   * lives in the group writes a {@link GroupModelPoolDriver} instead.
   */
  readonly model?: "template";

  /**
   * Everything the launch template is built from except the bootstrap data: image, instance type,
   * Kubernetes version, disks… A pure function of the context, JSON-serialisable. The kit hashes it
   * into {@link TemplateStamp.specHash}; a change rolls every instance. Leave out anything that must
   * not roll the pool (tags, sizes).
   *
   * @example
   * ```ts
   * templateInputs: (ctx) => ({ image: ctx.spec.image ?? imageFor(ctx.version), type: ctx.spec.instanceType }),
   * ```
   */
  templateInputs(ctx: PoolContext<Spec, Env>): unknown;

  /**
   * The group settings the driver manages besides desired size and template (bounds, zones, policies),
   * in the same normalised shape {@link PoolGroup.settings} reports (sort lists, drop defaults). A pure
   * function; the kit compares the two and calls {@link PoolDriver.updateGroup} with `settings` when
   * they differ — no instance is replaced for a settings change.
   *
   * @example
   * ```ts
   * groupSettings: (ctx) => ({ minSize: ctx.spec.minSize, maxSize: ctx.spec.maxSize, zones: [...ctx.failureDomains].sort() }),
   * ```
   */
  groupSettings(ctx: PoolContext<Spec, Env>): Settings;

  /**
   * The pool's own bounds of the group's desired size (e.g. from `spec.minSize`/`spec.maxSize`), a pure
   * function like {@link PoolDriver.groupSettings}. Optional: implement it when the cloud enforces
   * bounds, and leave the bounds out of `groupSettings` then. The kit writes the bounds itself
   * ({@link GroupIntent.bounds}, {@link GroupUpdate.bounds}): these, widened so that the
   * cluster-autoscaler's bounds (the MachinePool's `cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size`
   * and `…-max-size`) and the size it chose fit, so the cloud never refuses what the autoscaler asks
   * (CAPA #5746). It compares them with {@link PoolGroup.minReplicas}/{@link PoolGroup.maxReplicas},
   * which the driver must then report as the cloud has them. Without it the kit writes no bounds and
   * refuses a size outside the reported ones.
   *
   * @example
   * ```ts
   * groupBounds: (ctx) => ({ min: ctx.spec.minSize, max: ctx.spec.maxSize }),
   * ```
   */
  groupBounds?(ctx: PoolContext<Spec, Env>): GroupBounds;

  /**
   * The pool's template versions, oldest first; `[]` when the template does not exist.
   *
   * @example
   * ```ts
   * async getTemplate(ctx) {
   *   const lt = await cloud.describeLaunchTemplate(nameOf(ctx.pool));
   *   return (lt?.versions ?? []).map((v) => ({ version: String(v.version), stamp: templateStampFromTags(v.tags) }));
   * }
   * ```
   */
  getTemplate(ctx: PoolContext<Spec, Env>): Promise<readonly TemplateVersion[]>;

  /**
   * Creates the template (tagged with the pool's identity) if it does not exist, else adds a version.
   * Build it from {@link PoolContext.spec} and `input.userData`, store `input.stamp` with the version,
   * and return the new version.
   */
  createTemplateVersion(
    ctx: PoolContext<Spec, Env>,
    input: NewTemplateVersion,
  ): Promise<TemplateVersion>;

  /**
   * Deletes the listed versions (pruning: the kit only lists versions that are not the newest and that
   * no live instance and no group uses), or, without `versions`, the whole template (teardown, after
   * the group is gone). Only ever the pool's own template.
   */
  deleteTemplate(ctx: PoolContext<Spec, Env>, versions?: readonly string[]): Promise<void>;

  /**
   * The pool's group with its instances, or `undefined` when it does not exist (or is completely gone
   * after a delete). Throw `DriverError.terminal(…)` if a group by that name belongs to another pool.
   */
  getGroup(ctx: PoolContext<Spec, Env>): Promise<PoolGroup<Settings> | undefined>;

  /**
   * Creates the group, tagged with the pool's identity. Return as soon as the cloud accepted it.
   * If it already exists and is this pool's, succeed.
   */
  createGroup(ctx: PoolContext<Spec, Env>, intent: GroupIntent<Settings>): Promise<void>;

  /** Applies the fields present in `update` to the group, in one cloud call where possible. */
  updateGroup(ctx: PoolContext<Spec, Env>, update: GroupUpdate<Settings>): Promise<void>;

  /**
   * Starts deleting the group and its instances (force). Returns at once; the kit polls
   * {@link PoolDriver.getGroup} until it is `undefined`. Deleting a group that is already being
   * deleted succeeds; a group that is gone may throw NotFound.
   */
  deleteGroup(ctx: PoolContext<Spec, Env>): Promise<void>;

  /**
   * Terminates one instance of the group; see {@link DeleteMode} for `shrink` vs `replace`. An
   * instance that is already terminating or gone is not an error.
   */
  deleteInstance(
    ctx: PoolContext<Spec, Env>,
    instance: PoolInstance,
    mode: DeleteMode,
  ): Promise<void>;

  /** The cloud's native rolling replacement, if it has one and the provider wants it. */
  readonly nativeRollout?: NativeRollout<Spec, Env>;

  /**
   * How bootstrap data fits the cloud's user data: its size limit, gzip, a store for payloads too large
   * ({@link UserDataOptions}). Optional: without it the payload is sent as it is, whatever its size.
   *
   * @example
   * ```ts
   * userData: { limitBytes: 16_384, compress: "gzip" }, // AWS: 16 KiB before base64
   * ```
   */
  readonly userData?: UserDataOptions<Spec, Env>;

  /**
   * Scale from zero: what one instance of the pool offers — its Node's `status.capacity` (`cpu`
   * and `memory` at least, then `ephemeral-storage`, `pods`, `nvidia.com/gpu`, …, each a quantity
   * string) and its architecture and operating system — answered from the spec (the instance
   * type). The kit publishes it as the pool's `status.capacity` and `status.nodeInfo` at every
   * replica count, 0 included, and again whenever the spec changes: the cluster-autoscaler builds
   * the Node an empty MachinePool would get from these two fields. Return `undefined` when the
   * capacity is not known (a type your catalog lacks): the kit removes what it published before,
   * rather than leave another type's capacity behind. Without this method the kit writes neither
   * field.
   *
   * It may answer at once or with a promise: most drivers read a table, while some clouds tell an
   * instance type's size only through an API (EC2 `DescribeInstanceTypes`, Azure resource SKUs, GCE
   * `machineTypes.get`). The kit calls it on every reconcile, before the cloud is read, so cache such
   * a lookup by instance type (it does not change): a resync must not cost an extra cloud call.
   *
   * A value the kit cannot publish (`"lots"`, `"-1"`, `4` instead of `"4"`, no `cpu` or `memory`)
   * or a throw keeps the last published capacity and, once the pool is otherwise Ready, makes
   * `Ready` False with reason `InvalidCapacity` or `CapacityUnavailable`; scaling goes on.
   *
   * @example From a table of the cloud's instance types
   * ```ts
   * capacity: (ctx) => {
   *   const type = INSTANCE_TYPES[ctx.spec.instanceType]; // { vcpus: 2, memoryGiB: 8, arch: "arm64" }
   *   return type && {
   *     capacity: { cpu: String(type.vcpus), memory: `${type.memoryGiB}Gi`, pods: "110" },
   *     nodeInfo: { architecture: type.arch, operatingSystem: "linux" },
   *   };
   * },
   * ```
   */
  capacity?(
    ctx: PoolContext<Spec, Env>,
  ): PoolCapacity | undefined | Promise<PoolCapacity | undefined>;

  /**
   * Says what a cloud error means. Return `undefined` for errors you don't recognise (they count as
   * `transient`). {@link DriverError}s never reach this function.
   */
  classifyError?(error: unknown): DriverFailure | undefined;

  /**
   * The calls during which `clusterctl move` must wait: before the first of them in a reconcile the
   * kit sets `clusterctl.cluster.x-k8s.io/block-move` on the pool, and it removes it once the
   * reconcile has written the pool's status. Names are the kit's steps (`createGroup`, `updateGroup`,
   * `deleteInstance`, `createTemplateVersion`, `nativeRollout.start`, `nativeRollout.cancel`,
   * `userData.store.put`, `getGroup`, …). Default: every one of those that launches, terminates or
   * re-points instances ({@link DEFAULT_MOVE_BLOCKING_CALLS}); `[]` never blocks a move.
   *
   * @example A cloud whose group creation is a long, non-idempotent sequence, and nothing else
   * ```ts
   * moveBlockingCalls: ["createGroup"],
   * ```
   */
  readonly moveBlockingCalls?: readonly string[];
}

/**
 * A driver for a cloud whose model lives in the group (`model: "group"`, {@link PoolModelLocation}):
 * a {@link PoolDriver} without the template methods. The group carries the stamp of its model
 * ({@link PoolGroup.modelStamp}), `createGroup`/`updateGroup` get the model to apply
 * ({@link GroupIntent.model}, {@link GroupUpdate.model}), and each instance says whether it runs the
 * latest model ({@link PoolInstance.latestModel}).
 *
 * @example An Azure-VMSS-shaped driver, in outline
 * ```ts
 * const driver: GroupModelPoolDriver<MySpec, MySettings> = {
 *   model: "group",
 *   templateInputs: (ctx) => ({ image: ctx.spec.image, sku: ctx.spec.sku }),
 *   groupSettings: (ctx) => ({ zones: [...ctx.failureDomains].sort() }),
 *   async getGroup(ctx) {
 *     const vmss = await cloud.getScaleSet(nameOf(ctx.pool));
 *     return vmss && { …, modelStamp: templateStampFromTags(vmss.tags),
 *       instances: vmss.vms.map((vm) => ({ …, latestModel: vm.latestModelApplied })) };
 *   },
 *   async updateGroup(ctx, { replicas, settings, model }) {
 *     await cloud.updateScaleSet(nameOf(ctx.pool), { capacity: replicas, …settings,
 *       ...(model && { customData: model.userData, tags: templateStampToTags(model.stamp) }) });
 *   },
 *   …
 * };
 * ```
 */
export type GroupModelPoolDriver<
  Spec = unknown,
  Settings = unknown,
  Env extends PoolEnvironment = PoolEnvironment,
> = Omit<
  PoolDriver<Spec, Settings, Env>,
  "getTemplate" | "createTemplateVersion" | "deleteTemplate" | "model"
> & {
  /** The model lives in the group. */
  readonly model: "group";
};

/**
 * Either driver shape the kit runs: a template-shaped {@link PoolDriver} or a
 * {@link GroupModelPoolDriver}.
 */
export type AnyPoolDriver<
  Spec = unknown,
  Settings = unknown,
  Env extends PoolEnvironment = PoolEnvironment,
> = PoolDriver<Spec, Settings, Env> | GroupModelPoolDriver<Spec, Settings, Env>;
