import type { KubernetesObject } from "@kubernetes/client-node";
import type { KubeClient } from "./client.js";
import type { WriteKind } from "./client-types.js";
import { Informer } from "./informer.js";
import type { IndexFunc, InformerOptions } from "./informer-types.js";
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

/**
 * Per-kind informer settings. The scope (namespace, selectors) and the transform are fixed by the
 * call that creates the kind's informer: every later caller must ask for the same, or
 * {@link InformerCache.informerFor} throws (one informer per kind is shared by every controller).
 * Indexers add up across callers.
 *
 * @example
 * ```ts
 * cache.informerFor(SecretResource, { labelSelector: "cluster.x-k8s.io/cluster-name" }, "ClusterCache");
 * cache.informerFor(PoolResource, { indexers: { byZone: (pool) => [pool.spec.zone] } });
 * ```
 */
export interface KindCacheOptions<T extends KubernetesObject> {
  /** Server-side label selector for this kind only. */
  labelSelector?: string;
  /** Field selector for this kind only. */
  fieldSelector?: string;
  /** Transform before caching; default drops managedFields. Compared by identity between callers. */
  transform?: (obj: T) => T;
  /** Watch this namespace instead of the cache-wide one. */
  namespace?: string;
  /**
   * Indexes the informer keeps, by name, for {@link InformerCache.byIndex} (controller-runtime's
   * `IndexField`). Callers may each add theirs; one name given two different functions throws.
   */
  indexers?: Readonly<Record<string, IndexFunc<T>>>;
}

/** What fixes an informer's view of its kind: the options two callers must agree on. */
interface InformerScope {
  namespace: string | undefined;
  labelSelector: string | undefined;
  fieldSelector: string | undefined;
  transform: ((obj: never) => unknown) | undefined;
}

function describeScope(scope: InformerScope): string {
  const parts: string[] = [];
  if (scope.namespace !== undefined) parts.push(`namespace: ${JSON.stringify(scope.namespace)}`);
  if (scope.labelSelector !== undefined)
    parts.push(`labelSelector: ${JSON.stringify(scope.labelSelector)}`);
  if (scope.fieldSelector !== undefined)
    parts.push(`fieldSelector: ${JSON.stringify(scope.fieldSelector)}`);
  if (scope.transform !== undefined)
    parts.push(`transform: ${scope.transform.name || "an anonymous function"}`);
  return parts.length === 0 ? "no namespace, selector or transform" : `{ ${parts.join(", ")} }`;
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
  private readonly scopes = new Map<string, { scope: InformerScope; requestedBy: string }>();
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
   * The shared informer of a kind, created on first use (and started at once if the cache runs),
   * with the kind's indexers added.
   *
   * @param requestedBy Who asks (e.g. `controller "pools"`), named in the error when two callers ask
   *   for different scopes.
   * @throws Error when the informer exists with another namespace, selector or transform than
   *   `options` ask for: a second scope would otherwise be ignored without a word. The message names
   *   both callers and both scopes.
   */
  informerFor<T extends KubernetesObject>(
    resource: ResourceDescriptor<T>,
    options: KindCacheOptions<T> = {},
    requestedBy = "an informerFor() call",
  ): Informer<T> {
    const id = resourceId(resource);
    const namespace = options.namespace ?? this.options.namespace;
    const scope: InformerScope = {
      namespace: namespace && isNamespaced(resource) ? namespace : undefined,
      labelSelector: options.labelSelector || undefined,
      fieldSelector: options.fieldSelector || undefined,
      transform: options.transform as InformerScope["transform"],
    };
    let informer = this.informers.get(id) as unknown as Informer<T> | undefined;
    if (informer) {
      const first = this.scopes.get(id);
      if (first && !sameScope(first.scope, scope)) {
        throw new Error(
          `the cache's informer for ${id} was created by ${first.requestedBy} with ${describeScope(first.scope)}; ` +
            `${requestedBy} asks for ${describeScope(scope)}. One informer per kind is shared by every ` +
            "controller of the manager, so a second scope cannot be honoured: give every watch of this kind the " +
            "same cache options, or drop them from the narrower one and filter it with predicates " +
            "(labelSelectorMatches, predicateFor) instead.",
        );
      }
    } else {
      const informerOptions: InformerOptions<T> = {
        ...(this.options.informerDefaults as Partial<InformerOptions<T>>),
        client: this.options.client,
        resource,
        logger: this.log,
      };
      if (scope.namespace) informerOptions.namespace = scope.namespace;
      if (scope.labelSelector) informerOptions.labelSelector = scope.labelSelector;
      if (scope.fieldSelector) informerOptions.fieldSelector = scope.fieldSelector;
      if (options.transform) informerOptions.transform = options.transform;
      informer = new Informer<T>(informerOptions);
      this.informers.set(id, informer as unknown as Informer<KubernetesObject>);
      this.scopes.set(id, { scope, requestedBy });
      if (this.started) informer.start();
    }
    for (const [name, fn] of Object.entries(options.indexers ?? {})) {
      informer.addIndexer(name, fn);
    }
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

function sameScope(a: InformerScope, b: InformerScope): boolean {
  return (
    a.namespace === b.namespace &&
    a.labelSelector === b.labelSelector &&
    a.fieldSelector === b.fieldSelector &&
    a.transform === b.transform
  );
}
