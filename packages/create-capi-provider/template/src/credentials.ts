/**
 * Where each pool's cloud credentials come from: multi-tenancy as Cluster API defines it. A Cluster's
 * infrastructure object may name its own identity (`spec.identityRef.name`: a Secret in the Cluster's
 * namespace); every other pool uses the provider's default Secret (in the provider's namespace). The
 * kit calls this once per pool and keeps the client until the Secret changes or the cloud refuses it.
 */
import { CredentialsUnavailableError, type PoolCredentials } from "@capi-ts/sdk";
import type { CloudClient, ConnectCloud } from "./cloud.js";

/** What the driver's context carries: the pool's connected client as `ctx.credentials`. */
export interface FooEnvironment {
  readonly credentials: CloudClient;
}

/** Options of {@link fooCredentials}. */
export interface FooCredentialsOptions {
  /** Builds a client from a Secret's `endpoint` and `token`. */
  readonly connect: ConnectCloud;
  /** The Secret of pools whose Cluster names no identity of its own. */
  readonly defaultSecret: { readonly namespace: string; readonly name: string };
}

/** The controller's credentials hook (`machinePoolController(…, { credentials })`). */
export function fooCredentials(options: FooCredentialsOptions): PoolCredentials<FooEnvironment> {
  return {
    async resolve({ infrastructureCluster, pool, readSecret }) {
      const identity = (
        infrastructureCluster?.spec as { identityRef?: { name?: unknown } } | undefined
      )?.identityRef?.name;
      const secret =
        typeof identity === "string" && identity !== ""
          ? { namespace: pool.namespace, name: identity }
          : options.defaultSecret;
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
