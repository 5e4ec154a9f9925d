import { FieldSet, pathToString as pathToStringLazy } from "./fieldset.js";

/**
 * The parts of a schema that merging needs. A compiled CRD `SchemaNode` satisfies it; so do the
 * built-in kinds' schemas from {@link builtinMergeSchema}. Without a schema (or below
 * `x-kubernetes-preserve-unknown-fields`), maps are granular and lists atomic, as the server deduces.
 */
export interface MergeSchema {
  /**
   * The schema's `type` (`object`, `array`, a scalar type); absent for untyped (preserve-unknown)
   * nodes.
   */
  readonly type?: string;
  /** Declared fields. */
  readonly properties?: ReadonlyMap<string, MergeSchema>;
  /**
   * The schema of each list element; with `listType` and `listMapKeys` it decides how lists merge.
   */
  readonly items?: MergeSchema;
  /** Map values. */
  readonly additionalProperties?: MergeSchema;
  /** `x-kubernetes-list-type` (`atomic` when unset). */
  readonly listType?: "atomic" | "set" | "map";
  /** `x-kubernetes-list-map-keys`. */
  readonly listMapKeys?: readonly string[];
  /** `x-kubernetes-map-type` (`granular` when unset). */
  readonly mapType?: "atomic" | "granular";
  /** `x-kubernetes-embedded-resource`: its `metadata` is an ObjectMeta. */
  readonly embeddedResource?: boolean;
  /** Undeclared keys are struct fields (built-in kinds), not map entries. */
  readonly structFields?: boolean;
  /**
   * Top-level struct fields a built-in kind always has (`spec`, `status`): a create does not "add"
   * them, so the creator's field set has no `.` entry for them, as on the server.
   */
  readonly zeroStructs?: readonly string[];
}

function node(spec: {
  properties?: Record<string, MergeSchema>;
  items?: MergeSchema;
  additionalProperties?: MergeSchema;
  listType?: "atomic" | "set" | "map";
  listMapKeys?: string[];
  mapType?: "atomic" | "granular";
  type?: string;
}): MergeSchema {
  const out: {
    -readonly [K in keyof MergeSchema]: MergeSchema[K];
  } = {};
  if (spec.type !== undefined) out.type = spec.type;
  if (spec.properties !== undefined) out.properties = new Map(Object.entries(spec.properties));
  if (spec.items !== undefined) out.items = spec.items;
  if (spec.additionalProperties !== undefined) out.additionalProperties = spec.additionalProperties;
  if (spec.listType !== undefined) out.listType = spec.listType;
  if (spec.listMapKeys !== undefined) out.listMapKeys = spec.listMapKeys;
  if (spec.mapType !== undefined) out.mapType = spec.mapType;
  return out;
}

/** Builds a {@link MergeSchema} tersely (used for the built-in kinds). */
export const schemaNode = node;

const STRING = node({ type: "string" });

const STRUCT: MergeSchema = { structFields: true };

/** ObjectMeta as server-side apply sees it. */
export const OBJECT_META_SCHEMA: MergeSchema = node({
  type: "object",
  properties: {
    name: STRING,
    generateName: STRING,
    namespace: STRING,
    labels: node({ type: "object", additionalProperties: STRING }),
    annotations: node({ type: "object", additionalProperties: STRING }),
    finalizers: node({ type: "array", items: STRING, listType: "set" }),
    ownerReferences: node({
      type: "array",
      listType: "map",
      listMapKeys: ["uid"],
      items: node({ type: "object", mapType: "atomic" }),
    }),
  },
});

/** The schema of `key` under `schema` (`metadata` of a resource root is ObjectMeta). */
export function childSchema(
  schema: MergeSchema | undefined,
  key: string,
  isResourceRoot: boolean,
): { schema: MergeSchema | undefined; declared: boolean } {
  if (key === "metadata" && (isResourceRoot || schema?.embeddedResource === true)) {
    return { schema: OBJECT_META_SCHEMA, declared: true };
  }
  const declared = schema?.properties?.get(key);
  if (declared !== undefined) return { schema: declared, declared: true };
  if (schema?.structFields === true) return { schema: STRUCT, declared: true };
  return { schema: schema?.additionalProperties, declared: false };
}

export function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

function listType(schema: MergeSchema | undefined): "atomic" | "set" | "map" {
  return schema?.listType ?? "atomic";
}

function mapIsAtomic(schema: MergeSchema | undefined): boolean {
  return schema?.mapType === "atomic";
}

/** Go's `encoding/json` of a key value: like JSON.stringify for the scalars keys hold. */
function keyJSON(value: unknown): string {
  return JSON.stringify(value) ?? "null";
}

/** The path element of a list item: `k:{…}` (map list), `v:…` (set) or `i:N`. */
export function itemElement(schema: MergeSchema | undefined, item: unknown, index: number): string {
  const type = listType(schema);
  if (type === "map" && isObject(item)) {
    const keys = [...(schema?.listMapKeys ?? [])].sort();
    const parts: string[] = [];
    for (const k of keys) if (k in item) parts.push(`${JSON.stringify(k)}:${keyJSON(item[k])}`);
    return `k:{${parts.join(",")}}`;
  }
  if (type === "set") return `v:${keyJSON(item)}`;
  return `i:${index}`;
}

/** The field set an (applied) object names, as the server computes it (`ToFieldSet`). */
export function toFieldSet(schema: MergeSchema | undefined, value: unknown): FieldSet {
  const out = new FieldSet();
  walkFieldSet(schema, value, [], out, true);
  return out;
}

function walkFieldSet(
  schema: MergeSchema | undefined,
  value: unknown,
  path: string[],
  out: FieldSet,
  isRoot: boolean,
): void {
  if (Array.isArray(value)) {
    if (listType(schema) === "atomic") {
      out.insert(path);
      return;
    }
    const items = schema?.items;
    const seen = new Set<string>();
    const duplicates = new Set<string>();
    const elements: string[] = new Array(value.length);
    for (let i = 0; i < value.length; i++) {
      const pe = itemElement(schema, value[i], i);
      elements[i] = pe;
      if (seen.has(pe)) duplicates.add(pe);
      else seen.add(pe);
    }
    for (const pe of duplicates) {
      path.push(pe);
      out.insert(path);
      path.pop();
    }
    for (let i = 0; i < value.length; i++) {
      const pe = elements[i] as string;
      if (duplicates.has(pe)) continue;
      path.push(pe);
      walkFieldSet(items, value[i], path, out, false);
      out.insert(path);
      path.pop();
    }
    return;
  }
  if (isObject(value)) {
    if (mapIsAtomic(schema) && !isRoot) {
      out.insert(path);
      return;
    }
    for (const key in value) {
      const child = value[key];
      const sub = childSchema(schema, key, isRoot);
      path.push(`f:${key}`);
      walkFieldSet(sub.schema, child, path, out, false);
      if (child === null || (isObject(child) && isEmptyObject(child)) || !sub.declared) {
        out.insert(path);
      }
      path.pop();
    }
    return;
  }
  out.insert(path);
}

function isEmptyObject(value: Record<string, unknown>): boolean {
  for (const _ in value) return false;
  return true;
}

/**
 * Problems that make the server refuse an applied configuration before merging it: a map-list item
 * without any of its keys, or two items with the same keys. Each is `path: problem` as the server
 * words it (`.spec.conditions: duplicate entries for key [type="A"]`).
 */
export function appliedConfigProblems(schema: MergeSchema | undefined, value: unknown): string[] {
  const problems: string[] = [];
  walkConfig(schema, value, [], problems, true);
  return problems;
}

function walkConfig(
  schema: MergeSchema | undefined,
  value: unknown,
  path: string[],
  problems: string[],
  isRoot: boolean,
): void {
  if (Array.isArray(value)) {
    if (listType(schema) === "map") {
      const keys = schema?.listMapKeys ?? [];
      const seen = new Set<string>();
      for (let i = 0; i < value.length; i++) {
        const item = value[i];
        const present = isObject(item) ? keys.filter((k) => k in item) : [];
        if (present.length === 0) {
          problems.push(
            `${pathToStringLazy(path)}: element ${i}: associative list with keys has an element that omits all key fields ${JSON.stringify(keys).replaceAll(",", " ")} (and doesn't have default values for any key fields)`,
          );
          continue;
        }
        const pe = itemElement(schema, item, i);
        if (seen.has(pe)) {
          problems.push(
            `${pathToStringLazy(path)}: duplicate entries for key ${pathToStringLazy([pe])}`,
          );
        }
        seen.add(pe);
      }
    }
    if (listType(schema) !== "atomic") {
      for (let i = 0; i < value.length; i++) {
        path.push(itemElement(schema, value[i], i));
        walkConfig(schema?.items, value[i], path, problems, false);
        path.pop();
      }
    }
    return;
  }
  if (!isObject(value) || (mapIsAtomic(schema) && !isRoot)) return;
  for (const key in value) {
    path.push(`f:${key}`);
    walkConfig(childSchema(schema, key, isRoot).schema, value[key], path, problems, false);
    path.pop();
  }
}

/** Merges an applied configuration into the live object (`TypedValue.Merge`). Inputs are not modified. */
export function mergeValues(
  schema: MergeSchema | undefined,
  live: unknown,
  config: unknown,
  isRoot = false,
): unknown {
  if (config === undefined) return cloneJSON(live);
  if (live === undefined) return cloneJSON(config);
  if (Array.isArray(live) && Array.isArray(config) && listType(schema) !== "atomic") {
    return mergeLists(schema, live, config);
  }
  if (isObject(live) && isObject(config) && (isRoot || !mapIsAtomic(schema))) {
    const out: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(live)) {
      out[key] = key in config ? undefined : cloneJSON(value);
    }
    for (const [key, value] of Object.entries(config)) {
      out[key] = mergeValues(childSchema(schema, key, isRoot).schema, live[key], value);
    }
    return out;
  }
  return cloneJSON(config);
}

function mergeLists(
  schema: MergeSchema | undefined,
  live: unknown[],
  config: unknown[],
): unknown[] {
  const items = schema?.items;
  const livePEs = live.map((item, i) => itemElement(schema, item, i));
  const configPEs = config.map((item, i) => itemElement(schema, item, i));
  const liveByPE = new Map<string, unknown>();
  for (let i = 0; i < livePEs.length; i++) {
    const pe = livePEs[i] as string;
    if (!liveByPE.has(pe)) liveByPE.set(pe, live[i]);
  }
  const configIndex = new Map<string, number>();
  for (let i = 0; i < configPEs.length; i++) {
    const pe = configPEs[i] as string;
    if (!configIndex.has(pe)) configIndex.set(pe, i);
  }
  const out: unknown[] = [];
  const emitted = new Set<string>();
  let next = 0;
  const emitConfigUpTo = (end: number) => {
    for (; next <= end && next < config.length; next++) {
      const pe = configPEs[next] as string;
      if (emitted.has(pe)) continue;
      emitted.add(pe);
      out.push(mergeValues(items, liveByPE.get(pe), config[next]));
    }
  };
  livePEs.forEach((pe, i) => {
    const at = configIndex.get(pe);
    if (at === undefined) {
      if (!emitted.has(pe)) out.push(cloneJSON(live[i]));
      return;
    }
    emitConfigUpTo(at);
  });
  emitConfigUpTo(config.length - 1);
  return out;
}

/** The differences between two objects (`TypedValue.Compare`). */
export interface Comparison {
  /** Paths present only on the right. */
  added: FieldSet;
  /** Leaf paths whose value changed. */
  modified: FieldSet;
  /** Paths present only on the left. */
  removed: FieldSet;
}

/** Compares two objects path by path, as the server does to find what a write changed. */
export function compareValues(
  schema: MergeSchema | undefined,
  lhs: unknown,
  rhs: unknown,
): Comparison {
  const cmp: Comparison = {
    added: new FieldSet(),
    modified: new FieldSet(),
    removed: new FieldSet(),
  };
  compareAt(schema, lhs, rhs, [], cmp, true);
  return cmp;
}

function isEmptyContainer(value: unknown): boolean {
  if (value === undefined) return true;
  if (Array.isArray(value)) return value.length === 0;
  if (isObject(value)) return Object.keys(value).length === 0;
  return false;
}

function recordLeaf(lhs: unknown, rhs: unknown, path: string[], cmp: Comparison): void {
  if (lhs === undefined) cmp.added.insert(path);
  else if (rhs === undefined) cmp.removed.insert(path);
  else if (!deepEqual(lhs, rhs)) cmp.modified.insert(path);
}

function indexItems(
  schema: MergeSchema | undefined,
  list: unknown[],
  into: Map<string, unknown>,
): void {
  for (let i = 0; i < list.length; i++) {
    const pe = itemElement(schema, list[i], i);
    if (!into.has(pe)) into.set(pe, list[i]);
  }
}

function compareAt(
  schema: MergeSchema | undefined,
  lhs: unknown,
  rhs: unknown,
  path: string[],
  cmp: Comparison,
  isRoot: boolean,
): void {
  const shape = rhs !== undefined ? rhs : lhs;
  const sameShape =
    lhs === undefined ||
    rhs === undefined ||
    (Array.isArray(lhs) && Array.isArray(rhs)) ||
    (isObject(lhs) && isObject(rhs));
  let inLeaf = false;
  if (!sameShape) {
    recordLeaf(lhs, rhs, path, cmp);
    inLeaf = true;
  } else if (Array.isArray(shape)) {
    if (listType(schema) === "atomic" || (isEmptyContainer(lhs) && isEmptyContainer(rhs))) {
      recordLeaf(lhs, rhs, path, cmp);
      inLeaf = true;
    } else {
      const lMap = new Map<string, unknown>();
      const rMap = new Map<string, unknown>();
      indexItems(schema, (lhs as unknown[] | undefined) ?? [], lMap);
      indexItems(schema, (rhs as unknown[] | undefined) ?? [], rMap);
      for (const [pe, l] of lMap) {
        path.push(pe);
        compareAt(schema?.items, l, rMap.get(pe), path, cmp, false);
        path.pop();
      }
      for (const [pe, r] of rMap) {
        if (lMap.has(pe)) continue;
        path.push(pe);
        compareAt(schema?.items, undefined, r, path, cmp, false);
        path.pop();
      }
    }
  } else if (isObject(shape)) {
    if ((mapIsAtomic(schema) && !isRoot) || (isEmptyContainer(lhs) && isEmptyContainer(rhs))) {
      recordLeaf(lhs, rhs, path, cmp);
      inLeaf = true;
    } else {
      const l = (lhs as Record<string, unknown> | undefined) ?? {};
      const r = (rhs as Record<string, unknown> | undefined) ?? {};
      for (const key in l) {
        path.push(`f:${key}`);
        compareAt(childSchema(schema, key, isRoot).schema, l[key], r[key], path, cmp, false);
        path.pop();
      }
      for (const key in r) {
        if (key in l) continue;
        path.push(`f:${key}`);
        compareAt(childSchema(schema, key, isRoot).schema, undefined, r[key], path, cmp, false);
        path.pop();
      }
    }
  } else {
    recordLeaf(lhs, rhs, path, cmp);
    inLeaf = true;
  }
  if (!inLeaf) {
    if (lhs === undefined) cmp.added.insert(path);
    else if (rhs === undefined) cmp.removed.insert(path);
  }
}

/** Removes, in place, every member path of `set` (a member removes its whole subtree). */
export function removePaths(
  schema: MergeSchema | undefined,
  value: unknown,
  set: FieldSet,
  isRoot = true,
): void {
  if (Array.isArray(value)) {
    for (let i = value.length - 1; i >= 0; i--) {
      const pe = itemElement(schema, value[i], i);
      const child = set.children.get(pe);
      if (child === undefined) continue;
      if (child.member) value.splice(i, 1);
      else removePaths(schema?.items, value[i], child, false);
    }
    return;
  }
  if (!isObject(value)) return;
  for (const [element, child] of set.children) {
    if (!element.startsWith("f:")) continue;
    const key = element.slice(2);
    if (!(key in value)) continue;
    if (child.member) delete value[key];
    else removePaths(childSchema(schema, key, isRoot).schema, value[key], child, false);
  }
}

/** A deep copy of a JSON value (much faster than `structuredClone` for plain data). */
export function cloneJSON<T>(value: T): T {
  if (value === null || typeof value !== "object") return value;
  if (Array.isArray(value)) {
    const out = new Array(value.length);
    for (let i = 0; i < value.length; i++) out[i] = cloneJSON(value[i]);
    return out as T;
  }
  const out: Record<string, unknown> = {};
  for (const key in value) {
    if (Object.hasOwn(value, key)) out[key] = cloneJSON((value as Record<string, unknown>)[key]);
  }
  return out as T;
}

/** Deep equality of JSON values. */
export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) {
    return Array.isArray(b) && a.length === b.length && a.every((x, i) => deepEqual(x, b[i]));
  }
  if (isObject(a) && isObject(b)) {
    const ka = Object.keys(a);
    if (ka.length !== Object.keys(b).length) return false;
    return ka.every((k) => k in b && deepEqual(a[k], b[k]));
  }
  return false;
}
