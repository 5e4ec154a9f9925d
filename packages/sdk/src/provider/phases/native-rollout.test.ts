// The `nativeRollout` phase on a fake scope and a driver with a native rollout: when it starts,
// watches or cancels the cloud's rollout, what it leaves for the `Ready` message, and a rollout that
// failed on the target version.
import { describe, expect, it } from "vitest";
import type {
  GroupModelPoolDriver,
  NativeRollout,
  PoolGroup,
  RolloutOptions,
  RolloutStatus,
  TemplateStamp,
} from "../driver.js";
import { StepFailure } from "../errors.js";
import { PoolMemory } from "../memory.js";
import type { PoolSections } from "../phase.js";
import type { Plan } from "../plan.js";
import {
  type FakeCloud,
  type FakeScopeOptions,
  type FakeSettings,
  type FakeSpec,
  fakeCloud,
  fakeInstance,
  fakeScope,
} from "../testing.js";
import { nativeRolloutPhase } from "./native-rollout.js";

const OLD: TemplateStamp = { specHash: "old", bootstrapHash: "b1", bootstrapRef: "r1" };
const TARGET: TemplateStamp = { specHash: "new", bootstrapHash: "b2", bootstrapRef: "r1" };

/** A cloud with a native rollout: `status` is what `get` reports; calls are recorded in order. */
interface RolloutCloud {
  readonly cloud: FakeCloud;
  readonly calls: { op: "get" | "start" | "cancel"; options?: RolloutOptions }[];
  status: RolloutStatus | undefined;
  readonly native: NativeRollout<FakeSpec>;
}

function rolloutCloud(status?: RolloutStatus): RolloutCloud {
  const cloud = fakeCloud();
  const state: RolloutCloud = {
    cloud,
    calls: [],
    status,
    native: {
      async get() {
        state.calls.push({ op: "get" });
        return state.status;
      },
      async start(_ctx, options) {
        state.calls.push({ op: "start", options });
        state.status = { id: `r-${state.calls.length}`, state: "running" };
      },
      async cancel() {
        state.calls.push({ op: "cancel" });
      },
    },
  };
  return state;
}

const ops = (rc: RolloutCloud) => rc.calls.map((c) => c.op);

function plan(overrides: Partial<Plan> = {}): Plan {
  return {
    actions: [],
    live: 3,
    available: 3,
    outdated: 0,
    targetGroupSize: 3,
    converged: false,
    blockedByAvailability: false,
    failed: 0,
    remediationWaiting: [],
    healthCheckFailed: 0,
    ...overrides,
  };
}

/** What the phases before `nativeRollout` would have written: version "2" is the target. */
function rolloutInputs(outdated: number): Partial<PoolSections<FakeSpec, FakeSettings>> {
  const group: PoolGroup<FakeSettings> = {
    id: "group-1",
    status: "active",
    desiredReplicas: 3,
    templateVersion: "2",
    settings: { maxSize: 10 },
    instances: [fakeInstance({ templateVersion: "1" }), fakeInstance({ templateVersion: "2" })],
  };
  return {
    desired: { stamp: TARGET, settings: { maxSize: 10 } },
    template: {
      version: { version: "2", stamp: TARGET },
      versions: [
        { version: "1", stamp: OLD },
        { version: "1b", stamp: { ...TARGET, bootstrapHash: "b-rotated" } },
        { version: "2", stamp: TARGET },
      ],
      isUpToDate: (i) => i.templateVersion === "2",
    },
    group: { group, desired: 3, external: false },
    scale: {
      strategy: { maxSurge: 2, maxUnavailable: 1, deletePolicy: "Oldest" },
      plan: plan(),
      outdated,
      provisioned: true,
      workloadUnavailable: undefined,
    },
  };
}

function rolloutScope(rc: RolloutCloud, outdated = 2, options: FakeScopeOptions = {}) {
  return fakeScope({
    driver: { ...rc.cloud.driver, nativeRollout: rc.native },
    sections: rolloutInputs(outdated),
    ...options,
  });
}

function groupModelDriver(rc: RolloutCloud): GroupModelPoolDriver<FakeSpec, FakeSettings> {
  const {
    getTemplate: _get,
    createTemplateVersion: _create,
    deleteTemplate: _delete,
    ...rest
  } = rc.cloud.driver;
  return { ...rest, model: "group", nativeRollout: rc.native };
}

describe("nativeRollout: nothing to do", () => {
  it("writes no note and calls nothing for a driver without a native rollout", async () => {
    const rc = rolloutCloud();
    const { run, section, events } = fakeScope({
      driver: rc.cloud.driver,
      sections: rolloutInputs(2),
    });
    expect(await run(nativeRolloutPhase)).toBeUndefined();
    expect(section("rollout")).toEqual({ note: undefined });
    expect(rc.cloud.calls).toEqual([]);
    expect(events).toEqual([]);
  });

  it("ignores the driver's rollout when useNativeRollout is off", async () => {
    const rc = rolloutCloud();
    const { run, section } = rolloutScope(rc, 2, { options: { useNativeRollout: false } });
    await run(nativeRolloutPhase);
    expect(section("rollout")).toEqual({ note: undefined });
    expect(rc.calls).toEqual([]);
  });

  it("does not even ask the cloud when no instance is outdated", async () => {
    const rc = rolloutCloud({ id: "r-0", state: "running", startedWithVersion: "1" });
    const { run, section } = rolloutScope(rc, 0);
    await run(nativeRolloutPhase);
    expect(section("rollout")).toEqual({ note: undefined });
    expect(rc.calls).toEqual([]);
  });
});

describe("nativeRollout: starting", () => {
  it("starts one with the group's replicas and the strategy's limits when none ran", async () => {
    const rc = rolloutCloud();
    const { run, section, events } = rolloutScope(rc);
    expect(await run(nativeRolloutPhase)).toBeUndefined();
    expect(rc.calls).toEqual([
      { op: "get" },
      {
        op: "start",
        options: {
          templateVersion: "2",
          replicas: 3,
          maxSurge: 2,
          maxUnavailable: 1,
          minHealthyPercent: 67,
          maxHealthyPercent: 166,
        },
      },
    ]);
    expect(events).toEqual([
      {
        type: "Normal",
        reason: "RolloutStarted",
        message: "started the cloud's rolling replacement to template version 2",
      },
    ]);
    expect(section("rollout")).toEqual({ note: "native rollout started" });
  });

  it.each(["succeeded", "cancelled"] as const)(
    "starts a new one after the last one %s",
    async (state) => {
      const rc = rolloutCloud({ id: "r-0", state, startedWithVersion: "1" });
      const { run, section } = rolloutScope(rc);
      await run(nativeRolloutPhase);
      expect(ops(rc)).toEqual(["get", "start"]);
      expect(section("rollout")?.note).toBe("native rollout started");
    },
  );

  it("starts at once after a rollout that failed on an older version, and says so", async () => {
    const rc = rolloutCloud({
      id: "r-0",
      state: "failed",
      startedWithVersion: "1",
      message: "health check failed",
    });
    const memory = new PoolMemory();
    memory.failedRollout = { id: "r-old", at: 0 };
    const { run, events } = rolloutScope(rc, 2, { memory });
    await run(nativeRolloutPhase);
    expect(ops(rc)).toEqual(["get", "start"]);
    expect(events[0]?.message).toBe(
      "started the cloud's rolling replacement to template version 2 (previous rollout failed: health check failed)",
    );
    expect(memory.failedRollout).toBeUndefined();
  });

  it("says no reason was given for a failure without a message", async () => {
    const rc = rolloutCloud({ id: "r-0", state: "failed" });
    const { run, events } = rolloutScope(rc);
    await run(nativeRolloutPhase);
    expect(events[0]?.message).toMatch(/\(previous rollout failed: no reason given\)$/);
  });

  it("passes a driver's failure to start on to the error policy", async () => {
    const rc = rolloutCloud();
    rc.native.start = async () => {
      throw new Error("quota exceeded");
    };
    const { run, section, events } = rolloutScope(rc);
    const error = await run(nativeRolloutPhase).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StepFailure);
    expect((error as StepFailure).step).toBe("nativeRollout.start");
    expect(events).toEqual([]);
    expect(section("rollout")).toBeUndefined();
  });
});

describe("nativeRollout: a rollout in progress", () => {
  it("notes a running rollout on the target version with its progress", async () => {
    const rc = rolloutCloud({
      id: "r-7",
      state: "running",
      startedWithVersion: "2",
      percentComplete: 40,
    });
    const { run, section, events } = rolloutScope(rc);
    await run(nativeRolloutPhase);
    expect(ops(rc)).toEqual(["get"]);
    expect(events).toEqual([]);
    expect(section("rollout")).toEqual({ note: "native rollout r-7 running (40%)" });
  });

  it("notes a running rollout without progress", async () => {
    const rc = rolloutCloud({ id: "r-7", state: "running" });
    const { run, section } = rolloutScope(rc);
    await run(nativeRolloutPhase);
    expect(ops(rc)).toEqual(["get"]);
    expect(section("rollout")).toEqual({ note: "native rollout r-7 running" });
  });

  it("lets a rollout run that started on a version whose stamp is still current", async () => {
    // Version 1b differs from the target only in its bootstrap data (a token rotation).
    const rc = rolloutCloud({ id: "r-7", state: "running", startedWithVersion: "1b" });
    const { run, section } = rolloutScope(rc);
    await run(nativeRolloutPhase);
    expect(ops(rc)).toEqual(["get"]);
    expect(section("rollout")?.note).toBe("native rollout r-7 running");
  });

  it("cancels a stale rollout (started with a version the pool no longer runs)", async () => {
    const rc = rolloutCloud({ id: "r-7", state: "running", startedWithVersion: "1" });
    const { run, section, events } = rolloutScope(rc);
    expect(await run(nativeRolloutPhase)).toBeUndefined();
    expect(ops(rc)).toEqual(["get", "cancel"]);
    expect(events).toEqual([
      {
        type: "Normal",
        reason: "RolloutCancelled",
        message: "cancelled rollout r-7: it started with template version 1, the pool now needs 2",
      },
    ]);
    expect(section("rollout")).toEqual({ note: "cancelling a stale rollout" });
  });

  it("cancels a rollout that started on a version the cloud no longer lists", async () => {
    const rc = rolloutCloud({ id: "r-7", state: "running", startedWithVersion: "0" });
    const { run } = rolloutScope(rc);
    await run(nativeRolloutPhase);
    expect(ops(rc)).toEqual(["get", "cancel"]);
  });

  it("never calls a group-model rollout stale: it moves to the group's current model", async () => {
    const rc = rolloutCloud({ id: "r-7", state: "running", startedWithVersion: "1" });
    const { run, section } = rolloutScope(rc, 2, { driver: groupModelDriver(rc) });
    await run(nativeRolloutPhase);
    expect(ops(rc)).toEqual(["get"]);
    expect(section("rollout")?.note).toBe("native rollout r-7 running");
  });

  it("waits for a rollout being cancelled, starting nothing", async () => {
    const rc = rolloutCloud({ id: "r-7", state: "cancelling", startedWithVersion: "1" });
    const { run, section, events } = rolloutScope(rc);
    await run(nativeRolloutPhase);
    expect(ops(rc)).toEqual(["get"]);
    expect(events).toEqual([]);
    expect(section("rollout")).toEqual({ note: "waiting for rollout r-7 to cancel" });
  });
});

describe("nativeRollout: a rollout that failed on the target version", () => {
  const failed: RolloutStatus = {
    id: "r-9",
    state: "failed",
    startedWithVersion: "2",
    message: "instances unhealthy",
  };

  async function failure(run: () => Promise<unknown>): Promise<StepFailure> {
    const error = await run().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StepFailure);
    return error as StepFailure;
  }

  it("is a terminal failure, retried only after the resync period", async () => {
    const rc = rolloutCloud(failed);
    const memory = new PoolMemory();
    const first = rolloutScope(rc, 2, { memory });
    const error = await failure(() => first.run(nativeRolloutPhase));
    expect(error.step).toBe("nativeRollout");
    expect(error.failure).toEqual({
      kind: "terminal",
      reason: "RolloutFailed",
      message:
        "rollout r-9 to template version 2 failed: instances unhealthy; retrying after the resync period",
    });
    expect(ops(rc)).toEqual(["get"]);
    expect(memory.failedRollout).toEqual({ id: "r-9", at: first.clock.now() });
    expect(first.section("rollout")).toBeUndefined();

    // Within the resync period: still refused, the first sighting kept.
    const clock = first.clock;
    const resyncMs = first.scope.options.resyncMs;
    clock.advance(resyncMs - 1);
    const second = rolloutScope(rc, 2, { memory, clock });
    await failure(() => second.run(nativeRolloutPhase));
    expect(ops(rc)).toEqual(["get", "get"]);
    expect(memory.failedRollout?.at).toBe(first.clock.now() - (resyncMs - 1));

    // Once it passed: started again, and forgotten.
    clock.advance(1);
    const third = rolloutScope(rc, 2, { memory, clock });
    expect(await third.run(nativeRolloutPhase)).toBeUndefined();
    expect(ops(rc)).toEqual(["get", "get", "get", "start"]);
    expect(third.events.map((e) => e.message)).toEqual([
      "started the cloud's rolling replacement to template version 2 (previous rollout failed: instances unhealthy)",
    ]);
    expect(memory.failedRollout).toBeUndefined();
    expect(third.section("rollout")).toEqual({ note: "native rollout started" });
  });

  it("treats a different failed rollout as a new failure, with its own wait", async () => {
    const rc = rolloutCloud(failed);
    const memory = new PoolMemory();
    const test = rolloutScope(rc, 2, { memory });
    memory.failedRollout = { id: "r-8", at: test.clock.now() - 10 * test.scope.options.resyncMs };
    await failure(() => test.run(nativeRolloutPhase));
    expect(memory.failedRollout).toEqual({ id: "r-9", at: test.clock.now() });
    expect(ops(rc)).toEqual(["get"]);
  });

  it("reports no reason when the cloud gave none", async () => {
    const rc = rolloutCloud({ id: "r-9", state: "failed", startedWithVersion: "2" });
    const { run } = rolloutScope(rc);
    expect((await failure(() => run(nativeRolloutPhase))).failure.message).toContain(
      "failed: no reason given;",
    );
  });

  it("holds for a group-model driver whatever version the rollout started with", async () => {
    const rc = rolloutCloud({ id: "r-9", state: "failed", startedWithVersion: "model-x" });
    const { run } = rolloutScope(rc, 2, { driver: groupModelDriver(rc) });
    expect((await failure(() => run(nativeRolloutPhase))).failure.reason).toBe("RolloutFailed");
    expect(ops(rc)).toEqual(["get"]);
  });
});
