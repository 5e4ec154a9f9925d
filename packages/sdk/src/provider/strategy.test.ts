import { describe, expect, it } from "vitest";
import { machinePoolStrategySchema, resolveStrategy, rolloutPercentages } from "./strategy.js";

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

describe("rolloutPercentages", () => {
  it("never lets more than maxUnavailable go down or maxSurge come up", () => {
    expect(rolloutPercentages(3, 1, 0)).toEqual({ minHealthyPercent: 100, maxHealthyPercent: 133 });
    expect(rolloutPercentages(4, 0, 1)).toEqual({ minHealthyPercent: 75, maxHealthyPercent: 100 });
    expect(rolloutPercentages(3, 0, 1)).toEqual({ minHealthyPercent: 67, maxHealthyPercent: 100 });
    for (let replicas = 1; replicas <= 40; replicas++) {
      for (const [surge, unavailable] of [
        [1, 0],
        [0, 1],
        [2, 3],
        [replicas, replicas],
      ] as const) {
        const { minHealthyPercent, maxHealthyPercent } = rolloutPercentages(
          replicas,
          surge,
          unavailable,
        );
        expect(replicas - Math.ceil((minHealthyPercent * replicas) / 100)).toBeLessThanOrEqual(
          unavailable,
        );
        expect(Math.floor((maxHealthyPercent * replicas) / 100) - replicas).toBeLessThanOrEqual(
          surge,
        );
        expect(minHealthyPercent).toBeGreaterThanOrEqual(0);
        expect(maxHealthyPercent).toBeLessThanOrEqual(200);
      }
    }
  });

  it("is 100/100 for an empty pool", () => {
    expect(rolloutPercentages(0, 1, 1)).toEqual({ minHealthyPercent: 100, maxHealthyPercent: 100 });
  });
});
