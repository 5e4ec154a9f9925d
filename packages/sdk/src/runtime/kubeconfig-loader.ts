/**
 * The operator's own kubeconfig, loaded by the SDK (not by `@kubernetes/client-node`, whose
 * `KubeConfig` pulls its whole generated API into the heap at start): `--kubeconfig`, the `KUBECONFIG`
 * list merged as kubectl merges it, the in-cluster service account, `~/.kube/config`. Only this
 * kubeconfig may name files and exec credential plugins; a workload cluster's kubeconfig from a Secret
 * is data, parsed by `parseWorkloadKubeconfig` into a {@link Kubeconfig} that may not.
 *
 * @module
 */
import { existsSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { delimiter, dirname, isAbsolute, join, resolve, sep } from "node:path";
import { CORE_SCHEMA, load } from "js-yaml";

/** A cluster entry: where the API server is and how its certificate is checked. */
export interface KubeconfigCluster {
  /** The entry's name. */
  readonly name: string;
  /** `https://host[:port]` (or `http://` for a local test server). */
  readonly server: string;
  /** `certificate-authority-data`: base64 of the CA bundle (PEM). */
  readonly caData?: string | undefined;
  /** `certificate-authority`: a CA bundle file (operator kubeconfigs only). */
  readonly caFile?: string | undefined;
  /** `insecure-skip-tls-verify`: the server's certificate is not checked. */
  readonly skipTLSVerify: boolean;
  /** `tls-server-name`: the name the server's certificate is checked against. */
  readonly tlsServerName?: string | undefined;
  /** `proxy-url`: an `http://` or `https://` proxy (operator kubeconfigs only). */
  readonly proxyUrl?: string | undefined;
}

/** An exec credential plugin (`users[].user.exec`), as client-go runs it. */
export interface KubeconfigExec {
  /** `client.authentication.k8s.io/v1` or `…/v1beta1`: the ExecCredential version it speaks. */
  readonly apiVersion: string;
  /** The program; a relative path with a separator is taken from the kubeconfig's folder. */
  readonly command: string;
  /** Its arguments. */
  readonly args?: readonly string[] | undefined;
  /** Extra environment variables. */
  readonly env?: readonly { readonly name: string; readonly value: string }[] | undefined;
  /** Shown when the program cannot be found. */
  readonly installHint?: string | undefined;
  /** Pass the cluster's server and CA to the plugin in `KUBERNETES_EXEC_INFO`. */
  readonly provideClusterInfo?: boolean | undefined;
  /** `Never`, `IfAvailable` or `Always`; a controller has no terminal, so `Always` is refused. */
  readonly interactiveMode?: string | undefined;
}

/** A user entry: the credentials sent to the server. */
export interface KubeconfigUser {
  /** The entry's name. */
  readonly name: string;
  /** A bearer token. */
  readonly token?: string | undefined;
  /** A file holding a bearer token, read again as it rotates (operator kubeconfigs only). */
  readonly tokenFile?: string | undefined;
  /** `client-certificate-data`: base64 of a PEM certificate. */
  readonly certData?: string | undefined;
  /** `client-certificate`: a PEM certificate file (operator kubeconfigs only). */
  readonly certFile?: string | undefined;
  /** `client-key-data`: base64 of a PEM key. */
  readonly keyData?: string | undefined;
  /** `client-key`: a PEM key file (operator kubeconfigs only). */
  readonly keyFile?: string | undefined;
  /** Basic authentication user name. */
  readonly username?: string | undefined;
  /** Basic authentication password. */
  readonly password?: string | undefined;
  /** An exec credential plugin (operator kubeconfigs only). */
  readonly exec?: KubeconfigExec | undefined;
  /** An auth-provider entry; kept so that using it fails with a clear error (kubectl removed them). */
  readonly authProvider?: { readonly name?: string } | undefined;
}

/** A context entry: a cluster, a user and a default namespace. */
export interface KubeconfigContext {
  /** The entry's name. */
  readonly name: string;
  /** The cluster entry's name. */
  readonly cluster: string;
  /** The user entry's name (empty: no credentials). */
  readonly user: string;
  /** The default namespace of the context. */
  readonly namespace?: string | undefined;
}

/** What a {@link Kubeconfig} is made of. */
export interface KubeconfigInit {
  /** Cluster entries. */
  readonly clusters: readonly KubeconfigCluster[];
  /** User entries. */
  readonly users: readonly KubeconfigUser[];
  /** Context entries. */
  readonly contexts: readonly KubeconfigContext[];
  /** The context in use. */
  readonly currentContext: string;
  /**
   * Whether the credentials may come from local files and exec plugins: true for the operator's own
   * kubeconfig (the default), false for one read from a Secret.
   */
  readonly localCredentials?: boolean;
}

/**
 * A kubeconfig as the SDK's client uses it: what {@link loadKubeconfig} returns and `KubeClient`,
 * `Manager` and the patch helper take (they take `@kubernetes/client-node`'s `KubeConfig` too). Its
 * accessors have client-node's names, so code written against one reads the other.
 *
 * @example
 * ```ts
 * const kubeconfig = loadKubeconfig(); // --kubeconfig aside: $KUBECONFIG, in-cluster, ~/.kube/config
 * const manager = new Manager({ kubeConfig: kubeconfig, name: "foo-provider" });
 * ```
 */
export class Kubeconfig {
  /** Cluster entries. */
  readonly clusters: readonly KubeconfigCluster[];
  /** User entries. */
  readonly users: readonly KubeconfigUser[];
  /** Context entries. */
  readonly contexts: readonly KubeconfigContext[];
  /** The context in use (see {@link Kubeconfig.setCurrentContext}). */
  currentContext: string;
  /** Whether files and exec plugins may supply credentials (false for a Secret's kubeconfig). */
  readonly localCredentials: boolean;

  /** Builds one from its entries; nothing is read or checked until a client uses it. */
  constructor(init: KubeconfigInit) {
    this.clusters = [...init.clusters];
    this.users = [...init.users];
    this.contexts = [...init.contexts];
    this.currentContext = init.currentContext;
    this.localCredentials = init.localCredentials ?? true;
  }

  /** The name of the context in use. */
  getCurrentContext(): string {
    return this.currentContext;
  }

  /** Uses another context; throws when there is none of that name. */
  setCurrentContext(name: string): void {
    if (!this.getContextObject(name)) {
      throw new Error(
        `the kubeconfig has no context named "${name}"; pick one of: ${this.contexts.map((c) => c.name).join(", ") || "(none)"}`,
      );
    }
    this.currentContext = name;
  }

  /** The context entry of that name, or null. */
  getContextObject(name: string): KubeconfigContext | null {
    return this.contexts.find((context) => context.name === name) ?? null;
  }

  /** The cluster of the current context, or null. */
  getCurrentCluster(): KubeconfigCluster | null {
    const context = this.getContextObject(this.currentContext);
    return this.clusters.find((cluster) => cluster.name === context?.cluster) ?? null;
  }

  /** The user of the current context, or null (no user: no credentials). */
  getCurrentUser(): KubeconfigUser | null {
    const context = this.getContextObject(this.currentContext);
    return this.users.find((user) => user.name === context?.user) ?? null;
  }

  /** The current context's namespace, if it sets one. */
  getCurrentNamespace(): string | undefined {
    return this.getContextObject(this.currentContext)?.namespace;
  }
}

/** Options of {@link loadKubeconfig}; every one defaults to the process's own. */
export interface LoadKubeconfigOptions {
  /** `--kubeconfig`: this file only (it must exist); otherwise the default chain. */
  readonly path?: string | undefined;
  /** A context to use instead of the file's current-context. */
  readonly context?: string | undefined;
  /** The environment (`KUBECONFIG`, `KUBERNETES_SERVICE_HOST`/`_PORT`, `HOME`). */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Where the in-cluster service account is mounted. */
  readonly serviceAccountDir?: string;
}

/** Where Kubernetes mounts a Pod's service account token, CA and namespace. */
export const SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount";

/**
 * Loads the operator's kubeconfig as controller-runtime's `GetConfig` does: `path` (the
 * `--kubeconfig` flag) if given; else the files of `KUBECONFIG` merged (kubectl's rules: the first
 * file to name an entry or set current-context wins, missing files are skipped); else the in-cluster
 * service account (`KUBERNETES_SERVICE_HOST` and `_PORT`, its token read again as it rotates); else
 * `~/.kube/config`. Throws an error that says what was looked at and what to do.
 *
 * @example
 * ```ts
 * const kubeconfig = loadKubeconfig({ path: flags.kubeconfig });
 * ```
 */
export function loadKubeconfig(options: LoadKubeconfigOptions = {}): Kubeconfig {
  const env = options.env ?? process.env;
  const pick = (config: Kubeconfig): Kubeconfig => {
    if (options.context !== undefined) config.setCurrentContext(options.context);
    return config;
  };
  if (options.path !== undefined && options.path !== "") {
    if (!existsSync(options.path)) {
      throw new Error(`the kubeconfig ${options.path} (--kubeconfig) does not exist; fix the path`);
    }
    return pick(kubeconfigFromFiles([options.path]));
  }
  const listed = (env.KUBECONFIG ?? "").split(delimiter).filter((path) => path !== "");
  if (listed.length > 0) {
    const found = listed.filter((path) => existsSync(path));
    if (found.length === 0) {
      throw new Error(
        `none of the files of KUBECONFIG exist (${listed.join(delimiter)}); fix KUBECONFIG or unset it`,
      );
    }
    return pick(kubeconfigFromFiles(found));
  }
  const serviceAccountDir = options.serviceAccountDir ?? SERVICE_ACCOUNT_DIR;
  if (env.KUBERNETES_SERVICE_HOST && env.KUBERNETES_SERVICE_PORT) {
    return pick(inClusterKubeconfig({ env, serviceAccountDir }));
  }
  const home = env.HOME ?? homedir();
  const fallback = join(home, ".kube", "config");
  if (existsSync(fallback)) return pick(kubeconfigFromFiles([fallback]));
  throw new Error(
    `no kubeconfig: pass --kubeconfig, set KUBECONFIG, run in a Pod (KUBERNETES_SERVICE_HOST) or write ${fallback}`,
  );
}

/**
 * The in-cluster kubeconfig of a Pod: `https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT`, the
 * mounted CA, the service account token (a file: the kubelet rotates it, the client reads it again),
 * the Pod's namespace.
 */
export function inClusterKubeconfig(
  options: {
    readonly env?: Readonly<Record<string, string | undefined>>;
    readonly serviceAccountDir?: string;
  } = {},
): Kubeconfig {
  const env = options.env ?? process.env;
  const dir = options.serviceAccountDir ?? SERVICE_ACCOUNT_DIR;
  const host = env.KUBERNETES_SERVICE_HOST;
  const port = env.KUBERNETES_SERVICE_PORT;
  if (!host || !port) {
    throw new Error(
      "not in a cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not both set",
    );
  }
  const tokenFile = join(dir, "token");
  if (!existsSync(tokenFile)) {
    throw new Error(
      `in-cluster: no service account token at ${tokenFile}; mount one (automountServiceAccountToken) or pass --kubeconfig`,
    );
  }
  const namespaceFile = join(dir, "namespace");
  const namespace = existsSync(namespaceFile)
    ? readFileSync(namespaceFile, "utf8").trim()
    : undefined;
  const hostPart = host.includes(":") ? `[${host}]` : host;
  const caFile = join(dir, "ca.crt");
  return new Kubeconfig({
    clusters: [
      {
        name: "in-cluster",
        server: `https://${hostPart}:${port}`,
        skipTLSVerify: false,
        ...(existsSync(caFile) ? { caFile } : {}),
      },
    ],
    users: [{ name: "in-cluster", tokenFile }],
    contexts: [
      {
        name: "in-cluster",
        cluster: "in-cluster",
        user: "in-cluster",
        ...(namespace ? { namespace } : {}),
      },
    ],
    currentContext: "in-cluster",
  });
}

type Entry = Record<string, unknown>;

/**
 * Kubeconfig files merged with kubectl's rules: per name, the first file's cluster, user and context
 * win; the first file that sets current-context wins. Relative file references resolve against the
 * folder of the file that holds them.
 */
export function kubeconfigFromFiles(paths: readonly string[]): Kubeconfig {
  const clusters = new Map<string, KubeconfigCluster>();
  const users = new Map<string, KubeconfigUser>();
  const contexts = new Map<string, KubeconfigContext>();
  let currentContext = "";
  for (const path of paths) {
    const where = `kubeconfig ${path}`;
    let document: unknown;
    try {
      document = load(readFileSync(path, "utf8"), { schema: CORE_SCHEMA });
    } catch (error) {
      throw new Error(`${where} is not valid YAML: ${(error as Error).message.split("\n")[0]}`);
    }
    if (document === undefined || document === null) continue;
    if (!isEntry(document)) throw new Error(`${where} is not a YAML mapping; fix the file`);
    const dir = dirname(resolve(path));
    for (const [name, cluster] of namedEntries(document, "clusters", "cluster", where)) {
      if (!clusters.has(name)) clusters.set(name, clusterOf(name, cluster, dir, where));
    }
    for (const [name, user] of namedEntries(document, "users", "user", where)) {
      if (!users.has(name)) users.set(name, userOf(name, user, dir, where));
    }
    for (const [name, context] of namedEntries(document, "contexts", "context", where)) {
      if (!contexts.has(name)) contexts.set(name, contextOf(name, context, where));
    }
    const current = document["current-context"];
    if (currentContext === "" && typeof current === "string") currentContext = current;
  }
  if (currentContext === "") {
    throw new Error(
      `kubeconfig ${paths.join(delimiter)} sets no current-context; set one (kubectl config use-context) or pass a context`,
    );
  }
  return new Kubeconfig({
    clusters: [...clusters.values()],
    users: [...users.values()],
    contexts: [...contexts.values()],
    currentContext,
  });
}

function isEntry(value: unknown): value is Entry {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function namedEntries(
  document: Entry,
  list: string,
  inner: string,
  where: string,
): [string, Entry][] {
  const entries = document[list];
  if (entries === undefined || entries === null) return [];
  if (!Array.isArray(entries)) throw new Error(`${where}: ${list} is not a list`);
  const out: [string, Entry][] = [];
  for (const entry of entries) {
    if (!isEntry(entry) || typeof entry.name !== "string" || !isEntry(entry[inner] ?? {})) {
      throw new Error(`${where}: an entry of ${list} has no name or no ${inner} mapping`);
    }
    out.push([entry.name, (entry[inner] ?? {}) as Entry]);
  }
  return out;
}

function text(entry: Entry, field: string, where: string): string | undefined {
  const value = entry[field];
  if (value === undefined || value === null || value === "") return undefined;
  if (typeof value !== "string") throw new Error(`${where}: ${field} is not a string`);
  return value;
}

function fileRef(entry: Entry, field: string, dir: string, where: string): string | undefined {
  const value = text(entry, field, where);
  return value === undefined || isAbsolute(value) ? value : join(dir, value);
}

function clusterOf(name: string, c: Entry, dir: string, where: string): KubeconfigCluster {
  const label = `${where}: cluster "${name}"`;
  const server = text(c, "server", label);
  if (server === undefined) throw new Error(`${label} has no server; set its https:// URL`);
  const skip = c["insecure-skip-tls-verify"];
  if (skip !== undefined && typeof skip !== "boolean") {
    throw new Error(`${label}: insecure-skip-tls-verify is not true or false`);
  }
  const proxyUrl = text(c, "proxy-url", label);
  if (proxyUrl !== undefined && !/^https?:\/\//.test(proxyUrl)) {
    throw new Error(
      `${label}: proxy-url must be an http:// or https:// proxy (socks is not supported)`,
    );
  }
  return {
    name,
    server,
    skipTLSVerify: skip === true,
    caData: text(c, "certificate-authority-data", label),
    caFile: fileRef(c, "certificate-authority", dir, label),
    tlsServerName: text(c, "tls-server-name", label),
    proxyUrl,
  };
}

function userOf(name: string, u: Entry, dir: string, where: string): KubeconfigUser {
  const label = `${where}: user "${name}"`;
  for (const field of ["as", "as-uid", "as-groups", "as-user-extra"]) {
    const value = u[field];
    if (value !== undefined && value !== null && value !== "") {
      throw new Error(
        `${label} asks for impersonation (${field}), which capi-ts does not do; remove it`,
      );
    }
  }
  const user: {
    -readonly [K in keyof KubeconfigUser]: KubeconfigUser[K];
  } = {
    name,
    token: text(u, "token", label),
    tokenFile: fileRef(u, "tokenFile", dir, label) ?? fileRef(u, "token-file", dir, label),
    certData: text(u, "client-certificate-data", label),
    certFile: fileRef(u, "client-certificate", dir, label),
    keyData: text(u, "client-key-data", label),
    keyFile: fileRef(u, "client-key", dir, label),
    username: text(u, "username", label),
    password: text(u, "password", label),
  };
  if (isEntry(u["auth-provider"])) {
    const provider = u["auth-provider"];
    user.authProvider = typeof provider.name === "string" ? { name: provider.name } : {};
  }
  if (u.exec !== undefined && u.exec !== null) {
    if (!isEntry(u.exec)) throw new Error(`${label}: exec is not a mapping`);
    user.exec = execOf(u.exec, dir, `${label} exec`);
  }
  return user;
}

function execOf(e: Entry, dir: string, label: string): KubeconfigExec {
  const apiVersion = text(e, "apiVersion", label);
  if (
    apiVersion !== "client.authentication.k8s.io/v1" &&
    apiVersion !== "client.authentication.k8s.io/v1beta1"
  ) {
    throw new Error(
      `${label}: apiVersion must be client.authentication.k8s.io/v1 or v1beta1 (got ${apiVersion ?? "none"})`,
    );
  }
  const command = text(e, "command", label);
  if (command === undefined) throw new Error(`${label} has no command`);
  const args = e.args ?? [];
  if (!Array.isArray(args) || args.some((arg) => typeof arg !== "string")) {
    throw new Error(`${label}: args is not a list of strings`);
  }
  const env = e.env ?? [];
  if (
    !Array.isArray(env) ||
    env.some((v) => !isEntry(v) || typeof v.name !== "string" || typeof v.value !== "string")
  ) {
    throw new Error(`${label}: env is not a list of {name, value} strings`);
  }
  const interactiveMode = text(e, "interactiveMode", label);
  if (apiVersion.endsWith("/v1") && interactiveMode === undefined) {
    throw new Error(
      `${label}: interactiveMode is required by client.authentication.k8s.io/v1; set Never`,
    );
  }
  // As client-go: a command with a path separator is relative to the kubeconfig; a bare name is on PATH.
  const resolvedCommand =
    !isAbsolute(command) && command.includes(sep) ? join(dir, command) : command;
  return {
    apiVersion,
    command: resolvedCommand,
    args: args as string[],
    env: env as { name: string; value: string }[],
    installHint: text(e, "installHint", label),
    provideClusterInfo: e.provideClusterInfo === true,
    interactiveMode,
  };
}

function contextOf(name: string, c: Entry, where: string): KubeconfigContext {
  const label = `${where}: context "${name}"`;
  const cluster = text(c, "cluster", label);
  if (cluster === undefined) throw new Error(`${label} names no cluster; set its cluster`);
  return {
    name,
    cluster,
    user: text(c, "user", label) ?? "",
    namespace: text(c, "namespace", label),
  };
}
