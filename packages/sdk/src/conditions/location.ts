import type { ConditionLike, ObjectWithConditions } from "./types.js";

/**
 * Which API generation an object's status follows, which decides where conditions live (contract §5.2):
 * - `"v1beta2"`: `status.conditions` holds v1beta2 conditions, deprecated ones are in
 *   `status.deprecated.v1beta1.conditions`;
 * - `"v1beta1"`: `status.conditions` holds deprecated v1beta1 conditions, v1beta2 ones are in
 *   `status.v1beta2.conditions`.
 */
export type StatusLayout = "v1beta1" | "v1beta2";

/** Options shared by the condition helpers that read or write an object. */
export interface LayoutOptions {
  /**
   * Force the status layout. By default an object is treated as v1beta1 when its `apiVersion` ends in
   * `/v1beta1` or it already has `status.v1beta2`, and as v1beta2 otherwise.
   */
  layout?: StatusLayout;
}

/**
 * Tells where the conditions of an object live.
 *
 * @example
 * ```ts
 * statusLayoutOf({ apiVersion: "cluster.x-k8s.io/v1beta1", kind: "MachinePool" }); // "v1beta1"
 * ```
 */
export function statusLayoutOf(obj: ObjectWithConditions, options?: LayoutOptions): StatusLayout {
  if (options?.layout) return options.layout;
  if (readPath(obj, ["status", "v1beta2"]) !== undefined) return "v1beta1";
  if (typeof obj.apiVersion === "string" && obj.apiVersion.endsWith("/v1beta1")) return "v1beta1";
  return "v1beta2";
}

/**
 * The JSON path (as keys) of the v1beta2 (`metav1.Condition`) list of an object.
 *
 * @example
 * ```ts
 * v1beta2ConditionsPath(machinePoolV1beta1); // ["status", "v1beta2", "conditions"]
 * ```
 */
export function v1beta2ConditionsPath(
  obj: ObjectWithConditions,
  options?: LayoutOptions,
): readonly string[] {
  return statusLayoutOf(obj, options) === "v1beta1"
    ? ["status", "v1beta2", "conditions"]
    : ["status", "conditions"];
}

/**
 * The JSON path (as keys) of the deprecated v1beta1 condition list of an object.
 *
 * @example
 * ```ts
 * v1beta1ConditionsPath(machinePoolV1beta2); // ["status", "deprecated", "v1beta1", "conditions"]
 * ```
 */
export function v1beta1ConditionsPath(
  obj: ObjectWithConditions,
  options?: LayoutOptions,
): readonly string[] {
  return statusLayoutOf(obj, options) === "v1beta1"
    ? ["status", "conditions"]
    : ["status", "deprecated", "v1beta1", "conditions"];
}

/** Reads a nested value by keys; undefined when any step is missing or not an object. */
export function readPath(obj: unknown, path: readonly string[]): unknown {
  let current: unknown = obj;
  for (const key of path) {
    if (current === null || typeof current !== "object" || Array.isArray(current)) return undefined;
    current = (current as Record<string, unknown>)[key];
  }
  return current;
}

/** Writes a nested value by keys, creating intermediate objects; `undefined` deletes the key. */
export function writePath(obj: object, path: readonly string[], value: unknown): void {
  let current = obj as Record<string, unknown>;
  for (let i = 0; i < path.length - 1; i++) {
    const key = path[i] as string;
    const next = current[key];
    if (next === null || typeof next !== "object" || Array.isArray(next)) {
      if (value === undefined) return;
      current[key] = {};
    }
    current = current[key] as Record<string, unknown>;
  }
  const last = path[path.length - 1] as string;
  if (value === undefined) delete current[last];
  else current[last] = value;
}

/** Reads the raw condition list at a path (empty when absent or malformed). */
export function readConditionList(obj: unknown, path: readonly string[]): ConditionLike[] {
  const list = readPath(obj, path);
  return Array.isArray(list) ? (list as ConditionLike[]) : [];
}
