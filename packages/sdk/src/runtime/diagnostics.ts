import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import {
  createServer as createHttpServer,
  type Server as HttpServer,
  type IncomingMessage,
  type ServerResponse,
} from "node:http";
import { createServer as createHttpsServer, type Server as HttpsServer } from "node:https";
import { join } from "node:path";
import { createSecureContext } from "node:tls";
import type { KubeClient } from "./client.js";
import type { RuntimeLogger } from "./logging.js";
import { selfSignedCertificate } from "./selfsigned.js";

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

interface Cached<T> {
  value: T;
  expiresAt: number;
}

// The TTLs of controller-runtime's filters.WithAuthenticationAndAuthorization.
const TOKEN_TTL_MS = 60_000;
const ALLOW_TTL_MS = 5 * 60_000;
const DENY_TTL_MS = 30_000;
const REVIEW_TIMEOUT_MS = 10_000;

/**
 * Authenticates a request's bearer token with a `TokenReview` and authorises it with a
 * `SubjectAccessReview` for the request's verb on its non-resource path, as controller-runtime's
 * `filters.WithAuthenticationAndAuthorization` (anonymous requests refused; answers cached 1 min per
 * token, 5 min per allowed and 30 s per denied decision). Tokens are kept only as SHA-256 digests.
 *
 * @example
 * ```ts
 * const reviewer = new DelegatedAuthorizer(manager.client);
 * const verdict = await reviewer.review(request.headers.authorization, "get", "/metrics");
 * if (verdict.status !== 200) response.writeHead(verdict.status).end(verdict.message);
 * ```
 */
export class DelegatedAuthorizer {
  private readonly tokens = new Map<string, Cached<ReviewedUser | undefined>>();
  private readonly decisions = new Map<string, Cached<boolean>>();

  /** Reviews go through `client` (the manager's identity needs `create` on both review kinds). */
  constructor(private readonly client: KubeClient) {}

  /**
   * 200 when the bearer token in `authorization` is valid and its user may `verb` on `path`; 401 for
   * no or a refused token, 403 for a user without the permission, 500 when the API server could not
   * answer. The message never contains the token.
   */
  async review(
    authorization: string | undefined,
    verb: string,
    path: string,
  ): Promise<{ status: 200 | 401 | 403 | 500; message: string }> {
    const token = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? "")?.[1];
    if (!token) return { status: 401, message: "Unauthorized" };
    let user: ReviewedUser | undefined;
    try {
      user = await this.authenticate(token);
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

  private async authenticate(token: string): Promise<ReviewedUser | undefined> {
    const key = createHash("sha256").update(token).digest("hex");
    const cached = this.fresh(this.tokens, key);
    if (cached) return cached.value;
    const review = (await this.client.request({
      method: "POST",
      path: "/apis/authentication.k8s.io/v1/tokenreviews",
      body: { apiVersion: "authentication.k8s.io/v1", kind: "TokenReview", spec: { token } },
      signal: AbortSignal.timeout(REVIEW_TIMEOUT_MS),
    })) as { status?: { authenticated?: boolean; user?: ReviewedUser } } | undefined;
    const user =
      review?.status?.authenticated && review.status.user?.username
        ? review.status.user
        : undefined;
    this.tokens.set(key, { value: user, expiresAt: Date.now() + TOKEN_TTL_MS });
    return user;
  }

  private async authorize(user: ReviewedUser, verb: string, path: string): Promise<boolean> {
    const key = JSON.stringify([user.username, user.uid, user.groups, verb, path]);
    const cached = this.fresh(this.decisions, key);
    if (cached) return cached.value;
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
    const allowed = review?.status?.allowed === true;
    this.decisions.set(key, {
      value: allowed,
      expiresAt: Date.now() + (allowed ? ALLOW_TTL_MS : DENY_TTL_MS),
    });
    return allowed;
  }

  private fresh<T>(cache: Map<string, Cached<T>>, key: string): Cached<T> | undefined {
    const entry = cache.get(key);
    if (entry && entry.expiresAt > Date.now()) return entry;
    cache.delete(key);
    return undefined;
  }
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
  handler: (request: IncomingMessage, response: ServerResponse) => void,
): Promise<HttpServer | HttpsServer> {
  if (serving.insecure) return createHttpServer(handler);
  const authorizer = new DelegatedAuthorizer(client);
  const credentials = serving.certDir
    ? await readServingCertificate(serving.certDir)
    : selfSignedCertificate();
  if (!serving.certDir) {
    logger.info("diagnostics: no certificate folder given; serving a self-signed certificate");
  }
  return createHttpsServer({ ...credentials, minVersion: "TLSv1.2" }, (request, response) => {
    const path = (request.url ?? "/").split("?")[0] ?? "/";
    void authorizer
      .review(request.headers.authorization, (request.method ?? "GET").toLowerCase(), path)
      .then((verdict) => {
        if (verdict.status === 200) handler(request, response);
        else {
          response
            .writeHead(verdict.status, { "content-type": "text/plain; charset=utf-8" })
            .end(`${verdict.message}\n`);
        }
      });
  });
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
    createSecureContext({ cert, key });
  } catch (error) {
    throw new Error(
      `the diagnostics certificate and key in ${certDir} are not a usable PEM pair: ${(error as Error).message}`,
    );
  }
  return { cert, key };
}
