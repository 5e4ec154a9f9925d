// The AWS driver against moto over HTTP, on what the conformance suite cannot see: ownership, the
// stamp's round trip through TagSpecifications, no desired size when an autoscaler owns it, pruning
// the default version, error classes; and the test bed's stand-ins, so they cannot drift from AWS.
import { CreateAutoScalingGroupCommand } from "@aws-sdk/client-auto-scaling";
import {
  CreateLaunchTemplateCommand,
  DeleteLaunchTemplateVersionsCommand,
} from "@aws-sdk/client-ec2";
import { classifyDriverError, DriverError, type PoolContext } from "@capi-ts/sdk";
import { groupIntent, newTemplateVersion, poolContext } from "@capi-ts/sdk/provider/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { asgDriver, asgResourceName } from "./driver.js";
import { findMoto, MOTO_INSTALL_COMMAND } from "./moto.js";
import type { ASGMachinePoolSpec } from "./spec.js";
import { type MotoTestBed, startMotoTestBed } from "./testbed.js";

const haveMoto = findMoto()?.installed === true;
if (!haveMoto) {
  console.warn(
    `\n!!! SKIPPED BACKEND: the AWS driver is NOT tested against moto (run \`${MOTO_INSTALL_COMMAND}\`, which needs Python 3.9+).\n`,
  );
}

const spec: ASGMachinePoolSpec = {
  instanceType: "t3.small",
  imageId: "ami-0123456789abcdef0",
  minSize: 0,
  maxSize: 5,
};
const stamp = (n: number) => ({
  specHash: `${n}`.repeat(40).slice(0, 40),
  bootstrapHash: "b".repeat(40),
  bootstrapRef: "c".repeat(40),
});

let pools = 0;
function context(overrides: Partial<ASGMachinePoolSpec> = {}): PoolContext<ASGMachinePoolSpec> {
  pools++;
  return poolContext({
    pool: { name: `pool-${pools}`, uid: `uid-${pools}`, clusterName: "c1" },
    spec: { ...spec, ...overrides },
    version: "v1.34.1",
  });
}

// Generous limits: Python starts slowly on a busy machine, and each test is a few dozen HTTP calls.
describe.skipIf(!haveMoto)("asgDriver on moto", { timeout: 60_000 }, () => {
  let bed: MotoTestBed;
  beforeAll(async () => {
    bed = await startMotoTestBed();
  }, 120_000);
  afterAll(async () => {
    await bed?.stop();
  });

  it("stores the stamp in the version's TagSpecifications and reads it back", async () => {
    const driver = asgDriver(bed.providerClients());
    const ctx = context();
    expect(await driver.getTemplate(ctx)).toEqual([]);
    const first = await driver.createTemplateVersion(
      ctx,
      newTemplateVersion({ userData: "#cloud-config\n", stamp: stamp(1) }),
    );
    const second = await driver.createTemplateVersion(
      ctx,
      newTemplateVersion({ userData: "#cloud-config\n# v2\n", stamp: stamp(2) }),
    );
    const versions = await driver.getTemplate(ctx);
    expect(versions.map((v) => [v.version, v.stamp])).toEqual([
      [first.version, stamp(1)],
      [second.version, stamp(2)],
    ]);
  });

  it("creates a group without a desired size when an autoscaler owns it", async () => {
    const clients = bed.providerClients();
    const sent: Record<string, unknown>[] = [];
    clients.autoScaling.middlewareStack.add(
      (next) => async (args) => {
        sent.push({ ...(args.input as Record<string, unknown>) });
        return next(args);
      },
      { step: "initialize", name: "capture" },
    );
    const driver = asgDriver(clients);
    const ctx = context();
    const { version } = await driver.createTemplateVersion(
      ctx,
      newTemplateVersion({ userData: "x", stamp: stamp(1) }),
    );
    await driver.createGroup(
      ctx,
      groupIntent({
        replicas: undefined,
        templateVersion: version,
        settings: { availabilityZones: ["us-east-1a"] },
        bounds: { min: 2, max: 4 },
      }),
    );
    const create = sent.find((input) => "LaunchTemplate" in input);
    expect(create).toBeDefined();
    expect(create).not.toHaveProperty("DesiredCapacity");
    const group = await driver.getGroup(ctx);
    expect(group?.desiredReplicas).toBe(2); // AWS starts at MinSize
    expect(group?.templateVersion).toBe(version);
    expect(group?.instances.map((i) => i.providerID)).toEqual([
      expect.stringMatching(/^aws:\/\/\/us-east-1a\/i-[0-9a-f]+$/),
      expect.stringMatching(/^aws:\/\/\/us-east-1a\/i-[0-9a-f]+$/),
    ]);
    // Launch time and addresses come from EC2, in one call for the group.
    for (const instance of group?.instances ?? []) {
      expect(instance.addresses).toContainEqual(expect.objectContaining({ type: "InternalIP" }));
      expect(instance.createdAt).toBeLessThanOrEqual(Date.now());
    }
    // A retry after a lost response succeeds (the test bed answers AlreadyExists, as AWS does).
    await driver.createGroup(
      ctx,
      groupIntent({
        replicas: 2,
        templateVersion: version,
        settings: { availabilityZones: ["us-east-1a"] },
        bounds: { min: 2, max: 4 },
      }),
    );
    expect((await driver.getGroup(ctx))?.instances).toHaveLength(2);
  });

  it("reports each instance at the version it launched from", async () => {
    const driver = asgDriver(bed.providerClients());
    const ctx = context();
    const v1 = await driver.createTemplateVersion(
      ctx,
      newTemplateVersion({ userData: "one", stamp: stamp(1) }),
    );
    await driver.createGroup(
      ctx,
      groupIntent({
        replicas: 1,
        templateVersion: v1.version,
        settings: { availabilityZones: ["us-east-1a"] },
        bounds: { min: 0, max: 4 },
      }),
    );
    const v2 = await driver.createTemplateVersion(
      ctx,
      newTemplateVersion({ userData: "two", stamp: stamp(2) }),
    );
    await driver.updateGroup(ctx, { replicas: 2, templateVersion: v2.version });
    const group = await driver.getGroup(ctx);
    expect(group?.instances.map((i) => i.templateVersion).sort()).toEqual([v1.version, v2.version]);
    const [newer] = (await bed.instances(asgResourceName(ctx.pool))).filter(
      (i) => i.version === v2.version,
    );
    expect(newer && (await bed.userData(newer.id))).toBe("two");
  });

  it("refuses another pool's group and launch template", async () => {
    const driver = asgDriver(bed.providerClients());
    const ctx = context();
    const name = asgResourceName(ctx.pool);
    const foreign = [{ Key: "capi-ts.io/pool", Value: "other/pool" }];
    await bed.inspect.ec2.send(
      new CreateLaunchTemplateCommand({
        LaunchTemplateName: name,
        LaunchTemplateData: { ImageId: spec.imageId },
        TagSpecifications: [{ ResourceType: "launch-template", Tags: foreign }],
      }),
    );
    await bed.inspect.autoScaling.send(
      new CreateAutoScalingGroupCommand({
        AutoScalingGroupName: name,
        MinSize: 0,
        MaxSize: 1,
        AvailabilityZones: ["us-east-1a"],
        LaunchTemplate: { LaunchTemplateName: name, Version: "1" },
        Tags: foreign.map((t) => ({ ...t, PropagateAtLaunch: false })),
      }),
    );
    for (const call of [() => driver.getGroup(ctx), () => driver.getTemplate(ctx)]) {
      const error = await call().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(DriverError);
      expect((error as DriverError).failure).toMatchObject({
        kind: "terminal",
        reason: "ResourceNotOwned",
      });
    }
    await expect(driver.deleteTemplate(ctx)).rejects.toThrow(/belongs to other\/pool/);
  });

  it("reports the default version as not deletable, so the kit never prunes it", async () => {
    const clients = bed.providerClients();
    const driver = asgDriver(clients);
    const ctx = context();
    for (const n of [1, 2, 3]) {
      await driver.createTemplateVersion(
        ctx,
        newTemplateVersion({ userData: `v${n}`, stamp: stamp(n) }),
      );
    }
    const name = asgResourceName(ctx.pool);
    // As AWS: the default version is refused.
    const direct = await clients.ec2.send(
      new DeleteLaunchTemplateVersionsCommand({ LaunchTemplateName: name, Versions: ["1"] }),
    );
    expect(direct.UnsuccessfullyDeletedLaunchTemplateVersions?.[0]?.ResponseError?.Code).toBe(
      "launchTemplateVersionIsDefault",
    );
    const listed = await driver.getTemplate(ctx);
    expect(listed.map((v) => [v.version, v.deletable ?? true])).toEqual([
      ["1", false],
      ["2", true],
      ["3", true],
    ]);
    await driver.deleteTemplate(ctx, ["2"]);
    expect((await driver.getTemplate(ctx)).map((v) => v.version)).toEqual(["1", "3"]);
    // Pruning what is already gone is done, not an error.
    await driver.deleteTemplate(ctx, ["2"]);
    await driver.deleteTemplate(ctx);
    expect(await driver.getTemplate(ctx)).toEqual([]);
  });

  it("classifies throttling, missing resources and rejected credentials", async () => {
    const driver = asgDriver(bed.providerClients());
    const ctx = context();
    bed.throttle(1);
    const throttled = await driver.getGroup(ctx).catch((e: unknown) => e);
    expect(classifyDriverError(driver, throttled)).toMatchObject({
      kind: "throttled",
      reason: "CloudThrottling",
    });
    const gone = await driver.deleteGroup(ctx).catch((e: unknown) => e);
    expect(classifyDriverError(driver, gone).kind).toBe("notFound");
    await driver.deleteInstance(
      ctx,
      {
        id: "i-0123456789abcdef0",
        providerID: "aws:///us-east-1a/i-0123456789abcdef0",
        state: "running",
        templateVersion: "1",
        createdAt: 0,
      },
      "shrink",
    );
    const key = "AKIAEXAMPLEKEY000001";
    const rejected = Object.assign(new Error(`The access key ${key} is not valid`), {
      name: "AuthFailure",
      $metadata: { httpStatusCode: 401 },
    });
    const failure = classifyDriverError(driver, rejected);
    expect(failure).toMatchObject({ kind: "transient", reason: "CloudCredentialsRejected" });
    expect(failure.message).not.toContain(key);
  });
});
