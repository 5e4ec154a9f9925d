/**
 * Structural-schema engine for custom resources: pruning, defaulting and validation (OpenAPI v3 keywords,
 * list-type invariants, embedded resources and CEL `x-kubernetes-validations`), producing the same
 * `Status.details.causes` as kube-apiserver.
 *
 * Order the server uses on a write: `prune` → `applyDefaults` → `validate` (see {@link StructuralSchema}).
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
