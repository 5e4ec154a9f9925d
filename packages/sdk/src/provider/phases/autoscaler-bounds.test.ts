// The `autoscalerBounds` phase on a fake scope: the bounds the group must have for the
// cluster-autoscaler's annotations (widened, never clamping the replicas), what the AutoscalerBounds
// condition says, and bad input named without a crash or a write of broken bounds.
import { describe, expect, it } from "vitest";
import type { GroupBounds, PoolDriver, PoolGroup } from "../driver.js";
import {
  type FakeScopeOptions,
  type FakeSettings,
  type FakeSpec,
  fakeCloud,
  fakeInstance,
  fakeScope,
} from "../testing.js";
import { autoscalerBoundsPhase } from "./autoscaler-bounds.js";

const MIN = "cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size";
const MAX = "cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size";
const MANAGED_BY = "cluster.x-k8s.io/replicas-managed-by";

function group(overrides: Partial<PoolGroup<FakeSettings>> = {}): PoolGroup<FakeSettings> {
  return {
    id: "group-1",
    status: "active",
    desiredReplicas: 2,
    minReplicas: 0,
    maxReplicas: 10,
    templateVersion: "1",
    settings: { maxSize: 10 },
    instances: [fakeInstance(), fakeInstance()],
    ...overrides,
  };
}

/** The fake cloud's driver with the pool's own bounds `[0, spec.maxSize]` (or `own`). */
function boundedDriver(own?: GroupBounds): PoolDriver<FakeSpec, FakeSettings> {
  return {
    ...fakeCloud().driver,
    groupBounds: (ctx) => own ?? { min: 0, max: ctx.spec.maxSize ?? 10 },
  };
}

function boundsScope(
  observed: PoolGroup<FakeSettings> | null,
  options: FakeScopeOptions & { annotations?: Record<string, string> } = {},
) {
  const { annotations, ...rest } = options;
  return fakeScope({
    driver: boundedDriver(),
    ...(annotations ? { machinePoolAnnotations: annotations } : {}),
    ...rest,
    sections: { observed: { versions: [], group: observed } },
  });
}

describe("autoscalerBounds: the bounds the group must have", () => {
  it("without the annotations, keeps the driver's own bounds and reports nothing", async () => {
    const { run, section, events } = boundsScope(group());
    expect(await run(autoscalerBoundsPhase)).toBeUndefined();
    expect(section("bounds")).toEqual({
      wanted: { min: 0, max: 10 },
      target: { min: 0, max: 10 },
      autoscaler: { state: "absent" },
      condition: undefined,
    });
    expect(events).toEqual([]);
  });

  it("without groupBounds, asks for no bounds at all (the driver writes none)", async () => {
    const { run, section } = boundsScope(group(), {
      driver: fakeCloud().driver,
      annotations: { [MIN]: "1", [MAX]: "5" },
    });
    await run(autoscalerBoundsPhase);
    expect(section("bounds")).toMatchObject({ wanted: undefined, target: undefined });
    expect(section("bounds")?.condition?.reason).toBe("WithinAutoscalerBounds");
  });

  it("widens the group's bounds to cover the autoscaler's and the size it chose", async () => {
    const { run, section } = boundsScope(group(), {
      replicas: 12,
      annotations: { [MIN]: "1", [MAX]: "15" },
    });
    await run(autoscalerBoundsPhase);
    expect(section("bounds")).toEqual({
      wanted: { min: 0, max: 15 },
      target: { min: 0, max: 15 },
      autoscaler: { state: "valid", min: 1, max: 15 },
      condition: {
        status: "True",
        reason: "WithinAutoscalerBounds",
        message: "replicas 12 are within the cluster-autoscaler's bounds [1, 15]",
      },
    });
  });

  it("lowers the minimum for an autoscaler that may scale to zero, keeping the larger own maximum", async () => {
    const { run, section } = boundsScope(group({ minReplicas: 2 }), {
      driver: boundedDriver({ min: 2, max: 10 }),
      replicas: 3,
      annotations: { [MIN]: "0", [MAX]: "5" },
    });
    await run(autoscalerBoundsPhase);
    expect(section("bounds")?.wanted).toEqual({ min: 0, max: 10 });
  });

  it("applies replicas outside the autoscaler's bounds as asked, reporting them with a Warning once", async () => {
    const { run, section, events } = boundsScope(group(), {
      replicas: 12,
      annotations: { [MIN]: "1", [MAX]: "5" },
    });
    await run(autoscalerBoundsPhase);
    // Never clamped to [1, 5]: the group gets room for 12.
    expect(section("bounds")?.wanted).toEqual({ min: 0, max: 12 });
    const condition = section("bounds")?.condition;
    expect(condition).toEqual({
      status: "False",
      reason: "ReplicasOutsideAutoscalerBounds",
      message: `replicas 12 are outside the cluster-autoscaler's bounds [1, 5] (annotations ${MIN} and ${MAX}); they are applied as asked: change spec.replicas or the annotations if that is not what you want`,
    });
    expect(events).toEqual([
      { type: "Warning", reason: "ReplicasOutsideAutoscalerBounds", message: condition?.message },
    ]);

    // The pool already says so: no second Warning.
    const again = boundsScope(group(), {
      replicas: 12,
      annotations: { [MIN]: "1", [MAX]: "5" },
      pool: { status: { conditions: [{ type: "AutoscalerBounds", ...condition }] } },
    });
    await again.run(autoscalerBoundsPhase);
    expect(again.events).toEqual([]);
  });

  it("ignores invalid annotations (own bounds only), naming what is wrong and what to do", async () => {
    const { run, section, events } = boundsScope(group(), {
      replicas: 12,
      annotations: { [MIN]: "two", [MAX]: "15" },
    });
    expect(await run(autoscalerBoundsPhase)).toBeUndefined();
    const bounds = section("bounds");
    expect(bounds?.wanted).toEqual({ min: 0, max: 10 });
    expect(bounds?.condition).toEqual({
      status: "False",
      reason: "InvalidAutoscalerBounds",
      message: `annotation ${MIN} is "two", not a whole number ≥ 0: set it to the node group's minimum size, e.g. "1"; until then the kit ignores the autoscaler's bounds, and so does the cluster-autoscaler`,
    });
    expect(events.map((e) => `${e.type} ${e.reason}`)).toEqual(["Warning InvalidAutoscalerBounds"]);
  });

  it("names a minimum above the maximum", async () => {
    const { run, section } = boundsScope(group(), { annotations: { [MIN]: "6", [MAX]: "5" } });
    await run(autoscalerBoundsPhase);
    expect(section("bounds")?.condition?.message).toMatch(
      /^annotation .*min-size \(6\) is greater than .*max-size \(5\): lower the minimum or raise the maximum/,
    );
    expect(section("bounds")?.wanted).toEqual({ min: 0, max: 10 });
  });

  it("keeps the group's current size inside the target, so a narrowing never strands it", async () => {
    const { run, section } = boundsScope(group({ desiredReplicas: 8, maxReplicas: 8 }), {
      driver: boundedDriver({ min: 0, max: 5 }),
      replicas: 3,
    });
    await run(autoscalerBoundsPhase);
    expect(section("bounds")).toMatchObject({
      wanted: { min: 0, max: 5 },
      target: { min: 0, max: 8 },
    });
  });

  it("creates a group with the autoscaler's bounds (no group yet)", async () => {
    const { run, section } = boundsScope(null, {
      replicas: 0,
      annotations: { [MIN]: "0", [MAX]: "20" },
    });
    await run(autoscalerBoundsPhase);
    expect(section("bounds")).toMatchObject({
      wanted: { min: 0, max: 20 },
      target: { min: 0, max: 20 },
    });
  });

  it("takes the group's size as the replicas under an external autoscaler", async () => {
    const { run, section } = boundsScope(group({ desiredReplicas: 7 }), {
      replicas: 2,
      annotations: { [MANAGED_BY]: "external", [MIN]: "1", [MAX]: "5" },
    });
    await run(autoscalerBoundsPhase);
    expect(section("bounds")?.condition?.message).toMatch(/^replicas 7 are outside/);
  });

  it("says when a driver without groupBounds leaves the group narrower than the autoscaler", async () => {
    const { run, section, events } = boundsScope(group({ minReplicas: 1, maxReplicas: 10 }), {
      driver: fakeCloud().driver,
      replicas: 3,
      annotations: { [MIN]: "0", [MAX]: "15" },
    });
    await run(autoscalerBoundsPhase);
    expect(section("bounds")?.condition).toEqual({
      status: "False",
      reason: "AutoscalerBoundsNotCovered",
      message:
        "the group's bounds [1, 10] do not cover the cluster-autoscaler's [0, 15], and the driver cannot widen them (it has no groupBounds): the cloud refuses sizes outside [1, 10]; widen the pool's own size limits",
    });
    expect(events).toHaveLength(1);
  });

  it.each([
    [{ min: 5, max: 3 }, "the pool's own bounds [5, 3] have the minimum above the maximum"],
    [{ min: -1, max: 3 }, 'the driver\'s groupBounds returned {"min":-1,"max":3}'],
    [{ min: 0, max: 2.5 }, "min and max must be whole numbers ≥ 0"],
  ])("stops on unusable own bounds %j, naming them (no bounds written)", async (own, text) => {
    const { run, section } = boundsScope(group(), { driver: boundedDriver(own) });
    const result = await run(autoscalerBoundsPhase);
    expect(result?.ready).toMatchObject({ status: "False", reason: "InvalidSpec" });
    expect(result?.ready.message).toContain(text);
    expect(section("bounds")).toBeUndefined();
  });
});
