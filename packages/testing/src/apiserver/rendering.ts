/**
 * How stored objects reach clients: the view of an object in the requested version, its JSON text
 * (reusing the stored text where it can), list items, and the cache of unfiltered LIST texts.
 *
 * @module
 */
import type { ResolvedResource } from "./registry.js";
import { type Store, type StoredObject, storedFor } from "./store.js";
import type { KubeObject } from "./types.js";
import { clone } from "./values.js";

/** The stored object as seen through the requested version. */
export function servedView(res: ResolvedResource, obj: KubeObject): KubeObject {
  if (res.served.toView) return res.served.toView(obj);
  if (obj.apiVersion === res.apiVersion) return obj;
  return otherVersion(res, obj);
}

/** JSON text of a stored object in the requested version; reuses the cached text when it can. */
export function servedJson(res: ResolvedResource, s: StoredObject): string {
  if (res.served.toView) return JSON.stringify(res.served.toView(s.obj));
  const json = s.json();
  if (s.obj.apiVersion === res.apiVersion) return json;
  if (res.served.strategy?.prune) return JSON.stringify(otherVersion(res, s.obj));
  // normalize() put apiVersion first, so the prefix is exactly this:
  const prefix = `{"apiVersion":${JSON.stringify(s.obj.apiVersion)}`;
  return `{"apiVersion":${JSON.stringify(res.apiVersion)}${json.slice(prefix.length)}`;
}

/** JSON text of an object returned by a verb: the stored text when it is the stored object. */
export function verbResultJson(res: ResolvedResource, obj: KubeObject): string {
  const s = storedFor(obj);
  return s ? servedJson(res, s) : JSON.stringify(obj);
}

/**
 * A list item: built-in kinds' items carry no apiVersion/kind (only the list does), as
 * kube-apiserver encodes typed lists; custom resources' items keep them.
 */
export function servedListItemJson(res: ResolvedResource, s: StoredObject): string {
  const json = servedJson(res, s);
  if (!res.rt.builtin) return json;
  const prefix = `{"apiVersion":${JSON.stringify(res.apiVersion)},"kind":${JSON.stringify(res.rt.kind)},`;
  if (json.startsWith(prefix)) return `{${json.slice(prefix.length)}`;
  return listItemJsonOf(res, JSON.parse(json) as KubeObject);
}

/** {@link servedListItemJson} for an object at hand. */
export function listItemJsonOf(res: ResolvedResource, obj: KubeObject): string {
  if (!res.rt.builtin) return JSON.stringify(obj);
  const { apiVersion: _a, kind: _k, ...rest } = obj;
  return JSON.stringify(rest);
}

/**
 * An object stored in one version, read through another: as kube-apiserver with `conversion: None`,
 * only apiVersion changes, then the target version's schema prunes and defaults it.
 */
function otherVersion(res: ResolvedResource, obj: KubeObject): KubeObject {
  const strategy = res.served.strategy;
  if (!strategy?.prune && !strategy?.applyDefaults) return { ...obj, apiVersion: res.apiVersion };
  const out = clone(obj);
  out.apiVersion = res.apiVersion;
  strategy.prune?.(out);
  strategy.applyDefaults?.(out);
  return out;
}

/** The storage form of an object sent in the requested version. */
export function toStorage(res: ResolvedResource, body: KubeObject): KubeObject {
  const converted = res.served.fromView ? res.served.fromView(body) : body;
  return { ...converted, apiVersion: res.rt.storageApiVersion, kind: res.rt.kind };
}

/**
 * The items of unfiltered LISTs as JSON text, cached until the table changes: informers relisting a
 * large, quiet table cost one string copy instead of a re-render.
 */
export class ListTextCache {
  private readonly texts = new Map<string, { version: number; text: string }>();

  constructor(private readonly store: Store) {}

  itemsText(res: ResolvedResource, namespace: string | undefined): string {
    const ns = res.rt.namespaced ? namespace : undefined;
    const key = `${res.rt.storageKey}|${res.apiVersion}|${ns ?? ""}`;
    const version = this.store.lastChange(res.rt.storageKey);
    const hit = this.texts.get(key);
    if (hit && hit.version === version) return hit.text;
    const text = this.store
      .list(res.rt.storageKey, ns)
      .map((s) => servedListItemJson(res, s))
      .join(",");
    if (this.texts.size >= 32) this.texts.clear();
    this.texts.set(key, { version, text });
    return text;
  }

  /** Forgets cached LIST texts (a CRD changed, so another version may render differently). */
  clear(): void {
    this.texts.clear();
  }
}
