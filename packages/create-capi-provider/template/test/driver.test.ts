// The driver against the in-memory cloud, without Kubernetes: each call does what the kit expects.
import type { PoolContext } from "@capi-ts/sdk";
import {
  groupIntent,
  newTemplateVersion,
  poolContext,
  templateStamp,
} from "@capi-ts/sdk/provider/testing";
import { describe, expect, it } from "vitest";
import type { CloudClient } from "../src/cloud.js";
import type { FooEnvironment } from "../src/credentials.js";
import { fooDriver, providerIdOf } from "../src/driver.js";
import type { FooMachinePoolSpec } from "../src/kind.js";
import { MemoryCloud } from "./memory-cloud.js";

// The factories of @capi-ts/sdk/provider/testing fill what a test does not care about, so a member a
// later SDK release adds to what the kit passes breaks no test here.
/** The context of pool `default/pool-a` whose credentials connected `cloud`. */
const contextWith = (cloud: CloudClient): PoolContext<FooMachinePoolSpec, FooEnvironment> =>
  poolContext<FooMachinePoolSpec, FooEnvironment>({
    spec: { instanceType: "small", minSize: 0, maxSize: 5 },
    version: "v1.35.0",
    credentials: cloud,
  });
const stamp = templateStamp();

describe("fooDriver", () => {
  it("creates a template version, a group that launches instances, and reports them", async () => {
    const cloud = new MemoryCloud();
    const driver = fooDriver({ defaultZones: ["zone-a"] });
    const ctx = contextWith(cloud);
    const version = await driver.createTemplateVersion(
      ctx,
      newTemplateVersion({ userData: "#cloud-config", stamp }),
    );
    expect(await driver.getTemplate(ctx)).toEqual([
      { version: version.version, stamp, createdAt: version.createdAt },
    ]);
    await driver.createGroup(
      ctx,
      groupIntent({
        replicas: 2,
        templateVersion: version.version,
        settings: { zones: ["zone-a"] },
      }),
    );
    const group = await driver.getGroup(ctx);
    expect(group?.desiredReplicas).toBe(2);
    expect(group?.instances.map((i) => i.providerID)).toEqual([
      providerIdOf("zone-a", "i-000001"),
      providerIdOf("zone-a", "i-000002"),
    ]);
  });

  it("shrinks on delete in shrink mode and replaces in replace mode", async () => {
    const cloud = new MemoryCloud();
    const driver = fooDriver();
    const ctx = contextWith(cloud);
    await driver.createGroup(
      ctx,
      groupIntent({
        replicas: 2,
        templateVersion: "1",
        settings: { zones: ["zone-a"] },
      }),
    );
    const [first, second] = (await driver.getGroup(ctx))?.instances ?? [];
    if (!first || !second) throw new Error("expected two instances");
    await driver.deleteInstance(ctx, first, "replace");
    expect((await driver.getGroup(ctx))?.instances).toHaveLength(2);
    await driver.deleteInstance(ctx, second, "shrink");
    expect((await driver.getGroup(ctx))?.desiredReplicas).toBe(1);
  });

  it("tags what it creates with the pool and refuses a group or template another pool owns", async () => {
    const cloud = new MemoryCloud();
    const driver = fooDriver();
    const ctx = contextWith(cloud);
    await driver.createTemplateVersion(
      ctx,
      newTemplateVersion({ userData: "#cloud-config", stamp }),
    );
    await driver.createGroup(
      ctx,
      groupIntent({
        replicas: 1,
        templateVersion: "1",
        settings: { zones: ["zone-a"] },
      }),
    );
    const other = { ...ctx, pool: { ...ctx.pool, namespace: "team-b" } };
    // Same cloud names for another pool: pretend someone else made them under this pool's names.
    const mine = cloud.groups.get("default-pool-a");
    if (!mine) throw new Error("expected the group");
    cloud.groups.set("team-b-pool-a", { ...mine, name: "team-b-pool-a" });
    const template = cloud.templates.get("default-pool-a");
    if (!template) throw new Error("expected the template");
    cloud.templates.set("team-b-pool-a", template);
    for (const call of [() => driver.getGroup(other), () => driver.getTemplate(other)]) {
      const error = await call().catch((e: unknown) => e);
      expect(
        driver.classifyError?.(error) ?? (error as { failure?: unknown }).failure,
      ).toMatchObject({
        kind: "terminal",
        reason: "ResourceNotOwned",
      });
    }
    await expect(driver.deleteTemplate(other)).rejects.toThrow(/belongs to default\/pool-a/);
    expect(cloud.templates.has("team-b-pool-a")).toBe(true);
  });

  it("sends no desired size when an external autoscaler manages the replicas", async () => {
    const cloud = new MemoryCloud();
    const driver = fooDriver();
    const ctx = contextWith(cloud);
    await driver.createGroup(
      ctx,
      groupIntent({
        replicas: undefined,
        templateVersion: "1",
        settings: { zones: ["zone-a"] },
      }),
    );
    expect(cloud.groups.get("default-pool-a")?.desired).toBe(0);
  });

  it("says a missing group is not found, so deletion completes", async () => {
    const driver = fooDriver();
    const ctx = contextWith(new MemoryCloud());
    const error = await driver.updateGroup(ctx, { replicas: 1 }).catch((e: unknown) => e);
    expect(driver.classifyError?.(error)).toMatchObject({ kind: "notFound" });
  });

  it("says refused credentials are CredentialsRejected, so the kit resolves them again", async () => {
    const cloud = new MemoryCloud();
    const driver = fooDriver();
    const ctx = contextWith(cloud.connect({ endpoint: "memory://foo", token: "old-token" }));
    const error = await driver.getGroup(ctx).catch((e: unknown) => e);
    expect(driver.classifyError?.(error)).toMatchObject({
      kind: "transient",
      reason: "CredentialsRejected",
    });
    expect(String((error as Error).message)).not.toContain("old-token");
  });

  it("tells what an instance type offers, for scale from zero, and nothing for an unknown one", async () => {
    const driver = fooDriver();
    const ctx = contextWith(new MemoryCloud());
    expect(await driver.capacity?.(ctx)).toMatchObject({
      capacity: { cpu: "2", memory: "4Gi" },
      nodeInfo: { architecture: "amd64", operatingSystem: "linux" },
    });
    const unknown = { ...ctx, spec: { ...ctx.spec, instanceType: "no-such-type" } };
    expect(await driver.capacity?.(unknown)).toBeUndefined();
  });
});
