/**
 * Patch and apply engines for the in-memory API server: JSON patch (RFC 6902), strategic merge patch
 * for the built-in kinds, and server-side apply with `managedFields` tracking (also for non-apply
 * writes, so apply-after-update conflicts are detected). Results were compared with a real
 * kube-apiserver 1.35 (apply/conflict/force/drop sequences on a CRD, strategic patches and apply on a
 * Node): same objects, same `managedFields`, same conflict messages.
 *
 * How kube-apiserver sequences a write:
 * - apply: `serverSideApply` → prune → defaults (`keepNulls: true`) → validate; a `changed: false`
 *   result stores nothing.
 * - create/update/patch: build the new object → prune → defaults → `trackUpdate` (defaulted fields
 *   belong to the writer, as on the server) → validate.
 * - resources with a status subresource: writes to the main resource pass `ignoredFields: [["status"]]`,
 *   writes through /status pass `subresource: "status"` and `ignoredFields: [["spec"]]`.
 * - built-in kinds: pass `schema: builtinMergeSchema(kind)`; custom resources: the compiled CRD
 *   schema's `root`.
 *
 * Known differences: the order of `managedFields` entries with equal operation and time is by manager
 * name (the server's is unspecified); objects are kept as sent, so typed defaults the server adds to
 * built-in kinds (`lastHeartbeatTime: null` in Node conditions, `podCIDR`) do not appear; strategic merge
 * knows the merge keys of Namespace, Node, Secret, ConfigMap, Event, Lease and ObjectMeta only.
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
export { ApplyConfigError, serverSideApply, trackUpdate } from "./apply.js";
export type { PatchField } from "./builtins.js";
export { builtinMergeSchema, builtinPatchMeta } from "./builtins.js";
export { FieldSet, pathToString } from "./fieldset.js";
export { JsonPatchError, jsonPatch, MAX_JSON_PATCH_OPERATIONS } from "./json-patch.js";
export { StrategicMergePatchError, strategicMergePatch } from "./strategic.js";
export type { MergeSchema } from "./typed.js";
