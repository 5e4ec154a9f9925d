/**
 * The `prune` phase: once the pool is where it should be (nothing outdated, nothing planned), deletes
 * the template versions nothing uses.
 *
 * @module
 */
import type { PoolPhase } from "../phase.js";
import { pruneVersions } from "../steps/prune-versions.js";

/** Prunes unused template versions once the pool is where it should be. */
export const prunePhase: PoolPhase<unknown, unknown, "scale" | "template" | "group", never> = {
  name: "prune",
  reads: ["scale", "template", "group"],
  writes: [],
  async run(scope) {
    const { plan, outdated } = scope.read("scale");
    if (plan.outdated !== 0 || plan.actions.length !== 0) return undefined;
    if (scope.options.useNativeRollout && scope.driver.nativeRollout && outdated > 0) {
      return undefined;
    }
    await pruneVersions(scope, scope.read("template").versions, scope.read("group").group);
    return undefined;
  },
};
