import type { Server as HttpServer, IncomingMessage, ServerResponse } from "node:http";
import type { Server as HttpsServer } from "node:https";
import type { Socket } from "node:net";
import type { RuntimeLogger } from "./logging.js";

/**
 * The connection bounds of an HTTP server the manager runs (the webhook and diagnostics servers), as
 * controller-runtime's servers set them on Go's `http.Server`.
 */
export interface ServingLimits {
  /**
   * How long a client may take from connecting to the end of its request headers (TLS handshake
   * included), ms. controller-runtime's `ReadHeaderTimeout` is 32 s.
   */
  headerReadTimeoutMs: number;
  /** How long a client may take to send its whole request, headers and body, ms. */
  requestTimeoutMs: number;
  /** How long a kept-alive connection may sit idle between requests, ms. */
  idleTimeoutMs: number;
  /** Open connections at most; the server closes any connection past it at once. */
  maxConnections: number;
}

/** The defaults of {@link ServingLimits}. */
export const DEFAULT_SERVING_LIMITS: Readonly<ServingLimits> = Object.freeze({
  headerReadTimeoutMs: 32_000,
  requestTimeoutMs: 60_000,
  idleTimeoutMs: 5_000,
  maxConnections: 512,
});

/**
 * Checks that each given limit is a whole number ≥ 1 and that the header timeout does not exceed the
 * request timeout; throws a `RangeError` naming the option (prefixed by `owner`) otherwise.
 */
export function checkLimits<T extends object>(
  owner: string,
  limits: Partial<Record<keyof T, unknown>>,
): void {
  for (const [name, value] of Object.entries(limits)) {
    if (value === undefined) continue;
    if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 1) {
      throw new RangeError(
        `${owner}: ${name} must be a whole number ≥ 1, got ${JSON.stringify(value)}`,
      );
    }
  }
}

/** `limits` over {@link DEFAULT_SERVING_LIMITS}, checked (see {@link checkLimits}). */
export function resolveServingLimits(
  owner: string,
  limits: Partial<ServingLimits> = {},
): ServingLimits {
  checkLimits<ServingLimits>(owner, limits);
  const resolved = { ...DEFAULT_SERVING_LIMITS, ...definedOnly(limits) };
  if (resolved.headerReadTimeoutMs > resolved.requestTimeoutMs) {
    throw new RangeError(
      `${owner}: headerReadTimeoutMs (${resolved.headerReadTimeoutMs}) must not exceed requestTimeoutMs (${resolved.requestTimeoutMs}): the headers are part of the request`,
    );
  }
  return resolved;
}

/**
 * The `node:http`/`node:https` `createServer` options that enforce `limits`. Node checks the header and
 * request timeouts every `connectionsCheckingInterval` (30 s by default, which would let a slow client
 * keep its connection for up to twice the bound), so the check runs at an eighth of the header timeout,
 * at most once a second.
 */
export function servingOptions(limits: ServingLimits): {
  headersTimeout: number;
  requestTimeout: number;
  keepAliveTimeout: number;
  connectionsCheckingInterval: number;
  handshakeTimeout: number;
} {
  return {
    headersTimeout: limits.headerReadTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: limits.idleTimeoutMs,
    connectionsCheckingInterval: Math.max(50, Math.min(1000, limits.headerReadTimeoutMs / 8)),
    handshakeTimeout: limits.headerReadTimeoutMs,
  };
}

/**
 * Sets the limits that are properties of a server rather than `createServer` options, and the header
 * deadline Node does not keep: its `headersTimeout` starts when the HTTP parser is attached, which on
 * a TLS server is after the handshake, so a client that delays its ClientHello and then trickles its
 * headers kept the connection for up to the handshake timeout plus the header timeout. Here the first
 * request's headers must be complete `headerReadTimeoutMs` after the TCP connection was accepted
 * (Node's own check covers the later requests of a kept-alive connection).
 */
export function applyServingLimits(server: HttpServer | HttpsServer, limits: ServingLimits): void {
  server.maxConnections = limits.maxConnections;
  enforceHeaderDeadline(server, limits.headerReadTimeoutMs);
}

const HEADER_TIMEOUT_ANSWER = "HTTP/1.1 408 Request Timeout\r\nConnection: close\r\n\r\n";

// How long a cut connection may take to flush its 408 before it is destroyed.
const FLUSH_MS = 1000;

function enforceHeaderDeadline(server: HttpServer | HttpsServer, timeoutMs: number): void {
  // A TLS socket and the TCP socket under it share the peer's address and port, which identify the
  // connection while it is open: no need to reach into the TLS socket's private parent.
  const pending = new Map<string, { timer: NodeJS.Timeout; http: Socket | undefined }>();
  const keyOf = (socket: Socket) => `${socket.remoteAddress}|${socket.remotePort}`;
  const tls = typeof (server as HttpsServer).setSecureContext === "function";
  server.on("connection", (socket: Socket) => {
    const key = keyOf(socket);
    const entry = {
      http: tls ? undefined : socket,
      timer: setTimeout(() => {
        pending.delete(key);
        const http = entry.http;
        // Before the handshake there is no one to answer in HTTP; after it, answer as Node does.
        if (http?.writable) {
          http.end(HEADER_TIMEOUT_ANSWER);
          setTimeout(() => socket.destroy(), FLUSH_MS).unref();
        } else socket.destroy();
      }, timeoutMs),
    };
    entry.timer.unref();
    pending.set(key, entry);
    socket.once("close", () => {
      clearTimeout(entry.timer);
      if (pending.get(key) === entry) pending.delete(key);
    });
  });
  if (tls) {
    server.on("secureConnection", (socket: Socket) => {
      const entry = pending.get(keyOf(socket));
      if (entry) entry.http = socket;
    });
  }
  server.on("request", (request: IncomingMessage) => {
    const key = keyOf(request.socket);
    const entry = pending.get(key);
    if (!entry) return;
    clearTimeout(entry.timer);
    pending.delete(key);
  });
}

/** A copy of `value` without its `undefined` fields, so a spread does not erase a default. */
export function definedOnly<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(
    Object.entries(value).filter(([, field]) => field !== undefined),
  ) as Partial<T>;
}

/** A request handler of a server the manager runs; a returned promise is awaited by the guard. */
export type RequestHandler = (
  request: IncomingMessage,
  response: ServerResponse,
) => void | Promise<void>;

/**
 * `handler`, made unable to stop the process: a throw or a rejected promise of it is logged (the
 * error's name and stack frames, never its message, which may quote the request) and answered 500 (or
 * the connection closed when an answer was already under way), and the server goes on serving.
 * Without it, a rejection would be unhandled, and Node ends the process on one — as Go's net/http
 * recovers a handler's panic per request.
 */
export function guardRequests(
  server: string,
  logger: RuntimeLogger,
  handler: RequestHandler,
): (request: IncomingMessage, response: ServerResponse) => void {
  const fail = (request: IncomingMessage, response: ServerResponse, error: unknown): void => {
    try {
      logger.error(
        {
          server,
          method: request.method?.slice(0, 16),
          path: (request.url ?? "/").split("?")[0]?.slice(0, 256),
          error: error instanceof Error ? error.name : typeof error,
          stack:
            error instanceof Error ? error.stack?.split("\n").slice(1, 12).join("\n") : undefined,
        },
        "request handler failed; answered 500",
      );
      if (response.headersSent || response.destroyed) {
        response.destroy();
        return;
      }
      response
        .writeHead(500, { "content-type": "text/plain; charset=utf-8", connection: "close" })
        .end(`${server}: the request could not be handled (the manager's log has the error)\n`);
    } catch {
      response.destroy();
    }
  };
  return (request, response) => {
    try {
      const pending = handler(request, response);
      if (pending) pending.catch((error: unknown) => fail(request, response, error));
    } catch (error) {
      fail(request, response, error);
    }
  };
}
