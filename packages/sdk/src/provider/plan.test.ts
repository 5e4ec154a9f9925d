import { describe, expect, it } from "vitest";
import type { PoolInstance } from "./driver-types.js";
import { type PlanAction, planPool } from "./plan.js";
import { resolveStrategy } from "./strategy.js";
import { instanceOf as instance } from "./testing.js";

const current = (i: PoolInstance) => i.templateVersion === "2";
const summary = (actions: readonly PlanAction[]) =>
  actions.map((a) =>
    a.kind === "setReplicas"
      ? `set ${a.replicas} (${a.reason})`
      : `delete ${a.instance.id} ${a.mode} (${a.reason})`,
  );

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

describe("planPool: remediation of Machines a MachineHealthCheck marked", () => {
  const marked =
    (...ids: string[]) =>
    (i: PoolInstance) =>
      ids.includes(i.id);
  const base = {
    desired: 3,
    groupDesired: 3,
    isUpToDate: current,
    externallyManaged: false,
  };

  it("replaces an unhealthy, unavailable member (the cloud launches its successor) and is not converged", () => {
    const plan = planPool({
      ...base,
      instances: [instance("i1"), instance("i2"), instance("i3", { healthy: false })],
      strategy: resolveStrategy(3, false),
      remediate: marked("i3"),
    });
    expect(summary(plan.actions)).toEqual(["delete i3 replace (Remediation)"]);
    expect(plan.actions[0]).toMatchObject({ remediationOf: "healthCheck" });
    expect(plan.healthCheckFailed).toBe(1);
    expect(plan.remediationWaiting).toEqual([]);
    expect(plan.converged).toBe(false);
  });

  it("never takes an available member below replicas − maxUnavailable; with room it does", () => {
    const instances = [instance("i1"), instance("i2"), instance("i3")];
    const held = planPool({
      ...base,
      instances,
      strategy: resolveStrategy(3, false, { maxUnavailable: 0 }),
      remediate: marked("i2"),
    });
    expect(held.actions).toEqual([]);
    expect(held.remediationWaiting.map((w) => `${w.instance.id} ${w.why}`)).toEqual([
      "i2 availability",
    ]);
    const room = planPool({
      ...base,
      instances,
      strategy: resolveStrategy(3, false, { maxUnavailable: 1 }),
      remediate: marked("i2"),
    });
    expect(summary(room.actions)).toEqual(["delete i2 replace (Remediation)"]);
  });

  it("keeps replacements in flight within max(1, maxSurge + maxUnavailable), newest first", () => {
    const instances = [
      instance("i1"),
      instance("i2", { healthy: false }),
      instance("i3", { healthy: false }),
    ];
    const plan = planPool({
      ...base,
      instances,
      strategy: resolveStrategy(3, false, { maxSurge: 1, maxUnavailable: 0 }),
      remediate: marked("i2", "i3"),
    });
    expect(summary(plan.actions)).toEqual(["delete i3 replace (Remediation)"]);
    expect(plan.remediationWaiting.map((w) => `${w.instance.id} ${w.why}`)).toEqual(["i2 budget"]);
    // A remediation already under way (its Machine is being deleted) uses the budget too.
    const inFlight = planPool({
      ...base,
      instances,
      strategy: resolveStrategy(3, false, { maxSurge: 1, maxUnavailable: 0 }),
      remediate: marked("i2", "i3"),
      remediationsInFlight: 1,
    });
    expect(inFlight.actions).toEqual([]);
    expect(inFlight.remediationWaiting.map((w) => w.why)).toEqual(["budget", "budget"]);
  });

  it("replaces members the cloud reports failed before marked ones, in one budget", () => {
    const plan = planPool({
      ...base,
      instances: [
        instance("i1"),
        instance("i2", { state: "failed" }),
        instance("i3", { healthy: false }),
      ],
      strategy: resolveStrategy(3, false, { maxSurge: 1, maxUnavailable: 0 }),
      remediate: marked("i3"),
    });
    expect(summary(plan.actions)).toEqual(["delete i2 replace (Remediation)"]);
    expect(plan.actions[0]).toMatchObject({ remediationOf: "cloud" });
    expect(plan.remediationWaiting.map((w) => `${w.instance.id} ${w.why}`)).toEqual(["i3 budget"]);
  });

  it("takes no available marked member while availability is unknown", () => {
    const plan = planPool({
      ...base,
      instances: [instance("i1"), instance("i2"), instance("i3")],
      strategy: resolveStrategy(3, false, { maxUnavailable: 1 }),
      remediate: marked("i3"),
      holdRollout: true,
    });
    expect(plan.actions).toEqual([]);
    expect(plan.remediationWaiting.map((w) => w.why)).toEqual(["unknown"]);
  });

  it("shrinks instead of replacing while the group is above the desired size", () => {
    const plan = planPool({
      ...base,
      desired: 2,
      groupDesired: 3,
      instances: [instance("i1"), instance("i2"), instance("i3", { healthy: false })],
      strategy: resolveStrategy(2, false),
      remediate: marked("i3"),
    });
    // Scale-down takes the unhealthy one first (the delete policy prefers unavailable members).
    expect(summary(plan.actions)).toEqual(["delete i3 shrink (ScaleDown)"]);
  });
});
