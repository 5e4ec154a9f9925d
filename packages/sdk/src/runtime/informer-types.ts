/**
 * What an {@link Informer} is built with and hands out: its options, handlers, index functions, and
 * the resourceVersion order.
 *
 * @module
 */
import type { KubernetesObject } from "@kubernetes/client-node";
import type { KubeClient } from "./client.js";
import type { Clock } from "./clock.js";
import type { RuntimeLogger } from "./logging.js";
import type { ResourceDescriptor } from "./resource.js";

/** Extra facts passed to informer handlers. */
export interface InformerEventMeta {
  /**
   * True for events of the initial list and of periodic resyncs: nothing changed, the object is just
   * being (re)announced. Controllers enqueue these at low priority.
   */
  initial: boolean;
}

/** Callbacks of an informer. Exceptions thrown by a handler are logged and never stop the informer. */
export interface InformerHandler<T> {
  /** An object appeared (or was listed). */
  onAdd?(obj: T, meta: InformerEventMeta): void;
  /** An object changed; `oldObj` is the cached state before the change. */
  onUpdate?(oldObj: T, newObj: T, meta: InformerEventMeta): void;
  /**
   * An object went away. `finalStateUnknown` is true when the deletion was inferred from a relist
   * (the watch missed it), in which case `obj` is the last state the cache saw.
   */
  onDelete?(obj: T, meta: { finalStateUnknown: boolean }): void;
}

/** Computes the values an object is indexed under (e.g. its owner UIDs). */
export type IndexFunc<T> = (obj: T) => readonly string[];

/** Index of objects by the UIDs of their owners; every informer keeps it. */
export const OWNER_UID_INDEX = "ownerUID";

/** Index function: owner UIDs. */
export const indexByOwnerUID: IndexFunc<KubernetesObject> = (obj) =>
  (obj.metadata?.ownerReferences ?? []).map((ref) => ref.uid);

/** Default transform: drops `metadata.managedFields`, which can be half of an object's size. */
export function dropManagedFields<T extends KubernetesObject>(obj: T): T {
  if (obj.metadata?.managedFields === undefined) return obj;
  const { managedFields: _dropped, ...metadata } = obj.metadata;
  return { ...obj, metadata };
}

/** Backoff settings of informer restarts. */
export interface BackoffOptions {
  /** First delay, ms. Default 800 (as kube-rs). */
  initialMs?: number;
  /** Cap, ms. Default 30,000. */
  maxMs?: number;
  /** Random spread as a fraction of the delay. Default 0.2. */
  jitter?: number;
}

/** Hooks for informer metrics. */
export interface InformerMetrics {
  /** A list was sent. */
  listed(resource: string): void;
  /** The watch restarted; `reason` is `gone`, `error`, `stale` or `closed`. */
  restarted(resource: string, reason: string): void;
}

/** Options of {@link Informer}. */
export interface InformerOptions<T extends KubernetesObject> {
  /** Client used to list and watch. */
  client: KubeClient;
  /** The kind to watch. */
  resource: ResourceDescriptor<T>;
  /** Watch one namespace only (namespaced kinds). */
  namespace?: string;
  /** Server-side label selector. */
  labelSelector?: string;
  /** Server-side field selector. */
  fieldSelector?: string;
  /** Applied to every object before it is cached; by default one that drops `metadata.managedFields`. */
  transform?: (obj: T) => T;
  /** Re-announce every cached object this often (ms) as low-priority updates; 0 (default) = never. */
  resyncPeriodMs?: number;
  /**
   * How the cache is filled at start and after a 410: `"watchList"` (default) opens one watch with
   * `sendInitialEvents=true` and `resourceVersionMatch=NotOlderThan` that streams the current state,
   * then live changes, as client-go does; `"list"` sends paged LISTs, then a watch. A server that
   * rejects WatchList or ignores it (no `k8s.io/initial-events-end` bookmark) gets LISTs from then on.
   */
  initialSync?: "watchList" | "list";
  /** List page size (with `initialSync: "list"` or the fallback). Default 500. */
  pageSize?: number;
  /** Server-side watch timeout, in s; default random in [300, 600) as client-go, to spread reconnects. */
  watchTimeoutSeconds?: number;
  /** Restart a watch that delivered nothing (not even a bookmark) for this long, ms. Default: timeout + 60 s. */
  staleWatchTimeoutMs?: number;
  /** Restart backoff. */
  backoff?: BackoffOptions;
  /** Logger. */
  logger?: RuntimeLogger;
  /** Metrics hooks. */
  metrics?: InformerMetrics;
  /**
   * Time source of resync, backoff, the watchdog and the wait timeouts. Default: Node timers (the
   * backoff timer keeps the process alive, the others do not).
   */
  clock?: Clock;
}

/** The annotation of the BOOKMARK that ends the initial events of a WatchList. */

/** Compares two resourceVersions if both are integers (as etcd's); `undefined` if they cannot be ordered. */
export function compareResourceVersions(a: string, b: string): number | undefined {
  if (!/^\d+$/.test(a) || !/^\d+$/.test(b)) return undefined;
  if (a.length !== b.length) return a.length < b.length ? -1 : 1;
  return a < b ? -1 : a > b ? 1 : 0;
}
