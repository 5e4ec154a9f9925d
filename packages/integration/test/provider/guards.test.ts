import { NodeResource } from "@capi-ts/sdk/runtime";
import { scaled } from "@capi-ts/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type Bed,
  condition,
  converged,
  createCluster,
  createPool,
  eventReasons,
  eventually,
  getPool,
  groupName,
  KitMachinePool,
  ns,
  Pools,
  setClusterProvisioned,
  setReplicas,
  sleep,
  startBed,
} from "./support.js";

let bed: Bed;
/** Instance IDs the driver leaves out of the group's list (an inconsistent cloud read). */
const hidden = new Set<string>();

beforeAll(async () => {
  bed = await startBed({
    // `instance` readiness: the lagging-list test drops an ID past its grace, so core deletes that
    // instance's Node, and the fake cloud's kubelet (unlike a real one) never registers it again.
    controller: { missingInstanceGraceMs: 3000, readiness: "instance" },
    wrapDriver: (driver) => ({
      ...driver,
      async getGroup(ctx) {
        const group = await driver.getGroup(ctx);
        return group && { ...group, instances: group.instances.filter((i) => !hidden.has(i.id)) };
      },
    }),
  });
}, 60_000);
afterAll(async () => {
  await bed?.stop();
});

function callsFor(group: string, afterSeq = 0) {
  return bed.cloud.calls({ afterSeq }).filter((c) => JSON.stringify(c.args).includes(group));
}

describe("machinePoolController: guards, drift and failures", { timeout: scaled(40_000) }, () => {
  it("drops the finalizer of a pool deleted before it ever had an owner, without touching the cloud", async () => {
    const name = "orphan-pool";
    await bed.client.create(Pools, {
      apiVersion: KitMachinePool.apiVersion,
      kind: KitMachinePool.kind,
      metadata: { name, namespace: ns, finalizers: [KitMachinePool.finalizer] },
      spec: { instanceType: "small", minSize: 0, maxSize: 3 },
    });
    await bed.client.delete(Pools, { namespace: ns, name });
    await eventually(async () => {
      await expect(getPool(bed, name)).rejects.toThrow();
    });
    expect(callsFor(groupName(name))).toEqual([]);
  });

  it("does not delete a paused pool (annotation) until it is unpaused", async () => {
    const name = await createPool(bed, { replicas: 1 });
    await converged(bed, name, 1);
    await bed.client.mergePatch(
      Pools,
      { namespace: ns, name },
      { metadata: { annotations: { "cluster.x-k8s.io/paused": "" } } },
    );
    await eventually(async () => {
      expect(condition(await getPool(bed, name), "Paused")).toMatchObject({
        status: "True",
        message: "KitMachinePool has the cluster.x-k8s.io/paused annotation",
      });
    });
    const mark = bed.cloud.lastCallSeq();
    await bed.client.delete(Pools, { namespace: ns, name });
    await sleep(800);
    expect(callsFor(groupName(name), mark)).toEqual([]);
    expect((await getPool(bed, name)).metadata?.finalizers).toContain(KitMachinePool.finalizer);
    await bed.client.mergePatch(
      Pools,
      { namespace: ns, name },
      { metadata: { annotations: { "cluster.x-k8s.io/paused": null } } },
    );
    await eventually(async () => {
      await expect(getPool(bed, name)).rejects.toThrow();
    });
    expect(bed.cloud.inspect.group(groupName(name))).toBeUndefined();
  });

  it("waits for the cluster's infrastructure (no cloud call), then provisions through the Cluster watch", async () => {
    await createCluster(bed.client, "c-late", false);
    const name = await createPool(bed, { replicas: 1, clusterName: "c-late" });
    await eventually(async () => {
      expect(condition(await getPool(bed, name), "Ready")).toMatchObject({
        status: "False",
        reason: "WaitingForClusterInfrastructure",
      });
    });
    await sleep(300);
    expect(callsFor(groupName(name, "c-late"))).toEqual([]);
    await setClusterProvisioned(bed.client, "c-late");
    await converged(bed, name, 1, "c-late");
  });

  it("refuses desired replicas outside the group's bounds without sending them, and recovers", async () => {
    const name = await createPool(bed, { replicas: 1 });
    await converged(bed, name, 1);
    const mark = bed.cloud.lastCallSeq();
    await setReplicas(bed, name, 20);
    await eventually(async () => {
      const ready = condition(await getPool(bed, name), "Ready");
      expect(ready).toMatchObject({ status: "False", reason: "ReplicasOutOfRange" });
      expect(ready?.message).toContain("outside the group's bounds [0, 10]");
    });
    expect(bed.cloud.calls({ afterSeq: mark, mutating: true })).toEqual([]);
    await setReplicas(bed, name, 2);
    await converged(bed, name, 2);
  });

  it("follows out-of-band changes at resync: a user-terminated instance is replaced and the list follows", async () => {
    const name = await createPool(bed, { replicas: 2 });
    const before = (await converged(bed, name, 2)).spec?.providerIDList ?? [];
    const [victim] = bed.cloud.inspect.instances({ group: groupName(name), states: ["running"] });
    bed.cloud.actors.terminateInstance(victim?.id ?? "");
    await eventually(async () => {
      const pool = await converged(bed, name, 2);
      expect(pool.spec?.providerIDList).not.toEqual(before);
      expect(pool.spec?.providerIDList?.some((id) => id.endsWith(victim?.id ?? "?"))).toBe(false);
    });
  });

  it("keeps an ID the cloud's list briefly leaves out (a lagging read must not delete the Node)", async () => {
    const name = await createPool(bed, { replicas: 2 });
    const before = (await converged(bed, name, 2)).spec?.providerIDList ?? [];
    const [victim] = bed.cloud.inspect.instances({ group: groupName(name), states: ["running"] });
    const id = victim?.id ?? "";
    await eventually(async () => {
      await bed.client.get(NodeResource, { name: id });
    });
    hidden.add(id);
    try {
      for (let i = 0; i < 20; i++) {
        expect((await getPool(bed, name)).spec?.providerIDList).toEqual(before);
        await sleep(50);
      }
      await bed.client.get(NodeResource, { name: id }); // still there: core deleted nothing
    } finally {
      hidden.delete(id);
    }
    await converged(bed, name, 2);
    // Hidden for longer than the grace: it is dropped (the list is trusted in the end).
    hidden.add(id);
    try {
      await eventually(async () => {
        const ids = (await getPool(bed, name)).spec?.providerIDList ?? [];
        expect(ids.some((p) => p.endsWith(`/${id}`))).toBe(false);
      }, 15_000);
    } finally {
      hidden.delete(id);
    }
    await converged(bed, name, 2);
  });

  it("recreates a group someone deleted", async () => {
    const name = await createPool(bed, { replicas: 1 });
    await converged(bed, name, 1);
    bed.cloud.actors.deleteGroup(groupName(name));
    await eventually(() => {
      expect(bed.cloud.inspect.group(groupName(name))?.status).not.toBe("deleting");
      expect(
        bed.cloud
          .calls({ operation: "createGroup" })
          .filter((c) => JSON.stringify(c.args).includes(groupName(name))),
      ).toHaveLength(2);
    });
    await converged(bed, name, 1);
  });

  it("backs off while the cloud throttles (no hot loop) and converges once it stops", async () => {
    const name = await createPool(bed, { replicas: 1 });
    await converged(bed, name, 1);
    const mark = bed.cloud.lastCallSeq();
    const fault = bed.cloud.faults.inject({ kind: "throttle", retryAfterMs: 400 });
    try {
      await setReplicas(bed, name, 2);
      await eventually(async () => {
        expect(condition(await getPool(bed, name), "Ready")?.reason).toBe("CloudThrottling");
      });
      const window = bed.cloud.lastCallSeq();
      const started = performance.now();
      // This pool's calls only (the other pools of the bed are throttled too).
      const throttledCalls = () =>
        bed.cloud
          .calls({ afterSeq: window, outcome: "error" })
          .filter((c) => JSON.stringify(c.args).includes(groupName(name)));
      await eventually(() => expect(throttledCalls().length).toBeGreaterThanOrEqual(3));
      const elapsed = performance.now() - started;
      // Each attempt waits the 400 ms retry-after; a resync (every 400 ms) or another event may add
      // one in between. A hot loop would make hundreds in the same time, whatever the machine's load.
      expect(throttledCalls().length).toBeLessThanOrEqual(2 * Math.ceil(elapsed / 400) + 2);
      expect(bed.cloud.calls({ afterSeq: mark, outcome: "ok", mutating: true })).toEqual([]);
    } finally {
      fault.remove();
    }
    await converged(bed, name, 2);
  });

  it("reports a group owned by another pool as terminal and never adopts it", async () => {
    const name = "foreign-pool";
    await bed.cloud.client.createLaunchTemplate({
      name: "x-template",
      data: { image: "i", instanceType: "s", userData: "" },
    });
    await bed.cloud.client.createGroup({
      name: groupName(name),
      minSize: 0,
      maxSize: 2,
      template: { id: "x-template", version: 1 },
      zones: ["zone-a"],
      tags: { "capi-ts.io/pool": "other/pool" },
    });
    const mark = bed.cloud.lastCallSeq();
    const created = await createPool(bed, { replicas: 1 });
    // createPool names pools itself; rename through a second pool with the foreign name.
    expect(created).not.toBe(name);
    await bed.client.create(Pools, {
      apiVersion: KitMachinePool.apiVersion,
      kind: KitMachinePool.kind,
      metadata: { name, namespace: ns },
      spec: { instanceType: "small", minSize: 0, maxSize: 3 },
    });
    await bed.client.create(
      {
        group: "cluster.x-k8s.io",
        version: "v1beta2",
        kind: "MachinePool",
        plural: "machinepools",
        scope: "Namespaced",
      },
      {
        apiVersion: "cluster.x-k8s.io/v1beta2",
        kind: "MachinePool",
        metadata: { name, namespace: ns },
        spec: {
          clusterName: "c1",
          replicas: 1,
          template: {
            spec: {
              clusterName: "c1",
              version: "v1.34.1",
              bootstrap: {},
              infrastructureRef: {
                apiGroup: KitMachinePool.group,
                kind: KitMachinePool.kind,
                name,
              },
            },
          },
        },
      } as never,
    );
    await eventually(async () => {
      const ready = condition(await getPool(bed, name), "Ready");
      expect(ready).toMatchObject({ status: "False", reason: "ResourceNotOwned" });
    });
    const writes = bed.cloud
      .calls({ afterSeq: mark, mutating: true })
      .filter((c) => JSON.stringify(c.args).includes(groupName(name)));
    expect(
      writes.filter(
        (c) =>
          c.operation !== "createLaunchTemplate" && c.operation !== "createLaunchTemplateVersion",
      ),
    ).toEqual([]);
  });

  it("reports a partial scale-up (capacity shortage) as GroupFailed, keeps the IDs it has, recovers", async () => {
    const name = await createPool(bed, { replicas: 1 });
    await converged(bed, name, 1);
    const shortage = bed.cloud.faults.limitCapacity({ launches: 1 });
    try {
      await setReplicas(bed, name, 3);
      const pool = await eventually(async () => {
        const got = await getPool(bed, name);
        expect(condition(got, "Ready")).toMatchObject({ status: "False", reason: "GroupFailed" });
        expect(got.spec?.providerIDList).toHaveLength(2);
        return got;
      });
      // Provisioned stays true (sticky): core keeps copying the list while the pool is degraded.
      expect(pool.status?.ready).toBe(true);
      expect(pool.spec?.providerIDList).toEqual(bed.cloud.inspect.providerIds(groupName(name)));
    } finally {
      shortage.remove();
    }
    await converged(bed, name, 3);
  });

  it("records an Event with the reason at each cloud change", async () => {
    const name = await createPool(bed, { replicas: 1 });
    await converged(bed, name, 1);
    await setReplicas(bed, name, 2);
    await converged(bed, name, 2);
    await eventually(async () => {
      const reasons = await eventReasons(bed, name);
      expect(reasons).toEqual(
        expect.arrayContaining(["TemplateVersionCreated", "GroupCreated", "ScalingUp"]),
      );
    });
  });
});
