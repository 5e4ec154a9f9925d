/**
 * The AWS reference provider's {@link PoolDriver}: an Auto Scaling group launched from a launch
 * template, on the AWS SDK for JavaScript v3. Each method is one or two API calls; every decision
 * (when to roll, which instance goes, what to publish) is the kit's.
 *
 * @module
 */
import { createHash } from "node:crypto";
import {
  type AutoScalingClient,
  CreateAutoScalingGroupCommand,
  DeleteAutoScalingGroupCommand,
  DescribeAutoScalingGroupsCommand,
  type AutoScalingGroup as Group,
  type Instance as GroupInstance,
  TerminateInstanceInAutoScalingGroupCommand,
  UpdateAutoScalingGroupCommand,
} from "@aws-sdk/client-auto-scaling";
import {
  type _InstanceType,
  CreateLaunchTemplateCommand,
  CreateLaunchTemplateVersionCommand,
  DeleteLaunchTemplateCommand,
  DeleteLaunchTemplateVersionsCommand,
  DescribeInstancesCommand,
  DescribeLaunchTemplatesCommand,
  DescribeLaunchTemplateVersionsCommand,
  type EC2Client,
  type Instance as Ec2Instance,
  type LaunchTemplate,
  type LaunchTemplateVersion,
  type RequestLaunchTemplateData,
  type Tag,
} from "@aws-sdk/client-ec2";
import {
  assertPoolOwns,
  DriverError,
  type DriverFailure,
  type PoolCapacity,
  type PoolContext,
  type PoolDriver,
  type PoolGroup,
  type PoolIdentity,
  type PoolInstance,
  type PoolInstanceState,
  poolOwnerTags,
  type TemplateVersion,
  templateStampFromTags,
  templateStampToTags,
} from "@capi-ts/sdk";
import type { ASGMachinePoolSpec } from "./spec.js";

/** The AWS API clients the driver calls (one region). */
export interface AwsClients {
  /** EC2: launch templates and instances. */
  readonly ec2: EC2Client;
  /** Auto Scaling: the group. */
  readonly autoScaling: AutoScalingClient;
}

/** The group settings the driver manages besides size, bounds and template. */
export interface AsgGroupSettings {
  /** Availability zones, sorted. */
  availabilityZones: string[];
}

/** Options of {@link asgDriver}. */
export interface AsgDriverOptions {
  /** Zones used when neither the MachinePool nor the spec names any. Default `["us-east-1a"]`. */
  defaultZones?: string[];
  /** How long to wait before retrying when the group is busy (a scaling activity). Default 10 s. */
  busyRetryMs?: number;
}

/** Tag naming the pool that owns a resource (`<namespace>/<name>`): never the UID, which a move changes. */
export const ASG_POOL_TAG = "capi-ts.io/pool";
/** Tag naming the cluster a resource belongs to. */
export const ASG_CLUSTER_TAG = "capi-ts.io/cluster";

const NAME_LIMIT = 128; // launch template names; group names allow 255

/**
 * Name of the pool's group and launch template, `<cluster>.<namespace>.<name>`: stable across
 * `clusterctl move`. Past the launch template's 128 characters it is cut and ends in a hash of the
 * whole, so two long names never meet.
 *
 * @example
 * ```ts
 * asgResourceName({ clusterName: "c1", namespace: "default", name: "workers", uid: "…" }); // "c1.default.workers"
 * ```
 */
export function asgResourceName(pool: PoolIdentity): string {
  const full = `${pool.clusterName}.${pool.namespace}.${pool.name}`;
  if (full.length <= NAME_LIMIT) return full;
  const hash = createHash("sha256").update(full).digest("hex").slice(0, 16);
  return `${full.slice(0, NAME_LIMIT - hash.length - 1)}-${hash}`;
}

/**
 * The providerID the AWS cloud-controller-manager writes on a Node: `aws:///<zone>/<instance-id>`.
 *
 * @example
 * ```ts
 * awsProviderId("us-east-1a", "i-0abc"); // "aws:///us-east-1a/i-0abc"
 * ```
 */
export function awsProviderId(zone: string, instanceId: string): string {
  return `aws:///${zone}/${instanceId}`;
}

function ownerTags(pool: PoolIdentity): Record<string, string> {
  return poolOwnerTags(pool);
}

function toTagList(tags: Record<string, string>): Tag[] {
  return Object.entries(tags).map(([Key, Value]) => ({ Key, Value }));
}

function fromTagList(tags: readonly { Key?: string; Value?: string }[] | undefined) {
  const out: Record<string, string> = {};
  for (const { Key, Value } of tags ?? []) if (Key !== undefined) out[Key] = Value ?? "";
  return out;
}

/** Refuse to adopt (or later delete) a resource that carries another pool's tag. */
function assertOwned(kind: string, name: string, tags: Record<string, string>, pool: PoolIdentity) {
  assertPoolOwns({ kind, name, tags }, pool);
}

/**
 * Launch template versions have no tags of their own: the stamp goes into the version's
 * `TagSpecifications` for instances, which the version keeps and returns, and which label each
 * instance with the version's stamp as a bonus.
 */
function versionStampTags(version: LaunchTemplateVersion): Record<string, string> {
  const spec = version.LaunchTemplateData?.TagSpecifications?.find(
    (s) => s.ResourceType === "instance",
  );
  return fromTagList(spec?.Tags);
}

/** The error's code: the SDK names a modelled error by its shape (`…Fault`), others by the code. */
function errorCode(error: unknown): string | undefined {
  if (!(error instanceof Error) || !("$metadata" in error)) return undefined;
  return error.name.replace(/Fault$/, "");
}

function isCode(error: unknown, ...codes: string[]): boolean {
  const code = errorCode(error);
  return code !== undefined && codes.includes(code);
}

/** Auto Scaling says "not found" as a ValidationError with a message. */
function isGroupOrInstanceNotFound(error: unknown): boolean {
  return isCode(error, "ValidationError") && /not found/i.test((error as Error).message);
}

const TEMPLATE_NOT_FOUND = [
  "InvalidLaunchTemplateName.NotFoundException",
  "InvalidLaunchTemplateId.NotFound",
  "InvalidLaunchTemplateId.Malformed",
];
const THROTTLING = [
  "Throttling",
  "ThrottlingException",
  "RequestLimitExceeded",
  "RequestThrottled",
  "TooManyRequestsException",
];
const BUSY = [
  "ScalingActivityInProgress",
  "ResourceInUse",
  "ResourceContention",
  // Another writer created the template between our look and our create: look again.
  "InvalidLaunchTemplateName.AlreadyExistsException",
];
const CREDENTIALS = [
  "AuthFailure",
  "InvalidClientTokenId",
  "SignatureDoesNotMatch",
  "UnrecognizedClientException",
  "ExpiredToken",
  "InvalidAccessKeyId",
];

const LIFECYCLE: Record<string, PoolInstanceState> = {
  Pending: "pending",
  "Pending:Wait": "pending",
  "Pending:Proceed": "pending",
  InService: "running",
  Standby: "stopped",
  EnteringStandby: "stopping",
  Terminating: "terminating",
  "Terminating:Wait": "terminating",
  "Terminating:Proceed": "terminating",
  Terminated: "terminated",
  Detaching: "terminating",
  Detached: "terminated",
};

/** What one instance of a type offers (scale from zero). A table: asking EC2 costs a call per reconcile. */
const INSTANCE_TYPES: Record<string, { cpu: number; memoryGi: number; arch: "amd64" | "arm64" }> = {
  "t3.small": { cpu: 2, memoryGi: 2, arch: "amd64" },
  "t3.medium": { cpu: 2, memoryGi: 4, arch: "amd64" },
  "t3.large": { cpu: 2, memoryGi: 8, arch: "amd64" },
  "m5.large": { cpu: 2, memoryGi: 8, arch: "amd64" },
  "m5.xlarge": { cpu: 4, memoryGi: 16, arch: "amd64" },
  "m6g.medium": { cpu: 1, memoryGi: 4, arch: "arm64" },
  "m6g.large": { cpu: 2, memoryGi: 8, arch: "arm64" },
};

/**
 * What one instance of `instanceType` offers, from the driver's table; `undefined` for a type the
 * table lacks (the kit then publishes no capacity rather than a wrong one).
 *
 * @example
 * ```ts
 * asgCapacity("m6g.medium"); // { capacity: { cpu: "1", memory: "4Gi" }, nodeInfo: { architecture: "arm64", … } }
 * ```
 */
export function asgCapacity(instanceType: string): PoolCapacity | undefined {
  const type = INSTANCE_TYPES[instanceType];
  return (
    type && {
      capacity: { cpu: String(type.cpu), memory: `${type.memoryGi}Gi` },
      nodeInfo: { architecture: type.arch, operatingSystem: "linux" },
    }
  );
}

/**
 * A {@link PoolDriver} for AWS Auto Scaling groups with launch templates.
 *
 * Build the clients with `maxAttempts: 1`: the kit retries with its own backoff and checks its
 * leadership before every call, while the SDK's retries would resend a call after the lease is gone
 * and hide throttling from the pool's conditions.
 *
 * @example
 * ```ts
 * const config = { region: "us-east-1", maxAttempts: 1 };
 * const driver = asgDriver({ ec2: new EC2Client(config), autoScaling: new AutoScalingClient(config) });
 * machinePoolController(driver, { manager, kind: ASGMachinePool });
 * ```
 */
export function asgDriver(
  clients: AwsClients,
  options: AsgDriverOptions = {},
): PoolDriver<ASGMachinePoolSpec, AsgGroupSettings> {
  type Ctx = PoolContext<ASGMachinePoolSpec>;
  const { ec2, autoScaling } = clients;
  const defaultZones = options.defaultZones ?? ["us-east-1a"];
  const busyRetryMs = options.busyRetryMs ?? 10_000;
  const name = (ctx: Ctx): string => asgResourceName(ctx.pool);
  const signal = (ctx: Ctx) => ({ abortSignal: ctx.signal });

  const describeTemplate = async (ctx: Ctx): Promise<LaunchTemplate | undefined> => {
    try {
      const { LaunchTemplates } = await ec2.send(
        new DescribeLaunchTemplatesCommand({ LaunchTemplateNames: [name(ctx)] }),
        signal(ctx),
      );
      const template = LaunchTemplates?.[0];
      if (template) assertOwned("launch template", name(ctx), fromTagList(template.Tags), ctx.pool);
      return template;
    } catch (error) {
      if (isCode(error, ...TEMPLATE_NOT_FOUND)) return undefined;
      throw error;
    }
  };

  const templateData = (ctx: Ctx, userDataBase64: string, stamp: Record<string, string>) =>
    ({
      ImageId: ctx.spec.imageId,
      InstanceType: ctx.spec.instanceType as _InstanceType,
      UserData: userDataBase64,
      TagSpecifications: [
        { ResourceType: "instance", Tags: toTagList({ ...ownerTags(ctx.pool), ...stamp }) },
      ],
    }) satisfies RequestLaunchTemplateData;

  /**
   * Launch times and addresses are EC2's: one call per 200 instances, not one per instance. A filter,
   * not `InstanceIds`: an ID EC2 does not list yet (eventual consistency) fails the whole call there.
   */
  const describeInstances = async (ctx: Ctx, ids: string[]): Promise<Map<string, Ec2Instance>> => {
    const found = new Map<string, Ec2Instance>();
    for (let i = 0; i < ids.length; i += 200) {
      const Filters = [{ Name: "instance-id", Values: ids.slice(i, i + 200) }];
      let NextToken: string | undefined;
      do {
        const page = await ec2.send(
          new DescribeInstancesCommand({ Filters, NextToken }),
          signal(ctx),
        );
        for (const r of page.Reservations ?? []) {
          for (const instance of r.Instances ?? []) {
            if (instance.InstanceId) found.set(instance.InstanceId, instance);
          }
        }
        NextToken = page.NextToken;
      } while (NextToken);
    }
    return found;
  };

  const bounds = (ctx: Ctx) => ({ min: ctx.spec.minSize, max: ctx.spec.maxSize });

  return {
    templateInputs: (ctx) => ({ imageId: ctx.spec.imageId, instanceType: ctx.spec.instanceType }),
    groupSettings: (ctx) => ({
      availabilityZones: [
        ...(ctx.failureDomains.length > 0
          ? ctx.failureDomains
          : (ctx.spec.availabilityZones ?? defaultZones)),
      ].sort(),
    }),
    groupBounds: bounds,
    capacity: (ctx) => asgCapacity(ctx.spec.instanceType),
    // EC2 takes 16 KiB of user data before base64; cloud-init reads gzip, which kubeadm's fits in.
    userData: { limitBytes: 16_384, compress: "gzip" },

    async getTemplate(ctx) {
      const template = await describeTemplate(ctx);
      if (!template) return [];
      const defaultVersion = template.DefaultVersionNumber;
      const versions: TemplateVersion[] = [];
      let NextToken: string | undefined;
      do {
        const page = await ec2.send(
          new DescribeLaunchTemplateVersionsCommand({
            LaunchTemplateName: name(ctx),
            MaxResults: 200,
            NextToken,
          }),
          signal(ctx),
        );
        NextToken = page.NextToken;
        for (const v of page.LaunchTemplateVersions ?? []) {
          if (v.VersionNumber === undefined) continue;
          versions.push({
            version: String(v.VersionNumber),
            stamp: templateStampFromTags(versionStampTags(v)),
            ...(v.CreateTime ? { createdAt: v.CreateTime.getTime() } : {}),
            // AWS refuses to delete the default version while the template exists: never pruned.
            ...(v.VersionNumber === defaultVersion ? { deletable: false } : {}),
          });
        }
      } while (NextToken);
      return versions.sort((a, b) => Number(a.version) - Number(b.version));
    },

    async createTemplateVersion(ctx, { userDataBase64, stamp }) {
      const data = templateData(ctx, userDataBase64, templateStampToTags(stamp));
      try {
        const { LaunchTemplateVersion: created } = await ec2.send(
          new CreateLaunchTemplateVersionCommand({
            LaunchTemplateName: name(ctx),
            LaunchTemplateData: data,
          }),
          signal(ctx),
        );
        return {
          version: String(created?.VersionNumber),
          stamp,
          ...(created?.CreateTime ? { createdAt: created.CreateTime.getTime() } : {}),
        };
      } catch (error) {
        if (!isCode(error, ...TEMPLATE_NOT_FOUND)) throw error;
      }
      const { LaunchTemplate: created } = await ec2.send(
        new CreateLaunchTemplateCommand({
          LaunchTemplateName: name(ctx),
          LaunchTemplateData: data,
          TagSpecifications: [
            { ResourceType: "launch-template", Tags: toTagList(ownerTags(ctx.pool)) },
          ],
        }),
        signal(ctx),
      );
      return {
        version: String(created?.LatestVersionNumber ?? 1),
        stamp,
        ...(created?.CreateTime ? { createdAt: created.CreateTime.getTime() } : {}),
      };
    },

    async deleteTemplate(ctx, versions) {
      const template = await describeTemplate(ctx);
      if (!template) return;
      if (!versions) {
        await ec2.send(
          new DeleteLaunchTemplateCommand({ LaunchTemplateId: template.LaunchTemplateId }),
          signal(ctx),
        );
        return;
      }
      const { UnsuccessfullyDeletedLaunchTemplateVersions: failed = [] } = await ec2.send(
        new DeleteLaunchTemplateVersionsCommand({
          LaunchTemplateId: template.LaunchTemplateId,
          Versions: [...versions],
        }),
        signal(ctx),
      );
      // The call succeeds as a whole and reports each version that failed; one already gone is done.
      const refused = failed.filter(
        (f) => f.ResponseError?.Code !== "launchTemplateVersionDoesNotExist",
      );
      if (refused.length > 0) {
        const [first] = refused;
        throw DriverError.transient(
          "TemplateVersionNotDeleted",
          `launch template ${name(ctx)}: ${refused.length} version(s) not deleted, first ` +
            `${first?.VersionNumber}: ${first?.ResponseError?.Code}: ${first?.ResponseError?.Message}`,
        );
      }
    },

    async getGroup(ctx) {
      const { AutoScalingGroups } = await autoScaling.send(
        new DescribeAutoScalingGroupsCommand({ AutoScalingGroupNames: [name(ctx)] }),
        signal(ctx),
      );
      const group = AutoScalingGroups?.[0];
      if (!group) return undefined;
      assertOwned("Auto Scaling group", name(ctx), fromTagList(group.Tags), ctx.pool);
      const ids = (group.Instances ?? []).flatMap((i) => (i.InstanceId ? [i.InstanceId] : []));
      const details = ids.length > 0 ? await describeInstances(ctx, ids) : new Map();
      return toPoolGroup(group, details);
    },

    async createGroup(ctx, { replicas, templateVersion, settings, bounds: b = bounds(ctx) }) {
      try {
        await autoScaling.send(
          new CreateAutoScalingGroupCommand({
            AutoScalingGroupName: name(ctx),
            MinSize: b.min,
            MaxSize: b.max,
            // Absent when an autoscaler owns the size: AWS then starts at MinSize.
            ...(replicas === undefined ? {} : { DesiredCapacity: replicas }),
            AvailabilityZones: settings.availabilityZones,
            // Pinned, never $Latest or $Default: the kit decides when the group moves.
            LaunchTemplate: { LaunchTemplateName: name(ctx), Version: templateVersion },
            Tags: Object.entries(ownerTags(ctx.pool)).map(([Key, Value]) => ({
              Key,
              Value,
              PropagateAtLaunch: true,
            })),
          }),
          signal(ctx),
        );
      } catch (error) {
        // A retry after a lost response; getGroup checks whose group it is.
        if (!isCode(error, "AlreadyExists")) throw error;
      }
    },

    async updateGroup(ctx, { bounds: b, replicas, templateVersion, settings }) {
      // One call: AWS checks the new desired capacity against the new bounds, never the old.
      await autoScaling.send(
        new UpdateAutoScalingGroupCommand({
          AutoScalingGroupName: name(ctx),
          ...(b ? { MinSize: b.min, MaxSize: b.max } : {}),
          ...(replicas === undefined ? {} : { DesiredCapacity: replicas }),
          ...(settings ? { AvailabilityZones: settings.availabilityZones } : {}),
          ...(templateVersion === undefined
            ? {}
            : { LaunchTemplate: { LaunchTemplateName: name(ctx), Version: templateVersion } }),
        }),
        signal(ctx),
      );
    },

    async deleteGroup(ctx) {
      await autoScaling.send(
        new DeleteAutoScalingGroupCommand({ AutoScalingGroupName: name(ctx), ForceDelete: true }),
        signal(ctx),
      );
    },

    async deleteInstance(ctx, instance, mode) {
      try {
        await autoScaling.send(
          new TerminateInstanceInAutoScalingGroupCommand({
            InstanceId: instance.id,
            ShouldDecrementDesiredCapacity: mode === "shrink",
          }),
          signal(ctx),
        );
      } catch (error) {
        if (!isGroupOrInstanceNotFound(error)) throw error; // already gone
      }
    },

    classifyError(error): DriverFailure | undefined {
      const code = errorCode(error);
      if (code === undefined) return undefined; // network and timeouts: transient
      const message = (error as Error).message;
      if (THROTTLING.includes(code)) {
        return { kind: "throttled", reason: "CloudThrottling", message, retryAfterMs: 1000 };
      }
      if (BUSY.includes(code)) {
        return { kind: "waiting", reason: code, message, retryAfterMs: busyRetryMs };
      }
      if (TEMPLATE_NOT_FOUND.includes(code) || isGroupOrInstanceNotFound(error)) {
        return { kind: "notFound", reason: "NotFound", message };
      }
      // Retried with backoff: the credentials may be fixed without a change of the pool.
      if (CREDENTIALS.includes(code)) {
        return {
          kind: "transient",
          reason: "CloudCredentialsRejected",
          // The code alone: AWS's message may quote the access key.
          message: `AWS rejected the credentials (${code}); fix them, the pool retries with backoff`,
        };
      }
      const status = (error as { $metadata?: { httpStatusCode?: number } }).$metadata
        ?.httpStatusCode;
      if (status !== undefined && status >= 500) {
        return { kind: "transient", reason: "CloudUnavailable", message };
      }
      return { kind: "terminal", reason: "CloudRejected", message: `${code}: ${message}` };
    },
  };
}

function toPoolInstance(instance: GroupInstance, ec2: Ec2Instance | undefined): PoolInstance {
  const id = instance.InstanceId ?? "";
  const zone = instance.AvailabilityZone ?? "";
  const addresses = [
    ...(ec2?.PrivateIpAddress
      ? [{ type: "InternalIP" as const, address: ec2.PrivateIpAddress }]
      : []),
    ...(ec2?.PrivateDnsName ? [{ type: "InternalDNS" as const, address: ec2.PrivateDnsName }] : []),
  ];
  return {
    id,
    providerID: awsProviderId(zone, id),
    state: LIFECYCLE[instance.LifecycleState ?? ""] ?? "pending",
    templateVersion: instance.LaunchTemplate?.Version,
    // EC2 may not list an instance that has just launched: it is the newest, not the oldest.
    createdAt: ec2?.LaunchTime?.getTime() ?? Date.now(),
    zone,
    healthy: instance.HealthStatus !== "Unhealthy",
    ...(addresses.length > 0 ? { addresses } : {}),
  };
}

/** The group as the kit sees it: settings in the shape `groupSettings` returns. */
function toPoolGroup(group: Group, details: Map<string, Ec2Instance>): PoolGroup<AsgGroupSettings> {
  const version = group.LaunchTemplate?.Version;
  return {
    id: group.AutoScalingGroupARN ?? group.AutoScalingGroupName ?? "",
    status: group.Status === "Delete in progress" ? "deleting" : "active",
    ...(group.Status ? { message: group.Status } : {}),
    desiredReplicas: group.DesiredCapacity ?? 0,
    ...(group.MinSize === undefined ? {} : { minReplicas: group.MinSize }),
    ...(group.MaxSize === undefined ? {} : { maxReplicas: group.MaxSize }),
    templateVersion: version === undefined || version.startsWith("$") ? undefined : version,
    settings: { availabilityZones: [...(group.AvailabilityZones ?? [])].sort() },
    instances: (group.Instances ?? []).map((i) =>
      toPoolInstance(i, details.get(i.InstanceId ?? "")),
    ),
  };
}
