// The `nodes` phase on a fake scope: the MachinePool's taints and labels reach the pool's Nodes and
// only them, a Node that matches is not written, and the NodeMetadata condition says what happened.
import { describe, expect, it } from "vitest";
import { WorkloadClusterUnavailableError } from "../../clustercache/unavailable.js";
import { ForbiddenError } from "../../runtime/errors.js";
import type { PoolGroup } from "../driver.js";
import { NodeMetadataAnnotations, type PoolNode } from "../nodes.js";
import { type FakeScopeOptions, type FakeSettings, fakeScope, instanceOf } from "../testing.js";
import { nodesPhase } from "./nodes.js";

function group(instances: PoolGroup<FakeSettings>["instances"]): PoolGroup<FakeSettings> {
  return {
    id: "group-1",
    status: "active",
    desiredReplicas: instances.length,
    templateVersion: "1",
    settings: { maxSize: 10 },
    instances,
  };
}

function scope(
  template: FakeScopeOptions["machinePoolTemplate"],
  instances = [instanceOf("i1"), instanceOf("i2")],
  extra: Partial<FakeScopeOptions> = {},
) {
  const g = group(instances);
  const test = fakeScope({
    machinePoolTemplate: template,
    sections: { group: { group: g, desired: instances.length, external: false }, machines: null },
    ...extra,
  });
  for (const [n, instance] of instances.entries()) {
    test.workloadNodes.set(instance.providerID, node(`node-${n + 1}`, instance.providerID));
  }
  return test;
}

function node(name: string, providerID: string, fields: Partial<PoolNode> = {}): PoolNode {
  return {
    name,
    providerID,
    resourceVersion: "1",
    labels: {},
    annotations: {},
    taints: [],
    readySince: 0,
    ...fields,
  };
}

const GPU = { key: "gpu", value: "a100", effect: "NoSchedule", propagation: "Always" } as const;

describe("nodes phase", () => {
  it("applies the template's taints and Node labels to every Node of the pool", async () => {
    const test = scope({
      metadata: { labels: { "node-role.kubernetes.io/gpu": "", "example.com/team": "a" } },
      spec: { taints: [GPU] },
    });
    await test.run(nodesPhase);
    for (const n of test.workloadNodes.values()) {
      expect(n.labels).toEqual({ "node-role.kubernetes.io/gpu": "" });
      expect(n.taints).toEqual([{ key: "gpu", value: "a100", effect: "NoSchedule" }]);
      expect(n.annotations).toEqual({
        [NodeMetadataAnnotations.LabelsFromPool]: "node-role.kubernetes.io/gpu",
        [NodeMetadataAnnotations.TaintsFromPool]: "gpu:NoSchedule",
      });
    }
    expect(test.nodePatches.map((p) => p.name)).toEqual(["node-1", "node-2"]);
    expect(test.section("nodes")?.condition).toEqual({
      status: "True",
      reason: "NodeMetadataSynced",
      message: "",
    });
  });

  it("writes nothing the second time", async () => {
    const first = scope({ spec: { taints: [GPU] } });
    await first.run(nodesPhase);
    const again = scope({ spec: { taints: [GPU] } });
    for (const [id, n] of first.workloadNodes) again.workloadNodes.set(id, n);
    await again.run(nodesPhase);
    expect(again.nodePatches).toEqual([]);
  });

  it("leaves Nodes of other instances and of leaving instances alone", async () => {
    const test = scope({ spec: { taints: [GPU] } }, [
      instanceOf("i1"),
      instanceOf("i2", { state: "terminating" }),
    ]);
    test.workloadNodes.set("fake:///zone-a/other", node("stranger", "fake:///zone-a/other"));
    await test.run(nodesPhase);
    expect(test.nodePatches.map((p) => p.name)).toEqual(["node-1"]);
  });

  it("names a refused label and taint on the condition and applies the rest", async () => {
    const test = scope({
      metadata: { labels: { "kubernetes.io/hostname": "x", "node-role.kubernetes.io/gpu": "" } },
      spec: {
        taints: [
          GPU,
          { key: "node.kubernetes.io/unschedulable", effect: "NoSchedule", propagation: "Always" },
        ],
      },
    });
    await test.run(nodesPhase);
    const condition = test.section("nodes")?.condition;
    expect(condition?.status).toBe("False");
    expect(condition?.reason).toBe("NodeMetadataRefused");
    expect(condition?.message).toContain("label kubernetes.io/hostname");
    expect(condition?.message).toContain("taint node.kubernetes.io/unschedulable:NoSchedule");
    const [first] = test.workloadNodes.values();
    expect(first?.labels).toEqual({ "node-role.kubernetes.io/gpu": "" });
    expect(first?.taints.map((t) => t.key)).toEqual(["gpu"]);
  });

  it("waits with the taints while core's uninitialized taint is on, and says so", async () => {
    const test = scope({ spec: { taints: [GPU] } }, [instanceOf("i1")]);
    const uninitialized = {
      key: "node.cluster.x-k8s.io/uninitialized",
      effect: "NoSchedule",
    } as const;
    test.workloadNodes.set(
      "fake:///zone-a/i1",
      node("node-1", "fake:///zone-a/i1", { taints: [uninitialized] }),
    );
    await test.run(nodesPhase);
    expect(test.nodePatches).toEqual([]);
    expect(test.section("nodes")?.condition?.reason).toBe("NodeMetadataPending");
  });

  it("retries soon when a Node changed under the patch (409), never overwriting it", async () => {
    const test = scope({ spec: { taints: [GPU] } }, [instanceOf("i1")]);
    const api = test.scope.api.nodes;
    if (!api) throw new Error("the test scope has Nodes");
    const get = api.get.bind(api);
    (api as { get: typeof api.get }).get = async (ids) => {
      const found = await get(ids);
      // The cache lags one version behind the server.
      const stale = new Map([...found].map(([id, n]) => [id, { ...n, resourceVersion: "0" }]));
      return stale;
    };
    await test.run(nodesPhase);
    expect(test.workloadNodes.get("fake:///zone-a/i1")?.taints).toEqual([]);
    expect(test.section("nodes")?.retryAfterMs).toBeGreaterThan(0);
    expect(test.section("nodes")?.condition?.reason).toBe("NodeMetadataPending");
  });

  it("reports a refused patch without the server's words, and goes on", async () => {
    const test = scope({ spec: { taints: [GPU] } }, [instanceOf("i1")]);
    const api = test.scope.api.nodes;
    if (!api) throw new Error("the test scope has Nodes");
    (api as { patch: typeof api.patch }).patch = async () => {
      throw new ForbiddenError(
        403,
        { reason: "Forbidden", message: "secret-token-abc cannot patch" },
        { method: "PATCH", path: "/api/v1/nodes/node-1" },
      );
    };
    expect(await test.run(nodesPhase)).toBeUndefined();
    const condition = test.section("nodes")?.condition;
    expect(condition?.reason).toBe("NodeMetadataNotApplied");
    expect(condition?.message).toContain("Node node-1: HTTP 403 (Forbidden)");
    expect(condition?.message).not.toContain("secret-token");
  });

  it("says Unknown when the workload cluster cannot be read, and retries with its backoff", async () => {
    const test = scope({ spec: { taints: [GPU] } });
    const api = test.scope.api.nodes;
    if (!api) throw new Error("the test scope has Nodes");
    (api as { get: typeof api.get }).get = async () => {
      throw new WorkloadClusterUnavailableError(
        { namespace: "default", name: "c1" },
        "KubeconfigSecretNotFound",
        "Secret default/c1-kubeconfig does not exist",
        5_000,
      );
    };
    await test.run(nodesPhase);
    expect(test.section("nodes")).toEqual({
      condition: expect.objectContaining({
        status: "Unknown",
        reason: "WorkloadClusterUnreachable",
      }),
      retryAfterMs: 5_000,
    });
  });

  it("has no condition for a MachinePool that asks for nothing", async () => {
    const test = scope({ metadata: { labels: { "example.com/team": "a" } } });
    await test.run(nodesPhase);
    expect(test.section("nodes")?.condition).toBeUndefined();
  });
});
