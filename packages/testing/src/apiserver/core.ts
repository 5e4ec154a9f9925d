/**
 * The API server's verbs, independent of HTTP: {@link ApiCore} composes storage with the admission,
 * rendering, paging, patching, field management, deletion and controller modules beside it.
 *
 * @module
 */
import { randomUUID } from "node:crypto";
import { isDeepStrictEqual } from "node:util";
import { admit, checkBody, checkNamespaceWritable, specChanged } from "./admission.js";
import { Controllers } from "./controllers.js";
import type {
  CoreHooks,
  DeleteOptions,
  DeleteResult,
  ListOptions,
  PatchEngines,
  WriteOptions,
} from "./core-types.js";
import {
  checkDeletePreconditions,
  finalizersAfterDelete,
  hasPendingFinalizers,
  markedAsDeleting,
} from "./deletion.js";
import {
  ApiError,
  alreadyExists,
  badRequest,
  conflict,
  invalid,
  notFound,
  STALE_OBJECT,
  unsupportedMediaType,
} from "./errors.js";
import {
  APPLIED,
  applyConflict,
  fieldManagerRequired,
  ignoredFields,
  mergeSchema,
  trackWrite,
} from "./field-management.js";
import { type ListPage, listPage, matchesSelectors } from "./list-paging.js";
import { PATCH_TYPES, patchObject, patchTypes, patchValue } from "./patch-dispatch.js";
import { Registry, type ResolvedResource } from "./registry.js";
import {
  ListTextCache,
  listItemJsonOf,
  servedJson,
  servedListItemJson,
  servedView,
  toStorage,
  verbResultJson,
} from "./rendering.js";
import { scaleOf, withScaledReplicas } from "./scale.js";
import type { FieldRequirement, LabelRequirement } from "./selectors.js";
import { type ChangeEvent, normalize, objectKey, Store, type StoredObject } from "./store.js";
import type { KubeObject, ResourceType } from "./types.js";
import { clone, isObject, nowTimestamp } from "./values.js";

const NAME_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789";

function randomSuffix(): string {
  let s = "";
  for (let i = 0; i < 5; i++) {
    s += NAME_SUFFIX_ALPHABET[Math.floor(Math.random() * NAME_SUFFIX_ALPHABET.length)];
  }
  return s;
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
  private readonly listTexts: ListTextCache;
  private readonly controllers: Controllers;

  constructor(
    readonly clock: () => Date,
    watchWindow: number,
  ) {
    this.store = new Store(watchWindow);
    this.listTexts = new ListTextCache(this.store);
    this.controllers = new Controllers(this.store, this.registry, this.hooks, {
      safeDelete: (res, obj, opts) => this.safeDelete(res, obj, opts),
      commitUpdate: (res, current, proposed, opts) =>
        this.commitUpdate(res, current, proposed, opts),
      removeObject: (rt, obj) => this.removeObject(rt, obj),
    });
  }

  now(): string {
    return nowTimestamp(this.clock);
  }

  // ---- rendering -------------------------------------------------------------------------------

  /** The stored object as seen through the requested version. */
  view(res: ResolvedResource, obj: KubeObject): KubeObject {
    return servedView(res, obj);
  }

  /** JSON text of a stored object in the requested version; reuses the cached text when it can. */
  render(res: ResolvedResource, s: StoredObject): string {
    return servedJson(res, s);
  }

  /**
   * The items of an unfiltered LIST as JSON text, cached until the table changes: informers
   * relisting a large, quiet table cost one string copy instead of a re-render.
   */
  listItemsText(res: ResolvedResource, namespace: string | undefined): string {
    return this.listTexts.itemsText(res, namespace);
  }

  /** Forgets cached LIST texts (a CRD changed, so another version may render differently). */
  invalidateListCache(): void {
    this.listTexts.clear();
  }

  /** JSON text of an object returned by a verb: the stored text when it is the stored object. */
  toJson(res: ResolvedResource, obj: KubeObject): string {
    return verbResultJson(res, obj);
  }

  /**
   * A list item: built-in kinds' items carry no apiVersion/kind (only the list does), as
   * kube-apiserver encodes typed lists; custom resources' items keep them.
   */
  renderListItem(res: ResolvedResource, s: StoredObject): string {
    return servedListItemJson(res, s);
  }

  /** {@link renderListItem} for an object at hand. */
  listItemJson(res: ResolvedResource, obj: KubeObject): string {
    return listItemJsonOf(res, obj);
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
  list(res: ResolvedResource, opts: ListOptions): ListPage {
    return listPage(this.store, res, opts);
  }

  matches(obj: KubeObject, labels: LabelRequirement[], fields: FieldRequirement[]): boolean {
    return matchesSelectors(obj, labels, fields);
  }

  // ---- create ----------------------------------------------------------------------------------

  create(res: ResolvedResource, namespace: string, body: unknown, opts: WriteOptions): KubeObject {
    const rt = res.rt;
    const incoming = checkBody(res, body);
    const obj = toStorage(res, incoming);
    obj.metadata = isObject(obj.metadata) ? clone(obj.metadata) : {};
    const meta = obj.metadata;
    if (rt.namespaced) {
      if (meta.namespace && meta.namespace !== namespace) {
        throw badRequest(
          "the namespace of the provided object does not match the namespace sent on the request",
        );
      }
      meta.namespace = namespace;
      checkNamespaceWritable(this.store, namespace);
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
    admit(res, obj, undefined);
    const name = meta.name as string;
    const key = objectKey(meta.namespace ?? "", name);
    if (this.store.get(rt.storageKey, key)) throw alreadyExists(rt.group, rt.plural, name);
    meta.uid = randomUUID();
    meta.creationTimestamp = this.now();
    if (rt.generation !== "none") meta.generation = 1;
    rt.prepareForCreate?.(obj);
    const tracked = trackWrite(this.engines, res, undefined, obj, opts, () => this.now());
    if (opts.dryRun) return this.view(res, normalize(tracked));
    const rv = this.store.nextRevision();
    tracked.metadata.resourceVersion = String(rv);
    const final = normalize(tracked);
    this.store.put(rt.storageKey, key, final, rv, "ADDED");
    this.controllers.afterWrite(rt, final, undefined);
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
    const incoming = checkBody(res, body);
    const bodyName = isObject(incoming.metadata) ? incoming.metadata.name : undefined;
    if (bodyName !== undefined && bodyName !== name) {
      throw badRequest(
        `the name of the object (${String(bodyName)}) does not match the name on the URL (${name})`,
      );
    }
    const current = this.get(res, namespace, name).obj;
    const obj = toStorage(res, incoming);
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
    admit(res, obj, current);
    if (rt.generation !== "none" && specChanged(rt, current, obj)) {
      meta.generation = (old.generation ?? 0) + 1;
    }
    obj = trackWrite(this.engines, res, current, obj, opts, () => this.now());
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
      this.controllers.afterRemove(rt, normalized);
      return { object: this.view(res, normalized), created: false };
    }
    this.store.put(rt.storageKey, key, normalized, rv, "MODIFIED");
    this.controllers.afterWrite(rt, normalized, current);
    return { object: this.view(res, normalized), created: false };
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
    const patched = patchObject(this.engines, rt, currentView, contentType, body);
    const proposed = toStorage(res, patched as KubeObject);
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
    return patchValue(this.engines, value, contentType, body, rt);
  }

  /** The autoscaling/v1 Scale of an object whose CRD declares a scale subresource. */
  getScale(res: ResolvedResource, namespace: string, name: string): Record<string, unknown> {
    const scale = res.rt.scale;
    if (!scale) throw notFound(res.rt.group, res.rt.plural, name);
    return scaleOf(scale, this.get(res, namespace, name).obj);
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
    const next = withScaledReplicas(rt, scale, current, name, body);
    this.commitUpdate(res, current, next, { ...opts, subresource: "scale" });
    return this.getScale(res, namespace, name);
  }

  /** Patch media types the resource accepts, for 415 messages. */
  patchTypes(rt: ResourceType): string[] {
    return patchTypes(rt);
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
      throw unsupportedMediaType(PATCH_TYPES.apply, patchTypes(rt).slice(0, -1));
    }
    if (!opts.fieldManager) throw fieldManagerRequired();
    const applied = checkBody(res, body);
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
      schema: mergeSchema(this.engines, res),
      now: this.now(),
      subresource: opts.subresource,
      apiVersion: res.apiVersion,
      ignoredFields: ignoredFields(res, opts.subresource, applied),
    });
    if ("conflicts" in result) throw applyConflict(result);
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
    const proposed = toStorage(res, result.object);
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
    checkDeletePreconditions(rt, name, current, opts.preconditions);
    const finalizers = finalizersAfterDelete(rt, current, opts);
    const isNamespace = rt.group === "" && rt.plural === "namespaces";
    if (finalizers.length > 0 || isNamespace) {
      if (
        current.metadata.deletionTimestamp !== undefined &&
        isDeepStrictEqual(finalizers, current.metadata.finalizers ?? [])
      ) {
        return { object: this.view(res, current), deleted: false };
      }
      const obj = markedAsDeleting(current, finalizers, isNamespace, () => this.now());
      if (opts.dryRun) return { object: this.view(res, obj), deleted: false };
      const rv = this.store.nextRevision();
      obj.metadata.resourceVersion = String(rv);
      const key = objectKey(obj.metadata.namespace ?? "", name);
      this.store.put(rt.storageKey, key, normalize(obj), rv, "MODIFIED");
      this.controllers.afterWrite(rt, obj, current);
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
    this.controllers.afterRemove(rt, final);
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

  /** Deletes, ignoring "already gone". */
  safeDelete(res: ResolvedResource, obj: KubeObject, opts: DeleteOptions): void {
    try {
      this.delete(res, obj.metadata.namespace ?? "", obj.metadata.name ?? "", opts);
    } catch (e) {
      if (!(e instanceof ApiError && e.code === 404)) throw e;
    }
  }

  /** Drops one finalizer through a normal update (removing the object when it was the last). */
  removeFinalizer(res: ResolvedResource, obj: KubeObject, finalizer: string): void {
    this.controllers.removeFinalizer(res, obj, finalizer);
  }

  /** Runs the garbage collector and namespace controller soon (batched, like the real ones). */
  scheduleControllers(): void {
    this.controllers.schedule();
  }

  /** The resource type that owns a storage table, resolved in its storage version. */
  resolveStorage(storageKey: string): ResolvedResource | undefined {
    return this.controllers.resolveStorage(storageKey);
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
