import { scaled } from "@capi-ts/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type Bed,
  condition,
  converged,
  createPool,
  eventually,
  getPool,
  groupName,
  ns,
  Pools,
  sleep,
  startBed,
} from "./support.js";

let bed: Bed;

beforeAll(async () => {
  bed = await startBed({ driver: { nativeRollout: true } });
}, 60_000);
afterAll(async () => {
  await bed?.stop();
});

function refreshCalls(
  group: string,
  afterSeq: number,
  operation: "startInstanceRefresh" | "cancelInstanceRefresh",
) {
  return bed.cloud.calls({ afterSeq, operation, outcome: "ok" }).filter((c) => c.args[0] === group);
}

describe("machinePoolController: the driver's native rollout", { timeout: scaled(40_000) }, () => {
  it("starts the cloud's refresh for a template change, polls it, and never replaces instances itself", async () => {
    const name = await createPool(bed, { replicas: 3 });
    await converged(bed, name, 3);
    const group = groupName(name);
    const mark = bed.cloud.lastCallSeq();
    const before = bed.cloud.inspect.group(group)?.template.version;
    await bed.client.mergePatch(
      Pools,
      { namespace: ns, name },
      { spec: { instanceType: "large" } },
    );
    await eventually(() =>
      expect(refreshCalls(group, mark, "startInstanceRefresh")).toHaveLength(1),
    );
    await eventually(async () => {
      const latest = bed.cloud.inspect.group(group)?.template.version;
      expect(latest).not.toBe(before);
      const live = bed.cloud.inspect
        .instances({ group })
        .filter((i) => i.state !== "terminating" && i.state !== "terminated");
      expect(live.every((i) => i.templateVersion === latest && i.state === "running")).toBe(true);
      expect(condition(await getPool(bed, name), "Ready")?.status).toBe("True");
    }, 30_000);
    await converged(bed, name, 3);
    expect(bed.cloud.calls({ afterSeq: mark, operation: "terminateInstanceInGroup" })).toEqual([]);
    expect(refreshCalls(group, mark, "startInstanceRefresh")).toHaveLength(1);
  });

  it("cancels a refresh that went stale (the template changed again) and starts a new one", async () => {
    const name = await createPool(bed, { replicas: 3 });
    await converged(bed, name, 3);
    const group = groupName(name);
    const mark = bed.cloud.lastCallSeq();
    await bed.client.mergePatch(
      Pools,
      { namespace: ns, name },
      { spec: { instanceType: "large" } },
    );
    await eventually(
      () => expect(refreshCalls(group, mark, "startInstanceRefresh")).toHaveLength(1),
      10_000,
    );
    await bed.client.mergePatch(
      Pools,
      { namespace: ns, name },
      { spec: { instanceType: "xlarge" } },
    );
    await eventually(() =>
      expect(refreshCalls(group, mark, "cancelInstanceRefresh")).toHaveLength(1),
    );
    await eventually(() =>
      expect(refreshCalls(group, mark, "startInstanceRefresh")).toHaveLength(2),
    );
    await eventually(async () => {
      const template = bed.cloud.inspect.templates().find((t) => t.name === group);
      const latest = template?.latestVersion;
      const live = bed.cloud.inspect
        .instances({ group })
        .filter((i) => i.state !== "terminating" && i.state !== "terminated");
      expect(live).toHaveLength(3);
      expect(live.every((i) => i.templateVersion === latest && i.state === "running")).toBe(true);
      expect(condition(await getPool(bed, name), "Ready")?.status).toBe("True");
    }, 30_000);
    await converged(bed, name, 3);
  });

  it("reports a failed refresh and restarts it only after the resync period, not on every poll", async () => {
    const name = await createPool(bed, { replicas: 2 });
    await converged(bed, name, 2);
    const group = groupName(name);
    const mark = bed.cloud.lastCallSeq();
    const shortage = bed.cloud.faults.limitCapacity({ launches: 0 });
    try {
      await bed.client.mergePatch(
        Pools,
        { namespace: ns, name },
        { spec: { instanceType: "large" } },
      );
      await eventually(async () => {
        const ready = condition(await getPool(bed, name), "Ready");
        expect(ready).toMatchObject({ status: "False", reason: "RolloutFailed" });
      }, 20_000);
      const window = bed.cloud.lastCallSeq();
      await sleep(1500);
      // Polls every 40 ms, resync 400 ms: a restart per resync at most.
      expect(refreshCalls(group, window, "startInstanceRefresh").length).toBeLessThanOrEqual(5);
    } finally {
      shortage.remove();
    }
    await eventually(async () => {
      expect(condition(await getPool(bed, name), "Ready")?.status).toBe("True");
    }, 30_000);
    await converged(bed, name, 2);
    expect(refreshCalls(group, mark, "startInstanceRefresh").length).toBeGreaterThan(1);
  });
});
