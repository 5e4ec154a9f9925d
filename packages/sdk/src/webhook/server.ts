import { type FSWatcher, watch } from "node:fs";
import { readFile } from "node:fs/promises";
import type { IncomingMessage, ServerResponse } from "node:http";
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { createSecureContext } from "node:tls";
import { createLogger, type RuntimeLogger } from "../runtime/logging.js";
import type { Runnable } from "../runtime/runnable.js";
import type { AdmissionHandler, AdmissionRequest, AdmissionResponse } from "./types.js";

/** Where cert-manager's Secret is mounted by default (controller-runtime's default). */
export const DEFAULT_WEBHOOK_CERT_DIR = "/tmp/k8s-webhook-server/serving-certs";

/** Options of {@link WebhookServer}. */
export interface WebhookServerOptions {
  /** Port (default 9443, as CAPI providers). `0` picks a free port (tests). */
  port?: number;
  /** Address to bind (default all interfaces). */
  host?: string;
  /** Folder holding the serving certificate and key (default {@link DEFAULT_WEBHOOK_CERT_DIR}). */
  certDir?: string;
  /** Certificate file name in `certDir` (default `tls.crt`, as cert-manager writes it). */
  certName?: string;
  /** Key file name in `certDir` (default `tls.key`). */
  keyName?: string;
  /**
   * How long a handler may take before the server answers an admission error itself (default 9 s: the
   * API server's own call timeout is 10 s, and a late answer is no answer).
   */
  handlerTimeoutMs?: number;
  /** Logger (default: a JSON logger at info). */
  logger?: RuntimeLogger;
}

// An AdmissionReview is a few MiB at most (the API server's request limit is 3 MiB).
const MAX_BODY_BYTES = 8 * 1024 * 1024;

class BadRequest extends Error {}

/**
 * An HTTPS server for admission webhooks, run by the manager (`Manager.add`) as a {@link Runnable} (on every
 * replica, before caches sync). It reads `tls.crt`/`tls.key` from the cert folder as cert-manager mounts
 * them, and reloads them when cert-manager rotates the Secret. A missing or unreadable file fails
 * `start()` (and so the manager) with the file's path. Each handler answers within `handlerTimeoutMs`:
 * a throw or a hang becomes an admission error (HTTP 200, `allowed: false`, code 500), never a hung
 * request.
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
  private readonly handlers = new Map<string, AdmissionHandler>();
  private readonly options: WebhookServerOptions;
  private readonly logger: RuntimeLogger;
  private server: Server | undefined;
  private watcher: FSWatcher | undefined;
  private reloadTimer: NodeJS.Timeout | undefined;

  /** Creates the server; nothing is read or bound until {@link WebhookServer.start}. */
  constructor(options: WebhookServerOptions = {}) {
    this.options = options;
    this.logger = (options.logger ?? createLogger()).child({ component: "webhook-server" });
  }

  /**
   * Serves `handler` at `path`, or every entry of a path → handler map. Returns the server for chaining.
   *
   * @example
   * ```ts
   * server.register("/validate-foo", (request) => ({ allowed: true }));
   * ```
   */
  register(
    path: string | Readonly<Record<string, AdmissionHandler>>,
    handler?: AdmissionHandler,
  ): this {
    const entries: [string, AdmissionHandler][] =
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
    const credentials = await this.readCredentials();
    const server = createServer({ ...credentials, minVersion: "TLSv1.2" }, (request, response) => {
      void this.serve(request, response);
    });
    this.server = server;
    const port = this.options.port ?? 9443;
    const host = this.options.host ?? "0.0.0.0";
    await new Promise<void>((resolve, reject) => {
      server.once("error", (error) =>
        reject(new Error(`cannot listen on ${host}:${port}: ${error.message}`)),
      );
      server.listen(port, host, () => resolve());
    });
    this.watchCertificates();
    this.logger.info({ address: this.address(), paths: this.paths() }, "webhook server listening");
  }

  /** Stops listening and closes open connections. */
  async stop(): Promise<void> {
    this.watcher?.close();
    if (this.reloadTimer) clearTimeout(this.reloadTimer);
    const server = this.server;
    if (!server) return;
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  }

  private certDir(): string {
    return this.options.certDir ?? DEFAULT_WEBHOOK_CERT_DIR;
  }

  private async readCredentials(): Promise<{ cert: Buffer; key: Buffer }> {
    const certFile = join(this.certDir(), this.options.certName ?? "tls.crt");
    const keyFile = join(this.certDir(), this.options.keyName ?? "tls.key");
    const read = async (file: string, what: string): Promise<Buffer> => {
      try {
        return await readFile(file);
      } catch (error) {
        const reason = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
        throw new Error(
          `cannot read the webhook TLS ${what} ${file} (${reason}): mount the cert-manager Secret there, or point --webhook-cert-dir at the folder holding tls.crt and tls.key`,
        );
      }
    };
    const cert = await read(certFile, "certificate");
    const key = await read(keyFile, "key");
    try {
      createSecureContext({ cert, key });
    } catch (error) {
      throw new Error(
        `the webhook TLS certificate ${certFile} and key ${keyFile} are not a usable PEM pair: ${(error as Error).message}`,
      );
    }
    return { cert, key };
  }

  private watchCertificates(): void {
    try {
      // cert-manager's Secret volume swaps a symlink on rotation: watch the folder, reload debounced.
      this.watcher = watch(this.certDir(), () => {
        if (this.reloadTimer) clearTimeout(this.reloadTimer);
        this.reloadTimer = setTimeout(() => void this.reload(), 200);
      });
      this.watcher.on("error", () => this.watcher?.close());
    } catch {
      this.logger.warn(
        { certDir: this.certDir() },
        "cannot watch the cert folder; rotation needs a restart",
      );
    }
  }

  private async reload(): Promise<void> {
    try {
      this.server?.setSecureContext(await this.readCredentials());
      this.logger.info("webhook certificate reloaded");
    } catch (error) {
      this.logger.warn(
        { err: error },
        "webhook certificate reload failed; serving the previous one",
      );
    }
  }

  private async serve(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const path = (request.url ?? "/").split("?")[0] ?? "/";
    const handler = this.handlers.get(path);
    if (!handler) {
      response.writeHead(404, { "content-type": "text/plain" }).end(`no webhook at ${path}\n`);
      return;
    }
    if (request.method !== "POST") {
      response.writeHead(405, { allow: "POST" }).end("webhooks take POST\n");
      return;
    }
    let review: { apiVersion?: string; request?: AdmissionRequest };
    try {
      review = JSON.parse(await readBody(request)) as typeof review;
      if (!review.request?.uid)
        throw new BadRequest("the body is not an AdmissionReview with a request.uid");
    } catch (error) {
      const message =
        error instanceof BadRequest
          ? error.message
          : `unreadable body: ${(error as Error).message}`;
      response.writeHead(400, { "content-type": "text/plain" }).end(`${message}\n`);
      return;
    }
    const admission = review.request;
    const answer = await this.decide(path, handler, admission);
    const body = JSON.stringify({
      apiVersion: review.apiVersion ?? "admission.k8s.io/v1",
      kind: "AdmissionReview",
      response: answer,
    });
    response.writeHead(200, { "content-type": "application/json" }).end(body);
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
      const message = error instanceof Error ? error.message : String(error);
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

function readBody(request: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    request.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        reject(new BadRequest(`the body exceeds ${MAX_BODY_BYTES} bytes`));
        request.destroy();
        return;
      }
      chunks.push(chunk);
    });
    request.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    request.on("error", reject);
  });
}
