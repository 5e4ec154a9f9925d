/**
 * How the validation walks move through a schema and a value together: the path of the value being
 * visited, rendered as the server renders it, and which subtrees hold anything a walk must check.
 *
 * @module
 */
import type { SchemaNode } from "./types.js";

/**
 * A path step: a property (`.name`), an array index (`[3]`) or a map key. Map keys render as `.key` in
 * OpenAPI-validator messages but as `[key]` in field paths built by the server's own code (CEL,
 * list-type, embedded-resource checks), as the server does.
 */
export type Path = { parent: Path; segment: string; kind: "prop" | "index" | "key" } | undefined;

export function openAPIPath(path: Path): string {
  const parts: string[] = [];
  for (let p = path; p !== undefined; p = p.parent) {
    parts.push(p.kind === "index" ? `[${p.segment}]` : `.${p.segment}`);
  }
  const text = parts.reverse().join("");
  return text.startsWith(".") ? text.slice(1) : text;
}

export function fieldPath(path: Path): string {
  const parts: string[] = [];
  for (let p = path; p !== undefined; p = p.parent) {
    parts.push(p.kind === "prop" ? `.${p.segment}` : `[${p.segment}]`);
  }
  const text = parts.reverse().join("");
  if (text.length === 0) return "<nil>";
  return text.startsWith(".") ? text.slice(1) : text;
}

export function prop(parent: Path, segment: string): Path {
  return { parent, segment, kind: "prop" };
}
export function index(parent: Path, i: number): Path {
  return { parent, segment: String(i), kind: "index" };
}
export function key(parent: Path, segment: string): Path {
  return { parent, segment, kind: "key" };
}

/** The schema of `k` under `node` and whether it is a declared property (else a map entry). */
export function childNode(node: SchemaNode, k: string): SchemaNode | undefined {
  return node.properties?.get(k) ?? node.additionalProperties;
}

export function childPath(node: SchemaNode, parent: Path, k: string): Path {
  return node.properties?.has(k) === true ? prop(parent, k) : key(parent, k);
}

/** A rule's `fieldPath` (`.spec.ports[0]`) appended to the path of the node that declares the rule. */
export function appendFieldPath(path: Path, suffix: string): Path {
  let out = path;
  const re = /([^.[\]]+)|\[(\d+)\]/g;
  for (const m of suffix.matchAll(re)) {
    if (m[2] !== undefined) out = index(out, Number(m[2]));
    else if (m[1] !== undefined) out = prop(out, m[1]);
  }
  return out;
}

/** Whether `here` holds for `node` or any node below it (cached per node and predicate). */
function subtreeHas(
  cache: WeakMap<SchemaNode, boolean>,
  node: SchemaNode,
  here: (n: SchemaNode) => boolean,
): boolean {
  const cached = cache.get(node);
  if (cached !== undefined) return cached;
  let found = here(node);
  if (!found && node.properties !== undefined) {
    for (const sub of node.properties.values()) if (subtreeHas(cache, sub, here)) found = true;
  }
  if (!found && node.items !== undefined) found = subtreeHas(cache, node.items, here);
  if (!found && node.additionalProperties !== undefined) {
    found = subtreeHas(cache, node.additionalProperties, here);
  }
  cache.set(node, found);
  return found;
}

const rulesCache = new WeakMap<SchemaNode, boolean>();
const embeddedCache = new WeakMap<SchemaNode, boolean>();
const listCache = new WeakMap<SchemaNode, boolean>();
const ruleAt = (n: SchemaNode) => n.rules !== undefined && n.rules.length > 0;
const embeddedAt = (n: SchemaNode) => n.embeddedResource;
const listInvariantAt = (n: SchemaNode) => n.listType === "set" || n.listType === "map";

export function hasRules(node: SchemaNode): boolean {
  return subtreeHas(rulesCache, node, ruleAt);
}

export function needsEmbeddedCheck(node: SchemaNode): boolean {
  return subtreeHas(embeddedCache, node, embeddedAt);
}

export function needsListCheck(node: SchemaNode): boolean {
  return subtreeHas(listCache, node, listInvariantAt);
}
