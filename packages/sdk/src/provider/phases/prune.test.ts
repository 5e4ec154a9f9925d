// The `prune` phase on a fake scope and an in-memory driver: unused template versions go once the
// pool is where it should be, and only then.
import { describe, expect, it } from "vitest";
import { DriverError, type GroupModelPoolDriver, type PoolGroup } from "../driver.js";
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
import { prunePhase } from "./prune.js";

const VERSIONS = ["1", "2", "3", "4"].map((version) => ({ version, stamp: undefined }));

function converged(overrides: Partial<Plan> = {}): Plan {
  return {
    actions: [],
    live: 2,
    available: 2,
    outdated: 0,
    targetGroupSize: 2,
    converged: true,
    blockedByAvailability: false,
    failed: 0,
    remediationWaiting: [],
    healthCheckFailed: 0,
    ...overrides,
  };
}

/**
 * What the phases before `prune` would have written: the group launches from version 3, one
 * instance still runs version 2, version 4 is the newest; so only version 1 is unused.
 */
function pruneInputs(
  plan: Plan = converged(),
  outdated = 0,
  versions = VERSIONS,
): Partial<PoolSections<FakeSpec, FakeSettings>> {
  const group: PoolGroup<FakeSettings> = {
    id: "group-1",
    status: "active",
    desiredReplicas: 2,
    templateVersion: "3",
    settings: { maxSize: 10 },
    instances: [
      fakeInstance({ templateVersion: "2" }),
      fakeInstance({ templateVersion: "3" }),
      fakeInstance({ templateVersion: "1", state: "terminated" }),
    ],
  };
  return {
    group: { group, desired: 2, external: false },
    template: {
      version: { version: "3", stamp: undefined },
      versions,
      isUpToDate: () => true,
    },
    scale: {
      strategy: { maxSurge: 1, maxUnavailable: 0, deletePolicy: "Oldest" },
      plan,
      outdated,
      provisioned: true,
      workloadUnavailable: undefined,
    },
  };
}

function pruneScope(cloud: FakeCloud, options: FakeScopeOptions = {}) {
  return fakeScope({ driver: cloud.driver, sections: pruneInputs(), ...options });
}

const native = { start: async () => {}, get: async () => undefined, cancel: async () => {} };

describe("prune", () => {
  it("deletes the versions neither the group nor a live instance uses, never the newest", async () => {
    const cloud = fakeCloud();
    const { run, events } = pruneScope(cloud);
    expect(await run(prunePhase)).toBeUndefined();
    expect(cloud.mutating()).toEqual([{ op: "deleteTemplate", args: [["1"]] }]);
    expect(events).toEqual([
      {
        type: "Normal",
        reason: "TemplateVersionsPruned",
        message: "deleted unused template versions 1",
      },
    ]);
  });

  it("waits while the plan still has something to do", async () => {
    const cloud = fakeCloud();
    const action = { kind: "setReplicas", replicas: 3, reason: "ScaleUp" } as const;
    const { run, events } = pruneScope(cloud, {
      sections: pruneInputs(converged({ actions: [action], converged: false })),
    });
    expect(await run(prunePhase)).toBeUndefined();
    expect(cloud.calls).toEqual([]);
    expect(events).toEqual([]);
  });

  it("waits while the plan counts outdated instances", async () => {
    const cloud = fakeCloud();
    const { run } = pruneScope(cloud, {
      sections: pruneInputs(
        converged({ outdated: 1, converged: false, blockedByAvailability: true }),
      ),
    });
    await run(prunePhase);
    expect(cloud.calls).toEqual([]);
  });

  it("prunes a pool that is not converged but has nothing planned and nothing outdated", async () => {
    // E.g. instances still booting: nothing uses the unused versions either way.
    const cloud = fakeCloud();
    const { run } = pruneScope(cloud, {
      sections: pruneInputs(converged({ converged: false, available: 1 })),
    });
    await run(prunePhase);
    expect(cloud.mutating().map((c) => c.op)).toEqual(["deleteTemplate"]);
  });

  it("waits while the driver's native rollout has outdated instances to replace", async () => {
    // The plan counts none outdated (it leaves them to the native rollout); the section does.
    const cloud = fakeCloud();
    const { run } = pruneScope(cloud, {
      driver: { ...cloud.driver, nativeRollout: native },
      sections: pruneInputs(converged(), 2),
    });
    await run(prunePhase);
    expect(cloud.calls).toEqual([]);
  });

  it("prunes under a native rollout once nothing is outdated", async () => {
    const cloud = fakeCloud();
    const { run } = pruneScope(cloud, { driver: { ...cloud.driver, nativeRollout: native } });
    await run(prunePhase);
    expect(cloud.mutating()).toEqual([{ op: "deleteTemplate", args: [["1"]] }]);
  });

  it("does not wait for a native rollout the controller does not use", async () => {
    const cloud = fakeCloud();
    const { run } = pruneScope(cloud, {
      driver: { ...cloud.driver, nativeRollout: native },
      options: { useNativeRollout: false },
      sections: pruneInputs(converged(), 2),
    });
    await run(prunePhase);
    expect(cloud.mutating().map((c) => c.op)).toEqual(["deleteTemplate"]);
  });

  it("makes no call when every version is in use", async () => {
    const cloud = fakeCloud();
    const { run, events } = pruneScope(cloud, {
      sections: pruneInputs(converged(), 0, VERSIONS.slice(1)),
    });
    await run(prunePhase);
    expect(cloud.calls).toEqual([]);
    expect(events).toEqual([]);
  });

  it("never prunes for a driver with model: group (it has no template)", async () => {
    const cloud = fakeCloud();
    const {
      getTemplate: _get,
      createTemplateVersion: _create,
      deleteTemplate: _delete,
      ...rest
    } = cloud.driver;
    const driver: GroupModelPoolDriver<FakeSpec, FakeSettings> = { ...rest, model: "group" };
    const { run } = pruneScope(cloud, { driver });
    await run(prunePhase);
    expect(cloud.calls).toEqual([]);
  });

  it("leaves a version the cloud still considers in use for a later pass", async () => {
    const cloud = fakeCloud();
    cloud.faults.deleteTemplate = () =>
      DriverError.waiting("VersionInUse", "version 1 is referenced", 1_000);
    const { run, events } = pruneScope(cloud);
    expect(await run(prunePhase)).toBeUndefined();
    expect(cloud.calls.map((c) => c.op)).toEqual(["deleteTemplate"]);
    expect(events).toEqual([]);
  });

  it("hands any other failure to the error policy", async () => {
    const cloud = fakeCloud();
    cloud.faults.deleteTemplate = () => DriverError.terminal("AccessDenied", "not allowed");
    const { run, events } = pruneScope(cloud);
    await expect(run(prunePhase)).rejects.toThrow(/deleteTemplate: terminal: AccessDenied/);
    expect(events).toEqual([]);
  });
});
