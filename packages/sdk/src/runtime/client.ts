import type { KubernetesObject } from "@kubernetes/client-node";
import {
  type ApplyOptions,
  DEFAULT_MAX_CONNECTIONS_PER_SERVER,
  type DeleteOptions,
  type JsonPatchOperation,
  type KubeClientOptions,
  type ListOptions,
  type ObjectList,
  type RawRequest,
  type WatchEvent,
  type WatchOptions,
  type WriteKind,
  type WriteListener,
  type WriteOptions,
} from "./client-types.js";
import type { KubeconfigSource } from "./credentials.js";
import { ApiError, ResponseTooLargeError } from "./errors.js";
import { ApiTransport, CONTENT_TYPE, describeBody } from "./http-transport.js";
import {
  apiVersionOf,
  hasStatusSubresource,
  keyOfObject,
  type ObjectKey,
  type ResourceDescriptor,
  resourcePath,
} from "./resource.js";
import { parseWatchLine, watchLines } from "./watch-lines.js";

const MiB = 1024 * 1024;

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
  private readonly maxWatchEventBytes: number;
  private readonly listeners = new Set<WriteListener>();
  private readonly transport: ApiTransport;

  /** Creates a client; throws if the kubeconfig has no current cluster. */
  constructor(kubeConfig: KubeconfigSource, options: KubeClientOptions = {}) {
    if (!kubeConfig.getCurrentCluster()) {
      throw new Error(
        "KubeClient: the kubeconfig has no current cluster; load one (loadKubeconfig) and set current-context",
      );
    }
    this.kubeConfig = kubeConfig;
    this.fieldManager = options.fieldManager ?? "capi-ts";
    const maxConnectionsPerServer = positiveOption(
      "maxConnectionsPerServer",
      options.maxConnectionsPerServer,
      DEFAULT_MAX_CONNECTIONS_PER_SERVER,
    );
    if (!Number.isInteger(maxConnectionsPerServer)) {
      throw new RangeError(
        `KubeClient: maxConnectionsPerServer must be a whole number, got ${maxConnectionsPerServer}`,
      );
    }
    this.maxWatchEventBytes = positiveOption(
      "maxWatchEventBytes",
      options.maxWatchEventBytes,
      16 * MiB,
    );
    this.transport = new ApiTransport(kubeConfig, {
      userAgent: options.userAgent ?? `capi-ts/${this.fieldManager}`,
      requestTimeoutMs: positiveOption("requestTimeoutMs", options.requestTimeoutMs, 30_000),
      maxResponseBytes: positiveOption("maxResponseBytes", options.maxResponseBytes, 64 * MiB),
      maxThrottleRetries: options.maxThrottleRetries ?? 3,
      maxRetryAfterMs: options.maxRetryAfterMs ?? 10_000,
      maxConnectionsPerServer,
    });
  }

  /**
   * Lets go of this client's connections (the shared pool closes with its last client); requests
   * after it fail. Idempotent.
   */
  close(): void {
    this.transport.close();
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
    const response = await this.transport.openWatch({
      method: "GET",
      path,
      query,
      signal: options.signal,
    });
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
      throw this.transport.transportError(cause, { method: "GET", path }, false);
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
    const { statusCode, contentType, text } = await this.transport.exchange(spec);
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
}

function positiveOption(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isFinite(value) || value <= 0) {
    throw new RangeError(`KubeClient: ${name} must be a positive number, got ${value}`);
  }
  return value;
}
