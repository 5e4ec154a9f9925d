import { RE2JS } from "re2js";
import { CodegenError, type InputLocation } from "../errors.js";
import type { CrdDefinition, CrdVersion, SchemaNode } from "../load.js";
import { escapeDocText, renderDoc, splitDescription } from "./docs.js";
import { itemName, jsonLiteral, literalKey, pascal, propertyKey } from "./names.js";

/** One kind at one version, the unit the emitter works on. */
export interface KindVersion {
  /** The CRD the kind comes from, with its names and scope. */
  readonly crd: CrdDefinition;
  /** The version of the CRD being emitted. */
  readonly version: CrdVersion;
}

/** A rendered reference to a schema node: its TypeScript type, zod schema and defaults. */
interface Shape {
  ts(): string;
  zod(): string;
  /** Body of a DefaultsNode literal for the value's children, or "" when there are none. */
  defaults(): string;
  /** Whether defaults() is non-empty (known before names are assigned). */
  readonly hasDefaults?: boolean;
}

interface Property {
  readonly key: string;
  readonly node: SchemaNode;
  readonly shape: Shape;
  readonly required: boolean;
}

/** A named object type (interface + schema + defaults), shared by every structurally equal node. */
interface NamedType {
  readonly id: number;
  readonly node: SchemaNode;
  readonly candidates: string[];
  name: string;
  properties: Property[];
  /** Whether the type has defaults (in it or below it). */
  hasDefaults: boolean;
  /** Fixed name for kind roots (never renamed or shared). */
  readonly root: KindVersion | undefined;
}

const ALLOWED_KEYS = new Set([
  "type",
  "format",
  "description",
  "title",
  "properties",
  "required",
  "items",
  "additionalProperties",
  "enum",
  "default",
  "nullable",
  "minimum",
  "maximum",
  "exclusiveMinimum",
  "exclusiveMaximum",
  "multipleOf",
  "minLength",
  "maxLength",
  "pattern",
  "minItems",
  "maxItems",
  "uniqueItems",
  "minProperties",
  "maxProperties",
  "allOf",
  "anyOf",
  "oneOf",
  "not",
  "example",
  "externalDocs",
  "x-kubernetes-int-or-string",
  "x-kubernetes-preserve-unknown-fields",
  "x-kubernetes-embedded-resource",
  "x-kubernetes-list-type",
  "x-kubernetes-list-map-keys",
  "x-kubernetes-map-type",
  "x-kubernetes-validations",
]);

const VALUE_VALIDATION_KEYS = new Set([
  "required",
  "enum",
  "pattern",
  "minimum",
  "maximum",
  "minLength",
  "maxLength",
  "minItems",
  "maxItems",
  "minProperties",
  "maxProperties",
  "properties",
  "items",
  "allOf",
  "anyOf",
  "oneOf",
  "not",
  "description",
  "format",
  "type",
]);

const RESERVED = new Set([
  "z",
  "c",
  "Model",
  "ModelData",
  "createTypeMetaGuard",
  "TypeMetaGuard",
  "t",
  "V1ObjectMeta",
  "V1ListMeta",
  "Object",
  "Array",
  "String",
  "Number",
  "Boolean",
  "Record",
  "Date",
  "Error",
  "Map",
  "Set",
  "Promise",
  "JSON",
]);

function isRecord(value: unknown): value is SchemaNode {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The two modules of one group/version, as TypeScript source. */
export interface GroupVersionSource {
  /**
   * The public module (`<version>.ts`): the interfaces, the `new Kind({...})` constructors, and a
   * re-export of everything in the runtime module.
   */
  readonly types: string;
  /**
   * The runtime module (`<version>.runtime.ts`): zod schemas, defaults, Model classes and resource
   * metadata, each typed against the interfaces, so that compiling this source proves they agree.
   */
  readonly runtime: string;
}

/**
 * Emits the modules of one API group/version: interfaces, zod schemas, defaults, Model classes and
 * resource metadata for every kind.
 *
 * @param group - API group
 * @param version - API version
 * @param kinds - the kinds served at this group/version
 * @returns the two module sources
 */
export function emitGroupVersion(
  group: string,
  version: string,
  kinds: readonly KindVersion[],
): GroupVersionSource {
  return new GroupVersionEmitter(group, version, kinds).emit();
}

/** What one named type or kind contributes to each module. */
interface Rendered {
  types: string;
  runtime: string;
}

class GroupVersionEmitter {
  private readonly named = new Map<string, NamedType>();
  /** The key id (see canonicalKey) of every named node, and of the raw node it was merged from. */
  private readonly nodeKeys = new WeakMap<object, string>();
  /** Canonical keys to their short ids. */
  private readonly keyIds = new Map<string, string>();
  /** Named types in post-order (dependencies first), the order schemas must be declared in. */
  private readonly order: NamedType[] = [];
  private nextId = 0;
  /** Whether the interfaces reference a type of the shared runtime (the free-form JSON types). */
  private usesCommonTypes = false;
  private location: InputLocation = { source: "" };

  constructor(
    private readonly group: string,
    private readonly version: string,
    private readonly kinds: readonly KindVersion[],
  ) {}

  emit(): GroupVersionSource {
    const roots: NamedType[] = [];
    for (const kv of this.kinds) {
      const schema = kv.version.schema;
      this.location = {
        source: kv.crd.source,
        document: kv.crd.document,
        version: kv.version.name,
        path: `${kv.version.path}.schema.openAPIV3Schema`,
      };
      roots.push(this.visitRoot(kv, schema));
    }
    this.assignNames(roots);
    return this.render();
  }

  /** A type of the shared runtime, referenced from the interfaces module. */
  private commonType(name: string): string {
    this.usesCommonTypes = true;
    return `c.${name}`;
  }

  private fail(path: string, problem: string): never {
    throw new CodegenError({ ...this.location, path }, problem);
  }

  // ---------------------------------------------------------------- schema walk

  private visitRoot(kv: KindVersion, schema: SchemaNode): NamedType {
    const path = this.location.path ?? "";
    this.checkKeys(schema, path);
    const named: NamedType = {
      id: this.nextId++,
      node: schema,
      candidates: [kv.crd.kind],
      name: kv.crd.kind,
      properties: [],
      hasDefaults: false,
      root: kv,
    };
    const properties = isRecord(schema.properties) ? schema.properties : {};
    named.properties = this.visitProperties(schema, properties, kv.crd.kind, path, true);
    named.hasDefaults = hasDefaults(named.properties);
    this.order.push(named);
    return named;
  }

  private visitProperties(
    node: SchemaNode,
    properties: SchemaNode,
    hint: string,
    path: string,
    root: boolean,
  ): Property[] {
    const required = new Set(
      Array.isArray(node.required) ? node.required.filter((r) => typeof r === "string") : [],
    );
    const out: Property[] = [];
    for (const key of Object.keys(properties)) {
      const child = properties[key];
      const childPath = `${path}.properties.${key}`;
      if (!isRecord(child)) this.fail(childPath, "a property schema must be an object");
      if (root && (key === "apiVersion" || key === "kind" || key === "metadata")) {
        out.push({
          key,
          node: child,
          shape: this.rootMetaShape(key),
          required: key !== "metadata",
        });
        continue;
      }
      out.push({
        key,
        node: child,
        shape: this.visit(child, hint + pascal(key), childPath),
        required: required.has(key),
      });
    }
    if (root) {
      for (const key of ["apiVersion", "kind", "metadata"]) {
        if (!(key in properties)) {
          out.unshift({
            key,
            node: {},
            shape: this.rootMetaShape(key),
            required: key !== "metadata",
          });
        }
      }
      out.sort((a, b) => rootOrder(a.key) - rootOrder(b.key));
    }
    return out;
  }

  private rootMetaShape(key: string): Shape {
    // Filled in by render(): the kind root knows its literal apiVersion and kind.
    return { ts: () => key, zod: () => key, defaults: () => "" };
  }

  private checkKeys(node: SchemaNode, path: string): void {
    for (const key of Object.keys(node)) {
      if (!ALLOWED_KEYS.has(key)) {
        this.fail(
          `${path}.${key}`,
          `the schema keyword ${JSON.stringify(key)} cannot be mapped (it is not allowed in a structural CRD schema); remove it or express it with supported keywords`,
        );
      }
    }
    if (node.pattern !== undefined)
      checkPattern(node.pattern, `${path}.pattern`, (at, problem) => this.fail(at, problem));
    if (node.uniqueItems === true) {
      this.fail(
        `${path}.uniqueItems`,
        "uniqueItems: true is not allowed in CRD schemas; use x-kubernetes-list-type: set",
      );
    }
  }

  /** Merges allOf branches that only carry value validations into the node. */
  private normalise(node: SchemaNode, path: string): SchemaNode {
    if (!Array.isArray(node.allOf)) return node;
    const merged: Record<string, unknown> = { ...node };
    delete merged.allOf;
    const rest: unknown[] = [];
    node.allOf.forEach((branch, index) => {
      if (!isRecord(branch))
        this.fail(`${path}.allOf[${index}]`, "an allOf branch must be an object");
      for (const [key, value] of Object.entries(branch)) {
        if (key === "description") continue;
        if (key === "enum" && Array.isArray(value)) {
          const previous = merged.enum;
          merged.enum = Array.isArray(previous)
            ? previous.filter((a) => value.some((b) => JSON.stringify(a) === JSON.stringify(b)))
            : value;
        } else if (!(key in merged) || JSON.stringify(merged[key]) === JSON.stringify(value)) {
          if (key === "properties" || key === "items" || key === "type") {
            if (!(key in merged)) {
              rest.push(branch);
              return;
            }
          } else merged[key] = value;
        } else {
          rest.push(branch);
          return;
        }
      }
    });
    if (rest.length > 0) merged.allOf = rest;
    return merged;
  }

  private visit(rawNode: SchemaNode, hint: string, path: string): Shape {
    this.checkKeys(rawNode, path);
    const node = this.normalise(rawNode, path);
    const nullable = node.nullable === true;
    const wrap = (shape: Shape): Shape =>
      nullable
        ? { ...shape, ts: () => `${shape.ts()} | null`, zod: () => `c.nullable(${shape.zod()})` }
        : shape;
    const checks = this.valueValidationChecks(node, path);
    const meta = this.metaCall(node);
    const finish = (shape: Shape): Shape =>
      wrap(
        checks === "" && meta === ""
          ? shape
          : { ...shape, zod: () => wrapZod(shape.zod(), checks, meta) },
      );

    if (node["x-kubernetes-int-or-string"] === true) {
      return finish({
        ts: () => "number | string",
        zod: () => "c.intOrString()",
        defaults: () => "",
      });
    }
    const type = node.type;
    const embedded = node["x-kubernetes-embedded-resource"] === true;
    const preserve = node["x-kubernetes-preserve-unknown-fields"] === true;
    if (type !== undefined && typeof type !== "string")
      this.fail(`${path}.type`, "type must be a string");
    if (embedded || (type === "object" && isRecord(node.properties))) {
      if (embedded && type !== "object") {
        this.fail(`${path}.type`, "x-kubernetes-embedded-resource requires type: object");
      }
      const named = this.visitNamed(node, hint, path);
      if (node !== rawNode) this.nodeKeys.set(rawNode, this.nodeKeys.get(node) ?? "");
      return wrap({
        ts: () => named.name,
        zod: () => `$${named.name}`,
        defaults: () => (named.hasDefaults ? `...${named.name}Defaults` : ""),
        hasDefaults: named.hasDefaults,
      });
    }
    switch (type) {
      case "object": {
        const additional = node.additionalProperties;
        if (isRecord(additional)) {
          const value = this.visit(additional, `${hint}Value`, `${path}.additionalProperties`);
          return finish({
            ts: () => `{ [key: string]: ${value.ts()} }`,
            zod: () =>
              `c.record(${value.zod()}${options(node, ["minProperties", "maxProperties"])})`,
            defaults: () => {
              const body = value.defaults();
              return body === "" ? "" : `additionalProperties: { ${body} }`;
            },
            hasDefaults: value.hasDefaults === true,
          });
        }
        if (preserve || additional === true) {
          return finish({
            ts: () => this.commonType("FreeFormObject"),
            zod: () =>
              `c.freeFormObject(${options(node, ["minProperties", "maxProperties"]).slice(2)})`,
            defaults: () => "",
          });
        }
        return finish({
          ts: () => "{ [key: string]: never }",
          zod: () => "c.emptyObject()",
          defaults: () => "",
        });
      }
      case "array": {
        if (!isRecord(node.items)) {
          this.fail(
            `${path}.items`,
            "an array schema needs an items schema (structural schemas require it)",
          );
        }
        const item = this.visit(node.items, itemName(hint), `${path}.items`);
        const listType = node["x-kubernetes-list-type"];
        const mapKeys = node["x-kubernetes-list-map-keys"];
        if (listType === "map" && (!Array.isArray(mapKeys) || mapKeys.length === 0)) {
          this.fail(
            `${path}.x-kubernetes-list-map-keys`,
            "x-kubernetes-list-type: map needs x-kubernetes-list-map-keys",
          );
        }
        const arrayOptions = options(node, [
          "minItems",
          "maxItems",
          "x-kubernetes-list-type",
          "x-kubernetes-list-map-keys",
        ]);
        return finish({
          ts: () => {
            const t = item.ts();
            return /[|&]/.test(t) && !t.startsWith("{") ? `(${t})[]` : `${t}[]`;
          },
          zod: () => `c.array(${item.zod()}${arrayOptions})`,
          defaults: () => {
            const body = item.defaults();
            return body === "" ? "" : `items: { ${body} }`;
          },
          hasDefaults: item.hasDefaults === true,
        });
      }
      case "string":
        return finish(this.stringShape(node, path));
      case "integer":
      case "number":
        return finish(this.numberShape(node, type));
      case "boolean":
        return finish(this.enumOr(node, "boolean", "c.boolean()"));
      case undefined:
        if (preserve)
          return finish({
            ts: () => this.commonType("FreeFormJson"),
            zod: () => "c.freeFormJson()",
            defaults: () => "",
          });
        return this.fail(
          `${path}`,
          "the schema has no type; structural schemas need a type unless x-kubernetes-int-or-string or x-kubernetes-preserve-unknown-fields is set",
        );
      default:
        return this.fail(
          `${path}.type`,
          `unknown type ${JSON.stringify(type)}; use object, array, string, integer, number or boolean`,
        );
    }
  }

  private enumOr(node: SchemaNode, ts: string, zod: string): Shape {
    if (!Array.isArray(node.enum)) return { ts: () => ts, zod: () => zod, defaults: () => "" };
    const values = node.enum;
    if (values.length === 0)
      return { ts: () => "never", zod: () => "c.literals<never>([])", defaults: () => "" };
    const literalTs = values.map((v) => JSON.stringify(v)).join(" | ");
    return {
      ts: () => literalTs,
      zod: () => `c.literals<${literalTs}>(${jsonLiteral(values)})`,
      defaults: () => "",
    };
  }

  private stringShape(node: SchemaNode, path: string): Shape {
    if (Array.isArray(node.enum)) return this.enumOr(node, "string", "");
    if (node.pattern !== undefined && typeof node.pattern !== "string")
      this.fail(`${path}.pattern`, "pattern must be a string");
    const zod = `c.string(${options(node, ["format", "minLength", "maxLength", "pattern"]).slice(2)})`;
    return { ts: () => "string", zod: () => zod, defaults: () => "" };
  }

  private numberShape(node: SchemaNode, type: "integer" | "number"): Shape {
    if (Array.isArray(node.enum)) return this.enumOr(node, "number", "");
    const keys = [
      "format",
      "minimum",
      "maximum",
      "exclusiveMinimum",
      "exclusiveMaximum",
      "multipleOf",
    ];
    const zod = `c.${type}(${options(node, keys).slice(2)})`;
    return { ts: () => "number", zod: () => zod, defaults: () => "" };
  }

  /** anyOf / oneOf / not (and leftover allOf) value validations, as zod refinements. */
  private valueValidationChecks(node: SchemaNode, path: string): string {
    let out = "";
    for (const keyword of ["anyOf", "oneOf", "allOf", "not"] as const) {
      const value = node[keyword];
      if (
        value === undefined ||
        (keyword === "anyOf" && node["x-kubernetes-int-or-string"] === true)
      )
        continue;
      const branches =
        keyword === "not"
          ? [value]
          : Array.isArray(value)
            ? value
            : this.fail(`${path}.${keyword}`, `${keyword} must be a list`);
      branches.forEach((branch, index) => {
        this.checkValueValidation(
          branch,
          `${path}.${keyword}${keyword === "not" ? "" : `[${index}]`}`,
        );
      });
      out += `${out === "" ? "" : ", "}${keyword}: ${jsonLiteral(value)}`;
    }
    return out;
  }

  private checkValueValidation(branch: unknown, path: string): void {
    if (!isRecord(branch)) this.fail(path, "a value-validation branch must be an object");
    if (branch.pattern !== undefined)
      checkPattern(branch.pattern, `${path}.pattern`, (at, problem) => this.fail(at, problem));
    for (const key of Object.keys(branch)) {
      if (!VALUE_VALIDATION_KEYS.has(key)) {
        this.fail(
          `${path}.${key}`,
          `${JSON.stringify(key)} cannot be mapped inside anyOf/oneOf/allOf/not; only value validations (required, enum, pattern, bounds, properties, items) are supported there`,
        );
      }
    }
    if (isRecord(branch.properties)) {
      for (const [key, sub] of Object.entries(branch.properties))
        this.checkValueValidation(sub, `${path}.properties.${key}`);
    }
    if (branch.items !== undefined) this.checkValueValidation(branch.items, `${path}.items`);
  }

  private metaCall(node: SchemaNode): string {
    const meta: Record<string, unknown> = {};
    for (const key of [
      "x-kubernetes-list-type",
      "x-kubernetes-list-map-keys",
      "x-kubernetes-map-type",
      "x-kubernetes-validations",
      "x-kubernetes-embedded-resource",
      "x-kubernetes-preserve-unknown-fields",
      "x-kubernetes-int-or-string",
    ]) {
      if (node[key] !== undefined) meta[key] = node[key];
    }
    return Object.keys(meta).length === 0 ? "" : jsonLiteral(meta);
  }

  private visitNamed(node: SchemaNode, hint: string, path: string): NamedType {
    // Visit children first: their keys are part of this node's key.
    const properties = isRecord(node.properties) ? node.properties : {};
    const visited = this.visitProperties(node, properties, hint, path, false);
    const key = this.canonicalKey(node);
    const existing = this.named.get(key);
    this.nodeKeys.set(node, key);
    if (existing !== undefined) {
      existing.candidates.push(hint);
      return existing;
    }
    const named: NamedType = {
      id: this.nextId++,
      node,
      candidates: [hint],
      name: "",
      properties: visited,
      hasDefaults: false,
      root: undefined,
    };
    named.hasDefaults = hasDefaults(visited);
    this.named.set(key, named);
    this.nodeKeys.set(node, key);
    this.order.push(named);
    return named;
  }

  /**
   * A key equal for structurally equal schemas; the node's own description is not part of it.
   * A named child stands in by the short id of its own key, not by the key itself: embedding the
   * child's key JSON-escaped the key below it again at every level, doubling its backslashes, so
   * keys (and memory) grew as 2^depth. With ids each node is serialised once per named ancestor
   * boundary, and equal ids still mean equal structure.
   */
  private canonicalKey(node: SchemaNode): string {
    const keys = this.nodeKeys;
    const key = JSON.stringify(node, function (this: unknown, key: string, value: unknown) {
      if (key === "" || !isRecord(value))
        return key === "" && isRecord(value) ? { ...value, description: undefined } : value;
      const known = keys.get(value);
      if (known !== undefined) return { $named: known, description: value.description };
      return value;
    });
    let id = this.keyIds.get(key);
    if (id === undefined) {
      id = `#${this.keyIds.size}`;
      this.keyIds.set(key, id);
    }
    return id;
  }

  private objectDefaults(properties: readonly Property[]): string {
    const entries: string[] = [];
    for (const property of properties) {
      const parts: string[] = [];
      if (property.node.default !== undefined)
        parts.push(`default: ${jsonLiteral(property.node.default)}`);
      if (property.node.default !== undefined && property.node.nullable === true)
        parts.push("nullable: true");
      const child = property.shape.defaults();
      if (child !== "") parts.push(child);
      if (parts.length > 0) entries.push(`${literalKey(property.key)}: { ${parts.join(", ")} }`);
    }
    return entries.length === 0 ? "" : `properties: { ${entries.join(", ")} }`;
  }

  // ---------------------------------------------------------------- naming

  private assignNames(roots: readonly NamedType[]): void {
    const used = new Set<string>(RESERVED);
    const claim = (name: string) => {
      for (const suffix of ["", "Schema", "Defaults", "List", "ListSchema", "Model", "Resource"])
        used.add(name + suffix);
    };
    const free = (name: string) =>
      !used.has(name) && !used.has(`${name}Schema`) && !used.has(`${name}Defaults`);
    for (const root of roots) claim(root.name);
    const shared = [...this.named.values()];
    for (const named of shared) {
      named.candidates.sort((a, b) => a.length - b.length || (a < b ? -1 : a > b ? 1 : 0));
    }
    shared.sort((a, b) => {
      const x = a.candidates[0] ?? "";
      const y = b.candidates[0] ?? "";
      return x.length - y.length || (x < y ? -1 : x > y ? 1 : 0) || a.id - b.id;
    });
    for (const named of shared) {
      let name = named.candidates.find(free);
      if (name === undefined) {
        const base = named.candidates[0] ?? "Type";
        let n = 2;
        while (!free(`${base}${n}`)) n++;
        name = `${base}${n}`;
      }
      named.name = name;
      claim(name);
    }
  }

  // ---------------------------------------------------------------- rendering

  private render(): GroupVersionSource {
    const apiVersion = `${this.group}/${this.version}`;
    const kindNames = this.kinds.map((kv) => kv.crd.kind).join(", ");
    const deprecatedAll = this.kinds.every((kv) => kv.version.deprecated);
    const runtimeModule = `./${this.version}.runtime.js`;
    let types = renderDoc(
      [
        `Types, zod schemas, Model classes and resource metadata of the ${escapeDocText(apiVersion)} API: ${kindNames}.`,
        deprecatedAll ? `@deprecated ${escapeDocText(apiVersion)} is deprecated.` : "",
        "@packageDocumentation",
      ],
      "",
    );
    types +=
      'import type { V1ListMeta } from "@kubernetes/client-node/dist/gen/models/V1ListMeta.js";\n';
    types +=
      'import type { V1ObjectMeta } from "@kubernetes/client-node/dist/gen/models/V1ObjectMeta.js";\n';
    const commonTypes = types.length;
    const models = this.kinds.map((kv) => `${kv.crd.kind}Model`).sort();
    types += `import { ${models.join(", ")} } from ${JSON.stringify(runtimeModule)};\n\n`;
    types += `export * from ${JSON.stringify(runtimeModule)};\n`;

    let runtime = renderDoc(
      [
        `Runtime part of the ${escapeDocText(apiVersion)} API module: zod schemas, defaults, Model classes and resource metadata, typed against the interfaces of \`./${escapeDocText(this.version)}.ts\`. Import from that module, which re-exports all of this.`,
      ],
      "",
    );
    runtime +=
      'import { createTypeMetaGuard, Model, type ModelData, type TypeMetaGuard } from "@kubernetes-models/base";\n';
    runtime += 'import type { z } from "zod";\n';
    runtime += 'import * as c from "../common.js";\n';
    runtime += `import type * as t from ${JSON.stringify(`./${this.version}.js`)};\n`;
    for (const named of this.order) {
      const part =
        named.root === undefined
          ? this.renderNamed(named)
          : this.renderKind(named, named.root, apiVersion);
      types += `\n${part.types}`;
      runtime += `\n${part.runtime}`;
    }
    // Only when a free-form field needs it: an unused import fails projects with noUnusedLocals.
    if (this.usesCommonTypes) {
      types = `${types.slice(0, commonTypes)}import type * as c from "../common.js";\n${types.slice(commonTypes)}`;
    }
    return { types, runtime };
  }

  private propertyDoc(property: Property, fallback: string): string[] {
    const node = property.node;
    const description = typeof node.description === "string" ? node.description : "";
    const { text, deprecated } = splitDescription(description);
    const paragraphs = [text === "" ? fallback : text];
    if (node.default !== undefined)
      paragraphs.push(
        `@defaultValue \`${JSON.stringify(node.default).replaceAll("*/", "*\\/").replaceAll("`", "'")}\``,
      );
    paragraphs.push(...celDoc(node));
    if (deprecated !== undefined) paragraphs.push(`@deprecated ${deprecated}`);
    return paragraphs;
  }

  private typeDoc(named: NamedType): string[] {
    const description = typeof named.node.description === "string" ? named.node.description : "";
    const { text } = splitDescription(description);
    return [text === "" ? `The \`${named.name}\` object.` : text, ...celDoc(named.node)];
  }

  private renderProperties(
    properties: readonly Property[],
    override?: (p: Property) => string | undefined,
  ): string {
    let out = "";
    for (const property of properties) {
      out += renderDoc(
        this.propertyDoc(property, `The \`${escapeDocText(property.key)}\` field.`),
        "  ",
      );
      const type = override?.(property) ?? property.shape.ts();
      out += `  ${propertyKey(property.key)}${property.required ? "" : "?"}: ${type};\n`;
    }
    return out;
  }

  private renderZodProperties(
    properties: readonly Property[],
    override?: (p: Property) => string | undefined,
  ): string {
    let out = "";
    for (const property of properties) {
      const zod = override?.(property) ?? property.shape.zod();
      out += `  ${literalKey(property.key)}: ${zod},\n`;
    }
    return out;
  }

  private renderNamed(named: NamedType): Rendered {
    const node = named.node;
    const embedded = node["x-kubernetes-embedded-resource"] === true;
    const preserve = node["x-kubernetes-preserve-unknown-fields"] === true;
    const properties = [...named.properties];
    if (embedded) {
      const extra: Property[] = [];
      for (const key of ["apiVersion", "kind", "metadata"]) {
        if (!properties.some((p) => p.key === key)) {
          const meta = key === "metadata";
          extra.push({
            key,
            node: {
              description: meta
                ? "Standard object metadata of the embedded object."
                : `${key} of the embedded object (required: this field holds a whole Kubernetes object).`,
            },
            shape: meta
              ? { ts: () => "V1ObjectMeta", zod: () => "c.objectMeta()", defaults: () => "" }
              : { ts: () => "string", zod: () => "c.string({ minLength: 1 })", defaults: () => "" },
            required: !meta,
          });
        }
      }
      properties.unshift(...extra);
    }
    let types = renderDoc(this.typeDoc(named), "");
    types += `export interface ${named.name} {\n`;
    types += this.renderProperties(properties);
    if (preserve)
      types +=
        "  /** Fields not in the schema are kept (x-kubernetes-preserve-unknown-fields). */\n  [key: string]: unknown;\n";
    types += "}\n";
    const objectOptions = options(
      node,
      [
        "minProperties",
        "maxProperties",
        "x-kubernetes-preserve-unknown-fields",
        "x-kubernetes-embedded-resource",
      ],
      requiredKeys(properties),
    );
    const body = `c.object<t.${named.name}>({\n${this.renderZodProperties(properties)}}${objectOptions})`;
    let runtime = `const $${named.name} = ${wrapZod(body, this.valueValidationChecks(node, ""), this.metaCall(node))};\n\n`;
    // Plain text, no {@link}: a link makes tsc parse the whole comment, in every consumer's build,
    // and this comment repeats for every nested type.
    runtime += renderDoc([`zod schema of \`${named.name}\`.`], "");
    runtime += `export const ${named.name}Schema: z.ZodType<t.${named.name}> = c.zod($${named.name});\n`;
    if (named.hasDefaults) {
      runtime += `\nconst ${named.name}Defaults: c.DefaultsNode = { ${this.objectDefaults(named.properties)} };\n`;
    }
    return { types, runtime };
  }

  private renderKind(named: NamedType, kv: KindVersion, apiVersion: string): Rendered {
    const { crd, version } = kv;
    const kind = crd.kind;
    const list = crd.listKind;
    const deprecated = version.deprecated
      ? [
          `@deprecated ${escapeDocText(version.deprecationWarning ?? `${apiVersion} ${kind} is deprecated; use a newer version.`)}`,
        ]
      : [];
    const rootOverride = (p: Property): string | undefined => {
      if (p.key === "apiVersion") return JSON.stringify(apiVersion);
      if (p.key === "kind") return JSON.stringify(kind);
      if (p.key === "metadata") return "V1ObjectMeta";
      return undefined;
    };
    const rootZodOverride = (p: Property): string | undefined => {
      if (p.key === "apiVersion") return `c.literal(${JSON.stringify(apiVersion)})`;
      if (p.key === "kind") return `c.literal(${JSON.stringify(kind)})`;
      if (p.key === "metadata") return "c.objectMeta()";
      return undefined;
    };
    const properties = named.properties.map((p): Property => {
      if (p.key === "metadata") {
        return {
          ...p,
          node: { ...p.node, description: p.node.description ?? "Standard object metadata." },
        };
      }
      if (p.key === "apiVersion" || p.key === "kind") {
        return {
          ...p,
          node: { ...p.node, description: p.node.description ?? `${p.key} of the object.` },
        };
      }
      return p;
    });
    const description =
      typeof named.node.description === "string"
        ? splitDescription(named.node.description).text
        : "";
    const sources = `Generated from the ${escapeDocText(crd.name)} CustomResourceDefinition.`;
    let types = renderDoc(
      [
        description === "" ? `A ${kind} object (${escapeDocText(apiVersion)}).` : description,
        sources,
        ...celDoc(named.node),
        ...deprecated,
      ],
      "",
    );
    types += `export interface ${kind} {\n${this.renderProperties(properties, rootOverride)}}\n\n`;
    types += renderDoc(
      [`A list of {@link ${kind}} objects, as returned by list calls.`, ...deprecated],
      "",
    );
    types += `export interface ${list} {\n`;
    types += `  /** apiVersion of the list. */\n  apiVersion: ${JSON.stringify(apiVersion)};\n`;
    types += `  /** kind of the list. */\n  kind: ${JSON.stringify(list)};\n`;
    types +=
      "  /** Standard list metadata (resourceVersion, continue token). */\n  metadata?: V1ListMeta;\n";
    types += `  /** The objects. */\n  items: ${kind}[];\n}\n\n`;
    types += renderDoc(
      [
        `Constructor of {@link ${kind}} objects (the {@link ${kind}Model} class), so that \`new ${kind}({...})\` works like in \`@kubernetes-models\`.`,
        `@example\n\`\`\`ts\nconst object = new ${kind}({ metadata: { name: "example" } });\n\`\`\``,
        ...deprecated,
      ],
      "",
    );
    types += `export const ${kind}: typeof ${kind}Model = ${kind}Model;\n`;

    const objectOptions = options(
      named.node,
      ["minProperties", "maxProperties", "x-kubernetes-preserve-unknown-fields"],
      requiredKeys(properties),
    );
    const rootBody = `c.object<t.${kind}>({\n${this.renderZodProperties(properties, rootZodOverride)}}${objectOptions})`;
    let out = `const $${kind} = ${wrapZod(rootBody, this.valueValidationChecks(named.node, ""), this.metaCall(named.node))};\n\n`;
    out += renderDoc(
      [
        `zod schema of {@link t.${kind}}: every OpenAPI constraint of the CRD, unknown fields kept.`,
        ...deprecated,
      ],
      "",
    );
    out += `export const ${kind}Schema: z.ZodType<t.${kind}> = c.zod($${kind});\n\n`;
    out += renderDoc([`zod schema of {@link t.${list}}.`, ...deprecated], "");
    out += `export const ${list}Schema: z.ZodType<t.${list}> = c.zod(c.object<t.${list}>({\n`;
    out += `  apiVersion: c.literal(${JSON.stringify(apiVersion)}),\n  kind: c.literal(${JSON.stringify(list)}),\n`;
    out += `  metadata: c.listMeta(),\n  items: c.array($${kind}),\n}, { required: ["apiVersion", "kind", "items"] }));\n`;
    if (named.hasDefaults)
      out += `\nconst ${kind}Defaults: c.DefaultsNode = { ${this.objectDefaults(named.properties)} };\n`;

    // Model class: the interface merge gives instances every field of the data interface.
    const subject = `${kind} ${apiVersion}`;
    out += "\n";
    out += renderDoc(
      [
        `Instance type of the {@link ${kind}Model} class: a {@link t.${kind}} with the Model methods.`,
        ...deprecated,
      ],
      "",
    );
    out += `export interface ${kind}Model extends t.${kind} {}\n\n`;
    out += renderDoc(
      [
        `Model class of {@link t.${kind}}, compatible with \`@kubernetes-models/base\`: the constructor fills in apiVersion and kind, \`toJSON()\` drops undefined fields and \`validate()\` checks the object against {@link ${kind}Schema}.`,
        `@example\n\`\`\`ts\nconst object = new ${kind}Model({ metadata: { name: "example", namespace: "default" } });\nobject.validate();\n\`\`\``,
        ...deprecated,
      ],
      "",
    );
    out += `export class ${kind}Model extends Model<t.${kind}> {\n`;
    out += `  /** The apiVersion of every ${escapeDocText(kind)}: ${JSON.stringify(apiVersion)}. */\n  static readonly apiVersion = ${JSON.stringify(apiVersion)};\n`;
    out += `  /** The kind: ${JSON.stringify(kind)}. */\n  static readonly kind = ${JSON.stringify(kind)};\n`;
    out += `  /** Type guard: true when a value has this apiVersion and kind. */\n  static readonly is: TypeMetaGuard<t.${kind}> = createTypeMetaGuard<t.${kind}>(${kind}Model);\n\n`;
    out += `  /**\n   * @param data - the object's fields; apiVersion and kind are set for you\n   */\n`;
    out += `  constructor(data?: ModelData<t.${kind}>) {\n    super();\n`;
    out += `    this.setDefinedProps({ apiVersion: ${kind}Model.apiVersion, kind: ${kind}Model.kind, ...data } as ModelData<t.${kind}>);\n  }\n\n`;
    out += `  /**\n   * Checks the object against {@link ${kind}Schema}.\n   *\n   * @throws \`SchemaValidationError\` listing every problem with its field path\n   */\n`;
    out += `  override validate(): void {\n    c.validateOrThrow(${kind}Schema, this.toJSON(), ${JSON.stringify(subject)});\n  }\n}\n\n`;
    const statusNote = version.statusSubresource
      ? "has a status subresource"
      : "has no status subresource";
    out += renderDoc(
      [
        `Resource metadata of ${escapeDocText(kind)} ${escapeDocText(apiVersion)} (plural "${escapeDocText(crd.plural)}", ${crd.scope.toLowerCase()}, ${statusNote}), with its schema and defaults.`,
        ...deprecated,
      ],
      "",
    );
    const servedVersions = crd.versions.filter((v) => v.served).map((v) => v.name);
    const storageVersion = crd.versions.find((v) => v.storage)?.name ?? version.name;
    const scale = version.scale;
    out += `export const ${kind}Resource: c.ResourceInfo<t.${kind}> = {\n`;
    out += `  group: ${JSON.stringify(this.group)},\n  version: ${JSON.stringify(this.version)},\n  apiVersion: ${JSON.stringify(apiVersion)},\n`;
    out += `  kind: ${JSON.stringify(kind)},\n  listKind: ${JSON.stringify(list)},\n  plural: ${JSON.stringify(crd.plural)},\n  singular: ${JSON.stringify(crd.singular)},\n`;
    out += `  scope: ${JSON.stringify(crd.scope)},\n  served: ${version.served},\n  storage: ${version.storage},\n  storageVersion: ${JSON.stringify(storageVersion)},\n`;
    out += `  servedVersions: ${JSON.stringify(servedVersions)},\n  deprecated: ${version.deprecated},\n`;
    out += `  deprecationWarning: ${version.deprecationWarning === undefined ? "undefined" : JSON.stringify(version.deprecationWarning)},\n`;
    out += `  shortNames: ${JSON.stringify(crd.shortNames)},\n  categories: ${JSON.stringify(crd.categories)},\n  labels: ${jsonLiteral(crd.labels)},\n`;
    out += `  subresources: {\n    status: ${version.statusSubresource},\n    scale: ${
      scale === undefined
        ? "undefined"
        : `{ specReplicasPath: ${JSON.stringify(scale.specReplicasPath)}, statusReplicasPath: ${JSON.stringify(scale.statusReplicasPath)}, labelSelectorPath: ${scale.labelSelectorPath === undefined ? "undefined" : JSON.stringify(scale.labelSelectorPath)} }`
    },\n  },\n`;
    out += `  schema: ${kind}Schema,\n  defaults: ${named.hasDefaults ? `${kind}Defaults` : "undefined"},\n};\n`;
    return { types, runtime: out };
  }
}

/**
 * Refuses a pattern that is not RE2 syntax. The API server compiles patterns with Go's RE2 engine
 * and rejects a CRD whose pattern does not compile (lookaround, backreferences); the generated
 * validators use an RE2 engine too, so a pattern matches the same strings, in linear time, in both.
 */
function checkPattern(
  pattern: unknown,
  path: string,
  fail: (path: string, problem: string) => never,
): void {
  if (typeof pattern !== "string") fail(path, "pattern must be a string");
  try {
    RE2JS.compile(pattern);
  } catch (error) {
    fail(
      path,
      `pattern ${JSON.stringify(pattern)} is not an RE2 regular expression, the syntax the API server uses (${error instanceof Error ? error.message : String(error)}); rewrite it without lookaround or backreferences`,
    );
  }
}

function hasDefaults(properties: readonly Property[]): boolean {
  return properties.some((p) => p.node.default !== undefined || p.shape.hasDefaults === true);
}

function rootOrder(key: string): number {
  return key === "apiVersion" ? 0 : key === "kind" ? 1 : key === "metadata" ? 2 : 3;
}

const OPTION_NAMES: Record<string, string> = {
  "x-kubernetes-list-type": "listType",
  "x-kubernetes-list-map-keys": "listMapKeys",
  "x-kubernetes-preserve-unknown-fields": "preserveUnknownFields",
  "x-kubernetes-embedded-resource": "embeddedResource",
};

/** Renders the OpenAPI keywords present on a node as ", { key: value }" ("" when none). */
function requiredKeys(properties: readonly Property[]): string[] {
  return properties.filter((p) => p.required).map((p) => p.key);
}

function options(
  node: SchemaNode,
  keys: readonly string[],
  required: readonly string[] = [],
): string {
  const parts: string[] = [];
  if (required.length > 0) parts.push(`required: ${JSON.stringify(required)}`);
  for (const key of keys) {
    const value = node[key];
    if (value === undefined) continue;
    parts.push(`${OPTION_NAMES[key] ?? key}: ${jsonLiteral(value)}`);
  }
  return parts.length === 0 ? "" : `, { ${parts.join(", ")} }`;
}

function wrapZod(zod: string, rules: string, meta: string): string {
  let out = zod;
  if (rules !== "") out = `c.withRules(${out}, { ${rules} })`;
  if (meta !== "") out = `c.withMeta(${out}, ${meta})`;
  return out;
}

function celDoc(node: SchemaNode): string[] {
  const rules = node["x-kubernetes-validations"];
  if (!Array.isArray(rules) || rules.length === 0) return [];
  const lines = rules.map((rule) => {
    const r = isRecord(rule) ? rule : {};
    const message = typeof r.message === "string" ? ` ${escapeDocText(r.message)}` : "";
    return `- \`${String(r.rule ?? "")
      .replaceAll("`", "'")
      .replaceAll("*/", "*\\/")
      .replace(/\s*\n\s*/g, " ")}\`${message ? ":" : ""}${message}`;
  });
  return [`Validation rules (CEL) the API server enforces:\n${lines.join("\n")}`];
}
