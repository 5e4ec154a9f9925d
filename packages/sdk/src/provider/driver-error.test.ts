import { describe, expect, it } from "vitest";
import { classifyDriverError, DriverError, type DriverFailure } from "./driver-error.js";

class FakeSdkError extends Error {
  constructor(readonly status: number) {
    super(`status ${status}`);
  }
}

const classifier = {
  classifyError(error: unknown): DriverFailure | undefined {
    if (error instanceof FakeSdkError && error.status === 429) {
      return { kind: "throttled", reason: "Throttled", message: error.message, retryAfterMs: 2000 };
    }
    if (error instanceof FakeSdkError && error.status === 400) {
      return { kind: "terminal", reason: "not a valid reason!", message: error.message };
    }
    return undefined;
  },
};

describe("DriverError", () => {
  it("carries a typed failure for each kind", () => {
    expect(DriverError.waiting("GroupDeleting", "wait", 5000).failure).toEqual({
      kind: "waiting",
      reason: "GroupDeleting",
      message: "wait",
      retryAfterMs: 5000,
    });
    expect(DriverError.transient("Flaky", "again").failure).toEqual({
      kind: "transient",
      reason: "Flaky",
      message: "again",
    });
    expect(DriverError.transient("Flaky", "again", 100).failure).toMatchObject({
      retryAfterMs: 100,
    });
    expect(DriverError.throttled("Slow", "down", 1000).failure.kind).toBe("throttled");
    expect(DriverError.terminal("BadSpec", "no").failure.kind).toBe("terminal");
    expect(DriverError.notFound("Gone", "gone").failure.kind).toBe("notFound");
    const cause = new Error("root");
    const error = DriverError.terminal("BadSpec", "minSize > maxSize", cause);
    expect(error.message).toBe("terminal: BadSpec: minSize > maxSize");
    expect(error.cause).toBe(cause);
    expect(error).toBeInstanceOf(Error);
  });

  it("rejects reasons that cannot be condition reasons, and bad delays", () => {
    expect(() => DriverError.terminal("bad reason", "x")).toThrow(
      /not a valid condition reason; use a CamelCase word/,
    );
    expect(() => DriverError.waiting("Busy", "x", -1)).toThrow(
      /retryAfterMs must be a finite number of milliseconds ≥ 0/,
    );
    expect(() => DriverError.throttled("Busy", "x", Number.NaN)).toThrow(/retryAfterMs/);
  });
});

describe("classifyDriverError", () => {
  it("prefers a DriverError's own failure over the driver's classifier", () => {
    const error = DriverError.waiting("InUse", "template in use", 3000);
    expect(classifyDriverError(classifier, error)).toBe(error.failure);
  });

  it("uses the driver's classifier, and treats unknown errors as transient", () => {
    expect(classifyDriverError(classifier, new FakeSdkError(429))).toMatchObject({
      kind: "throttled",
      retryAfterMs: 2000,
    });
    expect(classifyDriverError(classifier, new FakeSdkError(503))).toEqual({
      kind: "transient",
      reason: "CloudError",
      message: "status 503",
    });
    expect(classifyDriverError({}, "a string")).toEqual({
      kind: "transient",
      reason: "CloudError",
      message: "a string",
    });
  });

  it("reports a driver's programming error as DriverBug, but a fetch network TypeError as a cloud error", () => {
    const bug = (() => {
      try {
        (undefined as unknown as { id: string }).id;
      } catch (error) {
        return error;
      }
    })();
    expect(classifyDriverError({}, bug)).toMatchObject({
      kind: "transient",
      reason: "DriverBug",
      message: expect.stringMatching(/^the driver threw TypeError: .*a bug in the driver/),
    });
    expect(classifyDriverError({}, new ReferenceError("x is not defined"))).toMatchObject({
      reason: "DriverBug",
    });
    const network = new TypeError("fetch failed", { cause: new Error("ECONNREFUSED") });
    expect(classifyDriverError({}, network)).toMatchObject({ reason: "CloudError" });
    // The driver's own classification wins over the guess.
    const classifying = {
      classifyError: () => ({ kind: "terminal", reason: "Bad", message: "m" }) as const,
    };
    expect(classifyDriverError(classifying, bug)).toMatchObject({
      kind: "terminal",
      reason: "Bad",
    });
  });

  it("says so when a classifier returns an invalid reason, and survives a classifier that throws", () => {
    expect(classifyDriverError(classifier, new FakeSdkError(400))).toMatchObject({
      kind: "terminal",
      reason: "InvalidFailureReason",
      message: expect.stringMatching(/^classifyError returned the reason "not a valid reason!"/),
    });
    const broken = {
      classifyError(): DriverFailure | undefined {
        throw new Error("oops");
      },
    };
    expect(classifyDriverError(broken, new Error("boom"))).toEqual({
      kind: "transient",
      reason: "ClassifyErrorFailed",
      message: "classifyError threw (oops) while classifying: boom",
    });
  });
});
