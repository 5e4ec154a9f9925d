import { randomUUID } from "node:crypto";
import { isDeepStrictEqual } from "node:util";
import {
  ApiError,
  alreadyExists,
  badRequest,
  conflict,
  type InvalidCause,
  invalid,
  notFound,
  STALE_OBJECT,
  unsupportedMediaType,
} from "./errors.js";
import { jsonMergePatch } from "./merge-patch.js";
import { validateObjectMeta } from "./meta-validation.js";
import type { ResolvedResource } from "./registry.js";
import { groupVersion, Registry } from "./registry.js";
import {
  type FieldRequirement,
  type LabelRequirement,
  matchesFields,
  matchesLabels,
} from "./selectors.js";
import {
  type ChangeEvent,
  normalize,
  objectKey,
  Store,
  type StoredObject,
  storedFor,
} from "./store.js";
import type { KubeObject, ResourceType, ValidationStrategy } from "./types.js";

/** Patch bodies the server understands, by Content-Type. */
export const PATCH_TYPES = {
  json: "application/json-patch+json",
  merge: "application/merge-patch+json",
  strategic: "application/strategic-merge-patch+json",
  apply: "application/apply-patch+yaml",
} as const;

/** Arguments shared by the field-management engines. */
export interface FieldManagementArgs {
  manager: string;
  now: string;
  subresource?: string;
  /** The merge schema of the kind (a compiled CRD schema root or a built-in kind's). */
  schema?: unknown;
  apiVersion?: string;
  /** Top-level fields the endpoint resets, which are therefore never owned. */
  ignoredFields?: string[][];
}

/** The patch and apply engines the core delegates to (wired in engines.ts). */
export interface PatchEngines {
  /** RFC 6902; throws an {@link ApiError} for a bad patch. */
  jsonPatch?(obj: unknown, ops: unknown): unknown;
  /** Strategic merge patch of a built-in kind; throws an {@link ApiError}. */
  strategicMergePatch?(kindKey: string, obj: unknown, patch: unknown): unknown;
  /** Server-side apply. */
  serverSideApply?(
    args: FieldManagementArgs & {
      live: KubeObject | undefined;
      applied: KubeObject;
      force: boolean;
    },
  ):
    | { object: KubeObject; changed: boolean }
    | { conflicts: { manager: string; field: string; message: string }[]; message: string };
  /** Records a non-apply write in `managedFields` (operation Update). */
  trackUpdate?(
    args: FieldManagementArgs & { live: KubeObject | undefined; updated: KubeObject },
  ): KubeObject;
  /** The merge schema of a built-in kind. */
  builtinSchema?(kind: string): unknown;
}

/** Options shared by writes. */
export interface WriteOptions {
  dryRun?: boolean;
  fieldManager?: string;
  subresource?: string;
  /** The client's User-Agent: the server names unnamed field managers after it. */
  userAgent?: string;
}

/** `DeleteOptions`, from the body or the query. */
export interface DeleteOptions {
  propagationPolicy?: "Background" | "Foreground" | "Orphan";
  orphanDependents?: boolean;
  preconditions?: { uid?: string; resourceVersion?: string };
  gracePeriodSeconds?: number;
  dryRun?: boolean;
}

/** List parameters. */
export interface ListOptions {
  namespace?: string;
  labels: LabelRequirement[];
  fields: FieldRequirement[];
  limit?: number;
  continueToken?: string;
}

/** The result of a delete: either the object still exists (finalizers) or it is gone. */
export interface DeleteResult {
  object: KubeObject;
  deleted: boolean;
}

/** Timestamps as the server writes them: RFC 3339, seconds precision. */
export function nowTimestamp(clock: () => Date): string {
  return `${clock().toISOString().slice(0, 19)}Z`;
}

/** Marks a write whose managedFields server-side apply already computed. */
const APPLIED = "\u0000applied";

const NAME_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789";

function randomSuffix(): string {
  let s = "";
  for (let i = 0; i < 5; i++) {
    s += NAME_SUFFIX_ALPHABET[Math.floor(Math.random() * NAME_SUFFIX_ALPHABET.length)];
  }
  return s;
}

function clone<T>(v: T): T {
  return structuredClone(v);
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** Hooks the CRD machinery plugs into the core. */
export interface CoreHooks {
  /** A CustomResourceDefinition was written or removed. */
  onCrdChange?(crd: KubeObject | undefined, previous: KubeObject | undefined): void;
  /** An object is being deleted and still has finalizers: the hook may work towards removing them. */
  onDeleting?(res: ResolvedResource, obj: KubeObject): void;
}

/**
 * The API server's semantics, independent of HTTP: storage, REST verbs, patching, deletion with
 * finalizers, garbage collection and namespace termination.
 */
export class ApiCore {
  readonly store: Store;
  readonly registry = new Registry();
  readonly hooks: CoreHooks = {};
  engines: PatchEngines = {};
  private controllersScheduled = false;
  private readonly listCache = new Map<string, { version: number; text: string }>();
  /** uids of objects removed from storage whose dependents still need collecting. */
  private readonly deletedOwners = new Set<string>();
  private readonly deletingWithFinalizer = new Set<string>();
  private readonly terminatingNamespaces = new Set<string>();

  constructor(
    readonly clock: () => Date,
    watchWindow: number,
  ) {
    this.store = new Store(watchWindow);
  }

  now(): string {
    return nowTimestamp(this.clock);
  }

  // ---- rendering -------------------------------------------------------------------------------

  /** The stored object as seen through the requested version. */
  view(res: ResolvedResource, obj: KubeObject): KubeObject {
    if (res.served.toView) return res.served.toView(obj);
    if (obj.apiVersion === res.apiVersion) return obj;
    return this.otherVersion(res, obj);
  }

  /** JSON text of a stored object in the requested version; reuses the cached text when it can. */
  render(res: ResolvedResource, s: StoredObject): string {
    if (res.served.toView) return JSON.stringify(res.served.toView(s.obj));
    const json = s.json();
    if (s.obj.apiVersion === res.apiVersion) return json;
    if (res.served.strategy?.prune) return JSON.stringify(this.otherVersion(res, s.obj));
    // normalize() put apiVersion first, so the prefix is exactly this:
    const prefix = `{"apiVersion":${JSON.stringify(s.obj.apiVersion)}`;
    return `{"apiVersion":${JSON.stringify(res.apiVersion)}${json.slice(prefix.length)}`;
  }

  /**
   * The items of an unfiltered LIST as JSON text, cached until the table changes: informers
   * relisting a large, quiet table cost one string copy instead of a re-render.
   */
  listItemsText(res: ResolvedResource, namespace: string | undefined): string {
    const ns = res.rt.namespaced ? namespace : undefined;
    const key = `${res.rt.storageKey}|${res.apiVersion}|${ns ?? ""}`;
    const version = this.store.lastChange(res.rt.storageKey);
    const hit = this.listCache.get(key);
    if (hit && hit.version === version) return hit.text;
    const text = this.store
      .list(res.rt.storageKey, ns)
      .map((s) => this.renderListItem(res, s))
      .join(",");
    if (this.listCache.size >= 32) this.listCache.clear();
    this.listCache.set(key, { version, text });
    return text;
  }

  /** Forgets cached LIST texts (a CRD changed, so another version may render differently). */
  invalidateListCache(): void {
    this.listCache.clear();
  }

  /** JSON text of an object returned by a verb: the stored text when it is the stored object. */
  toJson(res: ResolvedResource, obj: KubeObject): string {
    const s = storedFor(obj);
    return s ? this.render(res, s) : JSON.stringify(obj);
  }

  /**
   * A list item: built-in kinds' items carry no apiVersion/kind (only the list does), as
   * kube-apiserver encodes typed lists; custom resources' items keep them.
   */
  renderListItem(res: ResolvedResource, s: StoredObject): string {
    const json = this.render(res, s);
    if (!res.rt.builtin) return json;
    const prefix = `{"apiVersion":${JSON.stringify(res.apiVersion)},"kind":${JSON.stringify(res.rt.kind)},`;
    if (json.startsWith(prefix)) return `{${json.slice(prefix.length)}`;
    return this.listItemJson(res, JSON.parse(json) as KubeObject);
  }

  /** {@link renderListItem} for an object at hand. */
  listItemJson(res: ResolvedResource, obj: KubeObject): string {
    if (!res.rt.builtin) return JSON.stringify(obj);
    const { apiVersion: _a, kind: _k, ...rest } = obj;
    return JSON.stringify(rest);
  }

  /**
   * An object stored in one version, read through another: as kube-apiserver with `conversion: None`,
   * only apiVersion changes, then the target version's schema prunes and defaults it.
   */
  private otherVersion(res: ResolvedResource, obj: KubeObject): KubeObject {
    const strategy = res.served.strategy;
    if (!strategy?.prune && !strategy?.applyDefaults) return { ...obj, apiVersion: res.apiVersion };
    const out = clone(obj);
    out.apiVersion = res.apiVersion;
    strategy.prune?.(out);
    strategy.applyDefaults?.(out);
    return out;
  }

  private toStorage(res: ResolvedResource, body: KubeObject): KubeObject {
    const converted = res.served.fromView ? res.served.fromView(body) : body;
    return { ...converted, apiVersion: res.rt.storageApiVersion, kind: res.rt.kind };
  }

  private strategy(res: ResolvedResource): ValidationStrategy | undefined {
    return res.served.strategy ?? res.rt.strategy;
  }

  // ---- reads -----------------------------------------------------------------------------------

  get(res: ResolvedResource, namespace: string, name: string): StoredObject {
    const s = this.store.get(
      res.rt.storageKey,
      objectKey(res.rt.namespaced ? namespace : "", name),
    );
    if (!s) throw notFound(res.rt.group, res.rt.plural, name);
    return s;
  }

  /** Filters by namespace and selectors; paging with `limit`/`continue` over key order. */
  list(
    res: ResolvedResource,
    opts: ListOptions,
  ): {
    items: StoredObject[];
    continueToken?: string;
    remaining?: number;
    resourceVersion: number;
  } {
    const namespace = res.rt.namespaced ? opts.namespace : undefined;
    let startAfter: string | undefined;
    let rv = this.store.currentRevision;
    if (opts.continueToken) {
      const token = decodeContinue(opts.continueToken);
      startAfter = token.start;
      rv = token.rv;
    }
    const all = this.store.list(res.rt.storageKey, namespace);
    const matches = (s: StoredObject) => this.matches(s.obj, opts.labels, opts.fields);
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

  matches(obj: KubeObject, labels: LabelRequirement[], fields: FieldRequirement[]): boolean {
    if (labels.length > 0 && !matchesLabels(labels, obj.metadata.labels)) return false;
    if (fields.length > 0 && !matchesFields(fields, obj)) return false;
    return true;
  }

  // ---- create ----------------------------------------------------------------------------------

  create(res: ResolvedResource, namespace: string, body: unknown, opts: WriteOptions): KubeObject {
    const rt = res.rt;
    const incoming = this.checkBody(res, body);
    const obj = this.toStorage(res, incoming);
    obj.metadata = isObject(obj.metadata) ? clone(obj.metadata) : {};
    const meta = obj.metadata;
    if (rt.namespaced) {
      if (meta.namespace && meta.namespace !== namespace) {
        throw badRequest(
          "the namespace of the provided object does not match the namespace sent on the request",
        );
      }
      meta.namespace = namespace;
      this.checkNamespaceWritable(namespace);
    } else {
      delete meta.namespace;
    }
    if (!meta.name && meta.generateName) meta.name = `${meta.generateName}${randomSuffix()}`;
    for (const k of [
      "uid",
      "resourceVersion",
      "creationTimestamp",
      "deletionTimestamp",
      "deletionGracePeriodSeconds",
      "generation",
      "selfLink",
    ]) {
      delete meta[k];
    }
    if (rt.statusSubresource && rt.kind !== "Node") delete obj.status;
    rt.prepareForWrite?.(obj);
    this.admit(res, obj, undefined);
    const name = meta.name as string;
    const key = objectKey(meta.namespace ?? "", name);
    if (this.store.get(rt.storageKey, key)) throw alreadyExists(rt.group, rt.plural, name);
    meta.uid = randomUUID();
    meta.creationTimestamp = this.now();
    if (rt.generation !== "none") meta.generation = 1;
    rt.prepareForCreate?.(obj);
    const tracked = this.track(res, undefined, obj, opts);
    if (opts.dryRun) return this.view(res, normalize(tracked));
    const rv = this.store.nextRevision();
    tracked.metadata.resourceVersion = String(rv);
    const final = normalize(tracked);
    this.store.put(rt.storageKey, key, final, rv, "ADDED");
    this.afterWrite(rt, final, undefined);
    return this.view(res, final);
  }

  // ---- update ----------------------------------------------------------------------------------

  update(
    res: ResolvedResource,
    namespace: string,
    name: string,
    body: unknown,
    opts: WriteOptions,
  ): { object: KubeObject; created: boolean } {
    const rt = res.rt;
    const incoming = this.checkBody(res, body);
    const bodyName = isObject(incoming.metadata) ? incoming.metadata.name : undefined;
    if (bodyName !== undefined && bodyName !== name) {
      throw badRequest(
        `the name of the object (${String(bodyName)}) does not match the name on the URL (${name})`,
      );
    }
    const current = this.get(res, namespace, name).obj;
    const obj = this.toStorage(res, incoming);
    obj.metadata = isObject(obj.metadata) ? clone(obj.metadata) : {};
    const requestedRv = obj.metadata.resourceVersion;
    if (requestedRv === undefined || requestedRv === "") {
      if (!rt.allowUnconditionalUpdate) {
        throw invalid(rt.group, rt.kind, name, [
          {
            field: "metadata.resourceVersion",
            reason: "FieldValueInvalid",
            message: "Invalid value: 0x0: must be specified for an update",
          },
        ]);
      }
    } else if (requestedRv !== current.metadata.resourceVersion) {
      throw conflict(rt.group, rt.plural, name, STALE_OBJECT);
    }
    return this.commitUpdate(res, current, obj, opts);
  }

  /** Applies status/main-resource split, admission, generation, no-op detection; then writes. */
  commitUpdate(
    res: ResolvedResource,
    current: KubeObject,
    proposed: KubeObject,
    opts: WriteOptions,
  ): { object: KubeObject; created: boolean } {
    const rt = res.rt;
    let obj: KubeObject;
    if (opts.subresource === "status") {
      // A status write changes status only (and managedFields, which records who wrote it).
      obj = clone(current);
      if (proposed.status === undefined) delete obj.status;
      else obj.status = clone(proposed.status);
      if (proposed.metadata.managedFields !== undefined) {
        obj.metadata.managedFields = clone(proposed.metadata.managedFields);
      }
    } else {
      obj = proposed;
      if (rt.statusSubresource) {
        if (current.status === undefined) delete obj.status;
        else obj.status = clone(current.status);
      }
    }
    const meta = obj.metadata;
    const old = current.metadata;
    const requestedUid = proposed.metadata.uid;
    if (requestedUid !== undefined && requestedUid !== "" && requestedUid !== old.uid) {
      // A uid in the body is a precondition, as on the real server.
      throw conflict(
        rt.group,
        rt.plural,
        old.name ?? "",
        `Precondition failed: UID in precondition: ${String(requestedUid)}, UID in object meta: ${old.uid}`,
      );
    }
    meta.name = old.name;
    if (old.namespace !== undefined) meta.namespace = old.namespace;
    else delete meta.namespace;
    meta.uid = old.uid;
    meta.creationTimestamp = old.creationTimestamp;
    delete meta.selfLink;
    if (old.deletionTimestamp !== undefined) {
      meta.deletionTimestamp = old.deletionTimestamp;
      meta.deletionGracePeriodSeconds = old.deletionGracePeriodSeconds;
      const added = (meta.finalizers ?? []).filter((f) => !(old.finalizers ?? []).includes(f));
      if (added.length > 0) {
        throw invalid(rt.group, rt.kind, old.name ?? "", [
          {
            field: "metadata.finalizers",
            reason: "FieldValueForbidden",
            message: "Forbidden: no new finalizers can be added if the object is being deleted",
          },
        ]);
      }
    } else {
      delete meta.deletionTimestamp;
      delete meta.deletionGracePeriodSeconds;
    }
    if (old.generation !== undefined) meta.generation = old.generation;
    else delete meta.generation;
    if (meta.managedFields === undefined && old.managedFields !== undefined) {
      meta.managedFields = old.managedFields;
    }
    rt.prepareForWrite?.(obj);
    this.admit(res, obj, current);
    if (rt.generation !== "none" && this.specChanged(rt, current, obj)) {
      meta.generation = (old.generation ?? 0) + 1;
    }
    obj = this.track(res, current, obj, opts);
    obj.metadata.resourceVersion = old.resourceVersion;
    const normalized = normalize(obj);
    if (isDeepStrictEqual(normalized, current)) {
      // A write that changes nothing is not a write: no new resourceVersion, no event.
      return { object: this.view(res, current), created: false };
    }
    if (opts.dryRun) return { object: this.view(res, normalized), created: false };
    const key = objectKey(normalized.metadata.namespace ?? "", normalized.metadata.name ?? "");
    const rv = this.store.nextRevision();
    normalized.metadata.resourceVersion = String(rv);
    if (normalized.metadata.deletionTimestamp && !hasPendingFinalizers(normalized)) {
      this.store.remove(rt.storageKey, key, normalized, rv);
      this.afterRemove(rt, normalized);
      return { object: this.view(res, normalized), created: false };
    }
    this.store.put(rt.storageKey, key, normalized, rv, "MODIFIED");
    this.afterWrite(rt, normalized, current);
    return { object: this.view(res, normalized), created: false };
  }

  /** The merge schema field management uses for this resource. */
  private mergeSchema(res: ResolvedResource): unknown {
    if (res.rt.builtin) return this.engines.builtinSchema?.(res.rt.kind);
    return this.strategy(res)?.schema;
  }

  /** Top-level fields an endpoint resets: status on the main resource, the rest on /status. */
  private ignoredFields(
    res: ResolvedResource,
    subresource: string | undefined,
    obj: KubeObject,
  ): string[][] {
    if (subresource === "status") {
      return Object.keys(obj)
        .filter((k) => !["apiVersion", "kind", "metadata", "status"].includes(k))
        .map((k) => [k]);
    }
    return res.rt.statusSubresource ? [["status"]] : [];
  }

  /** The field manager of a request: `fieldManager`, else the User-Agent's product name. */
  private managerOf(opts: WriteOptions): string {
    if (opts.fieldManager) return opts.fieldManager;
    const product = opts.userAgent?.split("/")[0]?.trim();
    return product || "unknown";
  }

  /** Records a non-apply write in managedFields, when the engine is present. */
  private track(
    res: ResolvedResource,
    live: KubeObject | undefined,
    updated: KubeObject,
    opts: WriteOptions,
  ): KubeObject {
    if (!this.engines.trackUpdate || opts.fieldManager === APPLIED) return updated;
    // Like kube-apiserver's skip-non-applied manager: an object without managedFields (they were
    // cleared) is not tracked again by updates, only by an apply.
    if (live !== undefined && (live.metadata.managedFields ?? []).length === 0) return updated;
    const viewLive = live ? this.view(res, live) : undefined;
    const viewUpdated = this.view(res, updated);
    const tracked = this.engines.trackUpdate({
      live: viewLive,
      updated: viewUpdated,
      manager: this.managerOf(opts),
      now: this.now(),
      subresource: opts.subresource,
      schema: this.mergeSchema(res),
      apiVersion: res.apiVersion,
      ignoredFields: this.ignoredFields(res, opts.subresource, updated),
    });
    return {
      ...updated,
      metadata: { ...updated.metadata, managedFields: tracked.metadata.managedFields },
    };
  }

  private specChanged(rt: ResourceType, before: KubeObject, after: KubeObject): boolean {
    if (rt.generation === "spec") return !isDeepStrictEqual(before.spec, after.spec);
    const strip = (o: KubeObject) => {
      const { metadata: _m, status, apiVersion: _a, kind: _k, ...rest } = o;
      return rt.statusSubresource ? rest : { ...rest, status };
    };
    return !isDeepStrictEqual(strip(before), strip(after));
  }

  // ---- patch -----------------------------------------------------------------------------------

  patch(
    res: ResolvedResource,
    namespace: string,
    name: string,
    contentType: string,
    body: unknown,
    opts: WriteOptions & { force?: boolean },
  ): { object: KubeObject; created: boolean } {
    const rt = res.rt;
    if (contentType === PATCH_TYPES.apply) return this.apply(res, namespace, name, body, opts);
    const currentStored = this.get(res, namespace, name);
    const current = currentStored.obj;
    const currentView = clone(this.view(res, current));
    let patched: unknown;
    switch (contentType) {
      case PATCH_TYPES.merge:
        if (!isObject(body)) throw badRequest("json: cannot unmarshal non-object into merge patch");
        patched = jsonMergePatch(currentView, body);
        break;
      case PATCH_TYPES.json:
        if (!this.engines.jsonPatch) throw unsupportedMediaType(contentType, this.patchTypes(rt));
        patched = this.engines.jsonPatch(currentView, body);
        break;
      case PATCH_TYPES.strategic:
        if (!rt.builtin || !this.engines.strategicMergePatch) {
          throw unsupportedMediaType(contentType, this.patchTypes(rt));
        }
        patched = this.engines.strategicMergePatch(rt.kind, currentView, body);
        break;
      default:
        throw unsupportedMediaType(contentType, this.patchTypes(rt));
    }
    if (!isObject(patched)) throw badRequest("the patch did not produce an object");
    const proposed = this.toStorage(res, patched as KubeObject);
    proposed.metadata = isObject(proposed.metadata) ? proposed.metadata : {};
    const patchedRv = proposed.metadata.resourceVersion;
    if (patchedRv !== undefined && patchedRv !== current.metadata.resourceVersion) {
      throw conflict(rt.group, rt.plural, name, STALE_OBJECT);
    }
    if (proposed.metadata.name !== undefined && proposed.metadata.name !== name) {
      throw badRequest(
        `the name of the object (${String(proposed.metadata.name)}) does not match the name on the URL (${name})`,
      );
    }
    return this.commitUpdate(res, current, proposed, opts);
  }

  /** Applies a JSON merge patch or JSON patch to a plain value (the Scale view). */
  patchValue(value: unknown, contentType: string, body: unknown, rt: ResourceType): unknown {
    if (contentType === PATCH_TYPES.merge) {
      if (!isObject(body)) throw badRequest("json: cannot unmarshal non-object into merge patch");
      return jsonMergePatch(value, body);
    }
    if (!this.engines.jsonPatch) throw unsupportedMediaType(contentType, this.patchTypes(rt));
    return this.engines.jsonPatch(value, body);
  }

  /** The autoscaling/v1 Scale of an object whose CRD declares a scale subresource. */
  getScale(res: ResolvedResource, namespace: string, name: string): Record<string, unknown> {
    const scale = res.rt.scale;
    if (!scale) throw notFound(res.rt.group, res.rt.plural, name);
    const obj = this.get(res, namespace, name).obj;
    const status: Record<string, unknown> = {
      replicas: Number(readPath(obj, scale.statusReplicasPath) ?? 0),
    };
    if (scale.labelSelectorPath) {
      const selector = readPath(obj, scale.labelSelectorPath);
      if (typeof selector === "string") status.selector = selector;
    }
    const meta = obj.metadata;
    return {
      kind: "Scale",
      apiVersion: "autoscaling/v1",
      metadata: {
        name: meta.name,
        ...(meta.namespace ? { namespace: meta.namespace } : {}),
        uid: meta.uid,
        resourceVersion: meta.resourceVersion,
        creationTimestamp: meta.creationTimestamp,
      },
      spec: { replicas: Number(readPath(obj, scale.specReplicasPath) ?? 0) },
      status,
    };
  }

  /** Writes `spec.replicas` of a Scale into the object's replicas field. */
  updateScale(
    res: ResolvedResource,
    namespace: string,
    name: string,
    body: unknown,
    opts: WriteOptions,
  ): Record<string, unknown> {
    const rt = res.rt;
    const scale = rt.scale;
    if (!scale) throw notFound(rt.group, rt.plural, name);
    const current = this.get(res, namespace, name).obj;
    const b = isObject(body) ? body : {};
    const meta = isObject(b.metadata) ? b.metadata : {};
    if (
      meta.resourceVersion !== undefined &&
      meta.resourceVersion !== current.metadata.resourceVersion
    ) {
      throw conflict(rt.group, rt.plural, name, STALE_OBJECT);
    }
    const replicas = isObject(b.spec) ? b.spec.replicas : undefined;
    if (typeof replicas !== "number" || !Number.isInteger(replicas) || replicas < 0) {
      throw invalid("autoscaling", "Scale", name, [
        {
          field: "spec.replicas",
          reason: "FieldValueInvalid",
          message: `Invalid value: ${JSON.stringify(replicas ?? null)}: must be greater than or equal to 0`,
        },
      ]);
    }
    const next = clone(current);
    writePath(next, scale.specReplicasPath, replicas);
    this.commitUpdate(res, current, next, { ...opts, subresource: "scale" });
    return this.getScale(res, namespace, name);
  }

  /** Patch media types the resource accepts, for 415 messages. */
  patchTypes(rt: ResourceType): string[] {
    const types: string[] = [PATCH_TYPES.json, PATCH_TYPES.merge];
    if (rt.builtin) types.push(PATCH_TYPES.strategic);
    types.push(PATCH_TYPES.apply);
    return types;
  }

  private apply(
    res: ResolvedResource,
    namespace: string,
    name: string,
    body: unknown,
    opts: WriteOptions & { force?: boolean },
  ): { object: KubeObject; created: boolean } {
    const rt = res.rt;
    if (!this.engines.serverSideApply) {
      throw unsupportedMediaType(PATCH_TYPES.apply, this.patchTypes(rt).slice(0, -1));
    }
    if (!opts.fieldManager) {
      throw new ApiError(
        422,
        "Invalid",
        'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch',
        {
          group: "meta.k8s.io",
          kind: "PatchOptions",
          causes: [
            {
              reason: "FieldValueRequired",
              message: "Required value: is required for apply patch",
              field: "fieldManager",
            },
          ],
        },
      );
    }
    const applied = this.checkBody(res, body);
    const appliedName = isObject(applied.metadata) ? applied.metadata.name : undefined;
    if (appliedName !== undefined && appliedName !== name) {
      throw badRequest(
        `the name of the object (${String(appliedName)}) does not match the name on the URL (${name})`,
      );
    }
    const key = objectKey(rt.namespaced ? namespace : "", name);
    const liveStored = this.store.get(rt.storageKey, key);
    if (!liveStored && opts.subresource === "status") throw notFound(rt.group, rt.plural, name);
    const live = liveStored ? clone(this.view(res, liveStored.obj)) : undefined;
    const appliedRv = isObject(applied.metadata) ? applied.metadata.resourceVersion : undefined;
    if (appliedRv !== undefined && live && appliedRv !== live.metadata.resourceVersion) {
      throw conflict(rt.group, rt.plural, name, STALE_OBJECT);
    }
    const result = this.engines.serverSideApply({
      live,
      applied: { ...clone(applied), apiVersion: res.apiVersion, kind: rt.kind },
      manager: opts.fieldManager,
      force: opts.force === true,
      schema: this.mergeSchema(res),
      now: this.now(),
      subresource: opts.subresource,
      apiVersion: res.apiVersion,
      ignoredFields: this.ignoredFields(res, opts.subresource, applied),
    });
    if ("conflicts" in result) {
      throw new ApiError(409, "Conflict", result.message, {
        causes: result.conflicts.map((c) => ({
          reason: "FieldManagerConflict",
          message: c.message,
          field: c.field,
        })),
      });
    }
    if (!result.changed && liveStored)
      return { object: this.view(res, liveStored.obj), created: false };
    // The engine already recorded this apply in managedFields; no Update entry on top of it.
    const rest: WriteOptions = {
      dryRun: opts.dryRun,
      subresource: opts.subresource,
      fieldManager: APPLIED,
    };
    if (!liveStored) {
      const obj = result.object;
      obj.metadata = { ...obj.metadata, name };
      if (rt.namespaced) obj.metadata.namespace = namespace;
      return { object: this.create(res, namespace, obj, rest), created: true };
    }
    const proposed = this.toStorage(res, result.object);
    return this.commitUpdate(res, liveStored.obj, proposed, rest);
  }

  // ---- delete ----------------------------------------------------------------------------------

  delete(
    res: ResolvedResource,
    namespace: string,
    name: string,
    opts: DeleteOptions,
  ): DeleteResult {
    const rt = res.rt;
    const current = this.get(res, namespace, name).obj;
    const pre = opts.preconditions;
    if (pre?.uid !== undefined && pre.uid !== current.metadata.uid) {
      throw conflict(
        rt.group,
        rt.plural,
        name,
        `Precondition failed: UID in precondition: ${pre.uid}, UID in object meta: ${current.metadata.uid}`,
      );
    }
    if (
      pre?.resourceVersion !== undefined &&
      pre.resourceVersion !== current.metadata.resourceVersion
    ) {
      throw conflict(
        rt.group,
        rt.plural,
        name,
        `Precondition failed: ResourceVersion in precondition: ${pre.resourceVersion}, ResourceVersion in object meta: ${current.metadata.resourceVersion}`,
      );
    }
    const policy =
      opts.propagationPolicy ??
      (opts.orphanDependents === true
        ? "Orphan"
        : opts.orphanDependents === false
          ? "Background"
          : undefined);
    const finalizers = [...(current.metadata.finalizers ?? [])];
    for (const f of rt.finalizersOnDelete ?? []) if (!finalizers.includes(f)) finalizers.push(f);
    if (policy === "Orphan" && !finalizers.includes("orphan")) finalizers.push("orphan");
    if (policy === "Foreground" && !finalizers.includes("foregroundDeletion")) {
      finalizers.push("foregroundDeletion");
    }
    if (policy === "Background" || policy === "Foreground") {
      const drop = policy === "Background" ? ["orphan", "foregroundDeletion"] : ["orphan"];
      for (const f of drop) {
        const i = finalizers.indexOf(f);
        if (i >= 0 && current.metadata.deletionTimestamp === undefined) finalizers.splice(i, 1);
      }
    }
    const isNamespace = rt.group === "" && rt.plural === "namespaces";
    if (finalizers.length > 0 || isNamespace) {
      if (
        current.metadata.deletionTimestamp !== undefined &&
        isDeepStrictEqual(finalizers, current.metadata.finalizers ?? [])
      ) {
        return { object: this.view(res, current), deleted: false };
      }
      const obj = clone(current);
      obj.metadata.finalizers = finalizers;
      if (finalizers.length === 0) delete obj.metadata.finalizers;
      // markAsDeleting: the first deletionTimestamp of an object with a generation increments it.
      if (obj.metadata.deletionTimestamp === undefined && (obj.metadata.generation ?? 0) > 0)
        obj.metadata.generation = (obj.metadata.generation ?? 0) + 1;
      obj.metadata.deletionTimestamp ??= this.now();
      obj.metadata.deletionGracePeriodSeconds ??= 0;
      if (isNamespace) obj.status = { ...(obj.status as object), phase: "Terminating" };
      if (opts.dryRun) return { object: this.view(res, obj), deleted: false };
      const rv = this.store.nextRevision();
      obj.metadata.resourceVersion = String(rv);
      const key = objectKey(obj.metadata.namespace ?? "", name);
      this.store.put(rt.storageKey, key, normalize(obj), rv, "MODIFIED");
      this.afterWrite(rt, obj, current);
      return { object: this.view(res, obj), deleted: false };
    }
    if (opts.dryRun) return { object: this.view(res, current), deleted: true };
    const removed = this.removeObject(rt, current);
    return { object: this.view(res, removed), deleted: true };
  }

  /** Removes an object from storage now; returns the state watchers saw in DELETED. */
  private removeObject(rt: ResourceType, current: KubeObject): KubeObject {
    const rv = this.store.nextRevision();
    const final = clone(current);
    final.metadata.resourceVersion = String(rv);
    const key = objectKey(current.metadata.namespace ?? "", current.metadata.name ?? "");
    this.store.remove(rt.storageKey, key, final, rv);
    this.afterRemove(rt, final);
    return final;
  }

  deleteCollection(res: ResolvedResource, opts: ListOptions, del: DeleteOptions): KubeObject[] {
    const { items } = this.list(res, { ...opts, limit: undefined, continueToken: undefined });
    const out: KubeObject[] = [];
    for (const s of items) {
      try {
        out.push(
          this.delete(res, s.obj.metadata.namespace ?? "", s.obj.metadata.name ?? "", del).object,
        );
      } catch (e) {
        if (!(e instanceof ApiError && e.code === 404)) throw e;
      }
    }
    return out;
  }

  // ---- admission -------------------------------------------------------------------------------

  private checkBody(res: ResolvedResource, body: unknown): KubeObject {
    const rt = res.rt;
    if (body === undefined) {
      throw badRequest(
        `the object provided is unrecognized (must be of type ${rt.kind}): couldn't get version/kind; json parse error: unexpected end of JSON input (<empty>)`,
      );
    }
    if (!isObject(body)) {
      throw badRequest(
        `the object provided is unrecognized (must be of type ${rt.kind}): couldn't get version/kind; json parse error: json: cannot unmarshal ${Array.isArray(body) ? "array" : typeof body} into Go value of type struct`,
      );
    }
    const kind = body.kind;
    if (kind !== undefined && kind !== rt.kind) {
      throw badRequest(
        `the kind of the object (${String(kind)}) does not match the kind of the resource (${rt.kind}): send ${rt.kind} to ${rt.plural}`,
      );
    }
    const apiVersion = body.apiVersion;
    if (apiVersion !== undefined && apiVersion !== res.apiVersion) {
      throw badRequest(
        `the API version in the data (${String(apiVersion)}) does not match the expected API version (${res.apiVersion})`,
      );
    }
    const out = { ...body, apiVersion: res.apiVersion, kind: rt.kind } as KubeObject;
    const managed = isObject(out.metadata) ? out.metadata.managedFields : undefined;
    if (Array.isArray(managed)) {
      // Clients serialize metav1.Time with milliseconds; the server stores seconds.
      out.metadata = {
        ...out.metadata,
        managedFields: managed.map((m: unknown) =>
          isObject(m) && typeof m.time === "string" && !Number.isNaN(Date.parse(m.time))
            ? { ...m, time: nowTimestamp(() => new Date(Date.parse(m.time as string))) }
            : m,
        ),
      };
    }
    return out;
  }

  /** Pruning, defaulting and validation: the CRD schema's work plus the metadata checks. */
  private admit(res: ResolvedResource, obj: KubeObject, old: KubeObject | undefined): void {
    const strategy = this.strategy(res);
    const rt = res.rt;
    // The schema engine works on the request version's shape; storage and view only differ in
    // apiVersion for schema-backed resources.
    strategy?.prune?.(obj);
    strategy?.applyDefaults?.(obj);
    if (res.apiVersion !== rt.storageApiVersion) {
      // Stored in another version: that version's schema prunes it too (conversion: None).
      const storage = rt.versions.find(
        (v) => groupVersion(rt.group, v.version) === rt.storageApiVersion,
      );
      storage?.strategy?.prune?.(obj);
    }
    const causes: InvalidCause[] = validateObjectMeta(
      obj,
      rt.group === "" && rt.plural === "namespaces",
    );
    if (strategy?.validate) causes.push(...strategy.validate(obj, old));
    if (old && rt.validateUpdate) causes.push(...rt.validateUpdate(obj, old));
    if (causes.length > 0) {
      throw invalid(
        rt.group,
        rt.kind,
        obj.metadata.name ?? obj.metadata.generateName ?? "",
        causes,
      );
    }
  }

  private checkNamespaceWritable(namespace: string): void {
    const ns = this.store.get("namespaces", namespace);
    if (!ns) throw notFound("", "namespaces", namespace);
    if (ns.obj.metadata.deletionTimestamp !== undefined) {
      throw new ApiError(
        403,
        "Forbidden",
        `unable to create new content in namespace ${namespace} because it is being terminated`,
        {
          name: namespace,
          kind: "namespaces",
          causes: [
            {
              reason: "NamespaceTerminating",
              message: `namespace ${namespace} is being terminated`,
              field: "metadata.namespace",
            },
          ],
        },
      );
    }
  }

  // ---- controllers: GC, finalizers, namespaces -------------------------------------------------

  private afterWrite(rt: ResourceType, obj: KubeObject, previous: KubeObject | undefined): void {
    if (rt.group === "apiextensions.k8s.io" && rt.plural === "customresourcedefinitions") {
      this.hooks.onCrdChange?.(obj, previous);
    }
    if (obj.metadata.deletionTimestamp !== undefined && obj.metadata.uid) {
      this.deletingWithFinalizer.add(obj.metadata.uid);
      if (rt.group === "" && rt.plural === "namespaces") {
        this.terminatingNamespaces.add(obj.metadata.name ?? "");
      }
      this.scheduleControllers();
    }
  }

  private afterRemove(rt: ResourceType, obj: KubeObject): void {
    if (rt.group === "apiextensions.k8s.io" && rt.plural === "customresourcedefinitions") {
      this.hooks.onCrdChange?.(undefined, obj);
    }
    if (obj.metadata.uid) {
      this.deletingWithFinalizer.delete(obj.metadata.uid);
      if (this.store.dependents.has(obj.metadata.uid)) {
        this.deletedOwners.add(obj.metadata.uid);
      }
    }
    if (
      rt.namespaced &&
      obj.metadata.namespace &&
      this.terminatingNamespaces.has(obj.metadata.namespace)
    ) {
      this.scheduleControllers();
    }
    this.scheduleControllers();
  }

  /** Runs the garbage collector and namespace controller soon (batched, like the real ones). */
  scheduleControllers(): void {
    if (this.controllersScheduled) return;
    this.controllersScheduled = true;
    setImmediate(() => {
      this.controllersScheduled = false;
      try {
        this.runControllers();
      } catch (e) {
        // Controllers retry on the next change; a failure here must not take the server down.
        process.emitWarning(`in-memory apiserver controllers: ${(e as Error).message}`);
      }
    });
  }

  /** The resource type that owns a storage table, resolved in its storage version. */
  resolveStorage(storageKey: string): ResolvedResource | undefined {
    const rt = this.registry
      .all()
      .find((t) => t.storageKey === storageKey && !t.versions[0]?.toView);
    if (!rt) return undefined;
    return storageView(rt);
  }

  private lookupRef(ref: string): { res: ResolvedResource; obj: KubeObject } | undefined {
    const bar = ref.indexOf("|");
    const storageKey = ref.slice(0, bar);
    const key = ref.slice(bar + 1);
    const s = this.store.get(storageKey, key);
    const res = this.resolveStorage(storageKey);
    if (!s || !res) return undefined;
    return { res, obj: s.obj };
  }

  private runControllers(): void {
    // Dependents of owners that are gone: drop the dangling reference, or delete them when no
    // owner remains (background propagation).
    for (const uid of [...this.deletedOwners]) {
      this.deletedOwners.delete(uid);
      for (const ref of [...(this.store.dependents.get(uid) ?? [])]) {
        const dep = this.lookupRef(ref);
        if (!dep) continue;
        const refs = dep.obj.metadata.ownerReferences ?? [];
        const remaining = refs.filter((r) => r.uid !== uid && this.store.byUid.has(r.uid));
        if (remaining.length > 0) {
          this.rewriteOwners(dep.res, dep.obj, (r) => r.uid !== uid);
        } else if (dep.obj.metadata.deletionTimestamp === undefined) {
          this.safeDelete(dep.res, dep.obj, { propagationPolicy: "Background" });
        }
      }
    }
    for (const uid of [...this.deletingWithFinalizer]) {
      const loc = this.store.byUid.get(uid);
      if (!loc) {
        this.deletingWithFinalizer.delete(uid);
        continue;
      }
      const owner = this.lookupRef(`${loc.storageKey}|${loc.key}`);
      if (!owner) continue;
      const finalizers = owner.obj.metadata.finalizers ?? [];
      const dependents = [...(this.store.dependents.get(uid) ?? [])]
        .map((r) => this.lookupRef(r))
        .filter((d): d is NonNullable<typeof d> => d !== undefined);
      if (finalizers.includes("orphan")) {
        for (const dep of dependents) this.rewriteOwners(dep.res, dep.obj, (r) => r.uid !== uid);
        this.removeFinalizer(owner.res, owner.obj, "orphan");
        continue;
      }
      if (finalizers.includes("foregroundDeletion")) {
        let blocking = 0;
        for (const dep of dependents) {
          const ref = (dep.obj.metadata.ownerReferences ?? []).find((r) => r.uid === uid);
          if (ref?.blockOwnerDeletion === true) blocking++;
          if (dep.obj.metadata.deletionTimestamp === undefined) {
            const others = (dep.obj.metadata.ownerReferences ?? []).filter(
              (r) => r.uid !== uid && this.store.byUid.has(r.uid),
            );
            if (others.length > 0) this.rewriteOwners(dep.res, dep.obj, (r) => r.uid !== uid);
            else this.safeDelete(dep.res, dep.obj, { propagationPolicy: "Foreground" });
          }
        }
        if (blocking === 0) this.removeFinalizer(owner.res, owner.obj, "foregroundDeletion");
        continue;
      }
      if (owner.res.rt.group === "" && owner.res.rt.plural === "namespaces") {
        this.terminateNamespace(owner.res, owner.obj);
      }
      this.hooks.onDeleting?.(owner.res, owner.obj);
    }
  }

  /** The namespace controller: delete everything in the namespace, then drop its finalizer. */
  private terminateNamespace(res: ResolvedResource, ns: KubeObject): void {
    const name = ns.metadata.name ?? "";
    let remaining = 0;
    for (const rt of this.registry.all()) {
      if (!rt.namespaced || rt.versions[0]?.toView) continue;
      const r = storageView(rt);
      if (!r) continue;
      for (const s of this.store.list(rt.storageKey, name)) {
        remaining++;
        if (s.obj.metadata.deletionTimestamp === undefined) {
          this.safeDelete(r, s.obj, { propagationPolicy: "Background" });
        }
      }
    }
    if (remaining > 0) return;
    this.terminatingNamespaces.delete(name);
    const spec = (ns.spec ?? {}) as { finalizers?: string[] };
    const obj = clone(ns);
    obj.spec = { ...spec, finalizers: (spec.finalizers ?? []).filter((f) => f !== "kubernetes") };
    if ((obj.metadata.finalizers ?? []).length === 0) {
      this.removeObject(res.rt, ns);
      return;
    }
    this.commitUpdate(res, ns, obj, {});
  }

  /** Deletes, ignoring "already gone". */
  safeDelete(res: ResolvedResource, obj: KubeObject, opts: DeleteOptions): void {
    try {
      this.delete(res, obj.metadata.namespace ?? "", obj.metadata.name ?? "", opts);
    } catch (e) {
      if (!(e instanceof ApiError && e.code === 404)) throw e;
    }
  }

  private rewriteOwners(
    res: ResolvedResource,
    obj: KubeObject,
    keep: (r: NonNullable<KubeObject["metadata"]["ownerReferences"]>[number]) => boolean,
  ): void {
    const next = clone(obj);
    const refs = (next.metadata.ownerReferences ?? []).filter(keep);
    if (refs.length > 0) next.metadata.ownerReferences = refs;
    else delete next.metadata.ownerReferences;
    this.commitUpdate(res, obj, next, {});
  }

  /** Drops one finalizer through a normal update (removing the object when it was the last). */
  removeFinalizer(res: ResolvedResource, obj: KubeObject, finalizer: string): void {
    const next = clone(obj);
    next.metadata.finalizers = (next.metadata.finalizers ?? []).filter((f) => f !== finalizer);
    this.commitUpdate(res, obj, next, {});
  }

  /** Subscribes to every committed change. */
  onChange(listener: (event: ChangeEvent) => void): () => void {
    return this.store.onChange(listener);
  }

  /** Creates an object directly (server bootstrap: default namespaces). */
  seed(res: ResolvedResource, obj: KubeObject): void {
    this.create(res, obj.metadata.namespace ?? "", obj, {});
  }
}

function jsonPathSegments(path: string): string[] {
  return path
    .replace(/^\./, "")
    .split(".")
    .filter((p) => p !== "");
}

function readPath(obj: Record<string, unknown>, path: string): unknown {
  let cur: unknown = obj;
  for (const seg of jsonPathSegments(path)) {
    if (!isObject(cur)) return undefined;
    cur = cur[seg];
  }
  return cur;
}

function writePath(obj: Record<string, unknown>, path: string, value: unknown): void {
  const segs = jsonPathSegments(path);
  let cur: Record<string, unknown> = obj;
  for (const seg of segs.slice(0, -1)) {
    const next = cur[seg];
    if (!isObject(next)) cur[seg] = {};
    cur = cur[seg] as Record<string, unknown>;
  }
  const last = segs[segs.length - 1];
  if (last !== undefined) cur[last] = value;
}

/** A resource type resolved in its storage version (or its first served one). */
export function storageView(rt: ResourceType): ResolvedResource | undefined {
  const served =
    rt.versions.find((v) => groupVersion(rt.group, v.version) === rt.storageApiVersion) ??
    rt.versions[0];
  if (!served) return undefined;
  return { rt, served, apiVersion: groupVersion(rt.group, served.version) };
}

/** Metadata finalizers, and for namespaces also `spec.finalizers`, hold an object being deleted. */
function hasPendingFinalizers(obj: KubeObject): boolean {
  if ((obj.metadata.finalizers ?? []).length > 0) return true;
  if (obj.kind === "Namespace" && obj.apiVersion === "v1") {
    const spec = obj.spec as { finalizers?: unknown[] } | undefined;
    return (spec?.finalizers ?? []).length > 0;
  }
  return false;
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

export { isObject };
