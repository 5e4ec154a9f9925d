import {
  groupIntent,
  newTemplateVersion,
  poolContext,
  templateStamp,
} from "@capi-ts/sdk/provider/testing";
import { ManualClock } from "@capi-ts/sdk/runtime";
import { type ApiServer, startApiServer } from "@capi-ts/testing";
import { CoreV1Api, type V1Node } from "@kubernetes/client-node";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { fakeCloudDriver } from "../provider/driver.js";
import { FakeScalingCloud } from "./cloud.js";
import { bootstrapTokenCheck, nodeRegistrar } from "./kubelet.js";

let api: ApiServer;
let core: CoreV1Api;

beforeAll(async () => {
  api = await startApiServer();
  core = api.kubeConfig.makeApiClient(CoreV1Api);
  // The token the nodeRegistrar tests' instances boot with.
  await core.createNamespacedSecret({
    namespace: "kube-system",
    body: { metadata: { name: "bootstrap-token-abcdef" }, stringData: { "token-id": "abcdef" } },
  });
});

afterAll(async () => {
  await api.stop();
});

beforeEach(async () => {
  for (const node of (await core.listNode()).items) {
    await core.deleteNode({ name: node.metadata?.name ?? "" });
  }
});

async function nodes(): Promise<V1Node[]> {
  return (await core.listNode()).items;
}

function ready(node: V1Node | undefined): string | undefined {
  return node?.status?.conditions?.find((c) => c.type === "Ready")?.status;
}

/** A token is valid while a `bootstrap-token-<id>` Secret exists in kube-system, like kubeadm's. */
async function tokenValid(userData: string): Promise<boolean> {
  const id = /token: ([a-z0-9]{6})\./.exec(userData)?.[1];
  if (!id) return false;
  try {
    await core.readNamespacedSecret({ namespace: "kube-system", name: `bootstrap-token-${id}` });
    return true;
  } catch {
    return false;
  }
}

async function setup(userData: string) {
  const clock = new ManualClock();
  const cloud = new FakeScalingCloud({
    clock,
    kubelet: nodeRegistrar({
      kubeConfig: api.kubeConfig,
      canJoin: (boot) => tokenValid(boot.userData),
      labels: { "example.com/pool": "a" },
    }),
  });
  const driver = fakeCloudDriver(cloud.client, { defaultZones: ["zone-a", "zone-b"] });
  const ctx = poolContext({
    pool: { name: "pool", uid: "u1", clusterName: "c1" },
    spec: { instanceType: "small", minSize: 0, maxSize: 5 },
    version: "v1.31.0",
  });
  const stamp = templateStamp();
  const { version } = await driver.createTemplateVersion(
    ctx,
    newTemplateVersion({ userData, stamp }),
  );
  await driver.createGroup(
    ctx,
    groupIntent({
      replicas: 2,
      templateVersion: version,
      settings: driver.groupSettings(ctx),
    }),
  );
  /** Let the cloud and the kubelet hooks (HTTP calls) run until both are quiet. */
  const settle = async () => {
    for (let n = 0; n < 20; n++) {
      clock.runUntilIdle();
      await cloud.flush();
      if (clock.pendingTimers === 0) return;
    }
  };
  return { clock, cloud, settle, driver, ctx };
}

describe("nodeRegistrar", () => {
  it("registers a Ready, tainted Node per joined instance with the providerID the driver reports", async () => {
    const { settle, driver, ctx } = await setup("#cloud-config\ntoken: abcdef.0123456789abcdef\n");
    await settle();
    const registered = await nodes();
    expect(registered).toHaveLength(2);
    const reported = ((await driver.getGroup(ctx))?.instances ?? []).map((i) => i.providerID);
    expect(registered.map((n) => n.spec?.providerID).sort()).toEqual([...reported].sort());
    for (const node of registered) {
      expect(ready(node)).toBe("True");
      expect(node.spec?.taints).toEqual([
        { key: "node.cluster.x-k8s.io/uninitialized", effect: "NoSchedule" },
      ]);
      expect(node.metadata?.labels).toMatchObject({ "example.com/pool": "a" });
      expect(node.metadata?.labels?.["topology.kubernetes.io/zone"]).toMatch(/^zone-[ab]$/);
      // The image the driver picked for the pool's version (fake-k8s-v1.31.0) runs that kubelet.
      expect(node.status?.nodeInfo?.kubeletVersion).toBe("v1.31.0");
    }
  });

  it("marks the Node not ready when its instance terminates and deletes it once terminated", async () => {
    const { clock, cloud, settle } = await setup("#cloud-config\ntoken: abcdef.0123456789abcdef\n");
    await settle();
    const [victim] = cloud.inspect.instances({ states: ["running"] });
    cloud.actors.terminateInstance(victim?.id ?? "");
    await cloud.flush();
    const leaving = (await nodes()).find((n) => n.metadata?.name === victim?.id);
    expect(ready(leaving)).toBe("Unknown");
    clock.advance(cloud.timing.stopMs);
    await cloud.flush();
    expect((await nodes()).map((n) => n.metadata?.name)).not.toContain(victim?.id);
    await settle();
    expect((await nodes()).filter((n) => ready(n) === "True")).toHaveLength(2); // the replacement joined
  });

  it("retries a failed Node create with backoff until the Node appears (issue 22: 2 of 1,000 pools never converged)", async () => {
    // More failures than joinAttempts (5) for each of the 2 instances: a kubelet that gave up after
    // those left its instance without a Node for good.
    api.clearRequests();
    const fault = api.faults.add({ verb: "create", resource: "nodes", status: 500, count: 12 });
    try {
      const { clock, cloud, settle } = await setup(
        "#cloud-config\ntoken: abcdef.0123456789abcdef\n",
      );
      await settle();
      expect(fault.hits).toBe(12);
      const registered = await nodes();
      expect(registered).toHaveLength(2);
      expect(registered.every((node) => ready(node) === "True")).toBe(true);
      // The retries backed off: 6 failures each spread over more cloud time than 6 fixed retries take.
      expect(clock.now()).toBeGreaterThan(6 * cloud.timing.joinRetryMs);
      const creates = api.requests((r) => r.resource === "nodes" && r.verb === "create");
      expect(creates).toHaveLength(14);
    } finally {
      fault.remove();
    }
  });

  it("stops retrying a failed Node create once the instance is gone", async () => {
    const fault = api.faults.add({ verb: "create", resource: "nodes", status: 503 });
    try {
      const { clock, cloud } = await setup("#cloud-config\ntoken: abcdef.0123456789abcdef\n");
      const run = async (rounds: number) => {
        for (let n = 0; n < rounds; n++) {
          clock.runUntilIdle();
          await cloud.flush();
        }
      };
      const createsOf = (name: string) =>
        api.requests(
          (r) =>
            r.resource === "nodes" &&
            r.verb === "create" &&
            (r.body as { metadata?: { name?: string } } | undefined)?.metadata?.name === name,
        ).length;
      await run(4);
      const [victim] = cloud.inspect.instances({ states: ["running"] });
      const id = victim?.id ?? "";
      expect(createsOf(id)).toBeGreaterThan(1);
      cloud.actors.terminateInstance(id);
      clock.advance(cloud.timing.stopMs);
      await cloud.flush();
      const whenGone = createsOf(id);
      await run(6);
      expect(createsOf(id)).toBe(whenGone);
    } finally {
      fault.remove();
    }
  });

  it("never registers a Node for an instance that booted with an invalid token", async () => {
    const { cloud, settle } = await setup("#cloud-config\ntoken: zzzzzz.0123456789abcdef\n");
    await settle();
    expect(await nodes()).toEqual([]);
    expect(cloud.inspect.instances({ states: ["running"] }).map((i) => i.kubelet)).toEqual([
      "rejected",
      "rejected",
    ]);
    expect(cloud.hookErrors).toEqual([]);
  });
});

describe("bootstrapTokenCheck", () => {
  const boot = (userData: string, at: number) => ({
    instanceId: "i-1",
    providerID: "fake:///zone-a/i-1",
    zone: "zone-a",
    groupName: "pool",
    templateVersion: 1,
    userData,
    image: "fake-k8s-v1.34.1",
    at,
  });
  const at = Date.UTC(2026, 0, 1, 12);

  it("accepts a token whose Secret matches and has not expired at boot time", async () => {
    await core.createNamespacedSecret({
      namespace: "kube-system",
      body: {
        metadata: { name: "bootstrap-token-q1w2e3" },
        type: "bootstrap.kubernetes.io/token",
        stringData: {
          "token-id": "q1w2e3",
          "token-secret": "0123456789abcdef",
          "usage-bootstrap-authentication": "true",
          expiration: "2026-01-01T13:00:00Z",
        },
      },
    });
    const check = bootstrapTokenCheck(api.kubeConfig);
    const userData = "#cloud-config\njoinConfiguration:\n  token: q1w2e3.0123456789abcdef\n";
    expect(await check(boot(userData, at))).toBe(true);
    expect(await check(boot(userData, Date.UTC(2026, 0, 1, 13, 0, 1)))).toBe(false); // expired at boot
    expect(await check(boot("token: q1w2e3.ffffffffffffffff", at))).toBe(false); // wrong secret
    expect(await check(boot("token: zzzzzz.0123456789abcdef", at))).toBe(false); // no such token
    expect(await check(boot("#cloud-config\n", at))).toBe(false); // no token at all
  });

  it("rejects a token that may not be used for authentication", async () => {
    await core.createNamespacedSecret({
      namespace: "kube-system",
      body: {
        metadata: { name: "bootstrap-token-n0auth" },
        stringData: { "token-id": "n0auth", "token-secret": "0123456789abcdef" },
      },
    });
    expect(
      await bootstrapTokenCheck(api.kubeConfig)(boot("token: n0auth.0123456789abcdef", at)),
    ).toBe(false);
  });
});
