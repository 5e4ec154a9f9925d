/**
 * The data a {@link PoolDriver} and the kit exchange: the context of a call, what the driver observes
 * (group, instances, template versions and their stamps), what the kit asks of it (new template
 * versions, group intents and updates, delete modes), the cloud's native rollout, and what one
 * instance offers (scale from zero).
 *
 * @module
 */
export type {
  CapacityResources,
  NodeArchitecture,
  NodeOperatingSystem,
  PoolCapacity,
  PoolNodeInfo,
} from "../contract/capacity.js";
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
 * What the controller resolves for a pool besides its spec, as a driver's type declares it: the
 * credentials its `credentials` hook returns and the kind of the Cluster's infrastructure object
 * (`MachinePoolControllerOptions.infrastructureCluster`). One type parameter for both, so a driver
 * names it once (`PoolDriver<Spec, Settings, MyEnv>`) and every method's `ctx` is typed by it.
 *
 * @example
 * ```ts
 * interface AcmeEnv {
 *   credentials: { client: AcmeClient; region: string };
 *   infrastructureCluster: AcmeCluster;
 * }
 * const driver: PoolDriver<AcmeSpec, AcmeSettings, AcmeEnv> = {
 *   getGroup: (ctx) => ctx.credentials.client.describeGroup(ctx.pool.name),
 *   …
 * };
 * ```
 */
export interface PoolEnvironment {
  /** What the `credentials` hook returns (`unknown` without one: the kit then passes `undefined`). */
  readonly credentials?: unknown;
  /** The Cluster's infrastructure object (e.g. `AWSCluster`), as the provider's kind types it. */
  readonly infrastructureCluster?: InfrastructureClusterObject;
}

/** A Cluster's infrastructure object (`Cluster.spec.infrastructureRef`) as the kit reads it. */
export interface InfrastructureClusterObject {
  /** `group/version`. */
  readonly apiVersion?: string;
  /** Its kind. */
  readonly kind?: string;
  /** Its metadata. */
  readonly metadata?: {
    readonly name?: string;
    readonly namespace?: string;
    readonly uid?: string;
    readonly labels?: Readonly<Record<string, string>>;
    readonly annotations?: Readonly<Record<string, string>>;
  };
  /** Its spec. */
  readonly spec?: unknown;
  /** Its status. */
  readonly status?: unknown;
}

/**
 * Everything a driver method may read. It is built by the kit for each reconcile; the driver keeps no
 * state between calls.
 *
 * @typeParam Spec - the provider's InfraMachinePool `spec` type
 */
export interface PoolCallContext<Spec> {
  /** The pool this call is for. */
  readonly pool: PoolIdentity;
  /** The InfraMachinePool's spec (validated against its schema). */
  readonly spec: Spec;
  /** Kubernetes version of the instances (`MachinePool.spec.template.spec.version`), if set. */
  readonly version: string | undefined;
  /** Failure domains the pool should spread over (`MachinePool.spec.failureDomains`), maybe empty. */
  readonly failureDomains: readonly string[];
  /**
   * The replicas the pool should have (`MachinePool.spec.replicas`, 1 when unset, as core defaults
   * it), or `undefined` when an external autoscaler manages them (the
   * `cluster.x-k8s.io/replicas-managed-by` annotation): e.g. for a `maxSize` setting that defaults to
   * the desired size. The kit sizes the group itself; this is for settings that depend on it.
   */
  readonly replicas: number | undefined;
  /** Aborted when the reconcile times out or the controller stops; pass it to the cloud SDK. */
  readonly signal: AbortSignal;
}

/**
 * What a driver's {@link PoolEnvironment} adds to its context. `credentials` is required when the
 * environment declares a type for it, optional otherwise (so a context built by hand in a test needs
 * none).
 */
export type PoolAccess<Env extends PoolEnvironment> = (unknown extends CredentialsOf<Env>
  ? {
      /** What the controller's `credentials` hook resolved; `undefined` without one. */
      readonly credentials?: unknown;
    }
  : {
      /**
       * The pool's cloud credentials as the controller's `credentials` hook resolved them for this
       * pool (cached until a Secret or object it read changes). Never log them: the Secret values
       * the hook read are redacted from logs, Events and conditions.
       */
      readonly credentials: CredentialsOf<Env>;
    }) & {
  /**
   * The Cluster's infrastructure object when the controller was told its kind
   * (`infrastructureCluster` option) and the Cluster's `spec.infrastructureRef` names one of that
   * kind; else `undefined`. Read once per reconcile, from the manager's cache.
   */
  readonly infrastructureCluster?: InfrastructureClusterOf<Env> | undefined;
};

/** The credentials an environment declares (`unknown` when it declares none). */
export type CredentialsOf<Env extends PoolEnvironment> = "credentials" extends keyof Env
  ? Env["credentials"]
  : unknown;

/** The infrastructure cluster kind an environment declares ({@link InfrastructureClusterObject} when none). */
export type InfrastructureClusterOf<Env extends PoolEnvironment> =
  "infrastructureCluster" extends keyof Env
    ? NonNullable<Env["infrastructureCluster"]>
    : InfrastructureClusterObject;

/**
 * Everything a driver method may read: the call's context ({@link PoolCallContext}) and what the
 * driver's environment adds ({@link PoolAccess}: credentials, the Cluster's infrastructure object).
 *
 * @typeParam Spec - the provider's InfraMachinePool `spec` type
 * @typeParam Env - what the controller resolves besides the spec ({@link PoolEnvironment})
 */
export type PoolContext<
  Spec,
  Env extends PoolEnvironment = PoolEnvironment,
> = PoolCallContext<Spec> & PoolAccess<Env>;

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
  /**
   * Launch time, epoch milliseconds of wall-clock time, as the cloud reports it (for the
   * Oldest/Newest delete policies and `strategy.rolloutAfter`). A cloud that does not report one:
   * 0, and `rolloutAfter` never replaces the instance (its replacement would not report one either).
   */
  readonly createdAt: number;
  /** Zone / failure domain, if the cloud has one. */
  readonly zone?: string;
  /** `false` when the cloud's health check fails (such instances are replaced first). */
  readonly healthy?: boolean;
  /**
   * `true` for an instance on capacity the cloud may reclaim at any time (AWS spot, GCE spot or
   * preemptible, Azure spot priority). With MachinePool Machines its InfraMachine says so
   * (`status.interruptible`) and core labels its Node `cluster.x-k8s.io/interruptible`, which
   * workloads and the node-termination handlers select on.
   */
  readonly interruptible?: boolean;
  /**
   * The instance's addresses, if the cloud reports them. With MachinePool Machines they are copied
   * to its InfraMachine, and core copies them to its Machine.
   */
  readonly addresses?: readonly {
    readonly type: "Hostname" | "ExternalIP" | "InternalIP" | "ExternalDNS" | "InternalDNS";
    readonly address: string;
  }[];
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
  /**
   * Lower bound of the desired size, if the cloud has one (the kit refuses values outside it). A
   * driver with {@link PoolDriver.groupBounds} must report it as the cloud has it: the kit compares
   * it with the bounds it wants and writes them when they differ.
   */
  readonly minReplicas?: number;
  /** Upper bound of the desired size, if the cloud has one (see {@link PoolGroup.minReplicas}). */
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
  /**
   * `false` for a version the cloud refuses to delete while the template exists (an AWS launch
   * template's default version: `DeleteLaunchTemplateVersions` answers `launchTemplateVersionIsDefault`):
   * the kit never prunes it, instead of retrying a refused delete on every reconcile. It goes with
   * the template when the pool is deleted. Default `true`.
   */
  readonly deletable?: boolean;
}

// ── requests ────────────────────────────────────────────────────────────────────────────────────

/** Input of {@link PoolDriver.createTemplateVersion}. */
export interface NewTemplateVersion {
  /**
   * The bootstrap data (Secret key `value`), to put into the instance's userData / custom data; with a
   * {@link UserDataOptions.store}, the small payload that makes the instance fetch it instead.
   */
  readonly userData: string;
  /**
   * What to send, base64-encoded, for clouds that take base64 user data (AWS `UserData`, Azure
   * `customData`): `userData`'s bytes, gzip-compressed when {@link UserDataOptions.compress} asks for it.
   * Within {@link UserDataOptions.limitBytes} (decoded) when the driver declares a limit.
   */
  readonly userDataBase64: string;
  /** Its format (Secret key `format`; `cloud-config` when absent). */
  readonly format: "cloud-config" | "ignition";
  /** Store this with the version (see {@link TemplateStamp}). */
  readonly stamp: TemplateStamp;
}

/**
 * Bounds of a group's desired size, both inclusive (AWS Auto Scaling `MinSize`/`MaxSize`, an Azure
 * scale set's autoscale limits). A driver that returns them from {@link PoolDriver.groupBounds} gets
 * the bounds the group must have in {@link GroupIntent.bounds} and {@link GroupUpdate.bounds}.
 */
export interface GroupBounds {
  /** Smallest desired size the cloud accepts. */
  readonly min: number;
  /** Largest desired size the cloud accepts. */
  readonly max: number;
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
   * Only for drivers with {@link PoolDriver.groupBounds}: the bounds to create the group with — the
   * driver's own, widened to the cluster-autoscaler's and to `replicas`. They always contain
   * `replicas`; create the group with both in the one call.
   */
  readonly bounds?: GroupBounds;
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
  /**
   * Only for drivers with {@link PoolDriver.groupBounds}: the group's new bounds. When `replicas`
   * comes too, apply both in the same cloud call if the cloud takes both (AWS
   * `UpdateAutoScalingGroup` with `MinSize`, `MaxSize` and `DesiredCapacity`), else write the bounds
   * first: the new desired size must be checked against the new bounds, never the old ones. The kit
   * sends bounds that contain the group's current desired size, so they are valid on their own.
   */
  readonly bounds?: GroupBounds;
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

/** What a rollout goes to and its limits, from the pool's strategy. */
export interface RolloutOptions {
  /**
   * The template version every instance should end on (the group's, which the kit has just set): pass
   * it to the cloud where it takes one (AWS `StartInstanceRefresh`'s
   * `DesiredConfiguration.LaunchTemplate.Version`) and report it back as
   * {@link RolloutStatus.startedWithVersion}.
   */
  readonly templateVersion: string;
  /** Desired size during the rollout. */
  readonly replicas: number;
  /** Instances that may exist above `replicas` during the rollout. */
  readonly maxSurge: number;
  /** Instances that may be unavailable during the rollout. */
  readonly maxUnavailable: number;
  /**
   * `maxUnavailable` as the share of `replicas` that must stay healthy, in percent rounded up so that
   * no more than `maxUnavailable` instances are ever down (AWS `MinHealthyPercentage`, 0–100).
   */
  readonly minHealthyPercent: number;
  /**
   * `maxSurge` as the share of `replicas` the group may grow to, in percent rounded down so that no
   * more than `maxSurge` extra instances exist (AWS `MaxHealthyPercentage`, 100–200).
   */
  readonly maxHealthyPercent: number;
}

/** A native rollout as the cloud reports it. */
export interface RolloutStatus {
  /** The cloud's ID of the rollout. */
  readonly id: string;
  /** Where it is. */
  readonly state: "running" | "cancelling" | "succeeded" | "failed" | "cancelled";
  /**
   * The template version it goes to ({@link RolloutOptions.templateVersion}; AWS reports it as the
   * refresh's `DesiredConfiguration.LaunchTemplate.Version`). The kit cancels a running rollout whose
   * version's stamp no longer matches what the pool should run (a stale rollout), then starts a new one.
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
 * @typeParam Env - what the controller resolves besides the spec ({@link PoolEnvironment})
 */
export interface NativeRollout<Spec, Env extends PoolEnvironment = PoolEnvironment> {
  /** Starts replacing every instance not on the group's current template version. */
  start(ctx: PoolContext<Spec, Env>, options: RolloutOptions): Promise<void>;
  /** The running rollout, else the most recent one, else `undefined`. */
  get(ctx: PoolContext<Spec, Env>): Promise<RolloutStatus | undefined>;
  /** Cancels the running rollout (may complete asynchronously; "nothing to cancel" is not an error). */
  cancel(ctx: PoolContext<Spec, Env>): Promise<void>;
}

// ── bootstrap data ──────────────────────────────────────────────────────────────────────────────

/**
 * Where bootstrap data too large for the cloud's user data goes: an object store the instances can
 * read (S3, a storage account, a bucket), one object per distinct payload.
 *
 * @typeParam Spec - the provider's InfraMachinePool `spec` type
 * @typeParam Env - what the controller resolves besides the spec ({@link PoolEnvironment})
 */
export interface BootstrapDataStore<Spec, Env extends PoolEnvironment = PoolEnvironment> {
  /**
   * Stores `data` under `key` (a hash of the payload: the same payload is put once) and returns the
   * small user data that makes an instance fetch it (an Ignition config whose `ignition.config.replace`
   * names the object, a cloud-init `#include` of a signed URL, …). Idempotent.
   */
  put(
    ctx: PoolContext<Spec, Env>,
    input: {
      readonly key: string;
      readonly data: string;
      readonly format: "cloud-config" | "ignition";
    },
  ): Promise<string>;
  /**
   * Deletes the stored payloads of this pool whose key is not in `keep`: after template versions were
   * pruned (`keep` holds the keys their stamps still name) and when the pool is deleted (`keep` empty).
   */
  prune(ctx: PoolContext<Spec, Env>, keep: ReadonlySet<string>): Promise<void>;
}

/**
 * How the bootstrap data reaches an instance's user data ({@link PoolDriver.userData}). User data is
 * small on every cloud: AWS 16 KiB (16,384 bytes before base64), Azure 64 KiB of base64 custom data
 * (49,152 bytes), GCE 256 KiB per metadata value (262,144 bytes). Kubeadm's cloud-config is a few KiB;
 * Ignition with files can exceed AWS's.
 *
 * @typeParam Spec - the provider's InfraMachinePool `spec` type
 * @typeParam Env - what the controller resolves besides the spec ({@link PoolEnvironment})
 */
export interface UserDataOptions<Spec, Env extends PoolEnvironment = PoolEnvironment> {
  /**
   * The cloud's limit in bytes of what is sent ({@link NewTemplateVersion.userDataBase64} decoded).
   * Over it, the kit creates nothing and sets `Ready=False` with reason `BootstrapDataTooLarge`,
   * naming the size, the limit and the two ways out.
   */
  readonly limitBytes?: number;
  /**
   * `"gzip"`: compress cloud-config payloads in `userDataBase64` (cloud-init reads gzip user data).
   * Ignition payloads are sent as they are (Ignition does not read compressed user data).
   */
  readonly compress?: "gzip";
  /** Keep the payload in a store and send only what fetches it. */
  readonly store?: BootstrapDataStore<Spec, Env>;
}
