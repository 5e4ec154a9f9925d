/**
 * Reads the cloud once per reconcile: template versions and the group with its instances. Stops on
 * duplicate providerIDs (one Node would stand for several instances) and on providerIDs no Node can
 * carry (whitespace, control or format characters), and publishes a group that is being deleted out
 * of band.
 *
 * @module
 */

import { claimedElsewhere } from "../claims.js";
import { duplicateProviderIDs, invalidProviderIDs } from "../instance-checks.js";
import { liveInstances } from "../instances.js";
import type { PoolPhase } from "../phase.js";
import { PoolReasons } from "../reasons.js";
import { stopRunaway } from "../runaway.js";
import { instanceWithoutModelState, modelInGroup, templateMethods } from "../steps/driver-shape.js";
import { publishInstances } from "../steps/publish-instances.js";

/** Reads template versions and the group; refuses duplicate and unprintable providerIDs. */
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
        scope.memory.markDeparted(instance.providerID, now);
      }
    }
    const live = liveInstances(group.instances);
    const duplicates = duplicateProviderIDs(live);
    if (duplicates !== undefined) {
      return stopRunaway(scope, PoolReasons.DuplicateProviderIDs, duplicates, false);
    }
    // Published, such an ID would reach core, the Nodes' index and every message that names it.
    const invalid = invalidProviderIDs(live);
    if (invalid !== undefined) {
      return stopRunaway(scope, PoolReasons.InvalidProviderID, invalid, false);
    }
    // Another pool's instance in this pool's answer: publishing it would hand its Node to this pool
    // (taints, labels, drain) and let this pool delete it. Nothing of this pool runs until it is gone.
    const claims = await scope.api.claimedProviderIDs?.();
    const claimed = claims ? claimedElsewhere(poolName(scope), live, claims) : undefined;
    if (claimed !== undefined) {
      return stopRunaway(scope, PoolReasons.ProviderIDOfOtherPool, claimed, false);
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

function poolName(scope: { readonly pool: PoolObjectLike }): string {
  const meta = scope.pool.metadata;
  return `${scope.pool.kind ?? "pool"} ${meta?.namespace ?? ""}/${meta?.name ?? ""}`;
}

interface PoolObjectLike {
  readonly kind?: string;
  readonly metadata?: { readonly name?: string; readonly namespace?: string };
}
