import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { clearRequestLog, onRequestLog } from "../../../testing/test/support/request-log.js";
import {
  type Bed,
  CLUSTER,
  Clusters,
  condition,
  converged,
  createPool,
  eventually,
  getMachinePool,
  getPool,
  groupName,
  MANAGER,
  ns,
  Pools,
  setReplicas,
  sleep,
  startBed,
} from "./support.js";

let bed: Bed;

beforeAll(async () => {
  bed = await startBed();
}, 60_000);
afterAll(async () => {
  await bed?.stop();
});

describe("machinePoolController: lifecycle over the API server, core emulator and fake cloud", {
  timeout: 30_000,
}, () => {
  it("creates the group, publishes sorted IDs of every instance, marks provisioned, core copies them", async () => {
    const name = await createPool(bed, { replicas: 3 });
    const pool = await converged(bed, name, 3);
    expect(pool.metadata?.finalizers).toContain("kitmachinepool.infrastructure.cluster.x-k8s.io");
    expect(pool.status?.ready).toBe(true);
    expect(pool.status?.initialization?.provisioned).toBe(true);
    const ids = pool.spec?.providerIDList ?? [];
    expect([...ids].sort()).toEqual(ids);
    expect(ids.every((id) => id.startsWith("fake:///zone-"))).toBe(true);
    const mp = await getMachinePool(bed, name);
    expect(mp.spec?.providerIDList).toEqual(ids);
    // The group was created with the desired size, pinned to an explicit template version.
    const [create] = bed.cloud
      .calls({ operation: "createGroup" })
      .filter((c) => (c.args[0] as { name: string }).name === groupName(name));
    expect(create?.args[0]).toMatchObject({ desiredCapacity: 3, template: { version: 1 } });
  });

  it("scales up, down (oldest first, shrinking the group) and to zero", async () => {
    const name = await createPool(bed, { replicas: 2 });
    await converged(bed, name, 2);
    await setReplicas(bed, name, 4);
    await converged(bed, name, 4);
    const before = bed.cloud.inspect
      .instances({ group: groupName(name), states: ["running"] })
      .sort((a, b) => a.launchedAt - b.launchedAt);
    const mark = bed.cloud.lastCallSeq();
    await setReplicas(bed, name, 1);
    await converged(bed, name, 1);
    const terminations = bed.cloud.calls({ afterSeq: mark, operation: "terminateInstanceInGroup" });
    expect(terminations.length).toBe(3);
    expect(
      terminations.every(
        (c) => (c.args[1] as { decrementDesiredCapacity: boolean }).decrementDesiredCapacity,
      ),
    ).toBe(true);
    // A newest instance survives (delete policy Oldest).
    const survivor = bed.cloud.inspect.instances({ group: groupName(name), states: ["running"] });
    const newest = Math.max(...before.map((i) => i.launchedAt));
    expect(survivor).toHaveLength(1);
    expect(survivor[0]?.launchedAt).toBe(newest);
    expect(before.map((i) => i.id)).toContain(survivor[0]?.id);
    await setReplicas(bed, name, 0);
    const pool = await converged(bed, name, 0);
    expect(pool.spec?.providerIDList).toBeUndefined();
    expect(pool.status?.replicas).toBe(0);
    expect(pool.status?.ready).toBe(true);
  });

  it("makes no cloud call while the Cluster is paused, sets Paused, and resumes through the Cluster watch", async () => {
    const name = await createPool(bed, { replicas: 1 });
    await converged(bed, name, 1);
    await bed.client.mergePatch(
      Clusters,
      { namespace: ns, name: CLUSTER },
      { spec: { paused: true } },
    );
    await eventually(async () => {
      expect(condition(await getPool(bed, name), "Paused")?.status).toBe("True");
    });
    const mark = bed.cloud.lastCallSeq();
    clearRequestLog(bed.backend);
    await setReplicas(bed, name, 3);
    await sleep(1000);
    expect(bed.cloud.calls({ afterSeq: mark })).toEqual([]);
    onRequestLog(bed.backend, {}, (requests) => {
      const writes = requests.filter(
        (r) => r.fieldManager === MANAGER && !["get", "list", "watch"].includes(r.verb),
      );
      expect(writes).toEqual([]);
    });
    expect(bed.cloud.inspect.providerIds(groupName(name))).toHaveLength(1);
    await bed.client.mergePatch(
      Clusters,
      { namespace: ns, name: CLUSTER },
      { spec: { paused: false } },
    );
    const pool = await converged(bed, name, 3);
    expect(condition(pool, "Paused")).toMatchObject({ status: "False", reason: "NotPaused" });
  });

  it("sends zero API writes at steady state (resyncs read the cloud and write nothing)", async () => {
    const name = await createPool(bed, { replicas: 2 });
    await converged(bed, name, 2);
    await sleep(500);
    const ours = (r: { fieldManager?: string; userAgent?: string; verb: string }) =>
      (r.fieldManager === MANAGER || r.userAgent?.includes(MANAGER) === true) &&
      !["get", "list", "watch"].includes(r.verb);
    // The filter does see the controller's writes (it wrote while converging)…
    onRequestLog(bed.backend, {}, (requests) => {
      expect(requests.filter(ours).length).toBeGreaterThan(0);
    });
    clearRequestLog(bed.backend);
    const mark = bed.cloud.lastCallSeq();
    const poolVersion = (await getPool(bed, name)).metadata?.resourceVersion;
    await sleep(2000);
    // …and none at steady state: the log shows no write, and on any backend the pool is unchanged.
    onRequestLog(bed.backend, {}, (requests) => {
      expect(requests.filter(ours)).toEqual([]);
    });
    expect((await getPool(bed, name)).metadata?.resourceVersion).toBe(poolVersion);
    expect(bed.cloud.calls({ afterSeq: mark, mutating: true })).toEqual([]);
    // …while it did resync: the cloud was read.
    expect(bed.cloud.calls({ afterSeq: mark, operation: "describeGroup" }).length).toBeGreaterThan(
      0,
    );
  });

  it("survives API server faults on its writes (retries with backoff) and converges", async () => {
    const name = await createPool(bed, { replicas: 1 });
    await converged(bed, name, 1);
    // In-memory only (listed in notOnReal): fault injection.
    const api = bed.backend.capabilities.inMemory;
    if (!api) throw new Error("this test needs the in-memory server's fault injection");
    const faults = [
      api.faults.add({ verb: "patch", resource: "kitmachinepools", status: 500, count: 3 }),
      api.faults.add({
        verb: "patch",
        resource: "kitmachinepools",
        subresource: "status",
        status: 409,
        count: 2,
      }),
    ];
    try {
      await setReplicas(bed, name, 3);
      await converged(bed, name, 3);
      const failed = api
        .requests()
        .filter((r) => r.resource === "kitmachinepools" && r.verb === "patch" && r.status >= 400);
      expect(failed.length).toBeGreaterThan(0);
    } finally {
      for (const fault of faults) fault.remove();
    }
  });

  it("deletes a pool with instances still booting: group, instances and template go, then the finalizer", async () => {
    const name = await createPool(bed, { replicas: 3 });
    await eventually(() => {
      expect(bed.cloud.inspect.instances({ group: groupName(name) }).length).toBeGreaterThan(0);
    });
    await bed.client.delete(Pools, { namespace: ns, name });
    await eventually(async () => {
      await expect(getPool(bed, name)).rejects.toThrow();
    });
    expect(bed.cloud.inspect.group(groupName(name))).toBeUndefined();
    expect(bed.cloud.inspect.templates().filter((t) => t.name === groupName(name))).toEqual([]);
    expect(
      bed.cloud.inspect
        .instances({ group: groupName(name) })
        .filter((i) => i.state !== "terminated"),
    ).toEqual([]);
  });
});
