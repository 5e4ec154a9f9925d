/**
 * The template phase: makes sure the newest template version carries exactly the target stamp
 * (creating one if not), and says which instances are up to date. Stops a runaway when versions the
 * kit created never show up with their stamp.
 *
 * @module
 */
import type { TemplateStamp, TemplateVersion } from "../driver.js";
import type { PoolPhase } from "../phase.js";
import { PoolReasons } from "../reasons.js";
import { countedSinceRelease, MAX_UNCONFIRMED_TEMPLATE_VERSIONS, stopRunaway } from "../runaway.js";
import { stableStringify, stampIsCurrent, stampIsExact } from "../stamp.js";
import { modelInGroup, templateMethods } from "../steps/driver-shape.js";
import { reconcileGroupModel } from "../steps/group-model.js";
import { pruneVersions } from "../steps/prune-versions.js";
import { userDataFor } from "../steps/user-data.js";

function describeStampChange(previous: TemplateStamp | undefined, target: TemplateStamp): string {
  if (!previous) return "the previous version has no stamp: rolling out";
  const parts: string[] = [];
  if (previous.specHash !== target.specHash) parts.push("template inputs changed");
  if (previous.bootstrapRef !== target.bootstrapRef) parts.push("bootstrap secret changed");
  return `${parts.join(" and ")}: rolling out`;
}

/**
 * Ensures the target template version and decides which instances are up to date; for a driver with
 * `model: "group"`, the group's model instead ({@link reconcileGroupModel}).
 */
export const templatePhase: PoolPhase<
  unknown,
  unknown,
  "observed" | "desired" | "bootstrap",
  "template"
> = {
  name: "template",
  reads: ["observed", "desired", "bootstrap"],
  writes: ["template"],
  async run(scope) {
    const observed = scope.read("observed");
    const target = scope.read("desired").stamp;
    const bootstrap = scope.read("bootstrap");
    if (modelInGroup(scope.driver)) {
      const outcome = await reconcileGroupModel(scope, {
        target,
        group: observed.group,
        bootstrap,
      });
      if ("ready" in outcome) return outcome;
      scope.write("template", outcome);
      return undefined;
    }
    const { createTemplateVersion } = templateMethods(scope.driver);
    let versions = observed.versions;
    const targetKey = stableStringify(target);
    let newest: TemplateVersion | undefined = versions[versions.length - 1];
    if (newest && stampIsExact(newest.stamp, target)) {
      scope.memory.templateCreates = undefined;
    } else {
      const counted = countedSinceRelease(scope.memory, scope.memory.templateCreates);
      const created = counted?.target === targetKey ? counted.versions : [];
      const listed = versions.find((v) => created.includes(v.version));
      if (listed) {
        return stopRunaway(
          scope,
          PoolReasons.TemplateStampNotStored,
          stampIsExact(listed.stamp, target)
            ? `template version ${listed.version}, created with the target stamp, is listed with it but not as the newest; return the versions from getTemplate oldest first`
            : `template version ${listed.version}, created with a stamp, is listed ${listed.stamp ? "with a different stamp" : "without it"}${listed === newest ? "" : " and is not the newest"}; store the stamp with the version (templateStampToTags) and return it from getTemplate, oldest version first`,
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
      // Prune first: a version limit would otherwise make the create fail for good. What it deleted
      // leaves the section, so that the prune phase does not delete it again.
      versions = await pruneVersions(scope, versions, observed.group);
      const input = await userDataFor(scope, "createTemplateVersion", bootstrap, target);
      newest = await scope.call("createTemplateVersion", (ctx) =>
        createTemplateVersion(ctx, input),
      );
      scope.memory.templateCreates = {
        target: targetKey,
        versions: [...created, newest.version],
        releases: scope.memory.runawayReleases,
      };
      versions = [...versions, newest];
      const why = !previous
        ? "initial template"
        : stampIsCurrent(previous.stamp, target)
          ? "bootstrap data changed (token rotation): instances are kept"
          : describeStampChange(previous.stamp, target);
      scope.events.normal("TemplateVersionCreated", `template version ${newest.version}: ${why}`, {
        version: newest.version,
      });
    }
    const stampOf = new Map(versions.map((v) => [v.version, v.stamp]));
    scope.write("template", {
      version: newest,
      versions,
      isUpToDate: (instance) =>
        instance.templateVersion !== undefined &&
        stampIsCurrent(stampOf.get(instance.templateVersion), target),
    });
    return undefined;
  },
};
