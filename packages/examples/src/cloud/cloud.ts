/**
 * A fake scaling-group cloud: the union of what AWS Auto Scaling groups, Azure VM scale sets and GCE
 * managed instance groups do that Cluster API providers rely on — and trip over. It runs on a
 * {@link Clock}, draws every random choice from a seed, and keeps a log of every API call.
 *
 * Three surfaces:
 * - {@link FakeScalingCloud.client}: the cloud API a provider calls (logged, faults apply, responses
 *   validated with zod as a real SDK would).
 * - {@link FakeScalingCloud.actors}: things that happen behind the provider's back — an autoscaler, a
 *   user deleting instances or the group, spot interruptions, failing health checks.
 * - {@link FakeScalingCloud.faults} and {@link FakeScalingCloud.inspect}: test controls (throttling,
 *   5xx, capacity shortages) and an unlogged view of the true state for invariant checks.
 *
 * @module
 */

import { type Clock, ManualClock } from "@capi-ts/sdk/runtime";
import { z } from "zod";
import { CloudError } from "./errors.js";
import { SeededRandom } from "./random.js";
import {
  type Activity,
  ActivitySchema,
  type CreateGroupInput,
  CreateGroupInputSchema,
  type CreateLaunchTemplateInput,
  CreateLaunchTemplateInputSchema,
  type Group,
  type GroupInstance,
  GroupSchema,
  type HealthStatus,
  type Instance,
  type InstanceRefresh,
  InstanceRefreshSchema,
  InstanceSchema,
  type InstanceState,
  type LaunchTemplate,
  type LaunchTemplateData,
  LaunchTemplateDataSchema,
  LaunchTemplateSchema,
  type LaunchTemplateVersion,
  LaunchTemplateVersionSchema,
  type RefreshPreferences,
  RefreshPreferencesSchema,
  type RefreshStatus,
  type TagFilter,
  TagFilterSchema,
  type Tags,
  type TemplateRef,
  type TerminationPolicy,
  type UpdateGroupInput,
  UpdateGroupInputSchema,
} from "./schemas.js";

// ── public types ────────────────────────────────────────────────────────────────────────────────

/**
 * The cloud API a provider talks to. Every method is asynchronous, logged in
 * {@link FakeScalingCloud.calls}, subject to injected faults and rate limits, and rejects with a
 * {@link CloudError}.
 */
export interface ScalingCloudClient {
  /** Creates a template and its version 1. `AlreadyExists`, `UserDataTooLarge`, `ValidationError`. */
  createLaunchTemplate(input: CreateLaunchTemplateInput): Promise<LaunchTemplate>;
  /** Adds an immutable version. `NotFound`, `VersionLimitExceeded`, `UserDataTooLarge`. */
  createLaunchTemplateVersion(
    template: string,
    data: LaunchTemplateData,
  ): Promise<LaunchTemplateVersion>;
  /** A template by ID or name, or `undefined`. Never returns userData. */
  describeLaunchTemplate(template: string): Promise<LaunchTemplate | undefined>;
  /** Templates carrying all the filter's tags. */
  listLaunchTemplates(filter?: TagFilter): Promise<LaunchTemplate[]>;
  /**
   * Deletes versions (unknown ones are ignored). `NotFound` (template), `ValidationError` (the latest
   * version), `ResourceInUse` (referenced by a group or a live instance).
   */
  deleteLaunchTemplateVersions(template: string, versions: number[]): Promise<void>;
  /** Deletes a template and all its versions. `NotFound`, `ResourceInUse` (a group uses it). */
  deleteLaunchTemplate(template: string): Promise<void>;
  /** Creates a group; instances launch asynchronously. `AlreadyExists`, `ValidationError`. */
  createGroup(input: CreateGroupInput): Promise<Group>;
  /** A group by name, or `undefined`. Instance order changes between calls. */
  describeGroup(name: string): Promise<Group | undefined>;
  /** Groups carrying all the filter's tags. */
  listGroups(filter?: TagFilter): Promise<Group[]>;
  /** Changes a group. `NotFound`, `ValidationError`, `ScalingActivityInProgress` (deleting). */
  updateGroup(name: string, input: UpdateGroupInput): Promise<Group>;
  /** Sets the desired capacity. `NotFound`, `ValidationError`, `ScalingActivityInProgress`. */
  setDesiredCapacity(name: string, desiredCapacity: number): Promise<void>;
  /**
   * Terminates one member. With `decrementDesiredCapacity: false` the group launches a replacement
   * (with a new ID). Terminating an instance that is already terminating is a no-op (desired capacity
   * is not decremented twice). `NotFound`, `ValidationError` (would go below minSize).
   */
  terminateInstanceInGroup(
    instanceId: string,
    options: { decrementDesiredCapacity: boolean },
  ): Promise<Activity>;
  /** Protects (or unprotects) members from scale-in. `NotFound`, `ValidationError`. */
  setInstanceProtection(name: string, instanceIds: string[], protect: boolean): Promise<void>;
  /**
   * Deletes a group asynchronously (status `deleting` until every instance terminated). Without
   * `force`, fails with `ResourceInUse` while it has live instances. Deleting a group that is already
   * deleting succeeds. `NotFound` once it is gone.
   */
  deleteGroup(name: string, options?: { force?: boolean }): Promise<void>;
  /** Starts a rolling replacement. `NotFound`, `InstanceRefreshInProgress`, `ScalingActivityInProgress`. */
  startInstanceRefresh(name: string, preferences?: RefreshPreferences): Promise<InstanceRefresh>;
  /** Refreshes of a group, newest first. `NotFound`. */
  describeInstanceRefreshes(name: string): Promise<InstanceRefresh[]>;
  /** Cancels the running refresh (asynchronously: `Cancelling`). `ActiveInstanceRefreshNotFound`. */
  cancelInstanceRefresh(name: string): Promise<InstanceRefresh>;
  /** Instances by ID; unknown IDs are left out (terminated ones linger for a while). */
  describeInstances(instanceIds: string[]): Promise<Instance[]>;
}

/** Name of a {@link ScalingCloudClient} method. */
export type CloudOperation = keyof ScalingCloudClient;

/** Operations that change state (everything else only reads). */
export const MUTATING_OPERATIONS: ReadonlySet<CloudOperation> = new Set<CloudOperation>([
  "createLaunchTemplate",
  "createLaunchTemplateVersion",
  "deleteLaunchTemplateVersions",
  "deleteLaunchTemplate",
  "createGroup",
  "updateGroup",
  "setDesiredCapacity",
  "terminateInstanceInGroup",
  "setInstanceProtection",
  "deleteGroup",
  "startInstanceRefresh",
  "cancelInstanceRefresh",
]);

/** One entry of the operation log. */
export interface CloudCall {
  /** 1, 2, 3, … in call order. */
  seq: number;
  /** Cloud time of the call, epoch ms. */
  at: number;
  /** Which method. */
  operation: CloudOperation;
  /** Whether the operation changes state. */
  mutating: boolean;
  /** The arguments, deep-copied (userData included). */
  args: unknown[];
  /** `"ok"`, or the error code it failed with. */
  outcome: "ok" | CloudError["code"];
}

/** Filter of {@link FakeScalingCloud.calls}. */
export interface CallFilter {
  /** Only these operations. */
  operation?: CloudOperation | CloudOperation[];
  /** Only mutating (`true`) or only read (`false`) calls. */
  mutating?: boolean;
  /** Only calls with `seq` greater than this. */
  afterSeq?: number;
  /** Only calls that succeeded (`"ok"`) or failed (`"error"`). */
  outcome?: "ok" | "error";
}

/** Delays of the simulation, all in cloud milliseconds. */
export interface CloudTiming {
  /** From a change (desired capacity, termination, health) to the group acting on it. Default 1000. */
  activityDelayMs: number;
  /** From `creating` to the first launches. Default 2000. */
  groupCreateMs: number;
  /** `pending` → `running`. Default 5000. */
  bootMs: number;
  /** From `running` to the kubelet registering its Node (if it can join). Default 3000. */
  joinMs: number;
  /**
   * How soon the kubelet retries a join step that failed with an error (`canJoin` or `onJoin` threw),
   * as kubeadm retries discovery and the kubelet retries registration; a failed registration waits
   * twice as long each time, up to `registerRetryMaxMs`. Default 2000.
   */
  joinRetryMs: number;
  /**
   * How many times the kubelet asks `canJoin` before it gives up (the instance then runs without a
   * Node), as kubeadm's discovery times out. Default 5. A failed registration (`onJoin`) is retried
   * for as long as the instance runs, as the kubelet retries registering its Node.
   */
  joinAttempts: number;
  /** The longest wait between two registration attempts (`onJoin`). Default 16000. */
  registerRetryMaxMs: number;
  /** `terminating` → `terminated` (and `stopping` → `stopped`). Default 3000. */
  stopMs: number;
  /** How long a terminated instance stays visible in lists. Default 60000. */
  lingerMs: number;
  /** Eventual consistency: a new instance is invisible to describe calls this long. Default 0. */
  listLagMs: number;
  /** How long an unhealthy instance is kept before the group replaces it. Default 2000. */
  healthCheckGraceMs: number;
  /** After the last instance terminated, until a deleted group disappears. Default 2000. */
  groupDeleteMs: number;
  /** Default warm-up of an instance refresh. Default 2000. */
  refreshWarmupMs: number;
  /** How often an instance refresh re-evaluates. Default 1000. */
  refreshPollMs: number;
  /** `Cancelling` → `Cancelled`. Default 2000. */
  refreshCancelMs: number;
  /** How soon a group retries launches that failed for lack of capacity. Default 10000. */
  capacityRetryMs: number;
}

const DEFAULT_TIMING: CloudTiming = {
  activityDelayMs: 1000,
  groupCreateMs: 2000,
  bootMs: 5000,
  joinMs: 3000,
  joinRetryMs: 2000,
  joinAttempts: 5,
  registerRetryMaxMs: 16_000,
  stopMs: 3000,
  lingerMs: 60_000,
  listLagMs: 0,
  healthCheckGraceMs: 2000,
  groupDeleteMs: 2000,
  refreshWarmupMs: 2000,
  refreshPollMs: 1000,
  refreshCancelMs: 2000,
  capacityRetryMs: 10_000,
};

/** What the kubelet inside an instance sees at boot. */
export interface InstanceBoot {
  /** Instance ID. */
  instanceId: string;
  /** The providerID the kubelet / cloud-controller-manager registers its Node with. */
  providerID: string;
  /** Zone of the instance. */
  zone: string;
  /** Group the instance belongs to. */
  groupName: string | undefined;
  /** Template version it launched from. */
  templateVersion: number;
  /** The userData of that version — the bootstrap data, token included. */
  userData: string;
  /** The image of that version (what the kubelet inside runs: its version, for one). */
  image: string;
  /** Cloud time of the event, epoch ms. */
  at: number;
}

/**
 * Bootstrap realism: the kubelet inside each instance. The cloud calls `canJoin` when an instance
 * finishes booting (with the userData it booted with, at that instant — so an expired or rotated token
 * means it never joins), then `onJoin` `joinMs` after a yes, `onLeave` when a joined instance starts
 * terminating or stopping, and `onTerminated` once it is gone (where a cloud-controller-manager
 * deletes the Node). Hooks may be async; {@link FakeScalingCloud.flush} awaits them, and their errors
 * are collected in {@link FakeScalingCloud.hookErrors}. An error in `canJoin` (an API server that
 * answered 503, say) is not a "no": the kubelet tries again `joinRetryMs` later, up to `joinAttempts`
 * times, and only then gives up, as kubeadm's discovery does. An error in `onJoin` is retried with a
 * doubling backoff (from `joinRetryMs` up to `registerRetryMaxMs`) until it succeeds or the instance
 * stops running, as the kubelet keeps registering its Node: one failed Node create must not leave an
 * instance without a Node for good.
 */
export interface KubeletHooks {
  /** Whether the kubelet can join with this userData now (default: always). */
  canJoin?(boot: InstanceBoot): boolean | Promise<boolean>;
  /** The kubelet joined: register a Node with `boot.providerID`. */
  onJoin?(boot: InstanceBoot): void | Promise<void>;
  /** A joined instance is going away (terminating or stopping): its Node stops reporting Ready. */
  onLeave?(boot: InstanceBoot): void | Promise<void>;
  /** A joined instance is terminated: the cloud-controller-manager deletes its Node. */
  onTerminated?(boot: InstanceBoot): void | Promise<void>;
}

/**
 * How the cloud-controller-manager spells providerIDs: `canonical` is `fake:///<zone>/<id>`;
 * `uppercase-zone` reproduces a CCM quirk (the zone upper-cased) so normalisation can be tested.
 */
export type ProviderIdStyle = "canonical" | "uppercase-zone";

/** Options of {@link FakeScalingCloud}. */
export interface FakeCloudOptions {
  /** Seed of every random choice (IDs, list order, random faults). Default 1. */
  seed?: number;
  /** Time source. Default: a new {@link ManualClock}. */
  clock?: Clock;
  /** Region name (part of group IDs). Default `fake-region-1`. */
  region?: string;
  /** Zones of the region. Default `["zone-a", "zone-b", "zone-c"]`. */
  zones?: string[];
  /** Overrides of the default delays. */
  timing?: Partial<CloudTiming>;
  /** Shuffle instance and list order on every describe call (default true). */
  shuffleLists?: boolean;
  /** Maximum userData size in bytes (default 16384). */
  userDataLimitBytes?: number;
  /** Maximum live versions per launch template (default 20). */
  templateVersionLimit?: number;
  /** A token bucket over cloud time; calls beyond it fail with `Throttling`. Default: unlimited. */
  rateLimit?: { burst: number; refillPerSecond: number };
  /** Random faults on every call, drawn from the seed. Default: none. */
  randomFaults?: { throttleRate?: number; serverErrorRate?: number; retryAfterMs?: number };
  /** The kubelet in each instance. */
  kubelet?: KubeletHooks;
  /** See {@link ProviderIdStyle}. Default `canonical`. */
  providerIdStyle?: ProviderIdStyle;
}

/** An injected fault (see {@link FakeScalingCloud.faults}). */
export interface FaultSpec {
  /** Which operations fail (default: all). */
  operations?: CloudOperation[];
  /** `throttle` → 429 `Throttling`; `server-error` → 500 `InternalError`; `unavailable` → 503. */
  kind: "throttle" | "server-error" | "unavailable";
  /** How many calls fail before the fault removes itself (default: until removed). */
  times?: number;
  /** Chance each matching call fails (default 1). */
  probability?: number;
  /** Retry-after carried by 429/503 (default 1000). */
  retryAfterMs?: number;
}

/** A capacity shortage (see {@link FakeScalingCloud.faults}). */
export interface CapacityLimit {
  /** Zones affected (default: all). */
  zones?: string[];
  /** How many more launches succeed in those zones before launches fail. */
  launches: number;
  /** Lift the shortage after this long (default: until removed). */
  durationMs?: number;
}

/** Handle of an injected fault or capacity limit. */
export interface CloudFaultHandle {
  /** Removes it (idempotent). */
  remove(): void;
}

/** What {@link FakeScalingCloud.inspect} shows of an instance: the true state, unlogged. */
export interface InspectedInstance extends Instance {
  /** userData it booted with. */
  userData: string;
  /** Kubelet progress: `booting` until running; `rejected` if it could not join. */
  kubelet: "booting" | "joining" | "joined" | "rejected" | "left";
  /** The providerID its kubelet registers (CCM spelling). */
  providerID: string;
  /** When it reached `terminated`, if it did. */
  terminatedAt?: number;
}

/**
 * The providerID the fake cloud's kubelet/CCM registers for an instance.
 *
 * @example
 * ```ts
 * cloudProviderId("zone-a", "i-0abc") // "fake:///zone-a/i-0abc"
 * ```
 */
export function cloudProviderId(
  zone: string,
  instanceId: string,
  style: ProviderIdStyle = "canonical",
): string {
  return `fake:///${style === "uppercase-zone" ? zone.toUpperCase() : zone}/${instanceId}`;
}

// ── internal records ────────────────────────────────────────────────────────────────────────────

interface VersionRecord {
  version: number;
  createdAt: number;
  image: string;
  instanceType: string;
  userData: string;
  tags: Tags;
  marketType: "spot" | undefined;
}

interface TemplateRecord {
  id: string;
  name: string;
  createdAt: number;
  tags: Tags;
  latestVersion: number;
  versions: Map<number, VersionRecord>;
}

interface InstanceRecord {
  id: string;
  zone: string;
  state: InstanceState;
  health: HealthStatus;
  unhealthySince?: number;
  groupName: string | undefined;
  templateId: string;
  templateVersion: number;
  userData: string;
  image: string;
  spot: boolean;
  launchedAt: number;
  visibleAt: number;
  protectedFromScaleIn: boolean;
  tags: Tags;
  privateIp: string;
  kubelet: InspectedInstance["kubelet"];
  joined: boolean;
  terminatedAt?: number;
}

interface RefreshRecord {
  id: string;
  groupName: string;
  status: RefreshStatus;
  statusReason?: string;
  startedAt: number;
  endedAt?: number;
  startedWithVersion: number;
  minHealthyPercentage: number;
  warmupMs: number;
  skipMatching: boolean;
  initialIds: Set<string>;
  initialOutdated: number;
  percentComplete: number;
  timer?: unknown;
}

interface GroupRecord {
  id: string;
  name: string;
  minSize: number;
  maxSize: number;
  desired: number;
  template: TemplateRef;
  zones: string[];
  tags: Tags;
  terminationPolicy: TerminationPolicy;
  createdAt: number;
  readyAt: number;
  deleting: boolean;
  removalTimer?: unknown;
  launchFailure?: string;
  activities: Activity[];
  instanceIds: Set<string>;
  refreshes: RefreshRecord[];
  surge: number;
  activityTimer?: { at: number; handle: unknown };
}

interface ActiveFault {
  spec: FaultSpec;
  remaining: number;
}

interface ActiveLimit {
  zones: Set<string> | undefined;
  remaining: number;
}

const LIVE: ReadonlySet<InstanceState> = new Set(["pending", "running", "stopping", "stopped"]);
const MAX_ACTIVITIES = 50;

function clone<T>(value: T): T {
  return value === undefined ? value : (JSON.parse(JSON.stringify(value)) as T);
}

function hasTags(tags: Tags, filter: TagFilter | undefined): boolean {
  return Object.entries(filter?.tags ?? {}).every(
    ([key, value]) => key in tags && (value === "" || tags[key] === value),
  );
}

function formatIssues(error: z.ZodError): string {
  return error.issues
    .map((issue) => `${issue.path.length ? issue.path.join(".") : "(input)"}: ${issue.message}`)
    .join("; ");
}

// ── the cloud ───────────────────────────────────────────────────────────────────────────────────

/**
 * The fake scaling-group cloud. See the module documentation for the behaviours it simulates.
 *
 * @example
 * ```ts
 * const clock = new ManualClock();
 * const cloud = new FakeScalingCloud({ seed: 7, clock });
 * const lt = await cloud.client.createLaunchTemplate({
 *   name: "pool-a", data: { image: "img-1", instanceType: "small", userData: "#cloud-config\n" },
 * });
 * await cloud.client.createGroup({
 *   name: "pool-a", minSize: 0, maxSize: 10, desiredCapacity: 3,
 *   template: { id: lt.id, version: 1 }, zones: ["zone-a", "zone-b"],
 * });
 * clock.advance(60_000);
 * const group = await cloud.client.describeGroup("pool-a"); // 3 running instances, in random order
 * cloud.actors.setDesiredCapacity("pool-a", 5);              // an autoscaler, behind your back
 * cloud.calls({ mutating: true }).length;                    // 2: what the provider changed
 * ```
 */
export class FakeScalingCloud {
  /** The clock the simulation runs on. */
  readonly clock: Clock;
  /** Effective delays. */
  readonly timing: Readonly<CloudTiming>;
  /** Zones of the region. */
  readonly zones: readonly string[];
  /** Region name. */
  readonly region: string;
  /** The provider-facing API. */
  readonly client: ScalingCloudClient;

  readonly #random: SeededRandom;
  readonly #options: FakeCloudOptions;
  readonly #templates = new Map<string, TemplateRecord>();
  readonly #groups = new Map<string, GroupRecord>();
  readonly #instances = new Map<string, InstanceRecord>();
  readonly #log: CloudCall[] = [];
  readonly #faults: ActiveFault[] = [];
  readonly #limits: ActiveLimit[] = [];
  readonly #pendingHooks = new Set<Promise<void>>();
  readonly #hookErrors: unknown[] = [];
  #seq = 0;
  #ipCounter = 10;
  #bucket: { tokens: number; at: number } | undefined;
  /** The join delay an actor set (`actors.setJoinDelay`), over `timing.joinMs`. */
  #joinMs: number | undefined;

  /** @param options - see {@link FakeCloudOptions} */
  constructor(options: FakeCloudOptions = {}) {
    this.#options = options;
    this.clock = options.clock ?? new ManualClock();
    this.#random = new SeededRandom(options.seed ?? 1);
    this.region = options.region ?? "fake-region-1";
    this.zones = options.zones ?? ["zone-a", "zone-b", "zone-c"];
    if (this.zones.length === 0) {
      throw new Error("FakeScalingCloud: zones must list at least one zone");
    }
    for (const [key, value] of Object.entries(options.timing ?? {})) {
      if (!(key in DEFAULT_TIMING)) {
        throw new Error(
          `FakeScalingCloud: unknown timing "${key}"; known: ${Object.keys(DEFAULT_TIMING).join(", ")}`,
        );
      }
      if (typeof value !== "number" || !Number.isFinite(value) || value < 0) {
        throw new Error(`FakeScalingCloud: timing.${key} must be a number ≥ 0, got ${value}`);
      }
    }
    this.timing = { ...DEFAULT_TIMING, ...options.timing };
    if (options.rateLimit) {
      this.#bucket = { tokens: options.rateLimit.burst, at: this.clock.now() };
    }
    this.client = this.#makeClient();
  }

  // ── operation log ───────────────────────────────────────────────────────────────────────────

  /**
   * The operation log: every client call with its arguments and outcome, oldest first.
   *
   * @example
   * ```ts
   * const mark = cloud.lastCallSeq();
   * // … reconcile a paused pool …
   * expect(cloud.calls({ afterSeq: mark })).toEqual([]);
   * ```
   */
  calls(filter: CallFilter = {}): CloudCall[] {
    const operations =
      filter.operation === undefined
        ? undefined
        : new Set(Array.isArray(filter.operation) ? filter.operation : [filter.operation]);
    return this.#log
      .filter(
        (c) =>
          (operations === undefined || operations.has(c.operation)) &&
          (filter.mutating === undefined || c.mutating === filter.mutating) &&
          (filter.afterSeq === undefined || c.seq > filter.afterSeq) &&
          (filter.outcome === undefined || (filter.outcome === "ok") === (c.outcome === "ok")),
      )
      .map(clone);
  }

  /** `seq` of the latest call (0 before any). */
  lastCallSeq(): number {
    return this.#seq;
  }

  /** Empties the operation log (sequence numbers keep counting). */
  clearCalls(): void {
    this.#log.length = 0;
  }

  // ── kubelet hooks ───────────────────────────────────────────────────────────────────────────

  /** Awaits every kubelet hook started so far (hooks run detached from the clock). */
  async flush(): Promise<void> {
    while (this.#pendingHooks.size > 0) {
      await Promise.allSettled([...this.#pendingHooks]);
    }
  }

  /** Errors thrown by kubelet hooks, oldest first. */
  get hookErrors(): readonly unknown[] {
    return this.#hookErrors;
  }

  // ── out-of-band actors ──────────────────────────────────────────────────────────────────────

  /**
   * Things that happen behind the provider's back. They are not API calls (not in the log, no faults),
   * but they leave activities on the group, like the real thing.
   *
   * @example
   * ```ts
   * cloud.actors.setDesiredCapacity("pool-a", 7);   // cluster autoscaler / cloud autoscaling
   * cloud.actors.terminateInstance("i-0abc");         // a user in the console; the group replaces it
   * cloud.actors.interruptSpot("i-0def");             // capacity reclaimed; replaced with a new ID
   * cloud.actors.markUnhealthy("i-0123");             // failing health check → replaced after grace
   * cloud.actors.deleteGroup("pool-a");               // someone deletes the whole group
   * ```
   */
  readonly actors = {
    /** An autoscaler sets the desired capacity (validated like the API: throws `ValidationError`). */
    setDesiredCapacity: (
      groupName: string,
      desiredCapacity: number,
      actor = "autoscaler",
    ): void => {
      const group = this.#requireGroup(groupName);
      this.#setDesired(group, desiredCapacity, actor);
    },
    /** A user terminates an instance directly (not through the group): the group replaces it. */
    terminateInstance: (instanceId: string): void => {
      this.#terminate(this.#requireInstance(instanceId), "terminated by a user (out of band)");
    },
    /** The cloud reclaims a spot instance: terminated now, replaced with a new ID. */
    interruptSpot: (instanceId: string): void => {
      this.#terminate(this.#requireInstance(instanceId), "spot interruption");
    },
    /** A user stops an instance: it goes `stopping` → `stopped`, fails health checks, is replaced. */
    stopInstance: (instanceId: string): void => {
      const instance = this.#requireInstance(instanceId);
      if (instance.state !== "running" && instance.state !== "pending") return;
      instance.state = "stopping";
      this.#leave(instance);
      this.#markUnhealthy(instance);
      this.clock.setTimer(() => {
        if (instance.state === "stopping") instance.state = "stopped";
      }, this.timing.stopMs);
    },
    /** The health check starts failing; the group replaces it after `healthCheckGraceMs`. */
    markUnhealthy: (instanceId: string): void => {
      this.#markUnhealthy(this.#requireInstance(instanceId));
    },
    /** Someone force-deletes the group. */
    deleteGroup: (groupName: string): void => {
      this.#deleteGroup(this.#requireGroup(groupName), true);
    },
    /**
     * Kubelets of instances that boot from now on join `joinMs` (cloud ms) after the instance runs,
     * as a slow image or a busy control plane makes them; `undefined` restores the configured delay.
     */
    setJoinDelay: (joinMs: number | undefined): void => {
      if (joinMs !== undefined && (!Number.isFinite(joinMs) || joinMs < 0)) {
        throw new Error(`FakeScalingCloud: a join delay must be a number ≥ 0, got ${joinMs}`);
      }
      this.#joinMs = joinMs;
    },
  };

  // ── faults ──────────────────────────────────────────────────────────────────────────────────

  /**
   * Test controls: API faults and capacity shortages.
   *
   * @example
   * ```ts
   * cloud.faults.inject({ kind: "throttle", operations: ["describeGroup"], times: 3, retryAfterMs: 2000 });
   * const shortage = cloud.faults.limitCapacity({ launches: 1, durationMs: 30_000 });
   * ```
   */
  readonly faults = {
    /** Makes matching calls fail (see {@link FaultSpec}). */
    inject: (spec: FaultSpec): CloudFaultHandle => {
      if (spec.probability !== undefined && (spec.probability < 0 || spec.probability > 1)) {
        throw new RangeError(
          `faults.inject: probability must be in [0, 1], got ${spec.probability}`,
        );
      }
      const fault: ActiveFault = { spec, remaining: spec.times ?? Number.POSITIVE_INFINITY };
      this.#faults.push(fault);
      return { remove: () => this.#removeFrom(this.#faults, fault) };
    },
    /**
     * Lets only `launches` more instances start in `zones`; further launches fail (the group reports
     * `failed` with an error activity and retries every `capacityRetryMs`) until the limit is removed
     * or `durationMs` passes. While a limit without `durationMs` blocks a group, the group keeps
     * retrying (like a real cloud): drive the clock with `advance(ms)`, not `runUntilIdle()`.
     */
    limitCapacity: (limit: CapacityLimit): CloudFaultHandle => {
      for (const zone of limit.zones ?? []) {
        if (!this.zones.includes(zone)) {
          throw new Error(
            `faults.limitCapacity: unknown zone "${zone}"; zones: ${this.zones.join(", ")}`,
          );
        }
      }
      const active: ActiveLimit = {
        zones: limit.zones ? new Set(limit.zones) : undefined,
        remaining: limit.launches,
      };
      this.#limits.push(active);
      const remove = (): void => {
        if (this.#removeFrom(this.#limits, active)) {
          for (const group of this.#groups.values()) this.#scheduleActivity(group, 0);
        }
      };
      if (limit.durationMs !== undefined) this.clock.setTimer(remove, limit.durationMs);
      return { remove };
    },
    /** Removes every injected fault and capacity limit. */
    clear: (): void => {
      this.#faults.length = 0;
      const hadLimits = this.#limits.length > 0;
      this.#limits.length = 0;
      if (hadLimits) for (const group of this.#groups.values()) this.#scheduleActivity(group, 0);
    },
  };

  // ── inspection ──────────────────────────────────────────────────────────────────────────────

  /**
   * The true state, without logging, faults, lag or shuffling — for assertions and invariant checks.
   *
   * @example
   * ```ts
   * const running = cloud.inspect.instances({ group: "pool-a", states: ["running"] });
   * ```
   */
  readonly inspect = {
    /** A group as `describeGroup` would show it (stable order, no lag), or `undefined`. */
    group: (name: string): Group | undefined => {
      const group = this.#groups.get(name);
      return group ? this.#groupView(group, false) : undefined;
    },
    /** All groups. */
    groups: (): Group[] => [...this.#groups.values()].map((g) => this.#groupView(g, false)),
    /** Instances, optionally of one group and in some states, in launch order. */
    instances: (filter: { group?: string; states?: InstanceState[] } = {}): InspectedInstance[] =>
      [...this.#instances.values()]
        .filter(
          (i) =>
            (filter.group === undefined || i.groupName === filter.group) &&
            (filter.states === undefined || filter.states.includes(i.state)),
        )
        .map((i) => this.#inspectedView(i)),
    /**
     * Sorted providerIDs (CCM spelling) of a group's instances that are not terminated — what a
     * correct `providerIDList` holds when the provider keeps every non-final instance.
     */
    providerIds: (group: string): string[] =>
      [...this.#instances.values()]
        .filter((i) => i.groupName === group && i.state !== "terminated")
        .map((i) => cloudProviderId(i.zone, i.id, this.#options.providerIdStyle))
        .sort(),
    /** One instance, or `undefined`. */
    instance: (id: string): InspectedInstance | undefined => {
      const instance = this.#instances.get(id);
      return instance ? this.#inspectedView(instance) : undefined;
    },
    /** All templates, with every version's userData. */
    templates: (): Array<LaunchTemplate & { userData: Record<number, string> }> =>
      [...this.#templates.values()].map((t) => ({
        ...this.#templateView(t),
        userData: Object.fromEntries([...t.versions.values()].map((v) => [v.version, v.userData])),
      })),
  };

  // ── client ──────────────────────────────────────────────────────────────────────────────────

  #makeClient(): ScalingCloudClient {
    const call = this.#call.bind(this);
    return {
      createLaunchTemplate: (input) =>
        call("createLaunchTemplate", [input], LaunchTemplateSchema, () =>
          this.#createLaunchTemplate(this.#validate(CreateLaunchTemplateInputSchema, input)),
        ),
      createLaunchTemplateVersion: (template, data) =>
        call("createLaunchTemplateVersion", [template, data], LaunchTemplateVersionSchema, () =>
          this.#createVersion(
            this.#requireTemplate(template),
            this.#validate(LaunchTemplateDataSchema, data),
          ),
        ),
      describeLaunchTemplate: (template) =>
        call("describeLaunchTemplate", [template], LaunchTemplateSchema.optional(), () => {
          const record = this.#findTemplate(template);
          return record ? this.#templateView(record) : undefined;
        }),
      listLaunchTemplates: (filter) =>
        call("listLaunchTemplates", [filter], z.array(LaunchTemplateSchema), () => {
          const tagFilter = this.#validate(TagFilterSchema, filter ?? {});
          return this.#maybeShuffle(
            [...this.#templates.values()]
              .filter((t) => hasTags(t.tags, tagFilter))
              .map((t) => this.#templateView(t)),
          );
        }),
      deleteLaunchTemplateVersions: (template, versions) =>
        call("deleteLaunchTemplateVersions", [template, versions], z.undefined(), () =>
          this.#deleteVersions(
            this.#requireTemplate(template),
            this.#validate(z.array(z.number().int().min(1)), versions),
          ),
        ),
      deleteLaunchTemplate: (template) =>
        call("deleteLaunchTemplate", [template], z.undefined(), () =>
          this.#deleteTemplate(this.#requireTemplate(template)),
        ),
      createGroup: (input) =>
        call("createGroup", [input], GroupSchema, () =>
          this.#groupView(this.#createGroup(this.#validate(CreateGroupInputSchema, input)), true),
        ),
      describeGroup: (name) =>
        call("describeGroup", [name], GroupSchema.optional(), () => {
          const group = this.#groups.get(name);
          return group ? this.#groupView(group, true) : undefined;
        }),
      listGroups: (filter) =>
        call("listGroups", [filter], z.array(GroupSchema), () => {
          const tagFilter = this.#validate(TagFilterSchema, filter ?? {});
          return this.#maybeShuffle(
            [...this.#groups.values()]
              .filter((g) => hasTags(g.tags, tagFilter))
              .map((g) => this.#groupView(g, true)),
          );
        }),
      updateGroup: (name, input) =>
        call("updateGroup", [name, input], GroupSchema, () => {
          const group = this.#requireGroup(name);
          this.#updateGroup(group, this.#validate(UpdateGroupInputSchema, input));
          return this.#groupView(group, true);
        }),
      setDesiredCapacity: (name, desiredCapacity) =>
        call("setDesiredCapacity", [name, desiredCapacity], z.undefined(), () => {
          const group = this.#requireGroup(name);
          this.#requireNotDeleting(group);
          this.#setDesired(group, this.#validate(z.number().int().min(0), desiredCapacity), "api");
        }),
      terminateInstanceInGroup: (instanceId, options) =>
        call("terminateInstanceInGroup", [instanceId, options], ActivitySchema, () =>
          this.#terminateInGroup(
            instanceId,
            this.#validate(z.object({ decrementDesiredCapacity: z.boolean() }), options)
              .decrementDesiredCapacity,
          ),
        ),
      setInstanceProtection: (name, instanceIds, protect) =>
        call("setInstanceProtection", [name, instanceIds, protect], z.undefined(), () => {
          const group = this.#requireGroup(name);
          for (const id of instanceIds) {
            if (!group.instanceIds.has(id)) {
              throw new CloudError(
                "ValidationError",
                `instance ${id} is not a member of group ${name}`,
              );
            }
          }
          for (const id of instanceIds) {
            const instance = this.#instances.get(id);
            if (instance) instance.protectedFromScaleIn = protect;
          }
        }),
      deleteGroup: (name, options) =>
        call("deleteGroup", [name, options], z.undefined(), () => {
          this.#deleteGroup(this.#requireGroup(name), options?.force ?? false);
        }),
      startInstanceRefresh: (name, preferences) =>
        call("startInstanceRefresh", [name, preferences], InstanceRefreshSchema, () =>
          this.#refreshView(
            this.#startRefresh(
              this.#requireGroup(name),
              this.#validate(RefreshPreferencesSchema, preferences ?? {}),
            ),
          ),
        ),
      describeInstanceRefreshes: (name) =>
        call("describeInstanceRefreshes", [name], z.array(InstanceRefreshSchema), () =>
          [...this.#requireGroup(name).refreshes].reverse().map((r) => this.#refreshView(r)),
        ),
      cancelInstanceRefresh: (name) =>
        call("cancelInstanceRefresh", [name], InstanceRefreshSchema, () =>
          this.#refreshView(this.#cancelRefresh(this.#requireGroup(name))),
        ),
      describeInstances: (instanceIds) =>
        call("describeInstances", [instanceIds], z.array(InstanceSchema), () => {
          const now = this.clock.now();
          return this.#maybeShuffle(
            this.#validate(z.array(z.string()), instanceIds)
              .map((id) => this.#instances.get(id))
              .filter((i): i is InstanceRecord => i !== undefined && i.visibleAt <= now)
              .map((i) => this.#instanceView(i)),
          );
        }),
    };
  }

  /**
   * The boundary every client call goes through: log, a real asynchronous hop, rate limit and faults,
   * the operation, then JSON round trip and schema validation of the response.
   */
  async #call<T>(
    operation: CloudOperation,
    args: unknown[],
    schema: z.ZodType<T>,
    run: () => unknown,
  ): Promise<T> {
    const entry: CloudCall = {
      seq: ++this.#seq,
      at: this.clock.now(),
      operation,
      mutating: MUTATING_OPERATIONS.has(operation),
      args: clone(args),
      outcome: "ok",
    };
    this.#log.push(entry);
    await Promise.resolve();
    try {
      this.#applyFaults(operation);
      const wire = clone(run());
      const parsed = schema.safeParse(wire);
      if (!parsed.success) {
        // A bug in the simulation, not in the caller: fail loudly.
        throw new Error(
          `fake cloud returned an invalid ${operation} response: ${formatIssues(parsed.error)}`,
        );
      }
      return parsed.data;
    } catch (error) {
      entry.outcome = error instanceof CloudError ? error.code : "InternalError";
      throw error;
    }
  }

  #validate<T>(schema: z.ZodType<T>, value: unknown): T {
    const parsed = schema.safeParse(value);
    if (!parsed.success) {
      throw new CloudError("ValidationError", `invalid request: ${formatIssues(parsed.error)}`);
    }
    return parsed.data;
  }

  #applyFaults(operation: CloudOperation): void {
    const rate = this.#options.rateLimit;
    if (rate && this.#bucket) {
      const now = this.clock.now();
      this.#bucket.tokens = Math.min(
        rate.burst,
        this.#bucket.tokens + ((now - this.#bucket.at) / 1000) * rate.refillPerSecond,
      );
      this.#bucket.at = now;
      if (this.#bucket.tokens < 1) {
        const waitMs = Math.ceil(((1 - this.#bucket.tokens) / rate.refillPerSecond) * 1000);
        throw new CloudError("Throttling", `rate exceeded; retry after ${waitMs} ms`, waitMs);
      }
      this.#bucket.tokens -= 1;
    }
    for (const fault of [...this.#faults]) {
      const { spec } = fault;
      if (spec.operations && !spec.operations.includes(operation)) continue;
      if (spec.probability !== undefined && this.#random.next() >= spec.probability) continue;
      fault.remaining -= 1;
      if (fault.remaining <= 0) this.#removeFrom(this.#faults, fault);
      this.#throwFault(spec.kind, spec.retryAfterMs ?? 1000, "injected");
    }
    const random = this.#options.randomFaults;
    if (random) {
      const retryAfterMs = random.retryAfterMs ?? 1000;
      if (random.throttleRate && this.#random.next() < random.throttleRate) {
        this.#throwFault("throttle", retryAfterMs, "random");
      }
      if (random.serverErrorRate && this.#random.next() < random.serverErrorRate) {
        this.#throwFault("server-error", retryAfterMs, "random");
      }
    }
  }

  #throwFault(kind: FaultSpec["kind"], retryAfterMs: number, source: string): never {
    switch (kind) {
      case "throttle":
        throw new CloudError(
          "Throttling",
          `rate exceeded (${source}); retry after ${retryAfterMs} ms`,
          retryAfterMs,
        );
      case "unavailable":
        throw new CloudError(
          "ServiceUnavailable",
          `service unavailable (${source}); retry after ${retryAfterMs} ms`,
          retryAfterMs,
        );
      case "server-error":
        throw new CloudError("InternalError", `internal error (${source}); retry the request`);
    }
  }

  #removeFrom<T>(list: T[], item: T): boolean {
    const index = list.indexOf(item);
    if (index >= 0) list.splice(index, 1);
    return index >= 0;
  }

  #maybeShuffle<T>(items: T[]): T[] {
    return this.#options.shuffleLists === false ? items : this.#random.shuffle(items);
  }

  // ── templates ───────────────────────────────────────────────────────────────────────────────

  #findTemplate(idOrName: string): TemplateRecord | undefined {
    return (
      this.#templates.get(idOrName) ??
      [...this.#templates.values()].find((t) => t.name === idOrName)
    );
  }

  #requireTemplate(idOrName: string): TemplateRecord {
    const template = this.#findTemplate(idOrName);
    if (!template) {
      throw new CloudError("NotFound", `launch template "${idOrName}" does not exist`);
    }
    return template;
  }

  #checkUserData(userData: string): void {
    const limit = this.#options.userDataLimitBytes ?? 16_384;
    const size = Buffer.byteLength(userData, "utf8");
    if (size > limit) {
      throw new CloudError(
        "UserDataTooLarge",
        `userData is ${size} bytes; the limit is ${limit} bytes (compress it or move content elsewhere)`,
      );
    }
  }

  #createLaunchTemplate(input: CreateLaunchTemplateInput): LaunchTemplate {
    if (this.#findTemplate(input.name)) {
      throw new CloudError("AlreadyExists", `launch template "${input.name}" already exists`);
    }
    this.#checkUserData(input.data.userData);
    const template: TemplateRecord = {
      id: this.#newId("lt-", (id) => this.#templates.has(id)),
      name: input.name,
      createdAt: this.clock.now(),
      tags: { ...input.tags },
      latestVersion: 0,
      versions: new Map(),
    };
    this.#templates.set(template.id, template);
    this.#createVersion(template, input.data);
    return this.#templateView(template);
  }

  #createVersion(template: TemplateRecord, data: LaunchTemplateData): LaunchTemplateVersion {
    const limit = this.#options.templateVersionLimit ?? 20;
    if (template.versions.size >= limit) {
      throw new CloudError(
        "VersionLimitExceeded",
        `launch template "${template.name}" has ${template.versions.size} versions (limit ${limit}); ` +
          "delete unused versions with deleteLaunchTemplateVersions first",
      );
    }
    this.#checkUserData(data.userData);
    const version: VersionRecord = {
      version: template.latestVersion + 1,
      createdAt: this.clock.now(),
      image: data.image,
      instanceType: data.instanceType,
      userData: data.userData,
      tags: { ...data.tags },
      marketType: data.marketType,
    };
    template.latestVersion = version.version;
    template.versions.set(version.version, version);
    return this.#versionView(version);
  }

  #versionUsers(template: TemplateRecord, version: number): string[] {
    const users: string[] = [];
    for (const group of this.#groups.values()) {
      if (group.template.id === template.id && group.template.version === version) {
        users.push(`group ${group.name}`);
      }
    }
    for (const instance of this.#instances.values()) {
      if (
        instance.templateId === template.id &&
        instance.templateVersion === version &&
        LIVE.has(instance.state)
      ) {
        users.push(`instance ${instance.id}`);
      }
    }
    return users;
  }

  #deleteVersions(template: TemplateRecord, versions: number[]): void {
    for (const version of versions) {
      if (!template.versions.has(version)) continue;
      if (version === template.latestVersion) {
        throw new CloudError(
          "ValidationError",
          `version ${version} is the latest version of "${template.name}"; delete the template instead`,
        );
      }
      const users = this.#versionUsers(template, version);
      if (users.length > 0) {
        throw new CloudError(
          "ResourceInUse",
          `version ${version} of "${template.name}" is used by ${users.join(", ")}`,
        );
      }
    }
    for (const version of versions) template.versions.delete(version);
  }

  #deleteTemplate(template: TemplateRecord): void {
    const groups = [...this.#groups.values()].filter((g) => g.template.id === template.id);
    if (groups.length > 0) {
      throw new CloudError(
        "ResourceInUse",
        `launch template "${template.name}" is used by group ${groups.map((g) => g.name).join(", ")}; delete the group first`,
      );
    }
    this.#templates.delete(template.id);
  }

  #resolveTemplateRef(ref: TemplateRef): TemplateRef {
    const template = this.#findTemplate(ref.id);
    if (!template) {
      throw new CloudError("ValidationError", `launch template "${ref.id}" does not exist`);
    }
    if (ref.version !== "$Latest" && !template.versions.has(ref.version)) {
      throw new CloudError(
        "ValidationError",
        `launch template "${template.name}" has no version ${ref.version}`,
      );
    }
    return { id: template.id, version: ref.version };
  }

  #launchVersion(group: GroupRecord): VersionRecord | undefined {
    const template = this.#templates.get(group.template.id);
    if (!template) return undefined;
    const number =
      group.template.version === "$Latest" ? template.latestVersion : group.template.version;
    return template.versions.get(number);
  }

  // ── groups ──────────────────────────────────────────────────────────────────────────────────

  #requireGroup(name: string): GroupRecord {
    const group = this.#groups.get(name);
    if (!group) throw new CloudError("NotFound", `group "${name}" does not exist`);
    return group;
  }

  #requireNotDeleting(group: GroupRecord): void {
    if (group.deleting) {
      throw new CloudError(
        "ScalingActivityInProgress",
        `group "${group.name}" is being deleted; wait until it is gone`,
      );
    }
  }

  #checkBounds(min: number, max: number, desired: number): void {
    if (min > max) {
      throw new CloudError("ValidationError", `minSize ${min} is greater than maxSize ${max}`);
    }
    if (desired < min || desired > max) {
      throw new CloudError(
        "ValidationError",
        `desired capacity ${desired} is outside [minSize ${min}, maxSize ${max}]; change the bounds or the desired capacity`,
      );
    }
  }

  #checkZones(zones: string[]): void {
    for (const zone of zones) {
      if (!this.zones.includes(zone)) {
        throw new CloudError(
          "ValidationError",
          `unknown zone "${zone}"; zones of ${this.region}: ${this.zones.join(", ")}`,
        );
      }
    }
  }

  #createGroup(input: CreateGroupInput): GroupRecord {
    if (this.#groups.has(input.name)) {
      throw new CloudError("AlreadyExists", `group "${input.name}" already exists`);
    }
    const desired = input.desiredCapacity ?? input.minSize;
    this.#checkBounds(input.minSize, input.maxSize, desired);
    this.#checkZones(input.zones);
    const now = this.clock.now();
    const group: GroupRecord = {
      id: `fake:autoscaling:${this.region}:group/${input.name}`,
      name: input.name,
      minSize: input.minSize,
      maxSize: input.maxSize,
      desired,
      template: this.#resolveTemplateRef(input.template),
      zones: [...new Set(input.zones)],
      tags: { ...input.tags },
      terminationPolicy: input.terminationPolicy ?? "Default",
      createdAt: now,
      readyAt: now + this.timing.groupCreateMs,
      deleting: false,
      activities: [],
      instanceIds: new Set(),
      refreshes: [],
      surge: 0,
    };
    this.#groups.set(group.name, group);
    this.#activity(group, "scale", `group created with desired capacity ${desired}`);
    this.#scheduleActivity(group, this.timing.groupCreateMs);
    return group;
  }

  #updateGroup(group: GroupRecord, input: UpdateGroupInput): void {
    this.#requireNotDeleting(group);
    const min = input.minSize ?? group.minSize;
    const max = input.maxSize ?? group.maxSize;
    const desired = input.desiredCapacity ?? group.desired;
    this.#checkBounds(min, max, desired);
    if (input.zones) this.#checkZones(input.zones);
    const template = input.template ? this.#resolveTemplateRef(input.template) : group.template;
    group.minSize = min;
    group.maxSize = max;
    group.template = template;
    if (input.zones) group.zones = [...new Set(input.zones)];
    if (input.tags) group.tags = { ...group.tags, ...input.tags };
    if (input.terminationPolicy) group.terminationPolicy = input.terminationPolicy;
    if (desired !== group.desired) {
      this.#activity(group, "scale", `desired capacity ${group.desired} → ${desired} (api)`);
      group.desired = desired;
    }
    this.#scheduleActivity(group);
  }

  #setDesired(group: GroupRecord, desired: number, actor: string): void {
    this.#checkBounds(group.minSize, group.maxSize, desired);
    if (desired === group.desired) return;
    this.#activity(group, "scale", `desired capacity ${group.desired} → ${desired} (${actor})`);
    group.desired = desired;
    this.#scheduleActivity(group);
  }

  #terminateInGroup(instanceId: string, decrement: boolean): Activity {
    const instance = this.#instances.get(instanceId);
    const group = instance?.groupName ? this.#groups.get(instance.groupName) : undefined;
    if (!instance || !group?.instanceIds.has(instanceId)) {
      throw new CloudError("NotFound", `instance ${instanceId} is not a member of any group`);
    }
    this.#requireNotDeleting(group);
    if (!LIVE.has(instance.state)) {
      return this.#activity(
        group,
        "terminate",
        `instance ${instanceId} is already ${instance.state}`,
        instanceId,
      );
    }
    if (decrement) {
      if (group.desired - 1 < group.minSize) {
        throw new CloudError(
          "ValidationError",
          `terminating ${instanceId} with decrement would set desired capacity ${group.desired - 1} below minSize ${group.minSize}`,
        );
      }
      group.desired -= 1;
    }
    return this.#terminate(
      instance,
      decrement
        ? "terminated by api, desired capacity decremented"
        : "terminated by api, to be replaced",
    );
  }

  #deleteGroup(group: GroupRecord, force: boolean): void {
    if (group.deleting) return;
    const live = [...group.instanceIds].filter((id) => {
      const instance = this.#instances.get(id);
      return instance !== undefined && LIVE.has(instance.state);
    });
    if (!force && live.length > 0) {
      throw new CloudError(
        "ResourceInUse",
        `group "${group.name}" still has ${live.length} instances; scale it to 0 or delete with force`,
      );
    }
    group.deleting = true;
    group.desired = 0;
    group.minSize = 0;
    group.surge = 0;
    for (const refresh of group.refreshes) {
      if (
        refresh.status === "Pending" ||
        refresh.status === "InProgress" ||
        refresh.status === "Cancelling"
      ) {
        this.#endRefresh(refresh, "Cancelled", "group deleted");
      }
    }
    this.#activity(group, "scale", `group deletion started${force ? " (force)" : ""}`);
    this.#scheduleActivity(group);
  }

  #scheduleActivity(group: GroupRecord, delayMs = this.timing.activityDelayMs): void {
    const at = this.clock.now() + delayMs;
    if (group.activityTimer && group.activityTimer.at <= at) return;
    if (group.activityTimer) this.clock.clearTimer(group.activityTimer.handle);
    group.activityTimer = {
      at,
      handle: this.clock.setTimer(() => {
        group.activityTimer = undefined;
        this.#converge(group);
      }, delayMs),
    };
  }

  #members(group: GroupRecord): InstanceRecord[] {
    return [...group.instanceIds]
      .map((id) => this.#instances.get(id))
      .filter((i): i is InstanceRecord => i !== undefined);
  }

  /** The group's control loop: what the cloud does on its own to reach the desired capacity. */
  #converge(group: GroupRecord): void {
    if (this.#groups.get(group.name) !== group) return;
    const now = this.clock.now();
    if (now < group.readyAt) {
      this.#scheduleActivity(group, group.readyAt - now);
      return;
    }
    if (group.deleting) {
      for (const instance of this.#members(group)) this.#terminate(instance, "group deletion");
      if (
        this.#members(group).every((i) => i.state === "terminated") &&
        group.removalTimer === undefined
      ) {
        group.removalTimer = this.clock.setTimer(() => {
          this.#groups.delete(group.name);
        }, this.timing.groupDeleteMs);
      }
      return;
    }
    for (const instance of this.#members(group)) {
      if (!LIVE.has(instance.state) || instance.health === "healthy") continue;
      const dueAt = (instance.unhealthySince ?? now) + this.timing.healthCheckGraceMs;
      if (dueAt <= now) this.#terminate(instance, "health check failed; replacing");
      else this.#scheduleActivity(group, dueAt - now);
    }
    const live = this.#members(group).filter((i) => LIVE.has(i.state));
    const target = group.desired + group.surge;
    if (live.length < target) {
      const wanted = target - live.length;
      const launched = this.#launch(group, wanted);
      if (launched < wanted) {
        group.launchFailure = `InsufficientInstanceCapacity: launched ${launched} of ${wanted} instances; retrying`;
        this.#activity(group, "error", group.launchFailure);
        this.#scheduleActivity(group, this.timing.capacityRetryMs);
      } else {
        group.launchFailure = undefined;
      }
    } else {
      group.launchFailure = undefined;
      if (live.length > target) {
        for (const victim of this.#scaleInVictims(group, live, live.length - target)) {
          this.#terminate(victim, `scale-in (${group.terminationPolicy} termination policy)`);
        }
      }
    }
  }

  #zoneHasCapacity(zone: string): boolean {
    return this.#limits.every(
      (l) => (l.zones !== undefined && !l.zones.has(zone)) || l.remaining > 0,
    );
  }

  #launch(group: GroupRecord, count: number): number {
    const version = this.#launchVersion(group);
    if (!version) {
      this.#activity(
        group,
        "error",
        `launch template ${group.template.id} version is gone; cannot launch`,
      );
      return 0;
    }
    let launched = 0;
    const perZone = new Map(group.zones.map((z) => [z, 0]));
    for (const i of this.#members(group)) {
      if (LIVE.has(i.state) && perZone.has(i.zone))
        perZone.set(i.zone, (perZone.get(i.zone) ?? 0) + 1);
    }
    for (let n = 0; n < count; n++) {
      // The least-populated zone that still has capacity; ties go to the zone listed first.
      let zone: string | undefined;
      for (const z of group.zones) {
        if (!this.#zoneHasCapacity(z)) continue;
        if (zone === undefined || (perZone.get(z) ?? 0) < (perZone.get(zone) ?? 0)) zone = z;
      }
      if (zone === undefined) break;
      perZone.set(zone, (perZone.get(zone) ?? 0) + 1);
      for (const limit of this.#limits) {
        if (limit.zones === undefined || limit.zones.has(zone)) limit.remaining -= 1;
      }
      const now = this.clock.now();
      const instance: InstanceRecord = {
        id: this.#newId("i-", (id) => this.#instances.has(id)),
        zone,
        state: "pending",
        health: "healthy",
        groupName: group.name,
        templateId: group.template.id,
        templateVersion: version.version,
        userData: version.userData,
        image: version.image,
        spot: version.marketType === "spot",
        launchedAt: now,
        visibleAt: now + this.timing.listLagMs,
        protectedFromScaleIn: false,
        tags: { ...group.tags },
        privateIp: `10.0.${Math.floor(this.#ipCounter / 250)}.${(this.#ipCounter % 250) + 4}`,
        kubelet: "booting",
        joined: false,
      };
      this.#ipCounter++;
      this.#instances.set(instance.id, instance);
      group.instanceIds.add(instance.id);
      this.#activity(
        group,
        "launch",
        `launched ${instance.id} in ${zone} (template version ${version.version})`,
        instance.id,
      );
      this.clock.setTimer(() => this.#boot(instance), this.timing.bootMs);
      launched++;
    }
    return launched;
  }

  #scaleInVictims(group: GroupRecord, live: InstanceRecord[], count: number): InstanceRecord[] {
    const candidates = live.filter((i) => !i.protectedFromScaleIn);
    const older = (a: InstanceRecord, b: InstanceRecord): number =>
      a.launchedAt - b.launchedAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
    const oldTemplate = (a: InstanceRecord, b: InstanceRecord): number =>
      a.templateVersion - b.templateVersion || older(a, b);
    switch (group.terminationPolicy) {
      case "OldestInstance":
        return candidates.sort(older).slice(0, count);
      case "NewestInstance":
        return candidates.sort((a, b) => older(b, a)).slice(0, count);
      case "OldestTemplate":
        return candidates.sort(oldTemplate).slice(0, count);
      case "Default": {
        // Balance zones: each victim comes from the zone with the most live instances; within the
        // fullest zones, the oldest template version, then the oldest launch.
        const perZone = new Map<string, number>();
        for (const i of live) perZone.set(i.zone, (perZone.get(i.zone) ?? 0) + 1);
        const queues = new Map<string, InstanceRecord[]>();
        for (const i of candidates.sort(oldTemplate)) {
          const queue = queues.get(i.zone) ?? [];
          queue.push(i);
          queues.set(i.zone, queue);
        }
        const heads = new Map([...queues.keys()].map((zone) => [zone, 0]));
        const victims: InstanceRecord[] = [];
        while (victims.length < count) {
          let best: { zone: string; instance: InstanceRecord } | undefined;
          for (const [zone, queue] of queues) {
            const instance = queue[heads.get(zone) ?? 0];
            if (instance === undefined) continue;
            const load = perZone.get(zone) ?? 0;
            const bestLoad = best ? (perZone.get(best.zone) ?? 0) : -1;
            if (
              !best ||
              load > bestLoad ||
              (load === bestLoad && oldTemplate(instance, best.instance) < 0)
            ) {
              best = { zone, instance };
            }
          }
          if (!best) break;
          victims.push(best.instance);
          heads.set(best.zone, (heads.get(best.zone) ?? 0) + 1);
          perZone.set(best.zone, (perZone.get(best.zone) ?? 1) - 1);
        }
        return victims;
      }
    }
  }

  // ── instances ───────────────────────────────────────────────────────────────────────────────

  #requireInstance(id: string): InstanceRecord {
    const instance = this.#instances.get(id);
    if (!instance) throw new CloudError("NotFound", `instance ${id} does not exist`);
    return instance;
  }

  #bootInfo(instance: InstanceRecord): InstanceBoot {
    return {
      instanceId: instance.id,
      providerID: cloudProviderId(instance.zone, instance.id, this.#options.providerIdStyle),
      zone: instance.zone,
      groupName: instance.groupName,
      templateVersion: instance.templateVersion,
      userData: instance.userData,
      image: instance.image,
      at: this.clock.now(),
    };
  }

  #runHook(hook: (() => void | Promise<void>) | undefined): void {
    if (!hook) return;
    const promise = (async () => {
      try {
        await hook();
      } catch (error) {
        this.#hookErrors.push(error);
      }
    })();
    this.#pendingHooks.add(promise);
    void promise.finally(() => this.#pendingHooks.delete(promise));
  }

  #boot(instance: InstanceRecord): void {
    if (instance.state !== "pending") return;
    instance.state = "running";
    this.#pokeRefresh(instance);
    this.#decideJoin(instance, 1);
  }

  /** Asks `canJoin`; an error is retried like kubeadm retries discovery, a "no" is final. */
  #decideJoin(instance: InstanceRecord, attempt: number): void {
    const canJoin = this.#options.kubelet?.canJoin;
    if (!canJoin) {
      this.#joinDecided(instance, true);
      return;
    }
    const failed = (error: unknown): void => {
      this.#hookErrors.push(error);
      if (attempt >= this.timing.joinAttempts) {
        this.#joinDecided(instance, false);
        return;
      }
      this.clock.setTimer(() => {
        if (instance.state === "running" && instance.kubelet === "booting") {
          this.#decideJoin(instance, attempt + 1);
        }
      }, this.timing.joinRetryMs);
    };
    let decision: boolean | Promise<boolean>;
    try {
      decision = canJoin(this.#bootInfo(instance));
    } catch (error) {
      failed(error);
      return;
    }
    if (typeof decision === "boolean") {
      this.#joinDecided(instance, decision);
      return;
    }
    this.#runHook(async () => {
      let ok: boolean;
      try {
        ok = await decision;
      } catch (error) {
        failed(error);
        return;
      }
      this.#joinDecided(instance, ok);
    });
  }

  #joinDecided(instance: InstanceRecord, ok: boolean): void {
    if (instance.state !== "running" || instance.kubelet !== "booting") return;
    if (!ok) {
      instance.kubelet = "rejected";
      const group = instance.groupName ? this.#groups.get(instance.groupName) : undefined;
      if (group) {
        this.#activity(
          group,
          "error",
          `kubelet on ${instance.id} could not join the cluster`,
          instance.id,
        );
      }
      return;
    }
    instance.kubelet = "joining";
    this.clock.setTimer(() => {
      if (instance.state !== "running" || instance.kubelet !== "joining") return;
      instance.kubelet = "joined";
      instance.joined = true;
      this.#register(instance, 1);
    }, this.#joinMs ?? this.timing.joinMs);
  }

  /**
   * Runs `onJoin` (the Node registration); an error is retried, with a doubling backoff, for as long
   * as the instance runs and stays joined, as the kubelet retries registering.
   */
  #register(instance: InstanceRecord, attempt: number): void {
    const onJoin = this.#options.kubelet?.onJoin;
    if (!onJoin) return;
    const info = this.#bootInfo(instance);
    this.#runHook(async () => {
      try {
        await onJoin(info);
      } catch (error) {
        this.#hookErrors.push(error);
        const backoff = Math.min(
          this.timing.joinRetryMs * 2 ** Math.min(attempt - 1, 30),
          this.timing.registerRetryMaxMs,
        );
        this.clock.setTimer(() => {
          if (instance.state === "running" && instance.kubelet === "joined") {
            this.#register(instance, attempt + 1);
          }
        }, backoff);
      }
    });
  }

  #leave(instance: InstanceRecord): void {
    const wasJoined = instance.kubelet === "joined";
    instance.kubelet = "left";
    const kubelet = this.#options.kubelet;
    if (wasJoined && kubelet?.onLeave) {
      const info = this.#bootInfo(instance);
      this.#runHook(() => kubelet.onLeave?.(info));
    }
  }

  #markUnhealthy(instance: InstanceRecord): void {
    if (instance.health === "unhealthy") return;
    instance.health = "unhealthy";
    instance.unhealthySince = this.clock.now();
    const group = instance.groupName ? this.#groups.get(instance.groupName) : undefined;
    if (group) {
      this.#activity(
        group,
        "error",
        `instance ${instance.id} failed its health check`,
        instance.id,
      );
      this.#scheduleActivity(group, this.timing.healthCheckGraceMs);
    }
  }

  #terminate(instance: InstanceRecord, reason: string): Activity {
    const group = instance.groupName ? this.#groups.get(instance.groupName) : undefined;
    const activity: Activity = {
      at: this.clock.now(),
      kind: "terminate",
      message: `${instance.id}: ${reason}`,
      instanceId: instance.id,
    };
    if (!LIVE.has(instance.state)) return activity;
    instance.state = "terminating";
    this.#leave(instance);
    if (group) {
      this.#activity(group, "terminate", activity.message, instance.id);
      this.#scheduleActivity(group);
    }
    this.clock.setTimer(() => {
      instance.state = "terminated";
      instance.terminatedAt = this.clock.now();
      const onTerminated = this.#options.kubelet?.onTerminated;
      if (instance.joined && onTerminated) {
        const info = this.#bootInfo(instance);
        this.#runHook(() => onTerminated(info));
      }
      const current = instance.groupName ? this.#groups.get(instance.groupName) : undefined;
      if (current) {
        this.#scheduleActivity(current, current.deleting ? 0 : this.timing.activityDelayMs);
        this.#pokeRefresh(instance);
      }
      this.clock.setTimer(() => {
        this.#instances.delete(instance.id);
        const owner = instance.groupName ? this.#groups.get(instance.groupName) : undefined;
        owner?.instanceIds.delete(instance.id);
      }, this.timing.lingerMs);
    }, this.timing.stopMs);
    return activity;
  }

  // ── instance refresh ────────────────────────────────────────────────────────────────────────

  #activeRefresh(group: GroupRecord): RefreshRecord | undefined {
    return group.refreshes.find(
      (r) => r.status === "Pending" || r.status === "InProgress" || r.status === "Cancelling",
    );
  }

  #startRefresh(group: GroupRecord, preferences: RefreshPreferences): RefreshRecord {
    this.#requireNotDeleting(group);
    const active = this.#activeRefresh(group);
    if (active) {
      throw new CloudError(
        "InstanceRefreshInProgress",
        `refresh ${active.id} on group "${group.name}" is ${active.status}; wait for it or cancel it`,
      );
    }
    const target = this.#launchVersion(group)?.version ?? 0;
    const skipMatching = preferences.skipMatching ?? true;
    const members = this.#members(group).filter((i) => LIVE.has(i.state));
    const refresh: RefreshRecord = {
      id: this.#newId("ir-", (id) => group.refreshes.some((r) => r.id === id)),
      groupName: group.name,
      status: "Pending",
      startedAt: this.clock.now(),
      startedWithVersion: target,
      minHealthyPercentage: preferences.minHealthyPercentage ?? 90,
      warmupMs: preferences.warmupMs ?? this.timing.refreshWarmupMs,
      skipMatching,
      initialIds: new Set(members.map((i) => i.id)),
      initialOutdated: members.filter((i) => !skipMatching || i.templateVersion !== target).length,
      percentComplete: 0,
    };
    group.refreshes.push(refresh);
    this.#activity(
      group,
      "refresh",
      `instance refresh ${refresh.id} started (target version ${target})`,
    );
    refresh.timer = this.clock.setTimer(
      () => this.#refreshStep(group, refresh),
      this.timing.activityDelayMs,
    );
    return refresh;
  }

  #cancelRefresh(group: GroupRecord): RefreshRecord {
    const active = this.#activeRefresh(group);
    if (!active) {
      throw new CloudError(
        "ActiveInstanceRefreshNotFound",
        `group "${group.name}" has no running instance refresh`,
      );
    }
    if (active.status !== "Cancelling") {
      active.status = "Cancelling";
      this.clock.clearTimer(active.timer);
      group.surge = 0;
      this.#scheduleActivity(group);
      active.timer = this.clock.setTimer(
        () => this.#endRefresh(active, "Cancelled", "cancelled by request"),
        this.timing.refreshCancelMs,
      );
    }
    return active;
  }

  #endRefresh(refresh: RefreshRecord, status: RefreshStatus, reason?: string): void {
    this.clock.clearTimer(refresh.timer);
    refresh.status = status;
    refresh.endedAt = this.clock.now();
    if (reason !== undefined) refresh.statusReason = reason;
    const group = this.#groups.get(refresh.groupName);
    if (group) {
      group.surge = 0;
      this.#activity(
        group,
        "refresh",
        `instance refresh ${refresh.id} ${status}${reason ? `: ${reason}` : ""}`,
      );
      this.#scheduleActivity(group);
    }
  }

  #pokeRefresh(instance: InstanceRecord): void {
    const group = instance.groupName ? this.#groups.get(instance.groupName) : undefined;
    const refresh = group ? this.#activeRefresh(group) : undefined;
    if (group && refresh && refresh.status !== "Cancelling") {
      this.clock.clearTimer(refresh.timer);
      refresh.timer = this.clock.setTimer(() => this.#refreshStep(group, refresh), 0);
    }
  }

  /** One step of a refresh: replace outdated instances while keeping minHealthyPercentage healthy. */
  #refreshStep(group: GroupRecord, refresh: RefreshRecord): void {
    if (refresh.status !== "Pending" && refresh.status !== "InProgress") return;
    refresh.status = "InProgress";
    const now = this.clock.now();
    const target = this.#launchVersion(group)?.version;
    if (target === undefined) {
      this.#endRefresh(refresh, "Failed", "the group's launch template version is gone");
      return;
    }
    if (group.launchFailure) {
      this.#endRefresh(refresh, "Failed", group.launchFailure);
      return;
    }
    const members = this.#members(group).filter((i) => LIVE.has(i.state));
    const outdated = members
      .filter((i) =>
        refresh.skipMatching ? i.templateVersion !== target : refresh.initialIds.has(i.id),
      )
      .sort((a, b) => a.launchedAt - b.launchedAt || a.id.localeCompare(b.id));
    refresh.percentComplete =
      refresh.initialOutdated === 0
        ? 100
        : Math.max(
            0,
            Math.min(
              100,
              Math.round(
                (100 * (refresh.initialOutdated - outdated.length)) / refresh.initialOutdated,
              ),
            ),
          );
    const busy = this.#members(group).some(
      (i) =>
        i.state === "pending" ||
        i.state === "terminating" ||
        i.state === "stopping" ||
        (i.state === "running" && i.launchedAt + this.timing.bootMs + refresh.warmupMs > now),
    );
    const reschedule = (): void => {
      refresh.timer = this.clock.setTimer(
        () => this.#refreshStep(group, refresh),
        this.timing.refreshPollMs,
      );
    };
    if (outdated.length === 0) {
      if (busy) reschedule();
      else this.#endRefresh(refresh, "Successful");
      return;
    }
    if (busy) {
      reschedule();
      return;
    }
    const healthy = members.filter((i) => i.state === "running" && i.health === "healthy").length;
    const minHealthy = Math.ceil((group.desired * refresh.minHealthyPercentage) / 100);
    const room = healthy - minHealthy;
    if (room > 0) {
      group.surge = 0;
      for (const victim of outdated.slice(0, room)) {
        this.#terminate(victim, `instance refresh ${refresh.id}`);
      }
    } else {
      // Cannot go below the healthy minimum: launch one extra instance first.
      group.surge = 1;
      this.#scheduleActivity(group, 0);
    }
    reschedule();
  }

  // ── views and helpers ───────────────────────────────────────────────────────────────────────

  #activity(
    group: GroupRecord,
    kind: Activity["kind"],
    message: string,
    instanceId?: string,
  ): Activity {
    const activity: Activity = { at: this.clock.now(), kind, message };
    if (instanceId !== undefined) activity.instanceId = instanceId;
    group.activities.push(activity);
    if (group.activities.length > MAX_ACTIVITIES) group.activities.shift();
    return activity;
  }

  #newId(prefix: string, taken: (id: string) => boolean): string {
    for (;;) {
      const id = `${prefix}${this.#random.hex(12)}`;
      if (!taken(id)) return id;
    }
  }

  #groupStatus(group: GroupRecord): { status: Group["status"]; message?: string } {
    if (group.deleting) return { status: "deleting" };
    if (this.clock.now() < group.readyAt) return { status: "creating" };
    if (group.launchFailure) return { status: "failed", message: group.launchFailure };
    const members = this.#members(group);
    const live = members.filter((i) => LIVE.has(i.state));
    const settled =
      live.length === group.desired &&
      members.every((i) => i.state === "running" || i.state === "terminated");
    return { status: settled ? "active" : "updating" };
  }

  #groupInstanceView(instance: InstanceRecord): GroupInstance {
    const view: GroupInstance = {
      id: instance.id,
      zone: instance.zone,
      state: instance.state,
      health: instance.health,
      templateId: instance.templateId,
      templateVersion: instance.templateVersion,
      launchedAt: instance.launchedAt,
      protectedFromScaleIn: instance.protectedFromScaleIn,
    };
    if (instance.spot) view.lifecycle = "spot";
    return view;
  }

  #groupView(group: GroupRecord, api: boolean): Group {
    const now = this.clock.now();
    const members = this.#members(group).filter((i) => !api || i.visibleAt <= now);
    const { status, message } = this.#groupStatus(group);
    const view: Group = {
      id: group.id,
      name: group.name,
      minSize: group.minSize,
      maxSize: group.maxSize,
      desiredCapacity: group.desired,
      template: { ...group.template },
      zones: [...group.zones],
      tags: { ...group.tags },
      terminationPolicy: group.terminationPolicy,
      status,
      createdAt: group.createdAt,
      instances: (api ? this.#maybeShuffle(members) : members).map((i) =>
        this.#groupInstanceView(i),
      ),
      activities: group.activities.map((a) => ({ ...a })),
    };
    if (message !== undefined) view.statusMessage = message;
    return view;
  }

  #instanceView(instance: InstanceRecord): Instance {
    const view: Instance = {
      ...this.#groupInstanceView(instance),
      tags: { ...instance.tags },
      privateIp: instance.privateIp,
    };
    if (instance.groupName !== undefined) view.groupName = instance.groupName;
    return view;
  }

  #inspectedView(instance: InstanceRecord): InspectedInstance {
    const view: InspectedInstance = {
      ...this.#instanceView(instance),
      userData: instance.userData,
      kubelet: instance.kubelet,
      providerID: cloudProviderId(instance.zone, instance.id, this.#options.providerIdStyle),
    };
    if (instance.terminatedAt !== undefined) view.terminatedAt = instance.terminatedAt;
    return view;
  }

  #versionView(version: VersionRecord): LaunchTemplateVersion {
    const view: LaunchTemplateVersion = {
      version: version.version,
      createdAt: version.createdAt,
      image: version.image,
      instanceType: version.instanceType,
      tags: { ...version.tags },
    };
    if (version.marketType) view.marketType = version.marketType;
    return view;
  }

  #templateView(template: TemplateRecord): LaunchTemplate {
    return {
      id: template.id,
      name: template.name,
      latestVersion: template.latestVersion,
      createdAt: template.createdAt,
      tags: { ...template.tags },
      versions: [...template.versions.values()]
        .sort((a, b) => a.version - b.version)
        .map((v) => this.#versionView(v)),
    };
  }

  #refreshView(refresh: RefreshRecord): InstanceRefresh {
    const view: InstanceRefresh = {
      id: refresh.id,
      groupName: refresh.groupName,
      status: refresh.status,
      percentComplete: refresh.percentComplete,
      startedAt: refresh.startedAt,
      startedWithVersion: refresh.startedWithVersion,
      minHealthyPercentage: refresh.minHealthyPercentage,
    };
    if (refresh.statusReason !== undefined) view.statusReason = refresh.statusReason;
    if (refresh.endedAt !== undefined) view.endedAt = refresh.endedAt;
    return view;
  }
}
