/**
 * Shared runtime of the generated API types: JSON values, object metadata schemas, resource
 * metadata, validation and API-server-style defaulting.
 *
 * @packageDocumentation
 */
// Deep type-only imports: the package index would make tsc parse all of client-node (about 1,000
// declaration files) for three interfaces. Erased at run time.
import type { V1ListMeta } from "@kubernetes/client-node/dist/gen/models/V1ListMeta.js";
import type { V1ObjectMeta } from "@kubernetes/client-node/dist/gen/models/V1ObjectMeta.js";
import type { V1OwnerReference } from "@kubernetes/client-node/dist/gen/models/V1OwnerReference.js";
import { RE2JS } from "re2js";
import { z } from "zod";

/**
 * The part of zod this module's implementation uses, typed loosely: going through it keeps tsc from
 * resolving zod's heavily overloaded generic API here, which cost seconds of type-checking in every
 * project compiling the generated code. Exported declarations keep zod's real types.
 */
interface LooseSchema {
  optional(): LooseSchema;
  nullable(): LooseSchema;
  min(limit: number, message?: string): LooseSchema;
  max(limit: number, message?: string): LooseSchema;
  regex(pattern: RegExp, message?: string): LooseSchema;
  gt(limit: number): LooseSchema;
  gte(limit: number): LooseSchema;
  lt(limit: number): LooseSchema;
  lte(limit: number): LooseSchema;
  multipleOf(step: number): LooseSchema;
  superRefine(check: (value: never, ctx: RefineContext) => void): LooseSchema;
  meta(meta: object): LooseSchema;
}

/** The refinement context of zod's superRefine, as used here. */
export interface RefineContext {
  /** Reports a problem. */
  addIssue(
    issue:
      | { code: "custom"; message: string; input: unknown; path?: PropertyKey[] }
      | {
          code: "invalid_format";
          format: "regex";
          pattern: string;
          message: string;
          input: unknown;
        },
  ): void;
}

interface LooseZod {
  string(): LooseSchema;
  int(): LooseSchema;
  int32(): LooseSchema;
  number(): LooseSchema;
  boolean(): LooseSchema;
  date(): LooseSchema;
  never(): LooseSchema;
  json(): LooseSchema;
  base64(): LooseSchema;
  literal(value: unknown): LooseSchema;
  enum(values: readonly string[]): LooseSchema;
  union(options: readonly LooseSchema[]): LooseSchema;
  array(item: LooseSchema): LooseSchema;
  record(key: LooseSchema, value: LooseSchema): LooseSchema;
  looseObject(shape: Record<string, LooseSchema>): LooseSchema;
  iso: { datetime(options: { offset: boolean }): LooseSchema; date(): LooseSchema };
}

interface LooseParser<T> {
  safeParse(value: unknown):
    | { success: true; data: T }
    | {
        success: false;
        error: {
          issues: readonly { path: readonly PropertyKey[]; message: string; code: string }[];
        };
      };
}

const zl = z as unknown as LooseZod;

/** Any JSON value: what a field marked "x-kubernetes-preserve-unknown-fields" without a type holds. */
export type FreeFormJson =
  | string
  | number
  | boolean
  | null
  | FreeFormJson[]
  | { [key: string]: FreeFormJson };

/** A JSON object: what an object marked "x-kubernetes-preserve-unknown-fields" without properties holds. */
export type FreeFormObject = { [key: string]: FreeFormJson };

/** zod schema for {@link FreeFormJson}: any value that survives a JSON round trip. */
// zod's own JSON schema, widened without a structural check: relating zod's inferred recursive
// type to FreeFormJson would cost seconds of type-checking.
export const FreeFormJsonSchema: z.ZodType<FreeFormJson> =
  zl.json() as unknown as z.ZodType<FreeFormJson>;

/** zod schema for {@link FreeFormObject}. */
export const FreeFormObjectSchema: z.ZodType<FreeFormObject> = zl.record(
  zl.string(),
  FreeFormJsonSchema as unknown as LooseSchema,
) as unknown as z.ZodType<FreeFormObject>;

/**
 * Timestamps arrive as RFC 3339 strings from raw JSON (custom objects) and as Date objects from
 * client-node's typed models; both are valid object metadata.
 */
const timestamp = zl.union([zl.iso.datetime({ offset: true }), zl.date()]);
const stringMap = zl.record(zl.string(), zl.string());

/** zod schema for an owner reference inside object metadata. */
export const OwnerReferenceSchema: z.ZodType<V1OwnerReference> = zl.looseObject({
  apiVersion: zl.string(),
  kind: zl.string(),
  name: zl.string(),
  uid: zl.string(),
  controller: zl.boolean().optional(),
  blockOwnerDeletion: zl.boolean().optional(),
}) as unknown as z.ZodType<V1OwnerReference>;

/**
 * zod schema for Kubernetes object metadata (client-node's V1ObjectMeta). It checks the types of
 * the well-known fields and keeps any other field, so it accepts what any API server version sends.
 */
export const ObjectMetaSchema: z.ZodType<V1ObjectMeta> = zl.looseObject({
  name: zl.string().optional(),
  generateName: zl.string().optional(),
  namespace: zl.string().optional(),
  uid: zl.string().optional(),
  resourceVersion: zl.string().optional(),
  generation: zl.int().optional(),
  creationTimestamp: timestamp.optional(),
  deletionTimestamp: timestamp.optional(),
  deletionGracePeriodSeconds: zl.int().optional(),
  labels: stringMap.optional(),
  annotations: stringMap.optional(),
  finalizers: zl.array(zl.string()).optional(),
  ownerReferences: zl.array(OwnerReferenceSchema as unknown as LooseSchema).optional(),
  managedFields: zl.array(zl.looseObject({})).optional(),
  selfLink: zl.string().optional(),
}) as unknown as z.ZodType<V1ObjectMeta>;

/** zod schema for list metadata (client-node's V1ListMeta). */
export const ListMetaSchema: z.ZodType<V1ListMeta> = zl.looseObject({
  continue: zl.string().optional(),
  remainingItemCount: zl.int().optional(),
  resourceVersion: zl.string().optional(),
  selfLink: zl.string().optional(),
}) as unknown as z.ZodType<V1ListMeta>;

/**
 * The defaults of a schema subtree, as the API server applies them (see {@link applyDefaults}).
 * Only subtrees that contain a default are present.
 */
export interface DefaultsNode {
  /** The default value of this node, applied when its parent object exists and the field is absent. */
  readonly default?: FreeFormJson;
  /** Whether null is a valid value here (a null non-nullable field gets the default). */
  readonly nullable?: boolean;
  /** Defaults below the named properties of an object. */
  readonly properties?: { readonly [name: string]: DefaultsNode };
  /** Defaults of every array item. */
  readonly items?: DefaultsNode;
  /** Defaults of every value of a map (additionalProperties). */
  readonly additionalProperties?: DefaultsNode;
}

/** The scale subresource of a kind, as declared by its CRD. */
export interface ScaleSubresource {
  /** JSON path of the desired replica count, e.g. ".spec.replicas". */
  readonly specReplicasPath: string;
  /** JSON path of the observed replica count, e.g. ".status.replicas". */
  readonly statusReplicasPath: string;
  /** JSON path of the label selector in serialized form, if any. */
  readonly labelSelectorPath: string | undefined;
}

/**
 * Everything needed to address a kind on the API server without a discovery round trip, taken from
 * its CustomResourceDefinition, plus its zod schema and defaults.
 *
 * @typeParam T - the object type of the kind
 */
export interface ResourceInfo<T> {
  /** API group, e.g. "cluster.x-k8s.io". */
  readonly group: string;
  /** API version within the group, e.g. "v1beta2". */
  readonly version: string;
  /** group/version, as written in the apiVersion field. */
  readonly apiVersion: string;
  /** Kind, e.g. "MachinePool". */
  readonly kind: string;
  /** Kind of the list type, e.g. "MachinePoolList". */
  readonly listKind: string;
  /** Plural resource name used in URLs, e.g. "machinepools". */
  readonly plural: string;
  /** Singular resource name, e.g. "machinepool". */
  readonly singular: string;
  /** Whether objects live in a namespace or at cluster scope. */
  readonly scope: "Namespaced" | "Cluster";
  /** Whether the API server serves this version. */
  readonly served: boolean;
  /** Whether this version is the storage version. */
  readonly storage: boolean;
  /** The storage version of the kind. */
  readonly storageVersion: string;
  /** Every served version of the kind, in CRD order. */
  readonly servedVersions: readonly string[];
  /** Whether this version is deprecated. */
  readonly deprecated: boolean;
  /** The warning the API server returns for a deprecated version, if any. */
  readonly deprecationWarning: string | undefined;
  /** Short names, e.g. "mp". */
  readonly shortNames: readonly string[];
  /** Categories, e.g. "cluster-api". */
  readonly categories: readonly string[];
  /** Labels of the CRD object (for example the "cluster.x-k8s.io/v1beta2" contract label). */
  readonly labels: { readonly [name: string]: string };
  /** Which subresources the version has. */
  readonly subresources: {
    /** Whether the status subresource exists (status is written through /status). */
    readonly status: boolean;
    /** The scale subresource, if any. */
    readonly scale: ScaleSubresource | undefined;
  };
  /** zod schema of the kind's objects. */
  readonly schema: z.ZodType<T>;
  /** Defaults of the kind's schema, if it has any. */
  readonly defaults: DefaultsNode | undefined;
}

/**
 * Applies the defaults of a kind's schema to an object, in place, the way the API server does on
 * create, update and read: a default fills an absent (or null, non-nullable) field of an object that
 * exists; defaults are applied recursively, also inside values that were just defaulted; a default
 * below an absent object field does not create that object.
 *
 * @param resource - the kind's resource metadata (or anything carrying its defaults)
 * @param object - the object to default; it is modified
 * @returns the same object, for chaining
 * @example
 * const pool = applyDefaults(clusterv1beta2.MachinePoolResource, { apiVersion, kind, spec });
 */
export function applyDefaults<T>(
  resource: { readonly defaults: DefaultsNode | undefined },
  object: T,
): T {
  if (resource.defaults !== undefined) defaultValue(object, resource.defaults);
  return object;
}

function defaultValue(value: unknown, node: DefaultsNode): void {
  if (Array.isArray(value)) {
    if (node.items !== undefined) for (const item of value) defaultValue(item, node.items);
    return;
  }
  if (value === null || typeof value !== "object") return;
  const fields = value as Record<string, unknown>;
  const properties = node.properties;
  if (properties !== undefined) {
    for (const name of Object.keys(properties)) {
      const property = properties[name];
      if (property === undefined || property.default === undefined) continue;
      const current = Object.hasOwn(fields, name) ? fields[name] : undefined;
      if (current === undefined || (current === null && property.nullable !== true)) {
        setOwn(fields, name, JSON.parse(JSON.stringify(property.default)) as FreeFormJson);
      }
    }
  }
  for (const name of Object.keys(fields)) {
    const child =
      properties !== undefined && Object.hasOwn(properties, name)
        ? properties[name]
        : node.additionalProperties;
    if (child !== undefined) defaultValue(fields[name], child);
  }
}

/**
 * Sets an own property. Plain assignment of a key named "__proto__" (a legal field name in a CRD)
 * would replace the object's prototype instead of adding the field.
 */
function setOwn(target: object, key: string, value: unknown): void {
  Object.defineProperty(target, key, {
    value,
    enumerable: true,
    writable: true,
    configurable: true,
  });
}

/** One problem found by a schema: where it is and what is wrong. */
export interface SchemaIssue {
  /** Path of the offending value, e.g. "spec.template.spec.taints[0].effect" ("" for the root). */
  readonly path: string;
  /** What is wrong. */
  readonly message: string;
  /** zod's issue code, e.g. "too_big" or "invalid_value". */
  readonly code: string;
}

/** Thrown by generated models' validate() when an object does not match its schema. */
export class SchemaValidationError extends Error {
  /** Every problem found, in schema order. */
  readonly issues: readonly SchemaIssue[];

  /**
   * @param subject - what was validated, e.g. "MachinePool cluster.x-k8s.io/v1beta2"
   * @param issues - the problems found
   */
  constructor(subject: string, issues: readonly SchemaIssue[]) {
    super(
      subject +
        " is invalid: " +
        issues
          .map((issue) => (issue.path === "" ? "" : issue.path + ": ") + issue.message)
          .join("; "),
    );
    this.name = "SchemaValidationError";
    this.issues = issues;
  }
}

/**
 * Formats a zod issue path the way Kubernetes reports field paths: "spec.taints[0].effect".
 *
 * @param path - the path segments
 * @returns the dotted path, "" for the root
 */
export function formatFieldPath(path: readonly PropertyKey[]): string {
  let out = "";
  for (const segment of path) {
    if (typeof segment === "number") out += "[" + String(segment) + "]";
    else if (typeof segment === "string" && /^[A-Za-z_][A-Za-z0-9_-]*$/.test(segment)) {
      out += (out === "" ? "" : ".") + segment;
    } else out += "[" + JSON.stringify(String(segment)) + "]";
  }
  return out;
}

/**
 * Checks a value against a schema; on failure throws a {@link SchemaValidationError} listing every
 * problem with its path.
 *
 * @param schema - the zod schema
 * @param value - the value to check
 * @param subject - what is being validated, used in the error message
 * @returns the parsed value
 */
export function validateOrThrow<T>(schema: z.ZodType<T>, value: unknown, subject: string): T {
  const result = (schema as unknown as LooseParser<T>).safeParse(value);
  if (result.success) return result.data;
  throw new SchemaValidationError(
    subject,
    result.error.issues.map((issue) => ({
      path: formatFieldPath(issue.path),
      message: issue.message,
      code: issue.code,
    })),
  );
}

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return "[" + value.map(canonicalJson).join(",") + "]";
  if (value !== null && typeof value === "object") {
    const record = value as Record<string, unknown>;
    return (
      "{" +
      Object.keys(record)
        .sort()
        .map((key) => JSON.stringify(key) + ":" + canonicalJson(record[key]))
        .join(",") +
      "}"
    );
  }
  return JSON.stringify(value) ?? "null";
}

/**
 * Refinement for "x-kubernetes-list-type: set": every item must be unique.
 *
 * @param items - the list
 * @param ctx - zod refinement context
 */
export function checkSetItems(items: readonly unknown[], ctx: RefineContext): void {
  const seen = new Set<string>();
  items.forEach((item, index) => {
    const key = canonicalJson(item);
    if (seen.has(key)) {
      ctx.addIssue({
        code: "custom",
        message: "Duplicate value: " + key,
        path: [index],
        input: item,
      });
    }
    seen.add(key);
  });
}

/**
 * Refinement for "x-kubernetes-list-type: map": the key fields must identify each item uniquely.
 *
 * @param keys - the "x-kubernetes-list-map-keys"
 * @returns a zod refinement
 */
export function checkMapItems(
  keys: readonly string[],
): (items: readonly unknown[], ctx: RefineContext) => void {
  return (items, ctx) => {
    const seen = new Set<string>();
    items.forEach((item, index) => {
      const record = (item ?? {}) as Record<string, unknown>;
      const key = canonicalJson(keys.map((name) => record[name] ?? null));
      if (seen.has(key)) {
        ctx.addIssue({
          code: "custom",
          message: "Duplicate value: map keys " + keys.join(", ") + " = " + key,
          path: [index],
          input: item,
        });
      }
      seen.add(key);
    });
  };
}

/**
 * A value-validation subschema (the branches of anyOf, oneOf, allOf and not in a structural schema):
 * it can constrain a value but not change its type.
 */
export interface ValueValidation {
  /** Fields that must be present. */
  readonly required?: readonly string[];
  /** Allowed values. */
  readonly enum?: readonly FreeFormJson[];
  /** Regular expression a string must match. */
  readonly pattern?: string;
  /** Lowest allowed number. */
  readonly minimum?: number;
  /** Highest allowed number. */
  readonly maximum?: number;
  /** Shortest allowed string. */
  readonly minLength?: number;
  /** Longest allowed string. */
  readonly maxLength?: number;
  /** Fewest allowed items. */
  readonly minItems?: number;
  /** Most allowed items. */
  readonly maxItems?: number;
  /** Fewest allowed properties. */
  readonly minProperties?: number;
  /** Most allowed properties. */
  readonly maxProperties?: number;
  /** Constraints on named properties. */
  readonly properties?: { readonly [name: string]: ValueValidation };
  /** Constraints on every item. */
  readonly items?: ValueValidation;
  /** Every branch must match. */
  readonly allOf?: readonly ValueValidation[];
  /** At least one branch must match. */
  readonly anyOf?: readonly ValueValidation[];
  /** Exactly one branch must match. */
  readonly oneOf?: readonly ValueValidation[];
  /** Must not match. */
  readonly not?: ValueValidation;
}

/**
 * Whether a value satisfies a value-validation subschema.
 *
 * @param rule - the subschema
 * @param value - the value
 * @returns true when every constraint holds
 */
export function matchesValueValidation(rule: ValueValidation, value: unknown): boolean {
  if (rule.enum !== undefined) {
    const key = canonicalJson(value);
    if (!rule.enum.some((allowed) => canonicalJson(allowed) === key)) return false;
  }
  if (typeof value === "string") {
    if (rule.pattern !== undefined && re2(rule.pattern)?.test(value) === false) return false;
    if (rule.minLength !== undefined && value.length < rule.minLength) return false;
    if (rule.maxLength !== undefined && value.length > rule.maxLength) return false;
  }
  if (typeof value === "number") {
    if (rule.minimum !== undefined && value < rule.minimum) return false;
    if (rule.maximum !== undefined && value > rule.maximum) return false;
  }
  if (Array.isArray(value)) {
    if (rule.minItems !== undefined && value.length < rule.minItems) return false;
    if (rule.maxItems !== undefined && value.length > rule.maxItems) return false;
    const items = rule.items;
    if (items !== undefined && !value.every((item) => matchesValueValidation(items, item)))
      return false;
  } else if (value !== null && typeof value === "object") {
    const record = value as Record<string, unknown>;
    const count = Object.keys(record).length;
    if (rule.minProperties !== undefined && count < rule.minProperties) return false;
    if (rule.maxProperties !== undefined && count > rule.maxProperties) return false;
    if (rule.required !== undefined && !rule.required.every((name) => record[name] !== undefined)) {
      return false;
    }
    if (rule.properties !== undefined) {
      for (const [name, sub] of Object.entries(rule.properties)) {
        if (record[name] !== undefined && !matchesValueValidation(sub, record[name])) return false;
      }
    }
  }
  if (rule.allOf !== undefined && !rule.allOf.every((sub) => matchesValueValidation(sub, value)))
    return false;
  if (rule.anyOf !== undefined && !rule.anyOf.some((sub) => matchesValueValidation(sub, value)))
    return false;
  if (
    rule.oneOf !== undefined &&
    rule.oneOf.filter((sub) => matchesValueValidation(sub, value)).length !== 1
  ) {
    return false;
  }
  if (rule.not !== undefined && matchesValueValidation(rule.not, value)) return false;
  return true;
}

/**
 * Refinement for minProperties / maxProperties.
 *
 * @param min - fewest allowed properties
 * @param max - most allowed properties
 * @returns a zod refinement
 */
export function checkPropertyCount(
  min: number | undefined,
  max: number | undefined,
): (value: unknown, ctx: RefineContext) => void {
  return (value, ctx) => {
    const fields = (value ?? {}) as Record<string, unknown>;
    const count = Object.keys(fields).filter((key) => fields[key] !== undefined).length;
    if (min !== undefined && count < min) {
      ctx.addIssue({
        code: "custom",
        message: "must have at least " + String(min) + " properties",
        input: value,
      });
    }
    if (max !== undefined && count > max) {
      ctx.addIssue({
        code: "custom",
        message: "must have at most " + String(max) + " properties",
        input: value,
      });
    }
  };
}

/**
 * Refinement for anyOf / oneOf / not value validations.
 *
 * @param rule - the value validation the value must satisfy
 * @param description - how to describe the rule in an error
 * @returns a zod refinement
 */
export function checkValueValidation(
  rule: ValueValidation,
  description: string,
): (value: unknown, ctx: RefineContext) => void {
  return (value, ctx) => {
    if (!matchesValueValidation(rule, value)) {
      ctx.addIssue({ code: "custom", message: "must satisfy " + description, input: value });
    }
  };
}

/**
 * Metadata kept on generated zod schemas (read it with z.globalRegistry.get(schema)): the OpenAPI
 * extensions that have no zod equivalent, for merge, apply and CEL tooling.
 */
export interface KubernetesSchemaMeta {
  /** "x-kubernetes-list-type": atomic, set or map. */
  readonly "x-kubernetes-list-type"?: "atomic" | "set" | "map";
  /** "x-kubernetes-list-map-keys": the keys identifying items of a map list. */
  readonly "x-kubernetes-list-map-keys"?: readonly string[];
  /** "x-kubernetes-map-type": granular or atomic. */
  readonly "x-kubernetes-map-type"?: "granular" | "atomic";
  /** "x-kubernetes-validations": CEL rules the API server evaluates. */
  readonly "x-kubernetes-validations"?: readonly CelRule[];
  /** "x-kubernetes-embedded-resource": the value is a whole Kubernetes object. */
  readonly "x-kubernetes-embedded-resource"?: boolean;
  /** "x-kubernetes-preserve-unknown-fields": unknown fields are kept. */
  readonly "x-kubernetes-preserve-unknown-fields"?: boolean;
  /** "x-kubernetes-int-or-string": an integer or a string. */
  readonly "x-kubernetes-int-or-string"?: boolean;
}

/** A CEL validation rule from "x-kubernetes-validations". */
export interface CelRule {
  /** The CEL expression; self is the value, oldSelf the previous one on update. */
  readonly rule: string;
  /** The message returned when the rule fails. */
  readonly message?: string;
  /** A CEL expression producing the message. */
  readonly messageExpression?: string;
  /** The reason returned to the client, e.g. "FieldValueInvalid". */
  readonly reason?: string;
  /** The field path the failure is reported on, relative to this value. */
  readonly fieldPath?: string;
  /** Whether the rule also applies on update when the old value is absent. */
  readonly optionalOldSelf?: boolean;
}

// ------------------------------------------------------------------------------------------------
// Schema builders used by the generated modules. At run time every builder returns a plain zod
// schema. At the type level they work on Schema<T>, a one-field phantom type with an explicit
// variance annotation: relating two Schema types is a constant-time check, while relating two zod
// types makes tsc compare zod's internals structurally, which made the generated code take many
// seconds to type-check. ObjectShape still ties every field schema to its interface field.

/**
 * Type-level view of a zod schema producing T, used while building the generated schemas. Turn it
 * into a zod schema with {@link zod}; turn a zod schema into one with {@link ref}.
 *
 * @typeParam T - the output type
 */
export interface Schema<out T> {
  /** Phantom marker carrying the output type; never present at run time. */
  readonly "~capiTsOutput"?: T;
}

function wrap<T>(schema: unknown): Schema<T> {
  return schema as unknown as Schema<T>;
}

function unwrap(schema: Schema<unknown>): LooseSchema {
  return schema as unknown as LooseSchema;
}

/**
 * Exposes a built schema as the zod schema it is.
 *
 * @param schema - a built schema
 * @returns the zod schema
 */
export function zod<T>(schema: Schema<T>): z.ZodType<T> {
  return schema as unknown as z.ZodType<T>;
}

/**
 * Uses a zod schema inside the builders.
 *
 * @param schema - a zod schema
 * @returns the same schema, typed for the builders
 */
export function ref<T>(schema: z.ZodType<T>): Schema<T> {
  return schema as unknown as Schema<T>;
}

/**
 * The schemas of an interface's fields, one per field. Which fields may be absent is given
 * separately (the object builder's required list), so no per-field optional() call is needed.
 */
export type ObjectShape<T> = { readonly [K in keyof T]-?: Schema<T[K]> };

/** OpenAPI keywords of a string schema. */
export interface StringOptions {
  /** OpenAPI format; date-time, date, byte and duration are checked. */
  readonly format?: string;
  /** Shortest allowed length. */
  readonly minLength?: number;
  /** Longest allowed length. */
  readonly maxLength?: number;
  /** Regular expression in RE2 syntax, as the API server reads it; one RE2 cannot compile is left to the API server. */
  readonly pattern?: string;
}

const DURATION = /^(0|-?([0-9]+(\.[0-9]*)?(ns|us|µs|ms|s|m|h))+)$/;

/**
 * A string schema.
 *
 * @param options - OpenAPI keywords
 * @returns the schema
 */
export function string(options: StringOptions = {}): Schema<string> {
  let schema: LooseSchema;
  switch (options.format) {
    case "date-time":
      schema = zl.iso.datetime({ offset: true });
      break;
    case "date":
      schema = zl.iso.date();
      break;
    case "byte":
      schema = zl.base64();
      break;
    case "duration":
      schema = zl.string().regex(DURATION, "must be a duration such as 1h30m");
      break;
    default:
      schema = zl.string();
  }
  if (options.minLength !== undefined) schema = schema.min(options.minLength);
  if (options.maxLength !== undefined) schema = schema.max(options.maxLength);
  if (options.pattern !== undefined) {
    const pattern = options.pattern;
    schema = schema.superRefine((value: string, ctx: RefineContext) => {
      if (re2(pattern)?.test(value) === false) {
        ctx.addIssue({
          code: "invalid_format",
          format: "regex",
          pattern,
          message: "must match " + pattern,
          input: value,
        });
      }
    });
  }
  return wrap(schema);
}

const re2Patterns = new Map<string, RE2JS | null>();

/**
 * A pattern compiled with RE2, the engine the API server uses, so it matches the same strings and
 * in time linear in the input: a JavaScript RegExp backtracks, and a pattern such as "^(a+)+$"
 * takes time exponential in the input. Compiled on first use, once per pattern. Undefined when RE2
 * cannot compile it (the API server would have refused the CRD).
 */
function re2(pattern: string): RE2JS | undefined {
  let compiled = re2Patterns.get(pattern);
  if (compiled === undefined) {
    try {
      compiled = RE2JS.compile(pattern);
    } catch {
      compiled = null;
    }
    re2Patterns.set(pattern, compiled);
  }
  return compiled ?? undefined;
}

/** OpenAPI keywords of an integer or number schema. */
export interface NumberOptions {
  /** OpenAPI format: int32 is range-checked, int64 must be a safe integer. */
  readonly format?: string;
  /** Lowest allowed value. */
  readonly minimum?: number;
  /** Highest allowed value. */
  readonly maximum?: number;
  /** Whether minimum itself is excluded. */
  readonly exclusiveMinimum?: boolean;
  /** Whether maximum itself is excluded. */
  readonly exclusiveMaximum?: boolean;
  /** The value must be a multiple of this. */
  readonly multipleOf?: number;
}

function bounded(schema: unknown, options: NumberOptions): Schema<number> {
  let out = schema as LooseSchema;
  if (options.minimum !== undefined)
    out = options.exclusiveMinimum === true ? out.gt(options.minimum) : out.gte(options.minimum);
  if (options.maximum !== undefined)
    out = options.exclusiveMaximum === true ? out.lt(options.maximum) : out.lte(options.maximum);
  if (options.multipleOf !== undefined) out = out.multipleOf(options.multipleOf);
  return wrap(out);
}

/**
 * An integer schema (int32 range-checked; int64 and unformatted integers must be safe integers).
 *
 * @param options - OpenAPI keywords
 * @returns the schema
 */
export function integer(options: NumberOptions = {}): Schema<number> {
  const base = options.format === "int32" ? zl.int32() : zl.int();
  return bounded(base, options);
}

/**
 * A number schema.
 *
 * @param options - OpenAPI keywords
 * @returns the schema
 */
export function number(options: NumberOptions = {}): Schema<number> {
  return bounded(zl.number(), options);
}

/**
 * A boolean schema.
 *
 * @returns the schema
 */
export function boolean(): Schema<boolean> {
  return wrap(zl.boolean());
}

/**
 * A schema accepting exactly one string.
 *
 * @param value - the value
 * @returns the schema
 */
export function literal<T extends string>(value: T): Schema<T> {
  return wrap(zl.literal(value));
}

/**
 * An enum schema: one of the listed values.
 *
 * @param values - the allowed values
 * @returns the schema
 */
export function literals<T extends string | number | boolean | null>(
  values: readonly T[],
): Schema<T> {
  if (values.length === 0) return wrap(zl.never());
  if (values.every((value): value is T & string => typeof value === "string")) {
    return wrap(zl.enum(values as readonly string[]));
  }
  const schemas = values.map((value) => zl.literal(value));
  return wrap(schemas.length === 1 && schemas[0] !== undefined ? schemas[0] : zl.union(schemas));
}

/**
 * x-kubernetes-int-or-string: an integer or a string.
 *
 * @returns the schema
 */
export function intOrString(): Schema<number | string> {
  return wrap(zl.union([zl.int(), zl.string()]));
}

/**
 * Any JSON value (x-kubernetes-preserve-unknown-fields without a type).
 *
 * @returns the schema
 */
export function freeFormJson(): Schema<FreeFormJson> {
  return ref(FreeFormJsonSchema);
}

/**
 * Kubernetes object metadata.
 *
 * @returns the schema
 */
export function objectMeta(): Schema<V1ObjectMeta> {
  return ref(ObjectMetaSchema);
}

/**
 * Kubernetes list metadata.
 *
 * @returns the schema
 */
export function listMeta(): Schema<V1ListMeta> {
  return ref(ListMetaSchema);
}

/** OpenAPI keywords of an array schema. */
export interface ArrayOptions {
  /** Fewest allowed items. */
  readonly minItems?: number;
  /** Most allowed items. */
  readonly maxItems?: number;
  /** x-kubernetes-list-type: set items must be unique, map items unique by their keys. */
  readonly listType?: "atomic" | "set" | "map";
  /** x-kubernetes-list-map-keys. */
  readonly listMapKeys?: readonly string[];
}

/**
 * An array schema.
 *
 * @param items - schema of every item
 * @param options - OpenAPI keywords
 * @returns the schema
 */
export function array<T>(items: Schema<T>, options: ArrayOptions = {}): Schema<T[]> {
  let schema = zl.array(unwrap(items));
  if (options.minItems !== undefined) schema = schema.min(options.minItems);
  if (options.maxItems !== undefined) schema = schema.max(options.maxItems);
  if (options.listType === "set") return wrap(schema.superRefine(checkSetItems));
  if (options.listType === "map")
    return wrap(schema.superRefine(checkMapItems(options.listMapKeys ?? [])));
  return wrap(schema);
}

/** OpenAPI keywords of an object or map schema. */
export interface ObjectOptions {
  /** Fewest allowed properties. */
  readonly minProperties?: number;
  /** Most allowed properties. */
  readonly maxProperties?: number;
  /** x-kubernetes-preserve-unknown-fields (unknown fields are always kept by these schemas). */
  readonly preserveUnknownFields?: boolean;
  /** x-kubernetes-embedded-resource. */
  readonly embeddedResource?: boolean;
}

function counted(value: unknown, options: ObjectOptions): unknown {
  const schema = value as LooseSchema;
  if (options.minProperties === undefined && options.maxProperties === undefined) return schema;
  return schema.superRefine(checkPropertyCount(options.minProperties, options.maxProperties));
}

/**
 * A map schema (additionalProperties).
 *
 * @param values - schema of every value
 * @param options - OpenAPI keywords
 * @returns the schema
 */
export function record<T>(
  values: Schema<T>,
  options: ObjectOptions = {},
): Schema<{ [key: string]: T }> {
  return wrap(counted(zl.record(zl.string(), unwrap(values)), options));
}

/**
 * An object of arbitrary JSON (x-kubernetes-preserve-unknown-fields without properties).
 *
 * @param options - OpenAPI keywords
 * @returns the schema
 */
export function freeFormObject(options: ObjectOptions = {}): Schema<FreeFormObject> {
  return wrap(counted(FreeFormObjectSchema, options));
}

/**
 * An object without fields (the API server prunes anything put in it).
 *
 * @returns the schema
 */
export function emptyObject(): Schema<{ [key: string]: never }> {
  return wrap(zl.record(zl.string(), zl.never()));
}

/**
 * An object schema. Unknown fields are kept rather than stripped, so objects read from a newer API
 * server survive a parse and write-back; the generated interfaces reject unknown fields at compile time.
 *
 * @param shape - schema of every field
 * @param options - OpenAPI keywords
 * @returns the schema
 */
export function object<T>(
  shape: ObjectShape<T>,
  options: ObjectOptions & { readonly required?: readonly (keyof T & string)[] } = {},
): Schema<T> {
  const required = new Set<string>(options.required ?? []);
  const fields: Record<string, LooseSchema> = {};
  for (const [key, field] of Object.entries(shape as Record<string, Schema<unknown>>)) {
    setOwn(fields, key, required.has(key) ? unwrap(field) : unwrap(field).optional());
  }
  return wrap(counted(zl.looseObject(fields), options));
}

/**
 * Makes a field optional.
 *
 * @param schema - the field's schema
 * @returns the schema
 */
export function optional<T>(schema: Schema<T>): Schema<T | undefined> {
  return wrap(unwrap(schema).optional());
}

/**
 * Allows null (OpenAPI nullable).
 *
 * @param schema - the schema
 * @returns the schema
 */
export function nullable<T>(schema: Schema<T>): Schema<T | null> {
  return wrap(unwrap(schema).nullable());
}

/**
 * Adds value validations (anyOf, oneOf, allOf, not) to a schema.
 *
 * @param schema - the schema
 * @param rules - the value validations
 * @returns the schema
 */
export function withRules<T>(schema: Schema<T>, rules: ValueValidation): Schema<T> {
  return wrap(
    unwrap(schema).superRefine(checkValueValidation(rules, Object.keys(rules).join("/"))),
  );
}

/**
 * Keeps the Kubernetes schema extensions as data on a schema (read with z.globalRegistry.get).
 *
 * @param schema - the schema
 * @param meta - the extensions
 * @returns the schema, registered with its metadata
 */
export function withMeta<T>(schema: Schema<T>, meta: KubernetesSchemaMeta): Schema<T> {
  return wrap(unwrap(schema).meta({ ...meta }));
}
