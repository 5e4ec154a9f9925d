import { ManualClock } from "@capi-ts/sdk/runtime";
import { describe, expect, it } from "vitest";
import { RealClock } from "./clock.js";
import { cloudProviderId, type FakeCloudOptions, FakeScalingCloud } from "./cloud.js";
import { CloudError, isCloudError } from "./errors.js";
import type { CreateGroupInput } from "./schemas.js";

const OWNER = { "capi-ts.io/pool": "default/pool", "capi-ts.io/cluster": "c1" };
const LIVE_STATES = ["pending", "running"] as const;

async function setup(options: FakeCloudOptions = {}, group: Partial<CreateGroupInput> = {}) {
  const clock = new ManualClock();
  const cloud = new FakeScalingCloud({ clock, ...options });
  const client = cloud.client;
  const lt = await client.createLaunchTemplate({
    name: "pool",
    data: { image: "img-1", instanceType: "small", userData: "#cloud-config\ntoken: t1\n" },
    tags: OWNER,
  });
  await client.createGroup({
    name: "pool",
    minSize: 0,
    maxSize: 10,
    desiredCapacity: 3,
    template: { id: lt.id, version: "$Latest" },
    zones: ["zone-a", "zone-b", "zone-c"],
    tags: OWNER,
    ...group,
  });
  return { clock, cloud, client, lt };
}

function live(cloud: FakeScalingCloud) {
  return cloud.inspect.instances({ group: "pool", states: [...LIVE_STATES] });
}

function running(cloud: FakeScalingCloud) {
  return cloud.inspect.instances({ group: "pool", states: ["running"] });
}

describe("async convergence", () => {
  it("goes creating → updating (pending instances) → active (running)", async () => {
    const { clock, client, cloud } = await setup();
    let group = await client.describeGroup("pool");
    expect(group?.status).toBe("creating");
    expect(group?.desiredCapacity).toBe(3);
    expect(group?.instances).toEqual([]);

    clock.advance(cloud.timing.groupCreateMs);
    group = await client.describeGroup("pool");
    expect(group?.status).toBe("updating");
    expect(group?.instances.map((i) => i.state)).toEqual(["pending", "pending", "pending"]);

    clock.advance(cloud.timing.bootMs);
    group = await client.describeGroup("pool");
    expect(group?.status).toBe("active");
    expect(group?.instances.every((i) => i.state === "running")).toBe(true);
  });

  it("acts on a desired-capacity change only after the activity delay", async () => {
    const { clock, client, cloud } = await setup();
    clock.runUntilIdle();
    await client.setDesiredCapacity("pool", 5);
    expect(live(cloud)).toHaveLength(3);
    expect((await client.describeGroup("pool"))?.status).toBe("updating");
    clock.advance(cloud.timing.activityDelayMs);
    expect(live(cloud)).toHaveLength(5);
    clock.runUntilIdle();
    expect(running(cloud)).toHaveLength(5);
    expect((await client.describeGroup("pool"))?.status).toBe("active");
  });

  it("spreads launches over the group's zones", async () => {
    const { clock, cloud } = await setup({}, { desiredCapacity: 6 });
    clock.runUntilIdle();
    const perZone = new Map<string, number>();
    for (const i of running(cloud)) perZone.set(i.zone, (perZone.get(i.zone) ?? 0) + 1);
    expect(Object.fromEntries(perZone)).toEqual({ "zone-a": 2, "zone-b": 2, "zone-c": 2 });
  });
});

describe("unstable list order and eventual consistency", () => {
  it("returns instances in a different order from one describe to the next", async () => {
    const { clock, client } = await setup({}, { desiredCapacity: 8 });
    clock.runUntilIdle();
    const orders = new Set<string>();
    for (let n = 0; n < 5; n++) {
      const group = await client.describeGroup("pool");
      orders.add((group?.instances ?? []).map((i) => i.id).join(","));
    }
    expect(orders.size).toBeGreaterThan(1);
  });

  it("keeps a stable order when shuffling is turned off", async () => {
    const { clock, client } = await setup({ shuffleLists: false }, { desiredCapacity: 8 });
    clock.runUntilIdle();
    const first = (await client.describeGroup("pool"))?.instances.map((i) => i.id);
    const second = (await client.describeGroup("pool"))?.instances.map((i) => i.id);
    expect(second).toEqual(first);
  });

  it("hides new instances from describe calls for listLagMs", async () => {
    const { clock, client, cloud } = await setup({ timing: { listLagMs: 4000 } });
    clock.advance(cloud.timing.groupCreateMs);
    expect(live(cloud)).toHaveLength(3);
    expect((await client.describeGroup("pool"))?.instances).toEqual([]);
    const ids = live(cloud).map((i) => i.id);
    expect(await client.describeInstances(ids)).toEqual([]);
    clock.advance(4000);
    expect((await client.describeGroup("pool"))?.instances).toHaveLength(3);
    expect(await client.describeInstances(ids)).toHaveLength(3);
  });
});

describe("terminated instances linger", () => {
  it("lists a terminated instance for lingerMs, then forgets it", async () => {
    const { clock, client, cloud } = await setup();
    clock.runUntilIdle();
    await client.setDesiredCapacity("pool", 2);
    clock.advance(cloud.timing.activityDelayMs + cloud.timing.stopMs);
    const group = await client.describeGroup("pool");
    const terminated = group?.instances.filter((i) => i.state === "terminated") ?? [];
    expect(terminated).toHaveLength(1);
    const [gone] = terminated;
    expect(await client.describeInstances([gone?.id ?? ""])).toMatchObject([
      { state: "terminated" },
    ]);

    clock.advance(cloud.timing.lingerMs);
    expect((await client.describeGroup("pool"))?.instances.map((i) => i.state)).toEqual([
      "running",
      "running",
    ]);
    expect(await client.describeInstances([gone?.id ?? ""])).toEqual([]);
  });
});

describe("min/max validation", () => {
  it("rejects a desired capacity outside [min, max] with a 400 that names the bounds", async () => {
    const { client, lt } = await setup();
    const create = client.createGroup({
      name: "other",
      minSize: 1,
      maxSize: 3,
      desiredCapacity: 5,
      template: { id: lt.id, version: 1 },
      zones: ["zone-a"],
    });
    await expect(create).rejects.toMatchObject({ code: "ValidationError", status: 400 });
    await expect(create).rejects.toThrow(/desired capacity 5 is outside \[minSize 1, maxSize 3\]/);
  });

  it("defaults an omitted desired capacity to minSize", async () => {
    const { client, lt } = await setup();
    const group = await client.createGroup({
      name: "other",
      minSize: 2,
      maxSize: 4,
      template: { id: lt.id, version: 1 },
      zones: ["zone-a"],
    });
    expect(group.desiredCapacity).toBe(2);
  });

  it("validates updates against the merged bounds and rejects min > max", async () => {
    const { client } = await setup();
    await expect(client.updateGroup("pool", { maxSize: 2 })).rejects.toThrow(
      /desired capacity 3 is outside \[minSize 0, maxSize 2\]/,
    );
    await expect(
      client.updateGroup("pool", { minSize: 5, maxSize: 4, desiredCapacity: 4 }),
    ).rejects.toThrow(/minSize 5 is greater than maxSize 4/);
    await expect(client.setDesiredCapacity("pool", 11)).rejects.toMatchObject({
      code: "ValidationError",
    });
    const ok = await client.updateGroup("pool", { maxSize: 2, desiredCapacity: 2 });
    expect(ok).toMatchObject({ maxSize: 2, desiredCapacity: 2 });
  });

  it("rejects unknown zones and unknown template versions", async () => {
    const { client, lt } = await setup();
    await expect(client.updateGroup("pool", { zones: ["zone-x"] })).rejects.toThrow(
      /unknown zone "zone-x"/,
    );
    await expect(
      client.updateGroup("pool", { template: { id: lt.id, version: 9 } }),
    ).rejects.toThrow(/has no version 9/);
  });
});

describe("self-healing replacement", () => {
  it("replaces an unhealthy instance with a new ID after the grace period, desired unchanged", async () => {
    const { clock, client, cloud } = await setup();
    clock.runUntilIdle();
    const [sick] = running(cloud);
    cloud.actors.markUnhealthy(sick?.id ?? "");
    clock.advance(cloud.timing.healthCheckGraceMs - 1);
    expect(cloud.inspect.instance(sick?.id ?? "")?.state).toBe("running");
    clock.runUntilIdle();
    expect(cloud.inspect.instance(sick?.id ?? "")).toBeUndefined();
    const ids = running(cloud).map((i) => i.id);
    expect(ids).toHaveLength(3);
    expect(ids).not.toContain(sick?.id);
    expect((await client.describeGroup("pool"))?.desiredCapacity).toBe(3);
  });

  it("replaces a spot-interrupted instance", async () => {
    const { clock, cloud } = await setup();
    clock.runUntilIdle();
    const before = running(cloud).map((i) => i.id);
    cloud.actors.interruptSpot(before[0] ?? "");
    expect(cloud.inspect.instance(before[0] ?? "")?.state).toBe("terminating");
    clock.runUntilIdle();
    const after = running(cloud).map((i) => i.id);
    expect(after).toHaveLength(3);
    expect(after.filter((id) => !before.includes(id))).toHaveLength(1);
    const activity = cloud.inspect
      .group("pool")
      ?.activities.find((a) => a.message.includes("spot interruption"));
    expect(activity?.instanceId).toBe(before[0]);
  });

  it("replaces an instance a user stopped (stopping → stopped → replaced)", async () => {
    const { clock, cloud } = await setup({ timing: { healthCheckGraceMs: 10_000 } });
    clock.runUntilIdle();
    const [victim] = running(cloud);
    cloud.actors.stopInstance(victim?.id ?? "");
    expect(cloud.inspect.instance(victim?.id ?? "")?.state).toBe("stopping");
    clock.advance(cloud.timing.stopMs);
    expect(cloud.inspect.instance(victim?.id ?? "")?.state).toBe("stopped");
    clock.runUntilIdle();
    expect(running(cloud)).toHaveLength(3);
    expect(running(cloud).map((i) => i.id)).not.toContain(victim?.id);
  });
});

describe("terminateInstanceInGroup", () => {
  it("replaces the instance when desired capacity is not decremented", async () => {
    const { clock, client, cloud } = await setup();
    clock.runUntilIdle();
    const [victim] = running(cloud);
    await client.terminateInstanceInGroup(victim?.id ?? "", { decrementDesiredCapacity: false });
    clock.runUntilIdle();
    expect(running(cloud)).toHaveLength(3);
    expect(running(cloud).map((i) => i.id)).not.toContain(victim?.id);
  });

  it("shrinks the group when it is, and never decrements twice for the same instance", async () => {
    const { clock, client, cloud } = await setup();
    clock.runUntilIdle();
    const [victim] = running(cloud);
    await client.terminateInstanceInGroup(victim?.id ?? "", { decrementDesiredCapacity: true });
    await client.terminateInstanceInGroup(victim?.id ?? "", { decrementDesiredCapacity: true });
    expect((await client.describeGroup("pool"))?.desiredCapacity).toBe(2);
    clock.runUntilIdle();
    expect(running(cloud)).toHaveLength(2);
  });

  it("refuses to go below minSize and reports unknown instances as NotFound", async () => {
    const { clock, client, cloud } = await setup({}, { minSize: 3 });
    clock.runUntilIdle();
    const [victim] = running(cloud);
    await expect(
      client.terminateInstanceInGroup(victim?.id ?? "", { decrementDesiredCapacity: true }),
    ).rejects.toThrow(/below minSize 3/);
    await expect(
      client.terminateInstanceInGroup("i-000000000000", { decrementDesiredCapacity: false }),
    ).rejects.toMatchObject({ code: "NotFound", status: 404 });
  });
});

describe("scale-in victim choice", () => {
  it("Default: takes from the fullest zone first, then the oldest template version", async () => {
    const { clock, client, cloud, lt } = await setup({}, { desiredCapacity: 3 });
    clock.runUntilIdle();
    await client.createLaunchTemplateVersion(lt.id, {
      image: "img-2",
      instanceType: "small",
      userData: "v2",
    });
    await client.setDesiredCapacity("pool", 4); // the 4th instance (v2) lands in zone-a
    clock.runUntilIdle();
    const zoneA = running(cloud).filter((i) => i.zone === "zone-a");
    expect(zoneA.map((i) => i.templateVersion).sort()).toEqual([1, 2]);
    await client.setDesiredCapacity("pool", 3);
    clock.runUntilIdle();
    const left = running(cloud);
    expect(left.map((i) => i.zone).sort()).toEqual(["zone-a", "zone-b", "zone-c"]);
    expect(left.find((i) => i.zone === "zone-a")?.templateVersion).toBe(2);
  });

  it("OldestInstance and NewestInstance pick by launch time; protected instances are skipped", async () => {
    for (const policy of ["OldestInstance", "NewestInstance"] as const) {
      const { clock, client, cloud } = await setup(
        {},
        { desiredCapacity: 1, terminationPolicy: policy },
      );
      clock.runUntilIdle();
      await client.setDesiredCapacity("pool", 2);
      clock.runUntilIdle();
      await client.setDesiredCapacity("pool", 3);
      clock.runUntilIdle();
      const byAge = running(cloud).sort((a, b) => a.launchedAt - b.launchedAt);
      await client.setDesiredCapacity("pool", 2);
      clock.runUntilIdle();
      const expectedVictim = policy === "OldestInstance" ? byAge[0] : byAge.at(-1);
      expect(running(cloud).map((i) => i.id)).not.toContain(expectedVictim?.id);
    }
    const { clock, client, cloud } = await setup({}, { terminationPolicy: "OldestInstance" });
    clock.runUntilIdle();
    const ids = running(cloud).map((i) => i.id);
    await client.setInstanceProtection("pool", ids.slice(0, 2), true);
    await client.setDesiredCapacity("pool", 1);
    clock.runUntilIdle();
    expect(
      running(cloud)
        .map((i) => i.id)
        .sort(),
    ).toEqual(ids.slice(0, 2).sort());
    await expect(client.setInstanceProtection("pool", ["i-nope"], true)).rejects.toThrow(
      /not a member of group pool/,
    );
  });
});

describe("out-of-band actors", () => {
  it("an autoscaler changes desired capacity without an API call the provider made", async () => {
    const { clock, client, cloud } = await setup();
    clock.runUntilIdle();
    const mark = cloud.lastCallSeq();
    cloud.actors.setDesiredCapacity("pool", 6);
    clock.runUntilIdle();
    expect(cloud.calls({ afterSeq: mark })).toEqual([]);
    const group = await client.describeGroup("pool");
    expect(group?.desiredCapacity).toBe(6);
    expect(group?.activities.some((a) => a.message === "desired capacity 3 → 6 (autoscaler)")).toBe(
      true,
    );
    expect(() => cloud.actors.setDesiredCapacity("pool", 99)).toThrow(CloudError);
  });

  it("a user terminating an instance directly gets it replaced", async () => {
    const { clock, cloud } = await setup();
    clock.runUntilIdle();
    const [victim] = running(cloud);
    cloud.actors.terminateInstance(victim?.id ?? "");
    clock.runUntilIdle();
    expect(running(cloud)).toHaveLength(3);
    expect(running(cloud).map((i) => i.id)).not.toContain(victim?.id);
  });

  it("a user deleting the whole group makes it disappear", async () => {
    const { clock, client, cloud } = await setup();
    clock.runUntilIdle();
    cloud.actors.deleteGroup("pool");
    expect((await client.describeGroup("pool"))?.status).toBe("deleting");
    clock.runUntilIdle();
    expect(await client.describeGroup("pool")).toBeUndefined();
  });
});

describe("bootstrap realism", () => {
  it("joins only instances whose token is valid at boot, with the CCM's providerID", async () => {
    const valid = new Set(["t1"]);
    const joined: string[] = [];
    const left: string[] = [];
    const { clock, client, cloud, lt } = await setup({
      kubelet: {
        canJoin: (boot) => valid.has(/token: (\S+)/.exec(boot.userData)?.[1] ?? ""),
        onJoin: async (boot) => {
          await Promise.resolve();
          joined.push(boot.providerID);
        },
        onLeave: (boot) => {
          left.push(boot.providerID);
        },
      },
    });
    clock.advance(cloud.timing.groupCreateMs + cloud.timing.bootMs);
    expect(joined).toEqual([]); // booted, still joining
    clock.advance(cloud.timing.joinMs);
    await cloud.flush();
    const first = running(cloud);
    expect(joined.sort()).toEqual(first.map((i) => cloudProviderId(i.zone, i.id)).sort());
    expect(first.every((i) => i.kubelet === "joined")).toBe(true);

    // The token rotates: t1 is no longer valid, the template still carries it.
    valid.clear();
    valid.add("t2");
    await client.setDesiredCapacity("pool", 4);
    clock.runUntilIdle();
    await cloud.flush();
    const stale = running(cloud).find((i) => !first.some((f) => f.id === i.id));
    expect(stale?.kubelet).toBe("rejected");
    expect(joined).toHaveLength(3);

    // A new version with the current token: new instances join again.
    await client.createLaunchTemplateVersion(lt.id, {
      image: "img-1",
      instanceType: "small",
      userData: "#cloud-config\ntoken: t2\n",
    });
    await client.terminateInstanceInGroup(stale?.id ?? "", { decrementDesiredCapacity: false });
    clock.runUntilIdle();
    await cloud.flush();
    expect(joined).toHaveLength(4);
    expect(left).toEqual([]); // the stale instance had never joined

    cloud.actors.terminateInstance(first[0]?.id ?? "");
    await cloud.flush();
    expect(left).toEqual([cloudProviderId(first[0]?.zone ?? "", first[0]?.id ?? "")]);
  });

  it("records errors thrown by hooks instead of crashing the simulation", async () => {
    const { clock, cloud } = await setup({
      kubelet: {
        onJoin: () => {
          throw new Error("api server down");
        },
      },
    });
    // Each kubelet keeps retrying its registration (the kubelet never gives up on it, so the clock is
    // advanced: it never goes idle); the simulation carries on.
    for (let round = 0; round < 10; round++) {
      clock.advance(cloud.timing.registerRetryMaxMs);
      await cloud.flush();
    }
    expect(cloud.hookErrors.length).toBeGreaterThan(3 * cloud.timing.joinAttempts);
    const before = cloud.hookErrors.length;
    clock.advance(cloud.timing.registerRetryMaxMs);
    await cloud.flush();
    expect(cloud.hookErrors).toHaveLength(before + 3);
    expect(running(cloud)).toHaveLength(3);
  });

  it("retries a canJoin that throws or rejects, gives up after joinAttempts, and reports onTerminated", async () => {
    // Instance order: the first never gets an answer (issuer unreachable), the second gets one timeout
    // and then a yes, the third a yes at once.
    const order: string[] = [];
    const timedOut = new Set<string>();
    const terminated: string[] = [];
    const { clock, cloud } = await setup({
      kubelet: {
        canJoin: (boot) => {
          if (!order.includes(boot.instanceId)) order.push(boot.instanceId);
          const index = order.indexOf(boot.instanceId);
          if (index === 0) throw new Error("issuer unreachable");
          if (index === 1 && !timedOut.has(boot.instanceId)) {
            timedOut.add(boot.instanceId);
            return Promise.reject(new Error("timeout"));
          }
          return Promise.resolve(true);
        },
        onTerminated: (boot) => void terminated.push(boot.instanceId),
      },
    });
    for (let round = 0; round <= cloud.timing.joinAttempts; round++) {
      clock.runUntilIdle();
      await cloud.flush();
    }
    expect(
      running(cloud)
        .map((i) => i.kubelet)
        .sort(),
    ).toEqual(["joined", "joined", "rejected"]);
    expect(cloud.hookErrors.map((e) => (e as Error).message).sort()).toEqual([
      ...Array<string>(cloud.timing.joinAttempts).fill("issuer unreachable"),
      "timeout",
    ]);
    const joined = running(cloud).filter((i) => i.kubelet === "joined");
    const rejected = running(cloud).filter((i) => i.kubelet === "rejected");
    cloud.actors.terminateInstance(joined[0]?.id ?? "");
    cloud.actors.terminateInstance(rejected[0]?.id ?? "");
    clock.advance(cloud.timing.stopMs);
    await cloud.flush();
    expect(terminated).toEqual([joined[0]?.id]); // only instances that had joined have a Node to delete
  });

  it("can spell providerIDs with a CCM quirk", async () => {
    const ids: string[] = [];
    const { clock, cloud } = await setup({
      providerIdStyle: "uppercase-zone",
      kubelet: { onJoin: (boot) => void ids.push(boot.providerID) },
    });
    clock.runUntilIdle();
    expect(ids.every((id) => /^fake:\/\/\/ZONE-[ABC]\/i-[0-9a-f]{12}$/.test(id))).toBe(true);
    expect(cloud.inspect.instances()[0]?.providerID).toMatch(/^fake:\/\/\/ZONE-/);
  });
});

describe("launch templates: write-only userData, immutable versions", () => {
  it("never returns userData and keeps each version's contents", async () => {
    const { clock, client, cloud, lt } = await setup();
    clock.runUntilIdle();
    const v2 = await client.createLaunchTemplateVersion(lt.id, {
      image: "img-2",
      instanceType: "small",
      userData: "secret-2",
      tags: { hash: "abc" },
    });
    expect(v2).toEqual({
      version: 2,
      createdAt: clock.now(),
      image: "img-2",
      instanceType: "small",
      tags: { hash: "abc" },
    });
    const described = await client.describeLaunchTemplate("pool");
    expect(JSON.stringify(described)).not.toContain("secret");
    expect(JSON.stringify(described)).not.toContain("userData");
    expect(described?.versions.map((v) => v.version)).toEqual([1, 2]);
    // Instances launched from v1 keep v1's userData; new ones ($Latest) get v2.
    expect(
      running(cloud).every((i) => i.templateVersion === 1 && i.userData.includes("token: t1")),
    ).toBe(true);
    await client.setDesiredCapacity("pool", 4);
    clock.runUntilIdle();
    expect(
      running(cloud)
        .filter((i) => i.templateVersion === 2)
        .map((i) => i.userData),
    ).toEqual(["secret-2"]);
    expect(cloud.inspect.templates()[0]?.userData).toEqual({
      1: "#cloud-config\ntoken: t1\n",
      2: "secret-2",
    });
  });

  it("launches from a pinned version until the group is pointed at another", async () => {
    const { clock, client, cloud, lt } = await setup({}, { template: { id: "pool", version: 1 } });
    await client.createLaunchTemplateVersion(lt.id, {
      image: "img-2",
      instanceType: "small",
      userData: "v2",
    });
    clock.runUntilIdle();
    expect(running(cloud).map((i) => i.templateVersion)).toEqual([1, 1, 1]);
    await client.updateGroup("pool", { template: { id: lt.id, version: 2 } });
    cloud.actors.terminateInstance(running(cloud)[0]?.id ?? "");
    clock.runUntilIdle();
    expect(
      running(cloud)
        .map((i) => i.templateVersion)
        .sort(),
    ).toEqual([1, 1, 2]);
  });

  it("caps the number of versions and the userData size", async () => {
    const { client, lt } = await setup({ templateVersionLimit: 2, userDataLimitBytes: 30 });
    await expect(
      client.createLaunchTemplateVersion(lt.id, {
        image: "i",
        instanceType: "s",
        userData: "x".repeat(31),
      }),
    ).rejects.toMatchObject({ code: "UserDataTooLarge" });
    await client.createLaunchTemplateVersion(lt.id, {
      image: "i",
      instanceType: "s",
      userData: "ok",
    });
    await expect(
      client.createLaunchTemplateVersion(lt.id, { image: "i", instanceType: "s", userData: "ok" }),
    ).rejects.toThrow(/VersionLimitExceeded: .*has 2 versions \(limit 2\); delete unused versions/);
  });

  it("refuses to delete versions in use or the latest, ignores unknown ones", async () => {
    const { clock, client, cloud, lt } = await setup({}, { template: { id: "pool", version: 1 } });
    clock.runUntilIdle();
    await client.createLaunchTemplateVersion(lt.id, {
      image: "i",
      instanceType: "s",
      userData: "2",
    });
    await client.createLaunchTemplateVersion(lt.id, {
      image: "i",
      instanceType: "s",
      userData: "3",
    });
    await expect(client.deleteLaunchTemplateVersions(lt.id, [1])).rejects.toThrow(
      /ResourceInUse: version 1 of "pool" is used by group pool, instance i-/,
    );
    await expect(client.deleteLaunchTemplateVersions(lt.id, [3])).rejects.toThrow(
      /is the latest version/,
    );
    await client.deleteLaunchTemplateVersions(lt.id, [2, 42]);
    expect((await client.describeLaunchTemplate(lt.id))?.versions.map((v) => v.version)).toEqual([
      1, 3,
    ]);
    expect(
      cloud.calls({ operation: "deleteLaunchTemplateVersions" }).map((c) => c.outcome),
    ).toEqual(["ResourceInUse", "ValidationError", "ok"]);
  });
});

describe("instance refresh (one at a time)", () => {
  it("replaces outdated instances while keeping minHealthyPercentage healthy", async () => {
    const { clock, client, cloud, lt } = await setup({}, { desiredCapacity: 4 });
    clock.runUntilIdle();
    await client.createLaunchTemplateVersion(lt.id, {
      image: "img-2",
      instanceType: "small",
      userData: "v2",
    });
    const refresh = await client.startInstanceRefresh("pool", { minHealthyPercentage: 50 });
    expect(refresh).toMatchObject({ status: "Pending", startedWithVersion: 2, percentComplete: 0 });
    await expect(client.startInstanceRefresh("pool")).rejects.toMatchObject({
      code: "InstanceRefreshInProgress",
    });
    let minHealthy = Number.POSITIVE_INFINITY;
    for (
      let t = 0;
      t < 300 && (await client.describeInstanceRefreshes("pool"))[0]?.status !== "Successful";
      t++
    ) {
      clock.advance(500);
      minHealthy = Math.min(minHealthy, running(cloud).length);
    }
    expect(minHealthy).toBeGreaterThanOrEqual(2);
    expect((await client.describeInstanceRefreshes("pool"))[0]).toMatchObject({
      status: "Successful",
      percentComplete: 100,
    });
    expect(running(cloud).map((i) => i.templateVersion)).toEqual([2, 2, 2, 2]);
  });

  it("surges one at a time at 100% min healthy, never dropping below desired", async () => {
    const { clock, client, cloud, lt } = await setup();
    clock.runUntilIdle();
    await client.createLaunchTemplateVersion(lt.id, {
      image: "img-2",
      instanceType: "small",
      userData: "v2",
    });
    await client.startInstanceRefresh("pool", { minHealthyPercentage: 100 });
    let minRunning = Number.POSITIVE_INFINITY;
    let maxLive = 0;
    for (let t = 0; t < 400; t++) {
      clock.advance(250);
      minRunning = Math.min(minRunning, running(cloud).length);
      maxLive = Math.max(maxLive, live(cloud).length);
    }
    expect(minRunning).toBe(3);
    expect(maxLive).toBe(4);
    expect(running(cloud).map((i) => i.templateVersion)).toEqual([2, 2, 2]);
  });

  it("cancels asynchronously (Cancelling → Cancelled); cancelling nothing is an error", async () => {
    const { clock, client, cloud, lt } = await setup();
    clock.runUntilIdle();
    await expect(client.cancelInstanceRefresh("pool")).rejects.toMatchObject({
      code: "ActiveInstanceRefreshNotFound",
    });
    await client.createLaunchTemplateVersion(lt.id, {
      image: "img-2",
      instanceType: "small",
      userData: "v2",
    });
    await client.startInstanceRefresh("pool", { minHealthyPercentage: 100 });
    clock.advance(2000);
    expect((await client.cancelInstanceRefresh("pool")).status).toBe("Cancelling");
    await expect(client.startInstanceRefresh("pool")).rejects.toMatchObject({
      code: "InstanceRefreshInProgress",
    });
    clock.advance(cloud.timing.refreshCancelMs);
    expect((await client.describeInstanceRefreshes("pool"))[0]?.status).toBe("Cancelled");
    clock.runUntilIdle();
    expect(running(cloud)).toHaveLength(3); // the surge instance is scaled in again
    expect(running(cloud).some((i) => i.templateVersion === 1)).toBe(true);
  });
});

describe("partial capacity failures", () => {
  it("launches what it can, reports failed with an error activity, then recovers", async () => {
    const { clock, client, cloud } = await setup({}, { desiredCapacity: 1 });
    clock.runUntilIdle();
    cloud.faults.limitCapacity({ launches: 1, durationMs: 30_000 });
    await client.setDesiredCapacity("pool", 4);
    clock.advance(cloud.timing.activityDelayMs);
    let group = await client.describeGroup("pool");
    expect(group?.status).toBe("failed");
    expect(group?.statusMessage).toMatch(/InsufficientInstanceCapacity: launched 1 of 3 instances/);
    expect(group?.activities.at(-1)?.kind).toBe("error");
    expect(live(cloud)).toHaveLength(2);
    clock.runUntilIdle();
    group = await client.describeGroup("pool");
    expect(group?.status).toBe("active");
    expect(running(cloud)).toHaveLength(4);
  });

  it("limits capacity per zone; other zones still launch", async () => {
    const { clock, cloud } = await setup({}, { desiredCapacity: 0, zones: ["zone-a", "zone-b"] });
    const shortage = cloud.faults.limitCapacity({ zones: ["zone-a"], launches: 0 });
    cloud.actors.setDesiredCapacity("pool", 2);
    clock.advance(10_000);
    expect(running(cloud).map((i) => i.zone)).toEqual(["zone-b", "zone-b"]);
    shortage.remove();
    expect(() => cloud.faults.limitCapacity({ zones: ["zone-q"], launches: 1 })).toThrow(
      /unknown zone "zone-q"/,
    );
  });
});

describe("throttling and server errors", () => {
  it("injected faults fail matching calls with typed, retryable errors, then stop", async () => {
    const { client, cloud } = await setup();
    cloud.faults.inject({
      kind: "throttle",
      operations: ["describeGroup"],
      times: 2,
      retryAfterMs: 2500,
    });
    const first = await client.describeGroup("pool").catch((e: unknown) => e);
    expect(first).toBeInstanceOf(CloudError);
    expect(first).toMatchObject({
      code: "Throttling",
      status: 429,
      retryAfterMs: 2500,
      retryable: true,
    });
    await expect(client.describeGroup("pool")).rejects.toMatchObject({ code: "Throttling" });
    await expect(client.describeGroup("pool")).resolves.toBeDefined();
    await expect(client.listGroups()).resolves.toHaveLength(1); // other operations unaffected

    const handle = cloud.faults.inject({ kind: "server-error" });
    await expect(client.listGroups()).rejects.toMatchObject({
      code: "InternalError",
      status: 500,
      retryable: true,
    });
    handle.remove();
    cloud.faults.inject({ kind: "unavailable", times: 1, retryAfterMs: 100 });
    await expect(client.listGroups()).rejects.toMatchObject({
      code: "ServiceUnavailable",
      status: 503,
    });
    expect(cloud.calls({ outcome: "error" }).map((c) => c.outcome)).toEqual([
      "Throttling",
      "Throttling",
      "InternalError",
      "ServiceUnavailable",
    ]);
  });

  it("a token-bucket rate limit throttles a hot loop until cloud time passes", async () => {
    const { clock, client } = await setup({ rateLimit: { burst: 5, refillPerSecond: 2 } });
    // setup used 2 tokens
    const results = await Promise.all(
      Array.from({ length: 5 }, () =>
        client.describeGroup("pool").then(
          () => "ok",
          (e: CloudError) => e.code,
        ),
      ),
    );
    expect(results).toEqual(["ok", "ok", "ok", "Throttling", "Throttling"]);
    const error = await client.describeGroup("pool").catch((e: CloudError) => e);
    expect(isCloudError(error, "Throttling") && error.retryAfterMs).toBe(500);
    clock.advance(500);
    await expect(client.describeGroup("pool")).resolves.toBeDefined();
  });

  it("random faults are reproducible from the seed", async () => {
    const outcomes = async (seed: number) => {
      const cloud = new FakeScalingCloud({
        seed,
        randomFaults: { throttleRate: 0.3, serverErrorRate: 0.2 },
      });
      for (let n = 0; n < 40; n++) await cloud.client.listGroups().catch(() => undefined);
      return cloud.calls().map((c) => c.outcome);
    };
    const a = await outcomes(5);
    expect(await outcomes(5)).toEqual(a);
    expect(new Set(a)).toEqual(new Set(["ok", "Throttling", "InternalError"]));
    expect(await outcomes(6)).not.toEqual(a);
  });
});

describe("async deletion", () => {
  it("refuses a non-forced delete with instances, deletes asynchronously, tolerates a second delete", async () => {
    const { clock, client, cloud, lt } = await setup();
    clock.runUntilIdle();
    await expect(client.deleteGroup("pool")).rejects.toMatchObject({
      code: "ResourceInUse",
      status: 409,
    });
    await client.deleteGroup("pool", { force: true });
    await client.deleteGroup("pool", { force: true });
    expect((await client.describeGroup("pool"))?.status).toBe("deleting");
    await expect(client.setDesiredCapacity("pool", 2)).rejects.toMatchObject({
      code: "ScalingActivityInProgress",
    });
    await expect(client.updateGroup("pool", { maxSize: 3 })).rejects.toMatchObject({
      code: "ScalingActivityInProgress",
    });
    await expect(client.deleteLaunchTemplate(lt.id)).rejects.toMatchObject({
      code: "ResourceInUse",
    });
    clock.advance(cloud.timing.activityDelayMs + cloud.timing.stopMs);
    expect(cloud.inspect.instances({ group: "pool" }).every((i) => i.state === "terminated")).toBe(
      true,
    );
    expect(await client.describeGroup("pool")).toBeDefined();
    clock.advance(cloud.timing.groupDeleteMs);
    expect(await client.describeGroup("pool")).toBeUndefined();
    await expect(client.deleteGroup("pool", { force: true })).rejects.toMatchObject({
      code: "NotFound",
    });
    await client.deleteLaunchTemplate(lt.id);
    expect(await client.describeLaunchTemplate(lt.id)).toBeUndefined();
    await expect(client.deleteLaunchTemplate(lt.id)).rejects.toMatchObject({ code: "NotFound" });
  });

  it("a group scaled to zero can be deleted without force", async () => {
    const { clock, client } = await setup();
    clock.runUntilIdle();
    await client.setDesiredCapacity("pool", 0);
    clock.runUntilIdle();
    await client.deleteGroup("pool");
    clock.runUntilIdle();
    expect(await client.describeGroup("pool")).toBeUndefined();
  });
});

describe("ownership tags", () => {
  it("propagates group tags to instances and filters lists by tags", async () => {
    const { clock, client, cloud, lt } = await setup();
    await client.createLaunchTemplate({
      name: "foreign",
      data: { image: "i", instanceType: "s", userData: "" },
      tags: { "capi-ts.io/pool": "default/other" },
    });
    await client.createGroup({
      name: "foreign",
      minSize: 0,
      maxSize: 1,
      template: { id: "foreign", version: 1 },
      zones: ["zone-a"],
      tags: { "capi-ts.io/pool": "default/other" },
    });
    clock.runUntilIdle();
    const instances = await client.describeInstances(running(cloud).map((i) => i.id));
    expect(instances.every((i) => i.tags["capi-ts.io/pool"] === "default/pool")).toBe(true);
    expect(
      (await client.listGroups({ tags: { "capi-ts.io/pool": "default/pool" } })).map((g) => g.name),
    ).toEqual(["pool"]);
    expect(
      (await client.listLaunchTemplates({ tags: { "capi-ts.io/pool": "default/pool" } })).map(
        (t) => t.id,
      ),
    ).toEqual([lt.id]);
    // An empty value matches any value of the key.
    expect(await client.listGroups({ tags: { "capi-ts.io/pool": "" } })).toHaveLength(2);
    await client.updateGroup("pool", { tags: { extra: "1" } });
    expect((await client.describeGroup("pool"))?.tags).toEqual({ ...OWNER, extra: "1" });
  });
});

describe("API boundary and operation log", () => {
  it("validates requests with a 400 naming the bad field", async () => {
    const { client } = await setup();
    const bad = client.createGroup({
      name: "bad name!",
      minSize: -1,
      maxSize: 1,
      template: { id: "pool", version: 1 },
      zones: [],
    });
    await expect(bad).rejects.toMatchObject({ code: "ValidationError" });
    await expect(bad).rejects.toThrow(/name: .*; minSize: .*; zones: /);
  });

  it("returns copies: mutating a response does not change the cloud", async () => {
    const { client } = await setup();
    const group = await client.describeGroup("pool");
    if (!group) throw new Error("group missing");
    group.desiredCapacity = 9;
    group.tags.evil = "1";
    expect((await client.describeGroup("pool"))?.desiredCapacity).toBe(3);
    expect((await client.describeGroup("pool"))?.tags).toEqual(OWNER);
  });

  it("logs every client call with deep-copied arguments; actors and inspect are not logged", async () => {
    const { clock, client, cloud } = await setup();
    expect(cloud.calls().map((c) => [c.seq, c.operation, c.mutating, c.outcome])).toEqual([
      [1, "createLaunchTemplate", true, "ok"],
      [2, "createGroup", true, "ok"],
    ]);
    const input = { maxSize: 8 };
    const mark = cloud.lastCallSeq();
    await client.updateGroup("pool", input);
    input.maxSize = 1;
    await client.describeGroup("pool");
    cloud.inspect.groups();
    cloud.actors.setDesiredCapacity("pool", 4);
    clock.runUntilIdle();
    expect(cloud.calls({ afterSeq: mark })).toEqual([
      expect.objectContaining({
        operation: "updateGroup",
        args: ["pool", { maxSize: 8 }],
        mutating: true,
      }),
      expect.objectContaining({ operation: "describeGroup", args: ["pool"], mutating: false }),
    ]);
    expect(
      cloud.calls({ mutating: false, operation: ["describeGroup", "listGroups"] }),
    ).toHaveLength(1);
    cloud.clearCalls();
    expect(cloud.calls()).toEqual([]);
    expect(cloud.lastCallSeq()).toBe(mark + 2);
  });

  it("is deterministic: the same seed and script give the same IDs, order and log", async () => {
    const run = async () => {
      const { clock, client, cloud } = await setup({ seed: 99 }, { desiredCapacity: 5 });
      clock.runUntilIdle();
      cloud.actors.interruptSpot(running(cloud)[2]?.id ?? "");
      clock.runUntilIdle();
      const group = await client.describeGroup("pool");
      return {
        ids: group?.instances.map((i) => `${i.id}/${i.zone}/${i.state}`),
        calls: cloud.calls(),
      };
    };
    expect(await run()).toEqual(await run());
  });

  it("rejects unknown timing keys and bad values when constructed", () => {
    expect(() => new FakeScalingCloud({ timing: { bootMS: 1 } as never })).toThrow(
      /unknown timing "bootMS"/,
    );
    expect(() => new FakeScalingCloud({ timing: { bootMs: -1 } })).toThrow(
      /timing.bootMs must be a number ≥ 0/,
    );
    expect(() => new FakeScalingCloud({ zones: [] })).toThrow(/at least one zone/);
  });
});

describe("on a RealClock (demos)", () => {
  it("converges in scaled wall time without any manual stepping", async () => {
    const clock = new RealClock({ speed: 500 });
    const cloud = new FakeScalingCloud({ clock });
    try {
      const lt = await cloud.client.createLaunchTemplate({
        name: "rt",
        data: { image: "i", instanceType: "s", userData: "" },
      });
      await cloud.client.createGroup({
        name: "rt",
        minSize: 0,
        maxSize: 3,
        desiredCapacity: 2,
        template: { id: lt.id, version: 1 },
        zones: ["zone-a"],
      });
      // groupCreateMs + bootMs = 7 s of cloud time ≈ 14 ms of wall time; allow generous slack.
      const deadline = Date.now() + 5000;
      let status = (await cloud.client.describeGroup("rt"))?.status;
      while (status !== "active" && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 10));
        status = (await cloud.client.describeGroup("rt"))?.status;
      }
      expect(status).toBe("active");
      expect(cloud.inspect.instances({ states: ["running"] })).toHaveLength(2);
    } finally {
      clock.dispose();
    }
  });
});
