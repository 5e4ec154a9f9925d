/**
 * A VM-scale-set view of the fake cloud, the shape of Azure VMSS (and of a GCE MIG updated in place):
 * the model (image, size, custom data, tags) lives inside the scale set, there are no template
 * versions to manage, and each VM reports `latestModelApplied`. Deleted VMs leave the list as soon as
 * they are gone. Every call goes through the fake cloud's logged client, so faults, throttling and
 * call counts apply as they do to the scaling-group API.
 *
 * @module
 */
import type { FakeScalingCloud, ScalingCloudClient } from "./cloud.js";
import { isCloudError } from "./errors.js";
import type { HealthStatus, InstanceState, Tags } from "./schemas.js";

/** The model of a scale set: what its VMs are built from. */
export interface ScaleSetModel {
  /** The image every VM boots from, e.g. `ubuntu-24.04`; a change makes existing VMs outdated. */
  image: string;
  /** VM size. */
  instanceType: string;
  /** Custom data (bootstrap data). Write-only: never returned. */
  userData: string;
  /** Tags of the model (where a provider keeps what the model was built from). */
  tags?: Tags;
}

/** A VM of a scale set. */
export interface ScaleSetVm {
  /** The VM's instance ID, as the cloud's instance calls take it. */
  id: string;
  /** The zone the VM runs in, one of the scale set's zones. */
  zone: string;
  /** Lifecycle state (terminated VMs are not listed). */
  state: Exclude<InstanceState, "terminated">;
  /** What the VM's health probe last said; an `unhealthy` VM gets replaced. */
  health: HealthStatus;
  /** Launch time, epoch ms. */
  launchedAt: number;
  /** Whether the VM runs the scale set's current model. */
  latestModelApplied: boolean;
}

/** A scale set as `getScaleSet` returns it. */
export interface ScaleSet {
  /** The scale set's ID in the cloud, fixed at creation. */
  id: string;
  /** The name given at creation. */
  name: string;
  /** Lower bound of the capacity. */
  minSize: number;
  /** Upper bound of the capacity. */
  maxSize: number;
  /** Desired number of VMs. */
  capacity: number;
  /** The zones VMs are spread over, as set at creation or by the last update. */
  zones: string[];
  /** Tags of the scale set (ownership). */
  tags: Tags;
  /** The current model, without custom data. */
  model: Omit<ScaleSetModel, "userData">;
  /** Provisioning state. */
  status: "creating" | "active" | "updating" | "deleting" | "failed";
  /** The cloud's explanation of the state. */
  statusMessage?: string;
  /** VMs, any order. */
  vms: ScaleSetVm[];
}

/** Request of {@link ScaleSetClient.createScaleSet}. */
export interface CreateScaleSetInput {
  /** Name of the scale set; no two live scale sets share one. */
  name: string;
  /** Lower bound. */
  minSize: number;
  /** Upper bound. */
  maxSize: number;
  /** Desired VMs (default: `minSize`). */
  capacity?: number;
  /** The zones VMs are spread over; at least one. */
  zones: string[];
  /** Tags of the scale set. */
  tags?: Tags;
  /** What the VMs are built from (image, size, bootstrap data, tags). */
  model: ScaleSetModel;
}

/** Request of {@link ScaleSetClient.updateScaleSet}: only the fields present change. */
export interface UpdateScaleSetInput {
  /** New lower bound. */
  minSize?: number;
  /** New upper bound. */
  maxSize?: number;
  /** New desired VMs. */
  capacity?: number;
  /** The zone list to use from now on, replacing the old one. */
  zones?: string[];
  /** New model: VMs launched from now on use it; existing VMs report `latestModelApplied: false`. */
  model?: ScaleSetModel;
}

/** The scale-set API. Errors are the fake cloud's {@link CloudError}s. */
export interface ScaleSetClient {
  /** Creates a scale set; VMs launch asynchronously. `AlreadyExists`, `ValidationError`. */
  createScaleSet(input: CreateScaleSetInput): Promise<void>;
  /** A scale set, or `undefined` once it is gone. */
  getScaleSet(name: string): Promise<ScaleSet | undefined>;
  /** Changes a scale set. `NotFound`, `ValidationError`, `ScalingActivityInProgress`. */
  updateScaleSet(name: string, input: UpdateScaleSetInput): Promise<void>;
  /** Deletes a scale set and its VMs (asynchronously). `NotFound` once it is gone. */
  deleteScaleSet(name: string): Promise<void>;
  /** Deletes one VM; `decrementCapacity: false` makes the scale set launch a replacement. `NotFound`. */
  deleteVm(vmId: string, options: { decrementCapacity: boolean }): Promise<void>;
}

/**
 * A {@link ScaleSetClient} over a {@link FakeScalingCloud}: the model is kept in a launch template
 * hidden behind the scale set (its unused versions are pruned on every model change, and it is
 * deleted with the scale set), so the provider never sees a template version.
 *
 * @example
 * ```ts
 * const cloud = new FakeScalingCloud({ clock });
 * const vmss = scaleSetClient(cloud);
 * await vmss.createScaleSet({ name: "pool-a", minSize: 0, maxSize: 5, capacity: 2, zones: ["zone-a"],
 *   model: { image: "img-1", instanceType: "small", userData: "#cloud-config\n" } });
 * ```
 */
export function scaleSetClient(cloud: FakeScalingCloud): ScaleSetClient {
  const api: ScalingCloudClient = cloud.client;

  const pruneUnused = async (name: string): Promise<void> => {
    const template = cloud.inspect.templates().find((t) => t.name === name);
    const group = cloud.inspect.group(name);
    if (!template || !group) return;
    const used = new Set<number>([template.latestVersion]);
    if (typeof group.template.version === "number") used.add(group.template.version);
    for (const instance of cloud.inspect.instances({ group: name })) {
      if (instance.state !== "terminated") used.add(instance.templateVersion);
    }
    const unused = template.versions.map((v) => v.version).filter((v) => !used.has(v));
    if (unused.length === 0) return;
    try {
      await api.deleteLaunchTemplateVersions(name, unused);
    } catch (error) {
      if (!isCloudError(error, "ResourceInUse")) throw error;
    }
  };

  return {
    async createScaleSet(input) {
      const { model } = input;
      const data = {
        image: model.image,
        instanceType: model.instanceType,
        userData: model.userData,
        tags: model.tags ?? {},
      };
      let version = 1;
      try {
        version = (await api.createLaunchTemplate({ name: input.name, data, tags: input.tags }))
          .latestVersion;
      } catch (error) {
        if (!isCloudError(error, "AlreadyExists")) throw error;
        version = (await api.createLaunchTemplateVersion(input.name, data)).version;
      }
      await api.createGroup({
        name: input.name,
        minSize: input.minSize,
        maxSize: input.maxSize,
        desiredCapacity: input.capacity,
        zones: input.zones,
        tags: input.tags,
        template: { id: input.name, version },
      });
    },

    async getScaleSet(name) {
      const group = await api.describeGroup(name);
      if (!group) {
        // The model goes with the scale set.
        const template = cloud.inspect.templates().find((t) => t.name === name);
        if (template) {
          try {
            await api.deleteLaunchTemplate(template.id);
          } catch (error) {
            if (!isCloudError(error, "NotFound")) throw error;
          }
        }
        return undefined;
      }
      const template = await api.describeLaunchTemplate(name);
      const current = group.template.version === "$Latest" ? undefined : group.template.version;
      const model = template?.versions.find((v) => v.version === current);
      return {
        id: group.id,
        name: group.name,
        minSize: group.minSize,
        maxSize: group.maxSize,
        capacity: group.desiredCapacity,
        zones: group.zones,
        tags: group.tags,
        model: {
          image: model?.image ?? "",
          instanceType: model?.instanceType ?? "",
          tags: model?.tags ?? {},
        },
        status: group.status,
        ...(group.statusMessage !== undefined ? { statusMessage: group.statusMessage } : {}),
        vms: group.instances
          .filter((i): i is typeof i & { state: ScaleSetVm["state"] } => i.state !== "terminated")
          .map((i) => ({
            id: i.id,
            zone: i.zone,
            state: i.state,
            health: i.health,
            launchedAt: i.launchedAt,
            latestModelApplied: i.templateVersion === current,
          })),
      };
    },

    async updateScaleSet(name, input) {
      let template: { id: string; version: number } | undefined;
      if (input.model) {
        const { model } = input;
        const created = await api.createLaunchTemplateVersion(name, {
          image: model.image,
          instanceType: model.instanceType,
          userData: model.userData,
          tags: model.tags ?? {},
        });
        template = { id: name, version: created.version };
      }
      await api.updateGroup(name, {
        ...(input.minSize !== undefined ? { minSize: input.minSize } : {}),
        ...(input.maxSize !== undefined ? { maxSize: input.maxSize } : {}),
        ...(input.capacity !== undefined ? { desiredCapacity: input.capacity } : {}),
        ...(input.zones !== undefined ? { zones: input.zones } : {}),
        ...(template ? { template } : {}),
      });
      if (template) await pruneUnused(name);
    },

    async deleteScaleSet(name) {
      await api.deleteGroup(name, { force: true });
    },

    async deleteVm(vmId, { decrementCapacity }) {
      await api.terminateInstanceInGroup(vmId, { decrementDesiredCapacity: decrementCapacity });
    },
  };
}

/**
 * providerIDs of a scale set's live VMs whose image or size differs from the scale set's current
 * model (a VM behind only by custom data, a token rotation, is not outdated). Unlogged, for tests.
 *
 * @example
 * ```ts
 * outdatedScaleSetProviderIds(cloud, "pool-a"); // ["fake:///zone-a/i-0001"]
 * ```
 */
export function outdatedScaleSetProviderIds(cloud: FakeScalingCloud, name: string): string[] {
  const template = cloud.inspect.templates().find((t) => t.name === name);
  const group = cloud.inspect.group(name);
  if (!template || !group || typeof group.template.version !== "number") return [];
  const versions = new Map(template.versions.map((v) => [v.version, v]));
  const current = versions.get(group.template.version);
  return cloud.inspect
    .instances({ group: name })
    .filter((i) => {
      if (i.state === "terminated") return false;
      const own = versions.get(i.templateVersion);
      return own?.image !== current?.image || own?.instanceType !== current?.instanceType;
    })
    .map((i) => i.providerID);
}
