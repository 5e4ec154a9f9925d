import type { RE2JS } from "re2js";
/**
 * One entry of a `Status.details.causes` list, formatted as kube-apiserver formats a field error.
 *
 * @example
 * ```ts
 * const cause: FieldCause = {
 *   field: "spec.replicas",
 *   reason: "FieldValueTypeInvalid",
 *   message: 'Invalid value: "string": spec.replicas in body must be of type integer: "string"',
 * };
 * ```
 */
export interface FieldCause {
  /** The field path, e.g. `spec.replicas`, `spec.providerIDList[3]`, `spec.template.metadata.labels[foo]`. */
  field: string;
  /** The cause type, e.g. `FieldValueRequired`, `FieldValueInvalid`, `FieldValueNotSupported`. */
  reason: string;
  /** The error body without the field, e.g. `Required value`. */
  message: string;
}

/** A CEL rule from `x-kubernetes-validations` that this engine could not compile, so never enforces. */
export interface SkippedRule {
  /** The schema location of the rule, e.g. `spec.template.spec`. */
  path: string;
  /** The CEL source. */
  rule: string;
  /** Why it was skipped (the compiler's message). */
  error: string;
}

/** `x-kubernetes-list-type` of an array: `atomic` (the default), `set` or `map`. */
export type ListType = "atomic" | "set" | "map";

/** `x-kubernetes-map-type` of an object: `granular` (the default for objects) or `atomic`. */
export type MapType = "granular" | "atomic";

/**
 * A compiled structural schema (one CRD version's `openAPIV3Schema`).
 *
 * Paths given to the `…At` lookups are JSON object keys only: an array's items and a map's
 * `additionalProperties` are entered implicitly (any key, or a numeric index, steps into them), so
 * `["status", "conditions"]` names the conditions list and `["status", "conditions", "type"]` the
 * `type` field of its items.
 *
 * @example
 * ```ts
 * const schema = compileStructuralSchema(crd.spec.versions[0].schema.openAPIV3Schema);
 * const unknown = schema.prune(obj);      // ["spec.typo"]: the server warns `unknown field "spec.typo"`
 * schema.applyDefaults(obj);
 * const causes = schema.validate(obj, oldObj); // [] when valid; else 422 Invalid with these causes
 * ```
 */
export interface StructuralSchema {
  /**
   * Drops, in place, fields the schema does not declare (unless `x-kubernetes-preserve-unknown-fields`).
   * Top-level `apiVersion`/`kind`/`metadata` are kept, as are those of embedded resources (whose
   * `metadata` is reduced to ObjectMeta fields). Returns the dropped paths (`spec.foo`, `spec.list[0].bar`).
   */
  prune(obj: Record<string, unknown>): string[];
  /**
   * Applies schema defaults in place, as the API server does after pruning: a default fills an absent
   * field (or a `null` one that is not nullable) whose parent object exists, recursively through
   * properties, array items and `additionalProperties`; then `null`s of non-nullable fields without a
   * default are dropped — except with `keepNulls`, which is how the server treats the result of a
   * server-side apply (it is defaulted but not decoded again, so such a `null` fails validation).
   */
  applyDefaults(obj: Record<string, unknown>, options?: { keepNulls?: boolean }): void;
  /**
   * Validates a (pruned, defaulted) object; `old` is the stored object on update (enables CEL
   * transition rules and ratcheting of unchanged invalid values). Returns `[]` when valid.
   * `options.subresource: "status"` validates a write through /status (OpenAPI checks on `status`
   * only, messages relative to it); `options.scale` adds the scale subresource's replicas checks;
   * `options.objectMeta` adds the generic `metadata` checks (name, labels, annotations).
   */
  validate(
    obj: unknown,
    old?: unknown,
    options?: {
      subresource?: "status";
      objectMeta?: boolean;
      scale?: { specReplicasPath: string; statusReplicasPath: string; labelSelectorPath?: string };
    },
  ): FieldCause[];
  /** CEL rules that could not be compiled and are therefore not enforced. */
  readonly skippedRules: readonly SkippedRule[];
  /** `x-kubernetes-list-map-keys` of the list at `path`, if it is a `map` list. */
  listMapKeysAt(path: readonly (string | number)[]): readonly string[] | undefined;
  /** `x-kubernetes-list-type` of the list at `path` (`atomic` if unset), or `undefined` if not a list. */
  listTypeAt(path: readonly (string | number)[]): ListType | undefined;
  /** `x-kubernetes-map-type` of the object at `path` (`granular` if unset), or `undefined` if not an object. */
  mapTypeAt(path: readonly (string | number)[]): MapType | undefined;
  /** The schema node at `path`, or `undefined` if the schema does not describe it. */
  nodeAt(path: readonly (string | number)[]): SchemaNode | undefined;
  /**
   * The node of the whole object (its `openAPIV3Schema`); server-side apply reads list types and
   * map keys from it.
   */
  readonly root: SchemaNode;
}

/** The JSON type a schema node declares. */
export type SchemaType = "object" | "array" | "string" | "integer" | "number" | "boolean";

/** A compiled value-validation that is not structural (inside `allOf`/`anyOf`/`oneOf`/`not`). */
export interface ValueValidation {
  /** The declared type, if any. */
  type?: SchemaType;
  /** `format`, normalised (`date-time` → `datetime`); only formats the server checks are kept. */
  format?: string;
  /**
   * The allowed values (`enum`), compared as JSON; a value outside gets `Unsupported value` listing
   * them.
   */
  enum?: readonly unknown[];
  /** Largest allowed number (`maximum`), inclusive unless `exclusiveMaximum`. */
  maximum?: number;
  /** `exclusiveMaximum`. */
  exclusiveMaximum?: boolean;
  /** Smallest allowed number (`minimum`), inclusive unless `exclusiveMinimum`. */
  minimum?: number;
  /** `exclusiveMinimum`. */
  exclusiveMinimum?: boolean;
  /** `multipleOf`. */
  multipleOf?: number;
  /** `maxLength` (runes). */
  maxLength?: number;
  /** `minLength` (runes). */
  minLength?: number;
  /** `pattern` source as written in the schema. */
  pattern?: string;
  /** `pattern` compiled with RE2, as the server compiles it. */
  patternRE2?: RE2JS;
  /** `maxItems`. */
  maxItems?: number;
  /** `minItems`. */
  minItems?: number;
  /** `maxProperties`. */
  maxProperties?: number;
  /** `minProperties`. */
  minProperties?: number;
  /** `required` property names. */
  required?: readonly string[];
  /** Nested value validations of named properties. */
  properties?: ReadonlyMap<string, ValueValidation>;
  /** Nested value validation of array items. */
  items?: ValueValidation;
  /** Nested value validation of map values. */
  additionalProperties?: ValueValidation;
  /** `allOf` branches. */
  allOf?: readonly ValueValidation[];
  /** `anyOf` branches. */
  anyOf?: readonly ValueValidation[];
  /** `oneOf` branches. */
  oneOf?: readonly ValueValidation[];
  /** A validation the value must fail (`not`); a value that passes it is invalid. */
  not?: ValueValidation;
}

/** One node of a compiled structural schema. */
export interface SchemaNode extends ValueValidation {
  /** Declared properties (structural). */
  properties?: ReadonlyMap<string, SchemaNode>;
  /** Array item schema (structural). */
  items?: SchemaNode;
  /** Map value schema (structural). */
  additionalProperties?: SchemaNode;
  /** `x-kubernetes-preserve-unknown-fields: true`. */
  preserveUnknownFields: boolean;
  /** `x-kubernetes-embedded-resource: true`. */
  embeddedResource: boolean;
  /** `x-kubernetes-int-or-string: true`. */
  intOrString: boolean;
  /** Whether `null` is a valid value of the field (`nullable: true`); false when the schema omits it. */
  nullable: boolean;
  /** Whether `default` is set (the value may be `null`). */
  hasDefault: boolean;
  /**
   * The value filled in when the field is absent (`default`), applied before validation; read only
   * when `hasDefault`.
   */
  default?: unknown;
  /** `x-kubernetes-list-type`. */
  listType?: ListType;
  /** `x-kubernetes-list-map-keys`. */
  listMapKeys?: readonly string[];
  /** `x-kubernetes-map-type`. */
  mapType?: MapType;
  /** CEL rules at this node. */
  rules?: readonly CompiledRule[];
}

/** A compiled `x-kubernetes-validations` entry. */
export interface CompiledRule {
  /** The CEL source. */
  rule: string;
  /** The `message` returned when the rule fails; absent, the server says `failed rule: <rule>`. */
  message?: string;
  /** CEL expression producing the message. */
  messageExpression?: string;
  /** Relative JSONPath-like field path (`.spec.foo`, `['a.b']`) the error is reported at. */
  fieldPath?: string;
  /** Normalised field path appended to the node path. */
  normalizedFieldPath?: string;
  /** `FieldValueInvalid` (default), `FieldValueForbidden`, `FieldValueRequired`, `FieldValueDuplicate`. */
  reason?: string;
  /** Whether the rule references `oldSelf` (a transition rule: evaluated on update only). */
  usesOldSelf: boolean;
  /** `optionalOldSelf: true`. */
  optionalOldSelf: boolean;
  /** Evaluates the rule. */
  evaluate(self: unknown, oldSelf: unknown, hasOld: boolean): unknown;
  /** Evaluates the message expression, if any. */
  evaluateMessage?(self: unknown, oldSelf: unknown, hasOld: boolean): unknown;
}
