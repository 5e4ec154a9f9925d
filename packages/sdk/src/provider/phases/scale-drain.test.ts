// The scale phase with the drain before terminate (no MachinePool Machines): a victim whose Node
// a PodDisruptionBudget protects is not terminated, stays the victim across reconciles, and goes
// once its Node is drained; the group is never shrunk under it.
import type { V1Pod } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { ManualClock } from "../../runtime/clock.js";
import type { PoolGroup, PoolInstance } from "../driver.js";
import { PoolMemory } from "../memory.js";
import {
  type FakeCloud,
  type FakeSettings,
  fakeCloud,
  fakeMachines,
  fakeScope,
  fakeWorkloadDrain,
  instanceOf,
} from "../testing.js";
import { scalePhase } from "./scale.js";

function group(instances: PoolInstance[], desired = instances.length): PoolGroup<FakeSettings> {
  return {
    id: "group-1",
    status: "active",
    desiredReplicas: desired,
    templateVersion: "2",
    settings: { maxSize: 10 },
    instances,
  };
}

const pod = (name: string): V1Pod => ({
  metadata: { namespace: "default", name },
  status: { phase: "Running" },
});

/** Reconciles of one pool with `desired` replicas over one cloud, workload cluster and memory. */
function pool(cloud: FakeCloud, desired: number) {
  const workload = fakeWorkloadDrain();
  const memory = new PoolMemory();
  const clock = new ManualClock();
  const reconcile = async () => {
    const test = fakeScope({
      driver: cloud.driver,
      replicas: desired,
      memory,
      clock,
      drainApi: workload.api,
      sections: {
        group: { group: cloud.group as PoolGroup<FakeSettings>, desired, external: false },
        template: {
          version: { version: "2", stamp: undefined },
          versions: [],
          isUpToDate: (i) => i.templateVersion === "2",
        },
        machines: null,
      },
    });
    await test.run(scalePhase);
    clock.advance(1_000);
    return test.section("scale");
  };
  return { workload, reconcile };
}

const deletes = (cloud: FakeCloud) =>
  cloud
    .mutating()
    .filter((c) => c.op === "deleteInstance")
    .map((c) => c.args[0] as string);

describe("scale: drain before terminate", () => {
  it("holds a scale-down victim while a budget refuses, keeps it the victim, then terminates it", async () => {
    const cloud = fakeCloud();
    cloud.group = group([instanceOf("i1"), instanceOf("i2"), instanceOf("i3")]);
    const { workload, reconcile } = pool(cloud, 2);
    for (const id of ["i1", "i2", "i3"]) workload.addNode(`fake:///zone-a/${id}`, `node-${id}`);
    workload.addPod("node-i1", pod("web-1"));
    workload.block("web-1", "web");

    const first = await reconcile();
    expect(deletes(cloud)).toEqual([]);
    expect(workload.cordoned("node-i1")).toBe(true);
    expect(first?.draining).toMatchObject({ reason: "DrainingNode" });
    expect(first?.draining?.message).toContain("PodDisruptionBudget default/web");

    // i3 turns unhealthy (the delete policy would now pick it): the half-drained i1 stays the victim.
    cloud.group = group([instanceOf("i1"), instanceOf("i2"), instanceOf("i3", { healthy: false })]);
    await reconcile();
    expect(deletes(cloud)).toEqual([]);
    expect(workload.cordoned("node-i3")).toBe(false);

    workload.block("web-1", undefined);
    const last = await reconcile();
    expect(deletes(cloud)).toEqual(["i1"]);
    expect(last?.draining).toBeUndefined();
    expect(workload.writes.filter((w) => w.verb === "cordon")).toEqual([
      { verb: "cordon", name: "node-i1" },
    ]);
  });

  it("takes the instance whose Node is cordoned first (a drain a restart forgot, or a user's)", async () => {
    const cloud = fakeCloud();
    cloud.group = group([instanceOf("i1"), instanceOf("i2"), instanceOf("i3")]);
    const { workload, reconcile } = pool(cloud, 2);
    for (const id of ["i1", "i2", "i3"]) workload.addNode(`fake:///zone-a/${id}`, `node-${id}`);
    await workload.api.cordon("node-i2");
    await reconcile();
    // Not i1, the oldest: the cordoned Node's instance goes, and its Node is not cordoned again.
    expect(deletes(cloud)).toEqual(["i2"]);
    expect(workload.writes).toEqual([{ verb: "cordon", name: "node-i2" }]);
  });

  it("never lowers the group's size under an instance still being drained", async () => {
    const cloud = fakeCloud();
    // Desired 3 in the cloud, 2 launched; the pool wants 1.
    cloud.group = group([instanceOf("i1"), instanceOf("i2")], 3);
    const { workload, reconcile } = pool(cloud, 1);
    workload.addNode("fake:///zone-a/i1", "node-i1");
    workload.addPod("node-i1", pod("web-1"));
    workload.block("web-1", "web");
    await reconcile();
    const calls = cloud.mutating().map((c) => [c.op, c.args[0]]);
    // Only the capacity not launched yet goes; i1 is still counted in the size.
    expect(calls).toEqual([["updateGroup", { replicas: 2 }]]);
  });

  it("leaves the drain to core with MachinePool Machines", async () => {
    const cloud = fakeCloud();
    cloud.group = group([instanceOf("i1"), instanceOf("i2")]);
    const workload = fakeWorkloadDrain();
    workload.addNode("fake:///zone-a/i1", "node-i1");
    const machines = fakeMachines();
    const test = fakeScope({
      driver: cloud.driver,
      replicas: 1,
      drainApi: workload.api,
      machines,
      sections: {
        group: { group: cloud.group, desired: 1, external: false },
        template: {
          version: { version: "2", stamp: undefined },
          versions: [],
          isUpToDate: () => true,
        },
        machines: {
          leaving: new Set(),
          machineOf: new Map(),
          deletePriority: new Set(),
          remediate: new Set(),
          remediationsInFlight: 0,
          groupSize: 2,
          pendingShrink: 0,
        } as never,
      },
    });
    await test.run(scalePhase);
    expect(workload.writes).toEqual([]);
    expect(test.section("scale")?.draining).toBeUndefined();
  });
});
