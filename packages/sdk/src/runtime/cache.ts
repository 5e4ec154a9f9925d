import type { KubernetesObject } from "@kubernetes/client-node";
import type { KubeClient, WriteKind } from "./client.js";
import { Informer, type InformerOptions } from "./informer.js";
import { type RuntimeLogger, silentLogger } from "./logging.js";
import {
  isNamespaced,
  type ObjectKey,
  objectKeyString,
  type ResourceDescriptor,
  resourceId,
} from "./resource.js";

/** Informer settings the cache applies to every informer it creates (per-kind options override them). */
export type SharedInformerDefaults = Pick<
  InformerOptions<KubernetesObject>,
  | "resyncPeriodMs"
  | "initialSync"
  | "pageSize"
  | "watchTimeoutSeconds"
  | "staleWatchTimeoutMs"
  | "backoff"
  | "metrics"
  | "clock"
>;

/** Per-kind informer settings: scope and transform. */
export interface KindCacheOptions<T extends KubernetesObject> {
  /** Server-side label selector for this kind only. */
  labelSelector?: string;
  /** Field selector for this kind only. */
  fieldSelector?: string;
  /** Transform before caching; default drops managedFields. */
  transform?: (obj: T) => T;
  /** Watch this namespace instead of the cache-wide one. */
  namespace?: string;
}

/** Options of {@link InformerCache}. */
export interface InformerCacheOptions {
  /** Client used by the informers; its writes feed read-your-own-writes. */
  client: KubeClient;
  /** Restrict namespaced kinds to this namespace (the `--namespace` flag). */
  namespace?: string;
  /** Defaults for every informer. */
  informerDefaults?: SharedInformerDefaults;
  /** How long a read waits for the cache to catch up with this process's own write. Default 10 s. */
  readYourWritesTimeoutMs?: number;
  /** Logger. */
  logger?: RuntimeLogger;
}

interface PendingWrite {
  rv: string | undefined;
  deleted: boolean;
}

/**
 * Shared informers, one per kind, and cached reads with **read-your-own-writes**: after a write
 * through the cache's client returns resourceVersion N, reads of that object wait until the informer
 * has seen N (or, for a delete, the object is gone), so a reconcile never acts on a state older than
 * its own last write. The wait is bounded; on timeout the read returns what the cache holds and logs.
 *
 * @example
 * ```ts
 * const cache = new InformerCache({ client, namespace: "team-a" });
 * cache.informerFor(MachinePoolResource);
 * cache.start();
 * await cache.waitForSync();
 * const pool = await cache.get(MachinePoolResource, { namespace: "team-a", name: "pool-1" });
 * ```
 */
export class InformerCache {
  private readonly options: InformerCacheOptions;
  private readonly informers = new Map<string, Informer<KubernetesObject>>();
  private readonly pending = new Map<string, Map<string, PendingWrite>>();
  private readonly log: RuntimeLogger;
  private started = false;
  private readonly stopWrites: () => void;

  /** Creates the cache and subscribes to its client's writes. */
  constructor(options: InformerCacheOptions) {
    this.options = options;
    this.log = (options.logger ?? silentLogger()).child({ component: "cache" });
    this.stopWrites = options.client.onWrite((resource, kind, key, result) =>
      this.recordWrite(resource, kind, key, result),
    );
  }

  /**
   * The shared informer of a kind, created on first use (and started at once if the cache runs).
   * Options only apply when this call creates it.
   */
  informerFor<T extends KubernetesObject>(
    resource: ResourceDescriptor<T>,
    options: KindCacheOptions<T> = {},
  ): Informer<T> {
    const id = resourceId(resource);
    const existing = this.informers.get(id);
    if (existing) return existing as unknown as Informer<T>;
    const informerOptions: InformerOptions<T> = {
      ...(this.options.informerDefaults as Partial<InformerOptions<T>>),
      client: this.options.client,
      resource,
      logger: this.log,
    };
    const namespace = options.namespace ?? this.options.namespace;
    if (namespace && isNamespaced(resource)) informerOptions.namespace = namespace;
    if (options.labelSelector) informerOptions.labelSelector = options.labelSelector;
    if (options.fieldSelector) informerOptions.fieldSelector = options.fieldSelector;
    if (options.transform) informerOptions.transform = options.transform;
    const informer = new Informer<T>(informerOptions);
    this.informers.set(id, informer as unknown as Informer<KubernetesObject>);
    if (this.started) informer.start();
    return informer;
  }

  /** Starts every informer (and any created later). */
  start(): void {
    this.started = true;
    for (const informer of this.informers.values()) informer.start();
  }

  /** Stops every informer. */
  async stop(): Promise<void> {
    this.started = false;
    this.stopWrites();
    await Promise.all([...this.informers.values()].map((informer) => informer.stop()));
  }

  /** True once every informer has synced. */
  hasSynced(): boolean {
    return [...this.informers.values()].every((informer) => informer.hasSynced());
  }

  /** Waits for every informer to sync; rejects naming the kinds that did not within `timeoutMs`. */
  async waitForSync(timeoutMs = 120_000): Promise<void> {
    await Promise.all(
      [...this.informers.values()].map((informer) => informer.waitForSync(timeoutMs)),
    );
  }

  /**
   * Reads one object from the cache, waiting for this process's own pending write of it first.
   * `undefined` if it does not exist (in the cache's scope).
   */
  async get<T extends KubernetesObject>(
    resource: ResourceDescriptor<T>,
    key: ObjectKey,
  ): Promise<T | undefined> {
    const informer = this.requireInformer(resource);
    const keyString = objectKeyString(key);
    await this.awaitPending(resource, informer, keyString);
    return informer.get(keyString) as T | undefined;
  }

  /** Lists cached objects of a kind, after every pending own write of that kind has been observed. */
  async list<T extends KubernetesObject>(
    resource: ResourceDescriptor<T>,
    filter: { namespace?: string; labelSelector?: string } = {},
  ): Promise<T[]> {
    const informer = this.requireInformer(resource);
    const writes = this.pending.get(resourceId(resource));
    if (writes && writes.size > 0) {
      await Promise.all(
        [...writes.keys()].map((key) => this.awaitPending(resource, informer, key)),
      );
    }
    return informer.list(filter) as T[];
  }

  /** Cached objects of a kind whose index `indexName` contains `value` (e.g. by owner UID). */
  async byIndex<T extends KubernetesObject>(
    resource: ResourceDescriptor<T>,
    indexName: string,
    value: string,
  ): Promise<T[]> {
    const informer = this.requireInformer(resource);
    const writes = this.pending.get(resourceId(resource));
    if (writes && writes.size > 0) {
      await Promise.all(
        [...writes.keys()].map((key) => this.awaitPending(resource, informer, key)),
      );
    }
    return informer.byIndex(indexName, value) as T[];
  }

  /** The informers created so far. */
  allInformers(): Informer<KubernetesObject>[] {
    return [...this.informers.values()];
  }

  private requireInformer<T extends KubernetesObject>(
    resource: ResourceDescriptor<T>,
  ): Informer<T> {
    const informer = this.informers.get(resourceId(resource));
    if (!informer) {
      throw new Error(
        `the cache has no informer for ${resourceId(resource)}; watch it in a controller (for/owns/watches) or call cache.informerFor() before starting`,
      );
    }
    return informer as unknown as Informer<T>;
  }

  private recordWrite(
    resource: ResourceDescriptor,
    kind: WriteKind,
    key: ObjectKey,
    result: KubernetesObject | undefined,
  ): void {
    const id = resourceId(resource);
    const informer = this.informers.get(id);
    if (!informer) return;
    if (kind === "write" && !informer.inScope(key, result?.metadata?.labels)) return;
    if (kind === "delete" && !informer.inScope(key, undefined) && !informer.get(key)) return;
    let writes = this.pending.get(id);
    if (!writes) {
      writes = new Map();
      this.pending.set(id, writes);
    }
    writes.set(objectKeyString(key), {
      rv: result?.metadata?.resourceVersion,
      deleted: kind === "delete" && result?.metadata?.deletionTimestamp === undefined,
    });
  }

  private async awaitPending(
    resource: ResourceDescriptor,
    informer: Pick<Informer<KubernetesObject>, "waitForVersion" | "waitForDeletion">,
    key: string,
  ): Promise<void> {
    const writes = this.pending.get(resourceId(resource));
    const write = writes?.get(key);
    if (!writes || !write) return;
    const timeoutMs = this.options.readYourWritesTimeoutMs ?? 10_000;
    let caughtUp = true;
    if (write.deleted) caughtUp = await informer.waitForDeletion(key, timeoutMs);
    else if (write.rv !== undefined)
      caughtUp = await informer.waitForVersion(key, write.rv, timeoutMs);
    if (!caughtUp) {
      this.log.warn(
        { kind: resource.kind, key, resourceVersion: write.rv, timeoutMs },
        "cache did not catch up with our own write in time; reading the cached state",
      );
    }
    // Only clear the entry we waited for: a newer write may have replaced it meanwhile.
    if (writes.get(key) === write) writes.delete(key);
  }
}
