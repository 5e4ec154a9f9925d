import { describe, expect, it } from "vitest";
import type { PoolInstance, PoolInstanceState, TemplateStamp } from "./driver.js";
import {
  machinePoolStrategySchema,
  type PlanAction,
  planPool,
  prunableVersions,
  resolveStrategy,
  stableStringify,
  stampIsCurrent,
  stampIsExact,
  targetStamp,
  victimOrder,
} from "./strategy.js";

function instance(
  id: string,
  options: {
    state?: PoolInstanceState;
    version?: string;
    createdAt?: number;
    healthy?: boolean;
  } = {},
): PoolInstance {
  return {
    id,
    providerID: `fake:///zone-a/${id}`,
    state: options.state ?? "running",
    templateVersion: options.version ?? "2",
    createdAt: options.createdAt ?? Number(id.replace(/\D/g, "") || 0),
    healthy: options.healthy ?? true,
  };
}

const current = (i: PoolInstance) => i.templateVersion === "2";
const summary = (actions: readonly PlanAction[]) =>
  actions.map((a) =>
    a.kind === "setReplicas"
      ? `set ${a.replicas} (${a.reason})`
      : `delete ${a.instance.id} ${a.mode} (${a.reason})`,
  );

describe("resolveStrategy", () => {
  it("defaults to surge 1, unavailable 0, Oldest", () => {
    expect(resolveStrategy(3, false)).toEqual({
      maxSurge: 1,
      maxUnavailable: 0,
      deletePolicy: "Oldest",
    });
  });

  it("layers field by field, later wins, and resolves percentages (surge up, unavailable down)", () => {
    expect(
      resolveStrategy(
        10,
        false,
        { maxSurge: "25%", deletePolicy: "Newest" },
        { maxUnavailable: "25%" },
      ),
    ).toEqual({ maxSurge: 3, maxUnavailable: 2, deletePolicy: "Newest" });
  });

  it("has no surge when an autoscaler manages the replicas, and never two zero budgets", () => {
    expect(resolveStrategy(3, true, { maxSurge: 2, maxUnavailable: 0 })).toEqual({
      maxSurge: 0,
      maxUnavailable: 1,
      deletePolicy: "Oldest",
    });
    expect(resolveStrategy(3, false, { maxSurge: 0, maxUnavailable: 0 }).maxUnavailable).toBe(1);
  });

  it("refuses bad values with a message naming the field", () => {
    expect(() => resolveStrategy(3, false, { maxSurge: -1 })).toThrow(/strategy.maxSurge/);
    expect(() => resolveStrategy(3, false, { maxUnavailable: "150%" })).toThrow(
      /strategy.maxUnavailable must be an integer ≥ 0 or a percentage/,
    );
    expect(() => resolveStrategy(3, false, { deletePolicy: "Smallest" as never })).toThrow(
      /deletePolicy must be Oldest, Newest or Random/,
    );
  });

  it("the spec schema accepts counts and a policy, and rejects the rest", () => {
    expect(machinePoolStrategySchema.parse({ maxSurge: 2, deletePolicy: "Random" })).toEqual({
      maxSurge: 2,
      deletePolicy: "Random",
    });
    expect(machinePoolStrategySchema.safeParse({ maxSurge: -1 }).success).toBe(false);
    expect(machinePoolStrategySchema.safeParse({ deletePolicy: "Largest" }).success).toBe(false);
  });
});

describe("stamps", () => {
  it("hash template inputs independently of key order and undefined members", () => {
    expect(stableStringify({ b: 1, a: [1, { d: undefined, c: "x" }] })).toBe(
      '{"a":[1,{"c":"x"}],"b":1}',
    );
    const a = targetStamp({ image: "i", size: "s" }, "data", "ns/secret");
    const b = targetStamp({ size: "s", image: "i", extra: undefined }, "data", "ns/secret");
    expect(a).toEqual(b);
    expect(a.specHash).toMatch(/^[0-9a-f]{40}$/);
    expect(() => targetStamp({ n: Number.NaN }, "", "")).toThrow(/non-finite/);
  });

  it("tell a token-only change (current, not exact) from a rollout (not current)", () => {
    const target: TemplateStamp = targetStamp({ image: "i" }, "token-2", "ns/s");
    const tokenOnly = targetStamp({ image: "i" }, "token-1", "ns/s");
    const renamed = targetStamp({ image: "i" }, "token-2", "ns/s-2");
    const respec = targetStamp({ image: "j" }, "token-2", "ns/s");
    expect([stampIsCurrent(tokenOnly, target), stampIsExact(tokenOnly, target)]).toEqual([
      true,
      false,
    ]);
    expect(stampIsCurrent(renamed, target)).toBe(false);
    expect(stampIsCurrent(respec, target)).toBe(false);
    expect(stampIsCurrent(undefined, target)).toBe(false);
    expect(stampIsExact(target, target)).toBe(true);
  });

  it("prune only versions that are not newest, not the group's and not used by a live instance", () => {
    const versions = ["1", "2", "3", "4", "5"].map((version) => ({ version, stamp: undefined }));
    const instances = [
      instance("i1", { version: "2" }),
      instance("i2", { version: "1", state: "terminated" }),
      instance("i3", { version: "3", state: "terminating" }),
    ];
    expect(prunableVersions(versions, "4", instances)).toEqual(["1"]);
    expect(prunableVersions([], undefined, [])).toEqual([]);
  });
});

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

describe("planPool", () => {
  const strategy = resolveStrategy(3, false);

  it("does nothing and reports converged at the desired state", () => {
    const plan = planPool({
      desired: 3,
      groupDesired: 3,
      instances: [
        instance("i1"),
        instance("i2"),
        instance("i3"),
        instance("i0", { state: "terminated" }),
      ],
      isUpToDate: current,
      strategy,
      externallyManaged: false,
    });
    expect(plan.actions).toEqual([]);
    expect(plan.converged).toBe(true);
  });

  it("scales up by raising the desired size", () => {
    const plan = planPool({
      desired: 5,
      groupDesired: 3,
      instances: [instance("i1"), instance("i2"), instance("i3")],
      isUpToDate: current,
      strategy,
      externallyManaged: false,
    });
    expect(summary(plan.actions)).toEqual(["set 5 (ScaleUp)"]);
    expect(plan.converged).toBe(false);
  });

  it("scales down by picking victims and shrinking, and lowers capacity not yet launched", () => {
    const plan = planPool({
      desired: 1,
      groupDesired: 4,
      instances: [instance("i1"), instance("i2"), instance("i3", { state: "pending" })],
      isUpToDate: current,
      strategy,
      externallyManaged: false,
    });
    // Pending first, then the oldest; the fourth slot never launched: the size goes down to 1.
    expect(summary(plan.actions)).toEqual([
      "delete i3 shrink (ScaleDown)",
      "delete i1 shrink (ScaleDown)",
      "set 1 (ScaleDown)",
    ]);
    const unlaunched = planPool({
      desired: 1,
      groupDesired: 4,
      instances: [instance("i1")],
      isUpToDate: current,
      strategy,
      externallyManaged: false,
    });
    expect(summary(unlaunched.actions)).toEqual(["set 1 (ScaleDown)"]);
  });

  it("never shrinks below the group's own desired size when the cloud lists extra members", () => {
    const plan = planPool({
      desired: 2,
      groupDesired: 2,
      instances: [instance("i1"), instance("i2"), instance("i3")],
      isUpToDate: current,
      strategy,
      externallyManaged: false,
    });
    expect(plan.actions).toEqual([]);
    expect(plan.converged).toBe(false);
  });

  it("rolls with surge: surge first, delete old only once the new one is available", () => {
    const old = [
      instance("i1", { version: "1" }),
      instance("i2", { version: "1" }),
      instance("i3", { version: "1" }),
    ];
    const start = planPool({
      desired: 3,
      groupDesired: 3,
      instances: old,
      isUpToDate: current,
      strategy,
      externallyManaged: false,
    });
    expect(summary(start.actions)).toEqual(["set 4 (Surge)"]);
    expect(start.blockedByAvailability).toBe(true);
    // The surged group must not be "corrected" back while the new instance boots.
    const booting = planPool({
      desired: 3,
      groupDesired: 4,
      instances: [...old, instance("i4", { state: "pending" })],
      isUpToDate: current,
      strategy,
      externallyManaged: false,
    });
    expect(booting.actions).toEqual([]);
    const ready = planPool({
      desired: 3,
      groupDesired: 4,
      instances: [...old, instance("i4")],
      isUpToDate: current,
      strategy,
      externallyManaged: false,
    });
    expect(summary(ready.actions)).toEqual(["delete i1 shrink (Rollout)"]);
  });

  it("holds a rollout while availability is unknown: surges and scales, deletes no outdated instance", () => {
    const old = [instance("i1", { version: "1" }), instance("i2", { version: "1" })];
    const held = planPool({
      desired: 3,
      groupDesired: 4,
      instances: [...old, instance("i3"), instance("i4")],
      isUpToDate: current,
      strategy,
      externallyManaged: false,
      holdRollout: true,
    });
    expect(held.actions).toEqual([]);
    expect(held.blockedByAvailability).toBe(true);
    const scaling = planPool({
      desired: 4,
      groupDesired: 2,
      instances: old,
      isUpToDate: current,
      strategy,
      externallyManaged: false,
      holdRollout: true,
    });
    expect(summary(scaling.actions)).toEqual(["set 5 (ScaleUp)"]);
  });

  it("rolls without surge within maxUnavailable by replacing; an unavailable instance uses the budget", () => {
    const noSurge = resolveStrategy(4, false, { maxSurge: 0, maxUnavailable: 1 });
    const plan = planPool({
      desired: 4,
      groupDesired: 4,
      instances: [
        instance("i1", { version: "1" }),
        instance("i2", { version: "1" }),
        instance("i3", { version: "1", healthy: false }),
        instance("i4", { version: "1" }),
      ],
      isUpToDate: current,
      strategy: noSurge,
      externallyManaged: false,
    });
    // i3 is already unavailable: replacing it costs nothing, and it uses up maxUnavailable.
    expect(summary(plan.actions)).toEqual(["delete i3 replace (Rollout)"]);
    expect(plan.blockedByAvailability).toBe(true);
    const healthy = planPool({
      desired: 4,
      groupDesired: 4,
      instances: ["i1", "i2", "i3", "i4"].map((id) => instance(id, { version: "1" })),
      isUpToDate: current,
      strategy: noSurge,
      externallyManaged: false,
    });
    expect(summary(healthy.actions)).toEqual(["delete i1 replace (Rollout)"]);
  });

  it("scales down during a rollout by removing outdated instances first", () => {
    const plan = planPool({
      desired: 2,
      groupDesired: 4,
      instances: [
        instance("i1"),
        instance("i2", { version: "1" }),
        instance("i3"),
        instance("i4", { version: "1" }),
      ],
      isUpToDate: current,
      strategy: resolveStrategy(2, false),
      externallyManaged: false,
    });
    expect(summary(plan.actions)).toEqual([
      "delete i2 shrink (ScaleDown)",
      "delete i4 shrink (Rollout)",
    ]);
    expect(plan.targetGroupSize).toBe(3);
  });

  it("with an external autoscaler never sets the size and only replaces", () => {
    const plan = planPool({
      desired: 3,
      groupDesired: 3,
      instances: [instance("i1", { version: "1" }), instance("i2"), instance("i3")],
      isUpToDate: current,
      strategy: resolveStrategy(3, true),
      externallyManaged: true,
    });
    expect(summary(plan.actions)).toEqual(["delete i1 replace (Rollout)"]);
    const idle = planPool({
      desired: 5,
      groupDesired: 5,
      instances: [instance("i1"), instance("i2")],
      isUpToDate: current,
      strategy: resolveStrategy(5, true),
      externallyManaged: true,
    });
    expect(idle.actions).toEqual([]);
  });

  it("scales an outdated pool to zero without surging first", () => {
    const plan = planPool({
      desired: 0,
      groupDesired: 2,
      instances: [instance("i1", { version: "1" }), instance("i2", { version: "1" })],
      isUpToDate: current,
      strategy: resolveStrategy(0, false),
      externallyManaged: false,
    });
    expect(summary(plan.actions)).toEqual([
      "delete i1 shrink (ScaleDown)",
      "delete i2 shrink (ScaleDown)",
    ]);
    expect(plan.targetGroupSize).toBe(0);
  });

  it("leaves outdated instances to a native rollout", () => {
    const plan = planPool({
      desired: 2,
      groupDesired: 2,
      instances: [instance("i1", { version: "1" }), instance("i2", { version: "1" })],
      isUpToDate: current,
      strategy,
      externallyManaged: false,
      skipReplacement: true,
    });
    expect(plan.actions).toEqual([]);
  });
});
