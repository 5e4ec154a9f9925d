/**
 * Patch and apply engines for the in-memory API server: JSON patch (RFC 6902), strategic merge patch
 * for the built-in kinds, and server-side apply with `managedFields` tracking (also for non-apply
 * writes, so apply-after-update conflicts are detected).
 *
 * @packageDocumentation
 */

export type {
  ApplyArgs,
  ApplyConflict,
  ApplyResult,
  ManagedFieldsEntry,
  TrackUpdateArgs,
} from "./apply.js";
export { serverSideApply, trackUpdate } from "./apply.js";
export type { PatchField } from "./builtins.js";
export { builtinMergeSchema, builtinPatchMeta } from "./builtins.js";
export { FieldSet, pathToString } from "./fieldset.js";
export { JsonPatchError, jsonPatch, MAX_JSON_PATCH_OPERATIONS } from "./json-patch.js";
export { StrategicMergePatchError, strategicMergePatch } from "./strategic.js";
export type { MergeSchema } from "./typed.js";
