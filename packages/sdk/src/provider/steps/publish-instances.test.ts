// publishInstances on a fake scope: the providerIDList and replicas it publishes, provisioned, and
// the grace for IDs a lagging cloud list leaves out.
import { describe, expect, it } from "vitest";
import type { PoolGroup } from "../driver.js";
import { PoolMemory } from "../memory.js";
import { observePhase } from "../phases/observe.js";
import { type FakeSettings, fakeCloud, fakeInstance, fakeScope } from "../testing.js";
import { publishInstances } from "./publish-instances.js";

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

describe("publishInstances: the list", () => {
  it("publishes a sorted list without duplicates, and replicas to match", () => {
    const { scope } = fakeScope();
    const kept = publishInstances(
      scope,
      group([
        fakeInstance({ id: "i-c" }),
        fakeInstance({ id: "i-a" }),
        fakeInstance({ id: "i-b", providerID: "fake:///zone-a/i-a" }),
        fakeInstance({ id: "i-B" }),
      ]),
      false,
    );
    expect(kept).toBe(0);
    expect(scope.pool.spec?.providerIDList).toEqual([
      "fake:///zone-a/i-B",
      "fake:///zone-a/i-a",
      "fake:///zone-a/i-c",
    ]);
    expect(scope.pool.status?.replicas).toBe(3);
  });

  it("skips instances without a providerID yet, and terminated ones", () => {
    const { scope } = fakeScope();
    publishInstances(
      scope,
      group([
        fakeInstance({ id: "i-a" }),
        fakeInstance({ id: "i-new", providerID: "", state: "pending" }),
        fakeInstance({ id: "i-done", state: "terminated" }),
      ]),
      false,
    );
    expect(scope.pool.spec?.providerIDList).toEqual(["fake:///zone-a/i-a"]);
    expect(scope.pool.status?.replicas).toBe(1);
  });

  it("keeps every other state: a dropped live ID would make core delete its Node", () => {
    const { scope } = fakeScope();
    const states = ["pending", "running", "stopping", "stopped", "failed", "terminating"] as const;
    publishInstances(
      scope,
      group(states.map((state) => fakeInstance({ id: `i-${state}`, state }))),
      false,
    );
    expect(scope.pool.spec?.providerIDList).toHaveLength(states.length);
    expect(scope.pool.status?.replicas).toBe(states.length);
  });

  it("publishes an empty group as no IDs and zero replicas", () => {
    const { scope } = fakeScope();
    scope.pool.spec = { ...scope.pool.spec, providerIDList: [] };
    publishInstances(scope, group([]), false);
    expect(scope.pool.spec?.providerIDList ?? []).toEqual([]);
    expect(scope.pool.status?.replicas).toBe(0);
  });

  it("marks the pool provisioned when told so, and never takes it back", () => {
    const { scope } = fakeScope();
    publishInstances(scope, group([fakeInstance()]), false);
    expect(scope.pool.status?.ready).toBeUndefined();
    publishInstances(scope, group([fakeInstance()]), true);
    expect(scope.pool.status).toMatchObject({ ready: true, initialization: { provisioned: true } });
    publishInstances(scope, group([]), false);
    expect(scope.pool.status).toMatchObject({ ready: true, initialization: { provisioned: true } });
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
    await fakeScope({
      memory,
      driver: { ...fakeCloud().driver, getGroup: async () => group([going]) },
    }).run(observePhase);
    expect(publishInstances(scope, group([]), false)).toBe(1);
    expect(scope.pool.spec?.providerIDList).toEqual([kept.providerID]);
    clock.advance(299);
    expect(publishInstances(scope, group([]), false)).toBe(1);
    clock.advance(1);
    expect(publishInstances(scope, group([]), false)).toBe(0);
    expect(scope.pool.spec?.providerIDList ?? []).toEqual([]);
  });

  it("drops an ID the kit deleted at once, and then forgets it", () => {
    const memory = new PoolMemory();
    const deleted = fakeInstance({ id: "i-del" });
    const { scope, clock } = fakeScope({ memory });
    scope.pool.spec = { ...scope.pool.spec, providerIDList: [deleted.providerID] };
    memory.markDeparted(deleted.providerID, clock.now());
    // Still listed (the cloud is slow to drop it): still published.
    expect(publishInstances(scope, group([deleted]), false)).toBe(0);
    expect(scope.pool.spec?.providerIDList).toEqual([deleted.providerID]);
    expect(memory.departed.has(deleted.providerID)).toBe(true);
    // Gone from the list: gone from providerIDList, no grace, and no longer remembered.
    expect(publishInstances(scope, group([]), false)).toBe(0);
    expect(scope.pool.spec?.providerIDList ?? []).toEqual([]);
    expect(memory.departed.size).toBe(0);
    expect(memory.missingSince.size).toBe(0);
  });

  it("starts the grace again when a missing ID comes back", () => {
    const memory = new PoolMemory();
    const flaky = fakeInstance({ id: "i-flaky" });
    const { scope, clock } = fakeScope({ memory });
    scope.pool.spec = { ...scope.pool.spec, providerIDList: [flaky.providerID] };
    expect(publishInstances(scope, group([]), false)).toBe(1);
    expect(memory.missingSince.get(flaky.providerID)).toBe(clock.now());
    clock.advance(200);
    // Listed again: the clock of its absence is reset.
    publishInstances(scope, group([flaky]), false);
    expect(memory.missingSince.size).toBe(0);
    clock.advance(200);
    // Missing again, 400 ms after it first vanished: a fresh grace, so still kept.
    expect(publishInstances(scope, group([]), false)).toBe(1);
    expect(scope.pool.spec?.providerIDList).toEqual([flaky.providerID]);
  });

  it("counts every ID the grace keeps, and publishes them with the listed ones", () => {
    const { scope } = fakeScope();
    const ids = ["fake:///zone-a/i-x", "fake:///zone-a/i-y"];
    scope.pool.spec = { ...scope.pool.spec, providerIDList: ids };
    const listed = fakeInstance({ id: "i-z" });
    expect(publishInstances(scope, group([listed]), false)).toBe(2);
    expect(scope.pool.spec?.providerIDList).toEqual([...ids, listed.providerID]);
    expect(scope.pool.status?.replicas).toBe(3);
  });

  it("does not apply the grace to a terminated instance the cloud still lists", () => {
    const { scope } = fakeScope();
    const done = fakeInstance({ id: "i-done", state: "terminated" });
    scope.pool.spec = { ...scope.pool.spec, providerIDList: [done.providerID] };
    expect(publishInstances(scope, group([done]), false)).toBe(0);
    expect(scope.pool.spec?.providerIDList ?? []).toEqual([]);
  });

  it("follows missingInstanceGraceMs", () => {
    const memory = new PoolMemory();
    const lag = fakeInstance({ id: "i-lag" });
    const { scope, clock } = fakeScope({ memory, options: { missingInstanceGraceMs: 1_000 } });
    scope.pool.spec = { ...scope.pool.spec, providerIDList: [lag.providerID] };
    expect(publishInstances(scope, group([]), false)).toBe(1);
    clock.advance(999);
    expect(publishInstances(scope, group([]), false)).toBe(1);
    clock.advance(1);
    expect(publishInstances(scope, group([]), false)).toBe(0);
    expect(memory.missingSince.size).toBe(0);
  });
});
