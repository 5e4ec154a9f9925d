// The `machines` phase (MachinePool Machines, R11) in the default pipeline, on a fake cloud and
// in-memory InfraMachines and Machines: no API server.
import { describe, expect, it } from "vitest";
import type { PoolGroup } from "../driver.js";
import { infraMachineName } from "../machines.js";
import { PoolMemory } from "../memory.js";
import { defaultPoolPhases, runPhases } from "../pipeline.js";
import {
  type FakeSettings,
  type FakeSpec,
  fakeCloud,
  fakeInstance,
  fakeScope,
} from "../testing.js";
import { type FakeMachines, fakeMachineKind, fakeMachines } from "../testing-machines.js";

const pipeline = defaultPoolPhases<FakeSpec, FakeSettings>();

async function reconcile(
  cloud: ReturnType<typeof fakeCloud>,
  memory: PoolMemory,
  machines: FakeMachines,
  replicas: number,
) {
  const bed = fakeScope({ driver: cloud.driver, memory, machines, replicas });
  const result = await runPhases(pipeline, bed.scope);
  return { ...bed, result };
}

/** A group of `ids` (running) on the template version the first reconcile created. */
async function poolWith(ids: string[], replicas = ids.length) {
  const cloud = fakeCloud();
  const memory = new PoolMemory();
  const machines = fakeMachines();
  await reconcile(cloud, memory, machines, replicas);
  const group = cloud.group as PoolGroup<FakeSettings>;
  cloud.group = { ...group, instances: ids.map((id) => fakeInstance({ id })) };
  return { cloud, memory, machines };
}

const nameOf = (id: string) => infraMachineName("pool-1", id);

describe("MachinePool Machines in the kit", () => {
  it("keeps one InfraMachine per instance with a providerID, labelled and owned for core", async () => {
    const { cloud, memory, machines } = await poolWith(["i-a", "i-b"]);
    const group = cloud.group as PoolGroup<FakeSettings>;
    cloud.group = {
      ...group,
      instances: [
        ...group.instances,
        fakeInstance({ id: "i-c", providerID: "", state: "pending" }),
      ],
      desiredReplicas: 3,
    };
    const run = await reconcile(cloud, memory, machines, 3);
    expect(run.scope.pool.status?.infrastructureMachineKind).toBe("FakeMachinePoolMachine");
    expect([...machines.infraMachines.keys()].sort()).toEqual([nameOf("i-a"), nameOf("i-b")]);
    const im = machines.infraMachines.get(nameOf("i-a"));
    expect(im?.metadata?.labels).toEqual({
      "cluster.x-k8s.io/cluster-name": "c1",
      "cluster.x-k8s.io/pool-name": "pool-1",
    });
    expect(im?.metadata?.ownerReferences).toEqual([
      {
        apiVersion: "infrastructure.cluster.x-k8s.io/v1beta2",
        kind: "FakeMachinePool",
        name: "pool-1",
        uid: "uid-1",
      },
    ]);
    expect(im?.metadata?.finalizers).toEqual([fakeMachineKind.finalizer]);
    expect(im?.spec).toEqual({ providerID: "fake:///zone-a/i-a", instanceID: "i-a" });
    expect(im?.status).toMatchObject({
      ready: true,
      initialization: { provisioned: true },
      instanceState: "running",
      upToDate: true,
      conditions: [expect.objectContaining({ type: "Ready", status: "True" })],
    });
    // At steady state nothing is written again.
    const writes = machines.writes.length;
    await reconcile(cloud, memory, machines, 3);
    expect(machines.writes.slice(writes)).toEqual([]);
  });

  it("scales down through the Machine (delete-machine first), and deletes the instance only once core deleted its InfraMachine", async () => {
    const { cloud, memory, machines } = await poolWith(["i-a", "i-b", "i-c"]);
    await reconcile(cloud, memory, machines, 3);
    machines.adopt({ [nameOf("i-c")]: { "cluster.x-k8s.io/delete-machine": "yes" } });
    cloud.calls.length = 0;

    let run = await reconcile(cloud, memory, machines, 2);
    expect(cloud.mutating()).toEqual([]);
    expect(machines.writes.filter((w) => w.startsWith("delete"))).toEqual([
      `delete Machine/${nameOf("i-c")}`,
    ]);
    expect(machines.machines.get(nameOf("i-c"))?.metadata?.deletionTimestamp).toBeDefined();

    // Core drains the Node: the instance is leaving, the group is left alone (no arbitrary victim).
    run = await reconcile(cloud, memory, machines, 2);
    expect(cloud.mutating()).toEqual([]);
    expect(run.result.ready).toMatchObject({ status: "False", reason: "ScalingDown" });
    expect(run.result.ready.message).toMatch(/waiting for 1 Machine to be drained/);
    expect(run.scope.pool.spec?.providerIDList).toContain("fake:///zone-a/i-c");

    // The Machine controller deletes the InfraMachine: now the instance goes, shrinking the group.
    machines.drain();
    run = await reconcile(cloud, memory, machines, 2);
    expect(cloud.mutating().map((c) => [c.op, ...c.args])).toEqual([
      ["deleteInstance", "i-c", "shrink"],
    ]);
    expect(machines.infraMachines.get(nameOf("i-c"))?.metadata?.deletionTimestamp).toBeDefined();

    // Gone from the cloud: the finalizer is removed and the InfraMachine disappears.
    run = await reconcile(cloud, memory, machines, 2);
    expect(machines.infraMachines.has(nameOf("i-c"))).toBe(false);
    expect(run.scope.pool.spec?.providerIDList).toEqual([
      "fake:///zone-a/i-a",
      "fake:///zone-a/i-b",
    ]);
    expect(run.result.ready.status).toBe("True");
  });

  it("lets the cloud replace the instance of a Machine a user deleted (replicas unchanged)", async () => {
    const { cloud, memory, machines } = await poolWith(["i-a", "i-b"]);
    await reconcile(cloud, memory, machines, 2);
    machines.adopt();
    await machines.api.deleteMachine(machines.machines.get(nameOf("i-a")) as never);
    machines.drain();
    cloud.calls.length = 0;
    await reconcile(cloud, memory, machines, 2);
    expect(cloud.mutating().map((c) => [c.op, ...c.args])).toEqual([
      ["deleteInstance", "i-a", "replace"],
    ]);
  });

  it("removes the Machine of an instance that vanished, and an InfraMachine that never had one", async () => {
    const { cloud, memory, machines } = await poolWith(["i-a", "i-b", "i-c"]);
    await reconcile(cloud, memory, machines, 3);
    machines.adopt();
    machines.machines.delete(nameOf("i-c"));
    const group = cloud.group as PoolGroup<FakeSettings>;
    cloud.group = { ...group, instances: group.instances.filter((i) => i.id === "i-a") };
    await reconcile(cloud, memory, machines, 3);
    expect(machines.writes).toContain(`delete Machine/${nameOf("i-b")}`);
    expect(machines.infraMachines.has(nameOf("i-c"))).toBe(false);
    expect(machines.infraMachines.has(nameOf("i-a"))).toBe(true);
  });

  it("rolls out through Machines without taking availability below replicas − maxUnavailable", async () => {
    const { cloud, memory, machines } = await poolWith(["i-a", "i-b"]);
    await reconcile(cloud, memory, machines, 2);
    machines.adopt();
    // A new spec: both instances are outdated.
    const roll = async () => {
      const bed = fakeScope({
        driver: cloud.driver,
        memory,
        machines,
        replicas: 2,
        spec: { image: "img-2" },
        options: { strategy: { maxSurge: 1, maxUnavailable: 0 } },
      });
      return { ...bed, result: await runPhases(pipeline, bed.scope) };
    };
    await roll();
    await roll();
    const group = cloud.group as PoolGroup<FakeSettings>;
    expect(group.desiredReplicas).toBe(3);
    // The surge instance runs: one outdated Machine may go, not both.
    const latest = cloud.versions.at(-1)?.version;
    cloud.group = {
      ...group,
      instances: [...group.instances, fakeInstance({ id: "i-n", templateVersion: latest })],
    };
    await roll();
    machines.adopt();
    const deleting = [...machines.machines.values()].filter((m) => m.metadata?.deletionTimestamp);
    expect(deleting.map((m) => m.metadata?.name)).toHaveLength(1);
    // While it drains, nothing else goes and the group is not resized.
    cloud.calls.length = 0;
    await roll();
    expect(cloud.mutating()).toEqual([]);
    expect(
      [...machines.machines.values()].filter((m) => m.metadata?.deletionTimestamp),
    ).toHaveLength(1);
  });

  it("remediates a Machine a MachineHealthCheck marked: marks it MachineDeleting, deletes it, the cloud replaces the instance", async () => {
    const { cloud, memory, machines } = await poolWith(["i-a", "i-b"]);
    await reconcile(cloud, memory, machines, 2);
    machines.adopt();
    const group = cloud.group as PoolGroup<FakeSettings>;
    // The Node of i-b went bad: the cloud still calls it running, the MHC marks its Machine.
    cloud.group = {
      ...group,
      instances: group.instances.map((i) => (i.id === "i-b" ? { ...i, healthy: false } : i)),
    };
    machines.healthCheck(nameOf("i-b"), false);
    cloud.calls.length = 0;

    let run = await reconcile(cloud, memory, machines, 2);
    expect(machines.writes.slice(-2)).toEqual([
      `ownerRemediated Machine/${nameOf("i-b")} MachineDeleting`,
      `delete Machine/${nameOf("i-b")}`,
    ]);
    expect(cloud.mutating()).toEqual([]);
    expect(run.result.ready).toMatchObject({ status: "False", reason: "Remediating" });
    expect(run.result.ready.message).toMatch(/1 Machine found unhealthy by a MachineHealthCheck/);

    // While core drains it, the remediation is in flight: nothing else happens.
    run = await reconcile(cloud, memory, machines, 2);
    expect(cloud.mutating()).toEqual([]);
    expect(machines.writes.filter((w) => w.startsWith("delete Machine"))).toHaveLength(1);

    // Core deletes the InfraMachine: the instance goes with `replace`, the group keeps its size.
    machines.drain();
    await reconcile(cloud, memory, machines, 2);
    expect(cloud.mutating().map((c) => [c.op, ...c.args])).toEqual([
      ["deleteInstance", "i-b", "replace"],
    ]);
  });

  it("defers remediation that would break the availability floor, says why on the Machine, and unmarks a Machine found healthy again", async () => {
    const { cloud, memory, machines } = await poolWith(["i-a", "i-b"]);
    await reconcile(cloud, memory, machines, 2);
    machines.adopt();
    // Marked although its instance is available (an MHC on another Node condition).
    machines.healthCheck(nameOf("i-a"), false);
    cloud.calls.length = 0;
    const run = await reconcile(cloud, memory, machines, 2);
    expect(machines.writes.filter((w) => w.startsWith("delete"))).toEqual([]);
    const condition = machines.machines
      .get(nameOf("i-a"))
      ?.status?.conditions?.find((c) => c.type === "OwnerRemediated");
    expect(condition).toMatchObject({ status: "False", reason: "RemediationDeferred" });
    expect(condition?.message).toMatch(/fewer than 2 available instances/);
    expect(run.result.ready.message).toMatch(/1 would take availability below/);
    // Unchanged on the next reconcile: not written again.
    const writes = machines.writes.length;
    await reconcile(cloud, memory, machines, 2);
    expect(machines.writes.length).toBe(writes);

    // The MHC finds it healthy again: the kit removes its mark, as core's MachineSet does.
    machines.healthCheck(nameOf("i-a"), true);
    const healed = await reconcile(cloud, memory, machines, 2);
    expect(machines.writes.at(-1)).toBe(`ownerRemediated Machine/${nameOf("i-a")} removed`);
    expect(
      machines.machines
        .get(nameOf("i-a"))
        ?.status?.conditions?.some((c) => c.type === "OwnerRemediated"),
    ).toBe(false);
    expect(healed.result.ready.status).toBe("True");
  });
});
