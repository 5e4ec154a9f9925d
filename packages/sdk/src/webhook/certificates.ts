/**
 * The webhook server's TLS credentials as cert-manager mounts them: read from the cert folder, checked
 * to be a usable pair, and read again when cert-manager rotates the Secret behind the folder.
 *
 * @module
 */
import { type FSWatcher, watch } from "node:fs";
import { readFile } from "node:fs/promises";
import type { Server } from "node:https";
import { join } from "node:path";
import type { RuntimeLogger } from "../runtime/logging.js";
import { DEFAULT_WEBHOOK_CERT_DIR, type WebhookServerOptions } from "./server-options.js";

/** The certificate and key of one webhook server, and the watch that reloads them. */
export class WebhookCertificates {
  readonly #options: WebhookServerOptions;
  readonly #logger: RuntimeLogger;
  #watcher: FSWatcher | undefined;
  #reloadTimer: NodeJS.Timeout | undefined;

  /**
   * @param options - the server's options (`certDir`, `certName`, `keyName`)
   * @param logger - the server's logger
   */
  constructor(options: WebhookServerOptions, logger: RuntimeLogger) {
    this.#options = options;
    this.#logger = logger;
  }

  /** The folder of `tls.crt` and `tls.key`. */
  get dir(): string {
    return this.#options.certDir ?? DEFAULT_WEBHOOK_CERT_DIR;
  }

  /** Reads the certificate and key; rejects naming the file that is missing or bad. */
  async read(): Promise<{ cert: Buffer; key: Buffer }> {
    const certFile = join(this.dir, this.#options.certName ?? "tls.crt");
    const keyFile = join(this.dir, this.#options.keyName ?? "tls.key");
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
      process.getBuiltinModule("node:tls").createSecureContext({ cert, key });
    } catch (error) {
      throw new Error(
        `the webhook TLS certificate ${certFile} and key ${keyFile} are not a usable PEM pair: ${(error as Error).message}`,
      );
    }
    return { cert, key };
  }

  /** Sets the certificate and key of `server` again whenever the folder changes. */
  watch(server: Server): void {
    try {
      // cert-manager's Secret volume swaps a symlink on rotation: watch the folder, reload debounced.
      this.#watcher = watch(this.dir, () => {
        if (this.#reloadTimer) clearTimeout(this.#reloadTimer);
        this.#reloadTimer = setTimeout(() => void this.#reload(server), 200);
      });
      this.#watcher.on("error", () => this.#watcher?.close());
    } catch {
      this.#logger.warn(
        { certDir: this.dir },
        "cannot watch the cert folder; rotation needs a restart",
      );
    }
  }

  async #reload(server: Server): Promise<void> {
    try {
      server.setSecureContext(await this.read());
      this.#logger.info("webhook certificate reloaded");
    } catch (error) {
      this.#logger.warn(
        { err: error },
        "webhook certificate reload failed; serving the previous one",
      );
    }
  }

  /** Stops watching the folder. */
  stop(): void {
    this.#watcher?.close();
    if (this.#reloadTimer) clearTimeout(this.#reloadTimer);
  }
}
