/**
 * The wire types of the fake scaling-group cloud: what goes in (requests) and what comes out
 * (responses), each an explicit interface plus a zod schema. Requests are validated by the cloud (a bad
 * field is a `ValidationError`, as a real API returns 400); responses are serialised to JSON and parsed
 * back through these schemas before the caller sees them, as a real cloud SDK would, so a driver can
 * never depend on sharing objects with the simulation.
 *
 * @module
 */
import { z } from "zod";

/** Lifecycle of an instance. `terminated` instances stay visible for a while (like EC2). */
export type InstanceState =
  | "pending"
  | "running"
  | "stopping"
  | "stopped"
  | "terminating"
  | "terminated";
/** Zod schema of {@link InstanceState}. */
export const InstanceStateSchema: z.ZodType<InstanceState> = z.enum([
  "pending",
  "running",
  "stopping",
  "stopped",
  "terminating",
  "terminated",
]);

/** Health as seen by the group's health check; unhealthy instances get replaced. */
export type HealthStatus = "healthy" | "unhealthy";
/** Zod schema of {@link HealthStatus}. */
export const HealthStatusSchema: z.ZodType<HealthStatus> = z.enum(["healthy", "unhealthy"]);

/**
 * Status of a group: `creating` right after creation, `updating` while the instance count or states
 * differ from the desired capacity, `failed` after a launch failed (e.g. no capacity) until it recovers,
 * `deleting` after a forced delete until it is gone, else `active`.
 */
export type GroupStatus = "creating" | "active" | "updating" | "deleting" | "failed";
/** Zod schema of {@link GroupStatus}. */
export const GroupStatusSchema: z.ZodType<GroupStatus> = z.enum([
  "creating",
  "active",
  "updating",
  "deleting",
  "failed",
]);

/**
 * How the group picks scale-in victims. `Default`: the zone with the most instances, then the oldest
 * template version, then the oldest launch.
 */
export type TerminationPolicy = "Default" | "OldestInstance" | "NewestInstance" | "OldestTemplate";
/** Zod schema of {@link TerminationPolicy}. */
export const TerminationPolicySchema: z.ZodType<TerminationPolicy> = z.enum([
  "Default",
  "OldestInstance",
  "NewestInstance",
  "OldestTemplate",
]);

/** Status of an instance refresh (the cloud's native rolling replacement). */
export type RefreshStatus =
  | "Pending"
  | "InProgress"
  | "Successful"
  | "Failed"
  | "Cancelling"
  | "Cancelled";
/** Zod schema of {@link RefreshStatus}. */
export const RefreshStatusSchema: z.ZodType<RefreshStatus> = z.enum([
  "Pending",
  "InProgress",
  "Successful",
  "Failed",
  "Cancelling",
  "Cancelled",
]);

/** Free-form key/value tags (ownership, hashes). Keys 1..128 chars, values ≤ 256 chars. */
export type Tags = Record<string, string>;
/** Zod schema of {@link Tags}. */
export const TagsSchema: z.ZodType<Tags> = z.record(
  z.string().min(1).max(128),
  z.string().max(256),
);

const NameSchema = z
  .string()
  .min(1)
  .max(255)
  .regex(/^[A-Za-z0-9][A-Za-z0-9._/-]*$/, "letters, digits, '.', '_', '/', '-'");
const CountSchema = z.number().int().min(0).max(10_000);

/** Which template a group launches from; `"$Latest"` follows new versions automatically. */
export interface TemplateRef {
  /** Launch template ID (`lt-…`) or name. */
  id: string;
  /** A version number, or `"$Latest"`. */
  version: number | "$Latest";
}
/** Zod schema of {@link TemplateRef}. */
export const TemplateRefSchema: z.ZodType<TemplateRef> = z.object({
  id: z.string().min(1),
  version: z.union([z.number().int().min(1), z.literal("$Latest")]),
});

// ── requests ────────────────────────────────────────────────────────────────────────────────────

/** The launch configuration stored in one template version. */
export interface LaunchTemplateData {
  /** Machine image the instance boots. */
  image: string;
  /** Instance size. */
  instanceType: string;
  /** Boot script (cloud-config / ignition). Write-only: never returned by any describe call. */
  userData: string;
  /** Tags of this version (providers keep hashes here because userData cannot be read back). */
  tags?: Tags;
  /**
   * `spot`: instances launch on spare capacity the cloud may reclaim at any time (AWS
   * `InstanceMarketOptions.MarketType`); default on-demand.
   */
  marketType?: "spot";
}
/** Zod schema of {@link LaunchTemplateData}. */
export const LaunchTemplateDataSchema: z.ZodType<LaunchTemplateData> = z.object({
  image: z.string().min(1),
  instanceType: z.string().min(1),
  userData: z.string(),
  tags: TagsSchema.optional(),
  marketType: z.literal("spot").optional(),
});

/** Request of `createLaunchTemplate`. */
export interface CreateLaunchTemplateInput {
  /** Unique template name. */
  name: string;
  /** Contents of version 1. */
  data: LaunchTemplateData;
  /** Tags of the template itself (ownership). */
  tags?: Tags;
}
/** Zod schema of {@link CreateLaunchTemplateInput}. */
export const CreateLaunchTemplateInputSchema: z.ZodType<CreateLaunchTemplateInput> = z.object({
  name: NameSchema,
  data: LaunchTemplateDataSchema,
  tags: TagsSchema.optional(),
});

/** Request of `createGroup`. */
export interface CreateGroupInput {
  /** Unique group name. */
  name: string;
  /** Lower bound of the desired capacity. */
  minSize: number;
  /** Upper bound of the desired capacity. */
  maxSize: number;
  /** Desired instance count; omitted means `minSize` (AWS behaviour). */
  desiredCapacity?: number;
  /** The template new instances launch from. */
  template: TemplateRef;
  /** Zones to spread instances over (at least one, each known to the cloud). */
  zones: string[];
  /** Tags of the group; they also propagate to every instance it launches. */
  tags?: Tags;
  /** Scale-in victim choice (default `Default`). */
  terminationPolicy?: TerminationPolicy;
}
/** Zod schema of {@link CreateGroupInput}. */
export const CreateGroupInputSchema: z.ZodType<CreateGroupInput> = z.object({
  name: NameSchema,
  minSize: CountSchema,
  maxSize: CountSchema,
  desiredCapacity: CountSchema.optional(),
  template: TemplateRefSchema,
  zones: z.array(z.string().min(1)).min(1),
  tags: TagsSchema.optional(),
  terminationPolicy: TerminationPolicySchema.optional(),
});

/** Request of `updateGroup`: only the fields present change. Tags are merged. */
export interface UpdateGroupInput {
  /** New lower bound. */
  minSize?: number;
  /** New upper bound. */
  maxSize?: number;
  /** New desired capacity (validated against the merged bounds). */
  desiredCapacity?: number;
  /** New template; only instances launched afterwards use it. */
  template?: TemplateRef;
  /** New zone list. */
  zones?: string[];
  /** Tags to add or overwrite. */
  tags?: Tags;
  /** New scale-in policy. */
  terminationPolicy?: TerminationPolicy;
}
/** Zod schema of {@link UpdateGroupInput}. */
export const UpdateGroupInputSchema: z.ZodType<UpdateGroupInput> = z.object({
  minSize: CountSchema.optional(),
  maxSize: CountSchema.optional(),
  desiredCapacity: CountSchema.optional(),
  template: TemplateRefSchema.optional(),
  zones: z.array(z.string().min(1)).min(1).optional(),
  tags: TagsSchema.optional(),
  terminationPolicy: TerminationPolicySchema.optional(),
});

/** Preferences of `startInstanceRefresh`. */
export interface RefreshPreferences {
  /** Percentage of desired capacity that must stay healthy (0..100, default 90). At 100 the refresh surges one instance at a time. */
  minHealthyPercentage?: number;
  /** How long a new instance must have been running before it counts as healthy (default: the cloud's warm-up). */
  warmupMs?: number;
  /** Skip instances already on the group's template version (default true). */
  skipMatching?: boolean;
}
/** Zod schema of {@link RefreshPreferences}. */
export const RefreshPreferencesSchema: z.ZodType<RefreshPreferences> = z.object({
  minHealthyPercentage: z.number().int().min(0).max(100).optional(),
  warmupMs: z.number().int().min(0).optional(),
  skipMatching: z.boolean().optional(),
});

/** Filter of the list calls: resources carrying all these tags (an empty value matches any value). */
export interface TagFilter {
  /** Required tags. */
  tags?: Tags;
}
/** Zod schema of {@link TagFilter}. */
export const TagFilterSchema: z.ZodType<TagFilter> = z.object({ tags: TagsSchema.optional() });

// ── responses ───────────────────────────────────────────────────────────────────────────────────

/** One immutable version of a launch template, as described (without its userData). */
export interface LaunchTemplateVersion {
  /** 1, 2, 3, … */
  version: number;
  /** Creation time, epoch ms. */
  createdAt: number;
  /** Machine image. */
  image: string;
  /** Instance size. */
  instanceType: string;
  /** Version tags. */
  tags: Tags;
  /** `spot` when its instances launch on reclaimable capacity. */
  marketType?: "spot";
}
/** Zod schema of {@link LaunchTemplateVersion}. */
export const LaunchTemplateVersionSchema: z.ZodType<LaunchTemplateVersion> = z.object({
  version: z.number().int().min(1),
  createdAt: z.number(),
  image: z.string(),
  instanceType: z.string(),
  tags: TagsSchema,
  marketType: z.literal("spot").optional(),
});

/** A launch template with its live versions (oldest first). */
export interface LaunchTemplate {
  /** `lt-…` */
  id: string;
  /** Unique name. */
  name: string;
  /** Highest version number ever created. */
  latestVersion: number;
  /** Creation time, epoch ms. */
  createdAt: number;
  /** Template tags. */
  tags: Tags;
  /** Versions not deleted yet, oldest first. */
  versions: LaunchTemplateVersion[];
}
/** Zod schema of {@link LaunchTemplate}. */
export const LaunchTemplateSchema: z.ZodType<LaunchTemplate> = z.object({
  id: z.string(),
  name: z.string(),
  latestVersion: z.number().int().min(1),
  createdAt: z.number(),
  tags: TagsSchema,
  versions: z.array(LaunchTemplateVersionSchema),
});

/** An instance as listed inside its group. */
export interface GroupInstance {
  /** `i-…`, unique in the cloud, never reused. */
  id: string;
  /** Zone it runs in. */
  zone: string;
  /** Lifecycle state. */
  state: InstanceState;
  /** Health-check result. */
  health: HealthStatus;
  /** Template ID it launched from. */
  templateId: string;
  /** Template version it launched from. */
  templateVersion: number;
  /** Launch time, epoch ms. */
  launchedAt: number;
  /** Excluded from scale-in victim choice. */
  protectedFromScaleIn: boolean;
  /** `spot` for an instance on reclaimable capacity (EC2's `InstanceLifecycle`); absent otherwise. */
  lifecycle?: "spot";
}
/** Zod schema of {@link GroupInstance}. */
export const GroupInstanceSchema: z.ZodType<GroupInstance> = z.object({
  id: z.string(),
  zone: z.string(),
  state: InstanceStateSchema,
  health: HealthStatusSchema,
  templateId: z.string(),
  templateVersion: z.number().int(),
  launchedAt: z.number(),
  protectedFromScaleIn: z.boolean(),
  lifecycle: z.literal("spot").optional(),
});

/** Something the group did, newest last (bounded history). */
export interface Activity {
  /** When, epoch ms. */
  at: number;
  /** What kind of thing happened. */
  kind: "launch" | "terminate" | "scale" | "refresh" | "error";
  /** Why, in words (includes the actor for out-of-band changes). */
  message: string;
  /** The instance concerned, if any. */
  instanceId?: string;
}
/** Zod schema of {@link Activity}. */
export const ActivitySchema: z.ZodType<Activity> = z.object({
  at: z.number(),
  kind: z.enum(["launch", "terminate", "scale", "refresh", "error"]),
  message: z.string(),
  instanceId: z.string().optional(),
});

/** A scaling group as described. Instance order is not stable between calls. */
export interface Group {
  /** ARN-like ID. */
  id: string;
  /** Unique name. */
  name: string;
  /** Lower bound of desired capacity. */
  minSize: number;
  /** Upper bound of desired capacity. */
  maxSize: number;
  /** Instances the group converges to. */
  desiredCapacity: number;
  /** Template for new instances. */
  template: TemplateRef;
  /** Zones instances spread over. */
  zones: string[];
  /** Group tags (propagated to instances). */
  tags: Tags;
  /** Scale-in victim policy. */
  terminationPolicy: TerminationPolicy;
  /** See {@link GroupStatus}. */
  status: GroupStatus;
  /** Why the status is `failed`, if it is. */
  statusMessage?: string;
  /** Creation time, epoch ms. */
  createdAt: number;
  /** Member instances, including terminated ones that still linger. */
  instances: GroupInstance[];
  /** Recent activities, oldest first. */
  activities: Activity[];
}
/** Zod schema of {@link Group}. */
export const GroupSchema: z.ZodType<Group> = z.object({
  id: z.string(),
  name: z.string(),
  minSize: z.number().int(),
  maxSize: z.number().int(),
  desiredCapacity: z.number().int(),
  template: TemplateRefSchema,
  zones: z.array(z.string()),
  tags: TagsSchema,
  terminationPolicy: TerminationPolicySchema,
  status: GroupStatusSchema,
  statusMessage: z.string().optional(),
  createdAt: z.number(),
  instances: z.array(GroupInstanceSchema),
  activities: z.array(ActivitySchema),
});

/** An instance as returned by `describeInstances`. */
export interface Instance extends GroupInstance {
  /** Group it belongs (or belonged) to; absent once detached. */
  groupName?: string;
  /** Tags (propagated from the group). */
  tags: Tags;
  /** Private address. */
  privateIp: string;
}
/** Zod schema of {@link Instance}. */
export const InstanceSchema: z.ZodType<Instance> = z.object({
  id: z.string(),
  zone: z.string(),
  state: InstanceStateSchema,
  health: HealthStatusSchema,
  templateId: z.string(),
  templateVersion: z.number().int(),
  launchedAt: z.number(),
  protectedFromScaleIn: z.boolean(),
  lifecycle: z.literal("spot").optional(),
  groupName: z.string().optional(),
  tags: TagsSchema,
  privateIp: z.string(),
});

/** An instance refresh as described. */
export interface InstanceRefresh {
  /** `ir-…` */
  id: string;
  /** Group being refreshed. */
  groupName: string;
  /** See {@link RefreshStatus}. */
  status: RefreshStatus;
  /** Why it ended the way it did, if not successful. */
  statusReason?: string;
  /** 0..100. */
  percentComplete: number;
  /** Start time, epoch ms. */
  startedAt: number;
  /** End time, epoch ms, once finished. */
  endedAt?: number;
  /** The group's template version when the refresh started (to tell a stale refresh). */
  startedWithVersion: number;
  /** Effective minimum healthy percentage. */
  minHealthyPercentage: number;
}
/** Zod schema of {@link InstanceRefresh}. */
export const InstanceRefreshSchema: z.ZodType<InstanceRefresh> = z.object({
  id: z.string(),
  groupName: z.string(),
  status: RefreshStatusSchema,
  statusReason: z.string().optional(),
  percentComplete: z.number().min(0).max(100),
  startedAt: z.number(),
  endedAt: z.number().optional(),
  startedWithVersion: z.number().int(),
  minHealthyPercentage: z.number(),
});
