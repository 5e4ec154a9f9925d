// The SDK's ClusterCache over HTTP: the management cluster is one in-memory API server, the workload
// cluster a SECOND one, reached only through the Cluster's `<cluster>-kubeconfig` Secret.
import {
  ClusterCache,
  isNodeReady,
  NODE_PROVIDER_ID_INDEX,
  WorkloadClusterUnavailableError,
} from "@capi-ts/sdk/clustercache";
import { KubeClient, Manager, NodeResource } from "@capi-ts/sdk/runtime";
import type { V1Node } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ApiServer, markWorkloadClusterReady, startApiServer } from "../../src/index.js";
import { Clusters, cluster, eventually, ns, startCapiApiServer } from "../capi/support.js";
import type { Backend } from "../support/backend.js";
import { writeKubeconfigSecret } from "./support.js";

let api: Backend;
let client: KubeClient;
let workload: ApiServer;
let workloadClient: KubeClient;
let manager: Manager;
let running: Promise<void>;
let clusters: ClusterCache;
const reconciled: string[] = [];
/** What the raw source delivered: `type:cluster[:node]`. */
const delivered: string[] = [];
const TOKEN = "s3cr3t-token-never-shown";

function node(name: string, providerID: string, ready: boolean): V1Node {
  return {
    apiVersion: "v1",
    kind: "Node",
    metadata: { name },
    spec: { providerID },
    status: { conditions: [{ type: "Ready", status: ready ? "True" : "False" }] },
  };
}

async function unavailable(name: string): Promise<WorkloadClusterUnavailableError> {
  try {
    await clusters.connect({ namespace: ns, name });
  } catch (error) {
    if (error instanceof WorkloadClusterUnavailableError) return error;
    throw error;
  }
  throw new Error(`connected to ${name}, expected a WorkloadClusterUnavailableError`);
}

function writeKubeconfig(name: string, value: string | Buffer): Promise<void> {
  return writeKubeconfigSecret(client, ns, name, value);
}

beforeAll(async () => {
  ({ api, client } = await startCapiApiServer());
  // HTTPS, as every workload cluster must be: the ClusterCache refuses a plain-HTTP server.
  workload = await startApiServer({ tls: true });
  workloadClient = new KubeClient(workload.kubeConfig, { fieldManager: "test" });
  manager = new Manager({
    kubeConfig: api.kubeConfig,
    name: "cc-test",
    logger: { level: "silent" },
  });
  clusters = new ClusterCache(manager, {
    connectionRetryMs: 150,
    maxConnectionRetryMs: 300,
    healthProbeIntervalMs: 100,
    healthProbeFailureThreshold: 2,
    connectTimeoutMs: 2_000,
  });
  manager
    .controller("clusters")
    .for(Clusters)
    .watchesRawSource(
      clusters.source((event) => {
        delivered.push(
          [event.type, event.cluster.name, event.node?.metadata?.name].filter(Boolean).join(":"),
        );
        return event.type === "node" && event.node && !isNodeReady(event.node)
          ? []
          : [{ namespace: event.cluster.namespace ?? "", name: event.cluster.name }];
      }),
    )
    .complete(async (request) => {
      reconciled.push(request.name);
    });
  running = manager.start();
  await manager.elected();
}, 30_000);
afterAll(async () => {
  await clusters?.stop();
  await manager?.stop();
  await running?.catch(() => undefined);
  await workload?.stop();
  await api?.stop();
});

describe("ClusterCache (workload cluster access through the kubeconfig Secret)", {
  timeout: 20_000,
}, () => {
  it("is the manager's runnable: a second cache of the same name is refused, saying to share it", () => {
    expect(() => new ClusterCache(manager)).toThrow(
      /already runs a runnable named "clustercache".*pass that one to every controller/,
    );
  });

  it("names a missing Secret, backs off, and connects as soon as the Secret is written", async () => {
    await client.create(Clusters, cluster("wl-a"));
    const missing = await unavailable("wl-a");
    expect(missing.reason).toBe("KubeconfigSecretNotFound");
    expect(missing.message).toContain(`Secret ${ns}/wl-a-kubeconfig does not exist`);
    // Within the backoff the same error comes back without a new attempt.
    const again = await unavailable("wl-a");
    expect(again.reason).toBe("KubeconfigSecretNotFound");
    expect(again.retryAfterMs).toBeGreaterThan(0);
    expect(
      await manager.metrics.value("capi_ts_cluster_cache_connection_attempts_total", {
        cluster_name: "wl-a",
      }),
    ).toBe(1);

    await workloadClient.create(NodeResource, node("n-1", "fake:///n-1", true));
    // A Node of the management cluster must never be seen through the workload connection.
    await client.create(NodeResource, node("mgmt-only", "fake:///mgmt", true));
    reconciled.length = 0;
    await markWorkloadClusterReady(client, { namespace: ns, name: "wl-a" }, workload.kubeConfig);
    // The Secret event ends the backoff and re-triggers the controller, whose next look connects.
    await eventually(() => expect(reconciled).toContain("wl-a"));
    const connection = await clusters.connect({ namespace: ns, name: "wl-a" });
    expect(connection.nodes.list().map((n) => n.metadata?.name)).toEqual(["n-1"]);
    expect(
      await manager.metrics.value("capi_cluster_cache_connection_up", { cluster_name: "wl-a" }),
    ).toBe(1);

    // Node events of the workload cluster re-trigger reconciles (the raw source).
    await eventually(() => expect(delivered).toContain("connected:wl-a"));
    await eventually(() => expect(reconciled).toContain("wl-a"));
    reconciled.length = 0;
    await workloadClient.create(NodeResource, node("n-2", "fake:///n-2", true));
    await eventually(() => expect(delivered).toContain("node:wl-a:n-2"));
    await eventually(() => expect(reconciled).toContain("wl-a"));
    expect(connection.nodes.list().filter(isNodeReady)).toHaveLength(2);
    // Nodes are indexed by providerID: a reconcile looks up its instances, not every Node.
    const byProviderID = (id: string) =>
      connection.nodes.byIndex(NODE_PROVIDER_ID_INDEX, id).map((n) => n.metadata?.name);
    expect(byProviderID("fake:///n-2")).toEqual(["n-2"]);
    expect(byProviderID("fake:///mgmt")).toEqual([]);
    expect(delivered.some((d) => d.includes("mgmt-only"))).toBe(false);
    // Health probes run against the workload cluster.
    await eventually(async () =>
      expect(
        await manager.metrics.value("capi_cluster_cache_healthchecks_total", {
          cluster_name: "wl-a",
          status: "success",
        }),
      ).toBeGreaterThan(0),
    );
  });

  it("caches each Node's projection, never the whole object, and keeps it current", async () => {
    const connection = await clusters.connect({ namespace: ns, name: "wl-a" });
    const heartbeat = "2026-01-01T00:00:00Z";
    const kubeletConditions = ["MemoryPressure", "DiskPressure", "PIDPressure"].map((type) => ({
      type,
      status: "False",
      reason: `KubeletHasNo${type}`,
      message: `kubelet has no ${type}`,
      lastHeartbeatTime: heartbeat,
      lastTransitionTime: heartbeat,
    }));
    const whole = {
      apiVersion: "v1",
      kind: "Node",
      metadata: {
        name: "n-fat",
        labels: { "kubernetes.io/hostname": "n-fat", "node-role.kubernetes.io/worker": "" },
        annotations: {
          "capi-ts.io/taints-from-pool": "gpu:NoSchedule",
          "cluster.x-k8s.io/machine": "m-1",
          "flannel.alpha.coreos.com/public-ip": "10.0.0.9",
          "volumes.kubernetes.io/controller-managed-attach-detach": "true",
        },
      },
      spec: {
        providerID: "fake:///n-fat",
        podCIDR: "10.244.9.0/24",
        unschedulable: true,
        taints: [{ key: "gpu", value: "true", effect: "NoSchedule" }],
      },
      status: {
        conditions: [
          ...kubeletConditions,
          {
            type: "Ready",
            status: "True",
            reason: "KubeletReady",
            message: "kubelet is posting ready status",
            lastHeartbeatTime: heartbeat,
            lastTransitionTime: heartbeat,
          },
        ],
        addresses: [{ type: "InternalIP", address: "10.0.0.9" }],
        capacity: { cpu: "4", memory: "16Gi", pods: "110" },
        allocatable: { cpu: "3800m", memory: "15Gi", pods: "110" },
        images: Array.from({ length: 20 }, (_, i) => ({
          names: [`registry.example/image-${i}@sha256:${"0".repeat(64)}`],
          sizeBytes: 1e8,
        })),
        nodeInfo: {
          kubeletVersion: "v1.34.1",
          machineID: "m",
          systemUUID: "s",
          bootID: "b",
          kernelVersion: "6.1",
          osImage: "Linux",
          containerRuntimeVersion: "containerd://2.0",
          kubeProxyVersion: "v1.34.1",
          operatingSystem: "linux",
          architecture: "amd64",
        },
      },
    } as unknown as V1Node;
    const created = await workloadClient.create(NodeResource, whole);
    await eventually(() => expect(delivered).toContain("node:wl-a:n-fat"));
    const [cached] = connection.nodes.byIndex(NODE_PROVIDER_ID_INDEX, "fake:///n-fat");
    // Exactly the projection: what the kit and CAPI's contract read, and nothing else of the Node.
    expect(cached).toEqual({
      apiVersion: "v1",
      kind: "Node",
      metadata: {
        name: "n-fat",
        uid: created.metadata?.uid,
        resourceVersion: created.metadata?.resourceVersion,
        labels: { "kubernetes.io/hostname": "n-fat", "node-role.kubernetes.io/worker": "" },
        annotations: {
          "capi-ts.io/taints-from-pool": "gpu:NoSchedule",
          "cluster.x-k8s.io/machine": "m-1",
        },
      },
      spec: {
        providerID: "fake:///n-fat",
        unschedulable: true,
        taints: [{ key: "gpu", value: "true", effect: "NoSchedule" }],
      },
      status: {
        conditions: [
          ...kubeletConditions.map(({ lastHeartbeatTime: _dropped, ...kept }) => kept),
          {
            type: "Ready",
            status: "True",
            reason: "KubeletReady",
            message: "kubelet is posting ready status",
            lastTransitionTime: heartbeat,
          },
        ],
        nodeInfo: { kubeletVersion: "v1.34.1" },
      },
    });
    expect(JSON.stringify(cached).length).toBeLessThan(JSON.stringify(whole).length / 3);
    // CAPI's reader works on it. The kit's own Node view of these fields is an SDK internal, unit-tested
    // in the SDK (provider/nodes.test.ts).
    expect(cached && isNodeReady(cached)).toBe(true);

    // An update (the kubelet reporting NotReady) replaces the projection, still slim.
    const seen = delivered.length;
    await workloadClient.mergePatchStatus(NodeResource, created, {
      status: { conditions: [{ type: "Ready", status: "False", reason: "KubeletNotReady" }] },
    });
    await eventually(() =>
      expect(
        connection.nodes.byIndex(NODE_PROVIDER_ID_INDEX, "fake:///n-fat").some(isNodeReady),
      ).toBe(false),
    );
    expect(delivered.length).toBeGreaterThan(seen);
    const [updated] = connection.nodes.byIndex(NODE_PROVIDER_ID_INDEX, "fake:///n-fat");
    expect(Object.keys(updated?.status ?? {}).sort()).toEqual(["conditions", "nodeInfo"]);
    expect(Object.keys(updated?.spec ?? {}).sort()).toEqual([
      "providerID",
      "taints",
      "unschedulable",
    ]);
    await workloadClient.delete(NodeResource, { name: "n-fat" });
    await eventually(() =>
      expect(connection.nodes.byIndex(NODE_PROVIDER_ID_INDEX, "fake:///n-fat")).toEqual([]),
    );
  });

  it("drops the connection when the Secret changes; a malformed one is named without its content", async () => {
    const before = await clusters.connect({ namespace: ns, name: "wl-a" });
    await writeKubeconfig(
      "wl-a",
      `apiVersion: v1\nkind: Config\nusers: [{ name: x, user: { token: ${TOKEN} } ]\n  : [`,
    );
    await eventually(() => expect(clusters.get({ namespace: ns, name: "wl-a" })).toBeUndefined());
    expect(before.nodes.hasSynced()).toBe(true);
    const bad = await unavailable("wl-a");
    expect(bad.reason).toBe("KubeconfigSecretInvalid");
    expect(bad.message).toContain("wl-a-kubeconfig");
    expect(bad.message).not.toContain(TOKEN);
    expect(
      await manager.metrics.value("capi_cluster_cache_connection_up", { cluster_name: "wl-a" }),
    ).toBe(0);

    await writeKubeconfig("wl-a", "apiVersion: v1\nkind: Config\n");
    await eventually(async () => {
      const noServer = await unavailable("wl-a");
      expect(noServer.reason).toBe("KubeconfigSecretInvalid");
      expect(noServer.message).toContain("has no current-context");
    });

    // Fixed: connects again at once (the Secret change ends the backoff).
    await markWorkloadClusterReady(client, { namespace: ns, name: "wl-a" }, workload.kubeConfig);
    await eventually(async () => {
      const fixed = await clusters.connect({ namespace: ns, name: "wl-a" });
      expect(fixed).not.toBe(before);
      expect(fixed.nodes.list()).toHaveLength(2);
    });
  });

  it("names an unreachable server, and tears the connection down when the Cluster is deleted", async () => {
    await client.create(Clusters, cluster("wl-b"));
    const gone = await startApiServer({ tls: true });
    const kubeConfig = gone.kubeConfig;
    await gone.stop();
    await markWorkloadClusterReady(client, { namespace: ns, name: "wl-b" }, kubeConfig);
    const down = await unavailable("wl-b");
    expect(down.reason).toBe("WorkloadClusterUnreachable");
    expect(down.message).toContain("did not answer");
    expect(
      await manager.metrics.value("capi_ts_cluster_cache_connection_attempts_total", {
        cluster_name: "wl-b",
        result: "WorkloadClusterUnreachable",
      }),
    ).toBe(1);

    await clusters.connect({ namespace: ns, name: "wl-a" });
    await client.delete(Clusters, { namespace: ns, name: "wl-a" });
    await eventually(() => expect(clusters.get({ namespace: ns, name: "wl-a" })).toBeUndefined());
  });

  it("drops a connection whose health probes fail, and reconnects once the server is back", async () => {
    const second = await startApiServer({ tls: true });
    await client.create(Clusters, cluster("wl-c"));
    await markWorkloadClusterReady(client, { namespace: ns, name: "wl-c" }, second.kubeConfig);
    await clusters.connect({ namespace: ns, name: "wl-c" });
    reconciled.length = 0;
    await second.stop();
    await eventually(() => {
      expect(clusters.get({ namespace: ns, name: "wl-c" })).toBeUndefined();
      expect(reconciled).toContain("wl-c");
    });
    const down = await unavailable("wl-c");
    expect(down.reason).toBe("WorkloadClusterUnreachable");
  });
});
