import type { KubernetesObject } from "@kubernetes/client-node";
import type { Dispatcher } from "undici";
import { leasePool, type PoolLease } from "./connections.js";
import {
  type KubeconfigSource,
  type ResolvedCredentials,
  resolveCredentials,
} from "./credentials.js";
import {
  ApiError,
  type ApiStatus,
  ConnectionError,
  errorFromStatus,
  ResponseTooLargeError,
  TimeoutError,
  TooManyRequestsError,
} from "./errors.js";
import { pathSegmentNameProblem } from "./object-name.js";
import {
  apiVersionOf,
  hasStatusSubresource,
  isNamespaced,
  keyOfObject,
  type ObjectKey,
  type ResourceDescriptor,
} from "./resource.js";
import { sendThrough } from "./undici.js";
import { watchLines } from "./watch-lines.js";

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

const CONTENT_TYPE = {
  json: "application/json",
  merge: "application/merge-patch+json",
  jsonPatch: "application/json-patch+json",
  apply: "application/apply-patch+yaml",
} as const;

/**
 * The REST path of a resource collection or object. Pure: no request is made.
 *
 * @example
 * ```ts
 * resourcePath(SecretResource, { namespace: "default", name: "x" }); // "/api/v1/namespaces/default/secrets/x"
 * resourcePath(MachinePoolResource, { namespace: "ns" }, "status");   // ".../machinepools/…/status" needs a name
 * ```
 */
export function resourcePath(
  resource: ResourceDescriptor,
  target: { namespace?: string | undefined; name?: string | undefined },
  subresource?: string,
): string {
  const base =
    resource.group === ""
      ? `/api/${resource.version}`
      : `/apis/${resource.group}/${resource.version}`;
  const namespace = target.namespace;
  if (!isNamespaced(resource) && namespace) {
    throw new TypeError(
      `${resource.kind} is cluster-scoped: do not pass a namespace (got "${namespace}")`,
    );
  }
  if (isNamespaced(resource) && target.name !== undefined && !namespace) {
    throw new TypeError(
      `${resource.kind} is namespaced: pass the namespace of "${target.name}" (metadata.namespace or { namespace })`,
    );
  }
  if (target.name !== undefined && target.name === "") {
    throw new TypeError(`${resource.kind}: the object name is empty; set metadata.name`);
  }
  // As client-go: a name that is not one path segment would address another path (`..`: a list).
  const nameProblem = target.name === undefined ? undefined : pathSegmentNameProblem(target.name);
  if (nameProblem) {
    throw new TypeError(
      `${resource.kind}: ${nameProblem}; an object name must be a single path segment (no request was sent)`,
    );
  }
  const namespaceProblem = namespace ? pathSegmentNameProblem(namespace) : undefined;
  if (namespaceProblem) {
    throw new TypeError(
      `${resource.kind}: namespace: ${namespaceProblem}; a namespace must be a single path segment (no request was sent)`,
    );
  }
  if (subresource !== undefined && target.name === undefined) {
    throw new TypeError(`${resource.kind}: the ${subresource} subresource needs an object name`);
  }
  let path = base;
  if (isNamespaced(resource) && namespace) path += `/namespaces/${encodeURIComponent(namespace)}`;
  path += `/${resource.plural}`;
  if (target.name !== undefined) path += `/${encodeURIComponent(target.name)}`;
  if (subresource !== undefined) path += `/${subresource}`;
  return path;
}

/**
 * The Status of a failed response: the body itself when it is a Kubernetes Status, else one made from
 * the HTTP code that describes the body (size, content type) without quoting it.
 */
export function statusFromBody(code: number, text: string, contentType: string): ApiStatus {
  try {
    const parsed = JSON.parse(text) as unknown;
    if (parsed && typeof parsed === "object" && (parsed as { kind?: unknown }).kind === "Status") {
      return parsed as ApiStatus;
    }
  } catch {
    // Not JSON: an HTML error page from a proxy, a plain-text message…
  }
  // Described, never quoted: the body is the other side's content (a proxy page, a metadata answer).
  const message =
    text === "" ? `HTTP ${code}` : `HTTP ${code} with a ${describeBody(text.length, contentType)}`;
  return { kind: "Status", status: "Failure", code, message };
}

function describeBody(bytes: number, contentType: string): string {
  const type = /^[\w.+-]+\/[\w.+-]+/.exec(contentType)?.[0];
  return `body of ${bytes} bytes that is not a Kubernetes Status${type ? ` (${type})` : ""}`;
}

function headerValue(headers: Record<string, string | string[] | undefined>, name: string): string {
  const value = headers[name];
  return (Array.isArray(value) ? value[0] : value) ?? "";
}

/** Largest error body read (a Status is a few KiB; anything longer is cut and not parsed). */
const MAX_ERROR_BODY_BYTES = 64 * 1024;
const MiB = 1024 * 1024;

/**
 * How long a throttled request should wait, in seconds: the `Retry-After` header when it is a number
 * of seconds ≥ 0, else the Status's `details.retryAfterSeconds` (an HTTP date or garbage counts as
 * absent, as client-go reads it).
 */
export function retryAfterSeconds(
  headers: Record<string, string | string[] | undefined>,
  status: ApiStatus,
): number | undefined {
  const value = headers["retry-after"];
  const header = Array.isArray(value) ? value[0] : value;
  if (header !== undefined) {
    const seconds = Number(header);
    if (Number.isFinite(seconds) && seconds >= 0) return seconds;
  }
  return status.details?.retryAfterSeconds;
}

/**
 * One line of a watch stream as an event. An ERROR event becomes the typed error of its Status
 * ({@link GoneError} for an expired resourceVersion, so the informer relists); a line that is not
 * JSON, or names no known event type, is an {@link ApiError} that describes it without quoting it.
 */
export function parseWatchLine<T>(
  line: string,
  request: { method: string; path: string },
): WatchEvent<T> {
  let event: { type?: string; object?: unknown };
  try {
    event = JSON.parse(line) as { type?: string; object?: unknown };
  } catch (cause) {
    throw new ApiError(
      0,
      { message: `malformed watch event: a line of ${line.length} characters that is not JSON` },
      request,
      { cause },
    );
  }
  if (event.type === "ERROR") {
    const status = (event.object ?? {}) as ApiStatus;
    throw errorFromStatus(status.code ?? 500, status, request);
  }
  if (
    event.type !== "ADDED" &&
    event.type !== "MODIFIED" &&
    event.type !== "DELETED" &&
    event.type !== "BOOKMARK"
  ) {
    throw new ApiError(0, { message: "unknown watch event type" }, request);
  }
  return { type: event.type, object: event.object as T };
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/**
 * A typed Kubernetes client for any kind, addressed by a {@link ResourceDescriptor} (no discovery).
 *
 * Built from the SDK's `Kubeconfig` (`loadKubeconfig`) or `@kubernetes/client-node`'s
 * `KubeConfig` (read through its own methods; client-node is never imported), with requests sent
 * through undici's request API directly (see `undici.ts`).
 *
 * Connections are shared by every client of the same server and TLS identity, at most
 * {@link KubeClientOptions.maxConnectionsPerServer} for requests plus one per open watch; call
 * {@link KubeClient.close} when a client is done. The authentication headers are computed once for a
 * static token, client certificate or basic auth; a token file is read again every minute, an exec
 * plugin's credential is kept until its `expirationTimestamp`, and both are resolved again at once
 * after a 401.
 *
 * Errors are typed ({@link NotFoundError}, {@link ConflictError}, …) and carry the parsed `Status`.
 *
 * @example
 * ```ts
 * const client = new KubeClient(kubeConfig, { fieldManager: "my-provider" });
 * const secret = await client.get(SecretResource, { namespace: "default", name: "x" });
 * await client.mergePatch(SecretResource, secret, { metadata: { labels: { a: "b" } } });
 * await client.apply(SecretResource, { apiVersion: "v1", kind: "Secret", metadata: { name: "y", namespace: "default" } }, { force: true });
 * ```
 */
export class KubeClient {
  /** The kubeconfig this client talks through. */
  readonly kubeConfig: KubeconfigSource;
  /** Default field manager of writes. */
  readonly fieldManager: string;
  private readonly userAgent: string;
  private readonly requestTimeoutMs: number;
  private readonly maxResponseBytes: number;
  private readonly maxWatchEventBytes: number;
  private readonly maxThrottleRetries: number;
  private readonly maxRetryAfterMs: number;
  private readonly maxConnectionsPerServer: number;
  private closed = false;
  private readonly listeners = new Set<WriteListener>();
  private transport: Transport | undefined;
  private transportPending: Promise<Transport> | undefined;

  /** Creates a client; throws if the kubeconfig has no current cluster. */
  constructor(kubeConfig: KubeconfigSource, options: KubeClientOptions = {}) {
    if (!kubeConfig.getCurrentCluster()) {
      throw new Error(
        "KubeClient: the kubeconfig has no current cluster; load one (loadKubeconfig) and set current-context",
      );
    }
    this.kubeConfig = kubeConfig;
    this.fieldManager = options.fieldManager ?? "capi-ts";
    this.userAgent = options.userAgent ?? `capi-ts/${this.fieldManager}`;
    this.requestTimeoutMs = positiveOption("requestTimeoutMs", options.requestTimeoutMs, 30_000);
    this.maxResponseBytes = positiveOption("maxResponseBytes", options.maxResponseBytes, 64 * MiB);
    this.maxWatchEventBytes = positiveOption(
      "maxWatchEventBytes",
      options.maxWatchEventBytes,
      16 * MiB,
    );
    this.maxThrottleRetries = options.maxThrottleRetries ?? 3;
    this.maxRetryAfterMs = options.maxRetryAfterMs ?? 10_000;
    this.maxConnectionsPerServer = positiveOption(
      "maxConnectionsPerServer",
      options.maxConnectionsPerServer,
      DEFAULT_MAX_CONNECTIONS_PER_SERVER,
    );
    if (!Number.isInteger(this.maxConnectionsPerServer)) {
      throw new RangeError(
        `KubeClient: maxConnectionsPerServer must be a whole number, got ${this.maxConnectionsPerServer}`,
      );
    }
  }

  /**
   * Lets go of this client's connections (the shared pool closes with its last client); requests
   * after it fail. Idempotent.
   */
  close(): void {
    this.closed = true;
    this.transport?.requests.release();
    this.transport?.watches.release();
    this.transport = undefined;
  }

  /** Registers a listener called after every successful write; returns a function removing it. */
  onWrite(listener: WriteListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Reads one object. Throws {@link NotFoundError} if it does not exist. */
  async get<T extends KubernetesObject>(
    resource: ResourceDescriptor<T>,
    key: ObjectKey,
    options: { signal?: AbortSignal } = {},
  ): Promise<T> {
    const spec: RawRequest = { method: "GET", path: resourcePath(resource, key) };
    if (options.signal) spec.signal = options.signal;
    return (await this.request(spec)) as T;
  }

  /** Lists one page of objects. Use {@link KubeClient.listAll} to follow continue tokens. */
  async list<T extends KubernetesObject>(
    resource: ResourceDescriptor<T>,
    options: ListOptions = {},
  ): Promise<ObjectList<T>> {
    const { namespace, ...query } = options;
    const result = (await this.request({
      method: "GET",
      path: resourcePath(resource, { namespace }),
      query: { ...query },
    })) as ObjectList<T>;
    const apiVersion = apiVersionOf(resource);
    for (const item of result.items ?? []) {
      item.apiVersion ??= apiVersion;
      item.kind ??= resource.kind;
    }
    result.items ??= [];
    result.metadata ??= {};
    return result;
  }

  /** Lists every page; the resourceVersion returned is the first page's (a consistent snapshot). */
  async listAll<T extends KubernetesObject>(
    resource: ResourceDescriptor<T>,
    options: Omit<ListOptions, "continue"> = {},
  ): Promise<ObjectList<T>> {
    const first = await this.list(resource, options);
    const items = first.items;
    let next = first.metadata.continue;
    while (next) {
      const page = await this.list(resource, { ...options, continue: next });
      items.push(...page.items);
      next = page.metadata.continue;
    }
    const metadata: ObjectList<T>["metadata"] = {};
    if (first.metadata.resourceVersion !== undefined)
      metadata.resourceVersion = first.metadata.resourceVersion;
    return { items, metadata };
  }

  /** Creates an object. Throws {@link AlreadyExistsError} if the name is taken. */
  async create<T extends KubernetesObject>(
    resource: ResourceDescriptor<T>,
    obj: T,
    options: WriteOptions = {},
  ): Promise<T> {
    const namespace = obj.metadata?.namespace;
    const result = (await this.request({
      method: "POST",
      path: resourcePath(resource, { namespace }),
      query: this.writeQuery(options),
      body: this.withTypeMeta(resource, obj),
      contentType: CONTENT_TYPE.json,
    })) as T;
    return this.notify(resource, "write", result, options);
  }

  /**
   * Replaces an object (PUT). With `metadata.resourceVersion` set the write is conditional and throws
   * {@link ConflictError} if the object changed meanwhile.
   */
  async update<T extends KubernetesObject>(
    resource: ResourceDescriptor<T>,
    obj: T,
    options: WriteOptions = {},
  ): Promise<T> {
    return this.put(resource, obj, undefined, options);
  }

  /** Replaces the status of an object through its `/status` subresource. */
  async updateStatus<T extends KubernetesObject>(
    resource: ResourceDescriptor<T>,
    obj: T,
    options: WriteOptions = {},
  ): Promise<T> {
    return this.put(resource, obj, this.statusSubresource(resource), options);
  }

  /**
   * JSON merge patch (RFC 7386) of an object. Put `metadata.resourceVersion` in the patch for an
   * optimistic lock.
   */
  async mergePatch<T extends KubernetesObject>(
    resource: ResourceDescriptor<T>,
    key: ObjectKey | KubernetesObject,
    patch: unknown,
    options: WriteOptions = {},
  ): Promise<T> {
    return this.patch(resource, key, CONTENT_TYPE.merge, patch, undefined, options);
  }

  /** JSON merge patch of the `/status` subresource. */
  async mergePatchStatus<T extends KubernetesObject>(
    resource: ResourceDescriptor<T>,
    key: ObjectKey | KubernetesObject,
    patch: unknown,
    options: WriteOptions = {},
  ): Promise<T> {
    const subresource = this.statusSubresource(resource);
    return this.patch(resource, key, CONTENT_TYPE.merge, patch, subresource, options);
  }

  /** RFC 6902 JSON Patch of an object (use a `test` op on `/metadata/resourceVersion` to lock). */
  async jsonPatch<T extends KubernetesObject>(
    resource: ResourceDescriptor<T>,
    key: ObjectKey | KubernetesObject,
    operations: JsonPatchOperation[],
    options: WriteOptions = {},
  ): Promise<T> {
    return this.patch(resource, key, CONTENT_TYPE.jsonPatch, operations, undefined, options);
  }

  /** RFC 6902 JSON Patch of the `/status` subresource. */
  async jsonPatchStatus<T extends KubernetesObject>(
    resource: ResourceDescriptor<T>,
    key: ObjectKey | KubernetesObject,
    operations: JsonPatchOperation[],
    options: WriteOptions = {},
  ): Promise<T> {
    const subresource = this.statusSubresource(resource);
    return this.patch(resource, key, CONTENT_TYPE.jsonPatch, operations, subresource, options);
  }

  /**
   * Server-side apply: `obj` is the full intent of this field manager. `force` must be stated.
   * Creates the object if it does not exist.
   */
  async apply<T extends KubernetesObject>(
    resource: ResourceDescriptor<T>,
    obj: T,
    options: ApplyOptions,
  ): Promise<T> {
    return this.applyTo(resource, obj, undefined, options);
  }

  /** Server-side apply of the `/status` subresource. */
  async applyStatus<T extends KubernetesObject>(
    resource: ResourceDescriptor<T>,
    obj: T,
    options: ApplyOptions,
  ): Promise<T> {
    return this.applyTo(resource, obj, this.statusSubresource(resource), options);
  }

  /**
   * Deletes an object. Resolves to the object as the server returned it (still present with a
   * `deletionTimestamp` while finalizers run) or `undefined` when the server answered with a Status.
   */
  async delete<T extends KubernetesObject>(
    resource: ResourceDescriptor<T>,
    key: ObjectKey | KubernetesObject,
    options: DeleteOptions = {},
  ): Promise<T | undefined> {
    const target = this.targetOf(key);
    const body: Record<string, unknown> = { apiVersion: "v1", kind: "DeleteOptions" };
    if (options.propagationPolicy) body.propagationPolicy = options.propagationPolicy;
    if (options.gracePeriodSeconds !== undefined)
      body.gracePeriodSeconds = options.gracePeriodSeconds;
    if (options.preconditions) body.preconditions = options.preconditions;
    if (options.dryRun) body.dryRun = ["All"];
    const result = (await this.request({
      method: "DELETE",
      path: resourcePath(resource, target),
      body,
      contentType: CONTENT_TYPE.json,
    })) as KubernetesObject;
    const deleted = result?.kind === "Status" ? undefined : (result as T);
    if (!options.dryRun) {
      for (const listener of this.listeners) listener(resource, "delete", target, deleted);
    }
    return deleted;
  }

  /**
   * Streams watch events (newline-delimited JSON). Ends when the server closes the watch; ERROR events
   * are thrown as typed errors ({@link GoneError} for an expired resourceVersion), a malformed line as
   * a {@link ApiError}: the caller decides to restart, never silently.
   *
   * @example
   * ```ts
   * for await (const event of client.watch(SecretResource, { namespace: "default", resourceVersion: "42" })) {
   *   console.log(event.type, event.object.metadata?.name);
   * }
   * ```
   */
  async *watch<T extends KubernetesObject>(
    resource: ResourceDescriptor<T>,
    options: WatchOptions = {},
  ): AsyncGenerator<WatchEvent<T>, void, undefined> {
    const path = resourcePath(resource, { namespace: options.namespace });
    const query: RawRequest["query"] = {
      watch: "true",
      allowWatchBookmarks: options.allowWatchBookmarks ?? true,
      resourceVersion: options.resourceVersion,
      labelSelector: options.labelSelector,
      fieldSelector: options.fieldSelector,
      timeoutSeconds: options.timeoutSeconds,
      sendInitialEvents: options.sendInitialEvents,
      resourceVersionMatch: options.resourceVersionMatch,
    };
    const request = { method: "GET", path };
    const response = await this.openWatch({ method: "GET", path, query, signal: options.signal });
    const body = response.body;
    const max = this.maxWatchEventBytes;
    const tooLong = () =>
      new ResponseTooLargeError(
        response.statusCode,
        {
          reason: "ResponseTooLarge",
          message: `a watch event is longer than ${max} bytes (maxWatchEventBytes); the watch was ended`,
        },
        request,
      );
    try {
      for await (const line of watchLines(body as AsyncIterable<Buffer>, max, tooLong)) {
        yield parseWatchLine<T>(line, request);
      }
    } catch (cause) {
      if (options.signal?.aborted || cause instanceof ApiError) throw cause;
      throw this.transportError(cause, { method: "GET", path }, false);
    } finally {
      body.destroy();
    }
  }

  /**
   * Sends a raw request and returns the parsed JSON body, with the client's authentication, retries
   * and typed errors. For endpoints the typed methods do not cover. Bounded by `requestTimeoutMs` and
   * `maxResponseBytes` as every non-watch request.
   */
  async request(spec: RawRequest): Promise<unknown> {
    const { statusCode, contentType, text } = await this.exchange(spec);
    if (text === "") return undefined;
    try {
      return JSON.parse(text) as unknown;
    } catch (cause) {
      throw new ApiError(
        statusCode,
        { message: `response is not JSON: a ${describeBody(text.length, contentType)}` },
        { method: spec.method, path: spec.path },
        { cause },
      );
    }
  }

  private async put<T extends KubernetesObject>(
    resource: ResourceDescriptor<T>,
    obj: T,
    subresource: string | undefined,
    options: WriteOptions,
  ): Promise<T> {
    const key = keyOfObject(obj);
    const result = (await this.request({
      method: "PUT",
      path: resourcePath(resource, key, subresource),
      query: this.writeQuery(options),
      body: this.withTypeMeta(resource, obj),
      contentType: CONTENT_TYPE.json,
    })) as T;
    return this.notify(resource, "write", result, options);
  }

  private async patch<T extends KubernetesObject>(
    resource: ResourceDescriptor<T>,
    key: ObjectKey | KubernetesObject,
    contentType: string,
    body: unknown,
    subresource: string | undefined,
    options: WriteOptions,
  ): Promise<T> {
    const result = (await this.request({
      method: "PATCH",
      path: resourcePath(resource, this.targetOf(key), subresource),
      query: this.writeQuery(options),
      body,
      contentType,
    })) as T;
    return this.notify(resource, "write", result, options);
  }

  private async applyTo<T extends KubernetesObject>(
    resource: ResourceDescriptor<T>,
    obj: T,
    subresource: string | undefined,
    options: ApplyOptions,
  ): Promise<T> {
    if (typeof options?.force !== "boolean") {
      throw new TypeError(
        "apply: pass { force: true } to take over conflicting fields or { force: false } to fail on conflicts",
      );
    }
    const result = (await this.request({
      method: "PATCH",
      path: resourcePath(resource, keyOfObject(obj), subresource),
      query: { ...this.writeQuery(options), force: options.force },
      body: this.withTypeMeta(resource, obj),
      contentType: CONTENT_TYPE.apply,
    })) as T;
    return this.notify(resource, "write", result, options);
  }

  private statusSubresource(resource: ResourceDescriptor): string {
    if (hasStatusSubresource(resource) === false) {
      throw new TypeError(
        `${resource.kind} has no status subresource: write status with update/mergePatch instead`,
      );
    }
    return "status";
  }

  private targetOf(key: ObjectKey | KubernetesObject): ObjectKey {
    return "metadata" in key || "kind" in key || "apiVersion" in key
      ? keyOfObject(key as KubernetesObject)
      : (key as ObjectKey);
  }

  private withTypeMeta<T extends KubernetesObject>(resource: ResourceDescriptor, obj: T): T {
    return {
      ...obj,
      apiVersion: obj.apiVersion ?? apiVersionOf(resource),
      kind: obj.kind ?? resource.kind,
    };
  }

  private writeQuery(options: WriteOptions): RawRequest["query"] {
    return {
      fieldManager: options.fieldManager ?? this.fieldManager,
      dryRun: options.dryRun ? "All" : undefined,
    };
  }

  private notify<T extends KubernetesObject>(
    resource: ResourceDescriptor,
    kind: WriteKind,
    result: T,
    options: WriteOptions,
  ): T {
    if (!options.dryRun && result?.metadata?.name) {
      const key = keyOfObject(result);
      for (const listener of this.listeners) listener(resource, kind, key, result);
    }
    return result;
  }

  /**
   * The server URL, headers and dispatchers of the current context. Static credentials are resolved
   * once; credentials that can change (a token file, an exec plugin, a client-node auth provider) are
   * resolved again when they expire or when `refresh` is set (after a 401).
   */
  private async resolveTransport(refresh: boolean): Promise<Transport> {
    if (this.closed) throw new Error("KubeClient: the client was closed");
    const current = this.transport;
    const context = this.kubeConfig.getCurrentContext();
    if (
      !refresh &&
      current !== undefined &&
      current.context === context &&
      performance.now() < current.credentials.expiresAt
    ) {
      return current;
    }
    // One resolution at a time: a burst of requests after expiry waits for the same one.
    this.transportPending ??= this.buildTransport(context, refresh).finally(() => {
      this.transportPending = undefined;
    });
    return this.transportPending;
  }

  private async buildTransport(context: string, refresh: boolean): Promise<Transport> {
    const credentials = await resolveCredentials(this.kubeConfig, refresh);
    const headers: Record<string, string> = {
      ...credentials.headers,
      accept: "application/json",
      "user-agent": this.userAgent,
    };
    const previous = this.transport;
    // A credential refresh that keeps the TLS identity keeps the pools (and their connections).
    const sameTls = previous !== undefined && sameConnection(previous.credentials, credentials);
    const origin = new URL(credentials.server).origin;
    const requests = sameTls
      ? previous.requests
      : leasePool(
          origin,
          credentials.tls,
          credentials.proxyUrl,
          "requests",
          this.maxConnectionsPerServer,
        );
    const watches = sameTls
      ? previous.watches
      : leasePool(
          origin,
          credentials.tls,
          credentials.proxyUrl,
          "watches",
          this.maxConnectionsPerServer,
        );
    if (previous !== undefined && !sameTls) {
      previous.requests.release();
      previous.watches.release();
    }
    if (this.closed) {
      requests.release();
      watches.release();
      throw new Error("KubeClient: the client was closed");
    }
    const transport: Transport = {
      context,
      server: credentials.server,
      headers,
      credentials,
      requests,
      watches,
    };
    this.transport = transport;
    return transport;
  }

  private transportError(
    cause: unknown,
    info: { method: string; path: string },
    deadlinePassed: boolean,
  ): ApiError {
    const code = (cause as { code?: string })?.code;
    const timedOut =
      deadlinePassed ||
      code === "UND_ERR_HEADERS_TIMEOUT" ||
      code === "UND_ERR_BODY_TIMEOUT" ||
      (cause as Error)?.name === "TimeoutError";
    const nested = (cause as { cause?: Error })?.cause;
    const message = timedOut
      ? `no complete response within ${this.requestTimeoutMs} ms`
      : `no response: ${(cause as Error)?.message ?? String(cause)}${nested ? ` (${nested.message})` : ""}`;
    const ErrorClass = timedOut ? TimeoutError : ConnectionError;
    return new ErrorClass(0, { reason: timedOut ? "Timeout" : "ConnectionError", message }, info, {
      cause,
    });
  }

  /**
   * A non-watch request: one attempt after another (a 401 with refreshable credentials, a 429 with
   * Retry-After), each under its own `requestTimeoutMs` deadline that covers its whole body.
   */
  private async exchange(
    spec: RawRequest,
  ): Promise<{ statusCode: number; contentType: string; text: string }> {
    const info = { method: spec.method, path: spec.path };
    let refreshedAuth = false;
    for (let attempt = 0; ; attempt++) {
      const deadline = new AbortController();
      let deadlinePassed = false;
      const timer = setTimeout(() => {
        deadlinePassed = true;
        deadline.abort(new Error(`no complete response within ${this.requestTimeoutMs} ms`));
      }, this.requestTimeoutMs);
      const forward = () => deadline.abort(spec.signal?.reason);
      if (spec.signal?.aborted) forward();
      else spec.signal?.addEventListener("abort", forward, { once: true });
      try {
        const response = await this.dispatch(spec, deadline.signal, false, () => deadlinePassed);
        const contentType = headerValue(response.headers, "content-type");
        if (response.statusCode >= 200 && response.statusCode < 300) {
          const text = await this.readBody(
            response,
            this.maxResponseBytes,
            info,
            () => deadlinePassed,
            spec.signal,
          );
          return { statusCode: response.statusCode, contentType, text };
        }
        const text = await this.readBody(
          response,
          MAX_ERROR_BODY_BYTES,
          info,
          () => deadlinePassed,
          spec.signal,
        ).catch((error: unknown) => {
          if (spec.signal?.aborted || deadlinePassed) throw error;
          return "";
        });
        const next = await this.failure(
          response,
          text,
          contentType,
          info,
          attempt,
          refreshedAuth,
          false,
          spec.signal,
        );
        if (next === "refresh") refreshedAuth = true;
      } finally {
        clearTimeout(timer);
        spec.signal?.removeEventListener("abort", forward);
      }
    }
  }

  /** A watch: its response headers within `requestTimeoutMs`; the stream itself is unbounded in time. */
  private async openWatch(spec: RawRequest): Promise<Dispatcher.ResponseData> {
    const info = { method: spec.method, path: spec.path };
    let refreshedAuth = false;
    for (let attempt = 0; ; attempt++) {
      const response = await this.dispatch(spec, spec.signal, true, () => false);
      if (response.statusCode >= 200 && response.statusCode < 300) return response;
      const contentType = headerValue(response.headers, "content-type");
      const text = await this.readBody(
        response,
        MAX_ERROR_BODY_BYTES,
        info,
        () => false,
        spec.signal,
      ).catch(() => "");
      const next = await this.failure(
        response,
        text,
        contentType,
        info,
        attempt,
        refreshedAuth,
        true,
        spec.signal,
      );
      if (next === "refresh") refreshedAuth = true;
    }
  }

  /**
   * What to do after a non-2xx answer: `refresh` (credentials were refreshed, send again), `retry`
   * (throttled, waited), or throws the typed error.
   */
  private async failure(
    response: Dispatcher.ResponseData,
    text: string,
    contentType: string,
    info: { method: string; path: string },
    attempt: number,
    refreshedAuth: boolean,
    streaming: boolean,
    signal: AbortSignal | undefined,
  ): Promise<"refresh" | "retry"> {
    if (response.statusCode === 401 && !refreshedAuth && this.transport?.credentials.refreshable) {
      // A credential of an exec plugin or auth provider expired within its cache window.
      await this.resolveTransport(true);
      return "refresh";
    }
    const status = statusFromBody(response.statusCode, text, contentType);
    const retryAfter = retryAfterSeconds(response.headers, status);
    const error = errorFromStatus(response.statusCode, status, info, retryAfter);
    if (
      error instanceof TooManyRequestsError &&
      retryAfter !== undefined &&
      attempt < this.maxThrottleRetries &&
      !streaming
    ) {
      await sleep(Math.min(retryAfter * 1000, this.maxRetryAfterMs), signal);
      return "retry";
    }
    throw error;
  }

  /**
   * The body as text, at most `limit` bytes: a larger `Content-Length` is refused unread, a body
   * that grows past the limit is cut (the connection is dropped, nothing more is buffered).
   */
  private async readBody(
    response: Dispatcher.ResponseData,
    limit: number,
    info: { method: string; path: string },
    deadlinePassed: () => boolean,
    signal: AbortSignal | undefined,
  ): Promise<string> {
    const body = response.body;
    const tooLarge = () => {
      body.destroy();
      return new ResponseTooLargeError(
        response.statusCode,
        {
          reason: "ResponseTooLarge",
          message: `the response is larger than ${limit} bytes (maxResponseBytes); it was not read`,
        },
        info,
      );
    };
    const declared = Number(headerValue(response.headers, "content-length"));
    if (Number.isFinite(declared) && declared > limit) throw tooLarge();
    const chunks: Buffer[] = [];
    let size = 0;
    try {
      for await (const chunk of body as AsyncIterable<Buffer>) {
        size += chunk.length;
        if (size > limit) throw tooLarge();
        chunks.push(chunk);
      }
    } catch (cause) {
      if (cause instanceof ApiError) throw cause;
      if (signal?.aborted && !deadlinePassed()) throw cause;
      throw this.transportError(cause, info, deadlinePassed());
    }
    return Buffer.concat(chunks, size).toString("utf8");
  }

  /** One HTTP exchange up to the response headers, with the current credentials. */
  private async dispatch(
    spec: RawRequest,
    signal: AbortSignal | undefined,
    streaming: boolean,
    deadlinePassed: () => boolean,
  ): Promise<Dispatcher.ResponseData> {
    let search = "";
    for (const [name, value] of Object.entries(spec.query ?? {})) {
      if (value === undefined || value === "") continue;
      search += `${search === "" ? "?" : "&"}${encodeURIComponent(name)}=${encodeURIComponent(String(value))}`;
    }
    const body = spec.body === undefined ? undefined : JSON.stringify(spec.body);
    const transport = await this.resolveTransport(false);
    // The body is always JSON-encoded, so it says so unless the caller names a JSON flavour.
    const contentType =
      spec.contentType ?? (spec.body !== undefined ? CONTENT_TYPE.json : undefined);
    const headers = contentType
      ? { ...transport.headers, "content-type": contentType }
      : transport.headers;
    try {
      const dispatcher = (streaming ? transport.watches : transport.requests).dispatcher;
      return await sendThrough(dispatcher, transport.server + spec.path + search, {
        method: spec.method,
        headers,
        body,
        signal,
        headersTimeout: this.requestTimeoutMs,
        // A watch may stay quiet for minutes; the informer's watchdog judges it, not the socket.
        bodyTimeout: streaming ? 0 : this.requestTimeoutMs,
      });
    } catch (cause) {
      if (spec.signal?.aborted && !deadlinePassed()) throw cause;
      throw this.transportError(cause, { method: spec.method, path: spec.path }, deadlinePassed());
    }
  }
}

function positiveOption(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isFinite(value) || value <= 0) {
    throw new RangeError(`KubeClient: ${name} must be a positive number, got ${value}`);
  }
  return value;
}

interface Transport {
  /** The kubeconfig context these settings belong to. */
  context: string;
  server: string;
  headers: Record<string, string>;
  credentials: ResolvedCredentials;
  requests: PoolLease;
  watches: PoolLease;
}

function sameConnection(a: ResolvedCredentials, b: ResolvedCredentials): boolean {
  return (
    a.server === b.server &&
    a.proxyUrl === b.proxyUrl &&
    a.tls.rejectUnauthorized === b.tls.rejectUnauthorized &&
    a.tls.servername === b.tls.servername &&
    sameBytes(a.tls.ca, b.tls.ca) &&
    sameBytes(a.tls.cert, b.tls.cert) &&
    sameBytes(a.tls.key, b.tls.key)
  );
}

function sameBytes(a: string | Buffer | undefined, b: string | Buffer | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  return Buffer.from(a).equals(Buffer.from(b));
}
