/**
 * The patch media types the server understands, and the dispatch of a patch body to the engine that
 * applies its type.
 *
 * @module
 */
import type { PatchEngines } from "./core-types.js";
import { badRequest, unsupportedMediaType } from "./errors.js";
import { jsonMergePatch } from "./merge-patch.js";
import type { KubeObject, ResourceType } from "./types.js";
import { isObject } from "./values.js";

/** Patch bodies the server understands, by Content-Type. */
export const PATCH_TYPES = {
  json: "application/json-patch+json",
  merge: "application/merge-patch+json",
  strategic: "application/strategic-merge-patch+json",
  apply: "application/apply-patch+yaml",
} as const;

/** Patch media types the resource accepts, for 415 messages. */
export function patchTypes(rt: ResourceType): string[] {
  const types: string[] = [PATCH_TYPES.json, PATCH_TYPES.merge];
  if (rt.builtin) types.push(PATCH_TYPES.strategic);
  types.push(PATCH_TYPES.apply);
  return types;
}

/** Applies a JSON, merge or strategic merge patch to the object as the client sees it. */
export function patchObject(
  engines: PatchEngines,
  rt: ResourceType,
  currentView: KubeObject,
  contentType: string,
  body: unknown,
): Record<string, unknown> {
  let patched: unknown;
  switch (contentType) {
    case PATCH_TYPES.merge:
      if (!isObject(body)) throw badRequest("json: cannot unmarshal non-object into merge patch");
      patched = jsonMergePatch(currentView, body);
      break;
    case PATCH_TYPES.json:
      if (!engines.jsonPatch) throw unsupportedMediaType(contentType, patchTypes(rt));
      patched = engines.jsonPatch(currentView, body);
      break;
    case PATCH_TYPES.strategic:
      if (!rt.builtin || !engines.strategicMergePatch) {
        throw unsupportedMediaType(contentType, patchTypes(rt));
      }
      patched = engines.strategicMergePatch(rt.kind, currentView, body);
      break;
    default:
      throw unsupportedMediaType(contentType, patchTypes(rt));
  }
  if (!isObject(patched)) throw badRequest("the patch did not produce an object");
  return patched;
}

/** Applies a JSON merge patch or JSON patch to a plain value (the Scale view). */
export function patchValue(
  engines: PatchEngines,
  value: unknown,
  contentType: string,
  body: unknown,
  rt: ResourceType,
): unknown {
  if (contentType === PATCH_TYPES.merge) {
    if (!isObject(body)) throw badRequest("json: cannot unmarshal non-object into merge patch");
    return jsonMergePatch(value, body);
  }
  if (!engines.jsonPatch) throw unsupportedMediaType(contentType, patchTypes(rt));
  return engines.jsonPatch(value, body);
}
