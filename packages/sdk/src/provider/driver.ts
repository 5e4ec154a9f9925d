/**
 * The provider-facing half of the MachinePool kit: {@link PoolDriver}, the one interface a provider
 * author implements, with its observation, request and error types.
 *
 * @module
 */

// ── context ─────────────────────────────────────────────────────────────────────────────────────

/** Which InfraMachinePool a call is for. Use it to name and tag cloud resources. */
export interface PoolIdentity {
  /** Namespace of the InfraMachinePool. */
  readonly namespace: string;
  /** Name of the InfraMachinePool. */
  readonly name: string;
  /**
   * UID of the InfraMachinePool. Don't use it in names or ownership tags: it changes when a cluster is
   * moved with `clusterctl move`, while the cloud resources stay.
   */
  readonly uid: string;
  /** Name of the owning Cluster (`cluster.x-k8s.io/cluster-name`). */
  readonly clusterName: string;
}

/**
 * Everything a driver method may read. It is built by the kit for each reconcile; the driver keeps no
 * state between calls.
 *
 * @typeParam Spec - the provider's InfraMachinePool `spec` type
 */
export interface PoolContext<Spec> {
  /** The pool this call is for. */
  readonly pool: PoolIdentity;
  /** The InfraMachinePool's spec (validated against its schema). */
  readonly spec: Spec;
  /** Kubernetes version of the instances (`MachinePool.spec.template.spec.version`), if set. */
  readonly version: string | undefined;
  /** Failure domains the pool should spread over (`MachinePool.spec.failureDomains`), maybe empty. */
  readonly failureDomains: readonly string[];
  /** Aborted when the reconcile times out or the controller stops; pass it to the cloud SDK. */
  readonly signal: AbortSignal;
}

// ── observations ────────────────────────────────────────────────────────────────────────────────

/**
 * Lifecycle state of an instance, mapped from the cloud's own states. `terminated` instances are
 * dropped from `providerIDList`; every other state keeps its ID (dropping a live ID makes core CAPI
 * delete the Node). `failed` is an instance the cloud gave up on and will not replace by itself
 * (Azure VMSS `provisioningState: Failed`, a GCE MIG instance whose last action failed): the kit
 * replaces it within the rollout budget.
 */
export type PoolInstanceState =
  | "pending"
  | "running"
  | "stopping"
  | "stopped"
  | "failed"
  | "terminating"
  | "terminated";

/** One instance of the group, as the cloud reports it. */
export interface PoolInstance {
  /** The cloud's instance ID, passed back to {@link PoolDriver.deleteInstance}. */
  readonly id: string;
  /**
   * The providerID exactly as the kubelet / cloud-controller-manager writes it on the Node (byte for
   * byte, e.g. `aws:///us-east-2a/i-0abc…`). This is the providerID codec: the only place one is made.
   */
  readonly providerID: string;
  /** Lifecycle state. */
  readonly state: PoolInstanceState;
  /** Template version it was launched from (as in {@link TemplateVersion.version}), if known. */
  readonly templateVersion: string | undefined;
  /** Launch time, epoch milliseconds (for the Oldest/Newest delete policies). */
  readonly createdAt: number;
  /** Zone / failure domain, if the cloud has one. */
  readonly zone?: string;
  /** `false` when the cloud's health check fails (such instances are replaced first). */
  readonly healthy?: boolean;
  /**
   * Only for drivers with `model: "group"` (see {@link PoolModelLocation}): whether the instance runs
   * the group's current model, as the cloud reports it per instance (Azure VMSS
   * `latestModelApplied`, a GCE MIG instance's `isUpToDate`/current version). Required there: an
   * instance without it counts as outdated.
   */
  readonly latestModel?: boolean;
}

/** Status of the group as a whole. */
export type PoolGroupStatus = "creating" | "active" | "updating" | "deleting" | "failed";

/**
 * The scaling group and its instances, read in one go.
 *
 * @typeParam Settings - what {@link PoolDriver.groupSettings} returns
 */
export interface PoolGroup<Settings> {
  /** The cloud's ID of the group (for events and logs). */
  readonly id: string;
  /** `failed` means the cloud reports an error (e.g. a partial scale-up); put the reason in `message`. */
  readonly status: PoolGroupStatus;
  /** The cloud's explanation of the status, if any. */
  readonly message?: string;
  /** The group's desired size (written back to `MachinePool.spec.replicas` when it is managed externally). */
  readonly desiredReplicas: number;
  /** Lower bound of the desired size, if the cloud has one (the kit refuses values outside it). */
  readonly minReplicas?: number;
  /** Upper bound of the desired size, if the cloud has one. */
  readonly maxReplicas?: number;
  /**
   * The template version new instances launch from. Pin groups to explicit versions (never "latest"):
   * the kit decides when a group moves to a new version. `undefined` if the cloud cannot say.
   */
  readonly templateVersion: string | undefined;
  /**
   * The group's settings as the cloud has them, in exactly the shape {@link PoolDriver.groupSettings}
   * returns (same keys, lists sorted), so that equal means equal.
   */
  readonly settings: Settings;
  /** Member instances, any order, including terminated ones the cloud still lists. */
  readonly instances: readonly PoolInstance[];
  /**
   * Only for drivers with `model: "group"`: the {@link TemplateStamp} stored with the group's model
   * (as tags on the scale set), `undefined` when it has none (the kit then updates the model).
   */
  readonly modelStamp?: TemplateStamp;
}

/**
 * What the kit stores with each template version, computed by the kit. Store all three (as tags or
 * labels) and return them from {@link PoolDriver.getTemplate}: userData is often write-only, so this is
 * the only way to know what a version was built from. Each value is lowercase hex or a short
 * `[a-z0-9-]` string of at most 63 characters, so it fits AWS tags, Azure tags and GCE labels; use
 * {@link templateStampToTags} / {@link templateStampFromTags}.
 */
export interface TemplateStamp {
  /** Hash of {@link PoolDriver.templateInputs}. A change rolls the pool. */
  readonly specHash: string;
  /** Hash of the bootstrap data. A change alone (token rotation) only refreshes the template. */
  readonly bootstrapHash: string;
  /** Hash of the bootstrap secret's namespace/name. A change rolls the pool (CAPI's rollout signal). */
  readonly bootstrapRef: string;
}

/** A template version as the cloud reports it. */
export interface TemplateVersion {
  /** The cloud's version identifier (a number as a string, a name, a self-link…). */
  readonly version: string;
  /** The stamp stored with it; `undefined` if it has none (the kit treats it as outdated). */
  readonly stamp: TemplateStamp | undefined;
  /** Creation time, epoch milliseconds, if known. */
  readonly createdAt?: number;
}

// ── requests ────────────────────────────────────────────────────────────────────────────────────

/** Input of {@link PoolDriver.createTemplateVersion}. */
export interface NewTemplateVersion {
  /** The bootstrap data (Secret key `value`), to put into the instance's userData / custom data. */
  readonly userData: string;
  /** Its format (Secret key `format`; `cloud-config` when absent). */
  readonly format: "cloud-config" | "ignition";
  /** Store this with the version (see {@link TemplateStamp}). */
  readonly stamp: TemplateStamp;
}

/**
 * Input of {@link PoolDriver.createGroup}.
 *
 * @typeParam Settings - what {@link PoolDriver.groupSettings} returns
 */
export interface GroupIntent<Settings> {
  /**
   * Desired size. `undefined` when replicas are managed externally (an autoscaler): then don't send a
   * desired size at all and let the cloud pick its default (usually the minimum).
   */
  readonly replicas: number | undefined;
  /** Template version to launch from. */
  readonly templateVersion: string;
  /** The settings from {@link PoolDriver.groupSettings}. */
  readonly settings: Settings;
  /**
   * Only for drivers with `model: "group"`: the model to create the group with (userData, format and
   * the stamp to store with it, as tags on the group). `templateVersion` is then a name the kit
   * derives from the stamp; ignore it.
   */
  readonly model?: NewTemplateVersion;
}

/**
 * Input of {@link PoolDriver.updateGroup}: only the fields present change.
 *
 * @typeParam Settings - what {@link PoolDriver.groupSettings} returns
 */
export interface GroupUpdate<Settings> {
  /** New desired size (never present when replicas are managed externally). */
  readonly replicas?: number;
  /** New template version for instances launched from now on; existing instances are not touched. */
  readonly templateVersion?: string;
  /** New settings (present when they drifted from {@link PoolDriver.groupSettings}). */
  readonly settings?: Settings;
  /**
   * Only for drivers with `model: "group"`: the group's new model (build it from
   * {@link PoolContext.spec} and `userData`, store `stamp` with it). Existing instances keep running
   * their model (they report `latestModel: false`); the kit replaces them when the change needs it.
   */
  readonly model?: NewTemplateVersion;
}

/**
 * Where the model of new instances (image, size, bootstrap data) lives:
 * - `"template"` (default): in versions of a launch template the group points at (AWS launch
 *   templates, GCE instance templates). The driver implements `getTemplate`,
 *   `createTemplateVersion` and `deleteTemplate`; each instance reports its `templateVersion`.
 * - `"group"`: inside the group itself (an Azure VM scale set's model, a GCE MIG whose version is
 *   set in place). The driver has no template methods; it stores the stamp with the group's model
 *   ({@link PoolGroup.modelStamp}), applies {@link GroupUpdate.model}, and reports per instance
 *   whether it runs the latest model ({@link PoolInstance.latestModel}).
 */
export type PoolModelLocation = "template" | "group";

/**
 * How {@link PoolDriver.deleteInstance} removes an instance: `shrink` lowers the group's desired size
 * by one in the same call (scale-down, rollouts with surge); `replace` keeps it, so the cloud launches a
 * replacement from the current template (rollouts without surge, remediation).
 */
export type DeleteMode = "shrink" | "replace";

// ── native rollout ──────────────────────────────────────────────────────────────────────────────

/** Limits of a rollout, from the pool's strategy. */
export interface RolloutOptions {
  /** Desired size during the rollout. */
  readonly replicas: number;
  /** Instances that may exist above `replicas` during the rollout. */
  readonly maxSurge: number;
  /** Instances that may be unavailable during the rollout. */
  readonly maxUnavailable: number;
}

/** A native rollout as the cloud reports it. */
export interface RolloutStatus {
  /** The cloud's ID of the rollout. */
  readonly id: string;
  /** Where it is. */
  readonly state: "running" | "cancelling" | "succeeded" | "failed" | "cancelled";
  /**
   * The group's template version when it started. The kit cancels a running rollout whose version's
   * stamp no longer matches what the pool should run (a stale rollout), then starts a new one.
   */
  readonly startedWithVersion?: string;
  /** 0..100, if the cloud reports it. */
  readonly percentComplete?: number;
  /** The cloud's explanation, for `failed` and `cancelled`. */
  readonly message?: string;
}

/**
 * The cloud's own rolling replacement (AWS instance refresh, MIG update policy, …). Optional: without
 * it the kit rolls pools itself with {@link PoolDriver.deleteInstance}.
 *
 * @typeParam Spec - the provider's InfraMachinePool `spec` type
 */
export interface NativeRollout<Spec> {
  /** Starts replacing every instance not on the group's current template version. */
  start(ctx: PoolContext<Spec>, options: RolloutOptions): Promise<void>;
  /** The running rollout, else the most recent one, else `undefined`. */
  get(ctx: PoolContext<Spec>): Promise<RolloutStatus | undefined>;
  /** Cancels the running rollout (may complete asynchronously; "nothing to cancel" is not an error). */
  cancel(ctx: PoolContext<Spec>): Promise<void>;
}

// ── errors ──────────────────────────────────────────────────────────────────────────────────────

/**
 * What a failed cloud call means for the reconciler. `reason` is a CamelCase word used as the
 * condition reason and event reason; `message` is shown to users.
 *
 * - `waiting`: the cloud is busy with something that must finish first (group still deleting,
 *   template version in use, refresh in progress). Not an error: retried after `retryAfterMs`.
 * - `transient`: a failure that may pass (5xx, timeouts, unknown errors). Retried with backoff.
 * - `throttled`: the cloud asked to slow down (429). Retried no earlier than `retryAfterMs`.
 * - `terminal`: retrying the same request cannot help (invalid spec, quota, permissions, resource
 *   owned by someone else). Reported as a condition; retried only when the spec changes or at resync.
 * - `notFound`: the resource does not exist. Done, when deleting.
 */
export type DriverFailure =
  | {
      readonly kind: "waiting";
      readonly reason: string;
      readonly message: string;
      readonly retryAfterMs: number;
    }
  | {
      readonly kind: "transient";
      readonly reason: string;
      readonly message: string;
      readonly retryAfterMs?: number;
    }
  | {
      readonly kind: "throttled";
      readonly reason: string;
      readonly message: string;
      readonly retryAfterMs: number;
    }
  | { readonly kind: "terminal"; readonly reason: string; readonly message: string }
  | { readonly kind: "notFound"; readonly reason: string; readonly message: string };

/** The `kind` of a {@link DriverFailure}. */
export type DriverFailureKind = DriverFailure["kind"];

const REASON_PATTERN = /^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$/;

function checkReason(reason: string): string {
  if (!REASON_PATTERN.test(reason)) {
    throw new TypeError(
      `DriverError: reason "${reason}" is not a valid condition reason; use a CamelCase word such as "GroupDeleting"`,
    );
  }
  return reason;
}

function checkDelay(name: string, ms: number): number {
  if (!Number.isFinite(ms) || ms < 0) {
    throw new RangeError(
      `DriverError: ${name} must be a finite number of milliseconds ≥ 0, got ${ms}`,
    );
  }
  return ms;
}

/**
 * An error a driver throws when it knows what a situation means better than the cloud's error does.
 *
 * @example
 * ```ts
 * async getGroup(ctx) {
 *   const group = await cloud.describeGroup(nameOf(ctx.pool));
 *   if (group && group.tags[POOL_TAG] !== ownerOf(ctx.pool)) {
 *     throw DriverError.terminal("GroupNotOwned", `group ${group.name} belongs to ${group.tags[POOL_TAG]}`);
 *   }
 *   …
 * }
 * ```
 */
export class DriverError extends Error {
  override readonly name = "DriverError";

  /**
   * @param failure - what the error means
   * @param options - `cause`: the underlying cloud error
   */
  constructor(
    readonly failure: DriverFailure,
    options?: { cause?: unknown },
  ) {
    super(`${failure.kind}: ${failure.reason}: ${failure.message}`, options);
    checkReason(failure.reason);
  }

  /** The cloud is busy; try again after `retryAfterMs`. */
  static waiting(
    reason: string,
    message: string,
    retryAfterMs: number,
    cause?: unknown,
  ): DriverError {
    return new DriverError(
      { kind: "waiting", reason, message, retryAfterMs: checkDelay("retryAfterMs", retryAfterMs) },
      { cause },
    );
  }

  /** A failure that may pass; retried with backoff (or after `retryAfterMs`, if given). */
  static transient(
    reason: string,
    message: string,
    retryAfterMs?: number,
    cause?: unknown,
  ): DriverError {
    return new DriverError(
      retryAfterMs === undefined
        ? { kind: "transient", reason, message }
        : {
            kind: "transient",
            reason,
            message,
            retryAfterMs: checkDelay("retryAfterMs", retryAfterMs),
          },
      { cause },
    );
  }

  /** The cloud throttles; retry no earlier than `retryAfterMs`. */
  static throttled(
    reason: string,
    message: string,
    retryAfterMs: number,
    cause?: unknown,
  ): DriverError {
    return new DriverError(
      {
        kind: "throttled",
        reason,
        message,
        retryAfterMs: checkDelay("retryAfterMs", retryAfterMs),
      },
      { cause },
    );
  }

  /** Retrying cannot help until the spec changes. */
  static terminal(reason: string, message: string, cause?: unknown): DriverError {
    return new DriverError({ kind: "terminal", reason, message }, { cause });
  }

  /** The resource does not exist. */
  static notFound(reason: string, message: string, cause?: unknown): DriverError {
    return new DriverError({ kind: "notFound", reason, message }, { cause });
  }
}

// ── the driver ──────────────────────────────────────────────────────────────────────────────────

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
 *
 */
export interface PoolDriver<Spec = unknown, Settings = unknown> {
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
  templateInputs(ctx: PoolContext<Spec>): unknown;

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
  groupSettings(ctx: PoolContext<Spec>): Settings;

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
  getTemplate(ctx: PoolContext<Spec>): Promise<readonly TemplateVersion[]>;

  /**
   * Creates the template (tagged with the pool's identity) if it does not exist, else adds a version.
   * Build it from {@link PoolContext.spec} and `input.userData`, store `input.stamp` with the version,
   * and return the new version.
   */
  createTemplateVersion(
    ctx: PoolContext<Spec>,
    input: NewTemplateVersion,
  ): Promise<TemplateVersion>;

  /**
   * Deletes the listed versions (pruning: the kit only lists versions that are not the newest and that
   * no live instance and no group uses), or, without `versions`, the whole template (teardown, after
   * the group is gone). Only ever the pool's own template.
   */
  deleteTemplate(ctx: PoolContext<Spec>, versions?: readonly string[]): Promise<void>;

  /**
   * The pool's group with its instances, or `undefined` when it does not exist (or is completely gone
   * after a delete). Throw `DriverError.terminal(…)` if a group by that name belongs to another pool.
   */
  getGroup(ctx: PoolContext<Spec>): Promise<PoolGroup<Settings> | undefined>;

  /**
   * Creates the group, tagged with the pool's identity. Return as soon as the cloud accepted it.
   * If it already exists and is this pool's, succeed.
   */
  createGroup(ctx: PoolContext<Spec>, intent: GroupIntent<Settings>): Promise<void>;

  /** Applies the fields present in `update` to the group, in one cloud call where possible. */
  updateGroup(ctx: PoolContext<Spec>, update: GroupUpdate<Settings>): Promise<void>;

  /**
   * Starts deleting the group and its instances (force). Returns at once; the kit polls
   * {@link PoolDriver.getGroup} until it is `undefined`. Deleting a group that is already being
   * deleted succeeds; a group that is gone may throw NotFound.
   */
  deleteGroup(ctx: PoolContext<Spec>): Promise<void>;

  /**
   * Terminates one instance of the group; see {@link DeleteMode} for `shrink` vs `replace`. An
   * instance that is already terminating or gone is not an error.
   */
  deleteInstance(ctx: PoolContext<Spec>, instance: PoolInstance, mode: DeleteMode): Promise<void>;

  /** The cloud's native rolling replacement, if it has one and the provider wants it. */
  readonly nativeRollout?: NativeRollout<Spec>;

  /**
   * Says what a cloud error means. Return `undefined` for errors you don't recognise (they count as
   * `transient`). {@link DriverError}s never reach this function.
   */
  classifyError?(error: unknown): DriverFailure | undefined;
}

/**
 * What `error`, thrown by one of `driver`'s methods, means: a {@link DriverError}'s own failure, else
 * the driver's {@link PoolDriver.classifyError}, else `transient` (so an unknown error backs off
 * instead of being mistaken for success or a permanent failure): reason `DriverBug` for a
 * JavaScript programming error (`TypeError`, `ReferenceError`, `RangeError`, `SyntaxError`), else
 * `CloudError`. A reason from `classifyError` that is not a CamelCase word becomes
 * `InvalidFailureReason`, with the bad reason in the message.
 *
 * @example
 * ```ts
 * try {
 *   await driver.deleteGroup(ctx);
 * } catch (error) {
 *   const failure = classifyDriverError(driver, error);
 *   if (failure.kind !== "notFound") throw error;  // NotFound: already gone, done
 * }
 * ```
 */
export function classifyDriverError<Spec, Settings>(
  driver: Pick<PoolDriver<Spec, Settings>, "classifyError">,
  error: unknown,
): DriverFailure {
  if (error instanceof DriverError) return error.failure;
  let classified: DriverFailure | undefined;
  try {
    classified = driver.classifyError?.(error);
  } catch (classifyFailure) {
    return {
      kind: "transient",
      reason: "ClassifyErrorFailed",
      message: `classifyError threw (${describe(classifyFailure)}) while classifying: ${describe(error)}`,
    };
  }
  if (classified) {
    if (REASON_PATTERN.test(classified.reason)) return classified;
    return {
      ...classified,
      reason: "InvalidFailureReason",
      message: `classifyError returned the reason ${JSON.stringify(classified.reason.slice(0, 64))}, which is not a CamelCase word: ${classified.message}`,
    };
  }
  if (isProgrammingError(error)) {
    return {
      kind: "transient",
      reason: "DriverBug",
      message: `the driver threw ${error.name}: ${error.message} (a bug in the driver, not a cloud error)`,
    };
  }
  return { kind: "transient", reason: "CloudError", message: describe(error) };
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * A JavaScript programming error (reading a property of `undefined`, calling a non-function, a bad
 * argument), as opposed to a cloud error. Node's `fetch` reports network failures as a `TypeError`
 * with a `cause`: those are cloud errors.
 */
function isProgrammingError(error: unknown): error is Error {
  if (
    !(error instanceof TypeError) &&
    !(error instanceof ReferenceError) &&
    !(error instanceof RangeError) &&
    !(error instanceof SyntaxError)
  ) {
    return false;
  }
  return !(error instanceof TypeError && error.cause !== undefined);
}

// ── stamp helpers ───────────────────────────────────────────────────────────────────────────────

/** Tag keys {@link templateStampToTags} uses, after the prefix. */
export const TEMPLATE_STAMP_TAG_KEYS = {
  specHash: "spec-hash",
  bootstrapHash: "bootstrap-hash",
  bootstrapRef: "bootstrap-ref",
} as const satisfies Record<keyof TemplateStamp, string>;

/**
 * The tags to store a {@link TemplateStamp} under. The default prefix `capi-ts.io/` suits AWS and
 * Azure tags; for GCE labels (no `/` or `.`) pass e.g. `capi-ts-`.
 *
 * @example
 * ```ts
 * templateStampToTags(stamp)
 * // { "capi-ts.io/spec-hash": "…", "capi-ts.io/bootstrap-hash": "…", "capi-ts.io/bootstrap-ref": "…" }
 * ```
 */
export function templateStampToTags(
  stamp: TemplateStamp,
  prefix = "capi-ts.io/",
): Record<string, string> {
  return {
    [`${prefix}${TEMPLATE_STAMP_TAG_KEYS.specHash}`]: stamp.specHash,
    [`${prefix}${TEMPLATE_STAMP_TAG_KEYS.bootstrapHash}`]: stamp.bootstrapHash,
    [`${prefix}${TEMPLATE_STAMP_TAG_KEYS.bootstrapRef}`]: stamp.bootstrapRef,
  };
}

/**
 * Reads a {@link TemplateStamp} back from tags written by {@link templateStampToTags}; `undefined`
 * when any part is missing (a version the kit did not create).
 *
 * @example
 * ```ts
 * const stamp = templateStampFromTags(version.tags);
 * ```
 */
export function templateStampFromTags(
  tags: Readonly<Record<string, string>> | undefined,
  prefix = "capi-ts.io/",
): TemplateStamp | undefined {
  const specHash = tags?.[`${prefix}${TEMPLATE_STAMP_TAG_KEYS.specHash}`];
  const bootstrapHash = tags?.[`${prefix}${TEMPLATE_STAMP_TAG_KEYS.bootstrapHash}`];
  const bootstrapRef = tags?.[`${prefix}${TEMPLATE_STAMP_TAG_KEYS.bootstrapRef}`];
  if (specHash === undefined || bootstrapHash === undefined || bootstrapRef === undefined) {
    return undefined;
  }
  return { specHash, bootstrapHash, bootstrapRef };
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
export type GroupModelPoolDriver<Spec = unknown, Settings = unknown> = Omit<
  PoolDriver<Spec, Settings>,
  "getTemplate" | "createTemplateVersion" | "deleteTemplate" | "model"
> & {
  /** The model lives in the group. */
  readonly model: "group";
};

/**
 * Either driver shape the kit runs: a template-shaped {@link PoolDriver} or a
 * {@link GroupModelPoolDriver}.
 */
export type AnyPoolDriver<Spec = unknown, Settings = unknown> =
  | PoolDriver<Spec, Settings>
  | GroupModelPoolDriver<Spec, Settings>;
