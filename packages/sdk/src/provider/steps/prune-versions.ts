/**
 * Pruning template versions no instance and no group uses (never the newest): a step of `template`
 * (before it creates a version, so that a version limit cannot make the create fail for good) and of
 * `prune` (once the pool is where it should be).
 *
 * @module
 */
import type { PoolGroup, TemplateVersion } from "../driver.js";
import { isFailureOf } from "../errors.js";
import type { PoolScope } from "../scope.js";
import { prunableVersions } from "../stamp.js";
import { modelInGroup, templateMethods } from "./driver-shape.js";
import { pruneStoredUserData } from "./user-data.js";

/**
 * Deletes the versions of `versions` that neither `group` nor its instances use, never the newest,
 * and returns the versions left. A version the cloud still considers in use (`waiting`) is kept
 * and pruned on a later pass.
 */
export async function pruneVersions<Spec, Settings>(
  scope: PoolScope<Spec, Settings>,
  versions: readonly TemplateVersion[],
  group: PoolGroup<Settings> | null,
): Promise<readonly TemplateVersion[]> {
  if (modelInGroup(scope.driver)) return versions;
  const prunable = prunableVersions(versions, group?.templateVersion, group?.instances ?? []);
  if (prunable.length === 0) return versions;
  const { deleteTemplate } = templateMethods(scope.driver);
  try {
    await scope.call("deleteTemplate", (ctx) => deleteTemplate(ctx, prunable));
    scope.events.normal(
      "TemplateVersionsPruned",
      `deleted unused template versions ${prunable.join(", ")}`,
      { versions: prunable },
    );
    const remaining = versions.filter((v) => !prunable.includes(v.version));
    await pruneStoredUserData(scope, remaining);
    return remaining;
  } catch (error) {
    if (!isFailureOf(error, "waiting")) throw error;
    scope.log.debug(
      { versions: prunable, reason: error.failure.reason },
      "template versions still in use",
    );
    return versions;
  }
}
