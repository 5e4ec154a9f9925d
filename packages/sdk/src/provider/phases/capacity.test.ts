// The `capacity` phase on a fake scope: what it publishes for the cluster-autoscaler's scale from
// zero (status.capacity, status.nodeInfo), that it follows the spec, and what a broken hook leaves
// behind: the last good capacity, a named reason for `publish`, and the reconcile going on.
import { describe, expect, it } from "vitest";
import type { PoolCapacity } from "../../contract/capacity.js";
import { FencedError } from "../../runtime/errors.js";
import { DriverError, type PoolDriver } from "../driver.js";
import type { PoolPhase } from "../phase.js";
import type { PoolScope } from "../scope.js";
import { attachSections, runPhase, sectionsOf } from "../sections.js";
import {
  type FakeScopeOptions,
  type FakeSettings,
  type FakeSpec,
  fakeCloud,
  fakeScope,
} from "../testing.js";
import { capacityPhase } from "./capacity.js";

/** The fake's `image` plays the instance type. */
const TYPES: Record<string, PoolCapacity> = {
  small: {
    capacity: { cpu: "2", memory: "4Gi", pods: "110" },
    nodeInfo: { architecture: "amd64", operatingSystem: "linux" },
  },
  "arm-large": {
    capacity: { cpu: "8", memory: "32Gi", "ephemeral-storage": "100Gi", pods: "110" },
    nodeInfo: { architecture: "arm64", operatingSystem: "linux" },
  },
};

type Hook = NonNullable<PoolDriver<FakeSpec, FakeSettings>["capacity"]>;

function withHook(hook: Hook | undefined, options: FakeScopeOptions = {}) {
  const driver = { ...fakeCloud().driver, ...(hook ? { capacity: hook } : {}) };
  return fakeScope({ driver, replicas: 0, ...options });
}

const fromTable: Hook = (ctx) => TYPES[ctx.spec.image];

describe("capacity: publishing", () => {
  it("publishes the hook's capacity and nodeInfo at 0 replicas, and goes on", async () => {
    const { run, scope, section } = withHook(fromTable, { spec: { image: "small" } });
    expect(await run(capacityPhase)).toBeUndefined();
    expect(scope.pool.status).toEqual({
      capacity: { cpu: "2", memory: "4Gi", pods: "110" },
      nodeInfo: { architecture: "amd64", operatingSystem: "linux" },
    });
    expect(section("capacity")).toEqual({ capacity: TYPES.small, problem: undefined });
  });

  it("awaits an asynchronous hook, called with the pool's context", async () => {
    const seen: string[] = [];
    const { run, scope } = withHook(
      async (ctx) => {
        seen.push(`${ctx.pool.namespace}/${ctx.pool.name} ${ctx.spec.image} ${ctx.version}`);
        await new Promise((resolve) => setTimeout(resolve, 1));
        return TYPES["arm-large"];
      },
      { spec: { image: "arm-large" } },
    );
    await run(capacityPhase);
    expect(seen).toEqual(["default/pool-1 arm-large v1.34.1"]);
    expect(scope.pool.status?.nodeInfo).toEqual({
      architecture: "arm64",
      operatingSystem: "linux",
    });
  });

  it("follows a new instance type, whole: no resource of the old one stays", async () => {
    const first = withHook(fromTable, { spec: { image: "arm-large" } });
    await first.run(capacityPhase);
    const { run, scope } = withHook(fromTable, {
      spec: { image: "small" },
      pool: { status: structuredClone(first.scope.pool.status) },
    });
    await run(capacityPhase);
    expect(scope.pool.status?.capacity).toEqual({ cpu: "2", memory: "4Gi", pods: "110" });
    expect(scope.pool.status?.nodeInfo).toEqual({
      architecture: "amd64",
      operatingSystem: "linux",
    });
  });

  it("removes what it published once the hook no longer knows the capacity", async () => {
    const { run, scope, section } = withHook(fromTable, {
      spec: { image: "unknown-type" },
      pool: { status: { replicas: 0, capacity: { cpu: "2", memory: "4Gi" }, nodeInfo: {} } },
    });
    await run(capacityPhase);
    expect(scope.pool.status).toEqual({ replicas: 0 });
    expect(section("capacity")).toEqual({ capacity: undefined, problem: undefined });
  });

  it("writes nothing there for a driver without the hook, not even over what is there", async () => {
    const status = { replicas: 0, capacity: { cpu: "1", memory: "1Gi" } };
    const { run, scope, section } = withHook(undefined, { pool: { status: { ...status } } });
    expect(await run(capacityPhase)).toBeUndefined();
    expect(scope.pool.status).toEqual(status);
    expect(section("capacity")).toEqual({ capacity: undefined, problem: undefined });
  });
});

describe("capacity: a hook that fails", () => {
  const published = {
    capacity: { cpu: "2", memory: "4Gi" },
    nodeInfo: { architecture: "amd64" },
  };

  it.each([
    [
      "a word",
      { capacity: { cpu: "lots", memory: "4Gi" } },
      /capacity\["cpu"\] is "lots", not a Kubernetes quantity/,
    ],
    [
      "a negative",
      { capacity: { cpu: "-1", memory: "4Gi" } },
      /capacity\["cpu"\] is "-1": a capacity has no sign/,
    ],
    [
      "a number",
      { capacity: { cpu: 2, memory: "4Gi" } },
      /is the number 2; write a quantity string such as "2"/,
    ],
    ["an object", { capacity: { cpu: { n: 2 }, memory: "4Gi" } }, /capacity\["cpu"\] is an object/],
    ["no memory", { capacity: { cpu: "2" } }, /capacity has no memory/],
    ["a string", "2 cpus", /got the string "2 cpus"/],
  ])("keeps the last capacity on %s, naming InvalidCapacity for publish", async (_, value, why) => {
    const { run, scope, section } = withHook(() => value as unknown as PoolCapacity, {
      pool: { status: structuredClone(published) },
    });
    expect(await run(capacityPhase)).toBeUndefined();
    expect(scope.pool.status).toEqual(published);
    const problem = section("capacity")?.problem;
    expect(problem).toMatchObject({
      status: "False",
      reason: "InvalidCapacity",
      retryAfterMs: scope.options.resyncMs,
    });
    expect(problem?.message).toMatch(/^capacity returned what cannot be published: /);
    expect(problem?.message).toMatch(why);
    expect(problem?.message).toMatch(
      /fix the driver's capacity method \(the pool keeps the capacity it last published\)$/,
    );
  });

  it("keeps no capacity when there was none, rather than writing a broken one", async () => {
    const { run, scope } = withHook(() => ({ capacity: { cpu: "lots", memory: "1Gi" } }));
    await run(capacityPhase);
    expect(scope.pool.status).toBeUndefined();
  });

  it("survives a value whose fields throw when read", async () => {
    const hostile = {
      get capacity(): never {
        throw new Error("boom from a getter");
      },
    };
    const { run, section } = withHook(() => hostile as unknown as PoolCapacity);
    expect(await run(capacityPhase)).toBeUndefined();
    expect(section("capacity")?.problem?.reason).toBe("InvalidCapacity");
    expect(section("capacity")?.problem?.message).toContain("boom from a getter");
  });

  it("names CapacityUnavailable when the hook throws, and asks again after the poll interval", async () => {
    const { run, scope, section } = withHook(
      () => {
        throw new Error("catalog unreachable: connect ECONNREFUSED");
      },
      { pool: { status: structuredClone(published) } },
    );
    expect(await run(capacityPhase)).toBeUndefined();
    expect(scope.pool.status).toEqual(published);
    expect(section("capacity")?.problem).toEqual({
      status: "False",
      reason: "CapacityUnavailable",
      message:
        "capacity failed (CloudError: catalog unreachable: connect ECONNREFUSED); the pool keeps the capacity it last published and asks again in 1s",
      retryAfterMs: scope.options.pollMs,
    });
  });

  it("waits as the driver's failure says: terminal until the resync, throttled as asked", async () => {
    const terminal = withHook(() => {
      throw DriverError.terminal("UnknownInstanceType", "no type m9.huge in eu-west-9");
    });
    await terminal.run(capacityPhase);
    expect(terminal.section("capacity")?.problem).toMatchObject({
      reason: "CapacityUnavailable",
      retryAfterMs: terminal.scope.options.resyncMs,
    });
    expect(terminal.section("capacity")?.problem?.message).toContain(
      "UnknownInstanceType: no type m9.huge in eu-west-9",
    );
    const throttled = withHook(async () => {
      throw DriverError.throttled("CatalogThrottled", "slow down", 7000);
    });
    await throttled.run(capacityPhase);
    expect(throttled.section("capacity")?.problem).toMatchObject({
      retryAfterMs: 7000,
      message: expect.stringMatching(/asks again in 7s$/),
    });
  });

  it("bounds and redacts what the driver threw, on one line", async () => {
    const { run, section } = withHook(() => {
      throw new Error(`token abcdef.0123456789abcdef\n${"y".repeat(10_000)}`);
    });
    await run(capacityPhase);
    const message = section("capacity")?.problem?.message ?? "";
    expect(message).not.toContain("abcdef.0123456789abcdef");
    expect(message).not.toContain("\n");
    expect(message).not.toContain("y".repeat(301));
    expect(message.length).toBeLessThan(500);
  });

  it("lets a fenced reconcile stop instead of calling it the pool's problem", async () => {
    const test = withHook(fromTable, { spec: { image: "small" } });
    const fenced: PoolScope<FakeSpec, FakeSettings> = {
      ...test.scope,
      call: () => Promise.reject(new FencedError("leadership lost")),
    };
    attachSections(fenced, sectionsOf(test.scope));
    await expect(
      runPhase(capacityPhase as PoolPhase<FakeSpec, FakeSettings>, fenced),
    ).rejects.toBeInstanceOf(FencedError);
    expect(test.scope.pool.status).toBeUndefined();
  });
});
