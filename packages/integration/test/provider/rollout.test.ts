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
  setReplicas,
  sleep,
  startBed,
} from "./support.js";

let bed: Bed;

beforeAll(async () => {
  bed = await startBed();
}, 60_000);
afterAll(async () => {
  await bed?.stop();
});

/** Samples the group every few ms until stopped; returns the minimum running and maximum live counts. */
function sampleGroup(group: string): () => { minRunning: number; maxLive: number } {
  let minRunning = Number.POSITIVE_INFINITY;
  let maxLive = 0;
  const timer = setInterval(() => {
    const instances = bed.cloud.inspect.instances({ group });
    const running = instances.filter((i) => i.state === "running" && i.health === "healthy").length;
    const live = instances.filter(
      (i) => i.state !== "terminating" && i.state !== "terminated",
    ).length;
    minRunning = Math.min(minRunning, running);
    maxLive = Math.max(maxLive, live);
  }, 5);
  return () => {
    clearInterval(timer);
    return { minRunning, maxLive };
  };
}

function liveIds(group: string): string[] {
  return bed.cloud.inspect
    .instances({ group })
    .filter((i) => i.state !== "terminating" && i.state !== "terminated")
    .map((i) => i.id)
    .sort();
}

describe("machinePoolController: bootstrap data and rollouts", { timeout: scaled(40_000) }, () => {
  it("refreshes the template on token rotation without replacing any instance; new instances join with the new token", async () => {
    const name = await createPool(bed, { replicas: 2 });
    await converged(bed, name, 2);
    const group = groupName(name);
    const idsBefore = liveIds(group);
    const mark = bed.cloud.lastCallSeq();
    const token = await bed.core.bootstrap?.rotateToken({ namespace: ns, name });
    expect(token).toBeDefined();
    await eventually(() => {
      const template = bed.cloud.inspect.templates().find((t) => t.name === group);
      expect(template?.userData[template.latestVersion]).toContain(`token: ${token}`);
      expect(bed.cloud.inspect.group(group)?.template.version).toBe(template?.latestVersion);
    });
    await sleep(500);
    expect(bed.cloud.calls({ afterSeq: mark, operation: "terminateInstanceInGroup" })).toEqual([]);
    expect(liveIds(group)).toEqual(idsBefore);
    // The old token is revoked: a new instance only joins because the template carries the new one.
    await setReplicas(bed, name, 3);
    await converged(bed, name, 3);
    const added = bed.cloud.inspect
      .instances({ group })
      .find((i) => !idsBefore.includes(i.id) && i.state === "running");
    expect(added?.userData).toContain(`token: ${token}`);
    await eventually(() => {
      expect(bed.cloud.inspect.instance(added?.id ?? "")?.kubelet).toBe("joined");
    });
    expect(idsBefore.every((id) => liveIds(group).includes(id))).toBe(true);
  });

  it("rolls a template change replacing instances one at a time within maxUnavailable (no surge)", async () => {
    const name = await createPool(bed, {
      replicas: 3,
      spec: { strategy: { maxSurge: 0, maxUnavailable: 1 } },
    });
    await converged(bed, name, 3);
    const group = groupName(name);
    const idsBefore = liveIds(group);
    const versionBefore = bed.cloud.inspect.group(group)?.template.version;
    const stop = sampleGroup(group);
    await bed.client.mergePatch(
      Pools,
      { namespace: ns, name },
      { spec: { instanceType: "large" } },
    );
    await eventually(async () => {
      const latest = bed.cloud.inspect.templates().find((t) => t.name === group)?.latestVersion;
      expect(latest).not.toBe(versionBefore);
      const instances = bed.cloud.inspect
        .instances({ group })
        .filter((i) => i.state !== "terminating" && i.state !== "terminated");
      expect(instances).toHaveLength(3);
      expect(instances.every((i) => i.templateVersion === latest && i.state === "running")).toBe(
        true,
      );
      expect(condition(await getPool(bed, name), "Ready")?.status).toBe("True");
    }, 30_000);
    const { minRunning, maxLive } = stop();
    expect(minRunning).toBeGreaterThanOrEqual(2);
    expect(maxLive).toBeLessThanOrEqual(3);
    expect(liveIds(group).some((id) => idsBefore.includes(id))).toBe(false);
    await converged(bed, name, 3);
  });

  it("rolls with surge by default: never below the desired count, at most one extra", async () => {
    const name = await createPool(bed, { replicas: 2 });
    await converged(bed, name, 2);
    const group = groupName(name);
    const idsBefore = liveIds(group);
    const stop = sampleGroup(group);
    await bed.client.mergePatch(
      Pools,
      { namespace: ns, name },
      { spec: { image: "custom-image" } },
    );
    await eventually(async () => {
      expect(liveIds(group).some((id) => idsBefore.includes(id))).toBe(false);
      expect(condition(await getPool(bed, name), "Ready")?.status).toBe("True");
    }, 30_000);
    const { minRunning, maxLive } = stop();
    expect(minRunning).toBeGreaterThanOrEqual(2);
    expect(maxLive).toBeLessThanOrEqual(3);
    await converged(bed, name, 2);
    // The surge was shrunk away by deleting old instances, not by the cloud's own choice.
    expect(bed.cloud.inspect.group(group)?.desiredCapacity).toBe(2);
  });

  it("finishes a rollout after a controller restart without dropping below the desired count (stateless surge)", async () => {
    const name = await createPool(bed, { replicas: 3 });
    await converged(bed, name, 3);
    const group = groupName(name);
    const idsBefore = liveIds(group);
    const stop = sampleGroup(group);
    await bed.client.mergePatch(Pools, { namespace: ns, name }, { spec: { image: "image-2" } });
    // Restart while the group is surged (4 desired, old instances still there).
    await eventually(() => expect(bed.cloud.inspect.group(group)?.desiredCapacity).toBe(4), 10_000);
    await bed.restartController();
    await eventually(async () => {
      expect(liveIds(group).some((id) => idsBefore.includes(id))).toBe(false);
      expect(condition(await getPool(bed, name), "Ready")?.status).toBe("True");
    }, 30_000);
    const { minRunning, maxLive } = stop();
    expect(minRunning).toBeGreaterThanOrEqual(3);
    expect(maxLive).toBeLessThanOrEqual(4);
    await converged(bed, name, 3);
  });

  it("hands replicas to an external autoscaler and back: the cloud's size goes to MachinePool.spec.replicas", async () => {
    const name = await createPool(bed, { replicas: 2 });
    await converged(bed, name, 2);
    const group = groupName(name);
    await bed.client.mergePatch(
      MachinePools,
      { namespace: ns, name },
      { metadata: { annotations: { "cluster.x-k8s.io/replicas-managed-by": "autoscaler" } } },
    );
    await sleep(300);
    const mark = bed.cloud.lastCallSeq();
    bed.cloud.actors.setDesiredCapacity(group, 4);
    await eventually(async () => {
      expect((await getMachinePool(bed, name)).spec?.replicas).toBe(4);
    });
    await converged(bed, name, 4);
    bed.cloud.actors.setDesiredCapacity(group, 1);
    await eventually(async () => {
      expect((await getMachinePool(bed, name)).spec?.replicas).toBe(1);
    });
    await converged(bed, name, 1);
    const sizeWrites = bed.cloud
      .calls({ afterSeq: mark, operation: ["updateGroup", "setDesiredCapacity"] })
      .filter(
        (c) =>
          c.operation === "setDesiredCapacity" ||
          (c.args[1] as { desiredCapacity?: number }).desiredCapacity !== undefined,
      );
    expect(sizeWrites).toEqual([]);
    expect(bed.cloud.calls({ afterSeq: mark, operation: "terminateInstanceInGroup" })).toEqual([]);
    // Back to the MachinePool: its replicas rule again.
    await bed.client.mergePatch(
      MachinePools,
      { namespace: ns, name },
      { metadata: { annotations: { "cluster.x-k8s.io/replicas-managed-by": null } } },
    );
    await setReplicas(bed, name, 3);
    await converged(bed, name, 3);
    expect(bed.cloud.inspect.group(group)?.desiredCapacity).toBe(3);
  });
});
