// Scale from zero, the kit end to end on the API server of the run with core: the driver's capacity
// reaches the pool's status at 0 replicas and follows a new instance type; a broken capacity is never
// written (the CRD would refuse it anyway) and is named on Ready while the pool keeps its last good
// capacity.

import type { PoolCapacity } from "@capi-ts/sdk";
import { InvalidError } from "@capi-ts/sdk/runtime";
import { scaled } from "@capi-ts/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type Bed,
  condition,
  converged,
  createPool,
  eventually,
  getMachinePool,
  getPool,
  groupName,
  MachinePools,
  ns,
  Pools,
  startBed,
} from "./support.js";

/** What each pool's capacity hook does, by pool name (default: the example driver's catalog). */
const misbehaviour = new Map<string, "invalid" | "throws">();

let bed: Bed;

beforeAll(async () => {
  bed = await startBed({
    wrapDriver: (driver) => ({
      ...driver,
      capacity(ctx) {
        const mode = misbehaviour.get(ctx.pool.name);
        if (mode === "throws") throw new Error("instance type catalog unreachable");
        if (mode === "invalid")
          return { capacity: { cpu: "lots", memory: "4Gi" } } as unknown as PoolCapacity;
        return driver.capacity?.(ctx);
      },
    }),
  });
}, 60_000);
afterAll(async () => {
  await bed?.stop();
});

const small = {
  capacity: { cpu: "2", "ephemeral-storage": "20Gi", memory: "4Gi", pods: "110" },
  nodeInfo: { architecture: "amd64", operatingSystem: "linux" },
};

describe("scale from zero: status.capacity and status.nodeInfo", {
  timeout: scaled(40_000),
}, () => {
  it("are published at 0 replicas and follow a new instance type, still at 0", async () => {
    const name = await createPool(bed, { replicas: 0 });
    const pool = await converged(bed, name, 0);
    expect(pool.status).toMatchObject(small);
    await bed.client.mergePatch(
      Pools,
      { namespace: ns, name },
      { spec: { instanceType: "arm-medium" } },
    );
    await eventually(async () => {
      const current = await getPool(bed, name);
      expect(current.status?.capacity).toEqual({
        cpu: "4",
        "ephemeral-storage": "50Gi",
        memory: "16Gi",
        pods: "110",
      });
      expect(current.status?.nodeInfo).toEqual({ architecture: "arm64", operatingSystem: "linux" });
    });
    expect((await getMachinePool(bed, name)).spec?.replicas).toBe(0);
    await converged(bed, name, 0);
  });

  it("keep the last good capacity when the hook turns invalid, with InvalidCapacity on Ready", async () => {
    const name = await createPool(bed, { replicas: 0 });
    await converged(bed, name, 0);
    misbehaviour.set(name, "invalid");
    // A spec change reconciles the pool at once; the capacity must not follow it.
    await bed.client.mergePatch(Pools, { namespace: ns, name }, { spec: { maxSize: 9 } });
    const pool = await eventually(async () => {
      const current = await getPool(bed, name);
      expect(condition(current, "Ready")).toMatchObject({
        status: "False",
        reason: "InvalidCapacity",
      });
      return current;
    });
    expect(condition(pool, "Ready")?.message).toMatch(
      /capacity\["cpu"\] is "lots", not a Kubernetes quantity.*fix the driver's capacity method/,
    );
    expect(pool.status).toMatchObject(small);
    misbehaviour.delete(name);
    await converged(bed, name, 0);
  });

  it("keep it too when the hook throws, with CapacityUnavailable, and the pool still scales", async () => {
    const name = await createPool(bed, { replicas: 0 });
    await converged(bed, name, 0);
    misbehaviour.set(name, "throws");
    await bed.client.mergePatch(
      Pools,
      { namespace: ns, name },
      { spec: { instanceType: "large" } },
    );
    await eventually(async () => {
      const current = await getPool(bed, name);
      expect(condition(current, "Ready")).toMatchObject({
        reason: "CapacityUnavailable",
        message: expect.stringContaining("instance type catalog unreachable"),
      });
      expect(current.status).toMatchObject(small);
    });
    await bed.client.mergePatch(MachinePools, { namespace: ns, name }, { spec: { replicas: 1 } });
    await eventually(async () => {
      expect(bed.cloud.inspect.providerIds(groupName(name))).toHaveLength(1);
    });
    misbehaviour.delete(name);
    const pool = await converged(bed, name, 1);
    expect(pool.status?.capacity).toMatchObject({ cpu: "8", memory: "32Gi" });
  });

  it("are refused by the API server when they are not quantities of strings", async () => {
    const name = await createPool(bed, { replicas: 0 });
    await converged(bed, name, 0);
    for (const capacity of [{ cpu: "lots" }, { cpu: 4 }, { cpu: "-1" }]) {
      const refused = await bed.client
        .mergePatchStatus(Pools, { namespace: ns, name }, { status: { capacity } })
        .catch((error: unknown) => error);
      expect(refused, JSON.stringify(capacity)).toBeInstanceOf(InvalidError);
    }
    const refused = await bed.client
      .mergePatchStatus(
        Pools,
        { namespace: ns, name },
        { status: { nodeInfo: { architecture: "x86_64" } } },
      )
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(InvalidError);
    expect((await getPool(bed, name)).status).toMatchObject(small);
  });
});
