// Per-pool credentials: the controller's `credentials` hook reads a Secret the Cluster's
// infrastructure object names, the driver gets them as `ctx.credentials`; a missing Secret, a cloud
// that rejects them and a fixed Secret, against the API server over HTTP.

import type { FakeCloudGroupSettings, FakeCloudMachinePoolSpec } from "@capi-ts/examples";
import {
  CredentialsUnavailableError,
  DriverError,
  type PoolContext,
  type PoolDriver,
} from "@capi-ts/sdk";
import { EventResource, SecretResource } from "@capi-ts/sdk/runtime";
import { DevClusterResource, scaled } from "@capi-ts/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type Bed,
  CLUSTER,
  condition,
  converged,
  createPool,
  eventually,
  getPool,
  groupName,
  ns,
  startBed,
} from "./support.js";

const SECRET_ANNOTATION = "test.capi-ts.io/credentials-secret";
const SECRET = "cloud-credentials";
const FIRST_TOKEN = "first-token-0123456789";
const SECOND_TOKEN = "second-token-9876543210";
const THIRD_TOKEN = "third-token-5647382910";

/** The tokens the cloud accepts; the driver refuses every call made with another. */
let accepted = new Set([FIRST_TOKEN]);
let resolutions = 0;
const seen: { token?: string; infrastructureCluster?: string }[] = [];

type Credentials = { token: string };

function tokenChecked(
  driver: PoolDriver<FakeCloudMachinePoolSpec, FakeCloudGroupSettings>,
): PoolDriver<FakeCloudMachinePoolSpec, FakeCloudGroupSettings> {
  const check = (ctx: PoolContext<FakeCloudMachinePoolSpec>) => {
    const credentials = ctx.credentials as Credentials | undefined;
    seen.push({
      ...(credentials ? { token: credentials.token } : {}),
      ...(ctx.infrastructureCluster?.metadata?.name
        ? { infrastructureCluster: ctx.infrastructureCluster.metadata.name }
        : {}),
    });
    if (!credentials || !accepted.has(credentials.token)) {
      throw DriverError.credentialsRejected("the cloud refused the access token (401)");
    }
  };
  return new Proxy(driver, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver);
      if (
        typeof value !== "function" ||
        property === "templateInputs" ||
        property === "groupSettings"
      ) {
        return value;
      }
      return (ctx: PoolContext<FakeCloudMachinePoolSpec>, ...rest: unknown[]) => {
        check(ctx);
        return value.call(target, ctx, ...rest);
      };
    },
  });
}

async function writeSecret(bed: Bed, token: string): Promise<void> {
  const body = {
    apiVersion: "v1",
    kind: "Secret",
    // Labelled as CAPI labels a Cluster's Secrets: the kit's Secret watch sees its changes.
    metadata: { name: SECRET, namespace: ns, labels: { "cluster.x-k8s.io/cluster-name": CLUSTER } },
    data: { token: Buffer.from(token).toString("base64") },
  };
  try {
    await bed.client.create(SecretResource, body);
  } catch {
    await bed.client.mergePatch(
      SecretResource,
      { namespace: ns, name: SECRET },
      { data: body.data },
    );
  }
}

let bed: Bed;

beforeAll(async () => {
  bed = await startBed({
    wrapDriver: tokenChecked,
    controller: {
      infrastructureCluster: DevClusterResource,
      credentials: {
        async resolve({ infrastructureCluster, readSecret, pool }) {
          resolutions++;
          const name = infrastructureCluster?.metadata?.annotations?.[SECRET_ANNOTATION];
          if (!name) {
            throw new CredentialsUnavailableError(
              `the Cluster's infrastructure object names no Secret (annotation ${SECRET_ANNOTATION})`,
            );
          }
          const data = await readSecret(pool.namespace, name);
          if (!data?.token) {
            throw new CredentialsUnavailableError(
              `Secret ${pool.namespace}/${name} has no key "token"`,
            );
          }
          return { token: data.token } satisfies Credentials;
        },
      },
    },
  });
  // The bed made the Cluster's DevCluster provisioned; it now names the Secret, as an InfraCluster's
  // identity reference would.
  await bed.client.mergePatch(
    DevClusterResource,
    { namespace: ns, name: CLUSTER },
    { metadata: { annotations: { [SECRET_ANNOTATION]: SECRET } } },
  );
}, 60_000);
afterAll(async () => {
  await bed?.stop();
});

/** Every message the kit wrote about the pool: its conditions and its Events. */
async function messages(name: string): Promise<string> {
  const pool = await getPool(bed, name);
  const events = await bed.client.list(EventResource, { namespace: ns });
  return JSON.stringify([
    pool.status?.conditions ?? [],
    events.items.filter((e) => e.involvedObject?.name === name).map((e) => e.message),
  ]);
}

describe("machinePoolController with a credentials hook", { timeout: scaled(60_000) }, () => {
  let name: string;

  it("waits with CredentialsUnavailable, naming what is missing, and calls no cloud", async () => {
    name = await createPool(bed, { replicas: 2 });
    await eventually(async () => {
      const ready = condition(await getPool(bed, name), "Ready");
      expect(ready?.reason).toBe("CredentialsUnavailable");
      expect(ready?.message).toContain(`Secret ${ns}/${SECRET} has no key "token"`);
    });
    expect(seen).toEqual([]);
    expect(bed.cloud.inspect.providerIds(groupName(name))).toEqual([]);
  });

  it("converges once the Secret exists, the driver seeing the credentials and the InfraCluster", async () => {
    await writeSecret(bed, FIRST_TOKEN);
    await converged(bed, name, 2);
    expect(seen.length).toBeGreaterThan(0);
    expect(seen.every((s) => s.token === FIRST_TOKEN && s.infrastructureCluster === CLUSTER)).toBe(
      true,
    );
  });

  it("resolves once while nothing it read changes", async () => {
    const before = resolutions;
    const calls = seen.length;
    // Resyncs run every 400 ms: wait until the driver was called again several times.
    await eventually(() => expect(seen.length).toBeGreaterThan(calls + 6));
    expect(resolutions).toBe(before);
  });

  it("reports rejected credentials, resolves them again, and recovers when the Secret is fixed", async () => {
    accepted = new Set([SECOND_TOKEN]);
    await eventually(async () => {
      expect(condition(await getPool(bed, name), "Ready")?.reason).toBe("CredentialsRejected");
    });
    const rejectedAt = resolutions;
    await eventually(() => expect(resolutions).toBeGreaterThan(rejectedAt));
    await writeSecret(bed, SECOND_TOKEN);
    await converged(bed, name, 2);
    expect(seen.at(-1)?.token).toBe(SECOND_TOKEN);
  });

  it("resolves again when the Secret it read changes, with no rejection first", async () => {
    // Both work: only the Secret's change can make the kit pick the new one up.
    accepted = new Set([SECOND_TOKEN, THIRD_TOKEN]);
    const before = resolutions;
    await writeSecret(bed, THIRD_TOKEN);
    // The next calls carry the new token; had the kit kept the old one, they would be refused.
    await eventually(() => expect(seen.at(-1)?.token).toBe(THIRD_TOKEN));
    expect(resolutions).toBe(before + 1);
    await converged(bed, name, 2);
  });

  it("never writes a credential into a condition or an Event", async () => {
    const text = await messages(name);
    expect(text).not.toContain(FIRST_TOKEN);
    expect(text).not.toContain(SECOND_TOKEN);
    expect(text).not.toContain(THIRD_TOKEN);
    expect(text).not.toContain(Buffer.from(FIRST_TOKEN).toString("base64"));
  });
});
