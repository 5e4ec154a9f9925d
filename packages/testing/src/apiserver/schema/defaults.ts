import type { SchemaNode } from "./types.js";

function cloneDefault<T>(value: T): T {
  return value === null || typeof value !== "object"
    ? value
    : (JSON.parse(JSON.stringify(value)) as T);
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

function hasUsableDefault(node: SchemaNode): boolean {
  return node.hasDefault && node.default !== null && node.default !== undefined;
}

function isNonNullableNull(value: unknown, node: SchemaNode | undefined): boolean {
  return value === null && node !== undefined && !node.nullable;
}

function defaultValue(node: SchemaNode, value: unknown): void {
  if (Array.isArray(value)) {
    const items = node.items;
    if (items === undefined) return;
    for (let i = 0; i < value.length; i++) {
      if (isNonNullableNull(value[i], items) && hasUsableDefault(items)) {
        value[i] = cloneDefault(items.default);
      }
      defaultValue(items, value[i]);
    }
    return;
  }
  if (!isPlainObject(value)) return;
  if (node.properties !== undefined) {
    for (const [key, prop] of node.properties) {
      if (!hasUsableDefault(prop)) continue;
      if (!(key in value) || isNonNullableNull(value[key], prop)) {
        value[key] = cloneDefault(prop.default);
      }
    }
  }
  for (const key of Object.keys(value)) {
    const prop = node.properties?.get(key);
    if (prop !== undefined) {
      defaultValue(prop, value[key]);
      continue;
    }
    const ap = node.additionalProperties;
    if (ap === undefined) continue;
    if (isNonNullableNull(value[key], ap) && hasUsableDefault(ap)) {
      value[key] = cloneDefault(ap.default);
    }
    defaultValue(ap, value[key]);
  }
}

function pruneNonNullableNulls(node: SchemaNode, value: unknown): void {
  if (Array.isArray(value)) {
    const items = node.items;
    if (items === undefined) return;
    for (const item of value) pruneNonNullableNulls(items, item);
    return;
  }
  if (!isPlainObject(value)) return;
  for (const key of Object.keys(value)) {
    const sub = node.properties?.get(key) ?? node.additionalProperties;
    if (sub === undefined) continue;
    if (value[key] === null && !sub.nullable && !hasUsableDefault(sub)) {
      delete value[key];
    } else {
      pruneNonNullableNulls(sub, value[key]);
    }
  }
}

/**
 * Applies defaults in place the way the server does on decode: absent (or non-nullable `null`) fields
 * with a `default` are set when their parent object exists, recursing into the result; afterwards
 * `null` values of non-nullable fields without a default are removed.
 */
export function applyDefaults(
  root: SchemaNode,
  obj: Record<string, unknown>,
  options: { keepNulls?: boolean } = {},
): void {
  defaultValue(root, obj);
  // Decoding a request drops these nulls; a server-side apply result is not decoded again, so there
  // they stay and fail validation ("must be of type string: \"null\""), as on the server.
  if (options.keepNulls !== true) pruneNonNullableNulls(root, obj);
}
