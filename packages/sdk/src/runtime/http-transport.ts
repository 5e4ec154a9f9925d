/**
 * The client's transport: credentials, pooled connections, deadlines, size limits, throttling retries
 * and typed errors, under the typed verbs of {@link KubeClient} (as client-go's rest client sits under
 * controller-runtime's client).
 *
 * @module
 */
import type { Dispatcher } from "undici";
import type { RawRequest } from "./client-types.js";
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
import { sendThrough } from "./undici.js";

/** The content types of the bodies the client sends. */
export const CONTENT_TYPE = {
  json: "application/json",
  merge: "application/merge-patch+json",
  jsonPatch: "application/json-patch+json",
  apply: "application/apply-patch+yaml",
} as const;

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

/** Says what a body is (its size and content type) without quoting it. */
export function describeBody(bytes: number, contentType: string): string {
  const type = /^[\w.+-]+\/[\w.+-]+/.exec(contentType)?.[0];
  return `body of ${bytes} bytes that is not a Kubernetes Status${type ? ` (${type})` : ""}`;
}

/** The first value of a response header, or "" when it is absent. */
export function headerValue(
  headers: Record<string, string | string[] | undefined>,
  name: string,
): string {
  const value = headers[name];
  return (Array.isArray(value) ? value[0] : value) ?? "";
}

/** Largest error body read (a Status is a few KiB; anything longer is cut and not parsed). */
export const MAX_ERROR_BODY_BYTES = 64 * 1024;

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

/** What an {@link ApiTransport} needs besides the kubeconfig (the client's options, defaults applied). */
export interface TransportSettings {
  readonly userAgent: string;
  readonly requestTimeoutMs: number;
  readonly maxResponseBytes: number;
  readonly maxThrottleRetries: number;
  readonly maxRetryAfterMs: number;
  readonly maxConnectionsPerServer: number;
}

/**
 * One client's way to its API server: the credentials of the kubeconfig's current context resolved
 * (again when they expire or after a 401), connections leased from the shared pools, every request
 * bounded in time and size, 429s retried after their Retry-After, and failures turned into typed
 * errors that describe a body without quoting it.
 */
export class ApiTransport {
  readonly #kubeConfig: KubeconfigSource;
  readonly #settings: TransportSettings;
  #closed = false;
  #transport: Transport | undefined;
  #transportPending: Promise<Transport> | undefined;

  constructor(kubeConfig: KubeconfigSource, settings: TransportSettings) {
    this.#kubeConfig = kubeConfig;
    this.#settings = settings;
  }

  /** Lets go of the leased connections; requests after it fail. Idempotent. */
  close(): void {
    this.#closed = true;
    this.#transport?.requests.release();
    this.#transport?.watches.release();
    this.#transport = undefined;
  }

  /**
   * The server URL, headers and dispatchers of the current context. Static credentials are resolved
   * once; credentials that can change (a token file, an exec plugin, a client-node auth provider) are
   * resolved again when they expire or when `refresh` is set (after a 401).
   */
  async #resolveTransport(refresh: boolean): Promise<Transport> {
    if (this.#closed) throw new Error("KubeClient: the client was closed");
    const current = this.#transport;
    const context = this.#kubeConfig.getCurrentContext();
    if (
      !refresh &&
      current !== undefined &&
      current.context === context &&
      performance.now() < current.credentials.expiresAt
    ) {
      return current;
    }
    // One resolution at a time: a burst of requests after expiry waits for the same one.
    this.#transportPending ??= this.#buildTransport(context, refresh).finally(() => {
      this.#transportPending = undefined;
    });
    return this.#transportPending;
  }

  async #buildTransport(context: string, refresh: boolean): Promise<Transport> {
    const credentials = await resolveCredentials(this.#kubeConfig, refresh);
    const headers: Record<string, string> = {
      ...credentials.headers,
      accept: "application/json",
      "user-agent": this.#settings.userAgent,
    };
    const previous = this.#transport;
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
          this.#settings.maxConnectionsPerServer,
        );
    const watches = sameTls
      ? previous.watches
      : leasePool(
          origin,
          credentials.tls,
          credentials.proxyUrl,
          "watches",
          this.#settings.maxConnectionsPerServer,
        );
    if (previous !== undefined && !sameTls) {
      previous.requests.release();
      previous.watches.release();
    }
    if (this.#closed) {
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
    this.#transport = transport;
    return transport;
  }

  transportError(
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
      ? `no complete response within ${this.#settings.requestTimeoutMs} ms`
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
  async exchange(
    spec: RawRequest,
  ): Promise<{ statusCode: number; contentType: string; text: string }> {
    const info = { method: spec.method, path: spec.path };
    let refreshedAuth = false;
    for (let attempt = 0; ; attempt++) {
      const deadline = new AbortController();
      let deadlinePassed = false;
      const timer = setTimeout(() => {
        deadlinePassed = true;
        deadline.abort(
          new Error(`no complete response within ${this.#settings.requestTimeoutMs} ms`),
        );
      }, this.#settings.requestTimeoutMs);
      const forward = () => deadline.abort(spec.signal?.reason);
      if (spec.signal?.aborted) forward();
      else spec.signal?.addEventListener("abort", forward, { once: true });
      try {
        const response = await this.#dispatch(spec, deadline.signal, false, () => deadlinePassed);
        const contentType = headerValue(response.headers, "content-type");
        if (response.statusCode >= 200 && response.statusCode < 300) {
          const text = await this.#readBody(
            response,
            this.#settings.maxResponseBytes,
            info,
            () => deadlinePassed,
            spec.signal,
          );
          return { statusCode: response.statusCode, contentType, text };
        }
        const text = await this.#readBody(
          response,
          MAX_ERROR_BODY_BYTES,
          info,
          () => deadlinePassed,
          spec.signal,
        ).catch((error: unknown) => {
          if (spec.signal?.aborted || deadlinePassed) throw error;
          return "";
        });
        const next = await this.#failure(
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
  async openWatch(spec: RawRequest): Promise<Dispatcher.ResponseData> {
    const info = { method: spec.method, path: spec.path };
    let refreshedAuth = false;
    for (let attempt = 0; ; attempt++) {
      const response = await this.#dispatch(spec, spec.signal, true, () => false);
      if (response.statusCode >= 200 && response.statusCode < 300) return response;
      const contentType = headerValue(response.headers, "content-type");
      const text = await this.#readBody(
        response,
        MAX_ERROR_BODY_BYTES,
        info,
        () => false,
        spec.signal,
      ).catch(() => "");
      const next = await this.#failure(
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
  async #failure(
    response: Dispatcher.ResponseData,
    text: string,
    contentType: string,
    info: { method: string; path: string },
    attempt: number,
    refreshedAuth: boolean,
    streaming: boolean,
    signal: AbortSignal | undefined,
  ): Promise<"refresh" | "retry"> {
    if (response.statusCode === 401 && !refreshedAuth && this.#transport?.credentials.refreshable) {
      // A credential of an exec plugin or auth provider expired within its cache window.
      await this.#resolveTransport(true);
      return "refresh";
    }
    const status = statusFromBody(response.statusCode, text, contentType);
    const retryAfter = retryAfterSeconds(response.headers, status);
    const error = errorFromStatus(response.statusCode, status, info, retryAfter);
    if (
      error instanceof TooManyRequestsError &&
      retryAfter !== undefined &&
      attempt < this.#settings.maxThrottleRetries &&
      !streaming
    ) {
      await sleep(Math.min(retryAfter * 1000, this.#settings.maxRetryAfterMs), signal);
      return "retry";
    }
    throw error;
  }

  /**
   * The body as text, at most `limit` bytes: a larger `Content-Length` is refused unread, a body
   * that grows past the limit is cut (the connection is dropped, nothing more is buffered).
   */
  async #readBody(
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
  async #dispatch(
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
    const transport = await this.#resolveTransport(false);
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
        headersTimeout: this.#settings.requestTimeoutMs,
        // A watch may stay quiet for minutes; the informer's watchdog judges it, not the socket.
        bodyTimeout: streaming ? 0 : this.#settings.requestTimeoutMs,
      });
    } catch (cause) {
      if (spec.signal?.aborted && !deadlinePassed()) throw cause;
      throw this.transportError(cause, { method: spec.method, path: spec.path }, deadlinePassed());
    }
  }
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
