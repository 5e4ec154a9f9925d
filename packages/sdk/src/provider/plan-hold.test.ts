// planPool with launches held (a preflight check fails): nothing that makes the cloud launch an
// instance, and every removal that only shrinks the group.
import { describe, expect, it } from "vitest";
import type { PoolInstance } from "./driver-types.js";
import { type PlanAction, type PlanInput, planPool } from "./plan.js";
import { resolveStrategy } from "./strategy.js";
import { instanceOf as instance } from "./testing.js";

const current = (i: PoolInstance) => i.templateVersion === "2";
const summary = (actions: readonly PlanAction[]) =>
  actions.map((a) =>
    a.kind === "setReplicas"
      ? `set ${a.replicas} (${a.reason})`
      : `delete ${a.instance.id} ${a.mode} (${a.reason})`,
  );

function both(input: Omit<PlanInput, "holdCreates">) {
  return { free: planPool(input), held: planPool({ ...input, holdCreates: true }) };
}

describe("planPool with holdCreates", () => {
  it("raises no size: a scale-up and a surge wait, and the plan says it would have launched", () => {
    const { free, held } = both({
      desired: 3,
      groupDesired: 2,
      instances: [instance("i1"), instance("i2")],
      isUpToDate: current,
      strategy: resolveStrategy(3, false),
      externallyManaged: false,
    });
    expect(summary(free.actions)).toEqual(["set 3 (ScaleUp)"]);
    expect(free.creates).toBe(true);
    expect(held.actions).toEqual([]);
    expect(held.creates).toBe(true);
    expect(held.converged).toBe(false);
  });

  it("replaces nothing the cloud would relaunch, remediation included, but shrinks what a surge made room for", () => {
    const strategy = resolveStrategy(3, false, { maxSurge: 0, maxUnavailable: 1 });
    const { held } = both({
      desired: 3,
      groupDesired: 3,
      instances: [
        instance("i1", { version: "1" }),
        instance("i2", { state: "failed" }),
        instance("i3"),
      ],
      isUpToDate: current,
      strategy,
      externallyManaged: false,
    });
    expect(held.actions).toEqual([]);
    const surged = planPool({
      desired: 2,
      groupDesired: 3,
      instances: [instance("i1", { version: "1" }), instance("i2"), instance("i3")],
      isUpToDate: current,
      strategy: resolveStrategy(2, false),
      externallyManaged: false,
      holdCreates: true,
    });
    expect(summary(surged.actions)).toEqual(["delete i1 shrink (Rollout)"]);
  });

  it("never holds a scale-down, and a plan that launches nothing does not say it would", () => {
    const { free, held } = both({
      desired: 1,
      groupDesired: 3,
      instances: [instance("i1"), instance("i2"), instance("i3")],
      isUpToDate: current,
      strategy: resolveStrategy(1, false),
      externallyManaged: false,
    });
    expect(summary(held.actions)).toEqual(summary(free.actions));
    expect(held.actions.length).toBe(2);
    expect(held.creates ?? false).toBe(false);
  });
});
