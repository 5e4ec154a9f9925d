/**
 * The shared informer: one kind listed (or filled by a WatchList) and watched into a local, indexed
 * cache, with restarts that never give up, a watchdog, resyncs and read-your-own-writes waits.
 *
 * @module
 */
import type { KubernetesObject } from "@kubernetes/client-node";
import { CacheWaiters } from "./cache-waiters.js";
import type { KubeClient } from "./client.js";
import { BadRequestError, GoneError, InvalidError } from "./errors.js";
import { IndexedStore } from "./indexed-store.js";
import { InformerHandlers } from "./informer-handlers.js";
import {
  abortableSleep,
  backoffDelay,
  backoffSleep,
  clockTimer,
  listRequestOptions,
  watchRequestOptions,
  watchTimeouts,
} from "./informer-requests.js";
import {
  compareResourceVersions,
  dropManagedFields,
  type IndexFunc,
  type InformerHandler,
  type InformerOptions,
  indexByOwnerUID,
  OWNER_UID_INDEX,
} from "./informer-types.js";
import { type LabelSelector, parseLabelSelector } from "./labels.js";
import { type RuntimeLogger, silentLogger } from "./logging.js";
import {
  isNamespaced,
  type ObjectKey,
  objectKeyString,
  type ResourceDescriptor,
  resourceId,
} from "./resource.js";

const INITIAL_EVENTS_END = "k8s.io/initial-events-end";

/** Why a WatchList could not fill the cache, when the server does not do WatchList. */
class WatchListUnsupported extends Error {}

/**
 * A shared informer: lists, then watches one kind, and keeps a local cache of it.
 *
 * - bookmarks are requested; a `410 Gone` relists and emits deletes for objects that vanished;
 * - **every** other failure restarts the watch with capped exponential backoff: it never stops by
 *   itself and never exits the process;
 * - a watchdog restarts a watch that stayed quiet past its timeout;
 * - update handlers receive the old and new object; indexers answer "objects owned by X" (built in)
 *   or any question of your own ({@link Informer.addIndexer}) without scanning.
 *
 * @example
 * ```ts
 * const informer = new Informer({ client, resource: SecretResource, namespace: "default" });
 * informer.addEventHandler({ onUpdate: (oldObj, newObj) => console.log(oldObj.data, newObj.data) });
 * informer.start();
 * await informer.waitForSync();
 * informer.get({ namespace: "default", name: "x" });
 * await informer.stop();
 * ```
 */
export class Informer<T extends KubernetesObject> {
  /** The kind this informer watches. */
  readonly resource: ResourceDescriptor<T>;
  private readonly client: KubeClient;
  private readonly options: InformerOptions<T>;
  private readonly transform: (obj: T) => T;
  private readonly log: RuntimeLogger;
  private readonly store: IndexedStore<T>;
  private readonly handlers: InformerHandlers<T>;
  private readonly selector: LabelSelector | undefined;
  private readonly waiters = new CacheWaiters((ms, callback) => this.after(ms, callback));
  private syncWaiters: Array<() => void> = [];
  private lastRV: string | undefined;
  private synced = false;
  private running = false;
  private stopController = new AbortController();
  private loop: Promise<void> | undefined;
  private cancelResync: (() => void) | undefined;
  private readonly id: string;
  private watchListSupported: boolean;
  /** True while a WatchList streams its initial events (the cache is not filled from it yet). */
  private snapshotPending = false;
  /** Counters, for tests and debugging (`watchLists`: caches filled by a WatchList). */
  readonly stats = { lists: 0, watchLists: 0, watches: 0, restarts: 0, relists: 0, events: 0 };

  /** Creates a stopped informer; call {@link Informer.start}. */
  constructor(options: InformerOptions<T>) {
    if (options.namespace && !isNamespaced(options.resource)) {
      throw new TypeError(
        `${options.resource.kind} is cluster-scoped: an informer for it cannot be limited to namespace "${options.namespace}"`,
      );
    }
    this.options = options;
    this.client = options.client;
    this.resource = options.resource;
    this.transform = options.transform ?? dropManagedFields;
    this.log = (options.logger ?? silentLogger()).child({ informer: options.resource.kind });
    this.handlers = new InformerHandlers<T>(this.log);
    this.selector = options.labelSelector ? parseLabelSelector(options.labelSelector) : undefined;
    this.id = resourceId(options.resource);
    this.store = new IndexedStore<T>(this.id);
    this.watchListSupported = (options.initialSync ?? "watchList") === "watchList";
    this.addIndexer(OWNER_UID_INDEX, indexByOwnerUID as IndexFunc<T>);
  }

  /** Starts listing and watching in the background. Calling it twice does nothing. */
  start(): void {
    if (this.running) return;
    this.running = true;
    this.stopController = new AbortController();
    this.loop = this.run();
    const resync = this.options.resyncPeriodMs ?? 0;
    if (resync > 0) {
      const again = () => {
        this.cancelResync = this.after(resync, () => {
          this.resync();
          if (this.running) again();
        });
      };
      again();
    }
  }

  /** Stops the informer and closes its watch; resolves once the background loop has ended. */
  async stop(): Promise<void> {
    if (!this.running) return;
    this.running = false;
    this.cancelResync?.();
    this.cancelResync = undefined;
    this.stopController.abort(new Error("informer stopped"));
    await this.loop;
    this.waiters.cancelAll();
  }

  /** True once the first list has been cached. */
  hasSynced(): boolean {
    return this.synced;
  }

  /** Resolves once the first list has been cached; rejects after `timeoutMs` (default 120 s). */
  waitForSync(timeoutMs = 120_000): Promise<void> {
    if (this.synced) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const cancel = this.after(timeoutMs, () => {
        reject(
          new Error(
            `informer for ${this.id} did not sync within ${timeoutMs} ms; check that the kind is served and RBAC allows list and watch`,
          ),
        );
      });
      this.syncWaiters.push(() => {
        cancel();
        resolve();
      });
    });
  }

  /**
   * Adds handlers. If the cache already holds objects they are replayed as initial adds, so a late
   * handler sees the same world as an early one. Returns a function removing the handlers.
   */
  addEventHandler(handler: InformerHandler<T>): () => void {
    return this.handlers.add(handler, this.synced ? this.store.values() : undefined);
  }

  /**
   * Adds an index; existing objects are indexed at once. Adding the same function under the same
   * name again does nothing (several controllers may ask for one index); another function under a
   * taken name throws.
   */
  addIndexer(name: string, fn: IndexFunc<T>): void {
    this.store.addIndexer(name, fn);
  }

  /** Objects whose index `name` contains `value`. */
  byIndex(name: string, value: string): T[] {
    return this.store.byIndex(name, value);
  }

  /** The cached object, or `undefined`. */
  get(key: ObjectKey | string): T | undefined {
    return this.store.get(typeof key === "string" ? key : objectKeyString(key));
  }

  /** Cached objects, optionally filtered by namespace and label selector. */
  list(filter: { namespace?: string; labelSelector?: string } = {}): T[] {
    const selector = filter.labelSelector ? parseLabelSelector(filter.labelSelector) : undefined;
    const result: T[] = [];
    for (const obj of this.store.values()) {
      if (filter.namespace !== undefined && obj.metadata?.namespace !== filter.namespace) continue;
      if (selector && !selector.matches(obj.metadata?.labels)) continue;
      result.push(obj);
    }
    return result;
  }

  /**
   * Whether an object with this key and these labels falls inside the informer's namespace and
   * label-selector scope (i.e. whether the cache would ever hold it).
   */
  inScope(key: ObjectKey, labels: Readonly<Record<string, string>> | undefined): boolean {
    if (this.options.namespace && key.namespace !== this.options.namespace) return false;
    return this.selector === undefined || this.selector.matches(labels);
  }

  /** Number of cached objects. */
  size(): number {
    return this.store.size;
  }

  /** The resourceVersion the cache is at (last list, event or bookmark). */
  lastResourceVersion(): string | undefined {
    return this.lastRV;
  }

  /**
   * Resolves `true` once the cache has seen resourceVersion `rv` for the object at `key` (or anything
   * later, when versions are ordered integers), `false` after `timeoutMs`. Read-your-own-writes waits
   * on this after a write.
   */
  waitForVersion(key: string, rv: string, timeoutMs: number): Promise<boolean> {
    return this.waiters.wait(() => this.hasSeen(key, rv), timeoutMs);
  }

  /** Resolves `true` once `key` is gone from the cache or marked for deletion, `false` on timeout. */
  waitForDeletion(key: string, timeoutMs: number): Promise<boolean> {
    const satisfied = () => {
      const obj = this.store.get(key);
      return obj === undefined || obj.metadata?.deletionTimestamp !== undefined;
    };
    return this.waiters.wait(satisfied, timeoutMs);
  }

  private hasSeen(key: string, rv: string): boolean {
    if (this.lastRV !== undefined) {
      const order = compareResourceVersions(this.lastRV, rv);
      if (order !== undefined) return order >= 0;
    }
    const current = this.store.get(key)?.metadata?.resourceVersion;
    return current === rv;
  }

  private async run(): Promise<void> {
    let needList = true;
    let failures = 0;
    const signal = this.stopController.signal;
    while (this.running) {
      try {
        let initial = false;
        if (needList) {
          if (this.watchListSupported) initial = true;
          else await this.relist(signal);
          needList = false;
        }
        let outcome: Awaited<ReturnType<Informer<T>["watchOnce"]>>;
        try {
          outcome = await this.watchOnce(signal, initial);
        } catch (error) {
          const unsynced = initial && this.snapshotPending;
          this.snapshotPending = false;
          if (unsynced) needList = true;
          if (
            unsynced &&
            (error instanceof WatchListUnsupported ||
              error instanceof InvalidError ||
              error instanceof BadRequestError)
          ) {
            this.watchListSupported = false;
            this.log.info(
              { reason: error.message },
              "the server does not do WatchList; filling the cache by LIST from now on",
            );
            continue;
          }
          throw error;
        }
        if (initial && this.snapshotPending) needList = true;
        this.snapshotPending = false;
        if (!this.running) break;
        if (outcome.events > 0 || outcome.durationMs > 1000) failures = 0;
        else failures++;
        this.stats.restarts++;
        this.options.metrics?.restarted(this.id, outcome.stale ? "stale" : "closed");
        if (outcome.stale) {
          this.log.warn(
            { quietMs: outcome.durationMs },
            "watch delivered nothing past its timeout; restarting it",
          );
        }
        // A watch that closes at once again and again must not spin: back off after the first.
        if (failures > 1) await backoffSleep(this.options, failures - 1, signal);
      } catch (error) {
        if (!this.running) break;
        this.stats.restarts++;
        if (error instanceof GoneError) {
          this.log.info({ resourceVersion: this.lastRV }, "watch window expired (410); relisting");
          this.options.metrics?.restarted(this.id, "gone");
          needList = true;
          failures++;
          // Relist at once the first time; repeated 410s back off like any error.
          if (failures > 1) await backoffSleep(this.options, failures - 1, signal);
          continue;
        }
        failures++;
        const delay = backoffDelay(this.options.backoff, failures);
        this.options.metrics?.restarted(this.id, "error");
        this.log.warn(
          { err: error, retryInMs: Math.round(delay), phase: needList ? "list" : "watch" },
          "list/watch failed; retrying with backoff",
        );
        await abortableSleep(this.options.clock, delay, signal);
      }
    }
  }

  private after(ms: number, callback: () => void, keepAlive = false): () => void {
    return clockTimer(this.options.clock, ms, callback, keepAlive);
  }

  private async relist(signal: AbortSignal): Promise<void> {
    const listOptions = listRequestOptions(this.options);
    this.stats.lists++;
    this.options.metrics?.listed(this.id);
    const list = await this.client.listAll(this.resource, listOptions);
    if (signal.aborted) return;
    const fresh = new Map<string, T>();
    for (const item of list.items) {
      const obj = this.transform(item);
      fresh.set(this.keyOf(obj), obj);
    }
    this.replaceAll(fresh, list.metadata.resourceVersion);
  }

  /** Makes the cache equal to `fresh` (a list, or the initial events of a WatchList) at `rv`. */
  private replaceAll(fresh: Map<string, T>, rv: string | undefined): void {
    if (!this.synced) {
      for (const [key, obj] of fresh) {
        this.store.put(key, obj);
        this.handlers.emitAdd(obj, true);
      }
    } else {
      this.stats.relists++;
      for (const [key, obj] of fresh) {
        const old = this.store.get(key);
        this.store.put(key, obj);
        if (old === undefined) this.handlers.emitAdd(obj, false);
        else if (old.metadata?.resourceVersion !== obj.metadata?.resourceVersion)
          this.handlers.emitUpdate(old, obj, false);
      }
      for (const [key, old] of this.store.entries()) {
        if (fresh.has(key)) continue;
        this.store.remove(key);
        this.handlers.emitDelete(old, true);
      }
    }
    this.lastRV = rv;
    this.markSynced();
    this.waiters.check();
  }

  private markSynced(): void {
    if (this.synced) return;
    this.synced = true;
    for (const resolve of this.syncWaiters.splice(0)) resolve();
  }

  /**
   * One watch request until it ends. With `initial`, a WatchList: events up to the
   * `k8s.io/initial-events-end` bookmark fill a fresh snapshot that then replaces the cache (as a
   * LIST would), and the same stream goes on as the live watch; `snapshotPending` stays true if it
   * ended before that.
   */
  private async watchOnce(
    stopSignal: AbortSignal,
    initial = false,
  ): Promise<{ events: number; durationMs: number; stale: boolean }> {
    const { timeoutSeconds, staleMs } = watchTimeouts(this.options);
    const watchdog = new AbortController();
    let stale = false;
    let disarm: (() => void) | undefined;
    const arm = () => {
      disarm?.();
      disarm = this.after(staleMs, () => {
        stale = true;
        watchdog.abort(new Error("watch went quiet"));
      });
    };
    const started = performance.now();
    let events = 0;
    const options = watchRequestOptions(this.options, {
      timeoutSeconds,
      signal: AbortSignal.any([stopSignal, watchdog.signal]),
      lastResourceVersion: this.lastRV,
      initial,
    });
    if (initial) this.stats.watchLists++;
    this.stats.watches++;
    let snapshot = initial ? new Map<string, T>() : undefined;
    this.snapshotPending = initial;
    arm();
    try {
      for await (const event of this.client.watch(this.resource, options)) {
        arm();
        events++;
        this.stats.events++;
        if (snapshot === undefined) {
          this.apply(event.type, event.object);
          continue;
        }
        if (event.type === "BOOKMARK") {
          const annotations = (event.object.metadata as { annotations?: Record<string, string> })
            ?.annotations;
          if (annotations?.[INITIAL_EVENTS_END] !== "true") {
            throw new WatchListUnsupported(
              "a bookmark arrived without the k8s.io/initial-events-end annotation",
            );
          }
          this.replaceAll(snapshot, event.object.metadata?.resourceVersion);
          snapshot = undefined;
          this.snapshotPending = false;
          continue;
        }
        const obj = this.transform(event.object);
        if (event.type === "DELETED") snapshot.delete(this.keyOf(obj));
        else snapshot.set(this.keyOf(obj), obj);
      }
    } catch (error) {
      if (!(stale || stopSignal.aborted)) throw error;
    } finally {
      disarm?.();
    }
    return { events, durationMs: performance.now() - started, stale };
  }

  private apply(type: "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK", raw: T): void {
    const rv = raw.metadata?.resourceVersion;
    if (type === "BOOKMARK") {
      if (rv) this.lastRV = rv;
      this.waiters.check();
      return;
    }
    const obj = this.transform(raw);
    const key = this.keyOf(obj);
    // A server-side label selector already filters; this guards against selector drift on relabels.
    if (type !== "DELETED" && this.selector && !this.selector.matches(obj.metadata?.labels)) {
      type = "DELETED";
    }
    const old = this.store.get(key);
    if (type === "DELETED") {
      if (old !== undefined) {
        this.store.remove(key);
        this.handlers.emitDelete(obj, false);
      }
    } else {
      this.store.put(key, obj);
      if (old === undefined) this.handlers.emitAdd(obj, false);
      else if (old.metadata?.resourceVersion !== rv) this.handlers.emitUpdate(old, obj, false);
    }
    if (rv) this.lastRV = rv;
    this.waiters.check();
  }

  private resync(): void {
    if (!this.synced) return;
    for (const obj of this.store.values()) this.handlers.emitUpdate(obj, obj, true);
  }

  private keyOf(obj: T): string {
    return objectKeyString({
      namespace: obj.metadata?.namespace ?? "",
      name: obj.metadata?.name ?? "",
    });
  }
}
