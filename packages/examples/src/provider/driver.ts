/**
 * The example provider's {@link PoolDriver}: everything `FakeCloudMachinePool` knows about its cloud.
 * Read it as the worked example of how to write a driver — each method is one or two cloud calls, and
 * every decision (when to roll, which instance to delete, what to publish) is left to the kit.
 *
 * @module
 */
import {
  assertPoolOwns,
  type DriverFailure,
  type DriverFailureKind,
  type PoolCapacity,
  type PoolContext,
  type PoolDriver,
  type PoolGroup,
  type PoolIdentity,
  poolOwnerTags,
  type TemplateVersion,
  templateStampFromTags,
  templateStampToTags,
} from "@capi-ts/sdk";
// The cloud's own modules, not its index: the index also exports the test bed's kubelet (on
// client-node and @capi-ts/testing), which a provider's manager must not load.
import type { ScalingCloudClient } from "../cloud/cloud.js";
import { CloudError, type CloudErrorCode, isCloudError } from "../cloud/errors.js";
import { fakeInstanceType } from "../cloud/instance-types.js";
import type { Group, LaunchTemplateVersion, Tags } from "../cloud/schemas.js";
import type { FakeCloudMachinePoolSpec } from "./spec.js";

/**
 * The group settings this driver manages besides size, bounds and template. The bounds are not among
 * them: the kit writes those itself (`groupBounds`), widened for the cluster-autoscaler.
 */
export interface FakeCloudGroupSettings {
  /** Zones, sorted. */
  zones: string[];
}

/** Options of {@link fakeCloudDriver}. */
export interface FakeCloudDriverOptions {
  /** Zones used when neither the MachinePool nor the spec names any. Default `["zone-a"]`. */
  defaultZones?: string[];
  /** Use the cloud's instance refresh for rollouts instead of the kit's engine. Default false. */
  nativeRollout?: boolean;
  /** How long to wait before retrying when the cloud is busy. Default 10 s. */
  busyRetryMs?: number;
  /**
   * Maps the cloud's launch times to wall time (`RealClock.wallTimeOf`): a sped-up demo cloud runs
   * ahead of wall time, and the kit compares launch times with wall-clock ones (`rolloutAfter`).
   * Default: as the cloud reports them.
   */
  launchTime?: (cloudMs: number) => number;
}

/** Tag naming the pool that owns a resource (`<namespace>/<name>`). */
export const POOL_TAG = "capi-ts.io/pool";
/** Tag naming the cluster a resource belongs to. */
export const CLUSTER_TAG = "capi-ts.io/cluster";

/**
 * The providerID the fake cloud's kubelet registers: `fake:///<zone>/<instance-id>`. It must match the
 * cloud-controller-manager byte for byte, or core CAPI never finds the Node.
 *
 * @example
 * ```ts
 * fakeProviderId("zone-a", "i-0abc") // "fake:///zone-a/i-0abc"
 * ```
 */
export function fakeProviderId(zone: string, instanceId: string): string {
  return `fake:///${zone}/${instanceId}`;
}

/** Name of the pool's group and launch template: stable across `clusterctl move` (no UID). */
export function resourceName(pool: PoolIdentity): string {
  return `${pool.clusterName}.${pool.namespace}.${pool.name}`;
}

function ownerTags(pool: PoolIdentity): Tags {
  return poolOwnerTags(pool);
}

/** Refuse to adopt (or later delete) a resource that carries another pool's tag. */
function assertOwned(kind: string, name: string, tags: Tags, pool: PoolIdentity): void {
  assertPoolOwns({ kind, name, tags }, pool);
}

function toTemplateVersion(version: LaunchTemplateVersion): TemplateVersion {
  return {
    version: String(version.version),
    stamp: templateStampFromTags(version.tags),
    createdAt: version.createdAt,
  };
}

/** What each cloud error means to the kit. */
const ERROR_KINDS: Record<CloudErrorCode, DriverFailureKind> = {
  ValidationError: "terminal",
  UserDataTooLarge: "terminal",
  VersionLimitExceeded: "terminal",
  AlreadyExists: "terminal",
  NotFound: "notFound",
  ActiveInstanceRefreshNotFound: "notFound",
  ResourceInUse: "waiting",
  ScalingActivityInProgress: "waiting",
  InstanceRefreshInProgress: "waiting",
  Throttling: "throttled",
  InternalError: "transient",
  ServiceUnavailable: "transient",
};

/** The image of a pool: the spec's, else one named after the Kubernetes version. */
export function fakeCloudImage(ctx: PoolContext<FakeCloudMachinePoolSpec>): string {
  return ctx.spec.image ?? `fake-k8s-${ctx.version ?? "latest"}`;
}

/**
 * What one instance of the pool's type offers (scale from zero), from the fake cloud's catalog;
 * `undefined` for a type the catalog does not list.
 *
 * @example
 * ```ts
 * fakeCloudCapacity("small"); // { capacity: { cpu: "2", memory: "4Gi", … }, nodeInfo: { architecture: "amd64", … } }
 * ```
 */
export function fakeCloudCapacity(instanceType: string): PoolCapacity | undefined {
  const type = fakeInstanceType(instanceType);
  if (!type) return undefined;
  return {
    capacity: {
      cpu: String(type.vcpus),
      memory: type.memoryMiB % 1024 === 0 ? `${type.memoryMiB / 1024}Gi` : `${type.memoryMiB}Mi`,
      "ephemeral-storage": `${type.diskGiB}Gi`,
      pods: String(type.maxPods),
      ...(type.gpus ? { "nvidia.com/gpu": String(type.gpus) } : {}),
    },
    // The fake cloud's images are Linux; the architecture is the type's.
    nodeInfo: { architecture: type.architecture, operatingSystem: "linux" },
  };
}

/**
 * What both fake-cloud drivers decide the same way, wherever the model lives: what the model is built
 * from (a change rolls the pool), what the group is set to, its own bounds (`spec.minSize` and
 * `spec.maxSize`), what each cloud error means, and what an instance offers (scale from zero).
 *
 * @example
 * ```ts
 * const { templateInputs, groupSettings, groupBounds, classifyError, capacity } = fakeCloudDecisions({ busyRetryMs: 100 });
 * ```
 */
export function fakeCloudDecisions(
  options: Pick<FakeCloudDriverOptions, "defaultZones" | "busyRetryMs"> = {},
): Required<
  Pick<
    PoolDriver<FakeCloudMachinePoolSpec, FakeCloudGroupSettings>,
    "templateInputs" | "groupSettings" | "groupBounds" | "classifyError" | "capacity"
  >
> {
  const defaultZones = options.defaultZones ?? ["zone-a"];
  const busyRetryMs = options.busyRetryMs ?? 10_000;
  return {
    // `spot` only when set: adding a key to every pool's inputs would roll every existing pool.
    templateInputs: (ctx) => ({
      image: fakeCloudImage(ctx),
      instanceType: ctx.spec.instanceType,
      ...(ctx.spec.spot === true ? { spot: true } : {}),
    }),
    // A table lookup: answered at once, no cloud call (see fakeInstanceType).
    capacity: (ctx) => fakeCloudCapacity(ctx.spec.instanceType),
    groupSettings: (ctx) => ({
      zones: [
        ...(ctx.failureDomains.length > 0 ? ctx.failureDomains : (ctx.spec.zones ?? defaultZones)),
      ].sort(),
    }),
    // The pool's own limits; the kit widens them for the cluster-autoscaler before it writes them.
    groupBounds: (ctx) => ({ min: ctx.spec.minSize, max: ctx.spec.maxSize }),
    classifyError(error): DriverFailure | undefined {
      if (!(error instanceof CloudError)) return undefined;
      const { code, message } = error;
      switch (ERROR_KINDS[code]) {
        case "throttled":
          return {
            kind: "throttled",
            reason: "CloudThrottling",
            message,
            retryAfterMs: error.retryAfterMs ?? 1000,
          };
        case "transient":
          return {
            kind: "transient",
            reason: "CloudUnavailable",
            message,
            retryAfterMs: error.retryAfterMs,
          };
        case "waiting":
          return { kind: "waiting", reason: code, message, retryAfterMs: busyRetryMs };
        case "notFound":
          return { kind: "notFound", reason: code, message };
        case "terminal":
          return { kind: "terminal", reason: code, message };
      }
    },
  };
}

/**
 * A {@link PoolDriver} for the fake scaling-group cloud.
 *
 * @example
 * ```ts
 * const cloud = new FakeScalingCloud({ clock });
 * const driver = fakeCloudDriver(cloud.client, { defaultZones: ["zone-a", "zone-b"] });
 * ```
 */
export function fakeCloudDriver(
  cloud: ScalingCloudClient,
  options: FakeCloudDriverOptions = {},
): PoolDriver<FakeCloudMachinePoolSpec, FakeCloudGroupSettings> {
  type Ctx = PoolContext<FakeCloudMachinePoolSpec>;
  const name = (ctx: Ctx): string => resourceName(ctx.pool);
  const image = fakeCloudImage;
  const { templateInputs, groupSettings, groupBounds, classifyError, capacity } =
    fakeCloudDecisions(options);

  const driver: PoolDriver<FakeCloudMachinePoolSpec, FakeCloudGroupSettings> = {
    templateInputs,
    groupSettings,
    capacity,
    groupBounds,

    async getTemplate(ctx) {
      const template = await cloud.describeLaunchTemplate(name(ctx));
      if (!template) return [];
      assertOwned("launch template", template.name, template.tags, ctx.pool);
      return template.versions.map(toTemplateVersion);
    },

    async createTemplateVersion(ctx, { userData, stamp }) {
      // userData is write-only in this cloud: the stamp in the version's tags is how the kit reads it back.
      const data = {
        image: image(ctx),
        instanceType: ctx.spec.instanceType,
        userData,
        tags: templateStampToTags(stamp),
        ...(ctx.spec.spot === true ? { marketType: "spot" as const } : {}),
      };
      try {
        return toTemplateVersion(await cloud.createLaunchTemplateVersion(name(ctx), data));
      } catch (error) {
        if (!isCloudError(error, "NotFound")) throw error;
        const created = await cloud.createLaunchTemplate({
          name: name(ctx),
          data,
          tags: ownerTags(ctx.pool),
        });
        return { version: String(created.latestVersion), stamp, createdAt: created.createdAt };
      }
    },

    async deleteTemplate(ctx, versions) {
      if (versions) {
        await cloud.deleteLaunchTemplateVersions(name(ctx), versions.map(Number));
        return;
      }
      const template = await cloud.describeLaunchTemplate(name(ctx));
      if (!template) return;
      assertOwned("launch template", template.name, template.tags, ctx.pool);
      await cloud.deleteLaunchTemplate(template.id);
    },

    async getGroup(ctx) {
      const group = await cloud.describeGroup(name(ctx));
      if (!group) return undefined;
      assertOwned("group", group.name, group.tags, ctx.pool);
      return toPoolGroup(group, options.launchTime);
    },

    async createGroup(ctx, { replicas, templateVersion, settings, bounds = groupBounds(ctx) }) {
      try {
        await cloud.createGroup({
          name: name(ctx),
          zones: settings.zones,
          minSize: bounds.min,
          maxSize: bounds.max,
          desiredCapacity: replicas, // undefined when an autoscaler owns the size: the cloud uses minSize
          template: { id: name(ctx), version: Number(templateVersion) }, // pinned, never "$Latest": the kit decides
          tags: ownerTags(ctx.pool),
        });
      } catch (error) {
        if (!isCloudError(error, "AlreadyExists")) throw error; // a retry after a lost response
      }
    },

    async updateGroup(ctx, { bounds, replicas, templateVersion, settings }) {
      // One call: the cloud checks the new desired capacity against the new bounds, never the old.
      await cloud.updateGroup(name(ctx), {
        ...(bounds ? { minSize: bounds.min, maxSize: bounds.max } : {}),
        desiredCapacity: replicas,
        zones: settings?.zones,
        template:
          templateVersion === undefined
            ? undefined
            : { id: name(ctx), version: Number(templateVersion) },
      });
    },

    async deleteGroup(ctx) {
      await cloud.deleteGroup(name(ctx), { force: true });
    },

    async deleteInstance(_ctx, instance, mode) {
      try {
        await cloud.terminateInstanceInGroup(instance.id, {
          decrementDesiredCapacity: mode === "shrink",
        });
      } catch (error) {
        if (!isCloudError(error, "NotFound")) throw error; // already gone
      }
    },

    classifyError,
  };

  if (!options.nativeRollout) return driver;
  return {
    ...driver,
    nativeRollout: {
      async start(ctx, { minHealthyPercent }) {
        // The cloud takes maxUnavailable as a healthy percentage; at 100 % it surges one at a time.
        await cloud.startInstanceRefresh(name(ctx), { minHealthyPercentage: minHealthyPercent });
      },
      async get(ctx) {
        const [latest] = await cloud.describeInstanceRefreshes(name(ctx));
        if (!latest) return undefined;
        const state = (
          {
            Pending: "running",
            InProgress: "running",
            Cancelling: "cancelling",
            Successful: "succeeded",
            Failed: "failed",
            Cancelled: "cancelled",
          } as const
        )[latest.status];
        return {
          id: latest.id,
          state,
          startedWithVersion: String(latest.startedWithVersion),
          percentComplete: latest.percentComplete,
          message: latest.statusReason,
        };
      },
      async cancel(ctx) {
        try {
          await cloud.cancelInstanceRefresh(name(ctx));
        } catch (error) {
          if (!isCloudError(error, "ActiveInstanceRefreshNotFound")) throw error;
        }
      },
    },
  };
}

/** The cloud's group as the kit sees it: settings in the same shape as `groupSettings`. */
function toPoolGroup(
  group: Group,
  launchTime: (cloudMs: number) => number = (ms) => ms,
): PoolGroup<FakeCloudGroupSettings> {
  return {
    id: group.id,
    status: group.status,
    message: group.statusMessage,
    desiredReplicas: group.desiredCapacity,
    minReplicas: group.minSize,
    maxReplicas: group.maxSize,
    templateVersion:
      group.template.version === "$Latest" ? undefined : String(group.template.version),
    settings: { zones: [...group.zones].sort() },
    instances: group.instances.map((instance) => ({
      id: instance.id,
      providerID: fakeProviderId(instance.zone, instance.id),
      state: instance.state,
      templateVersion: String(instance.templateVersion),
      createdAt: launchTime(instance.launchedAt),
      zone: instance.zone,
      healthy: instance.health === "healthy",
      ...(instance.lifecycle === "spot" ? { interruptible: true } : {}),
    })),
  };
}
