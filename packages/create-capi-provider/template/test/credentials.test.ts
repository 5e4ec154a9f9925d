// The credentials hook as the kit calls it: the identity a Cluster's FooCluster names, and the
// default credentials only in the namespaces the admin listed (CAPA's allowedNamespaces).
import { type CredentialsRequest, CredentialsUnavailableError } from "@capi-ts/sdk";
import { describe, expect, it } from "vitest";
import type { CloudCredentials } from "../src/cloud.js";
import { type FooEnvironment, fooCredentials, parseNamespaceList } from "../src/credentials.js";
import { MemoryCloud } from "./memory-cloud.js";

const SECRETS: Record<string, Record<string, string>> = {
  "team-a/team-a-identity": { endpoint: "memory://team-a", token: "team-a-token-0123" },
  "foo-system/foo-credentials": { endpoint: "memory://default", token: "default-token-0123" },
};

function request(
  namespace: string,
  identity: string | undefined,
  reads: string[],
): CredentialsRequest<FooEnvironment> {
  return {
    pool: { namespace, name: "pool-1", uid: "u1", clusterName: "c1" },
    infrastructureCluster: identity ? { spec: { identityRef: { name: identity } } } : {},
    async readSecret(secretNamespace, name) {
      reads.push(`${secretNamespace}/${name}`);
      return SECRETS[`${secretNamespace}/${name}`];
    },
    async readObject() {
      return undefined;
    },
    signal: new AbortController().signal,
  };
}

describe("fooCredentials", () => {
  const connected: CloudCredentials[] = [];
  const hook = fooCredentials({
    connect: (credentials) => {
      connected.push(credentials);
      return new MemoryCloud();
    },
    defaultSecret: { namespace: "foo-system", name: "foo-credentials" },
    defaultCredentialsNamespaces: parseNamespaceList(" default , team-b"),
  });

  it("connects a pool whose Cluster names an identity with that identity, whatever its namespace", async () => {
    const reads: string[] = [];
    await hook.resolve(request("team-a", "team-a-identity", reads));
    expect(reads).toEqual(["team-a/team-a-identity"]);
    expect(connected.at(-1)).toEqual({ endpoint: "memory://team-a", token: "team-a-token-0123" });
  });

  it("gives the default credentials to a listed namespace only", async () => {
    const reads: string[] = [];
    await hook.resolve(request("default", undefined, reads));
    expect(reads).toEqual(["foo-system/foo-credentials"]);
    const error = await Promise.resolve(hook.resolve(request("team-c", undefined, reads))).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(CredentialsUnavailableError);
    expect((error as Error).message).toBe(
      "the Cluster team-c/c1 names no identity and namespace team-c may not use the provider's default credentials: set spec.identityRef.name of its FooCluster to a Secret in team-c (keys endpoint and token), or have the provider's admin add team-c to --default-credentials-namespaces",
    );
    expect(reads).toEqual(["foo-system/foo-credentials"]);
  });

  it("reads the list of namespaces as the flag gives it; none by default", () => {
    expect(parseNamespaceList(undefined)).toEqual([]);
    expect(parseNamespaceList("")).toEqual([]);
    expect(parseNamespaceList("a,,b ,*")).toEqual(["a", "b", "*"]);
  });
});
