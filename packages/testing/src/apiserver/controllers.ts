/**
 * The controllers a cluster runs beside the API server, folded into it: the garbage collector
 * (owner references, orphan and foreground deletion), finalizer-driven deletion hooks and the
 * namespace controller, run in batches right after the writes that trigger them.
 *
 * @module
 */
import type { CoreHooks, DeleteOptions, WriteOptions } from "./core-types.js";
import { type Registry, type ResolvedResource, storageView } from "./registry.js";
import type { Store } from "./store.js";
import type { KubeObject, ResourceType } from "./types.js";
import { clone } from "./values.js";

/** The writes the controllers make, through the core's own verbs. */
export interface ControllerWrites {
  /** Deletes, ignoring "already gone". */
  safeDelete(res: ResolvedResource, obj: KubeObject, opts: DeleteOptions): void;
  commitUpdate(
    res: ResolvedResource,
    current: KubeObject,
    proposed: KubeObject,
    opts: WriteOptions,
  ): unknown;
  /** Removes an object from storage now. */
  removeObject(rt: ResourceType, obj: KubeObject): KubeObject;
}

/** The controllers' state: which objects they still have work on. */
export class Controllers {
  private scheduled = false;
  /** uids of objects removed from storage whose dependents still need collecting. */
  private readonly deletedOwners = new Set<string>();
  private readonly deletingWithFinalizer = new Set<string>();
  private readonly terminatingNamespaces = new Set<string>();

  constructor(
    private readonly store: Store,
    private readonly registry: Registry,
    private readonly hooks: CoreHooks,
    private readonly writes: ControllerWrites,
  ) {}

  afterWrite(rt: ResourceType, obj: KubeObject, previous: KubeObject | undefined): void {
    if (rt.group === "apiextensions.k8s.io" && rt.plural === "customresourcedefinitions") {
      this.hooks.onCrdChange?.(obj, previous);
    }
    if (obj.metadata.deletionTimestamp !== undefined && obj.metadata.uid) {
      this.deletingWithFinalizer.add(obj.metadata.uid);
      if (rt.group === "" && rt.plural === "namespaces") {
        this.terminatingNamespaces.add(obj.metadata.name ?? "");
      }
      this.schedule();
    }
  }

  afterRemove(rt: ResourceType, obj: KubeObject): void {
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
      this.schedule();
    }
    this.schedule();
  }

  /** Runs the garbage collector and namespace controller soon (batched, like the real ones). */
  schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      try {
        this.run();
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

  private run(): void {
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
          this.writes.safeDelete(dep.res, dep.obj, { propagationPolicy: "Background" });
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
            else this.writes.safeDelete(dep.res, dep.obj, { propagationPolicy: "Foreground" });
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
          this.writes.safeDelete(r, s.obj, { propagationPolicy: "Background" });
        }
      }
    }
    if (remaining > 0) return;
    this.terminatingNamespaces.delete(name);
    const spec = (ns.spec ?? {}) as { finalizers?: string[] };
    const obj = clone(ns);
    obj.spec = { ...spec, finalizers: (spec.finalizers ?? []).filter((f) => f !== "kubernetes") };
    if ((obj.metadata.finalizers ?? []).length === 0) {
      this.writes.removeObject(res.rt, ns);
      return;
    }
    this.writes.commitUpdate(res, ns, obj, {});
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
    this.writes.commitUpdate(res, obj, next, {});
  }

  /** Drops one finalizer through a normal update (removing the object when it was the last). */
  removeFinalizer(res: ResolvedResource, obj: KubeObject, finalizer: string): void {
    const next = clone(obj);
    next.metadata.finalizers = (next.metadata.finalizers ?? []).filter((f) => f !== finalizer);
    this.writes.commitUpdate(res, obj, next, {});
  }
}
