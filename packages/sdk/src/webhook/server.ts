/**
 * The webhook server: an HTTPS server that answers AdmissionReviews and ConversionReviews with the
 * handlers registered on its paths, bounded as controller-runtime's webhook server.
 *
 * @module
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Server } from "node:https";
import type { AddressInfo } from "node:net";
import { createLogger, type RuntimeLogger } from "../runtime/logging.js";
import type { Runnable } from "../runtime/runnable.js";
import {
  applyServingLimits,
  checkLimits,
  definedOnly,
  guardRequests,
  resolveServingLimits,
  servingOptions,
} from "../runtime/serving.js";
import { WebhookCertificates } from "./certificates.js";
import {
  type ConversionHandler,
  type ConversionRequest,
  type ConversionResult,
  conversionFailure,
  isConversionHandler,
} from "./conversion.js";
import { BodyTooLarge, contentLength, isJson, readBody, refuse } from "./request.js";
import { decodeAdmissionReview, decodeConversionReview } from "./review.js";
import {
  DEFAULT_WEBHOOK_SERVER_LIMITS,
  type WebhookServerLimits,
  type WebhookServerOptions,
} from "./server-options.js";
import type {
  AdmissionHandler,
  AdmissionRequest,
  AdmissionResponse,
  GroupVersionKind,
} from "./types.js";

// A body above this size is "large": it may use only LARGE_SHARE of the bytes in flight.
const LARGE_BODY_BYTES = 1024 * 1024;
const LARGE_SHARE = 0.75;

// The longest part of a handler's error message repeated in an admission error.
const MAX_ERROR_MESSAGE = 256;

class ConversionTimeout extends Error {}

/**
 * An HTTPS server for admission webhooks, run by the manager (`Manager.add`) as a {@link Runnable} (on every
 * replica, before caches sync). It reads `tls.crt`/`tls.key` from the cert folder as cert-manager mounts
 * them, and reloads them when cert-manager rotates the Secret. A missing or unreadable file fails
 * `start()` (and so the manager) with the file's path. Each handler answers within `handlerTimeoutMs`:
 * a throw or a hang becomes an admission error (HTTP 200, `allowed: false`, code 500), never a hung
 * request.
 *
 * Bounded as controller-runtime's webhook server, since anyone who reaches the port can send to it: a
 * body that is not `application/json` is answered 400, one over `maxBodyBytes` 413, one that does not
 * fit in `maxBytesInFlight` 503 (each before its body is read); slow headers are cut after
 * `headerReadTimeoutMs`, a slow request after `requestTimeoutMs`, an idle connection after
 * `idleTimeoutMs`, and connections past `maxConnections` are closed (defaults:
 * {@link DEFAULT_WEBHOOK_SERVER_LIMITS}). A review of a kind its handler does not judge is denied (see
 * `forKinds`). A conversion handler (`conversionWebhook`, at `/convert`) is served with the same bounds
 * and speaks ConversionReview: a malformed review, an unknown version or a failed conversion is answered
 * `result.status: Failure` (HTTP 200, as the API server expects), a body past `maxBodyBytes` 413.
 * No request stops the process: JSON nested deeper than 100 levels is refused before it is parsed, a
 * `request.uid` must be a string of at most 128 characters (400 otherwise), and anything a handler
 * throws past its own guards is logged and answered 500 while the server keeps serving.
 *
 * @example
 * ```ts
 * const webhooks = new WebhookServer({ certDir: flags.webhookCertDir, port: flags.webhookPort });
 * webhooks.register(infraMachinePoolWebhooks(FooMachinePool, { validate: validateFooSpec }));
 * manager.add(webhooks);
 * ```
 */
export class WebhookServer implements Runnable {
  /** The runnable's name in the Manager's logs and errors: `webhook-server`. */
  readonly name = "webhook-server";
  /** Webhook servers run on every replica (the API server may call any of them). */
  readonly needLeaderElection = false;
  private readonly handlers = new Map<string, AdmissionHandler | ConversionHandler>();
  private readonly options: WebhookServerOptions;
  private readonly limits: WebhookServerLimits;
  private readonly logger: RuntimeLogger;
  private bytesInFlight = 0;
  // Bytes in flight per client address; an entry lives while that address has a review in flight.
  private readonly bytesBySource = new Map<string, number>();
  private readonly sourceRoom: number;
  private server: Server | undefined;
  private readonly certificates: WebhookCertificates;

  /**
   * Creates the server; nothing is read or bound until {@link WebhookServer.start}. Throws a
   * `RangeError` naming a limit that is not a whole number ≥ 1.
   */
  constructor(options: WebhookServerOptions = {}) {
    this.options = options;
    const { maxBodyBytes, maxBytesInFlight, ...serving } = options;
    checkLimits<WebhookServerLimits>("WebhookServer", { maxBodyBytes, maxBytesInFlight });
    this.limits = {
      ...DEFAULT_WEBHOOK_SERVER_LIMITS,
      ...definedOnly({ maxBodyBytes, maxBytesInFlight }),
      ...resolveServingLimits("WebhookServer", {
        headerReadTimeoutMs: serving.headerReadTimeoutMs,
        requestTimeoutMs: serving.requestTimeoutMs,
        idleTimeoutMs: serving.idleTimeoutMs,
        maxConnections: serving.maxConnections,
      }),
    };
    if (this.limits.maxBodyBytes > this.limits.maxBytesInFlight * LARGE_SHARE) {
      throw new RangeError(
        `WebhookServer: maxBytesInFlight (${this.limits.maxBytesInFlight}) must hold at least one body of maxBodyBytes (${this.limits.maxBodyBytes}) in three quarters of it: raise maxBytesInFlight to ${Math.ceil(this.limits.maxBodyBytes / LARGE_SHARE)} or more`,
      );
    }
    this.sourceRoom = Math.min(
      this.limits.maxBytesInFlight,
      Math.max(
        this.limits.maxBodyBytes + LARGE_BODY_BYTES,
        Math.floor(this.limits.maxBytesInFlight / 4),
      ),
    );
    this.logger = (options.logger ?? createLogger()).child({ component: "webhook-server" });
    this.certificates = new WebhookCertificates(options, this.logger);
  }

  /**
   * Serves `handler` at `path`, or every entry of a path → handler map. Returns the server for chaining.
   * An admission handler speaks AdmissionReview; a conversion handler (`conversionWebhook`, at
   * `/convert`) speaks ConversionReview, with the same bounds.
   *
   * @example
   * ```ts
   * server.register("/validate-foo", (request) => ({ allowed: true }));
   * ```
   */
  register(path: string, handler: AdmissionHandler): this;
  /** Serves a conversion handler (`conversionWebhook`) at `path`, usually `/convert`. */
  register(path: string, handler: ConversionHandler): this;
  /** Serves every entry of a path → handler map (`infraMachinePoolWebhooks`). */
  register(handlers: Readonly<Record<string, AdmissionHandler | ConversionHandler>>): this;
  register(
    path: string | Readonly<Record<string, AdmissionHandler | ConversionHandler>>,
    handler?: AdmissionHandler | ConversionHandler,
  ): this {
    const entries: [string, AdmissionHandler | ConversionHandler][] =
      typeof path === "string" ? [[path, handler ?? missingHandler(path)]] : Object.entries(path);
    for (const [route, serve] of entries) {
      if (!route.startsWith("/"))
        throw new TypeError(`webhook path "${route}" must start with "/"`);
      if (this.handlers.has(route))
        throw new Error(`webhook path "${route}" is already registered`);
      this.handlers.set(route, serve);
    }
    return this;
  }

  /**
   * The URL paths a handler is registered on, in registration order, e.g.
   * `/validate-…-foomachinepool`.
   */
  paths(): string[] {
    return [...this.handlers.keys()];
  }

  /** The bound address once started. */
  address(): AddressInfo | undefined {
    return this.server?.address() as AddressInfo | undefined;
  }

  /** Reads the certificate and key, then listens. Rejects naming the file that is missing or bad. */
  async start(): Promise<void> {
    const credentials = await this.certificates.read();
    // node:https and node:tls are taken when the server starts, not with the webhook's modules.
    const server = process.getBuiltinModule("node:https").createServer(
      { ...credentials, minVersion: "TLSv1.2", ...servingOptions(this.limits) },
      guardRequests(this.name, this.logger, (request, response) => this.serve(request, response)),
    );
    applyServingLimits(server, this.limits);
    this.server = server;
    const port = this.options.port ?? 9443;
    const host = this.options.host ?? "0.0.0.0";
    await new Promise<void>((resolve, reject) => {
      server.once("error", (error) =>
        reject(new Error(`cannot listen on ${host}:${port}: ${error.message}`)),
      );
      server.listen(port, host, () => resolve());
    });
    this.certificates.watch(server);
    this.logger.info({ address: this.address(), paths: this.paths() }, "webhook server listening");
  }

  /** Stops listening and closes open connections. */
  async stop(): Promise<void> {
    this.certificates.stop();
    const server = this.server;
    if (!server) return;
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  }

  private async serve(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const path = (request.url ?? "/").split("?")[0] ?? "/";
    const handler = this.handlers.get(path);
    if (!handler) {
      // A path is repeated only when it could be one of ours: a URL may carry 16 KiB of anything.
      const shown = /^[A-Za-z0-9/._-]{1,256}$/.test(path) ? path : "that path";
      refuse(
        response,
        404,
        `no webhook at ${shown}: the webhook configuration must name a registered path`,
      );
      return;
    }
    if (request.method !== "POST") {
      refuse(response, 405, "webhooks take POST", { allow: "POST" });
      return;
    }
    if (!isJson(request.headers["content-type"])) {
      refuse(
        response,
        400,
        "the Content-Type must be application/json (an AdmissionReview, as the API server sends it)",
      );
      return;
    }
    const { maxBodyBytes, maxBytesInFlight } = this.limits;
    const declared = contentLength(request);
    if (declared === "invalid") {
      refuse(response, 400, "the Content-Length is not a number of bytes");
      return;
    }
    if (declared !== undefined && declared > maxBodyBytes) {
      refuse(response, 413, `the body exceeds ${maxBodyBytes} bytes (maxBodyBytes)`);
      return;
    }
    const reserved = declared ?? maxBodyBytes;
    const room = reserved > LARGE_BODY_BYTES ? maxBytesInFlight * LARGE_SHARE : maxBytesInFlight;
    if (this.bytesInFlight + reserved > room) {
      refuse(response, 503, "too many reviews in flight; retry", { "retry-after": "1" });
      return;
    }
    // Reservations go by the declared size, so one client that declares large bodies and sends them
    // slowly could hold every byte until its requests time out; one address may hold only its share.
    const source = request.socket.remoteAddress ?? "";
    const held = this.bytesBySource.get(source) ?? 0;
    if (held + reserved > this.sourceRoom) {
      refuse(response, 503, "too many reviews in flight from this address; retry", {
        "retry-after": "1",
      });
      return;
    }
    this.bytesInFlight += reserved;
    this.bytesBySource.set(source, held + reserved);
    try {
      const limit = Math.min(reserved, maxBodyBytes);
      if (isConversionHandler(handler)) await this.convert(request, response, path, handler, limit);
      else await this.answer(request, response, path, handler, limit);
    } finally {
      this.bytesInFlight -= reserved;
      const left = (this.bytesBySource.get(source) ?? reserved) - reserved;
      if (left > 0) this.bytesBySource.set(source, left);
      else this.bytesBySource.delete(source);
    }
  }

  private async answer(
    request: IncomingMessage,
    response: ServerResponse,
    path: string,
    handler: AdmissionHandler,
    limit: number,
  ): Promise<void> {
    let text: string;
    try {
      text = await readBody(request, limit);
    } catch (error) {
      if (error instanceof BodyTooLarge) refuse(response, 413, error.message);
      else refuse(response, 400, (error as Error).message);
      return;
    }
    const review = decodeAdmissionReview(text);
    if (!review.ok) {
      refuse(response, 400, review.message);
      return;
    }
    const admission = review.value.request;
    const answer =
      this.wrongKind(path, handler, admission) ?? (await this.decide(path, handler, admission));
    const body = JSON.stringify({
      apiVersion: review.value.apiVersion,
      kind: "AdmissionReview",
      response: answer,
    });
    response.writeHead(200, { "content-type": "application/json" }).end(body);
  }

  /**
   * Answers a ConversionReview. Anything wrong with the review or its objects is a `Failure` result
   * (HTTP 200, the API server shows its message), except a body past the size bound (413).
   */
  private async convert(
    request: IncomingMessage,
    response: ServerResponse,
    path: string,
    handler: ConversionHandler,
    limit: number,
  ): Promise<void> {
    let text: string;
    try {
      text = await readBody(request, limit);
    } catch (error) {
      if (error instanceof BodyTooLarge) refuse(response, 413, error.message);
      else refuse(response, 400, (error as Error).message);
      return;
    }
    const review = decodeConversionReview(text);
    const uid = review.ok ? review.value.uid : "";
    const result: ConversionResult = review.ok
      ? await this.decideConversion(path, handler, review.value)
      : conversionFailure(review.message);
    const body = JSON.stringify({
      apiVersion: "apiextensions.k8s.io/v1",
      kind: "ConversionReview",
      response: { ...result, uid },
    });
    response.writeHead(200, { "content-type": "application/json" }).end(body);
  }

  private async decideConversion(
    path: string,
    handler: ConversionHandler,
    request: ConversionRequest,
  ): Promise<ConversionResult> {
    const timeoutMs = this.options.handlerTimeoutMs ?? 9000;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new ConversionTimeout(`the conversion did not finish within ${timeoutMs} ms`)),
        timeoutMs,
      );
    });
    try {
      return await Promise.race([
        Promise.resolve().then(() => handler(request, this.logger)),
        timeout,
      ]);
    } catch (error) {
      // The handler answers its own failures; this is a hang or a bug, whose message is not echoed.
      this.logger.error({ err: error, path }, "conversion webhook failed");
      return conversionFailure(
        error instanceof ConversionTimeout
          ? error.message
          : `webhook ${path} failed (the provider's log has the error)`,
      );
    } finally {
      clearTimeout(timer);
    }
  }

  /** Denies a review of a kind the handler does not serve (a webhook configuration's rules gone wrong). */
  private wrongKind(
    path: string,
    handler: AdmissionHandler,
    request: AdmissionRequest,
  ): AdmissionResponse | undefined {
    const kinds = handler.kinds;
    if (!kinds || kinds.some((kind) => sameKind(kind, request.kind))) return undefined;
    const served = kinds.map(describeKind).join(", ");
    return {
      uid: request.uid,
      allowed: false,
      status: {
        code: 400,
        reason: "BadRequest",
        message: `webhook ${path} serves ${served}, not ${describeKind(request.kind)}: point the webhook configuration's rules for this kind at its own webhook`,
      },
    };
  }

  private async decide(
    path: string,
    handler: AdmissionHandler,
    request: AdmissionRequest,
  ): Promise<AdmissionResponse> {
    const timeoutMs = this.options.handlerTimeoutMs ?? 9000;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`the webhook did not answer within ${timeoutMs} ms`)),
        timeoutMs,
      );
    });
    try {
      const result = await Promise.race([Promise.resolve().then(() => handler(request)), timeout]);
      return { ...result, uid: request.uid };
    } catch (error) {
      // The provider's message says what went wrong; cut, since a value it quotes is the request's.
      const full = error instanceof Error ? error.message : String(error);
      const message =
        full.length > MAX_ERROR_MESSAGE ? `${full.slice(0, MAX_ERROR_MESSAGE)}…` : full;
      this.logger.error(
        {
          err: error,
          path,
          kind: request.kind?.kind,
          name: request.name,
          namespace: request.namespace,
        },
        "webhook failed",
      );
      return {
        uid: request.uid,
        allowed: false,
        status: {
          code: 500,
          reason: "InternalError",
          message: `webhook ${path} failed: ${message}`,
        },
      };
    } finally {
      clearTimeout(timer);
    }
  }
}

function missingHandler(path: string): never {
  throw new TypeError(`register("${path}", handler): the handler is missing`);
}

function sameKind(a: GroupVersionKind, b: GroupVersionKind | undefined): boolean {
  return a.group === b?.group && a.version === b.version && a.kind === b.kind;
}

// A kind as the API server spells one; anything else is not echoed back.
const KIND_PART = /^[A-Za-z0-9.-]{0,253}$/;

function describeKind(kind: GroupVersionKind | undefined): string {
  const parts = [kind?.group, kind?.version, kind?.kind];
  if (!parts.every((part) => typeof part === "string" && KIND_PART.test(part)) || !kind?.kind) {
    return "a review without a recognisable request.kind";
  }
  return `${kind.group ? `${kind.group}/` : ""}${kind.version} ${kind.kind}`;
}
