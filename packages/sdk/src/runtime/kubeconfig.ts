/**
 * A workload cluster's kubeconfig, as a `<cluster>-kubeconfig` Secret carries it, read as data: whoever
 * can write that Secret (in CAPI, often a tenant) must not make the manager run a program, read one of
 * its files, use a proxy, or send a credential in clear. The kubeconfig is parsed here (never by
 * `@kubernetes/client-node`, whose loader reads `token-file` while parsing) and a fresh
 * {@link Kubeconfig} is built from the embedded fields of its current context only, marked so that
 * the client refuses files and exec plugins even if one slipped through.
 *
 * @module
 */
import { CORE_SCHEMA, constructFromEvents, EVENT_ID, parseEvents } from "js-yaml";
import { Kubeconfig } from "./kubeconfig-loader.js";

/** Largest kubeconfig accepted, in bytes (the API server's own limit of a Secret). */
export const MAX_KUBECONFIG_BYTES = 1024 * 1024;

/** How a workload kubeconfig may reach its server. */
export interface WorkloadKubeconfigPolicy {
  /**
   * Accept `insecure-skip-tls-verify: true`: the server's certificate is not checked, so anyone on the
   * path can read the credentials. Default false.
   */
  readonly allowInsecureSkipTLSVerify?: boolean;
}

/** A kubeconfig was refused; the message names the field at fault and what to do, never a value. */
export class KubeconfigRefusedError extends Error {
  override readonly name = "KubeconfigRefusedError";
}

type Entry = Record<string, unknown>;

// Fields of a kubeconfig user that make a client run a program or read a file, with what to do.
const USER_REFUSALS: readonly (readonly [field: string, why: string])[] = [
  ["exec", "uses an exec credential plugin, which capi-ts never runs"],
  ["auth-provider", "uses an auth-provider, which capi-ts never runs"],
  ["token-file", "refers to a token file (token-file), which capi-ts never reads"],
  ["tokenFile", "refers to a token file (tokenFile), which capi-ts never reads"],
  [
    "client-certificate",
    "refers to a certificate file (client-certificate), which capi-ts never reads",
  ],
  ["client-key", "refers to a key file (client-key), which capi-ts never reads"],
  ["as", "asks for impersonation (as), which capi-ts does not do for workload clusters"],
  ["as-uid", "asks for impersonation (as-uid), which capi-ts does not do for workload clusters"],
  [
    "as-groups",
    "asks for impersonation (as-groups), which capi-ts does not do for workload clusters",
  ],
  [
    "as-user-extra",
    "asks for impersonation (as-user-extra), which capi-ts does not do for workload clusters",
  ],
];
const USER_FIX =
  "write a token or client certificate (token, client-certificate-data and client-key-data) into the Secret";

/**
 * Parses a workload cluster's kubeconfig and returns a {@link Kubeconfig} (without local
 * credentials: no file, no exec plugin) with only its current context's
 * server, `certificate-authority-data`, `tls-server-name`, token, `client-certificate-data` /
 * `client-key-data` and basic-auth fields. Throws {@link KubeconfigRefusedError} (its message starts
 * with `where`) when the text is over {@link MAX_KUBECONFIG_BYTES}, uses YAML anchors or aliases, is
 * not one kubeconfig document, or the current context's user or cluster has `exec`, an
 * `auth-provider`, a file reference, impersonation, `proxy-url`, a server that is not a bare
 * `https://host[:port]`, or `insecure-skip-tls-verify` (unless the policy allows it).
 */
export function parseWorkloadKubeconfig(
  text: string,
  where: string,
  policy: WorkloadKubeconfigPolicy = {},
): Kubeconfig {
  const refuse = (what: string): never => {
    throw new KubeconfigRefusedError(`kubeconfig ${where}: ${what}`);
  };
  if (Buffer.byteLength(text, "utf8") > MAX_KUBECONFIG_BYTES) {
    refuse(
      `is larger than ${MAX_KUBECONFIG_BYTES / 1024 / 1024} MiB; write a kubeconfig with only the workload cluster's context`,
    );
  }
  const document = loadSingleDocument(text, refuse);
  if (!isEntry(document)) {
    refuse(
      "is not a kubeconfig (a YAML mapping with clusters, users, contexts and current-context)",
    );
  }
  const config = document as Entry;
  const currentContext = config["current-context"];
  if (typeof currentContext !== "string" || currentContext === "") {
    refuse("has no current-context; set current-context to the workload cluster's context");
  }
  const contextName = currentContext as string;
  const context = namedEntry(config, "contexts", "context", contextName);
  if (!context) {
    refuse(
      `has no context named ${quoted(contextName)} (its current-context); add it or fix current-context`,
    );
  }
  const clusterName = (context as Entry).cluster;
  if (typeof clusterName !== "string" || clusterName === "") {
    refuse(`context ${quoted(contextName)} names no cluster; set its cluster`);
  }
  const cluster = namedEntry(config, "clusters", "cluster", clusterName as string);
  if (!cluster) {
    refuse(
      `has no cluster named ${quoted(clusterName as string)} (of context ${quoted(contextName)}); add it`,
    );
  }
  const userName = (context as Entry).user;
  if (userName !== undefined && typeof userName !== "string") {
    refuse(`context ${quoted(contextName)} has a user that is not a name`);
  }
  const user =
    typeof userName === "string" && userName !== ""
      ? namedEntry(config, "users", "user", userName)
      : {};
  if (!user) {
    refuse(
      `has no user named ${quoted(userName as string)} (of context ${quoted(contextName)}); add it`,
    );
  }
  const clusterLabel = `cluster ${quoted(clusterName as string)}`;
  const userLabel = `user ${quoted(typeof userName === "string" ? userName : "")}`;
  const c = cluster as Entry;
  const u = user as Entry;

  // The cluster: where the credentials go, and how that server is trusted.
  if (present(c["certificate-authority"])) {
    refuse(
      `${clusterLabel} refers to a CA file (certificate-authority), which capi-ts never reads; embed the CA as certificate-authority-data`,
    );
  }
  if (present(c["proxy-url"])) {
    refuse(
      `${clusterLabel} sets proxy-url, which capi-ts does not use for workload clusters; remove it and make the server reachable directly`,
    );
  }
  const skipVerify = c["insecure-skip-tls-verify"];
  if (skipVerify !== undefined && typeof skipVerify !== "boolean") {
    refuse(`${clusterLabel} has an insecure-skip-tls-verify that is not true or false`);
  }
  if (skipVerify === true && !policy.allowInsecureSkipTLSVerify) {
    refuse(
      `${clusterLabel} sets insecure-skip-tls-verify, which would send the credentials to any server on the path; embed the server's CA as certificate-authority-data (or enable allowInsecureSkipTLSVerify on the ClusterCache)`,
    );
  }
  const server = serverOf(c.server, clusterLabel, refuse);
  const caData = optionalString(c, "certificate-authority-data", clusterLabel, refuse);
  const tlsServerName = optionalString(c, "tls-server-name", clusterLabel, refuse);

  // The user: only credentials written into the Secret itself.
  for (const [field, why] of USER_REFUSALS) {
    if (present(u[field])) refuse(`${userLabel} ${why}; ${USER_FIX}`);
  }
  const token = optionalString(u, "token", userLabel, refuse);
  const certData = optionalString(u, "client-certificate-data", userLabel, refuse);
  const keyData = optionalString(u, "client-key-data", userLabel, refuse);
  if ((certData === undefined) !== (keyData === undefined)) {
    refuse(`${userLabel} has only one of client-certificate-data and client-key-data; write both`);
  }
  const username = optionalString(u, "username", userLabel, refuse);
  const password = optionalString(u, "password", userLabel, refuse);

  return new Kubeconfig({
    localCredentials: false,
    clusters: [
      {
        name: "workload",
        server,
        skipTLSVerify: skipVerify === true,
        ...(caData !== undefined ? { caData } : {}),
        ...(tlsServerName !== undefined ? { tlsServerName } : {}),
      },
    ],
    users: [
      {
        name: "workload",
        ...(token !== undefined ? { token } : {}),
        ...(certData !== undefined ? { certData } : {}),
        ...(keyData !== undefined ? { keyData } : {}),
        ...(username !== undefined ? { username } : {}),
        ...(password !== undefined ? { password } : {}),
      },
    ],
    contexts: [{ name: "workload", cluster: "workload", user: "workload" }],
    currentContext: "workload",
  });
}

/**
 * One YAML document, refused with anchors or aliases before any value is built: an alias bomb costs
 * the parser nothing then, and a kubeconfig never needs them (`kubectl config view --flatten` writes
 * none).
 */
function loadSingleDocument(text: string, refuse: (what: string) => never): unknown {
  let events: ReturnType<typeof parseEvents>;
  try {
    events = parseEvents(text, { maxDepth: 32 });
  } catch {
    // The parser's message quotes the text (a token, perhaps): say only what is wrong.
    return refuse("is not valid YAML; write the workload cluster's kubeconfig under data.value");
  }
  let documents = 0;
  for (const event of events) {
    if (event.type === EVENT_ID.DOCUMENT) documents++;
    if (event.type === EVENT_ID.ALIAS || ("anchorStart" in event && event.anchorStart >= 0)) {
      refuse(
        "uses YAML anchors or aliases, which capi-ts refuses; write the kubeconfig without them (kubectl config view --flatten --raw does)",
      );
    }
  }
  if (documents !== 1) {
    refuse(`holds ${documents} YAML documents; write exactly one kubeconfig`);
  }
  try {
    return constructFromEvents(events, { source: text, schema: CORE_SCHEMA, maxAliases: 0 })[0];
  } catch {
    return refuse("is not valid YAML; write the workload cluster's kubeconfig under data.value");
  }
}

function isEntry(value: unknown): value is Entry {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The `inner` mapping of the entry of `list` named `name` (`clusters[].cluster`, …). */
function namedEntry(config: Entry, list: string, inner: string, name: string): Entry | undefined {
  const entries = config[list];
  if (!Array.isArray(entries)) return undefined;
  for (const entry of entries) {
    if (isEntry(entry) && entry.name === name) {
      const value = entry[inner];
      return isEntry(value) ? value : undefined;
    }
  }
  return undefined;
}

function present(value: unknown): boolean {
  return value !== undefined && value !== null && value !== "";
}

function optionalString(
  entry: Entry,
  field: string,
  label: string,
  refuse: (what: string) => never,
): string | undefined {
  const value = entry[field];
  if (value === undefined || value === null || value === "") return undefined;
  if (typeof value !== "string") return refuse(`${label} has a ${field} that is not a string`);
  return value;
}

function serverOf(value: unknown, label: string, refuse: (what: string) => never): string {
  if (typeof value !== "string" || value === "") {
    return refuse(`${label} has no server; set it to the workload cluster's https:// URL`);
  }
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return refuse(`${label} has a server that is not a URL; set it to https://host[:port]`);
  }
  if (url.protocol !== "https:") {
    return refuse(
      `${label} has a server that is not https://, which would send the credentials in clear; use the API server's https:// URL`,
    );
  }
  if (url.username !== "" || url.password !== "") {
    return refuse(`${label} has credentials in its server URL; move them to the user entry`);
  }
  if ((url.pathname !== "/" && url.pathname !== "") || url.search !== "" || url.hash !== "") {
    return refuse(
      `${label} has a server with a path, query or fragment; set it to https://host[:port] only`,
    );
  }
  return url.origin;
}

/** A name from the kubeconfig, quoted when it is short and plain; otherwise not repeated. */
function quoted(name: string): string {
  return /^[A-Za-z0-9._@:/-]{1,63}$/.test(name) ? `'${name}'` : "(a name not shown)";
}
