// The `scale` phase on a fake scope and an in-memory driver: scaling, rollouts and remediation as
// driver calls and Events, readiness by Node, MachinePool Machines, and the section it writes.
import { describe, expect, it } from "vitest";
import type { Machine } from "../../api/cluster.x-k8s.io/v1beta2.js";
import { WorkloadClusterUnavailableError } from "../../clustercache/unavailable.js";
import { DriverError, type PoolGroup, type PoolInstance } from "../driver.js";
import { StepFailure } from "../errors.js";
import { infraMachineName, type MachinesState } from "../machines.js";
import { PoolMemory } from "../memory.js";
import type { PoolSections } from "../phase.js";
import { publishInstances } from "../steps/publish-instances.js";
import {
  type FakeCloud,
  type FakeScopeOptions,
  type FakeSettings,
  type FakeSpec,
  fakeCloud,
  fakeInstance,
  fakeMachines,
  fakeScope,
  instanceOf,
} from "../testing.js";
import type { FakeMachines } from "../testing-machines.js";
import { scalePhase } from "./scale.js";

function group(instances: PoolGroup<FakeSettings>["instances"], desired = instances.length) {
  return {
    id: "group-1",
    status: "active" as const,
    desiredReplicas: desired,
    templateVersion: "1",
    settings: { maxSize: 10 },
    instances,
  };
}

/** What the phases before `scale` would have written for `group` and `desired` replicas. */
function scaleInputs(
  g: PoolGroup<FakeSettings>,
  desired: number,
): Partial<PoolSections<FakeSpec, FakeSettings>> {
  return {
    group: { group: g, desired, external: false },
    template: { version: { version: "1", stamp: undefined }, versions: [], isUpToDate: () => true },
    machines: null,
  };
}

/** Scale inputs where instances on template version "2" are up to date, the rest outdated. */
function rolloutInputs(
  g: PoolGroup<FakeSettings>,
  desired: number,
  extra: { external?: boolean; machines?: MachinesState } = {},
): Partial<PoolSections<FakeSpec, FakeSettings>> {
  return {
    group: { group: g, desired, external: extra.external ?? false },
    template: {
      version: { version: "2", stamp: undefined },
      versions: [],
      isUpToDate: (i) => i.templateVersion === "2",
    },
    machines: extra.machines ?? null,
  };
}

/** A scope over `cloud.group` with `desired` replicas. */
function scaleScope(
  cloud: FakeCloud,
  desired: number,
  options: FakeScopeOptions & { external?: boolean; machinesState?: MachinesState } = {},
) {
  const { external, machinesState, ...rest } = options;
  return fakeScope({
    driver: cloud.driver,
    replicas: desired,
    sections: rolloutInputs(cloud.group as PoolGroup<FakeSettings>, desired, {
      ...(external !== undefined ? { external } : {}),
      ...(machinesState ? { machines: machinesState } : {}),
    }),
    ...rest,
  });
}

const calls = (cloud: FakeCloud) => cloud.mutating().map((c) => [c.op, ...c.args]);

const unavailable = () =>
  new WorkloadClusterUnavailableError(
    { namespace: "default", name: "c1" },
    "KubeconfigSecretNotFound",
    "Secret default/c1-kubeconfig not found",
    5_000,
  );

describe("scale", () => {
  it("counts NotFound on deleteInstance as done, and the deleted ID leaves the list without grace", async () => {
    const cloud = fakeCloud();
    const gone = fakeInstance({ id: "i-gone" });
    cloud.faults.deleteInstance = () =>
      DriverError.notFound("InstanceNotFound", "no such instance");
    cloud.group = group([gone, fakeInstance({ id: "i-kept" })]);
    const { scope, events, run } = fakeScope({
      driver: cloud.driver,
      replicas: 1,
      sections: {
        group: { group: cloud.group, desired: 1, external: false },
        template: {
          version: { version: "1", stamp: undefined },
          versions: [],
          isUpToDate: () => true,
        },
        machines: null,
      },
    });
    scope.pool.spec = { ...scope.pool.spec, providerIDList: [gone.providerID] };
    await run(scalePhase);
    expect(events.map((e) => e.reason)).toEqual(["InstanceDeleted"]);
    // The cloud no longer lists it: it leaves providerIDList at once, although the grace is 300 ms.
    publishInstances(scope, group([]), false);
    expect(scope.pool.spec?.providerIDList ?? []).toEqual([]);
  });

  it("replaces a Failed instance within the rollout budget, one at a time by default", async () => {
    const cloud = fakeCloud();
    const a = fakeInstance({ id: "i-a", state: "failed" });
    const b = fakeInstance({ id: "i-b", state: "failed" });
    const c = fakeInstance({ id: "i-c" });
    cloud.group = group([a, b, c]);
    const { run, section } = fakeScope({
      driver: cloud.driver,
      replicas: 3,
      sections: scaleInputs(cloud.group, 3),
    });
    await run(scalePhase);
    expect(cloud.mutating().map((call) => call.args)).toEqual([["i-a", "replace"]]);
    expect(section("scale")?.plan.failed).toBe(2);
  });

  it("counts instances, not Nodes, for provisioned with readiness node (no first-creation deadlock)", async () => {
    const cloud = fakeCloud();
    cloud.group = group([fakeInstance(), fakeInstance()]);
    const { run, section } = fakeScope({
      driver: cloud.driver,
      options: { readiness: "node" },
      sections: scaleInputs(cloud.group, 2),
    });
    await run(scalePhase);
    expect(section("scale")?.provisioned).toBe(true);
    expect(section("scale")?.plan.available).toBe(0); // no Ready Node yet: not available for rollouts
  });
});

describe("scale: the group's size", () => {
  it("scales up with one updateGroup and a ScalingUp Event", async () => {
    const cloud = fakeCloud();
    cloud.group = group([instanceOf("i1")]);
    const { run, events } = scaleScope(cloud, 3);
    await run(scalePhase);
    expect(calls(cloud)).toEqual([["updateGroup", { replicas: 3 }]]);
    expect(cloud.group.desiredReplicas).toBe(3);
    expect(events).toEqual([
      { type: "Normal", reason: "ScalingUp", message: "scaling up to 3 replicas" },
    ]);
  });

  it("scales down by deleting the oldest instances with shrink, and remembers them as departed", async () => {
    const cloud = fakeCloud();
    cloud.group = group([instanceOf("i3"), instanceOf("i1"), instanceOf("i2")]);
    const memory = new PoolMemory();
    const { run, events, clock } = scaleScope(cloud, 1, { memory });
    clock.advance(42);
    const now = clock.now();
    await run(scalePhase);
    expect(calls(cloud)).toEqual([
      ["deleteInstance", "i1", "shrink"],
      ["deleteInstance", "i2", "shrink"],
    ]);
    expect(events).toEqual([
      {
        type: "Normal",
        reason: "InstanceDeleted",
        message: "removing instance i1 to scale down (shrink)",
      },
      {
        type: "Normal",
        reason: "InstanceDeleted",
        message: "removing instance i2 to scale down (shrink)",
      },
    ]);
    expect([...memory.departed]).toEqual([
      ["fake:///zone-a/i1", now],
      ["fake:///zone-a/i2", now],
    ]);
  });

  it("follows the delete policy of the strategy (Newest)", async () => {
    const cloud = fakeCloud();
    cloud.group = group([instanceOf("i1"), instanceOf("i2"), instanceOf("i3")]);
    const { run } = scaleScope(cloud, 2, { options: { strategy: { deletePolicy: "Newest" } } });
    await run(scalePhase);
    expect(calls(cloud)).toEqual([["deleteInstance", "i3", "shrink"]]);
  });

  it("lowers the desired size for capacity the cloud has not launched, with a ScalingDown Event", async () => {
    const cloud = fakeCloud();
    cloud.group = group([instanceOf("i1")], 3);
    const { run, events } = scaleScope(cloud, 1);
    await run(scalePhase);
    expect(calls(cloud)).toEqual([["updateGroup", { replicas: 1 }]]);
    expect(events).toEqual([
      { type: "Normal", reason: "ScalingDown", message: "scaling down to 1 replicas" },
    ]);
  });

  it("never sets the size under an external autoscaler, and resolves no surge", async () => {
    const cloud = fakeCloud();
    cloud.group = group([instanceOf("i1", { version: "1" }), instanceOf("i2")], 4);
    const { run, section } = scaleScope(cloud, 4, { external: true });
    await run(scalePhase);
    expect(cloud.mutating().filter((c) => c.op === "updateGroup")).toEqual([]);
    expect(section("scale")?.strategy).toEqual({
      maxSurge: 0,
      maxUnavailable: 1,
      deletePolicy: "Oldest",
    });
  });

  it("surfaces a failed deleteInstance to the error policy, and forgets nothing", async () => {
    const cloud = fakeCloud();
    cloud.faults.deleteInstance = () => DriverError.terminal("Forbidden", "not allowed");
    cloud.group = group([instanceOf("i1"), instanceOf("i2")]);
    const memory = new PoolMemory();
    const { run, events, section } = scaleScope(cloud, 1, { memory });
    const failure = await run(scalePhase).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(StepFailure);
    expect((failure as StepFailure).step).toBe("deleteInstance");
    expect((failure as StepFailure).failure.kind).toBe("terminal");
    expect(memory.departed.size).toBe(0);
    expect(events).toEqual([]);
    expect(section("scale")).toBeUndefined();
  });
});

describe("scale: rollouts", () => {
  it("surges first: raises the group to desired + maxSurge while instances are outdated", async () => {
    const cloud = fakeCloud();
    cloud.group = group([instanceOf("i1", { version: "1" }), instanceOf("i2", { version: "1" })]);
    const { run, events, section } = scaleScope(cloud, 2);
    await run(scalePhase);
    expect(calls(cloud)).toEqual([["updateGroup", { replicas: 3 }]]);
    expect(events).toEqual([
      {
        type: "Normal",
        reason: "ScalingUp",
        message: "surging to 3 replicas for the rollout",
      },
    ]);
    expect(section("scale")).toMatchObject({ outdated: 2, plan: { blockedByAvailability: true } });
  });

  it("deletes an outdated instance with shrink once the surge instance is available", async () => {
    const cloud = fakeCloud();
    cloud.group = group(
      [instanceOf("i1", { version: "1" }), instanceOf("i2", { version: "1" }), instanceOf("i3")],
      3,
    );
    const { run, events } = scaleScope(cloud, 2);
    await run(scalePhase);
    expect(calls(cloud)).toEqual([["deleteInstance", "i1", "shrink"]]);
    expect(events).toEqual([
      {
        type: "Normal",
        reason: "InstanceReplaced",
        message: "replacing outdated instance i1 (template version 1) (shrink)",
      },
    ]);
  });

  it("replaces in place without surge (maxSurge 0), within maxUnavailable", async () => {
    const cloud = fakeCloud();
    cloud.group = group([instanceOf("i1", { version: "1" }), instanceOf("i2", { version: "1" })]);
    const { run, events } = scaleScope(cloud, 2, {
      options: { strategy: { maxSurge: 0, maxUnavailable: 1 } },
    });
    await run(scalePhase);
    expect(calls(cloud)).toEqual([["deleteInstance", "i1", "replace"]]);
    expect(events[0]?.message).toBe(
      "replacing outdated instance i1 (template version 1) (replace)",
    );
  });

  it("names an unknown template version in the Event", async () => {
    const cloud = fakeCloud();
    const old = fakeInstance({ id: "i-x", templateVersion: undefined });
    cloud.group = group([old]);
    const { run, events } = scaleScope(cloud, 1, {
      options: { strategy: { maxSurge: 0, maxUnavailable: 1 } },
    });
    await run(scalePhase);
    expect(events[0]?.message).toBe(
      "replacing outdated instance i-x (template version unknown) (replace)",
    );
  });

  it("records a remediation as InstanceRemediated", async () => {
    const cloud = fakeCloud();
    cloud.group = group([instanceOf("i1", { state: "failed" }), instanceOf("i2")]);
    const { run, events } = scaleScope(cloud, 2);
    await run(scalePhase);
    expect(calls(cloud)).toEqual([["deleteInstance", "i1", "replace"]]);
    expect(events).toEqual([
      {
        type: "Normal",
        reason: "InstanceRemediated",
        message: "replacing instance i1: the cloud reports it failed (replace)",
      },
    ]);
  });

  it("leaves outdated instances to the driver's native rollout", async () => {
    const cloud = fakeCloud();
    const native = { start: async () => {}, get: async () => undefined, cancel: async () => {} };
    cloud.group = group([instanceOf("i1", { version: "1" }), instanceOf("i2", { version: "1" })]);
    const { run, section } = scaleScope(cloud, 2, {
      driver: { ...cloud.driver, nativeRollout: native },
    });
    await run(scalePhase);
    expect(cloud.mutating()).toEqual([]);
    // The section still counts them, for the nativeRollout phase.
    expect(section("scale")?.outdated).toBe(2);
    expect(section("scale")?.plan.outdated).toBe(0);
  });

  it("rolls itself when useNativeRollout is off, even if the driver has one", async () => {
    const cloud = fakeCloud();
    const native = { start: async () => {}, get: async () => undefined, cancel: async () => {} };
    cloud.group = group([instanceOf("i1", { version: "1" })]);
    const { run } = scaleScope(cloud, 1, {
      driver: { ...cloud.driver, nativeRollout: native },
      options: { useNativeRollout: false },
    });
    await run(scalePhase);
    expect(calls(cloud)).toEqual([["updateGroup", { replicas: 2 }]]);
  });
});

describe("scale: readiness by Node", () => {
  it("counts a new instance as available only once its Node is Ready", async () => {
    const cloud = fakeCloud();
    const [o1, o2, n] = [
      instanceOf("i1", { version: "1" }),
      instanceOf("i2", { version: "1" }),
      instanceOf("i3"),
    ];
    cloud.group = group([o1, o2, n], 3);
    const first = scaleScope(cloud, 2, { options: { readiness: "node" } });
    first.readyNodes.add(o1.providerID).add(o2.providerID);
    await first.run(scalePhase);
    // Deleting an old instance would leave 1 available of 2 desired: it waits for i3's Node.
    expect(cloud.mutating()).toEqual([]);
    expect(first.section("scale")?.plan).toMatchObject({
      available: 2,
      blockedByAvailability: true,
    });

    const second = scaleScope(cloud, 2, { options: { readiness: "node" } });
    second.readyNodes.add(o1.providerID).add(o2.providerID).add(n.providerID);
    await second.run(scalePhase);
    expect(calls(cloud)).toEqual([["deleteInstance", "i1", "shrink"]]);
    expect(second.section("scale")?.plan.available).toBe(3);
  });

  it("asks for the Nodes of the group's instances only", async () => {
    const cloud = fakeCloud();
    cloud.group = group([instanceOf("i1"), instanceOf("i2")]);
    const test = scaleScope(cloud, 2, { options: { readiness: "node" } });
    const asked: string[][] = [];
    test.scope.api.readyNodeProviderIDs = async (ids) => {
      asked.push([...ids]);
      return new Set();
    };
    await test.run(scalePhase);
    expect(asked).toEqual([["fake:///zone-a/i1", "fake:///zone-a/i2"]]);
  });

  it("reads no Node with readiness instance", async () => {
    const cloud = fakeCloud();
    cloud.group = group([instanceOf("i1")]);
    const test = scaleScope(cloud, 1);
    test.scope.api.readyNodeProviderIDs = async () => {
      throw new Error("Nodes read with readiness instance");
    };
    await test.run(scalePhase);
    expect(test.section("scale")?.plan.available).toBe(1);
  });

  it("holds the rollout while the workload cluster cannot be read, and says why in the section", async () => {
    const cloud = fakeCloud();
    cloud.group = group(
      [instanceOf("i1", { version: "1" }), instanceOf("i2", { version: "1" }), instanceOf("i3")],
      3,
    );
    const test = scaleScope(cloud, 2, { options: { readiness: "node" } });
    const error = unavailable();
    test.scope.api.readyNodeProviderIDs = async () => {
      throw error;
    };
    await test.run(scalePhase);
    expect(cloud.calls.filter((c) => c.op === "deleteInstance")).toEqual([]);
    const scale = test.section("scale");
    expect(scale?.workloadUnavailable).toBe(error);
    expect(scale?.plan.blockedByAvailability).toBe(true);
    // Availability falls back to instance state: provisioned and the counts go on.
    expect(scale?.provisioned).toBe(true);
    expect(scale?.plan.available).toBe(3);
  });

  it("still scales up on instance state while the workload cluster cannot be read", async () => {
    const cloud = fakeCloud();
    cloud.group = group([instanceOf("i1"), instanceOf("i2")]);
    const test = scaleScope(cloud, 4, { options: { readiness: "node" } });
    test.scope.api.readyNodeProviderIDs = async () => {
      throw unavailable();
    };
    await test.run(scalePhase);
    expect(calls(cloud)).toEqual([["updateGroup", { replicas: 4 }]]);
    expect(test.section("scale")?.workloadUnavailable?.reason).toBe("KubeconfigSecretNotFound");
  });

  it("lets any other failure to read Nodes end the reconcile", async () => {
    const cloud = fakeCloud();
    cloud.group = group([instanceOf("i1")]);
    const test = scaleScope(cloud, 1, { options: { readiness: "node" } });
    test.scope.api.readyNodeProviderIDs = async () => {
      throw new Error("cache not synced");
    };
    await expect(test.run(scalePhase)).rejects.toThrow("cache not synced");
    expect(test.section("scale")).toBeUndefined();
  });
});

/** A Machine (and InfraMachine) for each of `ids`, as core would have made them. */
function machinesFor(machines: FakeMachines, ids: readonly string[]): Map<string, Machine> {
  for (const id of ids) {
    const name = infraMachineName("pool-1", id);
    machines.infraMachines.set(name, { metadata: { name, namespace: "default" } } as never);
  }
  machines.adopt();
  return new Map(
    ids.map((id) => [id, machines.machines.get(infraMachineName("pool-1", id)) as Machine]),
  );
}

function machinesState(groupSize: number, overrides: Partial<MachinesState> = {}): MachinesState {
  return {
    leaving: new Set(),
    pendingShrink: 0,
    machineOf: new Map(),
    deletePriority: new Set(),
    groupSize,
    remediate: new Set(),
    remediationsInFlight: 0,
    ...overrides,
  };
}

describe("scale: the cluster-autoscaler's ToBeDeleted taint (no MachinePool Machines)", () => {
  const TAINT = "ToBeDeletedByClusterAutoscaler";
  const three = () => [instanceOf("i1"), instanceOf("i2"), instanceOf("i3")];

  it("removes the instance whose Node the autoscaler tainted, not the oldest", async () => {
    const cloud = fakeCloud();
    cloud.group = group(three());
    const { run, nodeTaints, events } = scaleScope(cloud, 2);
    nodeTaints.set("fake:///zone-a/i2", ["node.kubernetes.io/unschedulable", TAINT]);
    await run(scalePhase);
    expect(calls(cloud)).toEqual([["deleteInstance", "i2", "shrink"]]);
    expect(events.map((e) => e.message)).toEqual([
      "removing instance i2 to scale down: the cluster-autoscaler marked its Node ToBeDeletedByClusterAutoscaler (shrink)",
    ]);
  });

  it("goes by the delete policy when no Node carries the taint (other taints do not count)", async () => {
    const cloud = fakeCloud();
    cloud.group = group(three());
    const { run, nodeTaints } = scaleScope(cloud, 2);
    nodeTaints.set("fake:///zone-a/i3", ["DeletionCandidateOfClusterAutoscaler"]);
    await run(scalePhase);
    expect(calls(cloud)).toEqual([["deleteInstance", "i1", "shrink"]]);
  });

  it("looks the Nodes up only when the pool has more members than it wants, by its own IDs", async () => {
    const cloud = fakeCloud();
    cloud.group = group(three());
    const lookups: string[][] = [];
    const steady = scaleScope(cloud, 3);
    Object.assign(steady.scope.api, {
      taintedNodeProviderIDs: async (ids: Iterable<string>) => {
        lookups.push([...ids]);
        return new Set<string>();
      },
    });
    await steady.run(scalePhase);
    expect(lookups).toEqual([]);
    const down = scaleScope(cloud, 1);
    Object.assign(down.scope.api, {
      taintedNodeProviderIDs: async (ids: Iterable<string>, key: string) => {
        lookups.push([...ids, key]);
        return new Set<string>();
      },
    });
    await down.run(scalePhase);
    expect(lookups).toEqual([
      ["fake:///zone-a/i1", "fake:///zone-a/i2", "fake:///zone-a/i3", TAINT],
    ]);
  });

  it("falls back to the delete policy while the workload cluster cannot be read", async () => {
    const cloud = fakeCloud();
    cloud.group = group(three());
    const { run, scope } = scaleScope(cloud, 2);
    Object.assign(scope.api, {
      taintedNodeProviderIDs: async () => {
        throw unavailable();
      },
    });
    await run(scalePhase);
    expect(calls(cloud)).toEqual([["deleteInstance", "i1", "shrink"]]);
  });

  it("lets any other failure to read the Nodes end the reconcile", async () => {
    const cloud = fakeCloud();
    cloud.group = group(three());
    const { run, scope } = scaleScope(cloud, 2);
    Object.assign(scope.api, {
      taintedNodeProviderIDs: async () => {
        throw new Error("informer exploded");
      },
    });
    await expect(run(scalePhase)).rejects.toThrow("informer exploded");
    expect(calls(cloud)).toEqual([]);
  });

  it("scales down by the delete policy for a kit that sees no Nodes (no lookup there)", async () => {
    const cloud = fakeCloud();
    cloud.group = group(three());
    const { run, scope, nodeTaints } = scaleScope(cloud, 2);
    nodeTaints.set("fake:///zone-a/i3", [TAINT]);
    delete (scope.api as { taintedNodeProviderIDs?: unknown }).taintedNodeProviderIDs;
    await run(scalePhase);
    expect(calls(cloud)).toEqual([["deleteInstance", "i1", "shrink"]]);
  });

  it("leaves the choice to delete-machine with MachinePool Machines (the autoscaler annotates there)", async () => {
    const cloud = fakeCloud();
    const machines = fakeMachines();
    cloud.group = group(three());
    const { run, nodeTaints } = scaleScope(cloud, 2, {
      machines,
      machinesState: machinesState(3, {
        machineOf: machinesFor(machines, ["i1", "i2", "i3"]),
        deletePriority: new Set(["i3"]),
      }),
    });
    nodeTaints.set("fake:///zone-a/i1", [TAINT]);
    await run(scalePhase);
    expect(machines.writes).toEqual(["delete Machine/pool-1-i3"]);
  });
});

describe("scale: MachinePool Machines", () => {
  it("deletes through the Machine, so core drains the Node; the instance stays for now", async () => {
    const cloud = fakeCloud();
    const machines = fakeMachines();
    cloud.group = group([instanceOf("i1"), instanceOf("i2"), instanceOf("i3")]);
    const memory = new PoolMemory();
    const { run, events } = scaleScope(cloud, 2, {
      machines,
      memory,
      machinesState: machinesState(3, {
        machineOf: machinesFor(machines, ["i1", "i2", "i3"]),
      }),
    });
    await run(scalePhase);
    expect(cloud.mutating()).toEqual([]);
    expect(machines.writes).toEqual(["delete Machine/pool-1-i1"]);
    expect(machines.machines.get("pool-1-i1")?.metadata?.deletionTimestamp).toBeDefined();
    expect(events).toEqual([
      {
        type: "Normal",
        reason: "InstanceDeleted",
        message:
          "removing instance i1 to scale down: deleting Machine pool-1-i1 (core drains its Node, then the instance goes)",
      },
    ]);
    // Not deleted by the kit yet: a vanishing ID would still get the grace.
    expect(memory.departed.size).toBe(0);
  });

  it("picks the instance whose Machine is marked delete-machine first", async () => {
    const cloud = fakeCloud();
    const machines = fakeMachines();
    cloud.group = group([instanceOf("i1"), instanceOf("i2"), instanceOf("i3")]);
    const { run } = scaleScope(cloud, 2, {
      machines,
      machinesState: machinesState(3, {
        machineOf: machinesFor(machines, ["i1", "i2", "i3"]),
        deletePriority: new Set(["i3"]),
      }),
    });
    await run(scalePhase);
    expect(machines.writes).toEqual(["delete Machine/pool-1-i3"]);
  });

  it("does not delete a Machine again while it is being deleted", async () => {
    const cloud = fakeCloud();
    const machines = fakeMachines();
    cloud.group = group([instanceOf("i1"), instanceOf("i2")]);
    const machineOf = machinesFor(machines, ["i1", "i2"]);
    // Deleted earlier: core is draining its Node.
    await machines.api.deleteMachine(machineOf.get("i1") as Machine);
    expect(machineOf.get("i1")?.metadata?.deletionTimestamp).toBeDefined();
    machines.writes.length = 0;
    const { run, events } = scaleScope(cloud, 1, {
      machines,
      machinesState: machinesState(2, { machineOf }),
    });
    await run(scalePhase);
    expect(machines.writes).toEqual([]);
    expect(cloud.mutating()).toEqual([]);
    expect(events).toEqual([]);
  });

  it("deletes an instance core made no Machine for through the driver", async () => {
    const cloud = fakeCloud();
    const machines = fakeMachines();
    cloud.group = group([instanceOf("i1"), instanceOf("i2")]);
    const { run } = scaleScope(cloud, 1, {
      machines,
      machinesState: machinesState(2, { machineOf: machinesFor(machines, ["i2"]) }),
    });
    await run(scalePhase);
    expect(calls(cloud)).toEqual([["deleteInstance", "i1", "shrink"]]);
    expect(machines.writes).toEqual([]);
  });

  it("needs scope.api.machines to delete through a Machine", async () => {
    const cloud = fakeCloud();
    const machines = fakeMachines();
    cloud.group = group([instanceOf("i1"), instanceOf("i2")]);
    const { run } = scaleScope(cloud, 1, {
      machinesState: machinesState(2, { machineOf: machinesFor(machines, ["i1", "i2"]) }),
    });
    await expect(run(scalePhase)).rejects.toThrow("MachinePool Machines need scope.api.machines");
  });

  it("does not count instances on their way out, nor the shrink their deletes will bring", async () => {
    const cloud = fakeCloud();
    const machines = fakeMachines();
    cloud.group = group([instanceOf("i1"), instanceOf("i2"), instanceOf("i3")]);
    const { run, section } = scaleScope(cloud, 2, {
      machines,
      machinesState: machinesState(3, {
        machineOf: machinesFor(machines, ["i1", "i2", "i3"]),
        leaving: new Set(["i3"]),
        pendingShrink: 1,
      }),
    });
    await run(scalePhase);
    expect(cloud.mutating()).toEqual([]);
    expect(machines.writes).toEqual([]);
    expect(section("scale")?.plan).toMatchObject({ live: 2, converged: true, actions: [] });
  });

  it("keeps the group within desired + maxSurge while a drained instance still runs", async () => {
    const cloud = fakeCloud();
    const machines = fakeMachines();
    // i3 is being drained and will shrink the group; i1 is outdated; one surge instance is allowed.
    cloud.group = group(
      [instanceOf("i1", { version: "1" }), instanceOf("i2"), instanceOf("i3")],
      2,
    );
    const { run, events } = scaleScope(cloud, 2, {
      machines,
      machinesState: machinesState(2, {
        machineOf: machinesFor(machines, ["i1", "i2", "i3"]),
        leaving: new Set(["i3"]),
        pendingShrink: 1,
      }),
    });
    await run(scalePhase);
    // The plan asks for 3; adding back the pending shrink would make 4, over the ceiling of 3.
    expect(calls(cloud)).toEqual([["updateGroup", { replicas: 3 }]]);
    expect(events.map((e) => e.message)).toEqual(["scaling up to 3 replicas"]);
  });

  it("adds the pending shrink back when scaling up, up to the surge ceiling", async () => {
    const cloud = fakeCloud();
    const machines = fakeMachines();
    cloud.group = group([instanceOf("i1"), instanceOf("i2"), instanceOf("i3")], 3);
    const { run } = scaleScope(cloud, 4, {
      machines,
      machinesState: machinesState(3, {
        machineOf: machinesFor(machines, ["i1", "i2", "i3"]),
        leaving: new Set(["i3"]),
        pendingShrink: 1,
      }),
    });
    await run(scalePhase);
    // 4 wanted besides i3, which shrinks the group to 4 when it goes.
    expect(calls(cloud)).toEqual([["updateGroup", { replicas: 5 }]]);
  });

  it("makes no call when the group already has the size the plan comes to", async () => {
    const cloud = fakeCloud();
    const machines = fakeMachines();
    cloud.group = group(
      [instanceOf("i1", { version: "1" }), instanceOf("i2"), instanceOf("i3")],
      3,
    );
    const { run, events } = scaleScope(cloud, 2, {
      machines,
      machinesState: machinesState(3, {
        machineOf: machinesFor(machines, ["i1", "i2", "i3"]),
        leaving: new Set(["i3"]),
        pendingShrink: 1,
      }),
    });
    await run(scalePhase);
    expect(cloud.mutating()).toEqual([]);
    expect(events).toEqual([]);
  });
});

describe("scale: the section", () => {
  it("holds the strategy, the plan, the outdated count and provisioned", async () => {
    const cloud = fakeCloud();
    const instances: PoolInstance[] = [
      instanceOf("i1", { version: "1" }),
      instanceOf("i2"),
      instanceOf("i3", { state: "terminating", version: "1" }),
    ];
    cloud.group = group(instances, 3);
    const { run, section } = scaleScope(cloud, 2, {
      options: { strategy: { maxSurge: 1, maxUnavailable: 1 } },
    });
    expect(await run(scalePhase)).toBeUndefined();
    expect(section("scale")).toEqual({
      strategy: { maxSurge: 1, maxUnavailable: 1, deletePolicy: "Oldest" },
      plan: {
        actions: [
          {
            kind: "deleteInstance",
            instance: instances[0],
            mode: "shrink",
            reason: "Rollout",
          },
        ],
        live: 2,
        available: 2,
        outdated: 1,
        targetGroupSize: 3,
        converged: false,
        blockedByAvailability: false,
        failed: 0,
        remediationWaiting: [],
        healthCheckFailed: 0,
      },
      outdated: 1,
      provisioned: true,
      workloadUnavailable: undefined,
    });
  });

  it("takes the pool's spec.strategy over the controller's option, resolved against desired", async () => {
    const cloud = fakeCloud();
    cloud.group = group([instanceOf("i1"), instanceOf("i2"), instanceOf("i3"), instanceOf("i4")]);
    const { run, section } = scaleScope(cloud, 4, {
      spec: { image: "img-1", strategy: { maxSurge: 3 } } as FakeSpec,
      options: { strategy: { maxSurge: "50%", maxUnavailable: "50%" } },
    });
    await run(scalePhase);
    expect(section("scale")?.strategy).toEqual({
      maxSurge: 3,
      maxUnavailable: 2,
      deletePolicy: "Oldest",
    });
  });

  it("is not provisioned while the group is being created, nor short of available instances", async () => {
    const cloud = fakeCloud();
    cloud.group = { ...group([instanceOf("i1"), instanceOf("i2")]), status: "creating" };
    const creating = scaleScope(cloud, 2);
    await creating.run(scalePhase);
    expect(creating.section("scale")?.provisioned).toBe(false);

    cloud.group = group([instanceOf("i1"), instanceOf("i2", { state: "pending" })]);
    const pending = scaleScope(cloud, 2);
    await pending.run(scalePhase);
    expect(pending.section("scale")?.provisioned).toBe(false);

    cloud.group = group([instanceOf("i1"), instanceOf("i2")]);
    const ready = scaleScope(cloud, 2);
    await ready.run(scalePhase);
    expect(ready.section("scale")?.provisioned).toBe(true);
  });

  it("counts outdated instances among live ones only", async () => {
    const cloud = fakeCloud();
    cloud.group = group([
      instanceOf("i1", { version: "1", state: "terminated" }),
      instanceOf("i2"),
    ]);
    const { run, section } = scaleScope(cloud, 1);
    await run(scalePhase);
    expect(section("scale")?.outdated).toBe(0);
  });
});

describe("scale phase with minReadySeconds", () => {
  /** Nodes for `ids`, each Ready since `agoMs` before the scope's clock. */
  function readyFor(test: ReturnType<typeof scaleScope>, nodes: Record<string, number>) {
    for (const [id, agoMs] of Object.entries(nodes)) {
      const providerID = `fake:///zone-a/${id}`;
      test.workloadNodes.set(providerID, {
        name: id,
        providerID,
        resourceVersion: "1",
        labels: {},
        annotations: {},
        taints: [],
        readySince: test.clock.now() - agoMs,
      });
    }
  }

  it("counts a Ready Node available only once it has been Ready that long", async () => {
    const cloud = fakeCloud();
    cloud.group = group([instanceOf("i1"), instanceOf("i2")]);
    const test = scaleScope(cloud, 2, {
      options: { readiness: "node" },
      machinePoolTemplate: { spec: { minReadySeconds: 30 } },
    });
    readyFor(test, { i1: 40_000, i2: 10_000 });
    await test.run(scalePhase);
    expect(test.section("scale")?.plan.available).toBe(1);
    expect(test.section("scale")?.plan.converged).toBe(false);
    // Look again when i2 has been Ready for 30 s, not before and not a poll interval later.
    expect(test.section("scale")?.nodesAvailableInMs).toBe(20_000);
  });

  it("holds a rollout until the new instance's Node has been Ready for minReadySeconds", async () => {
    const cloud = fakeCloud();
    cloud.group = group([instanceOf("i1", { version: "1" }), instanceOf("i2")], 2);
    const options = {
      options: { readiness: "node" as const, strategy: { maxSurge: 1, maxUnavailable: 0 } },
      machinePoolTemplate: { spec: { minReadySeconds: 30 } },
    };
    const early = scaleScope(cloud, 1, options);
    readyFor(early, { i1: 3_600_000, i2: 5_000 });
    await early.run(scalePhase);
    expect(cloud.calls.filter((c) => c.op === "deleteInstance")).toEqual([]);
    expect(early.section("scale")?.plan.blockedByAvailability).toBe(true);

    const later = scaleScope(cloud, 1, options);
    readyFor(later, { i1: 3_600_000, i2: 30_000 });
    await later.run(scalePhase);
    expect(cloud.calls.filter((c) => c.op === "deleteInstance").map((c) => c.args[0])).toEqual([
      "i1",
    ]);
  });

  it("counts a Ready Node at once without minReadySeconds", async () => {
    const cloud = fakeCloud();
    cloud.group = group([instanceOf("i1")]);
    const test = scaleScope(cloud, 1, { options: { readiness: "node" } });
    test.readyNodes.add("fake:///zone-a/i1");
    await test.run(scalePhase);
    expect(test.section("scale")?.plan.available).toBe(1);
    expect(test.section("scale")?.nodesAvailableInMs).toBeUndefined();
  });
});
