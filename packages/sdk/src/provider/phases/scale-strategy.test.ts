// The `scale`, `publish`, `group` and `nativeRollout` phases under the rollout controls
// (`strategy.type: OnDelete`, `strategy.rolloutAfter`) and the preflight checks, on a fake scope
// and the in-memory driver of the test kit.
import { describe, expect, it } from "vitest";
import type { PoolGroup } from "../driver.js";
import type { PoolSections } from "../phase.js";
import type { ControlPlaneObject } from "../scope.js";
import {
  type FakeCloud,
  type FakeScopeOptions,
  type FakeSettings,
  type FakeSpec,
  fakeCloud,
  fakeScope,
  instanceOf,
} from "../testing.js";
import { groupPhase } from "./group.js";
import { nativeRolloutPhase } from "./native-rollout.js";
import { publishPhase } from "./publish.js";
import { scalePhase } from "./scale.js";

const HOUR = 3_600_000;
const T0 = Date.parse("2026-06-01T00:00:00Z");

function group(instances: PoolGroup<FakeSettings>["instances"], desired = instances.length) {
  return {
    id: "group-1",
    status: "active" as const,
    desiredReplicas: desired,
    templateVersion: "2",
    settings: { maxSize: 10 },
    instances,
  };
}

/** Sections before `scale`: instances on template version "2" are up to date. */
function inputs(g: PoolGroup<FakeSettings>, desired: number) {
  return {
    group: { group: g, desired, external: false },
    template: {
      version: { version: "2", stamp: undefined },
      versions: [],
      isUpToDate: (i) => i.templateVersion === "2",
    },
    machines: null,
    rollout: { note: undefined },
    capacity: { capacity: undefined, problem: undefined },
  } satisfies Partial<PoolSections<FakeSpec, FakeSettings>>;
}

function scope(cloud: FakeCloud, desired: number, options: FakeScopeOptions = {}) {
  return fakeScope({
    driver: cloud.driver,
    replicas: desired,
    sections: inputs(cloud.group as PoolGroup<FakeSettings>, desired),
    ...options,
  });
}

const calls = (cloud: FakeCloud) => cloud.mutating().map((c) => [c.op, ...c.args]);

describe("strategy OnDelete", () => {
  it("replaces no outdated instance, and the pool is Ready saying how many wait for a delete", async () => {
    const cloud = fakeCloud();
    cloud.group = group([
      instanceOf("i1", { version: "1" }),
      instanceOf("i2", { version: "1" }),
      instanceOf("i3"),
    ]);
    const test = scope(cloud, 3, { options: { strategy: { type: "OnDelete" } } });
    await test.run(scalePhase);
    expect(calls(cloud)).toEqual([]);
    const scale = test.section("scale");
    expect(scale?.outdated).toBe(0);
    expect(scale?.onDelete).toBe(2);
    expect(scale?.plan.converged).toBe(true);
    const result = await test.run(publishPhase);
    expect(result?.ready).toEqual({
      status: "True",
      reason: "Ready",
      message: "2 of 3 instances out of date; strategy OnDelete replaces each once it is deleted",
    });
  });

  it("launches the replacement of a deleted instance (from the group's current template) and still prefers outdated victims on scale-down", async () => {
    const cloud = fakeCloud();
    // i2 was deleted: the group wants 3 and has 2.
    cloud.group = group([instanceOf("i1", { version: "1" }), instanceOf("i3")], 2);
    const test = scope(cloud, 3, { options: { strategy: { type: "OnDelete" } } });
    await test.run(scalePhase);
    expect(calls(cloud)).toEqual([["updateGroup", { replicas: 3 }]]);

    const shrink = fakeCloud();
    shrink.group = group([instanceOf("i1"), instanceOf("i2", { version: "1" }), instanceOf("i3")]);
    await scope(shrink, 2, { options: { strategy: { type: "OnDelete" } } }).run(scalePhase);
    expect(calls(shrink)).toEqual([["deleteInstance", "i2", "shrink"]]);
  });

  it("refuses an unknown strategy type: InvalidSpec naming the field, nothing changed; the controller's option fails when it is built", async () => {
    const cloud = fakeCloud();
    cloud.group = group([instanceOf("i1", { version: "1" })]);
    const test = scope(cloud, 1, {
      spec: { image: "img-1", strategy: { type: "Recreate" } } as FakeSpec,
    });
    const result = await test.run(scalePhase);
    expect(result?.ready).toEqual({
      status: "False",
      reason: "InvalidSpec",
      message: 'strategy.type must be RollingUpdate or OnDelete, got "Recreate"',
    });
    expect(calls(cloud)).toEqual([]);
    expect(() =>
      scope(cloud, 1, { options: { strategy: { type: "Recreate" as unknown as "OnDelete" } } }),
    ).toThrow(/^machinePoolController: strategy\.type must be RollingUpdate or OnDelete/);
  });
});

describe("strategy.rolloutAfter", () => {
  it("replaces every instance launched before it, within the budget, and counts them as rolling", async () => {
    const cloud = fakeCloud();
    cloud.group = group([
      instanceOf("i1", { createdAt: T0 - 2 * HOUR }),
      instanceOf("i2", { createdAt: T0 - HOUR }),
      instanceOf("i3", { createdAt: T0 + HOUR }),
    ]);
    const test = scope(cloud, 3, {
      options: { strategy: { rolloutAfter: new Date(T0).toISOString() } },
    });
    await advanceTo(test.clock, T0 + 2 * HOUR);
    await test.run(scalePhase);
    // Surge one first (maxSurge 1, maxUnavailable 0); the oldest goes once the new one serves.
    expect(calls(cloud)).toEqual([["updateGroup", { replicas: 4 }]]);
    expect(test.section("scale")?.expired).toBe(2);
    const result = await test.run(publishPhase);
    expect(result?.ready.reason).toBe("RollingOut");
    expect(result?.ready.message).toMatch(/^2 of 3 instances outdated/);
  });

  it("changes nothing once every instance is newer (idempotent), nor before the time comes, and comes back when it does", async () => {
    const done = fakeCloud();
    done.group = group([
      instanceOf("i4", { createdAt: T0 + 1 }),
      instanceOf("i5", { createdAt: T0 + 2 }),
    ]);
    const after = scope(done, 2, {
      options: { strategy: { rolloutAfter: "2026-06-01T00:00:00Z" } },
    });
    await advanceTo(after.clock, T0 + HOUR);
    await after.run(scalePhase);
    expect(calls(done)).toEqual([]);
    expect((await after.run(publishPhase))?.ready.status).toBe("True");

    const early = fakeCloud();
    early.group = group([instanceOf("i1", { createdAt: T0 - HOUR })]);
    const before = scope(early, 1, {
      options: { strategy: { rolloutAfter: "2026-06-01T00:00:00Z" }, resyncPeriodMs: 2 * HOUR },
    });
    await advanceTo(before.clock, T0 - 1000);
    await before.run(scalePhase);
    expect(calls(early)).toEqual([]);
    const result = await before.run(publishPhase);
    expect(result?.ready.status).toBe("True");
    expect(result?.requeueAfterMs).toBe(1001);
  });

  it("leaves an instance whose launch time the cloud does not report: its replacement would not report one either", async () => {
    const cloud = fakeCloud();
    cloud.group = group([
      instanceOf("i1", { createdAt: 0 }),
      instanceOf("i2", { createdAt: Number.NaN }),
    ]);
    const test = scope(cloud, 2, {
      options: { strategy: { rolloutAfter: "2026-06-01T00:00:00Z" } },
    });
    await advanceTo(test.clock, T0 + HOUR);
    await test.run(scalePhase);
    expect(calls(cloud)).toEqual([]);
  });

  it("refuses a time that is not RFC 3339 with a zone, as InvalidSpec", async () => {
    const cloud = fakeCloud();
    cloud.group = group([instanceOf("i1")]);
    const test = scope(cloud, 1, {
      spec: { image: "img-1", strategy: { rolloutAfter: "2026-06-01 00:00" } } as FakeSpec,
    });
    const result = await test.run(scalePhase);
    expect(result?.ready.reason).toBe("InvalidSpec");
    expect(result?.ready.message).toMatch(/^strategy\.rolloutAfter must be an RFC 3339 time/);
  });
});

/** The control plane of the test Cluster, `spec.version` → `status.version`. */
function controlPlane(spec: string | undefined, status: string | undefined): ControlPlaneObject {
  return {
    apiVersion: "controlplane.cluster.x-k8s.io/v1beta2",
    kind: "KubeadmControlPlane",
    metadata: { namespace: "default", name: "c1-cp" },
    spec: spec === undefined ? {} : { version: spec },
    status: status === undefined ? {} : { version: status },
  };
}

describe("preflight checks", () => {
  it("hold a scale-up while the control plane upgrades, naming the check, and let it go once it is done", async () => {
    const cloud = fakeCloud();
    cloud.group = group([instanceOf("i1")], 1);
    const held = scope(cloud, 3, { controlPlane: controlPlane("v1.34.1", "v1.33.5") });
    await held.run(scalePhase);
    expect(calls(cloud)).toEqual([]);
    const result = await held.run(publishPhase);
    expect(result?.ready).toMatchObject({ status: "False", reason: "PreflightCheckFailed" });
    expect(result?.ready.message).toContain(
      'Scale up on hold because KubeadmControlPlane default/c1-cp is upgrading ("ControlPlaneIsStable" preflight check failed)',
    );
    expect(result?.requeueAfterMs).toBe(100);

    const released = scope(cloud, 3, { controlPlane: controlPlane("v1.34.1", "v1.34.1") });
    await released.run(scalePhase);
    expect(calls(cloud)).toEqual([["updateGroup", { replicas: 3 }]]);
  });

  it("never hold a scale-down, and read no control plane when nothing launches", async () => {
    const cloud = fakeCloud();
    cloud.group = group([instanceOf("i1"), instanceOf("i2"), instanceOf("i3")]);
    const shrink = scope(cloud, 1, { controlPlane: controlPlane("v1.34.1", "v1.33.5") });
    await shrink.run(scalePhase);
    expect(calls(cloud)).toEqual([
      ["deleteInstance", "i1", "shrink"],
      ["deleteInstance", "i2", "shrink"],
    ]);
    expect(shrink.controlPlane.reads).toBe(0);
    const steady = fakeCloud();
    steady.group = group([instanceOf("i1")]);
    const idle = scope(steady, 1, { controlPlane: controlPlane("v1.34.1", "v1.33.5") });
    await idle.run(scalePhase);
    expect(idle.controlPlane.reads).toBe(0);
  });

  it("hold a replacement the cloud would launch, but not the removal of an instance a surge made room for", async () => {
    const cloud = fakeCloud();
    // Surged already: 3 wanted, 4 in the group, i1 outdated; removing it shrinks.
    cloud.group = group([
      instanceOf("i1", { version: "1" }),
      instanceOf("i2"),
      instanceOf("i3"),
      instanceOf("i4"),
    ]);
    await scope(cloud, 3, { controlPlane: controlPlane("v1.34.1", "v1.33.5") }).run(scalePhase);
    expect(calls(cloud)).toEqual([["deleteInstance", "i1", "shrink"]]);

    const replace = fakeCloud();
    replace.group = group([instanceOf("i1", { version: "1" }), instanceOf("i2")]);
    const test = scope(replace, 2, {
      controlPlane: controlPlane("v1.34.1", "v1.33.5"),
      options: { strategy: { maxSurge: 0, maxUnavailable: 1 } },
    });
    await test.run(scalePhase);
    expect(calls(replace)).toEqual([]);
    expect(test.section("scale")?.preflight?.message).toMatch(/^Rollout on hold because/);
  });

  it("are skipped by the MachinePool's annotation, or else the pool's, and say what they cannot read", async () => {
    const cloud = fakeCloud();
    cloud.group = group([instanceOf("i1")], 1);
    await scope(cloud, 2, {
      controlPlane: controlPlane("v1.34.1", "v1.33.5"),
      machinePoolAnnotations: {
        "machineset.cluster.x-k8s.io/skip-preflight-checks": "ControlPlaneIsStable",
      },
    }).run(scalePhase);
    expect(calls(cloud)).toEqual([["updateGroup", { replicas: 2 }]]);

    const other = fakeCloud();
    other.group = group([instanceOf("i1")], 1);
    await scope(other, 2, {
      controlPlane: controlPlane("v1.34.1", "v1.33.5"),
      poolAnnotations: { "machineset.cluster.x-k8s.io/skip-preflight-checks": "All" },
    }).run(scalePhase);
    expect(calls(other)).toEqual([["updateGroup", { replicas: 2 }]]);

    const missing = fakeCloud();
    missing.group = group([instanceOf("i1")], 1);
    const test = scope(missing, 2, { controlPlane: controlPlane("v1.34.1", "v1.34.1") });
    test.controlPlane.current = undefined;
    await test.run(scalePhase);
    expect(calls(missing)).toEqual([]);
    expect(test.section("scale")?.preflight?.message).toContain(
      "KubeadmControlPlane default/c1-cp does not exist",
    );
  });

  it("hold the creation of a group that would launch instances", async () => {
    const cloud = fakeCloud();
    const test = fakeScope({
      driver: cloud.driver,
      replicas: 2,
      controlPlane: controlPlane("v1.34.1", undefined),
      sections: {
        observed: { versions: [], group: null },
        template: {
          version: { version: "1", stamp: undefined },
          versions: [],
          isUpToDate: () => true,
        },
        desired: {
          stamp: { specHash: "a", bootstrapHash: "b", bootstrapRef: "c" },
          settings: { maxSize: 10 },
        },
        bootstrap: { userData: "", format: "cloud-config", secretRef: "" },
        bounds: {
          wanted: undefined,
          target: undefined,
          autoscaler: { state: "absent" },
          condition: undefined,
        },
      },
    });
    const result = await test.run(groupPhase);
    expect(calls(cloud)).toEqual([]);
    expect(result?.ready.reason).toBe("PreflightCheckFailed");
    expect(result?.ready.message).toContain("is provisioning");
  });
});

/** Moves a manual clock forward to `at` (never back). */
async function advanceTo(clock: { now(): number; advance(ms: number): number }, at: number) {
  const now = clock.now();
  if (at > now) clock.advance(at - now);
}

describe("preflight checks and a native rollout", () => {
  it("hold its start while the control plane upgrades, and publish says which check", async () => {
    const cloud = fakeCloud();
    const calls: string[] = [];
    const native = {
      async get() {
        calls.push("get");
        return undefined;
      },
      async start() {
        calls.push("start");
      },
      async cancel() {
        calls.push("cancel");
      },
    };
    const g = group([instanceOf("i1", { version: "1" }), instanceOf("i2")]);
    const sections = {
      ...inputs(g, 2),
      desired: {
        stamp: { specHash: "new", bootstrapHash: "b", bootstrapRef: "r" },
        settings: { maxSize: 10 },
      },
      scale: {
        strategy: { maxSurge: 1, maxUnavailable: 0, deletePolicy: "Oldest" as const },
        plan: {
          actions: [],
          live: 2,
          available: 2,
          outdated: 0,
          targetGroupSize: 2,
          converged: false,
          blockedByAvailability: false,
          failed: 0,
          remediationWaiting: [],
          healthCheckFailed: 0,
        },
        outdated: 1,
        provisioned: true,
        workloadUnavailable: undefined,
      },
    };
    const { rollout: _rollout, ...beforeNative } = sections;
    const held = fakeScope({
      driver: { ...cloud.driver, nativeRollout: native },
      replicas: 2,
      controlPlane: controlPlane("v1.34.1", "v1.33.5"),
      sections: beforeNative,
    });
    await held.run(nativeRolloutPhase);
    expect(calls).toEqual(["get"]);
    const result = await held.run(publishPhase);
    expect(result?.ready.reason).toBe("PreflightCheckFailed");
    expect(result?.ready.message).toMatch(/^Rollout on hold because .* is upgrading/);

    const released = fakeScope({
      driver: { ...cloud.driver, nativeRollout: native },
      replicas: 2,
      controlPlane: controlPlane("v1.34.1", "v1.34.1"),
      sections: beforeNative,
    });
    await released.run(nativeRolloutPhase);
    expect(calls).toEqual(["get", "get", "start"]);
  });
});
