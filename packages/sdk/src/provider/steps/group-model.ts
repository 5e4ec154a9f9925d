/**
 * The model half of the `template` phase, for drivers whose model lives in the group (`model:
 * "group"`: Azure VM scale sets, GCE MIGs set in place): the group's model must carry exactly the
 * target stamp (updated if not), and an instance is up to date when the cloud says it runs the latest
 * model — or when it ran the current spec before a change that only rotated the bootstrap token. No
 * template version is invented.
 *
 * @module
 */
import type { PoolGroup, TemplateStamp } from "../driver.js";
import { liveInstances } from "../instances.js";
import type { BootstrapSection, PhaseResult, TemplateSection } from "../phase.js";
import { PoolReasons } from "../reasons.js";
import { countedSinceRelease, MAX_UNCONFIRMED_TEMPLATE_VERSIONS, stopRunaway } from "../runaway.js";
import type { PoolScope } from "../scope.js";
import { stableStringify, stampIsCurrent, stampIsExact } from "../stamp.js";
import { modelVersionName } from "./driver-shape.js";
import { userDataFor } from "./user-data.js";

/** What {@link reconcileGroupModel} works from: the target, the group as read, the bootstrap data. */
export interface GroupModelInput<Settings> {
  /** The stamp the model must carry (`desired.stamp`). */
  readonly target: TemplateStamp;
  /** The group as `observe` read it, or `null`. */
  readonly group: PoolGroup<Settings> | null;
  /** The bootstrap data the model is updated with. */
  readonly bootstrap: BootstrapSection;
}

/**
 * Ensures the group's model carries the target stamp and decides which instances are up to date.
 * Without a group yet, only names the model (the group phase creates the group with it). Returns
 * the `template` section, or the result that stops a runaway.
 */
export async function reconcileGroupModel<Spec, Settings>(
  scope: PoolScope<Spec, Settings>,
  input: GroupModelInput<Settings>,
): Promise<TemplateSection | PhaseResult> {
  const { target, group, bootstrap } = input;
  const version = { version: modelVersionName(target), stamp: target };
  if (!group) return { version, versions: [], isUpToDate: () => true };
  const memory = scope.memory;
  if (stampIsExact(group.modelStamp, target)) {
    memory.templateCreates = undefined;
    const tokenOnlyCurrent = memory.tokenOnlyCurrent;
    return {
      version,
      versions: [],
      isUpToDate: (instance) =>
        instance.latestModel === true || tokenOnlyCurrent?.has(instance.id) === true,
    };
  }
  const targetKey = stableStringify(target);
  const counted = countedSinceRelease(memory, memory.templateCreates);
  const updates = counted?.target === targetKey ? counted.versions : [];
  if (updates.length >= MAX_UNCONFIRMED_TEMPLATE_VERSIONS) {
    return stopRunaway(
      scope,
      PoolReasons.ModelStampNotStored,
      `the group's model was updated ${updates.length} times with a stamp that getGroup never reports in modelStamp; store the stamp with the model (templateStampToTags on the scale set) and return it (templateStampFromTags)`,
    );
  }
  const tokenOnly = stampIsCurrent(group.modelStamp, target);
  const previous = memory.tokenOnlyCurrent;
  // Instances that run the current spec now keep counting as current after a token-only change.
  const tokenOnlyCurrent = tokenOnly
    ? new Set(
        liveInstances(group.instances)
          .filter((i) => i.latestModel === true || previous?.has(i.id) === true)
          .map((i) => i.id),
      )
    : undefined;
  memory.tokenOnlyCurrent = tokenOnlyCurrent;
  const model = await userDataFor(scope, "updateGroup", bootstrap, target);
  await scope.call("updateGroup", (ctx) => scope.driver.updateGroup(ctx, { model }));
  memory.templateCreates = {
    target: targetKey,
    versions: [...updates, version.version],
    releases: memory.runawayReleases,
  };
  scope.events.normal(
    "GroupModelUpdated",
    tokenOnly
      ? "bootstrap data changed (token rotation): the group's model is updated, instances are kept"
      : group.modelStamp
        ? "template inputs or bootstrap secret changed: the group's model is updated, rolling out"
        : "the group's model has no stamp: updating it, rolling out",
  );
  // No instance runs the model just written, whatever the read said: only the token-only ones count.
  return {
    version,
    versions: [],
    isUpToDate: (instance) => tokenOnlyCurrent?.has(instance.id) === true,
  };
}
