import { type ApiServer, startApiServer } from "@capi-ts/testing";
import { CoreV1Api, type V1Node } from "@kubernetes/client-node";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { fakeCloudDriver } from "../provider/driver.js";
import { ManualClock } from "./clock.js";
import { FakeScalingCloud } from "./cloud.js";
import { nodeRegistrar } from "./kubelet.js";

let api: ApiServer;
let core: CoreV1Api;

beforeAll(async () => {
  api = await startApiServer();
  core = api.kubeConfig.makeApiClient(CoreV1Api);
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
  const ctx = {
    pool: { namespace: "default", name: "pool", uid: "u1", clusterName: "c1" },
    spec: { instanceType: "small", minSize: 0, maxSize: 5 },
    version: "v1.31.0",
    failureDomains: [],
    signal: new AbortController().signal,
  };
  const stamp = { specHash: "s", bootstrapHash: "b", bootstrapRef: "r" };
  const { version } = await driver.createTemplateVersion(ctx, {
    userData,
    format: "cloud-config",
    stamp,
  });
  await driver.createGroup(ctx, {
    replicas: 2,
    templateVersion: version,
    settings: driver.groupSettings(ctx),
  });
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
    await core.createNamespacedSecret({
      namespace: "kube-system",
      body: { metadata: { name: "bootstrap-token-abcdef" }, stringData: { "token-id": "abcdef" } },
    });
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
