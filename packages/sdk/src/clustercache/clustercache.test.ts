import { KubeConfig, type V1Node } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { machinePoolController } from "../provider/controller.js";
import { fakeCloud } from "../provider/testing.js";
import { Manager } from "../runtime/manager.js";
import { ClusterCache } from "./clustercache.js";
import type { ClusterCacheHost } from "./options.js";
import { StringTable } from "./string-table.js";
import { indexNodeByProviderID, isNodeReady, projectWorkloadNode } from "./workload-node.js";

/** A manager that is never started: constructing a cache talks to no API server. */
function manager(): Manager {
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromOptions({
    clusters: [{ name: "c", server: "https://127.0.0.1:1" }],
    users: [{ name: "u", token: "t" }],
    contexts: [{ name: "x", cluster: "c", user: "u" }],
    currentContext: "x",
  });
  return new Manager({ kubeConfig, name: "cc-unit", logger: { level: "silent" } });
}

function node(providerID: string | undefined, ready: string | undefined): V1Node {
  return {
    metadata: { name: "n" },
    ...(providerID !== undefined ? { spec: { providerID } } : {}),
    ...(ready !== undefined ? { status: { conditions: [{ type: "Ready", status: ready }] } } : {}),
  };
}

describe("ClusterCache construction (explicit, with its options)", () => {
  it("takes its options at construction and refuses a timing that is not positive", () => {
    const host = manager();
    expect(() => new ClusterCache(host, { connectionRetryMs: 0 })).toThrow(
      "ClusterCache: connectionRetryMs must be a positive number, got 0",
    );
    expect(() => new ClusterCache(host, { connectTimeoutMs: Number.NaN })).toThrow(RangeError);
    expect(() => new ClusterCache(host, { name: "" })).toThrow(/name must be a non-empty string/);
  });

  it("is no per-manager singleton: each construction is its own cache, named uniquely in the manager", () => {
    const host = manager();
    const first = new ClusterCache(host);
    expect(first.name).toBe("clustercache");
    // The manager runs each cache as a runnable (to close it on stop), so names must differ.
    expect(() => new ClusterCache(host)).toThrow(
      'ClusterCache: the manager already runs a runnable named "clustercache" (another ClusterCache?): pass that one to every controller that needs it, or give this one another name',
    );
    const second = new ClusterCache(host, { name: "second" });
    expect(second).not.toBe(first);
    expect(second.name).toBe("second");
    // Another manager gets its own, whatever the first one holds.
    expect(new ClusterCache(manager()).name).toBe("clustercache");
  });

  it("works with a host that cannot run it, which then stops it itself", async () => {
    const full = manager();
    const host: ClusterCacheHost = {
      client: full.client,
      cache: full.cache,
      logger: full.logger,
      metrics: full.metrics,
    };
    const cache = new ClusterCache(host);
    await cache.stop();
    await expect(cache.connect({ namespace: "ns", name: "c1" })).rejects.toThrow(
      "ClusterCache is stopped",
    );
  });
});

// The kit's side of the hand-over (MachinePoolControllerOptions.clusterCache), seen from the manager's
// runnables: a cache the kit builds itself is one named after its controller.
describe("the kit's ClusterCache", () => {
  const kind = {
    group: "infrastructure.test.dev",
    kind: "TestPool",
    plural: "testpools",
    versions: ["v1beta2"],
  };
  const own = "testpool-clustercache";

  it("is the one it is given", () => {
    const host = manager();
    const shared = new ClusterCache(host, { connectTimeoutMs: 5_000 });
    machinePoolController(fakeCloud().driver, { manager: host, kind, clusterCache: shared });
    machinePoolController(fakeCloud().driver, {
      manager: host,
      kind: { ...kind, kind: "OtherPool", plural: "otherpools" },
      clusterCache: shared,
    });
    expect(new ClusterCache(host, { name: own }).name).toBe(own);
  });

  it('is its own, with default options, when it needs one (readiness "node") and gets none', () => {
    const host = manager();
    machinePoolController(fakeCloud().driver, { manager: host, kind });
    expect(() => new ClusterCache(host, { name: own })).toThrow(/already runs a runnable named/);
  });

  it('is none with readiness "instance"', () => {
    const host = manager();
    machinePoolController(fakeCloud().driver, { manager: host, kind, readiness: "instance" });
    expect(new ClusterCache(host, { name: own }).name).toBe(own);
  });
});

describe("workload Node helpers", () => {
  it("indexes a Node by its providerID, if it has one", () => {
    expect(indexNodeByProviderID(node("aws:///i-1", undefined))).toEqual(["aws:///i-1"]);
    expect(indexNodeByProviderID(node(undefined, undefined))).toEqual([]);
    expect(indexNodeByProviderID(node("", undefined))).toEqual([]);
  });

  it("calls a Node Ready only when its Ready condition is True", () => {
    expect(isNodeReady(node(undefined, "True"))).toBe(true);
    expect(isNodeReady(node(undefined, "False"))).toBe(false);
    expect(isNodeReady(node(undefined, "Unknown"))).toBe(false);
    expect(isNodeReady(node(undefined, undefined))).toBe(false);
  });

  it("projects a workload cluster's Node onto what it keeps, dropping fields of the wrong type", () => {
    // The workload cluster's answer is whoever controls that cluster's: nothing is trusted by type.
    const hostile = {
      metadata: {
        name: "n",
        uid: 7,
        labels: { ok: "yes", nested: { a: 1 } },
        annotations: ["capi-ts.io/x"],
        managedFields: [{ manager: "kubelet" }],
      },
      spec: { providerID: { toString: "x" }, unschedulable: "true", taints: [null, { key: "k" }] },
      status: {
        conditions: "Ready",
        nodeInfo: { kubeletVersion: 1 },
        images: [{ names: ["big"] }],
      },
    } as unknown as V1Node;
    expect(projectWorkloadNode(hostile)).toEqual({
      apiVersion: "v1",
      kind: "Node",
      metadata: { name: "n", labels: { ok: "yes" } },
      spec: {},
      status: {},
    });
    expect(
      projectWorkloadNode({
        metadata: {
          name: "n",
          annotations: {
            "node.cluster.x-k8s.io/owner": "o",
            "capi-ts.io/labels-from-pool": "a",
            "notcapi-ts.io/x": "dropped",
            "capi-ts.io.evil.example/x": "dropped",
            "no-domain": "dropped",
          },
        },
      }).metadata?.annotations,
    ).toEqual({ "node.cluster.x-k8s.io/owner": "o", "capi-ts.io/labels-from-pool": "a" });
  });

  it("hands the texts that repeat from Node to Node to the intern table, and changes nothing else", () => {
    const kubelet = {
      metadata: { name: "n", labels: { "kubernetes.io/arch": "amd64" } },
      spec: { providerID: "aws:///i-1" },
      status: {
        conditions: [
          {
            type: "Ready",
            status: "True",
            reason: "KubeletReady",
            message: "kubelet is posting ready status",
            lastTransitionTime: "2026-12-06T10:00:00Z",
            lastHeartbeatTime: "2026-12-06T10:05:00Z",
          },
        ],
        nodeInfo: { kubeletVersion: "v1.35.4" },
      },
    } as unknown as V1Node;
    const seen: string[] = [];
    const projected = projectWorkloadNode(kubelet, (value) => {
      seen.push(value);
      return value;
    });
    expect(projected).toEqual(projectWorkloadNode(kubelet));
    expect(seen.sort()).toEqual(
      [
        "amd64",
        "Ready",
        "True",
        "KubeletReady",
        "kubelet is posting ready status",
        "2026-12-06T10:00:00Z",
        "v1.35.4",
      ].sort(),
    );
  });

  it("keeps a bounded string table, and starts it over when a cluster sends too many strings", () => {
    const strings = new StringTable();
    expect(strings.intern("kubelet is posting ready status")).toBe(
      "kubelet is posting ready status",
    );
    strings.intern("kubelet is posting ready status");
    expect(strings.size).toEqual({ strings: 1, characters: 31 });
    // A hostile cluster's endless unique values: the table never holds more than its bounds.
    let most = { strings: 0, characters: 0 };
    for (let i = 0; i < 20_000; i++) {
      strings.intern(`node-${i}-${"x".repeat(i % 100)}`);
      const { strings: count, characters } = strings.size;
      most = {
        strings: Math.max(most.strings, count),
        characters: Math.max(most.characters, characters),
      };
    }
    expect(most.strings).toBeLessThanOrEqual(4096);
    expect(most.characters).toBeLessThanOrEqual(128 * 1024);
    expect(most.strings).toBeGreaterThan(1000);
    // Too long to keep: handed back, not held.
    const before = strings.size;
    expect(strings.intern("y".repeat(600))).toHaveLength(600);
    expect(strings.size).toEqual(before);
  });
});
