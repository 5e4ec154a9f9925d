/**
 * The example provider's second driver: the same `FakeCloudMachinePool` kind on a cloud whose model
 * lives in the group (the fake cloud's scale-set API, shaped like Azure VMSS). Read it next to
 * `driver.ts`: no template methods, the stamp stored as tags on the scale set's model, and each VM's
 * `latestModelApplied` reported as `latestModel`.
 *
 * @module
 */
import {
  DriverError,
  type GroupModelPoolDriver,
  type PoolContext,
  type PoolGroup,
  templateStampFromTags,
  templateStampToTags,
} from "@capi-ts/sdk";
// The cloud's own modules, not its index (which also exports the test bed's kubelet).
import { isCloudError } from "../cloud/errors.js";
import type { ScaleSet, ScaleSetClient } from "../cloud/scaleset.js";
import type { Tags } from "../cloud/schemas.js";
import {
  CLUSTER_TAG,
  type FakeCloudDriverOptions,
  type FakeCloudGroupSettings,
  fakeCloudDecisions,
  fakeCloudImage,
  fakeProviderId,
  POOL_TAG,
  resourceName,
} from "./driver.js";
import type { FakeCloudMachinePoolSpec } from "./spec.js";

type Ctx = PoolContext<FakeCloudMachinePoolSpec>;

/**
 * A {@link GroupModelPoolDriver} for the fake cloud's scale sets. Template inputs, settings, error
 * classification and capacity are the template driver's: only where the model lives differs.
 *
 * @example
 * ```ts
 * const cloud = new FakeScalingCloud({ clock });
 * const driver = fakeScaleSetDriver(scaleSetClient(cloud), { defaultZones: ["zone-a", "zone-b"] });
 * machinePoolController(driver, { manager, kind: FakeCloudMachinePool });
 * ```
 */
export function fakeScaleSetDriver(
  vmss: ScaleSetClient,
  options: Omit<FakeCloudDriverOptions, "nativeRollout"> = {},
): GroupModelPoolDriver<FakeCloudMachinePoolSpec, FakeCloudGroupSettings> {
  // The decisions that do not depend on where the model lives are shared with the template driver.
  const { templateInputs, groupSettings, groupBounds, classifyError, capacity } =
    fakeCloudDecisions(options);
  const name = (ctx: Ctx): string => resourceName(ctx.pool);
  const image = fakeCloudImage;
  const owner = (ctx: Ctx): Tags => ({
    [POOL_TAG]: `${ctx.pool.namespace}/${ctx.pool.name}`,
    [CLUSTER_TAG]: ctx.pool.clusterName,
  });

  return {
    model: "group",
    templateInputs,
    groupSettings,
    groupBounds,
    classifyError,
    capacity,

    async getGroup(ctx) {
      const set = await vmss.getScaleSet(name(ctx));
      if (!set) return undefined;
      if (set.tags[POOL_TAG] !== owner(ctx)[POOL_TAG]) {
        throw DriverError.terminal(
          "ResourceNotOwned",
          `scale set "${set.name}" belongs to ${set.tags[POOL_TAG] ?? "no pool"}; delete or rename it, or use another pool name`,
        );
      }
      return toPoolGroup(set, options.launchTime);
    },

    async createGroup(ctx, { replicas, settings, model, bounds = groupBounds(ctx) }) {
      if (!model) throw new TypeError("createGroup of a model-in-group driver needs the model");
      try {
        await vmss.createScaleSet({
          name: name(ctx),
          zones: settings.zones,
          minSize: bounds.min,
          maxSize: bounds.max,
          capacity: replicas,
          tags: owner(ctx),
          model: {
            image: image(ctx),
            instanceType: ctx.spec.instanceType,
            userData: model.userData,
            tags: templateStampToTags(model.stamp),
          },
        });
      } catch (error) {
        if (!isCloudError(error, "AlreadyExists")) throw error;
      }
    },

    async updateGroup(ctx, { bounds, replicas, settings, model }) {
      // Bounds and capacity in one update, checked together.
      await vmss.updateScaleSet(name(ctx), {
        ...(bounds ? { minSize: bounds.min, maxSize: bounds.max } : {}),
        ...(settings ? { zones: settings.zones } : {}),
        capacity: replicas,
        ...(model
          ? {
              model: {
                image: image(ctx),
                instanceType: ctx.spec.instanceType,
                userData: model.userData,
                tags: templateStampToTags(model.stamp),
              },
            }
          : {}),
      });
    },

    async deleteGroup(ctx) {
      await vmss.deleteScaleSet(name(ctx));
    },

    async deleteInstance(_ctx, instance, mode) {
      await vmss.deleteVm(instance.id, { decrementCapacity: mode === "shrink" });
    },
  };
}

function toPoolGroup(
  set: ScaleSet,
  launchTime: (cloudMs: number) => number = (ms) => ms,
): PoolGroup<FakeCloudGroupSettings> {
  return {
    id: set.id,
    status: set.status,
    message: set.statusMessage,
    desiredReplicas: set.capacity,
    minReplicas: set.minSize,
    maxReplicas: set.maxSize,
    templateVersion: undefined,
    modelStamp: templateStampFromTags(set.model.tags),
    settings: { zones: [...set.zones].sort() },
    instances: set.vms.map((vm) => ({
      id: vm.id,
      providerID: fakeProviderId(vm.zone, vm.id),
      state: vm.state,
      templateVersion: undefined,
      createdAt: launchTime(vm.launchedAt),
      zone: vm.zone,
      healthy: vm.health === "healthy",
      latestModel: vm.latestModelApplied,
    })),
  };
}
