// Redaction across tenants, through the kit against the API server over HTTP: tenant A's Secrets of
// many values cannot evict tenant B's token from the redaction layer, a 6-character token is hidden
// in its own pool's texts, and an identity Secret of 70,000 values is refused before any per-value
// work, the event loop staying responsive.

import { CredentialsUnavailableError, DriverError, type PoolContext } from "@capi-ts/sdk";
import { EventResource, SecretResource } from "@capi-ts/sdk/runtime";
import { scaled } from "@capi-ts/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type Bed,
  condition,
  createCluster,
  createPool,
  eventually,
  getPool,
  ns,
  Pools,
  setClusterProvisioned,
  startBed,
} from "./support.js";

const B_TOKEN = "tenant-b-token-5Yq8ZrT2wX";
const C_TOKEN = "x7Kq2p";
/** Tenant A's hook reads these Secrets: 1,250 values in all, more than the old 1,024-value list. */
const A_SECRETS = 5;
const A_VALUES_PER_SECRET = 250;
const HUGE_SECRET = "tenant-d-huge";
const HUGE_VALUES = 70_000;

/** Which Secrets each tenant's Cluster uses (the hook routes by the pool's Cluster). */
const secretsOf: Record<string, string[]> = {
  "tenant-a": Array.from({ length: A_SECRETS }, (_, i) => `tenant-a-${i}`),
  "tenant-b": ["tenant-b-credentials"],
  "tenant-c": ["tenant-c-credentials"],
  "tenant-d": [HUGE_SECRET],
};
const resolved = new Set<string>();
const driverCalls = new Map<string, number>();

let bed: Bed;

async function writeSecret(name: string, data: Record<string, string>): Promise<void> {
  await bed.client.create(SecretResource, {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name, namespace: ns },
    data: Object.fromEntries(
      Object.entries(data).map(([key, value]) => [key, Buffer.from(value).toString("base64")]),
    ),
  });
}

async function tenantPool(cluster: string): Promise<string> {
  await createCluster(bed.client, cluster, false);
  await setClusterProvisioned(bed.client, cluster);
  return createPool(bed, { replicas: 1, clusterName: cluster });
}

/** Every message the kit wrote about the pool: its conditions and its Events. */
async function messages(name: string): Promise<string> {
  const pool = await getPool(bed, name);
  const events = await bed.client.list(EventResource, { namespace: ns });
  return JSON.stringify([
    pool.status?.conditions ?? [],
    events.items.filter((e) => e.involvedObject?.name === name).map((e) => e.message),
  ]);
}

/** Makes the kit reconcile the pool now (a metadata change is an event of the pool). */
async function poke(name: string): Promise<void> {
  await bed.client.mergePatch(
    Pools,
    { namespace: ns, name },
    { metadata: { annotations: { "test.capi-ts.io/poke": String(Date.now()) } } },
  );
}

beforeAll(async () => {
  bed = await startBed({
    wrapDriver: (driver) => ({
      ...driver,
      async getGroup(ctx: PoolContext<never>) {
        const token = (ctx.credentials as { token?: string } | undefined)?.token;
        const calls = (driverCalls.get(ctx.pool.clusterName) ?? 0) + 1;
        driverCalls.set(ctx.pool.clusterName, calls);
        if (token) {
          // As a cloud SDK does: its error quotes the credential it was given.
          throw DriverError.terminal(
            "CloudRefused",
            `the cloud refused access token ${token} (call ${calls})`,
          );
        }
        return driver.getGroup(ctx as never);
      },
    }),
    controller: {
      credentials: {
        async resolve({ pool, readSecret }) {
          const names = secretsOf[pool.clusterName];
          if (!names) throw new CredentialsUnavailableError(`no tenant ${pool.clusterName}`);
          let token: string | undefined;
          for (const name of names) {
            const data = await readSecret(pool.namespace, name);
            if (!data) throw new CredentialsUnavailableError(`Secret ${name} does not exist`);
            token ??= data.token;
          }
          resolved.add(pool.clusterName);
          return token ? { token } : {};
        },
      },
    },
  });
  await writeSecret("tenant-b-credentials", { token: B_TOKEN });
  await writeSecret("tenant-c-credentials", { token: C_TOKEN });
  for (const [i, name] of secretsOf["tenant-a"]?.entries() ?? []) {
    await writeSecret(
      name,
      Object.fromEntries(
        Array.from({ length: A_VALUES_PER_SECRET }, (_, j) => [
          `k${j}`,
          `tenant-a-value-${i}-${j}-padding`,
        ]),
      ),
    );
  }
}, 60_000);
afterAll(async () => {
  await bed?.stop();
});

describe("redaction of credentials across tenants", { timeout: scaled(60_000) }, () => {
  it("keeps tenant B's token out of B's conditions and Events after tenant A registered 1,250 values", async () => {
    const b = await tenantPool("tenant-b");
    await eventually(async () => {
      expect(condition(await getPool(bed, b), "Ready")?.message).toContain("call");
    });
    const a = await tenantPool("tenant-a");
    await eventually(() => expect(resolved.has("tenant-a")).toBe(true));
    await eventually(async () => expect(condition(await getPool(bed, a), "Ready")).toBeDefined());
    // B's driver fails again after A's values were registered, quoting its token.
    const before = driverCalls.get("tenant-b") ?? 0;
    await poke(b);
    await eventually(async () => {
      const ready = condition(await getPool(bed, b), "Ready");
      const call = Number(/\(call (\d+)\)/.exec(ready?.message ?? "")?.[1] ?? 0);
      expect(call).toBeGreaterThan(before);
    });
    const text = await messages(b);
    expect(text).toContain("access token [REDACTED]");
    expect(text).not.toContain(B_TOKEN);
    expect(text).not.toContain(Buffer.from(B_TOKEN).toString("base64"));
  });

  it("hides a 6-character token in its own pool's conditions and Events", async () => {
    const c = await tenantPool("tenant-c");
    await eventually(async () => {
      expect(condition(await getPool(bed, c), "Ready")?.message).toContain("call");
    });
    const text = await messages(c);
    expect(text).toContain("access token [REDACTED]");
    expect(text).not.toContain(C_TOKEN);
  });

  it("refuses an identity Secret of 70,000 values before any per-value work, the event loop answering", async () => {
    await writeSecret(
      HUGE_SECRET,
      Object.fromEntries(
        Array.from({ length: HUGE_VALUES }, (_, i) => [`k${i}`, `v${i.toString(36)}`]),
      ),
    );
    // A timer as the health probe's: the longest the event loop kept it waiting.
    let last = performance.now();
    let longestStall = 0;
    const probe = setInterval(() => {
      const now = performance.now();
      longestStall = Math.max(longestStall, now - last);
      last = now;
    }, 50);
    try {
      const d = await tenantPool("tenant-d");
      await eventually(async () => {
        const ready = condition(await getPool(bed, d), "Ready");
        expect(ready?.reason).toBe("CredentialsUnavailable");
        expect(ready?.message).toContain(`Secret ${ns}/${HUGE_SECRET} has ${HUGE_VALUES} values`);
        expect(ready?.message).toContain("256");
      });
    } finally {
      clearInterval(probe);
    }
    // Generous: the manager's /healthz fails past 5 s of a stalled loop; reading the Secret took
    // seconds when every value was registered one by one.
    expect(longestStall).toBeLessThan(5_000);
  });
});
