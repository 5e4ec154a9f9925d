// The `teardown` phase on a fake scope and an in-memory driver: the group goes first, then the
// template and the InfraMachines; NotFound counts as done at every step.
import { describe, expect, it } from "vitest";
import type { InfraMachineObject } from "../../crd/machine.js";
import { DriverError, type GroupModelPoolDriver, type PoolGroup } from "../driver.js";
import {
  createTestScope,
  type FakeCloud,
  type FakeSettings,
  type FakeSpec,
  fakeCloud,
  fakeInstance,
  fakeMachineKind,
  fakeMachines,
  fakeScope,
} from "../testing.js";
import { teardownPhase } from "./teardown.js";

function group(
  instances: PoolGroup<FakeSettings>["instances"],
  overrides: Partial<PoolGroup<FakeSettings>> = {},
): PoolGroup<FakeSettings> {
  return {
    id: "group-1",
    status: "active",
    desiredReplicas: instances.length,
    templateVersion: "1",
    settings: { maxSize: 10 },
    instances,
    ...overrides,
  };
}

function groupModelDriver(cloud: FakeCloud): GroupModelPoolDriver<FakeSpec, FakeSettings> {
  const {
    getTemplate: _get,
    createTemplateVersion: _create,
    deleteTemplate: _delete,
    ...rest
  } = cloud.driver;
  return { ...rest, model: "group" };
}

function infraMachine(name: string, options: { finalizer?: boolean; deleting?: boolean } = {}) {
  return {
    apiVersion: "infrastructure.cluster.x-k8s.io/v1beta2",
    kind: fakeMachineKind.kind,
    metadata: {
      name,
      namespace: "default",
      ...(options.finalizer === false ? {} : { finalizers: [fakeMachineKind.finalizer] }),
      ...(options.deleting ? { deletionTimestamp: "2026-01-01T00:00:00Z" } : {}),
    },
  } as unknown as InfraMachineObject;
}

const ops = (cloud: FakeCloud) => cloud.calls.map((c) => c.op);

describe("teardown", () => {
  it("deletes the group, waits for it, deletes the template; NotFound is done", async () => {
    const cloud = fakeCloud();
    cloud.group = group([fakeInstance()]);
    let bed = fakeScope({ driver: cloud.driver });
    expect((await bed.run(teardownPhase))?.ready.reason).toBe("Deleting");
    expect(bed.section("teardown")).toBeUndefined();
    cloud.group = undefined;
    cloud.faults.deleteTemplate = () => DriverError.notFound("NotFound", "gone");
    bed = fakeScope({ driver: cloud.driver });
    await bed.run(teardownPhase);
    expect(bed.section("teardown")).toEqual({ deleted: true });
  });
});

describe("teardown: the group", () => {
  it("deletes a live group once, says so, and waits for it", async () => {
    const cloud = fakeCloud();
    cloud.group = group([fakeInstance(), fakeInstance()]);
    const { run, events, section } = fakeScope({ driver: cloud.driver });
    const result = await run(teardownPhase);
    expect(ops(cloud)).toEqual(["getGroup", "deleteGroup"]);
    expect(events).toEqual([
      { type: "Normal", reason: "GroupDeleting", message: "deleting group group-1" },
    ]);
    expect(result).toEqual({
      ready: {
        status: "False",
        reason: "Deleting",
        message: "waiting for group group-1 to be deleted (2 instances left)",
      },
      requeueAfterMs: 100,
    });
    expect(section("teardown")).toBeUndefined();
  });

  it("does not delete a group that is already being deleted", async () => {
    const cloud = fakeCloud();
    cloud.group = group([fakeInstance()], { status: "deleting" });
    const { run, events } = fakeScope({ driver: cloud.driver });
    const result = await run(teardownPhase);
    expect(ops(cloud)).toEqual(["getGroup"]);
    expect(events).toEqual([]);
    expect(result?.ready.message).toBe("waiting for group group-1 to be deleted (1 instance left)");
  });

  it("counts only live instances as left", async () => {
    const cloud = fakeCloud();
    cloud.group = group(
      [
        fakeInstance({ state: "terminating" }),
        fakeInstance({ state: "terminated" }),
        fakeInstance({ state: "stopped" }),
      ],
      { status: "deleting" },
    );
    const { run } = fakeScope({ driver: cloud.driver });
    expect((await run(teardownPhase))?.ready.message).toBe(
      "waiting for group group-1 to be deleted (1 instance left)",
    );
  });

  it("counts NotFound on deleteGroup as done, and still waits for the group to go", async () => {
    const cloud = fakeCloud();
    cloud.group = group([]);
    cloud.faults.deleteGroup = () => DriverError.notFound("GroupNotFound", "no such group");
    const { run, events, section } = fakeScope({ driver: cloud.driver });
    const result = await run(teardownPhase);
    expect(ops(cloud)).toEqual(["getGroup", "deleteGroup"]);
    expect(events.map((e) => e.reason)).toEqual(["GroupDeleting"]);
    expect(result?.ready.message).toBe(
      "waiting for group group-1 to be deleted (0 instances left)",
    );
    expect(section("teardown")).toBeUndefined();
  });

  it("counts NotFound on getGroup as a group that is gone", async () => {
    const cloud = fakeCloud();
    cloud.faults.getGroup = () => DriverError.notFound("GroupNotFound", "no such group");
    const { run, events, section } = fakeScope({ driver: cloud.driver });
    const result = await run(teardownPhase);
    expect(ops(cloud)).toEqual(["getGroup", "deleteTemplate"]);
    expect(events.map((e) => e.reason)).toEqual(["Deleted"]);
    expect(result).toEqual({ ready: { status: "False", reason: "Deleting", message: "" } });
    expect(section("teardown")).toEqual({ deleted: true });
  });

  it.each(["getGroup", "deleteGroup"] as const)(
    "hands any other failure of %s to the error policy",
    async (op) => {
      const cloud = fakeCloud();
      cloud.group = group([]);
      cloud.faults[op] = () => DriverError.transient("Throttling", "slow down");
      const { run, events, section } = fakeScope({ driver: cloud.driver });
      await expect(run(teardownPhase)).rejects.toThrow(`${op}: transient: Throttling`);
      expect(events).toEqual([]);
      expect(section("teardown")).toBeUndefined();
      expect(ops(cloud)).not.toContain("deleteTemplate");
    },
  );
});

describe("teardown: once the group is gone", () => {
  it("deletes the whole template, records Deleted and writes the section", async () => {
    const cloud = fakeCloud();
    cloud.versions = [
      { version: "1", stamp: undefined },
      { version: "2", stamp: undefined },
    ];
    const { run, events, section } = fakeScope({ driver: cloud.driver });
    const result = await run(teardownPhase);
    expect(cloud.mutating()).toEqual([{ op: "deleteTemplate", args: [undefined] }]);
    expect(cloud.versions).toEqual([]);
    expect(events).toEqual([
      {
        type: "Normal",
        reason: "Deleted",
        message: "group and template deleted; finalizer removed",
      },
    ]);
    expect(result?.requeueAfterMs).toBeUndefined();
    expect(section("teardown")).toEqual({ deleted: true });
  });

  it("hands a failed deleteTemplate to the error policy, keeping the finalizer", async () => {
    const cloud = fakeCloud();
    cloud.faults.deleteTemplate = () => DriverError.terminal("AccessDenied", "not allowed");
    const { run, events, section } = fakeScope({ driver: cloud.driver });
    await expect(run(teardownPhase)).rejects.toThrow(/deleteTemplate: terminal: AccessDenied/);
    expect(events).toEqual([]);
    expect(section("teardown")).toBeUndefined();
  });

  it("skips deleteTemplate for a driver with model: group", async () => {
    const cloud = fakeCloud();
    const { run, events, section } = fakeScope({ driver: groupModelDriver(cloud) });
    await run(teardownPhase);
    expect(ops(cloud)).toEqual(["getGroup"]);
    expect(events).toEqual([
      { type: "Normal", reason: "Deleted", message: "group deleted; finalizer removed" },
    ]);
    expect(section("teardown")).toEqual({ deleted: true });
  });
});

describe("teardown: MachinePool Machines", () => {
  it("releases every InfraMachine once the group is gone", async () => {
    const cloud = fakeCloud();
    const machines = fakeMachines();
    for (const im of [
      infraMachine("pool-1-i-a"),
      infraMachine("pool-1-i-b", { deleting: true }),
      infraMachine("pool-1-i-c", { finalizer: false }),
    ]) {
      machines.infraMachines.set(im.metadata?.name ?? "", im);
    }
    const { run, section } = fakeScope({ driver: cloud.driver, machines });
    await run(teardownPhase);
    // The finalizer goes from each; those not yet being deleted are deleted.
    expect(machines.writes).toEqual([
      "unfinalize InfraMachine/pool-1-i-a",
      "delete InfraMachine/pool-1-i-a",
      "unfinalize InfraMachine/pool-1-i-b",
      "delete InfraMachine/pool-1-i-c",
    ]);
    expect([...machines.infraMachines.keys()]).toEqual([]);
    expect(section("teardown")).toEqual({ deleted: true });
  });

  it("leaves the InfraMachines alone while the group still exists", async () => {
    const cloud = fakeCloud();
    cloud.group = group([fakeInstance()], { status: "deleting" });
    const machines = fakeMachines();
    machines.infraMachines.set("pool-1-i-a", infraMachine("pool-1-i-a"));
    const { run } = fakeScope({ driver: cloud.driver, machines });
    await run(teardownPhase);
    expect(machines.writes).toEqual([]);
    expect(machines.infraMachines.has("pool-1-i-a")).toBe(true);
  });

  it("touches no InfraMachine for a kind without MachinePool Machines", async () => {
    const cloud = fakeCloud();
    const machines = fakeMachines();
    machines.infraMachines.set("pool-1-i-a", infraMachine("pool-1-i-a"));
    // The API is there, the kind declares no InfraMachine kind.
    const { run, section } = createTestScope({
      driver: cloud.driver,
      spec: { image: "img-1" },
      machinesApi: machines.api,
    });
    await run(teardownPhase);
    expect(machines.writes).toEqual([]);
    expect(section("teardown")).toEqual({ deleted: true });
  });
});
