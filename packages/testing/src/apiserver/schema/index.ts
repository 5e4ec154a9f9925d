/**
 * Structural-schema engine for custom resources: pruning, defaulting and validation (OpenAPI v3 keywords,
 * list-type invariants, embedded resources and CEL `x-kubernetes-validations`), producing the same
 * `Status.details.causes` as kube-apiserver. The causes were compared one by one with a real
 * kube-apiserver 1.35 on CAPI's MachinePool CRD and a test CRD exercising every keyword (35 of 35
 * requests answered identically, order aside: the server's order follows Go map iteration).
 *
 * How kube-apiserver uses it on a write of a custom resource:
 * 1. `prune` (the returned paths are the `unknown field "…"` warnings, or the 400 `strict decoding
 *    error: unknown field "a", unknown field "b"` (sorted) with `fieldValidation=Strict`);
 * 2. `applyDefaults` (this also drops `null`s of non-nullable fields, so they never fail validation;
 *    pass `keepNulls: true` for the result of a server-side apply, which the server does not decode
 *    again: there such a `null` fails validation);
 * 3. `validate(obj, old, options)`: `old` on update (ratcheting, transition rules);
 *    `options.subresource: "status"` for writes through /status; `options.scale` with the CRD's
 *    `subresources.scale` paths when it has one; `options.objectMeta` unless the caller validates
 *    `metadata` itself. A non-empty result is a 422 `Invalid` whose message
 *    {@link formatInvalidMessage} builds.
 *
 * Known differences from kube-apiserver: CEL runs on `@marcbachmann/cel-js` with the standard library
 * plus `isSorted`, `indexOf`, `lastIndexOf` and `isURL`; other Kubernetes CEL libraries (quantity, ip,
 * cidr, format, semver) are missing, so rules using them are listed in `skippedRules` and not enforced;
 * there is no CEL cost budget; patterns run on re2js, an RE2 engine like the server's (same syntax,
 * linear time; a pattern RE2 rejects makes the CRD invalid); numbers are JSON
 * numbers, so `1.0` counts as an integer; string formats follow the server's checkers closely but not
 * byte for byte (`email`, `hostname`, `uri`); ratcheting compares values for equality, without the
 * server's per-rule ratcheting of CEL rules that read `oldSelf` optionally.
 *
 * @packageDocumentation
 */

export { formatInvalidMessage } from "./causes.js";
export { compileStructuralSchema, NonStructuralSchemaError } from "./compile.js";
export { validateObjectMeta } from "./objectmeta.js";
export type {
  CompiledRule,
  FieldCause,
  ListType,
  MapType,
  SchemaNode,
  SchemaType,
  SkippedRule,
  StructuralSchema,
  ValueValidation,
} from "./types.js";
export type { ValidateOptions } from "./validate.js";
