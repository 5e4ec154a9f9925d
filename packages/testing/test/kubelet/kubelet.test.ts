// The kubelet stand-in registers Nodes for providerIDs over HTTP, after its join delay.
import { KubeClient, NodeResource } from "@capi-ts/sdk/runtime";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type ApiServer,
  type FollowedInstance,
  kubeletFollowing,
  kubeletStandIn,
  startApiServer,
} from "../../src/index.js";

let api: ApiServer;
let client: KubeClient;
beforeAll(async () => {
  api = await startApiServer();
  client = new KubeClient(api.kubeConfig);
});
afterAll(async () => {
  await api?.stop();
});

describe("kubeletStandIn", () => {
  it("registers a Ready, tainted Node with the providerID after the join delay, un-readies and removes it", async () => {
    const kubelet = kubeletStandIn({ kubeConfig: api.kubeConfig, joinDelayMs: 200 });
    const started = Date.now();
    const joined = kubelet.join("fake:///zone-a/i-1", "i-1");
    expect((await client.list(NodeResource)).items).toEqual([]);
    await joined;
    expect(Date.now() - started).toBeGreaterThanOrEqual(190);
    const node = await client.get(NodeResource, { name: "i-1" });
    expect(node.spec?.providerID).toBe("fake:///zone-a/i-1");
    expect(node.spec?.taints?.map((t) => t.key)).toEqual(["node.cluster.x-k8s.io/uninitialized"]);
    expect(node.status?.conditions?.find((c) => c.type === "Ready")?.status).toBe("True");
    await kubelet.leave("i-1");
    const left = await client.get(NodeResource, { name: "i-1" });
    expect(left.status?.conditions?.find((c) => c.type === "Ready")?.status).toBe("Unknown");
    await kubelet.remove("i-1");
    await kubelet.remove("i-1");
    expect((await client.list(NodeResource)).items).toEqual([]);
    kubelet.stop();
  });

  it("cancels a pending join when the instance is removed first, and refuses an empty providerID", async () => {
    const kubelet = kubeletStandIn({ kubeConfig: api.kubeConfig, joinDelayMs: 300 });
    const joined = kubelet.join("fake:///zone-a/i-2", "i-2");
    await kubelet.remove("i-2");
    await joined;
    await new Promise((r) => setTimeout(r, 400));
    expect((await client.list(NodeResource)).items).toEqual([]);
    await expect(kubelet.join("", "i-3")).rejects.toThrow(/needs a providerID/);
    expect(() => kubeletStandIn({ kubeConfig: api.kubeConfig, joinDelayMs: -1 })).toThrow(
      /joinDelayMs must be/,
    );
    kubelet.stop();
  });
});

describe("kubeletFollowing", () => {
  const nodes = async () =>
    (await client.list(NodeResource)).items
      .filter((n) => n.metadata?.name?.startsWith("f-"))
      .map((n) => ({
        name: n.metadata?.name,
        providerID: n.spec?.providerID,
        ready: n.status?.conditions?.find((c) => c.type === "Ready")?.status,
      }))
      .sort((a, b) => String(a.name).localeCompare(String(b.name)));

  it("registers the Nodes of running instances, un-readies stopping ones and deletes gone ones", async () => {
    let cloud: FollowedInstance[] = [
      { providerID: "aws:///z/f-1", nodeName: "f-1", state: "running" },
      { providerID: "aws:///z/f-2", nodeName: "f-2", state: "pending" },
    ];
    const kubelet = kubeletFollowing({
      kubeConfig: api.kubeConfig,
      list: async () => cloud,
      intervalMs: 60_000,
    });
    try {
      await kubelet.sync();
      expect(await nodes()).toEqual([{ name: "f-1", providerID: "aws:///z/f-1", ready: "True" }]);
      cloud = [
        { providerID: "aws:///z/f-1", nodeName: "f-1", state: "stopping" },
        { providerID: "aws:///z/f-2", nodeName: "f-2", state: "running" },
      ];
      await kubelet.sync();
      expect(await nodes()).toEqual([
        { name: "f-1", providerID: "aws:///z/f-1", ready: "Unknown" },
        { name: "f-2", providerID: "aws:///z/f-2", ready: "True" },
      ]);
      cloud = [{ providerID: "aws:///z/f-2", nodeName: "f-2", state: "running" }];
      await kubelet.sync();
      expect((await nodes()).map((n) => n.name)).toEqual(["f-2"]);
    } finally {
      await kubelet.stop();
    }
    await client.delete(NodeResource, { name: "f-2" });
  });

  it("polls on its own, keeps a failing list's error and recovers, and joins with the delay set", async () => {
    let failing = true;
    let looks = 0;
    const kubelet = kubeletFollowing({
      kubeConfig: api.kubeConfig,
      intervalMs: 20,
      list: async () => {
        looks++;
        if (failing) throw new Error("RequestLimitExceeded");
        return [{ providerID: "aws:///z/f-9", nodeName: "f-9", state: "running" }];
      },
    });
    try {
      await expect
        .poll(() => kubelet.lastError?.message, { timeout: 30_000 })
        .toBe("RequestLimitExceeded");
      kubelet.setJoinDelay(150);
      const before = looks;
      failing = false;
      await expect
        .poll(nodes, { timeout: 30_000 })
        .toEqual([{ name: "f-9", providerID: "aws:///z/f-9", ready: "True" }]);
      expect(looks).toBeGreaterThan(before);
      expect(kubelet.lastError).toBeUndefined();
      expect(() => kubelet.setJoinDelay(-5)).toThrow(/joinDelayMs must be/);
    } finally {
      await kubelet.stop();
    }
    await client.delete(NodeResource, { name: "f-9" });
  });
});
