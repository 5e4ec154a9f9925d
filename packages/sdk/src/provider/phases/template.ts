/**
 * The template phase: makes sure the newest template version carries exactly the target stamp
 * (creating one if not), and says which instances are up to date. Stops a runaway when versions the
 * kit created never show up with their stamp.
 *
 * @module
 */
import type { TemplateStamp, TemplateVersion } from "../driver.js";
import { isFailureOf } from "../errors.js";
import type { PoolPhase } from "../pipeline.js";
import { PoolReasons } from "../reasons.js";
import { MAX_UNCONFIRMED_TEMPLATE_VERSIONS, stopRunaway } from "../runaway.js";
import type { PoolScope } from "../scope.js";
import { prunableVersions, stableStringify, stampIsCurrent, stampIsExact } from "../stamp.js";
import { need } from "../state.js";
import { modelInGroup, reconcileGroupModel, templateMethods } from "./model.js";

function describeStampChange(previous: TemplateStamp | undefined, target: TemplateStamp): string {
  if (!previous) return "the previous version has no stamp: rolling out";
  const parts: string[] = [];
  if (previous.specHash !== target.specHash) parts.push("template inputs changed");
  if (previous.bootstrapRef !== target.bootstrapRef) parts.push("bootstrap secret changed");
  return `${parts.join(" and ")}: rolling out`;
}

/**
 * Deletes template versions no instance and no group uses (never the newest). A version the cloud
 * still considers in use (`waiting`) is pruned on a later pass.
 */
export async function pruneVersions<Spec, Settings>(
  scope: PoolScope<Spec, Settings>,
  versions: readonly TemplateVersion[],
): Promise<void> {
  const group = scope.state.group ?? undefined;
  if (modelInGroup(scope.driver)) return;
  const prunable = prunableVersions(versions, group?.templateVersion, group?.instances ?? []);
  if (prunable.length === 0) return;
  const { deleteTemplate } = templateMethods(scope.driver);
  try {
    await scope.call("deleteTemplate", (ctx) => deleteTemplate(ctx, prunable));
    scope.events.normal(
      "TemplateVersionsPruned",
      `deleted unused template versions ${prunable.join(", ")}`,
      { versions: prunable },
    );
  } catch (error) {
    if (!isFailureOf(error, "waiting")) throw error;
    scope.log.debug(
      { versions: prunable, reason: error.failure.reason },
      "template versions still in use",
    );
  }
}

/**
 * Ensures the target template version and decides which instances are up to date; for a driver with
 * `model: "group"`, the group's model instead ({@link reconcileGroupModel}).
 */
export const templatePhase: PoolPhase<unknown, unknown> = {
  name: "template",
  async run(scope) {
    if (modelInGroup(scope.driver)) return reconcileGroupModel(scope);
    const { createTemplateVersion } = templateMethods(scope.driver);
    let versions = need(scope.state.versions, "template versions", "observe");
    const target = need(scope.state.target, "target stamp", "desiredState");
    const bootstrap = scope.state.bootstrap ?? {
      userData: "",
      format: "cloud-config" as const,
      secretRef: "",
    };
    const targetKey = stableStringify(target);
    let newest: TemplateVersion | undefined = versions[versions.length - 1];
    if (newest && stampIsExact(newest.stamp, target)) {
      scope.memory.templateCreates = undefined;
    } else {
      const created =
        scope.memory.templateCreates?.target === targetKey
          ? scope.memory.templateCreates.versions
          : [];
      const listed = versions.find((v) => created.includes(v.version));
      if (listed) {
        return stopRunaway(
          scope,
          PoolReasons.TemplateStampNotStored,
          `template version ${listed.version}, created with a stamp, is listed ${listed.stamp ? "with a different stamp" : "without it"}${listed === newest ? "" : " and is not the newest"}; store the stamp with the version (templateStampToTags) and return it from getTemplate, oldest version first`,
        );
      }
      if (created.length >= MAX_UNCONFIRMED_TEMPLATE_VERSIONS) {
        return stopRunaway(
          scope,
          PoolReasons.TemplateStampNotStored,
          `template versions ${created.join(", ")} were created but getTemplate never lists them; return every version from getTemplate, oldest first`,
        );
      }
      const previous = newest;
      // Prune first: a version limit would otherwise make the create fail for good.
      await pruneVersions(scope, versions);
      newest = await scope.call("createTemplateVersion", (ctx) =>
        createTemplateVersion(ctx, {
          userData: bootstrap.userData,
          format: bootstrap.format,
          stamp: target,
        }),
      );
      scope.memory.templateCreates = { target: targetKey, versions: [...created, newest.version] };
      versions = [...versions, newest];
      scope.state.versions = versions;
      const why = !previous
        ? "initial template"
        : stampIsCurrent(previous.stamp, target)
          ? "bootstrap data changed (token rotation): instances are kept"
          : describeStampChange(previous.stamp, target);
      scope.events.normal("TemplateVersionCreated", `template version ${newest.version}: ${why}`, {
        version: newest.version,
      });
    }
    scope.state.targetVersion = newest;
    const stampOf = new Map(versions.map((v) => [v.version, v.stamp]));
    scope.state.isUpToDate = (instance) =>
      instance.templateVersion !== undefined &&
      stampIsCurrent(stampOf.get(instance.templateVersion), target);
    return undefined;
  },
};
