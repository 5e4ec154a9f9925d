/**
 * The manager's own HTTP servers: `/healthz` and `/readyz` on the health probe address, `/metrics` on
 * the diagnostics address (authenticated and authorized through the API server unless insecure).
 *
 * @module
 */
import type { Server } from "node:http";
import type { Server as HttpsServer } from "node:https";
import type { AddressInfo } from "node:net";
import type { KubeClient } from "./client.js";
import { createDiagnosticsServer, httpModule, resolveDiagnosticsLimits } from "./diagnostics.js";
import { type HealthCheck, healthProbeHandler } from "./health-checks.js";
import type { RuntimeLogger } from "./logging.js";
import { type ManagerOptions, parseBindAddress } from "./manager-options.js";
import type { RuntimeMetrics } from "./metrics.js";
import { applyServingLimits, guardRequests, servingOptions } from "./serving.js";

/** What the servers answer with: the manager's options, client, logger, metrics and checks. */
export interface ManagerServerParts {
  readonly options: ManagerOptions;
  readonly client: KubeClient;
  readonly logger: RuntimeLogger;
  readonly metrics: RuntimeMetrics;
  /** The manager's `/healthz` checks, read on each probe (checks added later count). */
  readonly healthChecks: Map<string, HealthCheck>;
  /** The manager's `/readyz` checks, read on each probe. */
  readonly readyChecks: Map<string, HealthCheck>;
}

/** The health probe and diagnostics servers of one manager, and the addresses they listen on. */
export class ManagerServers {
  readonly #parts: ManagerServerParts;
  /** Every server that was asked to listen, so that close() closes one that failed halfway. */
  readonly #servers: (Server | HttpsServer)[] = [];
  #healthAddress: AddressInfo | undefined;
  #diagnosticsAddress: AddressInfo | undefined;

  /** @param parts - what the servers answer with */
  constructor(parts: ManagerServerParts) {
    this.#parts = parts;
  }

  /** Address of the health probe server once started. */
  get healthAddress(): AddressInfo | undefined {
    return this.#healthAddress;
  }

  /** Address of the diagnostics (metrics) server once started. */
  get diagnosticsAddress(): AddressInfo | undefined {
    return this.#diagnosticsAddress;
  }

  /** Starts the health probe server and the diagnostics server, each when its address is not 0. */
  async start(): Promise<void> {
    const { options, logger } = this.#parts;
    const health = parseBindAddress(
      options.healthProbeBindAddress ?? "0",
      "health probe bind address",
    );
    if (health) {
      const limits = resolveDiagnosticsLimits(options.diagnosticsLimits);
      const server = httpModule().createServer(
        servingOptions(limits),
        guardRequests(
          "health-probes",
          logger,
          healthProbeHandler(this.#parts.healthChecks, this.#parts.readyChecks),
        ),
      );
      applyServingLimits(server, limits);
      this.#healthAddress = await this.#listen(server, health);
    }
    const diagnostics = parseBindAddress(options.diagnosticsAddress ?? "0", "diagnostics address");
    if (diagnostics) {
      const serving = {
        insecure: options.insecureDiagnostics ?? false,
        ...(options.diagnosticsCertDir ? { certDir: options.diagnosticsCertDir } : {}),
      };
      const server = await createDiagnosticsServer(
        serving,
        this.#parts.client,
        logger,
        (request, response) => {
          const path = (request.url ?? "/").split("?")[0];
          if (path !== "/metrics") {
            response.writeHead(404).end("not found\n");
            return;
          }
          // A failure is answered 500 by the server's guard, without the error's text.
          return this.#parts.metrics.text().then((text) => {
            response.writeHead(200, { "content-type": this.#parts.metrics.contentType }).end(text);
          });
        },
        options.diagnosticsLimits,
      );
      this.#diagnosticsAddress = await this.#listen(server, diagnostics);
      logger.info(
        { address: this.#diagnosticsAddress, secure: !serving.insecure },
        "diagnostics endpoint listening",
      );
    }
  }

  #listen(
    server: Server | HttpsServer,
    address: { host: string; port: number },
  ): Promise<AddressInfo> {
    this.#servers.push(server);
    return new Promise((resolve, reject) => {
      server.once("error", (error) =>
        reject(new Error(`cannot listen on ${address.host}:${address.port}: ${error.message}`)),
      );
      server.listen(address.port, address.host, () => resolve(server.address() as AddressInfo));
    });
  }

  /** Closes every server, open connections included. */
  async close(): Promise<void> {
    await Promise.all(
      this.#servers.map(
        (server) =>
          new Promise<void>((resolve) => {
            server.close(() => resolve());
            server.closeAllConnections();
          }),
      ),
    );
  }
}
