import { compileRule } from "./cel.js";
import { applyDefaults } from "./defaults.js";
import { normalizeFormat } from "./formats.js";
import { compilePattern } from "./pattern.js";
import { prune } from "./prune.js";
import type {
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
import { type ValidateOptions, validate } from "./validate.js";

/** Thrown by {@link compileStructuralSchema} when a schema is not structural; lists every problem. */
export class NonStructuralSchemaError extends Error {
  /** Each problem as `path: what is wrong`. */
  readonly problems: readonly string[];

  constructor(problems: readonly string[]) {
    super(
      `the schema is not structural (kube-apiserver would reject this CRD):\n  ${problems.join("\n  ")}\n` +
        "Give every property an explicit `type` (or x-kubernetes-int-or-string / " +
        "x-kubernetes-preserve-unknown-fields), and use no $ref, no additionalProperties next to properties.",
    );
    this.name = "NonStructuralSchemaError";
    this.problems = problems;
  }
}

const SCHEMA_TYPES = new Set<string>(["object", "array", "string", "integer", "number", "boolean"]);
const LIST_TYPES = new Set<string>(["atomic", "set", "map"]);
const MAP_TYPES = new Set<string>(["atomic", "granular"]);

type Raw = Record<string, unknown>;

interface CompileContext {
  problems: string[];
  skipped: SkippedRule[];
}

function isRecord(value: unknown): value is Raw {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

function numberField(raw: Raw, key: string, path: string, ctx: CompileContext): number | undefined {
  const value = raw[key];
  if (value === undefined) return undefined;
  if (typeof value !== "number" || !Number.isFinite(value)) {
    ctx.problems.push(`${path}.${key}: must be a number, got ${JSON.stringify(value)}`);
    return undefined;
  }
  return value;
}

function compileValueValidation(
  raw: Raw,
  path: string,
  ctx: CompileContext,
  target: ValueValidation,
): void {
  const type = raw.type;
  if (type !== undefined) {
    if (typeof type !== "string" || !SCHEMA_TYPES.has(type)) {
      ctx.problems.push(`${path}.type: unsupported type ${JSON.stringify(type)}`);
    } else {
      target.type = type as SchemaType;
    }
  }
  if (typeof raw.format === "string" && raw.format.length > 0) {
    const format = normalizeFormat(raw.format, target.type);
    if (format !== undefined) target.format = format;
  }
  if (raw.enum !== undefined) {
    if (!Array.isArray(raw.enum)) ctx.problems.push(`${path}.enum: must be a list`);
    else target.enum = raw.enum;
  }
  for (const key of [
    "maximum",
    "minimum",
    "multipleOf",
    "maxLength",
    "minLength",
    "maxItems",
    "minItems",
    "maxProperties",
    "minProperties",
  ] as const) {
    const value = numberField(raw, key, path, ctx);
    if (value !== undefined) target[key] = value;
  }
  if (raw.exclusiveMaximum === true) target.exclusiveMaximum = true;
  if (raw.exclusiveMinimum === true) target.exclusiveMinimum = true;
  if (typeof raw.pattern === "string") {
    target.pattern = raw.pattern;
    try {
      target.patternRE2 = compilePattern(raw.pattern);
    } catch (error) {
      ctx.problems.push(`${path}.pattern: ${(error as Error).message}`);
    }
  }
  if (raw.required !== undefined) {
    if (!Array.isArray(raw.required) || raw.required.some((r) => typeof r !== "string")) {
      ctx.problems.push(`${path}.required: must be a list of property names`);
    } else if (raw.required.length > 0) {
      target.required = raw.required as string[];
    }
  }
  for (const key of ["allOf", "anyOf", "oneOf"] as const) {
    const branches = raw[key];
    if (branches === undefined) continue;
    if (!Array.isArray(branches)) {
      ctx.problems.push(`${path}.${key}: must be a list of schemas`);
      continue;
    }
    target[key] = branches.map((b, i) => compileNested(b, `${path}.${key}[${i}]`, ctx));
  }
  if (raw.not !== undefined) target.not = compileNested(raw.not, `${path}.not`, ctx);
}

/** A value-validation-only schema (inside allOf/anyOf/oneOf/not). */
function compileNested(raw: unknown, path: string, ctx: CompileContext): ValueValidation {
  if (!isRecord(raw)) {
    ctx.problems.push(`${path}: must be a schema object`);
    return {};
  }
  const out: ValueValidation = {};
  compileValueValidation(raw, path, ctx, out);
  if (isRecord(raw.properties)) {
    const props = new Map<string, ValueValidation>();
    for (const [k, v] of Object.entries(raw.properties)) {
      props.set(k, compileNested(v, `${path}.properties[${k}]`, ctx));
    }
    out.properties = props;
  }
  if (isRecord(raw.items)) out.items = compileNested(raw.items, `${path}.items`, ctx);
  if (isRecord(raw.additionalProperties)) {
    out.additionalProperties = compileNested(
      raw.additionalProperties,
      `${path}.additionalProperties`,
      ctx,
    );
  }
  return out;
}

function compileNode(raw: unknown, path: string, ctx: CompileContext, isRoot: boolean): SchemaNode {
  const node: SchemaNode = {
    preserveUnknownFields: false,
    embeddedResource: false,
    intOrString: false,
    nullable: false,
    hasDefault: false,
  };
  if (!isRecord(raw)) {
    ctx.problems.push(`${path}: must be a schema object`);
    return node;
  }
  if (raw.$ref !== undefined) ctx.problems.push(`${path}.$ref: Forbidden: $ref is not allowed`);
  compileValueValidation(raw, path, ctx, node);
  node.preserveUnknownFields = raw["x-kubernetes-preserve-unknown-fields"] === true;
  node.embeddedResource = raw["x-kubernetes-embedded-resource"] === true;
  node.intOrString = raw["x-kubernetes-int-or-string"] === true;
  node.nullable = raw.nullable === true;
  if ("default" in raw) {
    node.hasDefault = true;
    node.default = raw.default;
  }
  if (node.type === undefined && !node.intOrString && !node.preserveUnknownFields && !isRoot) {
    ctx.problems.push(
      `${path}.type: Required value: must not be empty for specified object fields`,
    );
  }
  if (isRoot && node.type !== "object") {
    ctx.problems.push(`${path}.type: Invalid value: must be object at the root`);
  }
  if (isRecord(raw.properties)) {
    if (raw.additionalProperties !== undefined && raw.additionalProperties !== true) {
      ctx.problems.push(
        `${path}.additionalProperties: Forbidden: additionalProperties and properties are mutual exclusive`,
      );
    }
    const props = new Map<string, SchemaNode>();
    for (const [k, v] of Object.entries(raw.properties)) {
      props.set(k, compileNode(v, `${path}.properties[${k}]`, ctx, false));
    }
    node.properties = props;
  }
  if (raw.items !== undefined) {
    if (Array.isArray(raw.items)) {
      ctx.problems.push(`${path}.items: Forbidden: items must be a schema object and not an array`);
    } else {
      node.items = compileNode(raw.items, `${path}.items`, ctx, false);
    }
  } else if (node.type === "array") {
    ctx.problems.push(`${path}.items: Required value: must be specified`);
  }
  if (raw.additionalProperties === false) {
    ctx.problems.push(`${path}.additionalProperties: Forbidden: must not be false`);
  } else if (raw.additionalProperties === true) {
    node.preserveUnknownFields = true;
  } else if (isRecord(raw.additionalProperties)) {
    node.additionalProperties = compileNode(
      raw.additionalProperties,
      `${path}.additionalProperties`,
      ctx,
      false,
    );
  }
  const listType = raw["x-kubernetes-list-type"];
  if (listType !== undefined) {
    if (typeof listType !== "string" || !LIST_TYPES.has(listType)) {
      ctx.problems.push(`${path}.x-kubernetes-list-type: must be atomic, set or map`);
    } else node.listType = listType as ListType;
  }
  const keys = raw["x-kubernetes-list-map-keys"];
  if (keys !== undefined) {
    if (!Array.isArray(keys) || keys.some((k) => typeof k !== "string")) {
      ctx.problems.push(`${path}.x-kubernetes-list-map-keys: must be a list of field names`);
    } else node.listMapKeys = keys as string[];
  }
  if (
    node.listType === "map" &&
    (node.listMapKeys === undefined || node.listMapKeys.length === 0)
  ) {
    ctx.problems.push(
      `${path}.x-kubernetes-list-map-keys: Required value: must not be empty if x-kubernetes-list-type is map`,
    );
  }
  const mapType = raw["x-kubernetes-map-type"];
  if (mapType !== undefined) {
    if (typeof mapType !== "string" || !MAP_TYPES.has(mapType)) {
      ctx.problems.push(`${path}.x-kubernetes-map-type: must be atomic or granular`);
    } else node.mapType = mapType as MapType;
  }
  const validations = raw["x-kubernetes-validations"];
  if (Array.isArray(validations)) {
    const rules: CompiledRule[] = [];
    for (const entry of validations) {
      if (!isRecord(entry) || typeof entry.rule !== "string") {
        ctx.problems.push(`${path}.x-kubernetes-validations: each entry needs a string rule`);
        continue;
      }
      const compiled = compileRule(entry, path);
      if ("error" in compiled) ctx.skipped.push(compiled.error);
      else rules.push(compiled.rule);
    }
    if (rules.length > 0) node.rules = rules;
  }
  return node;
}

function stepInto(node: SchemaNode | undefined, segment: string | number): SchemaNode | undefined {
  if (node === undefined) return undefined;
  if (node.type === "array" || (node.items !== undefined && typeof segment === "number")) {
    const items = node.items;
    if (items === undefined) return undefined;
    if (typeof segment === "number") return items;
    return stepInto(items, segment);
  }
  if (typeof segment === "string") {
    const prop = node.properties?.get(segment);
    if (prop !== undefined) return prop;
  }
  return node.additionalProperties;
}

class CompiledStructuralSchema implements StructuralSchema {
  readonly root: SchemaNode;
  readonly skippedRules: readonly SkippedRule[];

  constructor(root: SchemaNode, skipped: readonly SkippedRule[]) {
    this.root = root;
    this.skippedRules = skipped;
  }

  prune(obj: Record<string, unknown>): string[] {
    return prune(this.root, obj);
  }

  applyDefaults(obj: Record<string, unknown>, options?: { keepNulls?: boolean }): void {
    applyDefaults(this.root, obj, options);
  }

  validate(obj: unknown, old?: unknown, options?: ValidateOptions): FieldCause[] {
    return validate(this.root, obj, old, options);
  }

  nodeAt(path: readonly (string | number)[]): SchemaNode | undefined {
    let node: SchemaNode | undefined = this.root;
    for (const segment of path) {
      node = stepInto(node, segment);
      if (node === undefined) return undefined;
    }
    return node;
  }

  listMapKeysAt(path: readonly (string | number)[]): readonly string[] | undefined {
    const node = this.nodeAt(path);
    return node?.listType === "map" ? node.listMapKeys : undefined;
  }

  listTypeAt(path: readonly (string | number)[]): ListType | undefined {
    const node = this.nodeAt(path);
    if (node === undefined || node.type !== "array") return undefined;
    return node.listType ?? "atomic";
  }

  mapTypeAt(path: readonly (string | number)[]): MapType | undefined {
    const node = this.nodeAt(path);
    if (node === undefined || node.type !== "object") return undefined;
    return node.mapType ?? "granular";
  }
}

/**
 * Compiles a CRD version's `openAPIV3Schema` into a {@link StructuralSchema}.
 *
 * CEL rules that cannot be compiled do not fail the compilation: they are listed in
 * {@link StructuralSchema.skippedRules} and not enforced.
 *
 * @param openAPIV3Schema - `spec.versions[].schema.openAPIV3Schema` of a CRD.
 * @throws NonStructuralSchemaError when the schema is not structural.
 * @example
 * ```ts
 * const schema = compileStructuralSchema(crd.spec.versions[0].schema.openAPIV3Schema);
 * schema.prune(obj);
 * schema.applyDefaults(obj);
 * const causes = schema.validate(obj);
 * ```
 */
export function compileStructuralSchema(openAPIV3Schema: unknown): StructuralSchema {
  const ctx: CompileContext = { problems: [], skipped: [] };
  if (!isRecord(openAPIV3Schema)) {
    throw new NonStructuralSchemaError([
      "openAPIV3Schema: Required value: a schema object is required",
    ]);
  }
  const root = compileNode(openAPIV3Schema, "openAPIV3Schema", ctx, true);
  if (ctx.problems.length > 0) throw new NonStructuralSchemaError(ctx.problems);
  return new CompiledStructuralSchema(root, ctx.skipped);
}
