import { KubeClient } from "@capi-ts/sdk/runtime";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { type CapiCore, markWorkloadClusterReady, startApiServer } from "../../src/index.js";
import { type Backend, onReal } from "../support/backend.js";
import {
  Clusters,
  cluster,
  createNode,
  createReadyCluster,
  eventually,
  getMachinePool,
  MachinePools,
  machinePool,
  NodeResource,
  node,
  ns,
  setPoolStatus,
  setProviderIDs,
  sleep,
  startCapiApiServer,
  startCore,
  TestMachinePools,
  testMachinePool,
} from "./support.js";

vi.setConfig({ testTimeout: onReal ? 60_000 : 20_000, hookTimeout: onReal ? 180_000 : 30_000 });

const NOT_CONNECTED =
  "failed to reconcile infrastructure: error getting client: connection to the workload cluster is down";

let api: Backend;
let client: KubeClient;
let core: CapiCore;
/** A second API server playing the workload cluster. */
let workload: Awaited<ReturnType<typeof startApiServer>>;
let workloadClient: KubeClient;
let seq = 0;

beforeAll(async () => {
  ({ api, client } = await startCapiApiServer());
  workload = await startApiServer();
  workloadClient = new KubeClient(workload.kubeConfig, { fieldManager: "test" });
  // Core's 30 s connection retry: a Secret that appears later is still picked up at once.
  core = await startCore(api, { clusterCache: {} });
});
afterAll(async () => {
  await core.stop();
  await workload.stop();
  await api.stop();
});

/** A ready pool of one instance in `clusterName`, reporting `providerID`. */
async function readyPool(clusterName: string, providerID: string): Promise<string> {
  const name = `wl-${++seq}`;
  await client.create(TestMachinePools, testMachinePool(name));
  await client.create(
    MachinePools,
    machinePool(name, { clusterName, replicas: 1, dataSecretName: "data" }),
  );
  await eventually(async () => {
    const imp = await client.get(TestMachinePools, { namespace: ns, name });
    expect(imp.metadata?.ownerReferences?.length).toBe(1);
  });
  await setProviderIDs(client, name, [providerID]);
  await setPoolStatus(client, name, { ready: true, replicas: 1 });
  return name;
}

describe("workload cluster access through the kubeconfig Secret (core's ClusterCache)", () => {
  it("reads and writes Nodes of the cluster the Secret points at, never the management cluster's", async () => {
    await createReadyCluster(client, api, "remote", { kubeConfig: workload.kubeConfig });
    // The same providerID on both sides: only the workload cluster's Node may be referenced.
    await createNode(workloadClient, node("remote-node", "test:///remote-1"));
    await createNode(client, node("decoy-node", "test:///remote-1"));
    const name = await readyPool("remote", "test:///remote-1");
    const mp = await eventually(async () => {
      const got = await getMachinePool(client, name);
      expect(got.status?.nodeRefs?.map((r) => r.name)).toEqual(["remote-node"]);
      return got;
    });
    const remote = await workloadClient.get(NodeResource, { name: "remote-node" });
    expect(mp.status?.nodeRefs?.[0]?.uid).toBe(remote.metadata?.uid);
    expect(remote.metadata?.annotations?.["cluster.x-k8s.io/owner-name"]).toBe(name);
    expect(remote.spec?.taints ?? []).toEqual([]);
    const decoy = await client.get(NodeResource, { name: "decoy-node" });
    expect(decoy.metadata?.annotations?.["cluster.x-k8s.io/owner-name"]).toBeUndefined();
    expect(decoy.spec?.taints).toHaveLength(1);
  });

  it("fails with core's error until the Cluster's infrastructure is provisioned, without bumping observedGeneration", async () => {
    await client.create(Clusters, cluster("late"));
    const name = await readyPool("late", "test:///late-1");
    const failure = await eventually(() => {
      const failed = core.reconciles({ machinePool: `${ns}/${name}`, failed: true });
      expect(failed.length).toBeGreaterThan(0);
      return failed[failed.length - 1];
    });
    expect(failure?.error?.message).toBe(NOT_CONNECTED);
    // The infrastructure part before GetClient still happens: provisioned, mirrored condition.
    let mp = await eventually(async () => {
      const got = await getMachinePool(client, name);
      expect(got.status?.initialization?.infrastructureProvisioned).toBe(true);
      return got;
    });
    expect(core.reconciles({ machinePool: `${ns}/${name}` }).at(-1)?.error?.message).toBe(
      NOT_CONNECTED,
    );
    expect(mp.spec?.providerIDList).toBeUndefined();
    expect(mp.status?.observedGeneration).toBeUndefined();

    await createNode(client, node("late-node", "test:///late-1"));
    await markWorkloadClusterReady(client, { namespace: ns, name: "late" }, api.kubeConfig);
    mp = await eventually(async () => {
      const got = await getMachinePool(client, name);
      expect(got.status?.nodeRefs?.map((r) => r.name)).toEqual(["late-node"]);
      expect(got.status?.observedGeneration).toBe(got.metadata?.generation);
      return got;
    });
    expect(mp.spec?.providerIDList).toEqual(["test:///late-1"]);
  });

  it("does not connect without the kubeconfig Secret, and connects once it appears", async () => {
    await client.create(Clusters, cluster("nosecret"));
    await markWorkloadClusterReady(client, { namespace: ns, name: "nosecret" }, api.kubeConfig, {
      kubeconfigSecret: false,
    });
    const name = await readyPool("nosecret", "test:///nosecret-1");
    // ControlPlaneInitialized is True, so the Node watch fails too, and core aggregates both.
    await eventually(() => {
      const failed = core.reconciles({ machinePool: `${ns}/${name}`, failed: true });
      expect(failed.at(-1)?.error?.message).toBe(
        `[${NOT_CONNECTED}, failed to reconcile nodeRefs: error creating watch machinepool-watchNodes for *v1.Node: connection to the workload cluster is down]`,
      );
    });
    await createNode(client, node("nosecret-node", "test:///nosecret-1"));
    await markWorkloadClusterReady(client, { namespace: ns, name: "nosecret" }, api.kubeConfig);
    await eventually(async () => {
      const got = await getMachinePool(client, name);
      expect(got.status?.nodeRefs?.map((r) => r.name)).toEqual(["nosecret-node"]);
    });
  });

  it("drops the connection when the Secret changes and reads the new workload cluster", async () => {
    await createReadyCluster(client, api, "moving");
    await createNode(client, node("moving-local", "test:///moving-1"));
    const name = await readyPool("moving", "test:///moving-1");
    await eventually(async () => {
      const got = await getMachinePool(client, name);
      expect(got.status?.nodeRefs?.map((r) => r.name)).toEqual(["moving-local"]);
    });
    // Point the Cluster at the other server, where the instance's Node has another name.
    await createNode(workloadClient, node("moving-remote", "test:///moving-1"));
    await markWorkloadClusterReady(client, { namespace: ns, name: "moving" }, workload.kubeConfig);
    await eventually(async () => {
      const got = await getMachinePool(client, name);
      expect(got.status?.nodeRefs?.map((r) => r.name)).toEqual(["moving-remote"]);
    });
  });

  it("watches Nodes only once the control plane is initialized", async () => {
    // A management cluster of its own, so no other emulator re-checks the pool, and a 60 s re-check.
    const own = await startCapiApiServer();
    const ownCore = await startCore(own.api, { nodeRefRequeueMs: 60_000 });
    try {
      const mgmt = own.client;
      await createReadyCluster(mgmt, own.api, "nocp", { kubeConfig: workload.kubeConfig });
      // Connected (provisioned, Secret) but ControlPlaneInitialized not True: no Node watch.
      await mgmt.mergePatchStatus(
        Clusters,
        { namespace: ns, name: "nocp" },
        {
          status: {
            conditions: [
              {
                type: "ControlPlaneInitialized",
                status: "False",
                reason: "NotInitialized",
                message: "",
                lastTransitionTime: new Date().toISOString(),
              },
            ],
          },
        },
      );
      await createNode(workloadClient, node("nocp-node", "test:///nocp-1", false));
      const name = `wl-${++seq}`;
      await mgmt.create(TestMachinePools, testMachinePool(name));
      await mgmt.create(
        MachinePools,
        machinePool(name, { clusterName: "nocp", replicas: 1, dataSecretName: "data" }),
      );
      await eventually(async () => {
        const imp = await mgmt.get(TestMachinePools, { namespace: ns, name });
        expect(imp.metadata?.ownerReferences?.length).toBe(1);
      });
      await setProviderIDs(mgmt, name, ["test:///nocp-1"]);
      await setPoolStatus(mgmt, name, { ready: true, replicas: 1 });
      await eventually(async () => {
        const got = await getMachinePool(mgmt, name);
        expect(got.status?.nodeRefs?.map((r) => r.name)).toEqual(["nocp-node"]);
      });
      const ready = {
        status: {
          conditions: [
            {
              type: "Ready",
              status: "True",
              reason: "KubeletReady",
              lastTransitionTime: new Date(Date.now() - 60_000).toISOString(),
              lastHeartbeatTime: new Date().toISOString(),
            },
          ],
        },
      };
      // Let the reconciles that follow core's own status writes die down.
      await sleep(600);
      const before = ownCore.reconciles({ machinePool: `${ns}/${name}`, actor: "machinepool" });
      // The Node turns Ready: without a watch nothing notices before the 60 s re-check.
      await workloadClient.mergePatchStatus(NodeResource, { name: "nocp-node" }, ready);
      await sleep(800);
      expect(
        (await getMachinePool(mgmt, name)).status?.deprecated?.v1beta1?.readyReplicas,
      ).toBeUndefined();
      expect(ownCore.reconciles({ machinePool: `${ns}/${name}`, actor: "machinepool" })).toEqual(
        before,
      );

      // Initialized: the next reconcile (a Cluster event does not trigger one, a pool change does)
      // sets the watch up, and a Node change is then seen at once.
      await mgmt.mergePatchStatus(
        Clusters,
        { namespace: ns, name: "nocp" },
        {
          status: {
            conditions: [
              {
                type: "ControlPlaneInitialized",
                status: "True",
                reason: "Initialized",
                message: "",
                lastTransitionTime: new Date().toISOString(),
              },
            ],
          },
        },
      );
      await mgmt.mergePatch(
        MachinePools,
        { namespace: ns, name },
        { metadata: { annotations: { poke: "1" } } },
      );
      await eventually(async () => {
        const got = await getMachinePool(mgmt, name);
        expect(got.status?.deprecated?.v1beta1?.readyReplicas).toBe(1);
      }, 5_000);
    } finally {
      await ownCore.stop();
      await own.api.stop();
    }
  });
});
