import type { KubernetesObject } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { redactText } from "../runtime/redact.js";
import type { ResourceDescriptor } from "../runtime/resource.js";
import {
  type CredentialsReader,
  CredentialsUnavailableError,
  type PoolCredentials,
  PoolCredentialsCache,
} from "./credentials.js";

const pool = { namespace: "team-a", name: "pool-1", uid: "u1", clusterName: "c1" };
const Identities: ResourceDescriptor<KubernetesObject & { spec?: { secretRef?: string } }> = {
  group: "infrastructure.acme.io",
  version: "v1",
  kind: "AcmeClusterIdentity",
  plural: "acmeclusteridentities",
  scope: "Cluster",
};

/** Secrets and identities in memory; `cached` says which Secrets the watched cache holds. */
function reader(state: {
  secrets: Map<string, { data: Record<string, string>; resourceVersion: string }>;
  identities: Map<string, KubernetesObject & { spec?: { secretRef?: string } }>;
  cached: Set<string>;
}): CredentialsReader {
  return {
    async secret(namespace, name) {
      const secret = state.secrets.get(`${namespace}/${name}`);
      return secret && { metadata: { resourceVersion: secret.resourceVersion }, data: secret.data };
    },
    async cachedSecretVersion(namespace, name) {
      const key = `${namespace}/${name}`;
      return state.cached.has(key) ? state.secrets.get(key)?.resourceVersion : undefined;
    },
    async object<T extends KubernetesObject>(
      resource: ResourceDescriptor<T>,
      key: { name: string },
    ) {
      expect(resource).toBe(Identities);
      return state.identities.get(key.name) as T | undefined;
    },
  };
}

const b64 = (text: string) => Buffer.from(text).toString("base64");

describe("PoolCredentialsCache", () => {
  const signal = new AbortController().signal;
  // An identity object (cluster-scoped, as CAPA's AWSClusterStaticIdentity) names the Secret.
  const hook: PoolCredentials = {
    maxAgeMs: 1000,
    async resolve({ readObject, readSecret }) {
      const identity = await readObject(Identities, { name: "shared" });
      const ref = identity?.spec?.secretRef;
      if (!ref) throw new CredentialsUnavailableError("identity shared names no Secret");
      const data = await readSecret("acme-system", ref);
      return { key: data?.key };
    },
  };

  it("resolves through an identity object, then keeps the result until the watched Secret changes", async () => {
    const state = {
      secrets: new Map([
        ["acme-system/creds", { data: { key: b64("key-0123456789") }, resourceVersion: "1" }],
      ]),
      identities: new Map([
        ["shared", { metadata: { name: "shared" }, spec: { secretRef: "creds" } }],
      ]),
      cached: new Set(["acme-system/creds"]),
    };
    const cache = new PoolCredentialsCache(hook);
    const input = { pool, infrastructureCluster: undefined, reader: reader(state), signal };
    expect(await cache.resolve({ ...input, now: 0 })).toEqual({ key: "key-0123456789" });
    // Registered as a secret the moment it was read.
    expect(redactText("the key is key-0123456789")).toBe("the key is [REDACTED]");
    state.secrets.set("acme-system/creds", {
      data: { key: b64("key-rotated-000") },
      resourceVersion: "1",
    });
    expect(await cache.resolve({ ...input, now: 10 })).toEqual({ key: "key-0123456789" });
    state.secrets.set("acme-system/creds", {
      data: { key: b64("key-rotated-000") },
      resourceVersion: "2",
    });
    expect(await cache.resolve({ ...input, now: 20 })).toEqual({ key: "key-rotated-000" });
    expect(cache.poolsReadingSecret("acme-system", "creds")).toEqual([
      { namespace: "team-a", name: "pool-1" },
    ]);
  });

  it("resolves again after maxAgeMs for a Secret outside the watch, after forget, and on a new InfraCluster", async () => {
    const state = {
      secrets: new Map([
        ["acme-system/creds", { data: { key: b64("first-key-0000") }, resourceVersion: "1" }],
      ]),
      identities: new Map([
        ["shared", { metadata: { name: "shared" }, spec: { secretRef: "creds" } }],
      ]),
      cached: new Set<string>(),
    };
    const cache = new PoolCredentialsCache(hook);
    const input = { pool, reader: reader(state), signal };
    const infra = (resourceVersion: string) => ({ metadata: { name: "c1", resourceVersion } });
    await cache.resolve({ ...input, infrastructureCluster: infra("1"), now: 0 });
    state.secrets.set("acme-system/creds", {
      data: { key: b64("second-key-000") },
      resourceVersion: "2",
    });
    expect(await cache.resolve({ ...input, infrastructureCluster: infra("1"), now: 999 })).toEqual({
      key: "first-key-0000",
    });
    expect(await cache.resolve({ ...input, infrastructureCluster: infra("1"), now: 1000 })).toEqual(
      {
        key: "second-key-000",
      },
    );
    state.secrets.set("acme-system/creds", {
      data: { key: b64("third-key-0000") },
      resourceVersion: "3",
    });
    expect(await cache.resolve({ ...input, infrastructureCluster: infra("2"), now: 1001 })).toEqual(
      {
        key: "third-key-0000",
      },
    );
    state.secrets.set("acme-system/creds", {
      data: { key: b64("fourth-key-000") },
      resourceVersion: "4",
    });
    cache.forget(pool);
    expect(await cache.resolve({ ...input, infrastructureCluster: infra("2"), now: 1002 })).toEqual(
      {
        key: "fourth-key-000",
      },
    );
  });

  it("says what is missing, wraps any other failure, keeps nothing, and refuses an oversized Secret", async () => {
    const state = {
      secrets: new Map<string, { data: Record<string, string>; resourceVersion: string }>(),
      identities: new Map<string, KubernetesObject & { spec?: { secretRef?: string } }>(),
      cached: new Set<string>(),
    };
    const cache = new PoolCredentialsCache(hook);
    const input = { pool, infrastructureCluster: undefined, reader: reader(state), signal, now: 0 };
    await expect(cache.resolve(input)).rejects.toThrow("identity shared names no Secret");
    const failing = new PoolCredentialsCache({
      resolve: () => {
        throw new TypeError("boom");
      },
    });
    const error = await failing.resolve(input).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CredentialsUnavailableError);
    expect((error as Error).message).toBe("the credentials hook failed: boom");
    state.identities.set("shared", { metadata: { name: "shared" }, spec: { secretRef: "big" } });
    state.secrets.set("acme-system/big", {
      data: { key: "A".repeat(3 << 20) },
      resourceVersion: "1",
    });
    await expect(cache.resolve(input)).rejects.toThrow(
      /Secret acme-system\/big holds \d+ bytes, more than 1048576/,
    );
    expect(() => new PoolCredentialsCache({ resolve: () => 1, maxAgeMs: 0 })).toThrow(/maxAgeMs/);
  });

  it("refuses a Secret of 1.4 MiB (decoded, as the API server counts) and one of more than 256 values", async () => {
    const read = new PoolCredentialsCache({
      async resolve({ readSecret }) {
        return readSecret("acme-system", "creds");
      },
    });
    const state = {
      secrets: new Map<string, { data: Record<string, string>; resourceVersion: string }>([
        // Two values of 0.7 MiB: 1.87 MB of base64, which the old check (base64 over 2 MiB) let in.
        [
          "acme-system/creds",
          {
            data: { a: b64("a".repeat(734_003)), b: b64("b".repeat(734_003)) },
            resourceVersion: "1",
          },
        ],
      ]),
      identities: new Map(),
      cached: new Set<string>(),
    };
    const input = { pool, infrastructureCluster: undefined, reader: reader(state), signal, now: 0 };
    await expect(read.resolve(input)).rejects.toThrow(
      "Secret acme-system/creds holds 1468006 bytes, more than 1048576 (1 MiB): not read as credentials",
    );
    state.secrets.set("acme-system/creds", {
      data: Object.fromEntries(Array.from({ length: 257 }, (_, i) => [`k${i}`, b64(`v${i}`)])),
      resourceVersion: "2",
    });
    const error = await read.resolve({ ...input, now: 1 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CredentialsUnavailableError);
    expect((error as Error).message).toBe(
      "Secret acme-system/creds has 257 values, more than the 256 a Secret read as credentials may have: not read as credentials; keep only the keys the credentials need",
    );
  });

  it.each([".", "..", "a/b", "a%2Fb", "", "x".repeat(254), "Upper"])(
    "refuses the identity name %j before any request",
    async (name) => {
      const requested: string[] = [];
      const cache = new PoolCredentialsCache({
        async resolve({ readSecret, readObject }) {
          await readObject(Identities, { name }).catch(() => undefined);
          return readSecret(pool.namespace, name);
        },
      });
      const error = await cache
        .resolve({
          pool,
          infrastructureCluster: undefined,
          signal,
          now: 0,
          reader: {
            async secret(namespace, secret) {
              requested.push(`${namespace}/${secret}`);
              return undefined;
            },
            cachedSecretVersion: async () => undefined,
            async object(_resource, key) {
              requested.push(key.name);
              return undefined;
            },
          },
        })
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(CredentialsUnavailableError);
      expect((error as Error).message).toMatch(
        /^the credentials name a Secret whose name is invalid: /,
      );
      // "Upper" is a valid path segment (readObject lets it through) but no Secret's name.
      expect(requested).toEqual(name === "Upper" ? ["Upper"] : []);
    },
  );

  it("holds what it read for redaction until the pool is released, and not after", async () => {
    const state = {
      secrets: new Map([
        ["acme-system/creds", { data: { key: b64("released-key-0123") }, resourceVersion: "1" }],
      ]),
      identities: new Map([
        ["shared", { metadata: { name: "shared" }, spec: { secretRef: "creds" } }],
      ]),
      cached: new Set<string>(),
    };
    const cache = new PoolCredentialsCache(hook);
    await cache.resolve({
      pool,
      infrastructureCluster: undefined,
      reader: reader(state),
      signal,
      now: 0,
    });
    cache.forget(pool);
    // Rejected credentials stay hidden: the texts saying so are written after.
    expect(redactText("key released-key-0123")).toBe("key [REDACTED]");
    cache.release(pool);
    expect(redactText("key released-key-0123")).toBe("key released-key-0123");
  });
});
