/**
 * The driver: how the kit's decisions become cloud calls. The kit decides what to do (scale,
 * roll out, replace, delete); the driver only translates.
 */
import {
  assertPoolOwns,
  DriverError,
  type PoolCapacity,
  type PoolContext,
  type PoolDriver,
  type PoolInstance,
  poolOwnerTags,
  templateStampFromTags,
  templateStampToTags,
} from "@capi-ts/sdk";
import { CloudNotFoundError, CloudUnauthorizedError } from "./cloud.js";
import type { FooEnvironment } from "./credentials.js";
import type { FooMachinePoolSpec } from "./kind.js";

/** Group settings the kit keeps in sync (compared as a whole: keep lists sorted). */
export interface FooGroupSettings {
  readonly zones: readonly string[];
}

/** The providerID scheme: exactly what the kubelet (or cloud-controller-manager) writes on the Node. */
export function providerIdOf(zone: string, instanceId: string): string {
  // TODO: your cloud's providerID format, byte for byte.
  return `foo:///${zone}/${instanceId}`;
}

/** One cloud group (and launch template) per pool: namespace and name, never the UID (clusterctl move). */
export function groupNameOf(ctx: Pick<PoolContext<unknown>, "pool">): string {
  return `${ctx.pool.namespace}-${ctx.pool.name}`;
}

/**
 * What one instance of each type offers, for the cluster-autoscaler's scale from zero (it builds the
 * Node of an empty pool from it). TODO: your cloud's instance types — from its catalog API, cached,
 * or a table like this one; `memory` and the rest as Kubernetes quantity strings.
 */
const INSTANCE_TYPES: Readonly<Record<string, PoolCapacity>> = {
  small: {
    capacity: { cpu: "2", memory: "4Gi", "ephemeral-storage": "20Gi", pods: "110" },
    nodeInfo: { architecture: "amd64", operatingSystem: "linux" },
  },
  large: {
    capacity: { cpu: "8", memory: "32Gi", "ephemeral-storage": "100Gi", pods: "110" },
    nodeInfo: { architecture: "amd64", operatingSystem: "linux" },
  },
};

/** The driver: every call goes through the pool's own client, `ctx.credentials` (src/credentials.ts). */
export function fooDriver(
  options: { defaultZones?: readonly string[] } = {},
): PoolDriver<FooMachinePoolSpec, FooGroupSettings, FooEnvironment> {
  const zonesOf = (ctx: PoolContext<FooMachinePoolSpec>) =>
    [
      ...(ctx.spec.zones ??
        (ctx.failureDomains.length > 0
          ? ctx.failureDomains
          : (options.defaultZones ?? ["zone-a"]))),
    ].sort();
  // The pool's own client, connected by the credentials hook with the credentials its Cluster names.
  const cloud = (ctx: PoolContext<FooMachinePoolSpec, FooEnvironment>) => ctx.credentials;
  return {
    // What makes instances outdated when it changes (a rollout replaces them).
    templateInputs: (ctx) => ({ instanceType: ctx.spec.instanceType }),
    groupSettings: (ctx) => ({ zones: zonesOf(ctx) }),
    // Scale from zero: the kit publishes this as status.capacity and status.nodeInfo at every replica
    // count. TODO: answer from your cloud's instance types (cache a catalog lookup: the kit asks on
    // every reconcile); undefined for a type you do not know.
    capacity: (ctx) => INSTANCE_TYPES[ctx.spec.instanceType],

    async getTemplate(ctx) {
      const name = groupNameOf(ctx);
      const template = await cloud(ctx).describeTemplate(name);
      if (!template) return [];
      // Owned resources only: a template of this name made by anyone else is never used or deleted.
      assertPoolOwns({ kind: "launch template", name, tags: template.tags }, ctx.pool);
      return template.versions.map((version) => ({
        version: version.version,
        stamp: templateStampFromTags(version.tags),
        createdAt: version.createdAt,
      }));
    },
    async createTemplateVersion(ctx, input) {
      if (input.format !== "cloud-config") {
        throw new DriverError({
          kind: "terminal",
          reason: "UnsupportedBootstrapFormat",
          message: `bootstrap format ${input.format} is not supported; use cloud-config`,
        });
      }
      const created = await cloud(ctx).createTemplateVersion(groupNameOf(ctx), {
        instanceType: ctx.spec.instanceType,
        userData: input.userData,
        tags: templateStampToTags(input.stamp),
        templateTags: poolOwnerTags(ctx.pool),
      });
      return { version: created.version, stamp: input.stamp, createdAt: created.createdAt };
    },
    async deleteTemplate(ctx, versions) {
      const name = groupNameOf(ctx);
      const template = await cloud(ctx).describeTemplate(name);
      if (!template) return;
      assertPoolOwns({ kind: "launch template", name, tags: template.tags }, ctx.pool);
      await cloud(ctx).deleteTemplate(name, versions);
    },

    async getGroup(ctx) {
      const group = await cloud(ctx).describeGroup(groupNameOf(ctx));
      if (!group) return undefined;
      // The kit deletes, scales and replaces only what getGroup reports: check ownership here.
      assertPoolOwns({ kind: "group", name: group.name, tags: group.tags }, ctx.pool);
      return {
        id: group.name,
        status: "active",
        desiredReplicas: group.desired,
        minReplicas: ctx.spec.minSize,
        maxReplicas: ctx.spec.maxSize,
        templateVersion: group.templateVersion,
        settings: { zones: [...group.zones].sort() },
        instances: group.instances.map(
          (instance): PoolInstance => ({
            id: instance.id,
            providerID: providerIdOf(instance.zone, instance.id),
            state: instance.state,
            templateVersion: instance.templateVersion,
            createdAt: instance.launchedAt,
            zone: instance.zone,
          }),
        ),
      };
    },
    createGroup: (ctx, intent) =>
      cloud(ctx).createGroup(groupNameOf(ctx), {
        // No replicas: an external autoscaler manages them, so send no desired size at all.
        ...(intent.replicas !== undefined ? { desired: intent.replicas } : {}),
        templateVersion: intent.templateVersion,
        zones: intent.settings.zones,
        tags: poolOwnerTags(ctx.pool),
      }),
    updateGroup: (ctx, update) =>
      cloud(ctx).updateGroup(groupNameOf(ctx), {
        ...(update.replicas !== undefined ? { desired: update.replicas } : {}),
        ...(update.templateVersion !== undefined
          ? { templateVersion: update.templateVersion }
          : {}),
        ...(update.settings ? { zones: update.settings.zones } : {}),
      }),
    deleteGroup: (ctx) => cloud(ctx).deleteGroup(groupNameOf(ctx)),
    deleteInstance: (ctx, instance, mode) =>
      cloud(ctx).terminateInstance(groupNameOf(ctx), instance.id, mode === "shrink"),

    classifyError(error) {
      // TODO: map your cloud SDK's errors: throttling → "throttled" (with retryAfterMs), quota and
      // invalid input → "terminal", missing → "notFound"; anything else stays transient.
      if (error instanceof CloudNotFoundError) {
        return { kind: "notFound", reason: "NotFound", message: error.message };
      }
      // The kit forgets the pool's client and resolves its credentials again at the next attempt.
      if (error instanceof CloudUnauthorizedError) {
        return { kind: "transient", reason: "CredentialsRejected", message: error.message };
      }
      return undefined;
    },
  };
}
