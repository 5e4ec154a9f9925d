// Real CAPI core (CAPI's own manager, built by `./dev controlplane --capi` from the release the SDK
// targets, or the release CAPI_TS_CAPI_RELEASE names) on the real control plane with
// kube-controller-manager, its webhooks registered and a workload cluster it can reach: the judge the
// emulator and every provider are held to. Each test fails when core logs a reconcile error for the
// objects it created, or never gets where a healthy MachinePool gets; the last three need controllers
// the emulator does not have (MachineHealthCheck, topology, the garbage collector). Skipped, loudly,
// without core.

import { KubeClient } from "@capi-ts/sdk/runtime";
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from "vitest";
import {
  type CapiCore,
  type ControlPlane,
  capiCoreMissingReason,
  externalControlPlaneCrd,
  findCapiCoreBinary,
  findControlPlaneBinaries,
  markWorkloadClusterReady,
  realCapiRelease,
  startCapiCore,
  startControlPlane,
} from "../../src/index.js";
import {
  Clusters,
  createCluster,
  createPool,
  DevMachinePools,
  DevMachines,
  MachinePools,
  MachinePoolsV1beta1,
  Machines,
  type Obj,
  registerNode,
  setExternalControlPlane,
} from "../differential/support.js";
import { until } from "../support/eventually.js";
import { namespacedKind } from "../support/fixtures.js";

const binaries = findControlPlaneBinaries();
const release = realCapiRelease();
const haveCore = binaries !== undefined && findCapiCoreBinary(binaries) !== undefined;
if (!haveCore) {
  console.warn(
    `\n!!! SKIPPED BACKEND: real CAPI core ${release} is NOT checked (${binaries ? capiCoreMissingReason(binaries) : "no kube-apiserver/etcd: run `./dev controlplane --capi`"}).\n`,
  );
}
const MachineHealthChecks = namespacedKind<Obj>(
  "cluster.x-k8s.io",
  "v1beta2",
  "MachineHealthCheck",
  "machinehealthchecks",
);
const ClusterClasses = namespacedKind<Obj>(
  "cluster.x-k8s.io",
  "v1beta2",
  "ClusterClass",
  "clusterclasses",
);
const template = (group: string, kind: string, plural: string) =>
  namespacedKind<Obj>(group, "v1beta2", kind, plural);
const DevClusterTemplates = template(
  "infrastructure.cluster.x-k8s.io",
  "DevClusterTemplate",
  "devclustertemplates",
);
const DevMachineTemplates = template(
  "infrastructure.cluster.x-k8s.io",
  "DevMachineTemplate",
  "devmachinetemplates",
);
const DevMachinePoolTemplates = template(
  "infrastructure.cluster.x-k8s.io",
  "DevMachinePoolTemplate",
  "devmachinepooltemplates",
);
const KubeadmConfigTemplates = template(
  "bootstrap.cluster.x-k8s.io",
  "KubeadmConfigTemplate",
  "kubeadmconfigtemplates",
);
const KubeadmControlPlaneTemplates = template(
  "controlplane.cluster.x-k8s.io",
  "KubeadmControlPlaneTemplate",
  "kubeadmcontrolplanetemplates",
);
const KubeadmControlPlanes = template(
  "controlplane.cluster.x-k8s.io",
  "KubeadmControlPlane",
  "kubeadmcontrolplanes",
);
const conditionOf = (obj: Obj | undefined, type: string) =>
  (
    (obj?.status as { conditions?: { type: string; status: string; reason?: string }[] })
      ?.conditions ?? []
  ).find((c) => c.type === type);

const ns = "default";
/** Waits until `check` returns a value, failing at once when core has exited. */
function eventually<T>(
  what: string,
  check: () => Promise<T | undefined>,
  core: ControlPlane["capiCore"],
  timeoutMs = 60_000,
): Promise<T> {
  return until(
    async () => {
      if (core && !core.running) throw new Error(`CAPI's manager exited:\n${core.logTail(30)}`);
      return check();
    },
    what,
    timeoutMs,
    200,
  ) as Promise<T>;
}

describe.skipIf(!haveCore)(`real CAPI core ${release} on the real control plane`, () => {
  let cp: ControlPlane;
  let client: KubeClient;
  let bootstrap: CapiCore;
  const env = () => ({ client, kubeConfig: cp.kubeConfig });

  beforeAll(async () => {
    cp = await startControlPlane({ capiCore: true });
    await cp.installCRDs([externalControlPlaneCrd()]);
    client = new KubeClient(cp.kubeConfig, { fieldManager: "capi-core-test" });
    // Real core has no bootstrap provider; the stand-in plays kubeadm's bootstrap controller.
    bootstrap = await startCapiCore({ kubeConfig: cp.kubeConfig, machinePools: false });
  }, 240_000);

  afterAll(async () => {
    await bootstrap?.stop();
    await cp?.stop();
  }, 60_000);

  it("rejects, through its validating webhook, a MachinePool without bootstrap data or config", async () => {
    const attempt = client.create(MachinePools, {
      apiVersion: "cluster.x-k8s.io/v1beta2",
      kind: "MachinePool",
      metadata: { name: "no-bootstrap", namespace: ns },
      spec: {
        clusterName: "c0",
        template: {
          spec: {
            clusterName: "c0",
            bootstrap: {},
            infrastructureRef: {
              apiGroup: "infrastructure.cluster.x-k8s.io",
              kind: "DevMachinePool",
              name: "x",
            },
          },
        },
      },
    });
    await expect(attempt).rejects.toThrow(/bootstrap/i);
    await expect(attempt).rejects.toThrow(/validation\.machinepool\.cluster\.x-k8s\.io/);
  });

  it("defaults through its mutating webhook and converts to v1beta1 through its conversion webhook", async () => {
    await createCluster(env(), "c-webhooks");
    await createPool(env(), "c-webhooks", "webhooks", 1);
    const pool = await client.get(MachinePools, { namespace: ns, name: "webhooks" });
    // The defaulting webhook adds the cluster-name label (CAPI's MachinePool defaulter).
    expect(pool.metadata?.labels?.["cluster.x-k8s.io/cluster-name"]).toBe("c-webhooks");
    const old = (await client.get(MachinePoolsV1beta1, {
      namespace: ns,
      name: "webhooks",
    })) as Obj & {
      spec: { template: { spec: { infrastructureRef: { apiVersion?: string; kind?: string } } } };
    };
    expect(old.apiVersion).toBe("cluster.x-k8s.io/v1beta1");
    // v1beta1 references carry apiVersion; the converter looked it up from the CRD's contract label.
    expect(old.spec.template.spec.infrastructureRef).toMatchObject({
      apiVersion: "infrastructure.cluster.x-k8s.io/v1beta2",
      kind: "DevMachinePool",
    });
  }, 30_000);

  it("takes a MachinePool to Running with nodeRefs from the workload cluster, without a reconcile error", async () => {
    onTestFailed(() => console.error(`core's log (last lines):\n${cp.capiCore?.logTail(60)}`));
    await createCluster(env(), "c1");
    await createPool(env(), "c1", "pool", 2);

    // Core adopts the InfraMachinePool and copies the bootstrap data name from the KubeadmConfig.
    await eventually(
      "the MachinePool owns its DevMachinePool and has bootstrap data",
      async () => {
        const infra = await client.get(DevMachinePools, { namespace: ns, name: "pool" });
        const mp = await client.get(MachinePools, { namespace: ns, name: "pool" });
        const owned = infra.metadata?.ownerReferences?.some((r) => r.kind === "MachinePool");
        const data = (
          mp.spec as { template?: { spec?: { bootstrap?: { dataSecretName?: string } } } }
        ).template?.spec?.bootstrap?.dataSecretName;
        return owned && data ? true : undefined;
      },
      cp.capiCore,
    );

    // The provider's part, played by hand: provisioned, two instances, and their Nodes join.
    const ids = ["dev:///pool-a", "dev:///pool-b"];
    await client.mergePatch(
      DevMachinePools,
      { namespace: ns, name: "pool" },
      { spec: { providerIDList: ids } },
    );
    await client.mergePatchStatus(
      DevMachinePools,
      { namespace: ns, name: "pool" },
      { status: { ready: true, replicas: 2, initialization: { provisioned: true } } },
    );
    await registerNode(env(), "pool-a", ids[0] as string);
    await registerNode(env(), "pool-b", ids[1] as string);

    const running = await eventually(
      "the MachinePool is Running with 2 ready replicas",
      async () => {
        const mp = await client.get(MachinePools, { namespace: ns, name: "pool" });
        const status = mp.status as {
          phase?: string;
          readyReplicas?: number;
          nodeRefs?: unknown[];
        };
        return status.phase === "Running" && status.nodeRefs?.length === 2 ? mp : undefined;
      },
      cp.capiCore,
    );
    expect((running.spec as { providerIDList?: string[] }).providerIDList).toEqual(ids);
    expect(running.status?.replicas).toBe(2);
    expect(
      (running.status as { initialization?: Record<string, boolean> }).initialization,
    ).toMatchObject({ infrastructureProvisioned: true, bootstrapDataSecretCreated: true });
    // Core may try the pool before its ClusterCache connected, before its own cache has seen the
    // Cluster created a moment earlier, or lose an optimistic-concurrency race with the bootstrap
    // provider and retry (CAPI logs all three); nothing else fails.
    const transient = [
      "connection to the workload cluster is down",
      "the object has been modified",
      'Cluster.cluster.x-k8s.io "c1" not found',
    ];
    const errors = cp.capiCore?.reconcileErrors({ kind: "MachinePool", name: "pool" }) ?? [];
    expect(
      errors.filter((e) => !transient.some((t) => e.error.includes(t))).map((e) => e.error),
    ).toEqual([]);
    const settled = Date.now();
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    const later = (
      cp.capiCore?.reconcileErrors({ kind: "MachinePool", name: "pool" }) ?? []
    ).filter((e) => e.at.getTime() >= settled - 1_000);
    expect(later.map((e) => e.error)).toEqual([]);
  }, 90_000);

  it("reports a workload cluster it cannot reach and recovers once the kubeconfig Secret is there", async () => {
    onTestFailed(() => console.error(`core's log (last lines):\n${cp.capiCore?.logTail(60)}`));
    await createCluster(env(), "c2", { kubeconfigSecret: false });
    await createPool(env(), "c2", "unreachable", 1);
    await client.mergePatch(
      DevMachinePools,
      { namespace: ns, name: "unreachable" },
      { spec: { providerIDList: ["dev:///unreachable-a"] } },
    );
    await client.mergePatchStatus(
      DevMachinePools,
      { namespace: ns, name: "unreachable" },
      { status: { ready: true, replicas: 1, initialization: { provisioned: true } } },
    );
    await registerNode(env(), "unreachable-a", "dev:///unreachable-a");
    const errors = await eventually(
      "core logs that the workload cluster is not reachable",
      async () => {
        const found = cp.capiCore?.reconcileErrors({ kind: "MachinePool", name: "unreachable" });
        return found && found.length > 0 ? found : undefined;
      },
      cp.capiCore,
    );
    expect(errors.map((e) => e.error).join("\n")).toMatch(
      /connection to the workload cluster is down/,
    );
    const stuck = await client.get(MachinePools, { namespace: ns, name: "unreachable" });
    expect((stuck.status as { nodeRefs?: unknown[] }).nodeRefs ?? []).toEqual([]);

    await markWorkloadClusterReady(client, { namespace: ns, name: "c2" }, cp.kubeConfig);
    await eventually(
      "the MachinePool gets its nodeRef once the kubeconfig Secret exists",
      async () => {
        const mp = await client.get(MachinePools, { namespace: ns, name: "unreachable" });
        return (mp.status as { nodeRefs?: unknown[] }).nodeRefs?.length === 1 ? mp : undefined;
      },
      cp.capiCore,
      120_000,
    );
  }, 180_000);

  /** Core's failed reconciles of any kind for objects with these names, beyond a healthy start's. */
  const errorsAbout = (names: readonly string[]) =>
    (cp.capiCore?.reconcileErrors({ namespace: ns }) ?? [])
      .filter((e) => names.includes(e.name))
      .filter(
        (e) =>
          !["connection to the workload cluster is down", "the object has been modified"].some(
            (t) => e.error.includes(t),
          ) && !/Cluster\.cluster\.x-k8s\.io "[^"]+" not found/.test(e.error),
      )
      .map((e) => `${e.controller} ${e.kind} ${e.name}: ${e.error}`);

  /**
   * A Cluster with an externally managed control plane and a MachinePool of `replicas` MachinePool
   * Machines: the test plays the provider kit (one provisioned DevMachine per instance, labelled for
   * the pool, owned by the DevMachinePool) and the kubelets (Ready Nodes). Resolves once core made
   * the Machines and gave each its nodeRef.
   */
  async function poolWithMachines(cluster: string, pool: string, replicas: number) {
    await createCluster(env(), cluster);
    await setExternalControlPlane(env(), cluster);
    await createPool(env(), cluster, pool, replicas);
    const imp = await client.get(DevMachinePools, { namespace: ns, name: pool });
    const ids = Array.from({ length: replicas }, (_, i) => `dev:///${pool}-${i}`);
    for (const [i, providerID] of ids.entries()) {
      const name = `${pool}-${i}`;
      await client.create(DevMachines, {
        apiVersion: "infrastructure.cluster.x-k8s.io/v1beta2",
        kind: "DevMachine",
        metadata: {
          name,
          namespace: ns,
          labels: { "cluster.x-k8s.io/cluster-name": cluster, "cluster.x-k8s.io/pool-name": pool },
          ownerReferences: [
            {
              apiVersion: "infrastructure.cluster.x-k8s.io/v1beta2",
              kind: "DevMachinePool",
              name: pool,
              uid: imp.metadata?.uid ?? "",
            },
          ],
        },
        spec: { providerID, backend: { docker: {} } },
      } as Obj);
      await client.mergePatchStatus(
        DevMachines,
        { namespace: ns, name },
        { status: { initialization: { provisioned: true } } },
      );
      await registerNode(env(), name, providerID);
    }
    await client.mergePatch(
      DevMachinePools,
      { namespace: ns, name: pool },
      { spec: { providerIDList: ids } },
    );
    await client.mergePatchStatus(
      DevMachinePools,
      { namespace: ns, name: pool },
      {
        status: {
          ready: true,
          replicas,
          initialization: { provisioned: true },
          infrastructureMachineKind: "DevMachine",
        },
      },
    );
    return eventually(
      `core made ${replicas} Machines for MachinePool ${pool}, each with a nodeRef`,
      async () => {
        const machines = (await client.list(Machines, { namespace: ns })).items.filter(
          (m) => m.metadata?.labels?.["cluster.x-k8s.io/pool-name"] === pool,
        );
        const withNode = machines.filter(
          (m) => (m.status as { nodeRef?: { name?: string } } | undefined)?.nodeRef?.name,
        );
        return withNode.length === replicas ? machines : undefined;
      },
      cp.capiCore,
      120_000,
    );
  }

  it("reconciles a MachineHealthCheck of a MachinePool's Machines: its status counts them healthy", async () => {
    onTestFailed(() => console.error(`core's log (last lines):\n${cp.capiCore?.logTail(60)}`));
    await poolWithMachines("c-mhc", "mhc", 2);
    await client.create(MachineHealthChecks, {
      apiVersion: "cluster.x-k8s.io/v1beta2",
      kind: "MachineHealthCheck",
      metadata: { name: "mhc", namespace: ns },
      spec: {
        clusterName: "c-mhc",
        selector: { matchLabels: { "cluster.x-k8s.io/pool-name": "mhc" } },
        checks: {
          unhealthyNodeConditions: [
            { type: "Ready", status: "Unknown", timeoutSeconds: 300 },
            { type: "Ready", status: "False", timeoutSeconds: 300 },
          ],
        },
      },
    } as Obj);
    const checked = await eventually(
      "the MachineHealthCheck counts both Machines, healthy",
      async () => {
        const mhc = await client.get(MachineHealthChecks, { namespace: ns, name: "mhc" });
        const status = mhc.status as
          | { expectedMachines?: number; currentHealthy?: number; targets?: string[] }
          | undefined;
        return status?.expectedMachines === 2 && status.currentHealthy === 2 ? mhc : undefined;
      },
      cp.capiCore,
      120_000,
    );
    expect(
      [...((checked.status as { targets?: string[] }).targets ?? [])].sort(),
      "the MachinePool's Machines are its targets",
    ).toHaveLength(2);
    // Core marks each Machine it checked.
    const machines = (await client.list(Machines, { namespace: ns })).items.filter(
      (m) => m.metadata?.labels?.["cluster.x-k8s.io/pool-name"] === "mhc",
    );
    for (const machine of machines) {
      expect(conditionOf(machine, "HealthCheckSucceeded")?.status, machine.metadata?.name).toBe(
        "True",
      );
    }
    expect(errorsAbout(["mhc", "c-mhc", ...machines.map((m) => m.metadata?.name ?? "")])).toEqual(
      [],
    );
  }, 240_000);

  it("removes a deleted MachinePool's Machines through the garbage collector", async () => {
    onTestFailed(() => console.error(`core's log (last lines):\n${cp.capiCore?.logTail(60)}`));
    expect(cp.capabilities.controllers, "kube-controller-manager runs").toBe(true);
    const machines = await poolWithMachines("c-gc", "gc", 2);
    // Core's MachinePool controller deletes only the bootstrap and infrastructure references; the
    // Machines go because their owner (the MachinePool, their controller) is gone.
    for (const machine of machines) {
      expect(machine.metadata?.ownerReferences).toContainEqual(
        expect.objectContaining({ kind: "MachinePool", name: "gc", controller: true }),
      );
    }
    await client.delete(MachinePools, { namespace: ns, name: "gc" });
    await eventually(
      "the MachinePool is gone",
      async () =>
        (await client.get(MachinePools, { namespace: ns, name: "gc" }).catch(() => undefined))
          ? undefined
          : true,
      cp.capiCore,
      120_000,
    );
    await eventually(
      "its Machines are gone (collected, then deleted by core's Machine controller)",
      async () => {
        const left = (await client.list(Machines, { namespace: ns })).items.filter(
          (m) => m.metadata?.labels?.["cluster.x-k8s.io/pool-name"] === "gc",
        );
        return left.length === 0 ? true : undefined;
      },
      cp.capiCore,
      120_000,
    );
    expect(errorsAbout(["gc", "c-gc"])).toEqual([]);
  }, 300_000);

  it("reconciles a Cluster with spec.topology: the topology controller creates its objects and its MachinePool from the ClusterClass", async () => {
    onTestFailed(() => console.error(`core's log (last lines):\n${cp.capiCore?.logTail(80)}`));
    const create = (resource: typeof DevClusterTemplates, name: string, spec: unknown) =>
      client.create(resource, {
        apiVersion: `${resource.group}/${resource.version}`,
        kind: resource.kind,
        metadata: { name, namespace: ns },
        spec,
      } as Obj);
    await create(DevClusterTemplates, "cc-cluster", {
      template: { spec: { backend: { docker: {} } } },
    });
    await create(KubeadmControlPlaneTemplates, "cc-control-plane", {
      template: { spec: { kubeadmConfigSpec: { format: "cloud-config" } } },
    });
    await create(DevMachineTemplates, "cc-control-plane-machine", {
      template: { spec: { backend: { docker: {} } } },
    });
    await create(KubeadmConfigTemplates, "cc-pool-bootstrap", {
      template: { spec: { format: "cloud-config" } },
    });
    await create(DevMachinePoolTemplates, "cc-pool", {
      template: { spec: { backend: { docker: {} } } },
    });
    const ref = (resource: typeof DevClusterTemplates, name: string) => ({
      templateRef: {
        apiVersion: `${resource.group}/${resource.version}`,
        kind: resource.kind,
        name,
      },
    });
    await client.create(ClusterClasses, {
      apiVersion: "cluster.x-k8s.io/v1beta2",
      kind: "ClusterClass",
      metadata: { name: "cc", namespace: ns },
      spec: {
        infrastructure: ref(DevClusterTemplates, "cc-cluster"),
        controlPlane: {
          ...ref(KubeadmControlPlaneTemplates, "cc-control-plane"),
          machineInfrastructure: ref(DevMachineTemplates, "cc-control-plane-machine"),
        },
        workers: {
          machinePools: [
            {
              class: "default",
              bootstrap: ref(KubeadmConfigTemplates, "cc-pool-bootstrap"),
              infrastructure: ref(DevMachinePoolTemplates, "cc-pool"),
            },
          ],
        },
      },
    } as Obj);
    // The Cluster webhook checks a topology against a ClusterClass its controller reconciled.
    await eventually(
      "the ClusterClass controller reconciled the ClusterClass",
      async () => {
        const cc = await client.get(ClusterClasses, { namespace: ns, name: "cc" });
        const observed = (cc.status as { observedGeneration?: number } | undefined)
          ?.observedGeneration;
        return observed === cc.metadata?.generation ? cc : undefined;
      },
      cp.capiCore,
    );
    await client.create(Clusters, {
      apiVersion: "cluster.x-k8s.io/v1beta2",
      kind: "Cluster",
      metadata: { name: "c-topology", namespace: ns },
      spec: {
        topology: {
          classRef: { name: "cc" },
          version: "v1.34.1",
          controlPlane: { replicas: 1 },
          workers: { machinePools: [{ class: "default", name: "workers", replicas: 2 }] },
        },
      },
    } as Obj);
    const cluster = await eventually(
      "the topology controller set the Cluster's infrastructure and control plane references",
      async () => {
        const c = await client.get(Clusters, { namespace: ns, name: "c-topology" });
        const spec = c.spec as {
          infrastructureRef?: { kind?: string; name?: string };
          controlPlaneRef?: { kind?: string; name?: string };
        };
        return spec.infrastructureRef?.name && spec.controlPlaneRef?.name ? c : undefined;
      },
      cp.capiCore,
      120_000,
    );
    const spec = cluster.spec as {
      infrastructureRef: { kind: string; name: string };
      controlPlaneRef: { kind: string; name: string };
    };
    expect(spec.infrastructureRef.kind).toBe("DevCluster");
    expect(spec.controlPlaneRef.kind).toBe("KubeadmControlPlane");
    const controlPlane = await client.get(KubeadmControlPlanes, {
      namespace: ns,
      name: spec.controlPlaneRef.name,
    });
    expect((controlPlane.spec as { version?: string; replicas?: number }).version).toBe("v1.34.1");
    expect((controlPlane.spec as { replicas?: number }).replicas).toBe(1);
    // The test plays the infrastructure and control plane providers (no KCP runs): up and initialized.
    await markWorkloadClusterReady(client, { namespace: ns, name: "c-topology" }, cp.kubeConfig);
    await client.mergePatchStatus(
      KubeadmControlPlanes,
      { namespace: ns, name: spec.controlPlaneRef.name },
      {
        status: {
          initialization: { controlPlaneInitialized: true },
          version: "v1.34.1",
          replicas: 1,
          readyReplicas: 1,
          availableReplicas: 1,
          upToDateReplicas: 1,
          observedGeneration: controlPlane.metadata?.generation,
        },
      },
    );
    // Workers come once the control plane is initialized: a MachinePool from the class's templates.
    const pool = await eventually(
      "the topology controller created the Cluster's MachinePool",
      async () =>
        (await client.list(MachinePools, { namespace: ns })).items.find(
          (mp) =>
            mp.metadata?.labels?.["cluster.x-k8s.io/cluster-name"] === "c-topology" &&
            mp.metadata?.labels?.["topology.cluster.x-k8s.io/owned"] === "",
        ),
      cp.capiCore,
      120_000,
    );
    expect(pool.metadata?.labels?.["topology.cluster.x-k8s.io/pool-name"]).toBe("workers");
    expect((pool.spec as { replicas?: number }).replicas).toBe(2);
    const infra = (
      pool.spec as { template: { spec: { infrastructureRef: { kind: string; name: string } } } }
    ).template.spec.infrastructureRef;
    expect(infra.kind).toBe("DevMachinePool");
    await client.get(DevMachinePools, { namespace: ns, name: infra.name });
    const reconciled = await eventually(
      "the Cluster's TopologyReconciled condition is True",
      async () => {
        const c = await client.get(Clusters, { namespace: ns, name: "c-topology" });
        return conditionOf(c, "TopologyReconciled")?.status === "True" ? c : undefined;
      },
      cp.capiCore,
      120_000,
    );
    expect(conditionOf(reconciled, "TopologyReconciled")?.reason).toBeDefined();
    expect(errorsAbout(["c-topology", "cc", pool.metadata?.name ?? ""])).toEqual([]);
  }, 300_000);
});
