import type { KubeObject } from "./types.js";

/** An object in storage; `json` is its serialized form, computed once and shared by every read. */
export interface StoredObject {
  readonly obj: KubeObject;
  json(): string;
}

/** A change, as kept in the watch window and sent to watchers. */
export interface ChangeEvent {
  readonly rv: number;
  readonly type: "ADDED" | "MODIFIED" | "DELETED";
  readonly storageKey: string;
  readonly namespace: string;
  readonly object: StoredObject;
  /** The state before the change (MODIFIED only), for selector transitions. */
  readonly previous: StoredObject | undefined;
}

/** Orders apiVersion, kind and metadata first so the version can be swapped in the JSON text. */
export function normalize(obj: KubeObject): KubeObject {
  const { apiVersion, kind, metadata, ...rest } = obj;
  return { apiVersion, kind, metadata, ...rest };
}

const storedByObject = new WeakMap<KubeObject, StoredObject>();

export function stored(obj: KubeObject): StoredObject {
  let cached: string | undefined;
  const value: StoredObject = {
    obj,
    json() {
      cached ??= JSON.stringify(obj);
      return cached;
    },
  };
  storedByObject.set(obj, value);
  return value;
}

/** The storage entry of an object that is itself stored (so its JSON text is shared). */
export function storedFor(obj: KubeObject): StoredObject | undefined {
  return storedByObject.get(obj);
}

/** Storage key of one object inside its table: etcd-like `namespace/name` ordering. */
export function objectKey(namespace: string, name: string): string {
  return namespace ? `${namespace}/${name}` : name;
}

class Table {
  readonly objects = new Map<string, StoredObject>();
  private sorted: string[] | undefined;
  /** resourceVersion of the table's last change (0 for a table never written). */
  lastChange = 0;

  set(key: string, value: StoredObject, rv: number): void {
    if (!this.objects.has(key)) this.sorted = undefined;
    this.objects.set(key, value);
    this.lastChange = rv;
  }

  delete(key: string, rv: number): void {
    if (this.objects.delete(key)) this.sorted = undefined;
    this.lastChange = rv;
  }

  sortedKeys(): string[] {
    this.sorted ??= [...this.objects.keys()].sort();
    return this.sorted;
  }
}

/**
 * All objects of the server, one global resourceVersion counter (as etcd's revision), and a
 * bounded window of recent changes from which watches replay.
 */
export class Store {
  private readonly tables = new Map<string, Table>();
  private revision: number;
  private readonly window: ChangeEvent[] = [];
  private windowStart = 0;
  /** Per table: the resourceVersion of its newest change that left the window. */
  private readonly evicted = new Map<string, number>();
  private readonly listeners = new Set<(event: ChangeEvent) => void>();
  readonly byUid = new Map<string, { storageKey: string; key: string }>();
  /** owner uid → dependents (`storageKey|key`). */
  readonly dependents = new Map<string, Set<string>>();

  constructor(
    private readonly windowSize: number,
    initialRevision = 1,
  ) {
    this.revision = initialRevision;
    this.windowStart = initialRevision;
  }

  get currentRevision(): number {
    return this.revision;
  }

  /** The oldest resourceVersion a watch on `storageKey` may start from. */
  oldestWatchableRevision(storageKey: string): number {
    return Math.max(this.windowStart, this.evicted.get(storageKey) ?? 0);
  }

  nextRevision(): number {
    this.revision += 1;
    return this.revision;
  }

  table(storageKey: string): Table {
    let t = this.tables.get(storageKey);
    if (!t) {
      t = new Table();
      this.tables.set(storageKey, t);
    }
    return t;
  }

  get(storageKey: string, key: string): StoredObject | undefined {
    return this.tables.get(storageKey)?.objects.get(key);
  }

  /** Objects of one table in key order, optionally from one namespace. */
  list(storageKey: string, namespace?: string): StoredObject[] {
    const t = this.tables.get(storageKey);
    if (!t) return [];
    const out: StoredObject[] = [];
    const prefix = namespace ? `${namespace}/` : undefined;
    for (const key of t.sortedKeys()) {
      if (prefix && !key.startsWith(prefix)) continue;
      const o = t.objects.get(key);
      if (o) out.push(o);
    }
    return out;
  }

  /** resourceVersion of a table's last change: list texts cached before it are stale. */
  lastChange(storageKey: string): number {
    return this.tables.get(storageKey)?.lastChange ?? 0;
  }

  /** Keys of one table in order (for paging). */
  sortedKeys(storageKey: string): string[] {
    return this.tables.get(storageKey)?.sortedKeys() ?? [];
  }

  storageKeys(): string[] {
    return [...this.tables.keys()];
  }

  /** Writes an object (its resourceVersion already set to `rv`) and records the change. */
  put(
    storageKey: string,
    key: string,
    obj: KubeObject,
    rv: number,
    type: "ADDED" | "MODIFIED",
  ): StoredObject {
    const t = this.table(storageKey);
    const previous = t.objects.get(key);
    const value = stored(obj);
    t.set(key, value, rv);
    if (previous) this.unindex(previous.obj, storageKey, key);
    this.index(obj, storageKey, key);
    this.record({
      rv,
      type,
      storageKey,
      namespace: obj.metadata.namespace ?? "",
      object: value,
      previous,
    });
    return value;
  }

  /** Removes an object; `finalState` (its resourceVersion set to `rv`) is what watchers see. */
  remove(
    storageKey: string,
    key: string,
    finalState: KubeObject,
    rv: number,
  ): StoredObject | undefined {
    const t = this.tables.get(storageKey);
    const previous = t?.objects.get(key);
    if (!t || !previous) return undefined;
    t.delete(key, rv);
    this.unindex(previous.obj, storageKey, key);
    const value = stored(finalState);
    this.record({
      rv,
      type: "DELETED",
      storageKey,
      namespace: finalState.metadata.namespace ?? "",
      object: value,
      previous,
    });
    return value;
  }

  /** Drops a whole table (a CRD was deleted); no events, as its watches are closed. */
  dropTable(storageKey: string): void {
    const t = this.tables.get(storageKey);
    if (!t) return;
    for (const [key, o] of t.objects) this.unindex(o.obj, storageKey, key);
    this.tables.delete(storageKey);
  }

  onChange(listener: (event: ChangeEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * Changes of one table after `rv`, or `undefined` when some of them already left the window (the
   * watch must relist: 410). As kube-apiserver's per-resource watch cache, a quiet resource's old
   * resourceVersion stays valid while other resources change.
   */
  changesSince(storageKey: string, rv: number): ChangeEvent[] | undefined {
    if (rv < this.oldestWatchableRevision(storageKey)) return undefined;
    // The window is ordered by rv: binary search for the first event after rv.
    let lo = 0;
    let hi = this.window.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if ((this.window[mid]?.rv ?? 0) <= rv) lo = mid + 1;
      else hi = mid;
    }
    const out: ChangeEvent[] = [];
    for (let i = lo; i < this.window.length; i++) {
      const e = this.window[i] as ChangeEvent;
      if (e.storageKey === storageKey) out.push(e);
    }
    return out;
  }

  /** Forgets the window: every resourceVersion handed out so far becomes too old to watch from. */
  expireWindow(): void {
    this.window.length = 0;
    this.revision += 1;
    this.windowStart = this.revision;
  }

  private record(event: ChangeEvent): void {
    this.window.push(event);
    if (this.window.length > this.windowSize) {
      const drop = this.window.length - this.windowSize;
      for (const e of this.window.splice(0, drop)) this.evicted.set(e.storageKey, e.rv);
    }
    for (const l of this.listeners) l(event);
  }

  private index(obj: KubeObject, storageKey: string, key: string): void {
    if (obj.metadata.uid) this.byUid.set(obj.metadata.uid, { storageKey, key });
    for (const ref of obj.metadata.ownerReferences ?? []) {
      let set = this.dependents.get(ref.uid);
      if (!set) {
        set = new Set();
        this.dependents.set(ref.uid, set);
      }
      set.add(`${storageKey}|${key}`);
    }
  }

  private unindex(obj: KubeObject, storageKey: string, key: string): void {
    if (obj.metadata.uid) this.byUid.delete(obj.metadata.uid);
    for (const ref of obj.metadata.ownerReferences ?? []) {
      const set = this.dependents.get(ref.uid);
      set?.delete(`${storageKey}|${key}`);
      if (set && set.size === 0) this.dependents.delete(ref.uid);
    }
  }
}
