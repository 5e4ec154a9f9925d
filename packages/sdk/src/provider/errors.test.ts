import { describe, expect, it } from "vitest";
import { DriverError } from "./driver.js";
import { describeSpecIssues, errorPolicy, StepFailure, TransientPoolError } from "./errors.js";

const throttled = new StepFailure(
  "getGroup",
  { kind: "throttled", reason: "CloudThrottling", message: "slow down", retryAfterMs: 500 },
  new Error("429"),
);
const transient = new StepFailure(
  "getGroup",
  { kind: "transient", reason: "CloudError", message: "503" },
  new Error("503"),
);
const base = { resyncMs: 60_000, toleranceMs: 300 };

describe("errorPolicy", () => {
  it("leaves every condition alone at steady state until failures persist (3 in a row over the tolerance)", () => {
    let streak: ReturnType<typeof errorPolicy>["streak"];
    const seen: (string | undefined)[] = [];
    const warnings: string[] = [];
    const delays: (number | undefined)[] = [];
    for (const now of [1000, 1500, 2000]) {
      const outcome = errorPolicy(throttled, { ...base, now, steadyState: true, streak });
      streak = outcome.streak;
      seen.push(outcome.ready?.reason);
      if (outcome.warning) warnings.push(outcome.warning.message);
      delays.push(outcome.requeueAfterMs);
      expect(outcome.retry).toBeUndefined();
    }
    // The hint of 500 ms is below the 1 s floor.
    expect(delays).toEqual([1000, 1000, 1000]);
    expect(seen).toEqual([undefined, undefined, "CloudThrottling"]);
    expect(warnings).toEqual(["getGroup: slow down (failing for 1s, 3 attempts)"]);
    // Reported once per streak: the next failure changes nothing more.
    const next = errorPolicy(throttled, { ...base, now: 2500, steadyState: false, streak });
    expect(next.warning).toBeUndefined();
  });

  it("treats a throttle hint that is not a number of milliseconds ≥ 0 as none, and bounds the rest", () => {
    const outcomeFor = (retryAfterMs: number, count = 0) =>
      errorPolicy(
        new StepFailure(
          "getGroup",
          { kind: "throttled", reason: "CloudThrottling", message: "slow down", retryAfterMs },
          undefined,
        ),
        {
          ...base,
          now: 0,
          steadyState: true,
          streak: count ? { since: 0, count, reported: false } : undefined,
        },
      ).requeueAfterMs;
    for (const hint of [0, -1, Number.NaN, Number.NEGATIVE_INFINITY]) {
      expect(outcomeFor(hint)).toBe(1000);
      expect(outcomeFor(hint, 3)).toBe(1000);
      // The backoff (5 ms doubling) takes over once it passes the floor: the 12th failure, 5 ms × 2^11.
      expect(outcomeFor(hint, 11)).toBe(10_240);
    }
    expect(outcomeFor(1e11)).toBe(15 * 60_000);
    expect(outcomeFor(Number.POSITIVE_INFINITY)).toBe(1000);
    expect(outcomeFor(30_000)).toBe(30_000);
    // The backoff stops at the ceiling too: a pool is looked at least every 15 minutes.
    expect(outcomeFor(0, 100)).toBe(15 * 60_000);
    const waiting = (retryAfterMs: number) =>
      errorPolicy(
        new StepFailure(
          "getGroup",
          { kind: "waiting", reason: "Busy", message: "busy", retryAfterMs },
          undefined,
        ),
        { ...base, now: 0, steadyState: false, streak: undefined },
      ).requeueAfterMs;
    expect([waiting(0), waiting(Number.NaN), waiting(-5), waiting(1e11)]).toEqual([
      100,
      1000,
      1000,
      15 * 60_000,
    ]);
  });

  it("needs the time bound too: 3 quick failures at steady state are still tolerated", () => {
    let streak: ReturnType<typeof errorPolicy>["streak"];
    let last: ReturnType<typeof errorPolicy> | undefined;
    for (const now of [0, 10, 20]) {
      last = errorPolicy(transient, { ...base, now, steadyState: true, streak });
      streak = last.streak;
    }
    expect(last?.ready).toBeUndefined();
    expect(last?.retry).toBeInstanceOf(TransientPoolError);
  });

  it("reports a transient failure at once while the pool converges", () => {
    const outcome = errorPolicy(transient, {
      ...base,
      now: 0,
      steadyState: false,
      streak: undefined,
    });
    expect(outcome.ready).toEqual({
      status: "False",
      reason: "CloudError",
      message: "getGroup: 503",
    });
    expect(outcome.warning).toBeUndefined();
  });

  it("records a Warning for a terminal failure and retries it after the resync period", () => {
    const terminal = new StepFailure(
      "createGroup",
      DriverError.terminal("QuotaExceeded", "quota of 10 instances reached").failure,
      undefined,
    );
    const outcome = errorPolicy(terminal, {
      ...base,
      now: 0,
      steadyState: true,
      streak: undefined,
    });
    expect(outcome).toMatchObject({
      ready: { reason: "QuotaExceeded" },
      requeueAfterMs: 60_000,
      warning: { reason: "QuotaExceeded", message: "createGroup: quota of 10 instances reached" },
      streak: undefined,
    });
  });

  it("reports a driver bug at once, with a Warning, even at steady state", () => {
    const bug = new StepFailure(
      "getGroup",
      { kind: "transient", reason: "DriverBug", message: "the driver threw TypeError: x" },
      new TypeError("x"),
    );
    const outcome = errorPolicy(bug, { ...base, now: 0, steadyState: true, streak: undefined });
    expect(outcome.ready?.reason).toBe("DriverBug");
    expect(outcome.warning?.reason).toBe("DriverBug");
    expect(outcome.retry).toBeInstanceOf(TransientPoolError);
  });

  it("waits without an error for `waiting`, and backs off for anything that is not a driver failure", () => {
    const waiting = new StepFailure(
      "deleteTemplate",
      { kind: "waiting", reason: "InUse", message: "in use", retryAfterMs: 250 },
      undefined,
    );
    expect(
      errorPolicy(waiting, { ...base, now: 0, steadyState: false, streak: undefined }),
    ).toMatchObject({ requeueAfterMs: 250, ready: { reason: "InUse" } });
    const other = errorPolicy(new Error("409 conflict"), {
      ...base,
      now: 0,
      steadyState: false,
      streak: undefined,
    });
    expect(other.ready?.reason).toBe("ReconcileError");
    expect(other.retry?.message).toBe("409 conflict");
  });
});

describe("describeSpecIssues", () => {
  it("words a schema failure as the API server does: field path, message, Required value", () => {
    expect(
      describeSpecIssues({
        message: '[{"code":"invalid_type",…}]',
        issues: [
          { path: ["spec", "minSize"], message: "Too small: expected number to be >=0" },
          {
            path: ["spec", "zones", 1],
            message: "Too small: expected string to have >=1 characters",
          },
          {
            path: ["spec", "instanceType"],
            message: "Invalid input: expected string, received undefined",
          },
        ],
      }),
    ).toBe(
      "[spec.minSize: Too small: expected number to be >=0, spec.zones[1]: Too small: expected string to have >=1 characters, spec.instanceType: Required value]",
    );
    expect(describeSpecIssues({ message: "plain" })).toBe("plain");
  });
});
