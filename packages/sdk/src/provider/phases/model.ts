/**
 * The model phase of drivers whose model lives in the group (`model: "group"`: Azure VM scale sets,
 * GCE MIGs set in place): the group's model must carry exactly the target stamp (updated if not), and
 * an instance is up to date when the cloud says it runs the latest model — or when it ran the current
 * spec before a change that only rotated the bootstrap token. No template version is invented.
 *
 * @module
 */
import type {
  AnyPoolDriver,
  GroupModelPoolDriver,
  PoolDriver,
  TemplateVersion,
} from "../driver.js";
import { liveInstances } from "../instances.js";
import { PoolReasons } from "../reasons.js";
import { MAX_UNCONFIRMED_TEMPLATE_VERSIONS, stopRunaway } from "../runaway.js";
import type { PhaseResult, PoolScope } from "../scope.js";
import { shortHash, stableStringify, stampIsCurrent, stampIsExact } from "../stamp.js";
import { need } from "../state.js";

/** Whether the driver keeps its model in the group. */
export function modelInGroup<Spec, Settings>(
  driver: AnyPoolDriver<Spec, Settings>,
): driver is GroupModelPoolDriver<Spec, Settings> {
  return driver.model === "group";
}

/** The template methods of a `model: "template"` driver (checked when the controller is built). */
export function templateMethods<Spec, Settings>(
  driver: AnyPoolDriver<Spec, Settings>,
): Required<
  Pick<PoolDriver<Spec, Settings>, "getTemplate" | "createTemplateVersion" | "deleteTemplate">
> {
  const { getTemplate, createTemplateVersion, deleteTemplate } = driver as Partial<
    PoolDriver<Spec, Settings>
  >;
  if (!getTemplate || !createTemplateVersion || !deleteTemplate) {
    throw new TypeError(
      `the driver has model "${driver.model ?? "template"}" but lacks ${[
        getTemplate ? "" : "getTemplate",
        createTemplateVersion ? "" : "createTemplateVersion",
        deleteTemplate ? "" : "deleteTemplate",
      ]
        .filter(Boolean)
        .join(", ")}; implement them, or set model: "group" if the model lives in the group`,
    );
  }
  return {
    getTemplate: getTemplate.bind(driver),
    createTemplateVersion: createTemplateVersion.bind(driver),
    deleteTemplate: deleteTemplate.bind(driver),
  };
}

/**
 * Checks a driver's shape when the controller is built: template methods for `model: "template"`,
 * a known model location.
 */
export function checkDriverModel<Spec, Settings>(driver: AnyPoolDriver<Spec, Settings>): void {
  const model = driver.model ?? "template";
  if (model !== "template" && model !== "group") {
    throw new TypeError(
      `machinePoolController: driver.model must be "template" or "group", got ${JSON.stringify(model)}`,
    );
  }
  if (model === "template") templateMethods(driver);
}

/** The name the kit gives a model in `GroupIntent.templateVersion` (derived from its stamp). */
export function modelVersionName(stamp: TemplateVersion["stamp"]): string {
  return `model-${shortHash(stableStringify(stamp ?? null)).slice(0, 12)}`;
}

/**
 * Ensures the group's model carries the target stamp and decides which instances are up to date.
 * Without a group yet, only names the model (the group phase creates the group with it).
 */
export async function reconcileGroupModel<Spec, Settings>(
  scope: PoolScope<Spec, Settings>,
): Promise<PhaseResult | undefined> {
  const target = need(scope.state.target, "target stamp", "desiredState");
  const observed = need(scope.state.group, "group", "observe");
  scope.state.targetVersion = { version: modelVersionName(target), stamp: target };
  if (!observed) {
    scope.state.isUpToDate = () => true;
    return undefined;
  }
  let group = observed;
  const memory = scope.memory;
  if (!stampIsExact(group.modelStamp, target)) {
    const targetKey = stableStringify(target);
    const updates =
      memory.templateCreates?.target === targetKey ? memory.templateCreates.versions : [];
    if (updates.length >= MAX_UNCONFIRMED_TEMPLATE_VERSIONS) {
      return stopRunaway(
        scope,
        PoolReasons.ModelStampNotStored,
        `the group's model was updated ${updates.length} times with a stamp that getGroup never reports in modelStamp; store the stamp with the model (templateStampToTags on the scale set) and return it (templateStampFromTags)`,
      );
    }
    const tokenOnly = stampIsCurrent(group.modelStamp, target);
    const live = liveInstances(group.instances);
    const previous = memory.tokenOnlyCurrent;
    // Instances that run the current spec now keep counting as current after a token-only change.
    memory.tokenOnlyCurrent = tokenOnly
      ? new Set(
          live
            .filter((i) => i.latestModel === true || previous?.has(i.id) === true)
            .map((i) => i.id),
        )
      : undefined;
    const bootstrap = scope.state.bootstrap ?? {
      userData: "",
      format: "cloud-config" as const,
      secretRef: "",
    };
    await scope.call("updateGroup", (ctx) =>
      scope.driver.updateGroup(ctx, {
        model: { userData: bootstrap.userData, format: bootstrap.format, stamp: target },
      }),
    );
    memory.templateCreates = {
      target: targetKey,
      versions: [...updates, modelVersionName(target)],
    };
    scope.events.normal(
      "GroupModelUpdated",
      tokenOnly
        ? "bootstrap data changed (token rotation): the group's model is updated, instances are kept"
        : group.modelStamp
          ? "template inputs or bootstrap secret changed: the group's model is updated, rolling out"
          : "the group's model has no stamp: updating it, rolling out",
    );
    // What the next read will show: no instance runs the model just written.
    group = {
      ...group,
      modelStamp: target,
      instances: group.instances.map((i) => ({ ...i, latestModel: false })),
    };
    scope.state.group = group;
  } else {
    memory.templateCreates = undefined;
  }
  const tokenOnlyCurrent = memory.tokenOnlyCurrent;
  scope.state.isUpToDate = (instance) =>
    instance.latestModel === true || tokenOnlyCurrent?.has(instance.id) === true;
  return undefined;
}

/**
 * A live instance of a `model: "group"` driver without `latestModel`: the kit could not tell whether
 * to replace it. Returns its ID, if there is one.
 */
export function instanceWithoutModelState<Spec, Settings>(
  scope: PoolScope<Spec, Settings>,
): string | undefined {
  const group = scope.state.group;
  if (!group || !modelInGroup(scope.driver)) return undefined;
  return liveInstances(group.instances).find((i) => typeof i.latestModel !== "boolean")?.id;
}
