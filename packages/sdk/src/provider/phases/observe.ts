/**
 * Reads the cloud once per reconcile: template versions and the group with its instances. Stops on
 * duplicate providerIDs (one Node would stand for several instances) and publishes a group that is
 * being deleted out of band.
 *
 * @module
 */

import { liveInstances } from "../instances.js";
import type { PoolPhase } from "../phase.js";
import { PoolReasons } from "../reasons.js";
import { stopRunaway } from "../runaway.js";
import { instanceWithoutModelState, modelInGroup, templateMethods } from "../steps/driver-shape.js";
import { publishInstances } from "../steps/publish-instances.js";

/** Reads template versions and the group; refuses duplicate providerIDs. */
export const observePhase: PoolPhase<unknown, unknown, never, "observed"> = {
  name: "observe",
  reads: [],
  writes: ["observed"],
  async run(scope) {
    const driver = scope.driver;
    const versions = modelInGroup(driver)
      ? []
      : await scope.call("getTemplate", (ctx) => templateMethods(driver).getTemplate(ctx));
    const group = await scope.call("getGroup", (ctx) => scope.driver.getGroup(ctx));
    scope.write("observed", { versions, group: group ?? null });
    if (!group) return undefined;
    const now = scope.clock.now();
    for (const instance of group.instances) {
      if (instance.state === "terminating" || instance.state === "terminated") {
        scope.memory.forget(instance.providerID, now);
      }
    }
    const owners = new Map<string, string[]>();
    for (const instance of liveInstances(group.instances)) {
      if (instance.providerID === "") continue;
      owners.set(instance.providerID, [...(owners.get(instance.providerID) ?? []), instance.id]);
    }
    const duplicates = [...owners].filter(([, ids]) => ids.length > 1);
    if (duplicates.length > 0) {
      const [id, ids] = duplicates[0] as [string, string[]];
      return stopRunaway(
        scope,
        PoolReasons.DuplicateProviderIDs,
        `instances ${ids.join(", ")} report the same providerID ${id}${duplicates.length > 1 ? ` (and ${duplicates.length - 1} more duplicated IDs)` : ""}; each instance needs its own, byte for byte as on its Node`,
        false,
      );
    }
    const unknown = instanceWithoutModelState(driver, group);
    if (unknown !== undefined) {
      return stopRunaway(
        scope,
        PoolReasons.InstanceModelUnknown,
        `instance ${unknown} has no latestModel: a driver with model "group" must say for every instance whether it runs the group's latest model`,
        false,
      );
    }
    if (group.status === "deleting") {
      // Publish what goes away, so its IDs leave the list as the instances terminate.
      publishInstances(scope, group, false);
      return {
        ready: {
          status: "False",
          reason: PoolReasons.GroupDeleting,
          message: `group ${group.id} is being deleted outside the controller; it is recreated once gone`,
        },
        requeueAfterMs: scope.options.pollMs,
      };
    }
    return undefined;
  },
};
