// The kubelet stand-in registers Nodes for providerIDs over HTTP, after its join delay.
import { KubeClient, NodeResource } from "@capi-ts/sdk/runtime";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ApiServer, kubeletStandIn, startApiServer } from "../../src/index.js";

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
