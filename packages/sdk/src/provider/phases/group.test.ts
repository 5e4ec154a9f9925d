// The `group` phase on a fake scope and an in-memory driver: create, replicas under an external
// autoscaler, settings and template version, the settings runaway, the group's bounds.
import { describe, expect, it } from "vitest";
import type {
  GroupIntent,
  GroupModelPoolDriver,
  GroupUpdate,
  PoolGroup,
  TemplateStamp,
} from "../driver.js";
import { PoolMemory } from "../memory.js";
import type { BoundsSection, PoolSections } from "../phase.js";
import { MAX_UNCONVERGED_BOUNDS_UPDATES, MAX_UNCONVERGED_SETTINGS_UPDATES } from "../runaway.js";
import { stableStringify } from "../stamp.js";
import {
  type FakeCloud,
  type FakeScopeOptions,
  type FakeSettings,
  type FakeSpec,
  fakeCloud,
  fakeInstance,
  fakeScope,
} from "../testing.js";
import { groupPhase } from "./group.js";

const MANAGED_BY = "cluster.x-k8s.io/replicas-managed-by";
const STAMP: TemplateStamp = { specHash: "aaaa", bootstrapHash: "bbbb", bootstrapRef: "cccc" };
const SETTINGS: FakeSettings = { maxSize: 10 };
/** What `autoscalerBounds` writes for a driver without `groupBounds` and no annotations. */
const NO_BOUNDS: BoundsSection = {
  wanted: undefined,
  target: undefined,
  autoscaler: { state: "absent" },
  condition: undefined,
};

function group(overrides: Partial<PoolGroup<FakeSettings>> = {}): PoolGroup<FakeSettings> {
  return {
    id: "group-1",
    status: "active",
    desiredReplicas: 2,
    templateVersion: "2",
    settings: SETTINGS,
    instances: [fakeInstance({ id: "i-a" }), fakeInstance({ id: "i-b" })],
    ...overrides,
  };
}

/** What `bootstrapData`, `desiredState`, `observe` and `template` would have written. */
function groupInputs(
  observed: PoolGroup<FakeSettings> | null,
  settings: FakeSettings = SETTINGS,
  bounds: BoundsSection = NO_BOUNDS,
): Partial<PoolSections<FakeSpec, FakeSettings>> {
  return {
    bootstrap: {
      userData: "#cloud-config\n",
      format: "cloud-config",
      secretRef: "default/pool-1-bootstrap",
    },
    desired: { stamp: STAMP, settings },
    observed: { versions: [], group: observed },
    template: {
      version: { version: "2", stamp: STAMP },
      versions: [
        { version: "1", stamp: undefined },
        { version: "2", stamp: STAMP },
      ],
      isUpToDate: (i) => i.templateVersion === "2",
    },
    bounds,
  };
}

/** A scope over `cloud` with the group phase's inputs; `cloud.group` is what `observe` read. */
function groupScope(
  cloud: FakeCloud,
  options: FakeScopeOptions & { settings?: FakeSettings; bounds?: BoundsSection } = {},
) {
  const { settings, bounds, ...rest } = options;
  return fakeScope({
    driver: cloud.driver,
    sections: groupInputs(cloud.group ?? null, settings, bounds),
    ...rest,
  });
}

/** The fake cloud's driver with its model in the group (no template methods). */
function groupModelDriver(cloud: FakeCloud): GroupModelPoolDriver<FakeSpec, FakeSettings> {
  const {
    getTemplate: _get,
    createTemplateVersion: _create,
    deleteTemplate: _delete,
    ...rest
  } = cloud.driver;
  return { ...rest, model: "group" };
}

/** The intent of the first createGroup call. */
function intentOf(cloud: FakeCloud): GroupIntent<FakeSettings> {
  const call = cloud.calls.find((c) => c.op === "createGroup");
  if (!call) throw new Error("no createGroup call");
  return call.args[0] as GroupIntent<FakeSettings>;
}

const updates = (cloud: FakeCloud) =>
  cloud.calls.filter((c) => c.op === "updateGroup").map((c) => c.args[0] as GroupUpdate<unknown>);

describe("group: creating the group", () => {
  it("creates it with the MachinePool's replicas on the target version, and ends the reconcile", async () => {
    const cloud = fakeCloud();
    const { run, events, section } = groupScope(cloud, { replicas: 3 });
    const result = await run(groupPhase);
    expect(cloud.mutating()).toEqual([
      {
        op: "createGroup",
        args: [{ replicas: 3, templateVersion: "2", settings: SETTINGS }],
      },
    ]);
    expect(events).toEqual([
      {
        type: "Normal",
        reason: "GroupCreated",
        message: "created group with 3 replicas on template version 2",
      },
    ]);
    expect(result).toEqual({
      ready: { status: "False", reason: "Provisioning", message: "group created" },
      requeueAfterMs: 100,
    });
    // The reconcile ends here: the next one observes the new group.
    expect(section("group")).toBeUndefined();
  });

  it("creates one replica when the MachinePool has no replicas", async () => {
    const cloud = fakeCloud();
    const test = groupScope(cloud);
    const spec = test.scope.machinePool?.spec as { replicas?: number };
    delete spec.replicas;
    await test.run(groupPhase);
    expect(intentOf(cloud).replicas).toBe(1);
  });

  it("leaves replicas to the cloud under an external autoscaler", async () => {
    const cloud = fakeCloud();
    const { run, events, replicaWrites } = groupScope(cloud, {
      replicas: 4,
      machinePoolAnnotations: { [MANAGED_BY]: "cluster-autoscaler" },
    });
    await run(groupPhase);
    expect(cloud.mutating().map((c) => c.op)).toEqual(["createGroup"]);
    expect(intentOf(cloud).replicas).toBeUndefined();
    expect(events[0]?.message).toBe(
      "created group with the cloud's default number of replicas on template version 2",
    );
    // Nothing to hand back yet: the group does not exist until the next read.
    expect(replicaWrites).toEqual([]);
  });

  it('treats replicas-managed-by "false" as not managed externally', async () => {
    const cloud = fakeCloud();
    const { run } = groupScope(cloud, {
      replicas: 4,
      machinePoolAnnotations: { [MANAGED_BY]: "false" },
    });
    await run(groupPhase);
    expect(intentOf(cloud).replicas).toBe(4);
  });

  it("passes the model (bootstrap data and stamp) to a driver with model: group", async () => {
    const cloud = fakeCloud();
    const { run } = groupScope(cloud, { driver: groupModelDriver(cloud) });
    await run(groupPhase);
    expect(cloud.calls.map((c) => c.op)).toEqual(["createGroup"]);
    expect(intentOf(cloud)).toEqual({
      replicas: 2,
      templateVersion: "2",
      settings: SETTINGS,
      model: {
        userData: "#cloud-config\n",
        userDataBase64: Buffer.from("#cloud-config\n").toString("base64"),
        format: "cloud-config",
        stamp: STAMP,
      },
    });
  });

  it("refuses to run without the owner MachinePool", async () => {
    const cloud = fakeCloud();
    const test = groupScope(cloud);
    Object.assign(test.scope, { machinePool: undefined });
    await expect(test.run(groupPhase)).rejects.toThrow(/needs the owner MachinePool/);
    expect(cloud.calls).toEqual([]);
  });
});

describe("group: replicas", () => {
  it("writes the cloud's size back to the MachinePool under an external autoscaler", async () => {
    const cloud = fakeCloud();
    cloud.group = group({ desiredReplicas: 5 });
    const { run, events, replicaWrites, section } = groupScope(cloud, {
      replicas: 2,
      machinePoolAnnotations: { [MANAGED_BY]: "" },
    });
    expect(await run(groupPhase)).toBeUndefined();
    expect(replicaWrites).toEqual([5]);
    expect(events).toEqual([
      {
        type: "Normal",
        reason: "ReplicasSynced",
        message: "MachinePool replicas set to 5 from the cloud (managed by an external autoscaler)",
      },
    ]);
    expect(cloud.mutating()).toEqual([]);
    expect(section("group")).toEqual({ group: cloud.group, desired: 5, external: true });
  });

  it("writes nothing back when the MachinePool already has the cloud's size", async () => {
    const cloud = fakeCloud();
    cloud.group = group({ desiredReplicas: 3 });
    const { run, events, replicaWrites, section } = groupScope(cloud, {
      replicas: 3,
      machinePoolAnnotations: { [MANAGED_BY]: "karpenter" },
    });
    await run(groupPhase);
    expect(replicaWrites).toEqual([]);
    expect(events).toEqual([]);
    expect(section("group")?.desired).toBe(3);
  });

  it("takes the MachinePool's replicas as desired otherwise, and leaves resizing to scale", async () => {
    const cloud = fakeCloud();
    cloud.group = group({ desiredReplicas: 5 });
    const { run, replicaWrites, section } = groupScope(cloud, { replicas: 2 });
    await run(groupPhase);
    expect(replicaWrites).toEqual([]);
    expect(cloud.mutating()).toEqual([]);
    expect(section("group")).toEqual({ group: cloud.group, desired: 2, external: false });
  });
});

describe("group: settings and template version", () => {
  it("updates drifted settings and ends the reconcile to plan with the cloud's new bounds", async () => {
    const cloud = fakeCloud();
    cloud.group = group({ settings: { maxSize: 5 } });
    const memory = new PoolMemory();
    const { run, events, section } = groupScope(cloud, { memory });
    const result = await run(groupPhase);
    expect(cloud.mutating()).toEqual([{ op: "updateGroup", args: [{ settings: SETTINGS }] }]);
    expect(events).toEqual([
      { type: "Normal", reason: "GroupUpdated", message: "settings drifted" },
    ]);
    expect(result).toEqual({
      ready: { status: "False", reason: "ScalingUp", message: "group settings updated" },
      requeueAfterMs: 100,
    });
    expect(section("group")).toBeUndefined();
    expect(memory.settingsUpdates).toEqual({
      desired: stableStringify(SETTINGS),
      count: 1,
      releases: 0,
    });
  });

  it("compares settings by value, not by key order", async () => {
    const cloud = fakeCloud();
    const wanted = { maxSize: 10, zones: ["a", "b"] } as unknown as FakeSettings;
    cloud.group = group({
      settings: { zones: ["a", "b"], maxSize: 10 } as unknown as FakeSettings,
    });
    const { run, section } = groupScope(cloud, { settings: wanted });
    await run(groupPhase);
    expect(cloud.mutating()).toEqual([]);
    expect(section("group")?.group).toBe(cloud.group);
  });

  it("moves the group to the target template version in the same call as drifted settings", async () => {
    const cloud = fakeCloud();
    cloud.group = group({ settings: { maxSize: 5 }, templateVersion: "1" });
    const { run, events } = groupScope(cloud);
    const result = await run(groupPhase);
    expect(updates(cloud)).toEqual([{ settings: SETTINGS, templateVersion: "2" }]);
    expect(events.map((e) => e.message)).toEqual([
      "settings drifted; launches now use template version 2",
    ]);
    expect(result?.ready.reason).toBe("ScalingUp");
  });

  it("moves launches to the target version and goes on with the group as updated", async () => {
    const cloud = fakeCloud();
    const observed = group({ templateVersion: "1" });
    cloud.group = observed;
    const { run, events, section } = groupScope(cloud);
    expect(await run(groupPhase)).toBeUndefined();
    expect(cloud.mutating()).toEqual([{ op: "updateGroup", args: [{ templateVersion: "2" }] }]);
    expect(events).toEqual([
      {
        type: "Normal",
        reason: "GroupUpdated",
        message: "launches now use template version 2",
      },
    ]);
    // Existing instances are not touched; the section carries the group on its new version.
    expect(section("group")).toEqual({
      group: { ...observed, templateVersion: "2" },
      desired: 2,
      external: false,
    });
  });

  it("moves a group that reports no template version", async () => {
    const cloud = fakeCloud();
    cloud.group = group({ templateVersion: undefined });
    const { run, section } = groupScope(cloud);
    await run(groupPhase);
    expect(updates(cloud)).toEqual([{ templateVersion: "2" }]);
    expect(section("group")?.group.templateVersion).toBe("2");
  });

  it("never moves the template version of a driver with model: group", async () => {
    const cloud = fakeCloud();
    cloud.group = group({ templateVersion: undefined });
    const { run, events, section } = groupScope(cloud, { driver: groupModelDriver(cloud) });
    await run(groupPhase);
    expect(cloud.calls).toEqual([]);
    expect(events).toEqual([]);
    expect(section("group")?.group.templateVersion).toBeUndefined();
  });

  it("changes nothing when the group matches, and ends the settings streak", async () => {
    const cloud = fakeCloud();
    cloud.group = group();
    const memory = new PoolMemory();
    memory.settingsUpdates = { desired: stableStringify(SETTINGS), count: 2 };
    const { run, events, section } = groupScope(cloud, { memory });
    expect(await run(groupPhase)).toBeUndefined();
    expect(cloud.calls).toEqual([]);
    expect(events).toEqual([]);
    expect(memory.settingsUpdates).toBeUndefined();
    expect(section("group")).toEqual({ group: cloud.group, desired: 2, external: false });
  });
});

describe("group: settings the cloud never reports back", () => {
  it(`stops after ${MAX_UNCONVERGED_SETTINGS_UPDATES} updates of the same settings`, async () => {
    const cloud = fakeCloud();
    const memory = new PoolMemory();
    // Each reconcile observes other settings than the ones updateGroup applied.
    const stale = group({ settings: { maxSize: 99 } });
    const reconcile = () => {
      cloud.group = stale;
      return groupScope(cloud, { memory });
    };
    for (let i = 1; i <= MAX_UNCONVERGED_SETTINGS_UPDATES; i++) {
      const { run } = reconcile();
      expect((await run(groupPhase))?.ready.reason).toBe("ScalingUp");
      expect(memory.settingsUpdates?.count).toBe(i);
    }
    const last = reconcile();
    const result = await last.run(groupPhase);
    expect(updates(cloud)).toHaveLength(MAX_UNCONVERGED_SETTINGS_UPDATES);
    expect(result?.ready.reason).toBe("SettingsNotConverging");
    expect(result?.ready.message).toBe(
      `updateGroup applied these settings ${MAX_UNCONVERGED_SETTINGS_UPDATES} times but getGroup still reports others (differing: maxSize); report settings in exactly the shape groupSettings returns (same keys, lists sorted); the kit makes no cloud change to this pool until this is fixed`,
    );
    expect(result?.requeueAfterMs).toBe(last.scope.options.resyncMs);
    expect(last.events).toEqual([
      { type: "Warning", reason: "SettingsNotConverging", message: result?.ready.message },
    ]);
    expect(memory.stopped?.reason).toBe("SettingsNotConverging");
    expect(last.section("group")).toBeUndefined();

    // Stopped again on the next reconcile, without a second Warning.
    const again = reconcile();
    await again.run(groupPhase);
    expect(updates(cloud)).toHaveLength(MAX_UNCONVERGED_SETTINGS_UPDATES);
    expect(again.events).toEqual([]);
  });

  it("starts a new streak when the desired settings change", async () => {
    const cloud = fakeCloud();
    cloud.group = group({ settings: { maxSize: 99 } });
    const memory = new PoolMemory();
    memory.settingsUpdates = {
      desired: stableStringify({ maxSize: 7 }),
      count: MAX_UNCONVERGED_SETTINGS_UPDATES,
    };
    const { run } = groupScope(cloud, { memory });
    expect((await run(groupPhase))?.ready.reason).toBe("ScalingUp");
    expect(updates(cloud)).toEqual([{ settings: SETTINGS }]);
    expect(memory.settingsUpdates).toEqual({
      desired: stableStringify(SETTINGS),
      count: 1,
      releases: 0,
    });
  });

  it("names every differing key, sorted, and no values", async () => {
    const cloud = fakeCloud();
    const wanted = { maxSize: 10, zones: ["a"], tags: { team: "x" } } as unknown as FakeSettings;
    cloud.group = group({
      settings: { maxSize: 10, zones: ["b"], secret: "s3cr3t" } as unknown as FakeSettings,
    });
    const memory = new PoolMemory();
    memory.settingsUpdates = {
      desired: stableStringify(wanted),
      count: MAX_UNCONVERGED_SETTINGS_UPDATES,
    };
    const { run } = groupScope(cloud, { memory, settings: wanted });
    const result = await run(groupPhase);
    expect(result?.ready.message).toContain("(differing: secret, tags, zones)");
    expect(result?.ready.message).not.toContain("s3cr3t");
    expect(cloud.calls).toEqual([]);
  });

  it("says the whole value differs for settings that are not an object", async () => {
    const cloud = fakeCloud();
    cloud.group = group({ settings: "small" as unknown as FakeSettings });
    const wanted = "large" as unknown as FakeSettings;
    const memory = new PoolMemory();
    memory.settingsUpdates = {
      desired: stableStringify(wanted),
      count: MAX_UNCONVERGED_SETTINGS_UPDATES,
    };
    const { run } = groupScope(cloud, { memory, settings: wanted });
    expect((await run(groupPhase))?.ready.message).toContain("(differing: the whole value)");
  });
});

describe("group: the group's bounds", () => {
  it("refuses replicas below the group's minimum, publishing the instances and stopping", async () => {
    const cloud = fakeCloud();
    cloud.group = group({ minReplicas: 3, maxReplicas: 5 });
    const { run, scope, section } = groupScope(cloud, { replicas: 2 });
    const result = await run(groupPhase);
    expect(result).toEqual({
      ready: {
        status: "False",
        reason: "ReplicasOutOfRange",
        message:
          "MachinePool replicas 2 is outside the group's bounds [3, 5]; change the replicas or the pool's size limits",
      },
      requeueAfterMs: scope.options.resyncMs,
    });
    expect(scope.pool.spec?.providerIDList).toEqual(["fake:///zone-a/i-a", "fake:///zone-a/i-b"]);
    expect(scope.pool.status).toMatchObject({ replicas: 2 });
    expect(scope.pool.status?.ready).toBeUndefined();
    expect(section("group")).toBeUndefined();
    expect(cloud.calls).toEqual([]);
  });

  it("refuses replicas above the maximum, with an open lower bound", async () => {
    const cloud = fakeCloud();
    cloud.group = group({ maxReplicas: 5 });
    const { run } = groupScope(cloud, { replicas: 6 });
    expect((await run(groupPhase))?.ready.message).toMatch(
      /^MachinePool replicas 6 is outside the group's bounds \[0, 5\]/,
    );
  });

  it("refuses replicas below the minimum, with an open upper bound", async () => {
    const cloud = fakeCloud();
    cloud.group = group({ minReplicas: 3 });
    const { run } = groupScope(cloud, { replicas: 1 });
    expect((await run(groupPhase))?.ready.message).toMatch(/bounds \[3, ∞\]/);
  });

  it("accepts replicas on the bounds", async () => {
    const cloud = fakeCloud();
    cloud.group = group({ minReplicas: 2, maxReplicas: 2 });
    const { run, section } = groupScope(cloud, { replicas: 2 });
    expect(await run(groupPhase)).toBeUndefined();
    expect(section("group")?.desired).toBe(2);
  });

  it("checks the bounds after moving the template version", async () => {
    const cloud = fakeCloud();
    cloud.group = group({ templateVersion: "1", maxReplicas: 1 });
    const { run } = groupScope(cloud, { replicas: 2 });
    expect((await run(groupPhase))?.ready.reason).toBe("ReplicasOutOfRange");
    expect(updates(cloud)).toEqual([{ templateVersion: "2" }]);
  });

  it("does not check them under an external autoscaler (the cloud keeps its size within them)", async () => {
    const cloud = fakeCloud();
    // The cloud reports a size outside bounds that were just lowered: the kit does not fight it.
    cloud.group = group({ desiredReplicas: 6, minReplicas: 3, maxReplicas: 5 });
    const { run, section, replicaWrites } = groupScope(cloud, {
      replicas: 9,
      machinePoolAnnotations: { [MANAGED_BY]: "autoscaler" },
    });
    expect(await run(groupPhase)).toBeUndefined();
    expect(replicaWrites).toEqual([6]);
    expect(section("group")).toMatchObject({ desired: 6, external: true });
  });
});

describe("group: the bounds the autoscalerBounds phase chose", () => {
  /** What `autoscalerBounds` writes for a driver with `groupBounds` under the autoscaler's [min, max]. */
  const chosen = (
    wanted: { min: number; max: number },
    target = wanted,
    autoscaler: BoundsSection["autoscaler"] = { state: "valid", min: 0, max: 15 },
  ): BoundsSection => ({ wanted, target, autoscaler, condition: undefined });

  it("creates the group with them, in the call that sets its size", async () => {
    const cloud = fakeCloud();
    const { run } = groupScope(cloud, { replicas: 12, bounds: chosen({ min: 0, max: 15 }) });
    await run(groupPhase);
    expect(intentOf(cloud)).toEqual({
      replicas: 12,
      templateVersion: "2",
      settings: SETTINGS,
      bounds: { min: 0, max: 15 },
    });
  });

  it("refuses to create a group whose size is outside the pool's own bounds, without a call", async () => {
    const cloud = fakeCloud();
    const { run } = groupScope(cloud, {
      replicas: 8,
      bounds: chosen({ min: 0, max: 5 }, undefined, { state: "absent" }),
    });
    const result = await run(groupPhase);
    expect(result?.ready).toEqual({
      status: "False",
      reason: "ReplicasOutOfRange",
      message:
        "MachinePool replicas 8 is outside the group's bounds [0, 5]; change the replicas or the pool's size limits",
    });
    expect(cloud.calls).toEqual([]);
  });

  it("widens the group's bounds before any size change, and plans with the new ones", async () => {
    const cloud = fakeCloud();
    cloud.group = group({ minReplicas: 0, maxReplicas: 10 });
    const memory = new PoolMemory();
    const { run, events, section } = groupScope(cloud, {
      replicas: 12,
      memory,
      bounds: chosen({ min: 0, max: 15 }),
    });
    expect(await run(groupPhase)).toBeUndefined();
    expect(updates(cloud)).toEqual([{ bounds: { min: 0, max: 15 } }]);
    expect(events).toEqual([
      {
        type: "Normal",
        reason: "GroupUpdated",
        message: "bounds [0, 10] → [0, 15] (covering the cluster-autoscaler's [0, 15])",
      },
    ]);
    // Not refused against the old [0, 10]: scale goes on to 12 within the new bounds.
    expect(section("group")).toMatchObject({
      desired: 12,
      group: { minReplicas: 0, maxReplicas: 15, templateVersion: "2" },
    });
    expect(memory.boundsUpdates).toEqual({ desired: "0/15", count: 1 });
  });

  it("refuses replicas outside the pool's own bounds even while the group's are still wider", async () => {
    const cloud = fakeCloud();
    // The pool's limit went from 10 to 5 while the group runs 8: its bounds narrow to [0, 8] first.
    cloud.group = group({ desiredReplicas: 8, maxReplicas: 10 });
    const { run } = groupScope(cloud, {
      replicas: 7,
      bounds: chosen({ min: 0, max: 5 }, { min: 0, max: 8 }, { state: "absent" }),
    });
    const result = await run(groupPhase);
    expect(updates(cloud)).toEqual([{ bounds: { min: 0, max: 8 } }]);
    expect(result?.ready.message).toBe(
      "MachinePool replicas 7 is outside the group's bounds [0, 5]; change the replicas or the pool's size limits",
    );
  });

  it("sends bounds, settings and template version in one update", async () => {
    const cloud = fakeCloud();
    cloud.group = group({ templateVersion: "1", settings: { maxSize: 3 }, maxReplicas: 10 });
    const { run } = groupScope(cloud, { bounds: chosen({ min: 0, max: 15 }) });
    await run(groupPhase);
    expect(updates(cloud)).toEqual([
      { bounds: { min: 0, max: 15 }, settings: SETTINGS, templateVersion: "2" },
    ]);
  });

  it("writes nothing when the group already has them", async () => {
    const cloud = fakeCloud();
    cloud.group = group({ minReplicas: 0, maxReplicas: 15 });
    const memory = new PoolMemory();
    memory.boundsUpdates = { desired: "0/15", count: 1 };
    const { run } = groupScope(cloud, { memory, bounds: chosen({ min: 0, max: 15 }) });
    expect(await run(groupPhase)).toBeUndefined();
    expect(cloud.calls).toEqual([]);
    expect(memory.boundsUpdates).toBeUndefined();
  });

  it("writes no bounds for a driver without groupBounds, and refuses against the reported ones", async () => {
    const cloud = fakeCloud();
    cloud.group = group({ minReplicas: 0, maxReplicas: 10 });
    const { run } = groupScope(cloud, {
      replicas: 12,
      bounds: { ...NO_BOUNDS, autoscaler: { state: "valid", min: 0, max: 15 } },
    });
    expect((await run(groupPhase))?.ready.reason).toBe("ReplicasOutOfRange");
    expect(cloud.calls).toEqual([]);
  });

  it("stops a driver that never reports the bounds it applied, with a named reason", async () => {
    const cloud = fakeCloud();
    const memory = new PoolMemory();
    const driver = { ...cloud.driver, updateGroup: async () => undefined };
    for (let i = 1; i <= MAX_UNCONVERGED_BOUNDS_UPDATES; i++) {
      cloud.group = group({ minReplicas: 0, maxReplicas: 10 });
      const { run } = groupScope(cloud, { driver, memory, bounds: chosen({ min: 0, max: 15 }) });
      expect(await run(groupPhase)).toBeUndefined();
      expect(memory.boundsUpdates?.count).toBe(i);
    }
    const { run, events } = groupScope(cloud, {
      driver,
      memory,
      bounds: chosen({ min: 0, max: 15 }),
    });
    const result = await run(groupPhase);
    expect(result?.ready).toMatchObject({ status: "False", reason: "BoundsNotConverging" });
    expect(result?.ready.message).toContain(
      "updateGroup applied the bounds [0, 15] 3 times but getGroup still reports [0, 10]",
    );
    expect(events.at(-1)).toMatchObject({ type: "Warning", reason: "BoundsNotConverging" });
  });
});

describe("group: the record that survives clusterctl move", () => {
  const RECORD = "capi-ts.io/group-created";

  it("records the group it observes on the pool", async () => {
    const cloud = fakeCloud();
    cloud.group = group();
    const test = groupScope(cloud, { replicas: 2 });
    await test.run(groupPhase);
    expect(test.scope.pool.metadata?.annotations?.[RECORD]).toBe("group-1");
  });

  it("does not record a group it has only asked for (the cloud may list it late)", async () => {
    const cloud = fakeCloud();
    const test = groupScope(cloud, { replicas: 2 });
    await test.run(groupPhase);
    expect(cloud.mutating().map((c) => c.op)).toEqual(["createGroup"]);
    expect(test.scope.pool.metadata?.annotations?.[RECORD]).toBeUndefined();
  });

  it("creates nothing for a recorded group that is missing from a pool with empty status (moved)", async () => {
    const cloud = fakeCloud();
    const test = groupScope(cloud, { replicas: 2 });
    test.scope.pool.metadata = {
      ...test.scope.pool.metadata,
      annotations: { [RECORD]: "group-1" },
    };
    test.scope.pool.status = {};
    const result = await test.run(groupPhase);
    expect(cloud.mutating()).toEqual([]);
    expect(result?.ready).toMatchObject({ status: "False", reason: "GroupNotFound" });
    expect(result?.ready?.message).toContain("group-1");
    expect(result?.ready?.message).toContain("remove the annotation");
  });

  it("recreates a recorded group deleted out of band on this cluster (the status says it was provisioned)", async () => {
    const cloud = fakeCloud();
    const test = groupScope(cloud, { replicas: 2 });
    test.scope.pool.metadata = {
      ...test.scope.pool.metadata,
      annotations: { [RECORD]: "group-1" },
    };
    test.scope.pool.status = { ready: true, initialization: { provisioned: true } };
    await test.run(groupPhase);
    expect(cloud.mutating().map((c) => c.op)).toEqual(["createGroup"]);
  });
});
