import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import type { Server as HttpServer } from "node:http";
import type { Server as HttpsServer } from "node:https";
import { join } from "node:path";
import type { KubeClient } from "./client.js";
import type { RuntimeLogger } from "./logging.js";
import { selfSignedCertificate } from "./selfsigned.js";
import {
  applyServingLimits,
  DEFAULT_SERVING_LIMITS,
  definedOnly,
  guardRequests,
  type RequestHandler,
  resolveServingLimits,
  type ServingLimits,
  servingOptions,
} from "./serving.js";

/** Who a bearer token belongs to, as a TokenReview answers. */
export interface ReviewedUser {
  /** The user name (`system:serviceaccount:<namespace>:<name>` for a ServiceAccount). */
  username: string;
  /** Its uid, if any. */
  uid?: string;
  /** Groups of the user, e.g. `system:serviceaccounts`; SubjectAccessReview checks them too. */
  groups?: string[];
  /**
   * Extra attributes the authenticator attached (e.g. the ServiceAccount's pod name), passed on to
   * SubjectAccessReview.
   */
  extra?: Record<string, string[]>;
}

/**
 * The bounds of the diagnostics endpoint: its caches, the rate of failed authentications it turns into
 * `TokenReview`s, and its connections (`ManagerOptions.diagnosticsLimits`). Every field has a default
 * ({@link DEFAULT_DIAGNOSTICS_LIMITS}).
 */
export interface DiagnosticsLimits extends Partial<ServingLimits> {
  /**
   * Entries kept in each cache (reviewed tokens; authorization decisions), the oldest dropped first
   * (default 4096). Expired entries are swept as requests come.
   */
  maxCacheEntries?: number;
  /**
   * `TokenReview`s one source address may spend on tokens that turn out not to authenticate, in a
   * burst (default 10). Past it the source is answered 429 with `Retry-After` and no review is sent,
   * until it regained one at {@link DiagnosticsLimits.failedAuthenticationsPerSecond}. A review that
   * authenticates costs nothing.
   */
  failedAuthenticationBurst?: number;
  /** How many of the burst a source regains per second (default 1). */
  failedAuthenticationsPerSecond?: number;
  /**
   * The same budget for all sources together, in a burst (default 100), so many addresses cannot add
   * up to a flood either.
   */
  failedAuthenticationBurstTotal?: number;
  /** How many of the total burst are regained per second (default 10). */
  failedAuthenticationsPerSecondTotal?: number;
  /** Source addresses whose budget is remembered; the one seen longest ago is forgotten first (default 4096). */
  maxTrackedSources?: number;
}

/** The defaults of {@link DiagnosticsLimits}. */
export const DEFAULT_DIAGNOSTICS_LIMITS: Readonly<Required<DiagnosticsLimits>> = Object.freeze({
  ...DEFAULT_SERVING_LIMITS,
  maxCacheEntries: 4096,
  failedAuthenticationBurst: 10,
  failedAuthenticationsPerSecond: 1,
  failedAuthenticationBurstTotal: 100,
  failedAuthenticationsPerSecondTotal: 10,
  maxTrackedSources: 4096,
});

// The TTLs of controller-runtime's filters.WithAuthenticationAndAuthorization.
const TOKEN_TTL_MS = 60_000;
const ALLOW_TTL_MS = 5 * 60_000;
const DENY_TTL_MS = 30_000;
const REVIEW_TIMEOUT_MS = 10_000;
// How often a cache is scanned whole for expired entries (the oldest are dropped on every insert).
const SWEEP_EVERY_MS = 10_000;

/**
 * A map of at most `max` entries with a time to live each; the oldest go first, and a lookup scans the
 * whole map for expired entries at most every 10 s. Internal; exported for its unit test.
 */
export class BoundedCache<T> {
  private readonly entries = new Map<string, { value: T; expiresAt: number }>();
  private sweptAt = 0;

  /** At most `max` entries; `now` is a monotonic clock in ms. */
  constructor(
    private readonly max: number,
    private readonly now: () => number,
  ) {}

  /** Entries held, expired ones not yet swept included. */
  get size(): number {
    return this.entries.size;
  }

  /** The live entry of `key`. */
  get(key: string): { value: T } | undefined {
    this.sweep();
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    if (entry.expiresAt > this.now()) return entry;
    this.entries.delete(key);
    return undefined;
  }

  /** Stores `value` for `ttlMs`, dropping the oldest entries past `max`. */
  set(key: string, value: T, ttlMs: number): void {
    this.entries.delete(key);
    this.entries.set(key, { value, expiresAt: this.now() + ttlMs });
    for (const oldest of this.entries.keys()) {
      if (this.entries.size <= this.max) break;
      this.entries.delete(oldest);
    }
  }

  private sweep(): void {
    const now = this.now();
    if (now - this.sweptAt < SWEEP_EVERY_MS) return;
    this.sweptAt = now;
    for (const [key, entry] of this.entries) {
      if (entry.expiresAt <= now) this.entries.delete(key);
    }
  }
}

/** A token bucket: `burst` tokens, refilled at `perSecond`. */
class Bucket {
  private tokens: number;
  private updatedAt: number;
  /** Whether the source was told so since its budget ran out (logged once per episode). */
  limited = false;

  constructor(
    private readonly burst: number,
    private readonly perSecond: number,
    now: number,
  ) {
    this.tokens = burst;
    this.updatedAt = now;
  }

  /** Refills, then reports whether a token is there (without taking it). */
  available(now: number): boolean {
    this.tokens = Math.min(
      this.burst,
      this.tokens + ((now - this.updatedAt) / 1000) * this.perSecond,
    );
    this.updatedAt = now;
    if (this.tokens >= 1) this.limited = false;
    return this.tokens >= 1;
  }

  take(): void {
    this.tokens -= 1;
  }

  give(): void {
    this.tokens = Math.min(this.burst, this.tokens + 1);
  }

  /** Whole seconds until a token is back. */
  retryAfterSeconds(): number {
    return Math.max(1, Math.ceil((1 - this.tokens) / this.perSecond));
  }
}

/** What {@link DelegatedAuthorizer.review} decided. */
export interface DiagnosticsVerdict {
  /** 200 allowed, 401 no or a refused token, 403 not permitted, 429 too many failed authentications, 500 no answer. */
  status: 200 | 401 | 403 | 429 | 500;
  /** Said to the client; never contains the token. */
  message: string;
  /** With 429: when the source may try again, s. */
  retryAfterSeconds?: number;
}

/**
 * Authenticates a request's bearer token with a `TokenReview` and authorises it with a
 * `SubjectAccessReview` for the request's verb on its non-resource path, as controller-runtime's
 * `filters.WithAuthenticationAndAuthorization` (anonymous requests refused; answers cached 1 min per
 * token, 5 min per allowed and 30 s per denied decision). Tokens are kept only as SHA-256 digests.
 *
 * Bounded, since anyone who reaches the port can send it tokens: concurrent lookups of one token (or
 * one decision) share one review; each cache holds at most `maxCacheEntries` (oldest dropped, expired
 * swept); and a source address may spend only `failedAuthenticationBurst` reviews on tokens that do not
 * authenticate (refilled at `failedAuthenticationsPerSecond`, all sources together at the `…Total`
 * rates) before it is answered 429 without a review being sent.
 *
 * @example
 * ```ts
 * const reviewer = new DelegatedAuthorizer(manager.client);
 * const verdict = await reviewer.review(request.headers.authorization, "get", "/metrics", request.socket.remoteAddress);
 * if (verdict.status !== 200) response.writeHead(verdict.status).end(verdict.message);
 * ```
 */
export class DelegatedAuthorizer {
  private readonly limits: Required<DiagnosticsLimits>;
  private readonly tokens: BoundedCache<ReviewedUser | undefined>;
  private readonly decisions: BoundedCache<boolean>;
  private readonly tokensInFlight = new Map<string, Promise<ReviewedUser | undefined>>();
  private readonly decisionsInFlight = new Map<string, Promise<boolean>>();
  private readonly sources = new Map<string, Bucket>();
  private readonly total: Bucket;
  private readonly now = () => performance.now();

  /**
   * Reviews go through `client` (the manager's identity needs `create` on both review kinds). Throws a
   * `RangeError` naming a limit that is not a positive number.
   */
  constructor(
    private readonly client: KubeClient,
    limits: DiagnosticsLimits = {},
    private readonly logger?: RuntimeLogger,
  ) {
    this.limits = resolveDiagnosticsLimits(limits);
    this.tokens = new BoundedCache(this.limits.maxCacheEntries, this.now);
    this.decisions = new BoundedCache(this.limits.maxCacheEntries, this.now);
    this.total = new Bucket(
      this.limits.failedAuthenticationBurstTotal,
      this.limits.failedAuthenticationsPerSecondTotal,
      this.now(),
    );
  }

  /**
   * 200 when the bearer token in `authorization` is valid and its user may `verb` on `path`; 401 for
   * no or a refused token, 403 for a user without the permission, 429 when `source` (the client's
   * address) spent its budget of failed authentications, 500 when the API server could not answer.
   * The message never contains the token.
   */
  async review(
    authorization: string | undefined,
    verb: string,
    path: string,
    source = "unknown",
  ): Promise<DiagnosticsVerdict> {
    const token = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? "")?.[1];
    if (!token) return { status: 401, message: "Unauthorized" };
    let user: ReviewedUser | undefined;
    try {
      const found = this.authenticate(token, source);
      if (typeof found === "number") {
        return {
          status: 429,
          message: "Too many failed authentications from this address; retry later",
          retryAfterSeconds: found,
        };
      }
      user = await found;
    } catch {
      return { status: 500, message: "Authentication failed" };
    }
    if (!user) return { status: 401, message: "Unauthorized" };
    let allowed: boolean;
    try {
      allowed = await this.authorize(user, verb, path);
    } catch {
      return { status: 500, message: `Authorization for user ${user.username} failed` };
    }
    return allowed
      ? { status: 200, message: "" }
      : { status: 403, message: `Authorization denied for user ${user.username}` };
  }

  /** The user of `token` (a cached or shared review), or the seconds `source` must wait. */
  private authenticate(token: string, source: string): Promise<ReviewedUser | undefined> | number {
    const key = createHash("sha256").update(token).digest("hex");
    const cached = this.tokens.get(key);
    if (cached) return Promise.resolve(cached.value);
    const shared = this.tokensInFlight.get(key);
    if (shared) return shared;
    const bucket = this.bucketOf(source);
    const now = this.now();
    const sourceOk = bucket.available(now);
    if (!sourceOk || !this.total.available(now)) {
      const empty = sourceOk ? this.total : bucket;
      const wait = empty.retryAfterSeconds();
      if (!empty.limited) {
        empty.limited = true;
        this.logger?.warn(
          { source: sourceOk ? "all sources" : source, retryAfterSeconds: wait },
          "diagnostics: too many failed authentications; answering 429 without a TokenReview",
        );
      }
      return wait;
    }
    // Paid up front, so concurrent unknown tokens cannot all slip past the budget; refunded on success.
    bucket.take();
    this.total.take();
    const lookup = this.tokenReview(token).then((user) => {
      this.tokens.set(key, user, TOKEN_TTL_MS);
      if (user) {
        bucket.give();
        this.total.give();
      }
      return user;
    });
    this.tokensInFlight.set(key, lookup);
    void lookup.then(
      () => this.tokensInFlight.delete(key),
      () => this.tokensInFlight.delete(key),
    );
    return lookup;
  }

  private async tokenReview(token: string): Promise<ReviewedUser | undefined> {
    const review = (await this.client.request({
      method: "POST",
      path: "/apis/authentication.k8s.io/v1/tokenreviews",
      body: { apiVersion: "authentication.k8s.io/v1", kind: "TokenReview", spec: { token } },
      signal: AbortSignal.timeout(REVIEW_TIMEOUT_MS),
    })) as { status?: { authenticated?: boolean; user?: ReviewedUser } } | undefined;
    return review?.status?.authenticated && review.status.user?.username
      ? review.status.user
      : undefined;
  }

  private bucketOf(source: string): Bucket {
    let bucket = this.sources.get(source);
    if (bucket) {
      // Seen again: move to the back, so the source seen longest ago is the one forgotten.
      this.sources.delete(source);
      this.sources.set(source, bucket);
      return bucket;
    }
    for (const oldest of this.sources.keys()) {
      if (this.sources.size < this.limits.maxTrackedSources) break;
      this.sources.delete(oldest);
    }
    bucket = new Bucket(
      this.limits.failedAuthenticationBurst,
      this.limits.failedAuthenticationsPerSecond,
      this.now(),
    );
    this.sources.set(source, bucket);
    return bucket;
  }

  private authorize(user: ReviewedUser, verb: string, path: string): Promise<boolean> {
    const key = JSON.stringify([user.username, user.uid, user.groups, verb, path]);
    const cached = this.decisions.get(key);
    if (cached) return Promise.resolve(cached.value);
    const shared = this.decisionsInFlight.get(key);
    if (shared) return shared;
    const lookup = this.accessReview(user, verb, path).then((allowed) => {
      this.decisions.set(key, allowed, allowed ? ALLOW_TTL_MS : DENY_TTL_MS);
      return allowed;
    });
    this.decisionsInFlight.set(key, lookup);
    void lookup.then(
      () => this.decisionsInFlight.delete(key),
      () => this.decisionsInFlight.delete(key),
    );
    return lookup;
  }

  private async accessReview(user: ReviewedUser, verb: string, path: string): Promise<boolean> {
    const spec: Record<string, unknown> = {
      user: user.username,
      groups: user.groups ?? [],
      nonResourceAttributes: { path, verb },
    };
    if (user.uid) spec.uid = user.uid;
    if (user.extra) spec.extra = user.extra;
    const review = (await this.client.request({
      method: "POST",
      path: "/apis/authorization.k8s.io/v1/subjectaccessreviews",
      body: { apiVersion: "authorization.k8s.io/v1", kind: "SubjectAccessReview", spec },
      signal: AbortSignal.timeout(REVIEW_TIMEOUT_MS),
    })) as { status?: { allowed?: boolean } } | undefined;
    return review?.status?.allowed === true;
  }
}

/** `limits` over {@link DEFAULT_DIAGNOSTICS_LIMITS}; throws a `RangeError` naming a bad one. */
export function resolveDiagnosticsLimits(
  limits: DiagnosticsLimits = {},
): Required<DiagnosticsLimits> {
  const { headerReadTimeoutMs, requestTimeoutMs, idleTimeoutMs, maxConnections, ...own } = limits;
  for (const [name, value] of Object.entries(own)) {
    if (value === undefined) continue;
    const whole =
      name !== "failedAuthenticationsPerSecond" && name !== "failedAuthenticationsPerSecondTotal";
    if (
      typeof value !== "number" ||
      !Number.isFinite(value) ||
      value <= 0 ||
      (whole && !Number.isSafeInteger(value))
    ) {
      throw new RangeError(
        `diagnosticsLimits: ${name} must be a ${whole ? "whole number ≥ 1" : "number > 0"}, got ${JSON.stringify(value)}`,
      );
    }
  }
  return {
    ...DEFAULT_DIAGNOSTICS_LIMITS,
    ...definedOnly(own),
    ...resolveServingLimits("diagnosticsLimits", {
      headerReadTimeoutMs,
      requestTimeoutMs,
      idleTimeoutMs,
      maxConnections,
    }),
  };
}

/** How the diagnostics endpoint is served (see `ManagerOptions.diagnosticsAddress`). */
export interface DiagnosticsServing {
  /** Plain HTTP without authentication (`--insecure-diagnostics`). */
  insecure: boolean;
  /** Folder with `tls.crt` and `tls.key`; absent: a self-signed certificate made at start. */
  certDir?: string;
}

/**
 * Creates the diagnostics server: `handler` behind HTTPS and {@link DelegatedAuthorizer}, or plain
 * HTTP when `serving.insecure`. Not exported from the package; the manager runs it.
 */
export async function createDiagnosticsServer(
  serving: DiagnosticsServing,
  client: KubeClient,
  logger: RuntimeLogger,
  handler: RequestHandler,
  limits: DiagnosticsLimits = {},
): Promise<HttpServer | HttpsServer> {
  const resolved = resolveDiagnosticsLimits(limits);
  const bounds = servingOptions(resolved);
  if (serving.insecure) {
    const server = httpModule().createServer(bounds, guardRequests("diagnostics", logger, handler));
    applyServingLimits(server, resolved);
    return server;
  }
  const authorizer = new DelegatedAuthorizer(client, resolved, logger);
  const credentials = serving.certDir
    ? await readServingCertificate(serving.certDir)
    : selfSignedCertificate();
  if (!serving.certDir) {
    logger.info("diagnostics: no certificate folder given; serving a self-signed certificate");
  }
  // node:https and node:tls are taken when a server starts, not with the runtime's modules.
  const server = process.getBuiltinModule("node:https").createServer(
    { ...credentials, minVersion: "TLSv1.2", ...bounds },
    guardRequests("diagnostics", logger, (request, response) => {
      const path = (request.url ?? "/").split("?")[0] ?? "/";
      return authorizer
        .review(
          request.headers.authorization,
          (request.method ?? "GET").toLowerCase(),
          path,
          request.socket.remoteAddress,
        )
        .then((verdict) => {
          if (verdict.status === 200) return handler(request, response);
          else {
            response
              .writeHead(verdict.status, {
                "content-type": "text/plain; charset=utf-8",
                ...(verdict.retryAfterSeconds !== undefined
                  ? { "retry-after": String(verdict.retryAfterSeconds) }
                  : {}),
              })
              .end(`${verdict.message}\n`);
          }
        });
    }),
  );
  applyServingLimits(server, resolved);
  return server;
}

async function readServingCertificate(certDir: string): Promise<{ cert: Buffer; key: Buffer }> {
  const read = async (file: string): Promise<Buffer> => {
    try {
      return await readFile(file);
    } catch (error) {
      const reason = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
      throw new Error(
        `cannot read the diagnostics TLS file ${file} (${reason}): put tls.crt and tls.key there, or give no certificate folder to serve a self-signed certificate`,
      );
    }
  };
  const cert = await read(join(certDir, "tls.crt"));
  const key = await read(join(certDir, "tls.key"));
  try {
    process.getBuiltinModule("node:tls").createSecureContext({ cert, key });
  } catch (error) {
    throw new Error(
      `the diagnostics certificate and key in ${certDir} are not a usable PEM pair: ${(error as Error).message}`,
    );
  }
  return { cert, key };
}

/**
 * node:http, taken with `process.getBuiltinModule`: an ESM import of it builds its namespace, which
 * reads its lazy `WebSocket` and friends and so loads Node's bundled undici (some 20 ms of a
 * manager's start), whether or not anything is served over plain HTTP.
 */
export function httpModule(): typeof import("node:http") {
  return process.getBuiltinModule("node:http");
}
