import { scaled } from "@capi-ts/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type Bed,
  CLUSTER,
  Clusters,
  condition,
  converged,
  createPool,
  eventually,
  getPool,
  groupName,
  ns,
  setReplicas,
  startBed,
} from "./support.js";

let bed: Bed;

// A resync far beyond the test's timeouts: whatever converges here was triggered by a watch. The poll
// interval still drives convergence while the cloud works. The manager's sync period (informers
// re-announce every cached object) is short, as a provider's --sync-period is short next to its
// lifetime: a re-announced object that did not change must not reach a pool.
const SYNC_PERIOD_MS = 300;
beforeAll(async () => {
  bed = await startBed({
    controller: { resyncPeriodMs: 10 * 60_000 },
    manager: { syncPeriodMs: SYNC_PERIOD_MS },
  });
}, 60_000);
afterAll(async () => {
  await bed?.stop();
});

describe("machinePoolController: the watches it sets up", { timeout: scaled(40_000) }, () => {
  it("MachinePool changes reach the pool", async () => {
    const name = await createPool(bed, { replicas: 1 });
    await converged(bed, name, 1);
    await setReplicas(bed, name, 2);
    await converged(bed, name, 2, CLUSTER);
  });

  it("a rotated bootstrap Secret reaches the pool (new template version, no replacement)", async () => {
    const name = await createPool(bed, { replicas: 1 });
    await converged(bed, name, 1);
    const group = groupName(name);
    const before = bed.cloud.inspect.group(group)?.template.version;
    const token = await bed.core.bootstrap?.rotateToken({ namespace: ns, name });
    await eventually(() => {
      const template = bed.cloud.inspect.templates().find((t) => t.name === group);
      expect(template?.latestVersion).not.toBe(before);
      expect(template?.userData[template.latestVersion]).toContain(`token: ${token}`);
    }, 5000);
  });

  it("an informer resync reaches no pool at rest: no reconcile, no cloud read", async () => {
    const name = await createPool(bed, { replicas: 1 });
    await converged(bed, name, 1);
    const group = groupName(name);
    // The bootstrap Secret, the MachinePool, the Cluster and the pool are all re-announced every
    // sync period; none of them changed.
    await new Promise((r) => setTimeout(r, 2 * SYNC_PERIOD_MS));
    const mark = bed.cloud.lastCallSeq();
    await new Promise((r) => setTimeout(r, 5 * SYNC_PERIOD_MS));
    const reads = bed.cloud
      .calls({ afterSeq: mark })
      .filter((c) => JSON.stringify(c.args).includes(group))
      .map((c) => c.operation);
    expect(reads).toEqual([]);
  });

  it("pausing and unpausing the Cluster reaches every pool of the cluster", async () => {
    const a = await createPool(bed, { replicas: 1 });
    const b = await createPool(bed, { replicas: 1 });
    await converged(bed, a, 1);
    await converged(bed, b, 1);
    await bed.client.mergePatch(
      Clusters,
      { namespace: ns, name: CLUSTER },
      { spec: { paused: true } },
    );
    await eventually(async () => {
      for (const name of [a, b]) {
        expect(condition(await getPool(bed, name), "Paused")?.status).toBe("True");
      }
    }, 5000);
    await bed.client.mergePatch(
      Clusters,
      { namespace: ns, name: CLUSTER },
      { spec: { paused: false } },
    );
    await eventually(async () => {
      for (const name of [a, b]) {
        expect(condition(await getPool(bed, name), "Paused")?.status).toBe("False");
      }
    }, 5000);
  });
});
