/**
 * Connection pools shared by every client of one server: one undici `Agent` per server and TLS
 * identity (CA, client certificate, verification, proxy) and connection cap, counted by its users and
 * closed when the last one lets go. HTTP/1.1 has no multiplexing, so a watch holds its connection for
 * as long as it streams: watches get a pool of their own (one connection each) and the cap bounds the
 * connections of every other request.
 *
 * @module
 */
import { createHash, X509Certificate } from "node:crypto";
import type { SecureContext } from "node:tls";
import type { Dispatcher } from "undici";
import type { TlsMaterial } from "./credentials.js";
import { TlsMaterialError } from "./errors.js";
import { undiciAgent, undiciProxyAgent } from "./undici.js";

/** What a pool is for: requests (capped) or watch streams (one connection each). */
export type PoolPurpose = "requests" | "watches";

interface SharedPool {
  readonly dispatcher: Dispatcher;
  users: number;
}

const pools = new Map<string, SharedPool>();

/** A lease on a shared pool; `release` once, when the client is done with it. */
export interface PoolLease {
  /** The dispatcher to send through. */
  readonly dispatcher: Dispatcher;
  /** Gives the lease back; the last one closes the pool. */
  release(): void;
}

/** How many shared pools are open (for tests and diagnostics). */
export function openPoolCount(): number {
  return pools.size;
}

/**
 * The shared pool of `origin` with these TLS settings: requests capped at `maxConnections`
 * connections, watches uncapped (each open watch is one connection).
 */
export function leasePool(
  origin: string,
  tls: TlsMaterial,
  proxyUrl: string | undefined,
  purpose: PoolPurpose,
  maxConnections: number,
): PoolLease {
  const connections = purpose === "requests" ? maxConnections : null;
  const key = poolKey(origin, tls, proxyUrl, connections);
  let pool = pools.get(key);
  if (!pool) {
    // One parsed context per pool: without it every connection would parse the CA, certificate and
    // key again (node builds a fresh context per tls.connect), which at 100 workload clusters is CPU
    // and native memory spent on every reconnect.
    const secureContext = parsedContext(origin, tls);
    const connect = {
      rejectUnauthorized: tls.rejectUnauthorized,
      secureContext,
      ...(tls.servername !== undefined ? { servername: tls.servername } : {}),
    };
    const dispatcher =
      proxyUrl !== undefined
        ? new (undiciProxyAgent())({ uri: proxyUrl, requestTls: connect, connections })
        : new (undiciAgent())({ connect, connections });
    pool = { dispatcher, users: 0 };
    pools.set(key, pool);
  }
  pool.users++;
  const shared = pool;
  let released = false;
  return {
    dispatcher: shared.dispatcher,
    release() {
      if (released) return;
      released = true;
      shared.users--;
      if (shared.users === 0 && pools.get(key) === shared) {
        pools.delete(key);
        // In-flight requests finish; nothing new can be sent through it.
        void shared.dispatcher.close().catch(() => {});
      }
    },
  };
}

/**
 * The TLS context of `tls`, or an error that names the kubeconfig fields to fix. OpenSSL's reason
 * (e.g. "no start line") is kept; it never quotes the material.
 */
function parsedContext(origin: string, tls: TlsMaterial): SecureContext {
  try {
    // OpenSSL skips a CA block it cannot parse; client-go refuses a bundle without one certificate.
    if (tls.ca !== undefined && !holdsCertificate(tls.ca)) {
      throw new Error("no certificate in the CA bundle");
    }
    // node:tls is taken when a client first needs it, not with the runtime's modules.
    return process.getBuiltinModule("node:tls").createSecureContext({
      ...(tls.ca !== undefined ? { ca: tls.ca } : {}),
      ...(tls.cert !== undefined ? { cert: tls.cert } : {}),
      ...(tls.key !== undefined ? { key: tls.key } : {}),
    });
  } catch (error) {
    const fields = [
      tls.ca !== undefined ? "certificate-authority(-data)" : undefined,
      tls.cert !== undefined ? "client-certificate(-data)" : undefined,
      tls.key !== undefined ? "client-key(-data)" : undefined,
    ].filter((field) => field !== undefined);
    const reason = error instanceof Error ? error.message.replace(/^error:[0-9A-F]+:/, "") : "";
    throw new TlsMaterialError(
      `the kubeconfig's TLS material for ${origin} is not usable (${reason}): check that ${fields.join(", ")} ${fields.length === 1 ? "holds" : "hold"} PEM data (base64-encoded in the -data fields) and that the key matches the certificate`,
    );
  }
}

const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----[^-]+-----END CERTIFICATE-----/g;

function holdsCertificate(bundle: string | Buffer): boolean {
  const text = typeof bundle === "string" ? bundle : bundle.toString("latin1");
  for (const [block] of text.matchAll(PEM_CERTIFICATE)) {
    try {
      new X509Certificate(block);
      return true;
    } catch {
      // The next block may parse.
    }
  }
  return false;
}

function poolKey(
  origin: string,
  tls: TlsMaterial,
  proxyUrl: string | undefined,
  connections: number | null,
): string {
  // Hashed so the key (which lives as long as the pool) holds no credential material.
  const hash = createHash("sha256");
  for (const part of [
    origin,
    tls.ca,
    tls.cert,
    tls.key,
    String(tls.rejectUnauthorized),
    tls.servername,
    proxyUrl,
    String(connections),
  ]) {
    hash.update(part === undefined ? "\u0000" : `${part.length}:`);
    if (part !== undefined) hash.update(part);
  }
  return hash.digest("hex");
}
