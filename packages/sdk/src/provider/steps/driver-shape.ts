/**
 * Predicates on the driver's shape: where its model lives (`model: "template"` or `"group"`), its
 * template methods, checked once when the controller is built, and what a group-model driver must
 * report of every instance.
 *
 * @module
 */
import type {
  AnyPoolDriver,
  GroupModelPoolDriver,
  PoolDriver,
  PoolGroup,
  TemplateVersion,
} from "../driver.js";
import { liveInstances } from "../instances.js";
import { shortHash, stableStringify } from "../stamp.js";

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
 * A live instance of a `model: "group"` driver without `latestModel`: the kit could not tell whether
 * to replace it. Returns its ID, if there is one.
 */
export function instanceWithoutModelState<Spec, Settings>(
  driver: AnyPoolDriver<Spec, Settings>,
  group: PoolGroup<Settings>,
): string | undefined {
  if (!modelInGroup(driver)) return undefined;
  return liveInstances(group.instances).find((i) => typeof i.latestModel !== "boolean")?.id;
}
