/**
 * Deletion: delete the group (non-blocking), wait until it is gone, delete the template. NotFound
 * counts as done at every step. The finalizer is removed by the kit once this phase says so.
 *
 * @module
 */
import type { PoolGroup } from "../driver.js";
import { isFailureOf } from "../errors.js";
import { liveInstances } from "../instances.js";
import type { PoolPhase } from "../phase.js";
import { PoolReasons } from "../reasons.js";
import type { PoolScope } from "../scope.js";
import { modelInGroup, templateMethods } from "../steps/driver-shape.js";
import { pruneStoredUserData } from "../steps/user-data.js";

/**
 * MachinePool Machines: once the group is gone, so are the instances; the InfraMachines go too
 * (the garbage collector would take them after the pool, but not every cluster runs one, and a
 * Machine being deleted waits for its InfraMachine).
 */
async function releaseInfraMachines<Spec, Settings>(scope: PoolScope<Spec, Settings>) {
  const kind = scope.options.machines;
  const api = scope.api.machines;
  if (!kind || !api) return;
  const { infraMachines } = await api.list();
  for (const im of infraMachines) {
    if (im.metadata?.finalizers?.includes(kind.finalizer)) await api.removeFinalizer(im);
    if (!im.metadata?.deletionTimestamp) await api.delete(im);
  }
  if (infraMachines.length > 0) {
    scope.log.info(
      { infraMachines: infraMachines.length },
      "group deleted; InfraMachines released",
    );
  }
}

/** Deletes the group, then the template. */
export const teardownPhase: PoolPhase<unknown, unknown, never, "teardown"> = {
  name: "teardown",
  reads: [],
  writes: ["teardown"],
  async run(scope) {
    let group: PoolGroup<unknown> | undefined;
    try {
      group = await scope.call("getGroup", (ctx) => scope.driver.getGroup(ctx));
    } catch (error) {
      if (!isFailureOf(error, "notFound")) throw error;
    }
    if (group) {
      if (group.status !== "deleting") {
        try {
          await scope.call("deleteGroup", (ctx) => scope.driver.deleteGroup(ctx));
        } catch (error) {
          if (!isFailureOf(error, "notFound")) throw error;
        }
        scope.events.normal("GroupDeleting", `deleting group ${group.id}`, {
          group: group.id,
          instances: liveInstances(group.instances).length,
        });
      }
      const remaining = liveInstances(group.instances).length;
      return {
        ready: {
          status: "False",
          reason: PoolReasons.Deleting,
          message: `waiting for group ${group.id} to be deleted (${remaining} instance${remaining === 1 ? "" : "s"} left)`,
        },
        requeueAfterMs: scope.options.pollMs,
      };
    }
    await releaseInfraMachines(scope);
    if (!modelInGroup(scope.driver)) {
      const { deleteTemplate } = templateMethods(scope.driver);
      try {
        await scope.call("deleteTemplate", (ctx) => deleteTemplate(ctx));
      } catch (error) {
        if (!isFailureOf(error, "notFound")) throw error;
      }
    }
    // Nothing names a stored payload any more: the store keeps none of this pool's.
    await pruneStoredUserData(scope, []);
    scope.events.normal(
      "Deleted",
      modelInGroup(scope.driver)
        ? "group deleted; finalizer removed"
        : "group and template deleted; finalizer removed",
    );
    scope.write("teardown", { deleted: true });
    return { ready: { status: "False", reason: PoolReasons.Deleting, message: "" } };
  },
};
