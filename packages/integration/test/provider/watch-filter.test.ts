// R20: with a watch filter, the kit reconciles only pools labelled with it, whatever event (pool,
// MachinePool, Cluster, bootstrap Secret) brings a key to its queue.
import { scaled } from "@capi-ts/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type Bed,
  converged,
  createCluster,
  createPool,
  getPool,
  groupName,
  KitMachinePool,
  setReplicas,
  sleep,
  startBed,
} from "./support.js";

const WATCH_FILTER = "cluster.x-k8s.io/watch-filter";
let bed: Bed;

beforeAll(async () => {
  bed = await startBed({ manager: { watchFilterValue: "team-a" } });
}, 60_000);
afterAll(async () => {
  await bed?.stop();
});

describe("machinePoolController: the watch filter (R20)", { timeout: scaled(40_000) }, () => {
  it("never touches a pool of another team, even when its MachinePool and Cluster change", async () => {
    const team = { [WATCH_FILTER]: "team-b" };
    await createCluster(bed.client, "c-team-b", true, team);
    const name = await createPool(bed, { replicas: 1, clusterName: "c-team-b", labels: team });
    await sleep(500);
    await setReplicas(bed, name, 2); // a MachinePool event that maps to the pool
    await sleep(1000);
    const pool = await getPool(bed, name);
    expect(pool.metadata?.finalizers ?? []).not.toContain(KitMachinePool.finalizer);
    expect(pool.status?.conditions ?? []).toEqual([]);
    const group = groupName(name, "c-team-b");
    expect(bed.cloud.calls().filter((c) => JSON.stringify(c.args).includes(group))).toEqual([]);
  });

  it("reconciles a pool of its own team", async () => {
    const team = { [WATCH_FILTER]: "team-a" };
    await createCluster(bed.client, "c-team-a", true, team);
    const name = await createPool(bed, { replicas: 1, clusterName: "c-team-a", labels: team });
    await converged(bed, name, 1, "c-team-a");
  });
});
