/**
 * The types a {@link KubeClient} is called with and answers: its options, the options of each verb,
 * list pages, watch events, raw requests and write listeners.
 *
 * @module
 */
import type { KubernetesObject } from "@kubernetes/client-node";
import type { ObjectKey, ResourceDescriptor } from "./resource.js";

/** HTTP methods the client sends. */
export type HttpVerb = "GET" | "POST" | "PUT" | "PATCH" | "DELETE";

/** One RFC 6902 JSON Patch operation. */
export interface JsonPatchOperation {
  /** The operation. */
  op: "add" | "remove" | "replace" | "move" | "copy" | "test";
  /** JSON Pointer of the target, e.g. `/metadata/labels/app`. */
  path: string;
  /** Value for add/replace/test. */
  value?: unknown;
  /** Source pointer for move/copy. */
  from?: string;
}

/** A list response: the items plus the collection's resourceVersion and continue token. */
export interface ObjectList<T> {
  /** The objects (with `apiVersion` and `kind` filled in, which list items lack on the wire). */
  items: T[];
  /**
   * `resourceVersion` to watch from after this list, `continue` for the next page (when `limit` was
   * set), and the server's estimate of what remains.
   */
  metadata: { resourceVersion?: string; continue?: string; remainingItemCount?: number };
}

/** Options of {@link KubeClient.list}. */
export interface ListOptions {
  /** Namespace to list in; omit for all namespaces (or for cluster-scoped kinds). */
  namespace?: string;
  /** Label selector, e.g. `cluster.x-k8s.io/cluster-name=c1`. */
  labelSelector?: string;
  /** Field selector, e.g. `metadata.name=x`. */
  fieldSelector?: string;
  /** Page size. */
  limit?: number;
  /** Continue token from a previous page. */
  continue?: string;
  /** resourceVersion semantics of the list (e.g. `"0"` for any cached version). */
  resourceVersion?: string;
}

/** Options common to writes. */
export interface WriteOptions {
  /** Validate and default on the server without persisting. */
  dryRun?: boolean;
  /** Field manager; defaults to the client's. */
  fieldManager?: string;
}

/** Options of server-side apply. `force` is required so taking ownership is always a decision. */
export interface ApplyOptions extends WriteOptions {
  /** Take over fields owned by other managers (`true`) or fail with a conflict (`false`). */
  force: boolean;
}

/** Options of {@link KubeClient.delete}. */
export interface DeleteOptions {
  /** `Foreground`, `Background` or `Orphan`. */
  propagationPolicy?: "Foreground" | "Background" | "Orphan";
  /** Grace period override. */
  gracePeriodSeconds?: number;
  /** Only delete if the object still has this UID / resourceVersion. */
  preconditions?: { uid?: string; resourceVersion?: string };
  /** Validate without deleting. */
  dryRun?: boolean;
}

/** Options of {@link KubeClient.watch}. */
export interface WatchOptions {
  /** Namespace to watch; omit for all namespaces. */
  namespace?: string;
  /** Server-side label selector, e.g. `cluster.x-k8s.io/cluster-name=c1,!paused`. */
  labelSelector?: string;
  /** Server-side field selector, e.g. `metadata.name=pool-a`; only fields the kind supports. */
  fieldSelector?: string;
  /** Start after this resourceVersion (from a list or a previous event). */
  resourceVersion?: string;
  /** Ask for BOOKMARK events (default true). */
  allowWatchBookmarks?: boolean;
  /** Server-side timeout after which the server ends the watch cleanly. */
  timeoutSeconds?: number;
  /**
   * WatchList: the server first sends the current state as ADDED events, then a BOOKMARK annotated
   * `k8s.io/initial-events-end: "true"`, then live changes (one request instead of LIST pages + a
   * watch). Needs `resourceVersionMatch: "NotOlderThan"` and bookmarks.
   */
  sendInitialEvents?: boolean;
  /** `NotOlderThan` with {@link WatchOptions.sendInitialEvents}. */
  resourceVersionMatch?: "NotOlderThan";
  /** Aborts the watch. */
  signal?: AbortSignal;
}

/** One event of a watch stream. ERROR events are raised as typed errors instead. */
export interface WatchEvent<T> {
  /** What happened. BOOKMARK objects carry only `metadata.resourceVersion`. */
  type: "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK";
  /** The object after the change (or its last state, for DELETED). */
  object: T;
}

/** The operation a write listener observes. */
export type WriteKind = "write" | "delete";

/**
 * Called after every successful write through a client, with the object the server returned (its
 * `resourceVersion` is the write's). The manager uses this for read-your-own-writes in its cache.
 */
export type WriteListener = (
  resource: ResourceDescriptor,
  kind: WriteKind,
  key: ObjectKey,
  result: KubernetesObject | undefined,
) => void;

/** Options of {@link KubeClient}. */
export interface KubeClientOptions {
  /** Field manager for writes and server-side apply (controller name). Default `capi-ts`. */
  fieldManager?: string;
  /** `User-Agent` header. */
  userAgent?: string;
  /**
   * Deadline of a non-watch request, in ms: from sending it to the last byte of its body, whatever
   * pace the server keeps (a server dripping one byte a second is cut at the deadline). A watch gets
   * it for its response headers only. Each retry after a 429 gets a deadline of its own. Default
   * 30,000 (a `ClusterCache` gives its workload clients its `connectTimeoutMs`, 10,000, as CAPI's
   * ClusterCache does).
   */
  requestTimeoutMs?: number;
  /**
   * Largest response body of a non-watch request, in bytes: a larger `Content-Length` is refused
   * before the body is read, and a body without one is cut once it passes the cap, with a
   * {@link ResponseTooLargeError}. Default 64 MiB (a page of 500 objects is rarely over a few MiB).
   */
  maxResponseBytes?: number;
  /**
   * Largest watch event (one line of the stream), in bytes: a longer line ends the watch with a
   * {@link ResponseTooLargeError} (the informer relists). Default 16 MiB (etcd keeps objects under
   * 1.5 MiB).
   */
  maxWatchEventBytes?: number;
  /**
   * How many times a request answered 429 with a `Retry-After` is retried after waiting, as client-go
   * does. Default 3; 0 disables it so callers see {@link TooManyRequestsError} at once.
   */
  maxThrottleRetries?: number;
  /** Longest single Retry-After wait honoured by the client, in ms. Default 10,000. */
  maxRetryAfterMs?: number;
  /**
   * Most connections to the server for requests other than watches, shared by every client of the
   * same server and TLS identity (requests beyond it wait for a free connection). Each open watch
   * holds one connection more of its own, as HTTP/1.1 cannot multiplex a stream. Default
   * {@link DEFAULT_MAX_CONNECTIONS_PER_SERVER}; a `ClusterCache` gives its workload clients 1.
   */
  maxConnectionsPerServer?: number;
}

/** Default of {@link KubeClientOptions.maxConnectionsPerServer}. */
export const DEFAULT_MAX_CONNECTIONS_PER_SERVER = 4;

/** A raw request for {@link KubeClient.request}. */
export interface RawRequest {
  /** The HTTP method; `PATCH` also needs `contentType` to say which patch it is. */
  method: HttpVerb;
  /** Path below the server URL, e.g. `/api/v1/namespaces/default/configmaps`. */
  path: string;
  /** Query parameters; `undefined` values are left out. */
  query?: Record<string, string | number | boolean | undefined>;
  /** Body, sent as JSON. */
  body?: unknown;
  /** Content type of the body. */
  contentType?: string;
  /** Aborts the request. */
  signal?: AbortSignal;
}
