// What the kit publishes for the cluster-autoscaler's scale from zero: a capacity is checked before
// it is written, refused with a message that names the field and shows a bounded value, and written
// in a canonical form (no churn between reconciles).
import { describe, expect, it } from "vitest";
import {
  checkPoolCapacity,
  InvalidCapacityError,
  MAX_CAPACITY_RESOURCES,
  type PoolCapacity,
  setPoolCapacity,
} from "./capacity.js";

const m5: PoolCapacity = {
  capacity: { memory: "8Gi", cpu: "2", "ephemeral-storage": "20Gi", pods: "29" },
  nodeInfo: { architecture: "amd64", operatingSystem: "linux" },
};

function refusal(value: unknown): string {
  try {
    checkPoolCapacity(value);
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidCapacityError);
    return (error as Error).message;
  }
  throw new Error(`expected ${JSON.stringify(value)} to be refused`);
}

describe("checkPoolCapacity", () => {
  it("returns the capacity with its resources sorted, nodeInfo kept", () => {
    const checked = checkPoolCapacity(m5);
    expect(Object.keys(checked.capacity)).toEqual(["cpu", "ephemeral-storage", "memory", "pods"]);
    expect(checked).toEqual(m5);
    expect(
      checkPoolCapacity({ capacity: { cpu: "500m", memory: "1.5Gi", "nvidia.com/gpu": "1" } }),
    ).toEqual({ capacity: { cpu: "500m", memory: "1.5Gi", "nvidia.com/gpu": "1" } });
  });

  it("drops an empty nodeInfo and fields left undefined", () => {
    expect(checkPoolCapacity({ capacity: { cpu: "1", memory: "1Gi" }, nodeInfo: {} })).toEqual({
      capacity: { cpu: "1", memory: "1Gi" },
    });
    expect(
      checkPoolCapacity({
        capacity: { cpu: "1", memory: "1Gi" },
        nodeInfo: { architecture: "arm64", operatingSystem: undefined },
      }),
    ).toEqual({ capacity: { cpu: "1", memory: "1Gi" }, nodeInfo: { architecture: "arm64" } });
  });

  it.each([
    [{ cpu: "lots", memory: "1Gi" }, /capacity\["cpu"\] is "lots", not a Kubernetes quantity/],
    [{ cpu: "-1", memory: "1Gi" }, /capacity\["cpu"\] is "-1": a capacity has no sign/],
    [{ cpu: "+1", memory: "1Gi" }, /has no sign/],
    [
      { cpu: 4, memory: "1Gi" },
      /capacity\["cpu"\] is the number 4; write a quantity string such as "4"/,
    ],
    [{ cpu: { value: 4 }, memory: "1Gi" }, /capacity\["cpu"\] is an object/],
    [{ cpu: "1", memory: null }, /capacity\["memory"\] is null/],
    [
      { cpu: "1" },
      /capacity has no memory: the cluster-autoscaler scales a pool from zero only when/,
    ],
    [{ memory: "1Gi" }, /capacity has no cpu/],
    [
      { cpu: "0", memory: "1Gi" },
      /capacity\["cpu"\] is "0": an instance offers more than zero cpu/,
    ],
    [{ cpu: "1", memory: "0Gi" }, /more than zero memory/],
    [
      { cpu: "1", memory: "1Gi", "bad name!": "1" },
      /resource name "bad name!": use a Kubernetes resource name/,
    ],
    [{ cpu: "1", memory: "1Gi", "/gpu": "1" }, /resource name "\/gpu"/],
    [{ cpu: "1", memory: `1${"0".repeat(80)}` }, /is 81 characters long .*at most 64/],
  ])("refuses the resources %j", (capacity, message) => {
    expect(refusal({ capacity })).toMatch(message);
  });

  it.each([
    [
      undefined,
      /a pool's capacity is \{ capacity: \{ cpu, memory, … \}, nodeInfo\? \}, got undefined/,
    ],
    ["4 cpus", /got the string "4 cpus"/],
    [[{ cpu: "1" }], /got an array/],
    [new Map([["cpu", "1"]]), /got a Map/],
    [
      { capacity: "cpu=1" },
      /capacity is the string "cpu=1"; it is a map of resource name to quantity/,
    ],
    [
      { capacity: { cpu: "1", memory: "1Gi" }, labels: {} },
      /has the field "labels"; it takes capacity and nodeInfo only/,
    ],
    [
      { capacity: { cpu: "1", memory: "1Gi" }, nodeInfo: "linux" },
      /nodeInfo is the string "linux"/,
    ],
    [
      { capacity: { cpu: "1", memory: "1Gi" }, nodeInfo: { architecture: "x86_64" } },
      /nodeInfo.architecture is the string "x86_64": use the name a Node reports .*GOARCH/,
    ],
    [
      { capacity: { cpu: "1", memory: "1Gi" }, nodeInfo: { operatingSystem: "Linux" } },
      /nodeInfo.operatingSystem is the string "Linux": use linux or windows/,
    ],
    [
      { capacity: { cpu: "1", memory: "1Gi" }, nodeInfo: { kernelVersion: "6.1" } },
      /nodeInfo has the field "kernelVersion", which the cluster-autoscaler does not read/,
    ],
  ])("refuses %j", (value, message) => {
    expect(refusal(value)).toMatch(message);
  });

  it("refuses too many resources without listing them", () => {
    const capacity: Record<string, string> = { cpu: "1", memory: "1Gi" };
    for (let i = 0; i < MAX_CAPACITY_RESOURCES; i++) capacity[`example.com/r${i}`] = "1";
    expect(refusal({ capacity })).toBe(
      `capacity lists ${MAX_CAPACITY_RESOURCES + 2} resources; at most ${MAX_CAPACITY_RESOURCES} are published`,
    );
  });

  it("never shows more than 40 characters of a value it refuses", () => {
    const huge = "x".repeat(100_000);
    for (const value of [
      { capacity: { cpu: huge, memory: "1Gi" } },
      { capacity: { cpu: "1", memory: "1Gi", [huge]: "1" } },
      { capacity: { cpu: "1", memory: "1Gi" }, nodeInfo: { architecture: huge } },
      { capacity: { cpu: "1", memory: "1Gi" }, [huge]: 1 },
    ]) {
      const message = refusal(value);
      expect(message.length).toBeLessThan(300);
      expect(message).not.toContain("x".repeat(41));
    }
  });
});

describe("setPoolCapacity", () => {
  it("writes status.capacity and status.nodeInfo next to the other status fields, once", () => {
    const pool = { status: { replicas: 0 } as Record<string, unknown> };
    expect(setPoolCapacity(pool, m5)).toBe(true);
    expect(pool.status).toEqual({
      replicas: 0,
      capacity: { cpu: "2", "ephemeral-storage": "20Gi", memory: "8Gi", pods: "29" },
      nodeInfo: { architecture: "amd64", operatingSystem: "linux" },
    });
    expect(setPoolCapacity(pool, m5)).toBe(false);
    expect(setPoolCapacity(pool, { capacity: { ...m5.capacity }, nodeInfo: m5.nodeInfo })).toBe(
      false,
    );
  });

  it("replaces a capacity whole: a resource the new type lacks goes, and a nodeInfo it lacks", () => {
    const pool: { status?: Record<string, unknown> } = {};
    setPoolCapacity(pool, {
      capacity: { cpu: "8", memory: "61Gi", "nvidia.com/gpu": "1" },
      nodeInfo: { architecture: "amd64" },
    });
    expect(setPoolCapacity(pool, { capacity: { cpu: "4", memory: "16Gi" } })).toBe(true);
    expect(pool.status).toEqual({ capacity: { cpu: "4", memory: "16Gi" } });
  });

  it("removes both fields for undefined, and changes nothing when they are absent", () => {
    const pool: { status?: Record<string, unknown> } = { status: { replicas: 1 } };
    expect(setPoolCapacity(pool, undefined)).toBe(false);
    setPoolCapacity(pool, m5);
    expect(setPoolCapacity(pool, undefined)).toBe(true);
    expect(pool.status).toEqual({ replicas: 1 });
  });

  it("leaves the pool as it was when the capacity is refused", () => {
    const pool: { status?: Record<string, unknown> } = {};
    setPoolCapacity(pool, m5);
    const before = structuredClone(pool);
    expect(() =>
      setPoolCapacity(pool, { capacity: { cpu: "lots", memory: "1Gi" } } as PoolCapacity),
    ).toThrow(InvalidCapacityError);
    expect(pool).toEqual(before);
  });
});
