/**
 * LIST semantics: namespace and selector filtering, and paging with `limit`/`continue` over the
 * storage key order, with the continue tokens the server issues.
 *
 * @module
 */
import type { ListOptions } from "./core-types.js";
import { badRequest } from "./errors.js";
import type { ResolvedResource } from "./registry.js";
import {
  type FieldRequirement,
  type LabelRequirement,
  matchesFields,
  matchesLabels,
} from "./selectors.js";
import { objectKey, type Store, type StoredObject } from "./store.js";
import type { KubeObject } from "./types.js";

/** One page of a LIST. */
export interface ListPage {
  items: StoredObject[];
  continueToken?: string;
  remaining?: number;
  resourceVersion: number;
}

/** Filters by namespace and selectors; paging with `limit`/`continue` over key order. */
export function listPage(store: Store, res: ResolvedResource, opts: ListOptions): ListPage {
  const namespace = res.rt.namespaced ? opts.namespace : undefined;
  let startAfter: string | undefined;
  let rv = store.currentRevision;
  if (opts.continueToken) {
    const token = decodeContinue(opts.continueToken);
    startAfter = token.start;
    rv = token.rv;
  }
  const all = store.list(res.rt.storageKey, namespace);
  const matches = (s: StoredObject) => matchesSelectors(s.obj, opts.labels, opts.fields);
  const items: StoredObject[] = [];
  let i = 0;
  if (startAfter !== undefined) {
    const after = startAfter;
    i = lowerBound(all, (s) => storeKeyOf(s.obj) <= after);
  }
  const limit = opts.limit && opts.limit > 0 ? opts.limit : Number.POSITIVE_INFINITY;
  for (; i < all.length; i++) {
    const s = all[i] as StoredObject;
    if (!matches(s)) continue;
    if (items.length >= limit) {
      const last = items[items.length - 1] as StoredObject;
      let remaining = 0;
      for (let j = i; j < all.length; j++) if (matches(all[j] as StoredObject)) remaining++;
      return {
        items,
        continueToken: encodeContinue(rv, storeKeyOf(last.obj)),
        remaining,
        resourceVersion: rv,
      };
    }
    items.push(s);
  }
  return { items, resourceVersion: rv };
}

export function matchesSelectors(
  obj: KubeObject,
  labels: LabelRequirement[],
  fields: FieldRequirement[],
): boolean {
  if (labels.length > 0 && !matchesLabels(labels, obj.metadata.labels)) return false;
  if (fields.length > 0 && !matchesFields(fields, obj)) return false;
  return true;
}

function storeKeyOf(obj: KubeObject): string {
  return objectKey(obj.metadata.namespace ?? "", obj.metadata.name ?? "");
}

/** Index of the first element for which `before` is false (elements are sorted). */
function lowerBound<T>(arr: T[], before: (v: T) => boolean): number {
  let lo = 0;
  let hi = arr.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (before(arr[mid] as T)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function encodeContinue(rv: number, start: string): string {
  return Buffer.from(JSON.stringify({ v: "meta.k8s.io/v1", rv, start })).toString("base64url");
}

function decodeContinue(token: string): { rv: number; start: string } {
  try {
    const parsed = JSON.parse(Buffer.from(token, "base64url").toString("utf8")) as {
      rv?: unknown;
      start?: unknown;
    };
    if (typeof parsed.rv === "number" && typeof parsed.start === "string") {
      return { rv: parsed.rv, start: parsed.start };
    }
  } catch {
    // fall through to the error below
  }
  throw badRequest(
    `continue key is not valid: the continue token "${token}" was not issued by this server`,
  );
}
