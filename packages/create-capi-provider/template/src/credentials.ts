/**
 * Where each pool's cloud credentials come from: multi-tenancy as Cluster API defines it, with the
 * default credentials restricted as CAPA restricts its controller identity (`allowedNamespaces`). A
 * Cluster's infrastructure object (`FooCluster`, see src/cluster.ts) may name its own identity
 * (`spec.identityRef.name`: a Secret in the Cluster's namespace); a pool whose Cluster names none
 * uses the provider's default Secret only in the namespaces the admin listed
 * (`--default-credentials-namespaces`; none by default). The kit calls this once per pool and keeps
 * the client until the Secret changes or the cloud refuses it.
 */
import { CredentialsUnavailableError, type PoolCredentials } from "@capi-ts/sdk";
import type { CloudClient, ConnectCloud } from "./cloud.js";
import type { FooClusterObject } from "./cluster.js";

/** What the driver's context carries: the pool's connected client as `ctx.credentials`. */
export interface FooEnvironment {
  readonly credentials: CloudClient;
  readonly infrastructureCluster: FooClusterObject;
}

/** Options of {@link fooCredentials}. */
export interface FooCredentialsOptions {
  /** Builds a client from a Secret's `endpoint` and `token`. */
  readonly connect: ConnectCloud;
  /** The Secret of pools whose Cluster names no identity of its own. */
  readonly defaultSecret: { readonly namespace: string; readonly name: string };
  /**
   * The namespaces whose pools may use {@link FooCredentialsOptions.defaultSecret} (`*`: every
   * namespace). Empty: no pool may; each Cluster must name its own identity.
   */
  readonly defaultCredentialsNamespaces: readonly string[];
}

/** Parses `--default-credentials-namespaces` (comma-separated; `*` for every namespace). */
export function parseNamespaceList(value: string | undefined): string[] {
  return (value ?? "")
    .split(",")
    .map((namespace) => namespace.trim())
    .filter((namespace) => namespace !== "");
}

/** The controller's credentials hook (`machinePoolController(…, { credentials })`). */
export function fooCredentials(options: FooCredentialsOptions): PoolCredentials<FooEnvironment> {
  const allowed = new Set(options.defaultCredentialsNamespaces);
  return {
    async resolve({ infrastructureCluster, pool, readSecret }) {
      const identity = infrastructureCluster?.spec?.identityRef?.name;
      let secret: { namespace: string; name: string };
      if (typeof identity === "string" && identity !== "") {
        secret = { namespace: pool.namespace, name: identity };
      } else if (allowed.has("*") || allowed.has(pool.namespace)) {
        secret = options.defaultSecret;
      } else {
        throw new CredentialsUnavailableError(
          `the Cluster ${pool.namespace}/${pool.clusterName} names no identity and namespace ${pool.namespace} may not use the provider's default credentials: set spec.identityRef.name of its FooCluster to a Secret in ${pool.namespace} (keys endpoint and token), or have the provider's admin add ${pool.namespace} to --default-credentials-namespaces`,
        );
      }
      // readSecret refuses names that are not valid object names before any request.
      const data = await readSecret(secret.namespace, secret.name);
      if (!data) {
        throw new CredentialsUnavailableError(
          `Secret ${secret.namespace}/${secret.name} does not exist: create it with keys endpoint and token`,
        );
      }
      const missing = ["endpoint", "token"].filter((key) => !data[key]);
      if (missing.length > 0) {
        throw new CredentialsUnavailableError(
          `Secret ${secret.namespace}/${secret.name} has no ${missing.join(" or ")}`,
        );
      }
      return options.connect({ endpoint: data.endpoint ?? "", token: data.token ?? "" });
    },
  };
}
