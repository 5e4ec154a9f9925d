import {
  classifyDriverError,
  DriverError,
  type PoolContext,
  type PoolDriver,
  type PoolInstance,
  type TemplateStamp,
} from "@capi-ts/sdk";
import { checkPoolCapacity } from "@capi-ts/sdk/contract";
import {
  groupIntent,
  newTemplateVersion,
  poolContext,
  templateStamp,
} from "@capi-ts/sdk/provider/testing";
import { ManualClock } from "@capi-ts/sdk/runtime";
import { describe, expect, it } from "vitest";
import { FakeScalingCloud } from "../cloud/cloud.js";
import { FAKE_INSTANCE_TYPES } from "../cloud/instance-types.js";
import { scaleSetClient } from "../cloud/scaleset.js";
import {
  type FakeCloudGroupSettings,
  fakeCloudDriver,
  fakeProviderId,
  resourceName,
} from "./driver.js";
import { fakeScaleSetDriver } from "./scaleset-driver.js";
import type { FakeCloudMachinePoolSpec } from "./spec.js";

type Driver = PoolDriver<FakeCloudMachinePoolSpec, FakeCloudGroupSettings>;
type Ctx = PoolContext<FakeCloudMachinePoolSpec>;

const NAME = "c1.default.pool-a";

function context(spec: Partial<FakeCloudMachinePoolSpec> = {}, overrides: Partial<Ctx> = {}): Ctx {
  return poolContext({
    pool: { uid: "uid-1", clusterName: "c1" },
    spec: { instanceType: "small", minSize: 0, maxSize: 10, ...spec },
    version: "v1.31.0",
    ...overrides,
  });
}

function stamp(bootstrapHash = "b1", specHash = "s1"): TemplateStamp {
  return templateStamp({ specHash, bootstrapHash, bootstrapRef: "r1" });
}

function setup(options: Parameters<typeof fakeCloudDriver>[1] = {}) {
  const clock = new ManualClock();
  const cloud = new FakeScalingCloud({ clock, seed: 3 });
  const driver: Driver = fakeCloudDriver(cloud.client, {
    defaultZones: ["zone-a", "zone-b"],
    ...options,
  });
  return { clock, cloud, driver };
}

/** Template + group with `replicas`, converged. */
async function pool(
  driver: Driver,
  clock: ManualClock,
  replicas: number | undefined,
  ctx = context(),
) {
  const version = await driver.createTemplateVersion(
    ctx,
    newTemplateVersion({ userData: "boot-1", stamp: stamp() }),
  );
  await driver.createGroup(
    ctx,
    groupIntent({
      replicas,
      templateVersion: version.version,
      settings: driver.groupSettings(ctx),
    }),
  );
  clock.runUntilIdle();
  return version;
}

async function instances(driver: Driver, ctx = context()): Promise<readonly PoolInstance[]> {
  return (await driver.getGroup(ctx))?.instances ?? [];
}

describe("fakeCloudDriver: identity", () => {
  it("names resources from cluster, namespace and name (no UID, so clusterctl move keeps them)", () => {
    expect(resourceName(context().pool)).toBe(NAME);
    expect(resourceName({ ...context().pool, uid: "other" })).toBe(NAME);
  });

  it("reports each instance with exactly the providerID its kubelet registers", async () => {
    const registered: string[] = [];
    const clock = new ManualClock();
    const cloud = new FakeScalingCloud({
      clock,
      kubelet: { onJoin: (boot) => void registered.push(boot.providerID) },
    });
    const driver = fakeCloudDriver(cloud.client);
    await pool(driver, clock, 3);
    const reported = (await instances(driver)).map((i) => i.providerID);
    expect(reported).toHaveLength(3);
    expect([...reported].sort()).toEqual([...registered].sort());
    expect(reported.every((id) => /^fake:\/\/\/zone-a\/i-[0-9a-f]{12}$/.test(id))).toBe(true);
    expect(fakeProviderId("zone-b", "i-1")).toBe("fake:///zone-b/i-1");
    cloud.actors.interruptSpot((await instances(driver))[0]?.id ?? "");
    const nonTerminated = (await instances(driver)).filter((i) => i.state !== "terminated");
    expect(nonTerminated.map((i) => i.providerID).sort()).toEqual(cloud.inspect.providerIds(NAME));
  });
});

describe("fakeCloudDriver: launch template", () => {
  it("has no template at first, creates one tagged for the pool, then adds versions with stamps", async () => {
    const { cloud, driver } = setup();
    const ctx = context();
    expect(await driver.getTemplate(ctx)).toEqual([]);
    const v1 = await driver.createTemplateVersion(
      ctx,
      newTemplateVersion({ userData: "token-1", stamp: stamp("b1") }),
    );
    const v2 = await driver.createTemplateVersion(
      ctx,
      newTemplateVersion({ userData: "token-2", stamp: stamp("b2") }),
    );
    expect([v1.version, v2.version]).toEqual(["1", "2"]);
    const versions = await driver.getTemplate(ctx);
    expect(versions.map((v) => [v.version, v.stamp])).toEqual([
      ["1", stamp("b1")],
      ["2", stamp("b2")],
    ]);
    const [template] = cloud.inspect.templates();
    expect(template?.tags).toEqual({
      "capi-ts.io/pool": "default/pool-a",
      "capi-ts.io/cluster": "c1",
    });
    expect(template?.userData).toEqual({ 1: "token-1", 2: "token-2" });
    expect(template?.versions[1]).toMatchObject({
      image: "fake-k8s-v1.31.0",
      instanceType: "small",
    });
  });

  it("refuses a template that belongs to another pool", async () => {
    const { cloud, driver } = setup();
    await cloud.client.createLaunchTemplate({
      name: NAME,
      data: { image: "i", instanceType: "s", userData: "" },
      tags: { "capi-ts.io/pool": "default/someone-else" },
    });
    const error = await driver.getTemplate(context()).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DriverError);
    expect(classifyDriverError(driver, error)).toMatchObject({
      kind: "terminal",
      reason: "ResourceNotOwned",
    });
    expect((error as Error).message).toMatch(
      /belongs to default\/someone-else, not default\/pool-a/,
    );
    await expect(driver.deleteTemplate(context())).rejects.toThrow(/ResourceNotOwned/);
    expect(cloud.inspect.templates()).toHaveLength(1);
  });

  it("prunes versions and deletes the whole template; a missing template is fine", async () => {
    const { cloud, driver } = setup();
    const ctx = context();
    for (const b of ["b1", "b2", "b3"]) {
      await driver.createTemplateVersion(ctx, newTemplateVersion({ userData: b, stamp: stamp(b) }));
    }
    await driver.deleteTemplate(ctx, ["1", "2"]);
    expect((await driver.getTemplate(ctx)).map((v) => v.version)).toEqual(["3"]);
    await driver.deleteTemplate(ctx);
    expect(cloud.inspect.templates()).toEqual([]);
    await driver.deleteTemplate(ctx);
  });

  it("describes the template inputs without bootstrap data; the version changes them", () => {
    const { driver } = setup();
    expect(driver.templateInputs(context())).toEqual({
      image: "fake-k8s-v1.31.0",
      instanceType: "small",
    });
    expect(driver.templateInputs(context({}, { version: "v1.32.0" }))).toEqual({
      image: "fake-k8s-v1.32.0",
      instanceType: "small",
    });
    expect(driver.templateInputs(context({ image: "custom" }))).toMatchObject({ image: "custom" });
    // spot rolls the pool when set; unset, the inputs (and every existing pool's hash) are as before.
    expect(driver.templateInputs(context({ spot: true }))).toMatchObject({ spot: true });
    expect(driver.templateInputs(context({ spot: false }))).not.toHaveProperty("spot");
  });

  it("launches spot instances from a spot spec and reports them interruptible", async () => {
    const clock = new ManualClock();
    const cloud = new FakeScalingCloud({ clock });
    const driver = fakeCloudDriver(cloud.client);
    await pool(driver, clock, 2, context({ spot: true }));
    const reported = await instances(driver);
    expect(reported).toHaveLength(2);
    expect(reported.every((i) => i.interruptible === true)).toBe(true);
    const onDemand = new FakeScalingCloud({ clock });
    const plain = fakeCloudDriver(onDemand.client);
    await pool(plain, clock, 1);
    expect((await instances(plain))[0]).not.toHaveProperty("interruptible");
  });
});

describe("fakeCloudDriver: group", () => {
  it("creates the group, then reports it with settings equal to groupSettings (no spurious drift)", async () => {
    const { clock, driver } = setup();
    const ctx = context({ zones: ["zone-c", "zone-a"] });
    await pool(driver, clock, 3, ctx);
    const group = await driver.getGroup(ctx);
    expect(group).toMatchObject({
      status: "active",
      desiredReplicas: 3,
      minReplicas: 0,
      maxReplicas: 10,
      templateVersion: "1",
    });
    expect(group?.settings).toEqual(driver.groupSettings(ctx));
    expect(group?.settings.zones).toEqual(["zone-a", "zone-c"]);
    expect(group?.instances.map((i) => [i.state, i.templateVersion, i.healthy])).toEqual([
      ["running", "1", true],
      ["running", "1", true],
      ["running", "1", true],
    ]);
  });

  it("prefers the MachinePool's failure domains over the spec's zones", () => {
    const { driver } = setup();
    const ctx = context({ zones: ["zone-c"] }, { failureDomains: ["zone-b", "zone-a"] });
    expect(driver.groupSettings(ctx).zones).toEqual(["zone-a", "zone-b"]);
    expect(driver.groupSettings(context()).zones).toEqual(["zone-a", "zone-b"]);
  });

  it("sends no desired capacity when replicas are managed externally (the cloud uses minSize)", async () => {
    const { clock, cloud, driver } = setup();
    await pool(driver, clock, undefined, context({ minSize: 2 }));
    const [create] = cloud.calls({ operation: "createGroup" });
    expect(create?.args[0]).not.toHaveProperty("desiredCapacity");
    expect((await driver.getGroup(context()))?.desiredReplicas).toBe(2);
  });

  it("is idempotent on create and unknown on get", async () => {
    const { clock, driver } = setup();
    expect(await driver.getGroup(context())).toBeUndefined();
    await pool(driver, clock, 3);
    await driver.createGroup(
      context(),
      groupIntent({
        replicas: 3,
        templateVersion: "1",
        settings: driver.groupSettings(context()),
      }),
    );
  });

  it("updates only the fields it is given", async () => {
    const { clock, cloud, driver } = setup();
    await pool(driver, clock, 3);
    const mark = cloud.lastCallSeq();
    await driver.updateGroup(context(), { replicas: 5 });
    await driver.updateGroup(context(), { templateVersion: "1" });
    await driver.updateGroup(context(), { settings: { zones: ["zone-a"] } });
    await driver.updateGroup(context(), { bounds: { min: 1, max: 6 } });
    expect(cloud.calls({ afterSeq: mark }).map((c) => c.args[1])).toEqual([
      { desiredCapacity: 5 },
      { template: { id: NAME, version: 1 } },
      { zones: ["zone-a"] },
      { minSize: 1, maxSize: 6 },
    ]);
    clock.runUntilIdle();
    expect(await instances(driver)).toHaveLength(5);
  });

  it("reports the pool's own bounds from the spec, apart from the settings", () => {
    const { driver } = setup();
    expect(driver.groupBounds?.(context({ minSize: 1, maxSize: 4 }))).toEqual({ min: 1, max: 4 });
    expect(driver.groupSettings(context())).toEqual({ zones: ["zone-a", "zone-b"] });
  });

  it("creates the group with the bounds the kit gives, else the spec's", async () => {
    const { clock, cloud, driver } = setup();
    const version = await driver.createTemplateVersion(
      context(),
      newTemplateVersion({ userData: "boot-1", stamp: stamp() }),
    );
    await driver.createGroup(
      context(),
      groupIntent({
        replicas: 12,
        templateVersion: version.version,
        settings: driver.groupSettings(context()),
        bounds: { min: 0, max: 15 },
      }),
    );
    clock.runUntilIdle();
    expect(await driver.getGroup(context())).toMatchObject({
      desiredReplicas: 12,
      minReplicas: 0,
      maxReplicas: 15,
    });
    const [create] = cloud.calls({ operation: "createGroup" });
    expect(create?.args[0]).toMatchObject({ minSize: 0, maxSize: 15, desiredCapacity: 12 });
  });

  it("writes new bounds and a desired size outside the old ones in one call, as the cloud checks them together", async () => {
    const { clock, cloud, driver } = setup();
    await pool(driver, clock, 3);
    // As AWS does, the cloud refuses a size outside the group's bounds [0, 10], a terminal failure:
    const refused = await driver.updateGroup(context(), { replicas: 12 }).catch((e: unknown) => e);
    expect(refused).toMatchObject({ code: "ValidationError" });
    expect((refused as Error).message).toBe(
      "ValidationError: desired capacity 12 is outside [minSize 0, maxSize 10]; change the bounds or the desired capacity",
    );
    expect(classifyDriverError(driver, refused)).toMatchObject({ kind: "terminal" });
    const mark = cloud.lastCallSeq();
    await driver.updateGroup(context(), { bounds: { min: 0, max: 15 }, replicas: 12 });
    expect(cloud.calls({ afterSeq: mark }).map((c) => c.args[1])).toEqual([
      { minSize: 0, maxSize: 15, desiredCapacity: 12 },
    ]);
    clock.runUntilIdle();
    expect(await driver.getGroup(context())).toMatchObject({
      desiredReplicas: 12,
      minReplicas: 0,
      maxReplicas: 15,
    });
  });

  it("refuses a group that belongs to another pool", async () => {
    const { cloud, driver } = setup();
    await cloud.client.createLaunchTemplate({
      name: "x",
      data: { image: "i", instanceType: "s", userData: "" },
    });
    await cloud.client.createGroup({
      name: NAME,
      minSize: 0,
      maxSize: 1,
      template: { id: "x", version: 1 },
      zones: ["zone-a"],
    });
    await expect(driver.getGroup(context())).rejects.toThrow(
      /group "c1.default.pool-a" exists but belongs to no pool/,
    );
  });

  it("deletes asynchronously: the group reports deleting, then is gone; then the template can go", async () => {
    const { clock, cloud, driver } = setup();
    await pool(driver, clock, 3);
    await driver.deleteGroup(context());
    await driver.deleteGroup(context());
    expect((await driver.getGroup(context()))?.status).toBe("deleting");
    const inUse = await driver.deleteTemplate(context()).catch((e: unknown) => e);
    expect(classifyDriverError(driver, inUse)).toMatchObject({
      kind: "waiting",
      reason: "ResourceInUse",
    });
    clock.runUntilIdle();
    expect(await driver.getGroup(context())).toBeUndefined();
    const gone = await driver.deleteGroup(context()).catch((e: unknown) => e);
    expect(classifyDriverError(driver, gone).kind).toBe("notFound");
    await driver.deleteTemplate(context());
    expect(cloud.inspect.templates()).toEqual([]);
  });
});

describe("fakeCloudDriver: instances", () => {
  it("shrink terminates and lowers the desired size; replace gets a new instance", async () => {
    const { clock, driver } = setup();
    await pool(driver, clock, 3);
    const [first, second] = await instances(driver);
    if (!first || !second) throw new Error("expected instances");
    await driver.deleteInstance(context(), first, "shrink");
    clock.runUntilIdle();
    let now = await driver.getGroup(context());
    expect(now?.desiredReplicas).toBe(2);
    expect(now?.instances.filter((i) => i.state === "running").map((i) => i.id)).not.toContain(
      first.id,
    );

    await driver.deleteInstance(context(), second, "replace");
    clock.runUntilIdle();
    now = await driver.getGroup(context());
    const runningIds = now?.instances.filter((i) => i.state === "running").map((i) => i.id) ?? [];
    expect(now?.desiredReplicas).toBe(2);
    expect(runningIds).toHaveLength(2);
    expect(runningIds).not.toContain(second.id);
  });

  it("treats an instance that is already terminating or gone as deleted", async () => {
    const { clock, driver } = setup();
    await pool(driver, clock, 3);
    const [victim] = await instances(driver);
    if (!victim) throw new Error("expected an instance");
    await driver.deleteInstance(context(), victim, "shrink");
    await driver.deleteInstance(context(), victim, "shrink");
    expect((await driver.getGroup(context()))?.desiredReplicas).toBe(2);
    clock.runUntilIdle();
    clock.advance(120_000);
    await driver.deleteInstance(context(), victim, "shrink");
  });

  it("reports terminated instances that linger and marks unhealthy ones", async () => {
    const { clock, cloud, driver } = setup();
    await pool(driver, clock, 3);
    const [a, b] = await instances(driver);
    cloud.actors.markUnhealthy(a?.id ?? "");
    expect((await instances(driver)).find((i) => i.id === a?.id)?.healthy).toBe(false);
    cloud.actors.terminateInstance(b?.id ?? "");
    clock.advance(cloud.timing.stopMs);
    expect((await instances(driver)).find((i) => i.id === b?.id)?.state).toBe("terminated");
  });
});

describe("fakeCloudDriver: error classification", () => {
  it("maps throttling, 5xx, validation, busy and not-found errors to the kit's kinds", async () => {
    const { clock, cloud, driver } = setup({ busyRetryMs: 7000 });
    await pool(driver, clock, 3);
    const failure = async (run: () => Promise<unknown>) =>
      classifyDriverError(driver, await run().catch((e: unknown) => e));

    cloud.faults.inject({ kind: "throttle", times: 1, retryAfterMs: 3000 });
    expect(await failure(() => driver.getGroup(context()))).toMatchObject({
      kind: "throttled",
      reason: "CloudThrottling",
      retryAfterMs: 3000,
    });
    cloud.faults.inject({ kind: "server-error", times: 1 });
    expect(await failure(() => driver.getGroup(context()))).toMatchObject({
      kind: "transient",
      reason: "CloudUnavailable",
    });
    cloud.faults.inject({ kind: "unavailable", times: 1, retryAfterMs: 500 });
    expect(await failure(() => driver.getTemplate(context()))).toMatchObject({
      kind: "transient",
      retryAfterMs: 500,
    });

    const invalid = await failure(() => driver.updateGroup(context(), { replicas: 50 }));
    expect(invalid).toMatchObject({ kind: "terminal", reason: "ValidationError" });
    expect(invalid.message).toMatch(/desired capacity 50 is outside \[minSize 0, maxSize 10\]/);

    await driver.deleteGroup(context());
    expect(await failure(() => driver.updateGroup(context(), { replicas: 1 }))).toMatchObject({
      kind: "waiting",
      reason: "ScalingActivityInProgress",
      retryAfterMs: 7000,
    });
    expect(classifyDriverError(driver, new Error("socket hang up"))).toMatchObject({
      kind: "transient",
    });
  });
});

describe("fakeCloudDriver: native rollout", () => {
  it("is absent unless asked for", () => {
    expect(setup().driver.nativeRollout).toBeUndefined();
  });

  it("starts a refresh honouring maxUnavailable, reports progress, and completes", async () => {
    const { clock, cloud, driver } = setup({ nativeRollout: true });
    const rollout = driver.nativeRollout;
    if (!rollout) throw new Error("nativeRollout missing");
    await pool(driver, clock, 4);
    expect(await rollout.get(context())).toBeUndefined();
    const v2 = await driver.createTemplateVersion(
      context(),
      newTemplateVersion({ userData: "boot-2", stamp: stamp("b1", "s2") }),
    );
    await driver.updateGroup(context(), { templateVersion: v2.version });
    await rollout.start(context(), {
      templateVersion: v2.version,
      replicas: 4,
      maxSurge: 1,
      maxUnavailable: 1,
      minHealthyPercent: 75,
      maxHealthyPercent: 125,
    });
    expect(cloud.calls({ operation: "startInstanceRefresh" })[0]?.args[1]).toEqual({
      minHealthyPercentage: 75,
    });
    expect(await rollout.get(context())).toMatchObject({
      state: "running",
      startedWithVersion: "2",
    });
    let minRunning = 4;
    for (let t = 0; t < 200 && (await rollout.get(context()))?.state === "running"; t++) {
      clock.advance(500);
      minRunning = Math.min(minRunning, cloud.inspect.instances({ states: ["running"] }).length);
    }
    expect(await rollout.get(context())).toMatchObject({
      state: "succeeded",
      percentComplete: 100,
    });
    expect(minRunning).toBeGreaterThanOrEqual(3);
    expect(
      (await instances(driver)).filter((i) => i.state === "running").map((i) => i.templateVersion),
    ).toEqual(["2", "2", "2", "2"]);
  });

  it("cancels a running rollout, and cancelling nothing is fine", async () => {
    const { clock, driver } = setup({ nativeRollout: true });
    const rollout = driver.nativeRollout;
    if (!rollout) throw new Error("nativeRollout missing");
    await pool(driver, clock, 3);
    await rollout.cancel(context());
    const v2 = await driver.createTemplateVersion(
      context(),
      newTemplateVersion({ userData: "boot-2", stamp: stamp("b1", "s2") }),
    );
    await driver.updateGroup(context(), { templateVersion: v2.version });
    await rollout.start(context(), {
      templateVersion: "2",
      replicas: 3,
      maxSurge: 1,
      maxUnavailable: 0,
      minHealthyPercent: 100,
      maxHealthyPercent: 133,
    });
    const busy = await rollout
      .start(context(), {
        templateVersion: "2",
        replicas: 3,
        maxSurge: 1,
        maxUnavailable: 0,
        minHealthyPercent: 100,
        maxHealthyPercent: 133,
      })
      .catch((e: unknown) => e);
    expect(classifyDriverError(driver, busy)).toMatchObject({
      kind: "waiting",
      reason: "InstanceRefreshInProgress",
    });
    await rollout.cancel(context());
    expect((await rollout.get(context()))?.state).toBe("cancelling");
    clock.runUntilIdle();
    expect(await rollout.get(context())).toMatchObject({
      state: "cancelled",
      message: "cancelled by request",
    });
  });
});

describe("fakeCloudDriver: capacity (scale from zero)", () => {
  it("answers from the instance type catalog, with no cloud call", async () => {
    const { cloud, driver } = setup();
    expect(await driver.capacity?.(context({ instanceType: "small" }))).toEqual({
      capacity: { cpu: "2", memory: "4Gi", "ephemeral-storage": "20Gi", pods: "110" },
      nodeInfo: { architecture: "amd64", operatingSystem: "linux" },
    });
    expect(await driver.capacity?.(context({ instanceType: "gpu-large" }))).toEqual({
      capacity: {
        cpu: "8",
        memory: "61Gi",
        "ephemeral-storage": "100Gi",
        pods: "110",
        "nvidia.com/gpu": "1",
      },
      nodeInfo: { architecture: "amd64", operatingSystem: "linux" },
    });
    expect((await driver.capacity?.(context({ instanceType: "arm-medium" })))?.nodeInfo).toEqual({
      architecture: "arm64",
      operatingSystem: "linux",
    });
    expect(cloud.calls()).toEqual([]);
  });

  it("knows no capacity of a type the catalog lacks", async () => {
    const { driver } = setup();
    expect(await driver.capacity?.(context({ instanceType: "m9.huge" }))).toBeUndefined();
  });

  it("answers for every type what the kit publishes, and the scale-set driver answers the same", async () => {
    const { cloud, driver } = setup();
    const scaleSet = fakeScaleSetDriver(scaleSetClient(cloud));
    for (const { name } of FAKE_INSTANCE_TYPES) {
      const answer = await driver.capacity?.(context({ instanceType: name }));
      expect(checkPoolCapacity(answer)).toEqual(answer);
      expect(await scaleSet.capacity?.(context({ instanceType: name }))).toEqual(answer);
    }
  });
});

describe("fakeScaleSetDriver: bounds", () => {
  it("reports the scale set's bounds and writes new ones with the capacity in one update", async () => {
    const clock = new ManualClock();
    const cloud = new FakeScalingCloud({ clock, seed: 3 });
    const driver = fakeScaleSetDriver(scaleSetClient(cloud), { defaultZones: ["zone-a"] });
    const ctx = context();
    await driver.createGroup(
      ctx,
      groupIntent({
        replicas: 2,
        templateVersion: "model-1",
        settings: driver.groupSettings(ctx),
        model: newTemplateVersion({ userData: "boot-1", stamp: stamp() }),
      }),
    );
    clock.runUntilIdle();
    expect(await driver.getGroup(ctx)).toMatchObject({
      minReplicas: 0,
      maxReplicas: 10,
      settings: { zones: ["zone-a"] },
    });
    await expect(driver.updateGroup(ctx, { replicas: 12 })).rejects.toMatchObject({
      code: "ValidationError",
    });
    const mark = cloud.lastCallSeq();
    await driver.updateGroup(ctx, { bounds: { min: 1, max: 12 }, replicas: 12 });
    expect(cloud.calls({ afterSeq: mark, mutating: true }).map((c) => c.args[1])).toEqual([
      { minSize: 1, maxSize: 12, desiredCapacity: 12 },
    ]);
    expect(await driver.getGroup(ctx)).toMatchObject({
      desiredReplicas: 12,
      minReplicas: 1,
      maxReplicas: 12,
    });
  });
});
