import { describe, expect, it } from "vitest";
import { machinePoolStrategySchema } from "../crd/strategy-schema.js";
import { predatesRollout, resolveStrategy, rolloutPercentages } from "./strategy.js";

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

  it("takes the type and rolloutAfter from the last layer that sets them, rolloutAfter as epoch ms", () => {
    expect(
      resolveStrategy(
        3,
        false,
        { type: "OnDelete", rolloutAfter: "2026-01-01T00:00:00Z" },
        { rolloutAfter: "2026-02-01T01:00:00+01:00" },
      ),
    ).toMatchObject({ type: "OnDelete", rolloutAfter: Date.parse("2026-02-01T00:00:00Z") });
    expect(() => resolveStrategy(3, false, { type: "Recreate" as never })).toThrow(
      /strategy.type must be RollingUpdate or OnDelete, got "Recreate"/,
    );
    for (const bad of ["2026-01-01", "2026-01-01T00:00:00", "yesterday", "2026-13-01T00:00:00Z"]) {
      expect(() => resolveStrategy(3, false, { rolloutAfter: bad })).toThrow(
        /strategy.rolloutAfter must be an RFC 3339 time with a zone/,
      );
    }
  });

  it("the spec schema takes a type and an RFC 3339 rolloutAfter, and rejects the rest", () => {
    expect(
      machinePoolStrategySchema.parse({ type: "OnDelete", rolloutAfter: "2026-01-01T00:00:00Z" }),
    ).toEqual({ type: "OnDelete", rolloutAfter: "2026-01-01T00:00:00Z" });
    expect(machinePoolStrategySchema.safeParse({ type: "Recreate" }).success).toBe(false);
    expect(machinePoolStrategySchema.safeParse({ rolloutAfter: "2026-01-01" }).success).toBe(false);
  });
});

describe("predatesRollout", () => {
  const after = { rolloutAfter: Date.parse("2026-01-01T00:00:00Z") };
  const before = after.rolloutAfter - 1;
  it("is true only once rolloutAfter has passed, for an instance launched before it", () => {
    expect(predatesRollout({ createdAt: before }, after, after.rolloutAfter)).toBe(true);
    expect(predatesRollout({ createdAt: before }, after, after.rolloutAfter - 10)).toBe(false);
    expect(predatesRollout({ createdAt: after.rolloutAfter }, after, after.rolloutAfter + 10)).toBe(
      false,
    );
    expect(predatesRollout({ createdAt: before }, {}, after.rolloutAfter)).toBe(false);
  });

  it("never counts an instance without a launch time", () => {
    for (const createdAt of [0, -1, Number.NaN]) {
      expect(predatesRollout({ createdAt }, after, after.rolloutAfter + 1)).toBe(false);
    }
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
