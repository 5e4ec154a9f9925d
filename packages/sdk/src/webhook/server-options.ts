/**
 * The webhook server's options and limits, with their defaults (controller-runtime's where it has
 * one).
 *
 * @module
 */
import type { RuntimeLogger } from "../runtime/logging.js";
import { DEFAULT_SERVING_LIMITS, type ServingLimits } from "../runtime/serving.js";

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
  /**
   * The largest request body read, bytes (default 7 MiB, controller-runtime's limit: an object is at
   * most 3 MiB and a review of an update carries two). A larger `Content-Length` is answered 413
   * without reading the body; a body without one stops being read at the cap.
   */
  maxBodyBytes?: number;
  /**
   * The request bodies being read, decoded and judged at once, bytes, counted by their `Content-Length`
   * (`maxBodyBytes` when a body has none) (default 16 MiB: a decoded review takes up to about 14 times
   * its size in memory when its JSON is many small values). A request that does not fit is answered 503
   * with `Retry-After: 1` before its body is read. Bodies over 1 MiB may fill only three quarters of
   * it, so a flood of large reviews leaves room for the few-KiB reviews the API server usually sends,
   * and one client address may hold only a quarter of it (at least one `maxBodyBytes` body plus 1 MiB),
   * so one client cannot hold it all by declaring large bodies and sending them slowly.
   */
  maxBytesInFlight?: number;
  /**
   * How long a client may take from connecting to the end of its headers, TLS handshake included, ms
   * (default 32 s, controller-runtime's `ReadHeaderTimeout`).
   */
  headerReadTimeoutMs?: number;
  /**
   * How long a client may take to send its whole request, ms (default 60 s; the API server gives a
   * webhook 30 s at most, so a request still arriving after that is answered to no one).
   */
  requestTimeoutMs?: number;
  /** How long a kept-alive connection may sit idle between reviews, ms (default 5 s). */
  idleTimeoutMs?: number;
  /** Open connections at most; one past it is closed at once (default 512). */
  maxConnections?: number;
}

/** The bounds of a {@link WebhookServer}, as {@link WebhookServerOptions} names them. */
export interface WebhookServerLimits extends ServingLimits {
  /** See {@link WebhookServerOptions.maxBodyBytes}. */
  maxBodyBytes: number;
  /** See {@link WebhookServerOptions.maxBytesInFlight}. */
  maxBytesInFlight: number;
}

/** The defaults of a {@link WebhookServer}'s bounds (see {@link WebhookServerOptions}). */
export const DEFAULT_WEBHOOK_SERVER_LIMITS: Readonly<WebhookServerLimits> = Object.freeze({
  ...DEFAULT_SERVING_LIMITS,
  maxBodyBytes: 7 * 1024 * 1024,
  maxBytesInFlight: 16 * 1024 * 1024,
});
