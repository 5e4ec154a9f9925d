// clusterctl move of live pools, judged by the real clusterctl between two real management clusters
// (kube-apiserver + etcd + CAPI core each), the example provider on each, one fake cloud behind both
// (the cloud outlives the move, as a real one does). Checks: a held cloud call holds the move
// (block-move) and the move goes on once it ends; the source copies' deletion does nothing in the
// cloud; the target rebuilds status (providerIDList, replicas, Ready) from the cloud without a single
// mutating call; a pool whose group is gone stays Ready=False GroupNotFound and creates nothing.
// Skipped, loudly, without the control plane, CAPI core or clusterctl (`./dev controlplane --capi`).

import { readdirSync } from "node:fs";
import {
  FakeCloudMachinePool,
  FakeScalingCloud,
  fakeCloudDriver,
  RealClock,
  resourceName,
} from "@capi-ts/examples";
import { Manager, machinePoolController, type PoolDriver } from "@capi-ts/sdk";
import { isNotFound, KubeClient, type ResourceDescriptor } from "@capi-ts/sdk/runtime";
import {
  type ClusterctlProvider,
  type ControlPlane,
  capiCrdsFolder,
  capiRelease,
  clusterctlMove,
  externalControlPlaneCrd,
  findCapiCoreBinary,
  findClusterctlBinary,
  findControlPlaneBinaries,
  markWorkloadClusterReady,
  prepareForClusterctl,
  setExternalControlPlane,
  startControlPlane,
} from "@capi-ts/testing";
import type { KubernetesObject } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const binaries = findControlPlaneBinaries();
const clusterctl =
  binaries && findCapiCoreBinary(binaries) ? findClusterctlBinary(binaries) : undefined;

const NAMESPACE = "default";
const CLUSTER = "move-1";
type Obj = KubernetesObject & {
  spec?: Record<string, unknown>;
  status?: {
    ready?: boolean;
    replicas?: number;
    conditions?: { type: string; status: string; reason?: string; message?: string }[];
  };
};
const res = (
  group: string,
  version: string,
  kind: string,
  plural: string,
): ResourceDescriptor<Obj> => ({
  group,
  version,
  kind,
  plural,
  scope: "Namespaced",
  subresources: { status: true },
});
const Clusters = res("cluster.x-k8s.io", "v1beta2", "Cluster", "clusters");
const MachinePools = res("cluster.x-k8s.io", "v1beta2", "MachinePool", "machinepools");
const Secrets: ResourceDescriptor<Obj> = {
  group: "",
  version: "v1",
  kind: "Secret",
  plural: "secrets",
  scope: "Namespaced",
};
const Pools = FakeCloudMachinePool.resource as unknown as ResourceDescriptor<Obj>;

/** Polls until `check` passes (it throws or expects while it does not). */
async function until<T>(what: string, check: () => Promise<T> | T, timeoutMs = 90_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await check();
    } catch (error) {
      if (Date.now() > deadline) throw new Error(`${what}: ${(error as Error).message}`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
}

/** A gate a driver call waits at while the test holds it. */
class Gate {
  #held = false;
  #waiters: (() => void)[] = [];
  entered = 0;
  hold() {
    this.#held = true;
  }
  release() {
    this.#held = false;
    for (const wake of this.#waiters.splice(0)) wake();
  }
  async pass() {
    this.entered++;
    if (this.#held) await new Promise<void>((resolve) => this.#waiters.push(resolve));
  }
}

const ready = (pool: Obj) => pool.status?.conditions?.find((c) => c.type === "Ready");

if (!clusterctl) {
  console.warn(
    "\n!!! SKIPPED BACKEND: clusterctl move of live pools is NOT judged (no kube-apiserver/etcd, CAPI manager or clusterctl; run `./dev controlplane --capi`).\n",
  );
}

describe.skipIf(!clusterctl)("clusterctl move of live pools (real clusterctl, real core)", () => {
  const cloud = new FakeScalingCloud({ clock: new RealClock({ speed: 40 }), seed: 7 });
  const gate = new Gate();
  const planes: ControlPlane[] = [];
  const managers: Manager[] = [];
  let a: KubeClient;
  let b: KubeClient;
  const group = (pool: string) =>
    resourceName({ namespace: NAMESPACE, name: pool, clusterName: CLUSTER, uid: "" });

  async function startProvider(plane: ControlPlane, name: string) {
    const plain = fakeCloudDriver(cloud.client, { defaultZones: ["zone-a"], busyRetryMs: 100 });
    const driver: PoolDriver<never, never> = {
      ...(plain as unknown as PoolDriver<never, never>),
      updateGroup: async (ctx, update) => {
        await gate.pass();
        return (plain as unknown as PoolDriver<never, never>).updateGroup(ctx, update);
      },
    };
    const manager = new Manager({
      kubeConfig: plane.kubeConfig,
      name,
      logger: { level: "silent" },
    });
    machinePoolController(driver, {
      manager,
      kind: FakeCloudMachinePool,
      pollIntervalMs: 100,
      resyncPeriodMs: 1000,
      readiness: "instance",
    } as never);
    void manager.start();
    await manager.elected();
    managers.push(manager);
  }

  async function prepare(plane: ControlPlane) {
    await plane.installCRDs([externalControlPlaneCrd(), FakeCloudMachinePool.crd]);
    const capi = readdirSync(capiCrdsFolder)
      .filter((file) => file.endsWith(".yaml"))
      .map((file) => {
        const [group, plural] = file.replace(/\.yaml$/, "").split("_") as [string, string];
        return `${plural}.${group}`;
      });
    const providers: ClusterctlProvider[] = [
      {
        name: "cluster-api",
        type: "CoreProvider",
        version: capiRelease(),
        namespace: "capi-system",
        crds: capi,
      },
      {
        name: "fake",
        type: "InfrastructureProvider",
        version: "v0.1.0",
        namespace: "fake-system",
        crds: [
          `${FakeCloudMachinePool.plural}.${FakeCloudMachinePool.group}`,
          "externalcontrolplanes.controlplane.cluster.x-k8s.io",
        ],
      },
    ];
    const client = new KubeClient(plane.kubeConfig, { fieldManager: "move-test" });
    for (const ns of ["capi-system", "fake-system"]) {
      await client
        .create(
          { group: "", version: "v1", kind: "Namespace", plural: "namespaces", scope: "Cluster" },
          {
            apiVersion: "v1",
            kind: "Namespace",
            metadata: { name: ns },
          },
        )
        .catch(() => undefined);
    }
    await prepareForClusterctl(plane.kubeConfig, (crds) => plane.installCRDs(crds), providers);
    return client;
  }

  async function createPool(name: string, replicas: number) {
    await a.create(Pools, {
      apiVersion: FakeCloudMachinePool.apiVersion,
      kind: FakeCloudMachinePool.kind,
      metadata: { name, namespace: NAMESPACE },
      spec: { instanceType: "small", minSize: 0, maxSize: 10 },
    });
    await a.create(MachinePools, {
      apiVersion: "cluster.x-k8s.io/v1beta2",
      kind: "MachinePool",
      metadata: { name, namespace: NAMESPACE },
      spec: {
        clusterName: CLUSTER,
        replicas,
        template: {
          spec: {
            clusterName: CLUSTER,
            bootstrap: { dataSecretName: `${CLUSTER}-bootstrap` },
            infrastructureRef: {
              apiGroup: FakeCloudMachinePool.group,
              kind: FakeCloudMachinePool.kind,
              name,
            },
          },
        },
      },
    });
  }

  async function converged(client: KubeClient, name: string, replicas: number) {
    return until(`pool ${name} Ready with ${replicas}`, async () => {
      const pool = await client.get(Pools, { namespace: NAMESPACE, name });
      expect(ready(pool), JSON.stringify(ready(pool))).toMatchObject({ status: "True" });
      expect((pool.spec?.providerIDList as string[] | undefined)?.length).toBe(replicas);
      expect(pool.status?.replicas).toBe(replicas);
      return pool;
    });
  }

  beforeAll(async () => {
    planes.push(
      ...(await Promise.all([
        startControlPlane({ capiCore: true }),
        startControlPlane({ capiCore: true }),
      ])),
    );
    const [planeA, planeB] = planes as [ControlPlane, ControlPlane];
    [a, b] = await Promise.all([prepare(planeA), prepare(planeB)]);
    await Promise.all([
      startProvider(planeA, "fake-provider-a"),
      startProvider(planeB, "fake-provider-b"),
    ]);
    await a.create(Clusters, {
      apiVersion: "cluster.x-k8s.io/v1beta2",
      kind: "Cluster",
      metadata: { name: CLUSTER, namespace: NAMESPACE },
      spec: {
        infrastructureRef: {
          apiGroup: "infrastructure.cluster.x-k8s.io",
          kind: "DevCluster",
          name: CLUSTER,
        },
      },
    });
    await setExternalControlPlane(a, { namespace: NAMESPACE, name: CLUSTER });
    await markWorkloadClusterReady(a, { namespace: NAMESPACE, name: CLUSTER }, planeA.kubeConfig);
    // Owned by the Cluster, so clusterctl moves it with the Cluster's other descendants.
    const owner = await a.get(Clusters, { namespace: NAMESPACE, name: CLUSTER });
    await a.create(Secrets, {
      apiVersion: "v1",
      kind: "Secret",
      metadata: {
        ownerReferences: [
          {
            apiVersion: "cluster.x-k8s.io/v1beta2",
            kind: "Cluster",
            name: CLUSTER,
            uid: owner.metadata?.uid ?? "",
          },
        ],
        name: `${CLUSTER}-bootstrap`,
        namespace: NAMESPACE,
        labels: { "cluster.x-k8s.io/cluster-name": CLUSTER },
      },
      data: {
        value: Buffer.from("#cloud-config\n").toString("base64"),
        format: Buffer.from("cloud-config").toString("base64"),
      },
    } as Obj);
    await createPool("pool-1", 2);
    await createPool("pool-2", 1);
  }, 240_000);

  afterAll(async () => {
    gate.release();
    await Promise.all(managers.map((m) => m.stop().catch(() => undefined)));
    await Promise.all(planes.map((p) => p.stop().catch(() => undefined)));
  }, 60_000);

  it("waits on block-move, rebuilds status on the target, creates and terminates nothing", async () => {
    await converged(a, "pool-1", 2);
    await converged(a, "pool-2", 1);

    // A cloud call in flight: the pool says block-move until the call is over and its status written.
    gate.hold();
    const entered = gate.entered;
    await a.mergePatch(
      MachinePools,
      { namespace: NAMESPACE, name: "pool-1" },
      { spec: { replicas: 3 } },
    );
    await until("the held updateGroup", () => expect(gate.entered).toBeGreaterThan(entered));
    const blocked = await a.get(Pools, { namespace: NAMESPACE, name: "pool-1" });
    expect(blocked.metadata?.annotations?.["clusterctl.cluster.x-k8s.io/block-move"]).toBe(
      "capi-ts: updateGroup",
    );

    const [planeA, planeB] = planes as [ControlPlane, ControlPlane];
    const move = clusterctlMove({
      clusterctl: clusterctl as string,
      from: planeA.kubeConfig,
      to: planeB.kubeConfig,
      namespace: NAMESPACE,
    });
    await until(
      "clusterctl waiting on block-move",
      () =>
        expect(move.output()).toContain("Move blocked by clusterctl.cluster.x-k8s.io/block-move"),
      60_000,
    );
    // Held: nothing copied yet, the Cluster paused on A.
    await expect(b.get(Pools, { namespace: NAMESPACE, name: "pool-1" })).rejects.toSatisfy(
      isNotFound,
    );
    expect((await a.get(Clusters, { namespace: NAMESPACE, name: CLUSTER })).spec?.paused).toBe(
      true,
    );

    // While A is paused, pool-2's group goes away out of band: on B it must not come back.
    cloud.actors.deleteGroup(group("pool-2"));
    await until("pool-2's group gone", () =>
      expect(cloud.inspect.group(group("pool-2"))).toBeUndefined(),
    );

    gate.release();
    const result = await move.done;
    expect(result.code, result.stderr).toBe(0);
    const mark = cloud.lastCallSeq();
    const instancesAtMove = cloud.inspect.providerIds(group("pool-1")).sort();

    // Source copies gone, and their deletion did nothing in the cloud.
    await until("pools gone from A", async () => {
      await expect(a.get(Pools, { namespace: NAMESPACE, name: "pool-1" })).rejects.toSatisfy(
        isNotFound,
      );
    });
    expect(cloud.inspect.group(group("pool-1"))?.status).not.toBe("deleting");

    // B plays the infrastructure and control plane providers again (their status is not moved).
    await setExternalControlPlane(b, { namespace: NAMESPACE, name: CLUSTER });
    await markWorkloadClusterReady(b, { namespace: NAMESPACE, name: CLUSTER }, planeB.kubeConfig);

    const moved = await converged(b, "pool-1", 3);
    expect(moved.metadata?.uid).not.toBe(blocked.metadata?.uid);
    expect(moved.spec?.providerIDList).toEqual(
      [...cloud.inspect.providerIds(group("pool-1"))].sort(),
    );
    expect(moved.metadata?.annotations?.["clusterctl.cluster.x-k8s.io/block-move"]).toBeUndefined();

    const lost = await until("pool-2 GroupNotFound on B", async () => {
      const pool = await b.get(Pools, { namespace: NAMESPACE, name: "pool-2" });
      expect(ready(pool)).toMatchObject({ status: "False", reason: "GroupNotFound" });
      return pool;
    });
    expect(ready(lost)?.message).toContain(group("pool-2"));
    expect(cloud.inspect.group(group("pool-2"))).toBeUndefined();

    // Not one mutating cloud call since the move, by either provider.
    expect(cloud.calls({ afterSeq: mark, mutating: true })).toEqual([]);
    // Nothing terminated: every instance of the move is still there (the third may have launched since).
    expect(cloud.inspect.providerIds(group("pool-1"))).toEqual(
      expect.arrayContaining(instancesAtMove),
    );
  }, 200_000);
});
