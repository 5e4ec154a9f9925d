/**
 * What a client sends to its server, from either kubeconfig it may be given: the SDK's
 * {@link Kubeconfig} (files and exec plugins only when it is the operator's own) or, read
 * structurally, `@kubernetes/client-node`'s `KubeConfig` (its own `applyToHTTPSOptions` resolves its
 * credentials, so nothing of client-node is imported here).
 *
 * @module
 */
import { readFile } from "node:fs/promises";
import type { KubeConfig as ClientNodeKubeConfig } from "@kubernetes/client-node";
import { Kubeconfig, type KubeconfigExec, type KubeconfigUser } from "./kubeconfig-loader.js";

/**
 * A kubeconfig a client can be built from: the SDK's {@link Kubeconfig} (from `loadKubeconfig` or
 * `parseWorkloadKubeconfig`) or `@kubernetes/client-node`'s `KubeConfig`.
 */
export type KubeconfigSource = Kubeconfig | ClientNodeKubeConfig;

/** The TLS side of a connection. */
export interface TlsMaterial {
  /** CA bundle (PEM); absent: the system's. */
  readonly ca?: string | Buffer | undefined;
  /** Client certificate (PEM). */
  readonly cert?: string | Buffer | undefined;
  /** Client key (PEM). */
  readonly key?: string | Buffer | undefined;
  /** False with `insecure-skip-tls-verify`. */
  readonly rejectUnauthorized: boolean;
  /** `tls-server-name`. */
  readonly servername?: string | undefined;
}

/** Everything a request needs from the kubeconfig, and how long it holds. */
export interface ResolvedCredentials {
  /** Server URL without a trailing slash. */
  readonly server: string;
  /** `authorization` when the user has a credential. */
  readonly headers: Record<string, string>;
  /** TLS settings. */
  readonly tls: TlsMaterial;
  /** `proxy-url`, when set. */
  readonly proxyUrl?: string | undefined;
  /** When to resolve again (`performance.now()` time); `Infinity` for static credentials. */
  readonly expiresAt: number;
  /** Whether a 401 is worth resolving again for (the credential comes from a file or a plugin). */
  readonly refreshable: boolean;
}

/** How long a token file is trusted before it is read again (client-go reads it once a minute). */
const TOKEN_FILE_TTL_MS = 60_000;
/** How long a client-node `KubeConfig`'s dynamic credentials are reused before asking it again. */
const CLIENT_NODE_DYNAMIC_TTL_MS = 10_000;
/** Largest output of an exec plugin read. */
const MAX_EXEC_OUTPUT_BYTES = 1024 * 1024;
/** How long an exec plugin may run. */
const EXEC_TIMEOUT_MS = 60_000;

/** Whether a value is a kubeconfig a client can be built from (checked by shape, not by class). */
export function isKubeconfigSource(value: unknown): value is KubeconfigSource {
  if (value instanceof Kubeconfig) return true;
  const candidate = value as Partial<ClientNodeKubeConfig> | null;
  return (
    typeof candidate === "object" &&
    candidate !== null &&
    typeof candidate.getCurrentCluster === "function" &&
    typeof candidate.getCurrentContext === "function" &&
    typeof candidate.applyToHTTPSOptions === "function"
  );
}

/**
 * Resolves the current context's server, credentials and TLS settings. `refresh` drops a cached exec
 * credential (after a 401). Errors say which entry is at fault and never quote a credential.
 */
export async function resolveCredentials(
  source: KubeconfigSource,
  refresh = false,
): Promise<ResolvedCredentials> {
  if (source instanceof Kubeconfig) return resolveOwn(source, refresh);
  return resolveClientNode(source);
}

async function resolveClientNode(config: ClientNodeKubeConfig): Promise<ResolvedCredentials> {
  const cluster = config.getCurrentCluster();
  if (!cluster) throw new Error("KubeClient: the kubeconfig has no current cluster");
  const options: {
    headers?: Record<string, string>;
    ca?: string | Buffer;
    cert?: string | Buffer;
    key?: string | Buffer;
    rejectUnauthorized?: boolean;
    servername?: string;
    auth?: string;
  } = {};
  await config.applyToHTTPSOptions(options);
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(options.headers ?? {})) {
    headers[name.toLowerCase()] = String(value);
  }
  if (options.auth !== undefined && headers.authorization === undefined) {
    headers.authorization = `Basic ${Buffer.from(options.auth).toString("base64")}`;
  }
  const user = config.getCurrentUser();
  const dynamic = user?.exec !== undefined || user?.authProvider !== undefined;
  return {
    server: cluster.server.replace(/\/+$/, ""),
    headers,
    tls: {
      ca: options.ca,
      cert: options.cert,
      key: options.key,
      rejectUnauthorized: options.rejectUnauthorized ?? !cluster.skipTLSVerify,
      servername: options.servername ?? cluster.tlsServerName,
    },
    proxyUrl: cluster.proxyUrl,
    expiresAt: dynamic ? performance.now() + CLIENT_NODE_DYNAMIC_TTL_MS : Number.POSITIVE_INFINITY,
    refreshable: dynamic,
  };
}

async function resolveOwn(config: Kubeconfig, refresh: boolean): Promise<ResolvedCredentials> {
  const cluster = config.getCurrentCluster();
  if (!cluster) {
    throw new Error(
      `KubeClient: the kubeconfig has no cluster for its current context "${config.currentContext}"; fix current-context`,
    );
  }
  const user = config.getCurrentUser();
  const local = config.localCredentials;
  const where = `user "${user?.name ?? ""}" of the kubeconfig`;
  const needLocal = (what: string) => {
    if (!local) {
      throw new Error(
        `${where} ${what}, which a kubeconfig read from a Secret may not use; embed the credential`,
      );
    }
  };
  let ca: string | Buffer | undefined;
  if (cluster.caData !== undefined) ca = Buffer.from(cluster.caData, "base64");
  else if (cluster.caFile !== undefined) {
    needLocal("refers to a CA file");
    ca = await readNamed(cluster.caFile, `the CA file of cluster "${cluster.name}"`);
  }
  if (cluster.proxyUrl !== undefined) needLocal("uses a proxy-url");

  const headers: Record<string, string> = {};
  let cert: string | Buffer | undefined;
  let key: string | Buffer | undefined;
  let expiresAt = Number.POSITIVE_INFINITY;
  let refreshable = false;
  if (user) {
    if (user.authProvider !== undefined) {
      throw new Error(
        `${where} uses an auth-provider, which kubectl and capi-ts no longer run; use an exec credential plugin`,
      );
    }
    if (user.certData !== undefined) cert = Buffer.from(user.certData, "base64");
    else if (user.certFile !== undefined) {
      needLocal("refers to a certificate file");
      cert = await readNamed(user.certFile, `the client certificate of ${where}`);
    }
    if (user.keyData !== undefined) key = Buffer.from(user.keyData, "base64");
    else if (user.keyFile !== undefined) {
      needLocal("refers to a key file");
      key = await readNamed(user.keyFile, `the client key of ${where}`);
    }
    if (user.token !== undefined) headers.authorization = `Bearer ${user.token}`;
    else if (user.tokenFile !== undefined) {
      needLocal("refers to a token file");
      const token = (await readNamed(user.tokenFile, `the token file of ${where}`))
        .toString("utf8")
        .trim();
      headers.authorization = `Bearer ${token}`;
      expiresAt = performance.now() + TOKEN_FILE_TTL_MS;
      refreshable = true;
    } else if (user.username !== undefined || user.password !== undefined) {
      const pair = `${user.username ?? ""}:${user.password ?? ""}`;
      headers.authorization = `Basic ${Buffer.from(pair).toString("base64")}`;
    }
    if (user.exec !== undefined) {
      needLocal("uses an exec credential plugin");
      const credential = await execCredential(user, user.exec, cluster, refresh);
      if (credential.token !== undefined) headers.authorization = `Bearer ${credential.token}`;
      if (credential.cert !== undefined) {
        cert = credential.cert;
        key = credential.key;
      }
      expiresAt = credential.expiresAt;
      refreshable = true;
    }
  }
  return {
    server: cluster.server.replace(/\/+$/, ""),
    headers,
    tls: {
      ca,
      cert,
      key,
      rejectUnauthorized: !cluster.skipTLSVerify,
      servername: cluster.tlsServerName,
    },
    proxyUrl: cluster.proxyUrl,
    expiresAt,
    refreshable,
  };
}

async function readNamed(path: string, what: string): Promise<Buffer> {
  try {
    return await readFile(path);
  } catch (error) {
    throw new Error(
      `cannot read ${what} (${path}): ${(error as NodeJS.ErrnoException).code ?? "error"}; fix the kubeconfig or the mount`,
    );
  }
}

/** The credential of an exec plugin, as {@link parseExecCredential} reads it. */
export interface ExecResult {
  /** Bearer token. */
  readonly token?: string | undefined;
  /** Client certificate (PEM). */
  readonly cert?: string | undefined;
  /** Client key (PEM). */
  readonly key?: string | undefined;
  /** `performance.now()` time of expirationTimestamp; Infinity when the plugin gave none. */
  readonly expiresAt: number;
}

// One cached credential per user entry, reused until its expirationTimestamp (as client-go).
const execCache = new WeakMap<KubeconfigUser, Promise<ExecResult>>();

function execCredential(
  user: KubeconfigUser,
  exec: KubeconfigExec,
  cluster: NonNullable<ReturnType<Kubeconfig["getCurrentCluster"]>>,
  refresh: boolean,
): Promise<ExecResult> {
  const cached = execCache.get(user);
  if (cached && !refresh) {
    return cached.then((result) =>
      performance.now() < result.expiresAt ? result : execCredential(user, exec, cluster, true),
    );
  }
  const pending = runExec(user.name, exec, cluster);
  execCache.set(user, pending);
  pending.catch(() => execCache.delete(user));
  return pending;
}

function runExec(
  userName: string,
  exec: KubeconfigExec,
  cluster: NonNullable<ReturnType<Kubeconfig["getCurrentCluster"]>>,
): Promise<ExecResult> {
  const where = `the exec credential plugin "${exec.command}" of user "${userName}"`;
  if (exec.interactiveMode === "Always") {
    return Promise.reject(
      new Error(`${where} needs a terminal (interactiveMode: Always), which a controller has not`),
    );
  }
  const spec: Record<string, unknown> = { interactive: false };
  if (exec.provideClusterInfo) {
    spec.cluster = {
      server: cluster.server,
      ...(cluster.caData !== undefined ? { "certificate-authority-data": cluster.caData } : {}),
      ...(cluster.tlsServerName !== undefined ? { "tls-server-name": cluster.tlsServerName } : {}),
      "insecure-skip-tls-verify": cluster.skipTLSVerify,
    };
  }
  const env: Record<string, string | undefined> = { ...process.env };
  for (const variable of exec.env ?? []) env[variable.name] = variable.value;
  env.KUBERNETES_EXEC_INFO = JSON.stringify({
    apiVersion: exec.apiVersion,
    kind: "ExecCredential",
    spec,
  });
  return new Promise((resolve, reject) => {
    // An exec plugin is rare: node:child_process is taken only for one.
    process
      .getBuiltinModule("node:child_process")
      .execFile(
        exec.command,
        [...(exec.args ?? [])],
        { env, timeout: EXEC_TIMEOUT_MS, maxBuffer: MAX_EXEC_OUTPUT_BYTES, encoding: "utf8" },
        (error, stdout) => {
          if (error) {
            const code = (error as NodeJS.ErrnoException).code;
            // Its output may hold a credential: say only how it ended.
            const why =
              code === "ENOENT"
                ? `was not found${exec.installHint ? `; ${exec.installHint}` : "; install it or fix command"}`
                : error.killed
                  ? `did not finish within ${EXEC_TIMEOUT_MS / 1000} s`
                  : `failed (exit code ${typeof code === "number" ? code : ((error as { code?: unknown }).code ?? "?")}); run it yourself to see why`;
            reject(new Error(`${where} ${why}`));
            return;
          }
          try {
            resolve(parseExecCredential(stdout, exec.apiVersion, where));
          } catch (parseError) {
            reject(parseError);
          }
        },
      );
  });
}

/** The credential an exec plugin printed; the error names what is wrong, never a value. */
export function parseExecCredential(
  output: string,
  apiVersion: string,
  where = "the exec credential plugin",
): ExecResult {
  let document: unknown;
  try {
    document = JSON.parse(output);
  } catch {
    throw new Error(`${where} printed something that is not JSON; it must print an ExecCredential`);
  }
  const credential = document as {
    apiVersion?: unknown;
    kind?: unknown;
    status?: {
      token?: unknown;
      clientCertificateData?: unknown;
      clientKeyData?: unknown;
      expirationTimestamp?: unknown;
    };
  } | null;
  if (credential?.kind !== "ExecCredential" || credential.apiVersion !== apiVersion) {
    throw new Error(`${where} did not print an ExecCredential of ${apiVersion}`);
  }
  const status = credential.status ?? {};
  const token = typeof status.token === "string" && status.token !== "" ? status.token : undefined;
  const cert =
    typeof status.clientCertificateData === "string" ? status.clientCertificateData : undefined;
  const key = typeof status.clientKeyData === "string" ? status.clientKeyData : undefined;
  if ((cert === undefined) !== (key === undefined)) {
    throw new Error(`${where} gave only one of clientCertificateData and clientKeyData`);
  }
  if (token === undefined && cert === undefined) {
    throw new Error(`${where} gave neither a token nor a client certificate`);
  }
  let expiresAt = Number.POSITIVE_INFINITY;
  if (status.expirationTimestamp !== undefined && status.expirationTimestamp !== null) {
    const at = Date.parse(String(status.expirationTimestamp));
    if (Number.isNaN(at))
      throw new Error(`${where} gave an expirationTimestamp that is not a time`);
    expiresAt = performance.now() + (at - Date.now());
  }
  return { token, cert, key, expiresAt };
}
