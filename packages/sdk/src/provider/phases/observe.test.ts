// The observe phase (one read of the cloud per reconcile) on a fake scope and the fake cloud: no
// API server, no timers.
import { describe, expect, it } from "vitest";
import type { GroupModelPoolDriver, PoolGroup, PoolInstance } from "../driver.js";
import { DriverError } from "../driver.js";
import { StepFailure } from "../errors.js";
import { PoolMemory } from "../memory.js";
import {
  type FakeCloud,
  type FakeSettings,
  type FakeSpec,
  fakeCloud,
  fakeInstance,
  fakeScope,
} from "../testing.js";
import { observePhase } from "./observe.js";

function group(
  instances: readonly PoolInstance[],
  status: PoolGroup<FakeSettings>["status"] = "active",
): PoolGroup<FakeSettings> {
  return {
    id: "group-1",
    status,
    desiredReplicas: instances.length,
    templateVersion: "1",
    settings: { maxSize: 10 },
    instances: [...instances],
  };
}

/** The fake cloud's driver with its model in the group: no template methods. */
function groupModel(cloud: FakeCloud): GroupModelPoolDriver<FakeSpec, FakeSettings> {
  const { getTemplate: _g, createTemplateVersion: _c, deleteTemplate: _d, ...rest } = cloud.driver;
  return { ...rest, model: "group" };
}

describe("observe", () => {
  it("writes the template versions and the group as read, and changes nothing", async () => {
    const cloud = fakeCloud();
    cloud.versions = [
      { version: "1", stamp: undefined },
      { version: "2", stamp: { specHash: "s", bootstrapHash: "b", bootstrapRef: "r" } },
    ];
    cloud.group = group([fakeInstance({ id: "i-a" })]);
    const test = fakeScope({ driver: cloud.driver });
    expect(await test.run(observePhase)).toBeUndefined();
    expect(test.section("observed")).toEqual({ versions: cloud.versions, group: cloud.group });
    expect(cloud.calls.map((c) => c.op)).toEqual(["getTemplate", "getGroup"]);
    expect(cloud.mutating()).toEqual([]);
    expect(test.events).toEqual([]);
    expect(test.scope.pool.spec?.providerIDList).toBeUndefined();
  });

  it("writes group null when there is no group", async () => {
    const cloud = fakeCloud();
    const test = fakeScope({ driver: cloud.driver });
    expect(await test.run(observePhase)).toBeUndefined();
    expect(test.section("observed")).toEqual({ versions: [], group: null });
  });

  it("reads no template for a driver with model group", async () => {
    const cloud = fakeCloud();
    cloud.versions = [{ version: "1", stamp: undefined }];
    cloud.group = group([fakeInstance({ id: "vm-1", latestModel: true })]);
    const test = fakeScope({ driver: groupModel(cloud) });
    expect(await test.run(observePhase)).toBeUndefined();
    expect(test.section("observed")?.versions).toEqual([]);
    expect(test.section("observed")?.group?.id).toBe("group-1");
    expect(cloud.calls.map((c) => c.op)).toEqual(["getGroup"]);
  });

  it("hands a failed read to the error policy and writes nothing", async () => {
    const cloud = fakeCloud();
    cloud.faults.getGroup = () => DriverError.transient("CloudBusy", "try again");
    const test = fakeScope({ driver: cloud.driver });
    const failure = await test.run(observePhase).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(StepFailure);
    expect(failure).toMatchObject({ step: "getGroup", failure: { kind: "transient" } });
    expect(test.section("observed")).toBeUndefined();
  });

  it("remembers terminating and terminated instances as departed, at the clock's time", async () => {
    const cloud = fakeCloud();
    const running = fakeInstance({ id: "i-run" });
    const pending = fakeInstance({ id: "i-pending", state: "pending" });
    const terminating = fakeInstance({ id: "i-going", state: "terminating" });
    const terminated = fakeInstance({ id: "i-gone", state: "terminated" });
    const unnamed = fakeInstance({ id: "i-noid", state: "terminating", providerID: "" });
    cloud.group = group([running, pending, terminating, terminated, unnamed]);
    const memory = new PoolMemory();
    const test = fakeScope({ driver: cloud.driver, memory });
    test.clock.advance(1234);
    const now = test.clock.now();
    await test.run(observePhase);
    expect([...memory.departed]).toEqual([
      [terminating.providerID, now],
      [terminated.providerID, now],
    ]);
  });

  it("refuses duplicate providerIDs and publishes nothing", async () => {
    const cloud = fakeCloud();
    cloud.group = group([
      fakeInstance({ id: "i-1", providerID: "fake:///same" }),
      fakeInstance({ id: "i-2", providerID: "fake:///same" }),
      fakeInstance({ id: "i-3", providerID: "fake:///same" }),
    ]);
    const { scope, events, run } = fakeScope({ driver: cloud.driver });
    const result = await run(observePhase);
    expect(result?.ready.reason).toBe("DuplicateProviderIDs");
    expect(result?.ready.message).toContain(
      '3 instances report the same providerID "fake:///same" ("i-1", "i-2", "i-3")',
    );
    expect(events.map((e) => e.type)).toEqual(["Warning"]);
    expect(scope.pool.spec?.providerIDList).toBeUndefined();
  });

  it("names three instances of a duplicated ID and counts the rest, in one pass", async () => {
    const cloud = fakeCloud();
    cloud.group = group(
      Array.from({ length: 100_000 }, (_, i) =>
        fakeInstance({ id: `i-${i}`, providerID: "fake:///same" }),
      ),
    );
    const result = await fakeScope({ driver: cloud.driver }).run(observePhase);
    expect(result?.ready.message).toMatch(
      /^100000 instances report the same providerID "fake:\/\/\/same" \("i-0", "i-1", "i-2" and 99997 more\);/,
    );
  });

  it("refuses a providerID with a bidi override, zero-width or control character, escaped", async () => {
    const cloud = fakeCloud();
    cloud.group = group([
      fakeInstance({ id: "i-1", providerID: "fake:///a\u202e" }),
      fakeInstance({ id: "i-2", providerID: "fake:///b\u200b" }),
      fakeInstance({ id: "i-3\u001b[2J", providerID: "fake:///c\u0007" }),
      fakeInstance({ id: "i-4", providerID: "fake:///d\ufeff" }),
    ]);
    const { scope, run } = fakeScope({ driver: cloud.driver });
    const result = await run(observePhase);
    expect(result?.ready.reason).toBe("InvalidProviderID");
    expect(result?.ready.message).toContain('"i-1" reports "fake:///a\\u{202e}"');
    expect(result?.ready.message).toContain('"i-3\\u{001b}[2J" reports "fake:///c\\u{0007}"');
    expect(result?.ready.message).toContain(" and 1 more:");
    expect(scope.pool.spec?.providerIDList).toBeUndefined();
  });

  it("names the first duplicated ID, counts the others, and does not latch", async () => {
    const cloud = fakeCloud();
    cloud.group = group([
      fakeInstance({ id: "i-1", providerID: "fake:///a" }),
      fakeInstance({ id: "i-2", providerID: "fake:///a" }),
      fakeInstance({ id: "i-3", providerID: "fake:///b" }),
      fakeInstance({ id: "i-4", providerID: "fake:///b" }),
      fakeInstance({ id: "i-5", providerID: "fake:///c" }),
    ]);
    const memory = new PoolMemory();
    const test = fakeScope({ driver: cloud.driver, memory });
    const result = await test.run(observePhase);
    expect(result?.ready.message).toBe(
      '2 instances report the same providerID "fake:///a" ("i-1", "i-2") (and 1 more duplicated providerIDs); each instance needs its own, byte for byte as on its Node; the kit makes no cloud change to this pool until this is fixed',
    );
    expect(result?.requeueAfterMs).toBe(test.scope.options.resyncMs);
    // Not latched: the next read decides again (the cloud may fix its IDs on its own).
    expect(memory.stopped).toBeUndefined();
    expect(test.section("observed")?.group).toEqual(cloud.group);
    expect(cloud.mutating()).toEqual([]);
  });

  it("does not count a shared ID of a departing instance, or instances without an ID yet", async () => {
    const cloud = fakeCloud();
    cloud.group = group([
      fakeInstance({ id: "i-old", providerID: "fake:///reused", state: "terminating" }),
      fakeInstance({ id: "i-new", providerID: "fake:///reused" }),
      fakeInstance({ id: "i-p1", providerID: "", state: "pending" }),
      fakeInstance({ id: "i-p2", providerID: "", state: "pending" }),
    ]);
    const test = fakeScope({ driver: cloud.driver });
    expect(await test.run(observePhase)).toBeUndefined();
    expect(test.events).toEqual([]);
  });

  it("stops with InstanceModelUnknown when a group-model instance lacks latestModel", async () => {
    const cloud = fakeCloud();
    cloud.group = group([
      fakeInstance({ id: "vm-1", latestModel: true }),
      fakeInstance({ id: "vm-2" }),
      fakeInstance({ id: "vm-3", latestModel: false }),
    ]);
    const memory = new PoolMemory();
    const test = fakeScope({ driver: groupModel(cloud), memory });
    const result = await test.run(observePhase);
    expect(result?.ready).toEqual({
      status: "False",
      reason: "InstanceModelUnknown",
      message:
        'instance vm-2 has no latestModel: a driver with model "group" must say for every instance whether it runs the group\'s latest model; the kit makes no cloud change to this pool until this is fixed',
    });
    expect(test.events).toMatchObject([{ type: "Warning", reason: "InstanceModelUnknown" }]);
    expect(memory.stopped).toBeUndefined();
    expect(cloud.mutating()).toEqual([]);
  });

  it("asks latestModel only of live group-model instances, and never of a template driver", async () => {
    const cloud = fakeCloud();
    cloud.group = group([
      fakeInstance({ id: "vm-1", latestModel: true }),
      fakeInstance({ id: "vm-2", state: "terminating" }),
    ]);
    expect(await fakeScope({ driver: groupModel(cloud) }).run(observePhase)).toBeUndefined();
    cloud.group = group([fakeInstance({ id: "i-1" })]);
    expect(await fakeScope({ driver: cloud.driver }).run(observePhase)).toBeUndefined();
  });

  it("publishes a group deleted out of band and waits for it to go", async () => {
    const cloud = fakeCloud();
    const a = fakeInstance({ id: "i-a" });
    const b = fakeInstance({ id: "i-b", state: "terminating" });
    const c = fakeInstance({ id: "i-c", state: "terminated" });
    cloud.group = group([a, b, c], "deleting");
    const test = fakeScope({ driver: cloud.driver });
    test.scope.pool.spec = {
      ...test.scope.pool.spec,
      providerIDList: [a.providerID, b.providerID, c.providerID],
    };
    const result = await test.run(observePhase);
    expect(result).toEqual({
      ready: {
        status: "False",
        reason: "GroupDeleting",
        message: "group group-1 is being deleted outside the controller; it is recreated once gone",
      },
      requeueAfterMs: test.scope.options.pollMs,
    });
    expect(test.scope.pool.spec?.providerIDList).toEqual([a.providerID, b.providerID]);
    expect(test.scope.pool.status).toMatchObject({ replicas: 2 });
    expect(test.scope.pool.status?.ready).not.toBe(true);
    expect(test.section("observed")?.group?.status).toBe("deleting");
    expect(test.events).toEqual([]);
    expect(cloud.mutating()).toEqual([]);
  });

  it("refuses duplicate IDs of a group being deleted before it publishes them", async () => {
    const cloud = fakeCloud();
    cloud.group = group(
      [
        fakeInstance({ id: "i-1", providerID: "fake:///same" }),
        fakeInstance({ id: "i-2", providerID: "fake:///same" }),
      ],
      "deleting",
    );
    const test = fakeScope({ driver: cloud.driver });
    expect((await test.run(observePhase))?.ready.reason).toBe("DuplicateProviderIDs");
    expect(test.scope.pool.spec?.providerIDList).toBeUndefined();
  });
});
