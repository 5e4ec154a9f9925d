import { describe, expect, it } from "vitest";
import { claimedElsewhere, providerIDClaims } from "./claims.js";
import { fakeInstance } from "./testing.js";

const pool = (name: string, ids: unknown) => ({
  metadata: { name, namespace: "ns" },
  spec: { providerIDList: ids },
});

describe("providerIDs other pools list", () => {
  it("maps each listed ID to the first object that lists it, pools before MachinePools", () => {
    const claims = providerIDClaims([
      { kind: "FooMachinePool", objects: [pool("b", ["x:///1", "x:///2"]), pool("c", "x:///3")] },
      { kind: "MachinePool", objects: [pool("b", ["x:///1"]), pool("d", ["x:///4", 5, ""])] },
    ]);
    expect([...claims]).toEqual([
      ["x:///1", "FooMachinePool ns/b"],
      ["x:///2", "FooMachinePool ns/b"],
      ["x:///4", "MachinePool ns/d"],
    ]);
  });

  it("names this pool, three instances with the pool listing each, and counts the rest", () => {
    const claims = new Map(
      Array.from({ length: 5 }, (_, i) => [`x:///${i}`, "FooMachinePool ns/b"] as const),
    );
    const instances = Array.from({ length: 6 }, (_, i) =>
      fakeInstance({ id: `i-${i}`, providerID: `x:///${i}` }),
    );
    const message = claimedElsewhere("FooMachinePool ns/a", instances, claims) ?? "";
    expect(message).toContain(
      'the driver reports for FooMachinePool ns/a instances of other pools: instance "i-0" ("x:///0") is listed by "FooMachinePool ns/b"',
    );
    expect(message).toContain(" and 2 more.");
    expect(claimedElsewhere("FooMachinePool ns/a", instances.slice(5), claims)).toBeUndefined();
  });
});
