import * as z from "zod";

/** A Kubernetes structural OpenAPI v3 schema node (the subset CRDs accept). */
export interface StructuralSchema {
  /**
   * The OpenAPI type of the node; absent only where `x-kubernetes-int-or-string` or
   * preserve-unknown allows it.
   */
  type?: "object" | "array" | "string" | "integer" | "number" | "boolean";
  /** Documentation. */
  description?: string;
  /** The schema of each named field of an object; fields not listed are pruned unless preserved. */
  properties?: Record<string, StructuralSchema>;
  /** Names of the fields that must be present; the API server rejects an object without one. */
  required?: string[];
  /** Map values (mutually exclusive with `properties`). */
  additionalProperties?: StructuralSchema;
  /** The schema every element of an array follows. */
  items?: StructuralSchema;
  /** Allowed values. */
  enum?: unknown[];
  /** Default applied by the API server. */
  default?: unknown;
  /** `null` is allowed. */
  nullable?: boolean;
  /** Format understood by Kubernetes (int32, int64, date-time, …). */
  format?: string;
  /** Minimum string length. */
  minLength?: number;
  /** Maximum string length. */
  maxLength?: number;
  /** Regular expression (Go RE2 syntax). */
  pattern?: string;
  /** Smallest allowed value, inclusive (e.g. `1` for a replica count). */
  minimum?: number;
  /** Largest allowed value, inclusive. */
  maximum?: number;
  /** Exclusive minimum flag (OpenAPI v3.0 style). */
  exclusiveMinimum?: boolean;
  /** Exclusive maximum flag (OpenAPI v3.0 style). */
  exclusiveMaximum?: boolean;
  /** Minimum array length. */
  minItems?: number;
  /** Maximum array length. */
  maxItems?: number;
  /** Minimum number of object properties. */
  minProperties?: number;
  /** Maximum number of object properties. */
  maxProperties?: number;
  /** Number must be a multiple of this. */
  multipleOf?: number;
  /** Keep fields not in the schema. */
  "x-kubernetes-preserve-unknown-fields"?: boolean;
  /** `atomic`, `set` or `map`. */
  "x-kubernetes-list-type"?: "atomic" | "set" | "map";
  /** Keys of a `map` list. */
  "x-kubernetes-list-map-keys"?: string[];
  /** `atomic` or `granular`. */
  "x-kubernetes-map-type"?: "atomic" | "granular";
  /** An embedded Kubernetes object. */
  "x-kubernetes-embedded-resource"?: boolean;
}

/** Raised when a zod schema cannot be expressed as a Kubernetes structural schema. */
export class NonStructuralSchemaError extends Error {
  /** Where in the zod schema, e.g. `spec.backend.image` or `spec.tags[]`. */
  readonly path: string;
  /** Creates the error. */
  constructor(path: string, problem: string) {
    super(`${path || "<root>"}: ${problem}`);
    this.name = "NonStructuralSchemaError";
    this.path = path;
  }
}

/**
 * The string formats kube-apiserver checks in a CRD schema (apiextensions-apiserver's supported
 * formats), spelled as the server compares them: dashes removed, so `date-time` is `datetime` and
 * `k8s-short-name` is `k8sshortname`. A string format outside this set is accepted in a schema but never
 * checked, and {@link zodToStructuralSchema} keeps zod's own `pattern` instead.
 *
 * @example
 * ```ts
 * KUBERNETES_STRING_FORMATS.has("date-time".replaceAll("-", "")); // true
 * KUBERNETES_STRING_FORMATS.has("emoji"); // false
 * ```
 */
export const KUBERNETES_STRING_FORMATS: ReadonlySet<string> = new Set([
  "bsonobjectid",
  "uri",
  "email",
  "hostname",
  "ipv4",
  "ipv6",
  "cidr",
  "mac",
  "uuid",
  "uuid3",
  "uuid4",
  "uuid5",
  "isbn",
  "isbn10",
  "isbn13",
  "creditcard",
  "ssn",
  "hexcolor",
  "rgbcolor",
  "byte",
  "password",
  "date",
  "duration",
  "datetime",
  "k8sshortname",
  "k8slongname",
]);

// zod formats whose Kubernetes name differs.
const FORMAT_ALIASES: Record<string, string> = {
  url: "uri",
  base64: "byte",
  ipv4: "ipv4",
  ipv6: "ipv6",
};

const INT32_MIN = -2_147_483_648;
const INT32_MAX = 2_147_483_647;

type JsonSchema = Record<string, unknown>;

function checkPattern(path: string, pattern: string): void {
  // Go's RE2 has no lookaround and no backreferences; the API server refuses such CRDs.
  if (/\(\?<?[=!]/.test(pattern) || /\\[1-9]/.test(pattern)) {
    throw new NonStructuralSchemaError(
      path,
      `pattern ${JSON.stringify(pattern)} uses lookaround or a backreference, which Kubernetes (Go RE2) does not support; rewrite the regex`,
    );
  }
}

function join(path: string, key: string): string {
  return path ? `${path}.${key}` : key;
}

function convert(node: JsonSchema, path: string): StructuralSchema {
  for (const combinator of ["anyOf", "oneOf", "allOf", "not"]) {
    if (node[combinator] !== undefined) {
      const merged =
        combinator === "anyOf" || combinator === "oneOf"
          ? mergeEnumUnion(node[combinator], path)
          : undefined;
      if (merged) return withCommon(merged, node, path);
      throw new NonStructuralSchemaError(
        path,
        combinator === "allOf"
          ? "intersections (z.intersection / .and) are not structural; merge the objects with .extend()"
          : combinator === "not"
            ? "negated schemas are not structural"
            : "unions of different types are not structural (every field needs one type); use a discriminated object with optional fields, or z.enum for strings",
      );
    }
  }
  if (node.$ref !== undefined) {
    throw new NonStructuralSchemaError(
      path,
      "recursive or referenced schemas are not structural; inline the type",
    );
  }
  if (node.prefixItems !== undefined) {
    throw new NonStructuralSchemaError(
      path,
      "tuples are not structural; use an array of one type or an object",
    );
  }
  const type = node.type;
  if (type === undefined) {
    if (node.const !== undefined) return withCommon(literalSchema([node.const], path), node, path);
    if (Array.isArray(node.enum)) return withCommon(literalSchema(node.enum, path), node, path);
    // z.unknown() / z.any(): keep whatever the client sends.
    return withCommon({ "x-kubernetes-preserve-unknown-fields": true }, node, path);
  }
  if (Array.isArray(type)) {
    throw new NonStructuralSchemaError(
      path,
      `a field must have exactly one type, got ${type.join(" | ")}`,
    );
  }
  switch (type) {
    case "object":
      return withCommon(objectSchema(node, path), node, path);
    case "array": {
      if (node.items === undefined || Array.isArray(node.items)) {
        throw new NonStructuralSchemaError(path, "arrays need one item type");
      }
      const items = node.items as JsonSchema;
      if (
        (items.anyOf !== undefined || items.oneOf !== undefined) &&
        node.minItems === node.maxItems
      ) {
        if (!mergeEnumUnion(items.anyOf ?? items.oneOf, path)) {
          throw new NonStructuralSchemaError(
            path,
            "tuples are not structural; use an array of one type or an object",
          );
        }
      }
      const out: StructuralSchema = {
        type: "array",
        items: convert(node.items as JsonSchema, `${path}[]`),
      };
      if (typeof node.minItems === "number") out.minItems = node.minItems;
      if (typeof node.maxItems === "number") out.maxItems = node.maxItems;
      return withCommon(out, node, path);
    }
    case "string":
      return withCommon(stringSchema(node, path), node, path);
    case "integer":
    case "number":
      return withCommon(numberSchema(node, type as "integer" | "number"), node, path);
    case "boolean":
      return withCommon({ type: "boolean" }, node, path);
    case "null":
      throw new NonStructuralSchemaError(
        path,
        "a field cannot be only null; use .nullable() on a typed field",
      );
    default:
      throw new NonStructuralSchemaError(path, `unsupported type ${JSON.stringify(type)}`);
  }
}

function literalSchema(values: unknown[], path: string): StructuralSchema {
  const types = new Set(
    values.map((v) => (v === null ? "null" : Number.isInteger(v) ? "integer" : typeof v)),
  );
  const nullable = types.delete("null");
  if (types.size !== 1) {
    throw new NonStructuralSchemaError(path, "enum values of different types are not structural");
  }
  const [jsType] = [...types];
  const type =
    jsType === "string"
      ? "string"
      : jsType === "integer"
        ? "integer"
        : jsType === "number"
          ? "number"
          : jsType === "boolean"
            ? "boolean"
            : undefined;
  if (!type)
    throw new NonStructuralSchemaError(path, `enum values of type ${jsType} are not supported`);
  const out: StructuralSchema = { type, enum: values.filter((v) => v !== null) };
  if (nullable) out.nullable = true;
  return out;
}

/** A union of literals / enums of the same type (e.g. z.union([z.literal("a"), z.literal("b")])) is an enum. */
function mergeEnumUnion(options: unknown, path: string): StructuralSchema | undefined {
  if (!Array.isArray(options)) return undefined;
  const values: unknown[] = [];
  let nullable = false;
  for (const option of options as JsonSchema[]) {
    if (option.type === "null") {
      nullable = true;
      continue;
    }
    if (option.const !== undefined) values.push(option.const);
    else if (Array.isArray(option.enum)) values.push(...option.enum);
    else return undefined;
  }
  if (values.length === 0) return undefined;
  const out = literalSchema(values, path);
  if (nullable) out.nullable = true;
  return out;
}

function objectSchema(node: JsonSchema, path: string): StructuralSchema {
  const properties = node.properties as Record<string, JsonSchema> | undefined;
  const additional = node.additionalProperties;
  const out: StructuralSchema = { type: "object" };
  if (properties && Object.keys(properties).length > 0) {
    out.properties = {};
    for (const [key, child] of Object.entries(properties)) {
      out.properties[key] = convert(child, join(path, key));
    }
    const required = (node.required as string[] | undefined)?.filter((k) => k in properties);
    if (required && required.length > 0) out.required = [...required];
    if (
      additional !== undefined &&
      additional !== false &&
      !(typeof additional === "object" && Object.keys(additional as object).length === 0)
    ) {
      throw new NonStructuralSchemaError(
        path,
        "an object cannot have both known properties and a catch-all (z.looseObject / .catchall); pick one",
      );
    }
  } else if (additional !== undefined && additional !== false) {
    if (additional === true || Object.keys(additional as object).length === 0) {
      out["x-kubernetes-preserve-unknown-fields"] = true;
    } else {
      out.additionalProperties = convert(additional as JsonSchema, `${path}{}`);
    }
  } else if (!properties) {
    // An empty z.object({}) keeps nothing; that is structural as is.
  }
  if (typeof node.minProperties === "number") out.minProperties = node.minProperties;
  if (typeof node.maxProperties === "number") out.maxProperties = node.maxProperties;
  return out;
}

function stringSchema(node: JsonSchema, path: string): StructuralSchema {
  const out: StructuralSchema = { type: "string" };
  if (typeof node.minLength === "number") out.minLength = node.minLength;
  if (typeof node.maxLength === "number") out.maxLength = node.maxLength;
  const rawFormat = typeof node.format === "string" ? node.format : undefined;
  const format = rawFormat ? (FORMAT_ALIASES[rawFormat] ?? rawFormat) : undefined;
  if (format && KUBERNETES_STRING_FORMATS.has(format.replaceAll("-", ""))) {
    // zod adds its own regex for its formats; the API server checks the format itself.
    out.format = format;
  } else if (typeof node.pattern === "string") {
    checkPattern(path, node.pattern);
    out.pattern = node.pattern;
  }
  if (Array.isArray(node.enum)) out.enum = [...node.enum];
  if (node.const !== undefined) out.enum = [node.const];
  return out;
}

function numberSchema(node: JsonSchema, type: "integer" | "number"): StructuralSchema {
  const out: StructuralSchema = { type };
  let min = typeof node.minimum === "number" ? node.minimum : undefined;
  let max = typeof node.maximum === "number" ? node.maximum : undefined;
  if (type === "integer") {
    if (min === INT32_MIN && max === INT32_MAX) {
      out.format = "int32";
    } else if (min === Number.MIN_SAFE_INTEGER && max === Number.MAX_SAFE_INTEGER) {
      // zod's z.int() bounds are JavaScript's safe range, not a user constraint.
      out.format = "int64";
      min = undefined;
      max = undefined;
    } else if (min === Number.MIN_SAFE_INTEGER) {
      min = undefined;
    } else if (max === Number.MAX_SAFE_INTEGER) {
      max = undefined;
    }
  }
  if (min !== undefined) out.minimum = min;
  if (max !== undefined) out.maximum = max;
  if (node.exclusiveMinimum === true || node.exclusiveMaximum === true) {
    if (node.exclusiveMinimum === true) out.exclusiveMinimum = true;
    if (node.exclusiveMaximum === true) out.exclusiveMaximum = true;
  }
  if (typeof node.exclusiveMinimum === "number") {
    out.minimum = node.exclusiveMinimum;
    out.exclusiveMinimum = true;
  }
  if (typeof node.exclusiveMaximum === "number") {
    out.maximum = node.exclusiveMaximum;
    out.exclusiveMaximum = true;
  }
  if (typeof node.multipleOf === "number") out.multipleOf = node.multipleOf;
  if (Array.isArray(node.enum)) out.enum = [...node.enum];
  return out;
}

function withCommon(out: StructuralSchema, node: JsonSchema, _path: string): StructuralSchema {
  if (typeof node.description === "string") out.description = node.description;
  if (node.default !== undefined) out.default = node.default;
  if (node.nullable === true) out.nullable = true;
  return out;
}

/**
 * Converts a zod schema to a Kubernetes structural OpenAPI v3 schema: starts from zod 4's
 * `z.toJSONSchema()` (OpenAPI 3.0 target, input shape, so `.default()` fields are optional) and maps it to
 * what a CRD accepts; unions of different types, intersections, tuples, recursive types and RE2-incompatible
 * patterns are refused with a {@link NonStructuralSchemaError} naming the zod path.
 *
 * @example
 * ```ts
 * zodToStructuralSchema(z.object({ image: z.string().min(1), size: z.int32().optional() }), "spec");
 * // { type: "object", properties: { image: {...}, size: { type: "integer", format: "int32", ... } }, required: ["image"] }
 * ```
 */
export function zodToStructuralSchema(schema: z.ZodType, path = ""): StructuralSchema {
  let json: JsonSchema;
  try {
    json = z.toJSONSchema(schema, {
      target: "openapi-3.0",
      io: "input",
      reused: "inline",
      cycles: "throw",
      unrepresentable: "throw",
    }) as JsonSchema;
  } catch (error) {
    throw new NonStructuralSchemaError(
      path,
      `zod cannot express this schema as JSON Schema (${error instanceof Error ? error.message : String(error)}); remove transforms, functions, bigint, dates or recursion`,
    );
  }
  delete json.$schema;
  return convert(json, path);
}
