// Unit tests of each phase against a fake scope and an in-memory driver: no API server, no timers.
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { DriverError, type PoolGroup } from "../driver.js";
import { PoolMemory } from "../memory.js";
import { defaultPoolPhases, insertPhase, type PoolPhase, runPhases } from "../pipeline.js";
import {
  type FakeSettings,
  type FakeSpec,
  fakeCloud,
  fakeInstance,
  fakeScope,
} from "../testkit.js";
import { observePhase } from "./observe.js";
import { desiredStatePhase, validateSpecPhase } from "./prerequisites.js";
import { publishInstances } from "./publish.js";
import { executeAction, scalePhase } from "./scale.js";
import { teardownPhase } from "./teardown.js";

const pipeline = defaultPoolPhases<FakeSpec, FakeSettings>();

/** One reconcile with a fresh scope over the same cloud and memory. */
async function reconcile(
  cloud: ReturnType<typeof fakeCloud>,
  memory: PoolMemory,
  extra: Parameters<typeof fakeScope>[0] = {},
) {
  const bed = fakeScope({ driver: cloud.driver, memory, ...extra });
  const result = await runPhases(pipeline, bed.scope);
  return { ...bed, result };
}

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

describe("the default pipeline on a fake cloud", () => {
  it("creates template and group, scales up, and is Ready with sorted IDs once instances run", async () => {
    const cloud = fakeCloud();
    const memory = new PoolMemory();
    let run = await reconcile(cloud, memory);
    expect(run.result.ready.reason).toBe("Provisioning");
    expect(cloud.mutating().map((c) => c.op)).toEqual(["createTemplateVersion", "createGroup"]);
    const group = cloud.group as PoolGroup<FakeSettings>;
    cloud.group = {
      ...group,
      instances: [fakeInstance({ id: "i-b" }), fakeInstance({ id: "i-a" })],
    };
    run = await reconcile(cloud, memory);
    expect(run.result.ready).toEqual({ status: "True", reason: "Ready", message: "" });
    expect(run.scope.pool.spec?.providerIDList).toEqual([
      "fake:///zone-a/i-a",
      "fake:///zone-a/i-b",
    ]);
    expect(run.scope.pool.status).toMatchObject({ replicas: 2, ready: true });
  });

  it("lets a provider insert its own phase and write its status field through the scope", async () => {
    const cloud = fakeCloud();
    const recordGroup: PoolPhase<FakeSpec, FakeSettings> = {
      name: "recordGroup",
      run(scope) {
        if (scope.state.group) scope.status.setProviderStatus({ groupId: scope.state.group.id });
        scope.status.setProviderID("fake:///group-1");
        scope.status.setInstances([{ instanceName: "i-1", ready: true }]);
      },
    };
    const phases = insertPhase(pipeline, { before: "publish" }, recordGroup);
    expect(phases.map((p) => p.name).slice(-2)).toEqual(["recordGroup", "publish"]);
    const memory = new PoolMemory();
    await reconcile(cloud, memory);
    const bed = fakeScope({ driver: cloud.driver, memory });
    await runPhases(phases, bed.scope);
    expect(bed.scope.pool.status).toMatchObject({
      groupId: "group-1",
      instances: [{ instanceName: "i-1", ready: true }],
    });
    expect(bed.scope.pool.spec?.providerID).toBe("fake:///group-1");
    expect(() => bed.scope.status.setProviderStatus({ ready: false })).toThrow(
      /written by the kit/,
    );
    expect(() => insertPhase(pipeline, { after: "nope" }, recordGroup)).toThrow(/no phase named/);
  });
});

describe("validateSpec", () => {
  it("reports an invalid spec with field paths, not raw JSON", async () => {
    const schema = z.object({ spec: z.object({ image: z.string().min(1), maxSize: z.number() }) });
    const { scope } = fakeScope({ spec: { image: "" }, schema });
    const result = await validateSpecPhase.run(scope as never);
    expect(result?.ready.reason).toBe("InvalidSpec");
    expect(result?.ready.message).toBe(
      "invalid spec: [spec.image: Too small: expected string to have >=1 characters, spec.maxSize: Required value]",
    );
  });
});

describe("scale", () => {
  it("counts NotFound on deleteInstance as done, and the deleted ID leaves the list without grace", async () => {
    const cloud = fakeCloud();
    const gone = fakeInstance({ id: "i-gone" });
    cloud.faults.deleteInstance = () =>
      DriverError.notFound("InstanceNotFound", "no such instance");
    const { scope, events } = fakeScope({ driver: cloud.driver });
    scope.pool.spec = { ...scope.pool.spec, providerIDList: [gone.providerID] };
    await executeAction(scope, {
      kind: "deleteInstance",
      instance: gone,
      mode: "shrink",
      reason: "ScaleDown",
    });
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
    const { scope } = fakeScope({
      driver: cloud.driver,
      replicas: 3,
      state: {
        group: cloud.group,
        desired: 3,
        isUpToDate: () => true,
        spec: { image: "img-1" },
      },
    });
    await scalePhase.run(scope as never);
    expect(cloud.mutating().map((call) => call.args)).toEqual([["i-a", "replace"]]);
    expect(scope.state.plan?.failed).toBe(2);
  });

  it("counts instances, not Nodes, for provisioned with readiness node (no first-creation deadlock)", async () => {
    const cloud = fakeCloud();
    cloud.group = group([fakeInstance(), fakeInstance()]);
    const { scope } = fakeScope({
      driver: cloud.driver,
      options: { readiness: "node" },
      state: { group: cloud.group, desired: 2, isUpToDate: () => true, spec: { image: "img-1" } },
    });
    await scalePhase.run(scope as never);
    expect(scope.state.provisionedNow).toBe(true);
    expect(scope.state.plan?.available).toBe(0); // no Ready Node yet: not available for rollouts
  });
});

describe("publishInstances: the missing-instance grace", () => {
  it("keeps an unexplained missing ID for the grace period, drops one seen terminating at once", async () => {
    const memory = new PoolMemory();
    const kept = fakeInstance({ id: "i-lag" });
    const going = fakeInstance({ id: "i-going", state: "terminating" });
    const { scope, clock } = fakeScope({ memory });
    scope.pool.spec = {
      ...scope.pool.spec,
      providerIDList: [kept.providerID, going.providerID].sort(),
    };
    // A read that shows i-going terminating, then a read where both vanished.
    await observePhase.run(
      fakeScope({ memory, driver: { ...fakeCloud().driver, getGroup: async () => group([going]) } })
        .scope as never,
    );
    expect(publishInstances(scope, group([]), false)).toBe(1);
    expect(scope.pool.spec?.providerIDList).toEqual([kept.providerID]);
    clock.advance(299);
    expect(publishInstances(scope, group([]), false)).toBe(1);
    clock.advance(1);
    expect(publishInstances(scope, group([]), false)).toBe(0);
    expect(scope.pool.spec?.providerIDList ?? []).toEqual([]);
  });
});

describe("runaway detection", () => {
  it("stops after one template version when the driver does not store the stamp", async () => {
    const cloud = fakeCloud();
    const forgetful = {
      ...cloud.driver,
      async getTemplate() {
        return cloud.versions.map((v) => ({ version: v.version, stamp: undefined }));
      },
    };
    const memory = new PoolMemory();
    const runs = [];
    for (let i = 0; i < 5; i++) runs.push(await reconcile(cloud, memory, { driver: forgetful }));
    expect(cloud.calls.filter((c) => c.op === "createTemplateVersion")).toHaveLength(1);
    const last = runs[4];
    expect(last?.result.ready.reason).toBe("TemplateStampNotStored");
    const warnings = runs.flatMap((r) => r.events).filter((e) => e.type === "Warning");
    expect(warnings.map((w) => w.reason)).toEqual(["TemplateStampNotStored"]);
  });

  it("stops when templateInputs are not pure, before any cloud call", async () => {
    const cloud = fakeCloud();
    let n = 0;
    const impure = { ...cloud.driver, templateInputs: () => ({ built: n++ }) };
    const { scope, events } = fakeScope({ driver: impure, state: { spec: { image: "img-1" } } });
    const result = await desiredStatePhase.run(scope as never);
    expect(result?.ready.reason).toBe("TemplateInputsNotPure");
    expect(events).toMatchObject([{ type: "Warning", reason: "TemplateInputsNotPure" }]);
    expect(cloud.calls).toEqual([]);
  });

  it("stops updating settings the cloud never reports back", async () => {
    const cloud = fakeCloud();
    const memory = new PoolMemory();
    await reconcile(cloud, memory);
    const stubborn = {
      ...cloud.driver,
      async getGroup() {
        const g = await cloud.driver.getGroup({} as never);
        return g && { ...g, settings: { maxSize: 99 } };
      },
    };
    let last: Awaited<ReturnType<typeof reconcile>> | undefined;
    for (let i = 0; i < 8; i++) last = await reconcile(cloud, memory, { driver: stubborn });
    const settingsUpdates = cloud.calls.filter(
      (c) => c.op === "updateGroup" && (c.args[0] as { settings?: unknown }).settings,
    );
    expect(settingsUpdates).toHaveLength(3);
    expect(last?.result.ready.reason).toBe("SettingsNotConverging");
    expect(last?.result.ready.message).toContain("differing: maxSize");
  });

  it("refuses duplicate providerIDs and publishes nothing", async () => {
    const cloud = fakeCloud();
    cloud.group = group([
      fakeInstance({ id: "i-1", providerID: "fake:///same" }),
      fakeInstance({ id: "i-2", providerID: "fake:///same" }),
      fakeInstance({ id: "i-3", providerID: "fake:///same" }),
    ]);
    const { scope, events } = fakeScope({ driver: cloud.driver });
    const result = await observePhase.run(scope as never);
    expect(result?.ready.reason).toBe("DuplicateProviderIDs");
    expect(result?.ready.message).toContain(
      "i-1, i-2, i-3 report the same providerID fake:///same",
    );
    expect(events.map((e) => e.type)).toEqual(["Warning"]);
    expect(scope.pool.spec?.providerIDList).toBeUndefined();
  });
});

describe("teardown", () => {
  it("deletes the group, waits for it, deletes the template; NotFound is done", async () => {
    const cloud = fakeCloud();
    cloud.group = group([fakeInstance()]);
    let bed = fakeScope({ driver: cloud.driver });
    expect((await teardownPhase.run(bed.scope as never))?.ready.reason).toBe("Deleting");
    expect(bed.scope.state.deleted).toBeUndefined();
    cloud.group = undefined;
    cloud.faults.deleteTemplate = () => DriverError.notFound("NotFound", "gone");
    bed = fakeScope({ driver: cloud.driver });
    await teardownPhase.run(bed.scope as never);
    expect(bed.scope.state.deleted).toBe(true);
  });
});
