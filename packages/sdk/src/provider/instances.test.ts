import { describe, expect, it } from "vitest";
import type { PoolInstance } from "./driver-types.js";
import { isInstanceAvailable, liveInstances, victimOrder } from "./instances.js";
import { instanceOf as instance } from "./testing.js";

const current = (i: PoolInstance) => i.templateVersion === "2";

describe("victimOrder", () => {
  it("unhealthy first, then outdated, then not running, then by policy; ties by ID", () => {
    const live = [
      instance("i1", { createdAt: 1 }),
      instance("i2", { createdAt: 2 }),
      instance("i3", { createdAt: 3, version: "1" }),
      instance("i4", { createdAt: 4, healthy: false }),
      instance("i5", { createdAt: 5, state: "pending" }),
      instance("i6", { createdAt: 6, state: "stopped" }),
    ];
    expect(victimOrder(live, current, "Oldest").map((i) => i.id)).toEqual([
      "i6",
      "i4",
      "i3",
      "i5",
      "i1",
      "i2",
    ]);
    expect(
      victimOrder(live, current, "Newest")
        .map((i) => i.id)
        .slice(4),
    ).toEqual(["i2", "i1"]);
  });

  it("Random is stable: the same snapshot gives the same order", () => {
    const live = Array.from({ length: 8 }, (_, n) => instance(`i${n}`, { createdAt: 1 }));
    const first = victimOrder(live, current, "Random").map((i) => i.id);
    expect(victimOrder([...live].reverse(), current, "Random").map((i) => i.id)).toEqual(first);
    expect(first).not.toEqual(live.map((i) => i.id));
  });
});

describe("membership and availability", () => {
  it("counts every instance but terminating and terminated ones as a member", () => {
    const all = [
      instance("i1"),
      instance("i2", { state: "pending" }),
      instance("i3", { state: "failed" }),
      instance("i4", { state: "stopped" }),
      instance("i5", { state: "terminating" }),
      instance("i6", { state: "terminated" }),
    ];
    expect(liveInstances(all).map((i) => i.id)).toEqual(["i1", "i2", "i3", "i4"]);
  });

  it("is available only when running and not failing its health check", () => {
    expect(isInstanceAvailable(instance("i1"))).toBe(true);
    expect(isInstanceAvailable(instance("i2", { healthy: false }))).toBe(false);
    expect(isInstanceAvailable(instance("i3", { state: "pending" }))).toBe(false);
    const unchecked = {
      id: "i4",
      providerID: "fake:///zone-a/i4",
      state: "running" as const,
      templateVersion: "2",
      createdAt: 4,
    };
    expect(isInstanceAvailable(unchecked)).toBe(true);
  });
});
