// CAPI core's own MachinePool controller (built by `./dev controlplane --capi` from
// sigs.k8s.io/cluster-api) against the real control plane: the reference our CAPI emulator and the
// example provider are judged by. Skipped, loudly, when either is missing.
import { existsSync, readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { CustomObjectsApi, PatchStrategy, setHeaderOptions } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from "vitest";
import { parse } from "yaml";
import { GuardedProcess } from "../../src/controlplane/process.js";
import { type ControlPlane, findControlPlaneBinaries, startControlPlane } from "../../src/index.js";
import { capiCrd } from "../support/backend.js";

const binaries = findControlPlaneBinaries();
const controllerBinary =
  binaries && join(dirname(binaries.kubeApiServer), "machinepool-controller");
const haveController = controllerBinary !== undefined && existsSync(controllerBinary);
if (!haveController) {
  console.warn(
    "\n!!! SKIPPED: CAPI core's MachinePool controller is NOT checked (no kube-apiserver/etcd or no machinepool-controller; run `./dev controlplane --capi`).\n",
  );
}

const ns = "default";
const mergePatch = setHeaderOptions("Content-Type", PatchStrategy.MergePatch);
const core = { group: "cluster.x-k8s.io", version: "v1beta2", namespace: ns };
const infra = { group: "infrastructure.cluster.x-k8s.io", version: "v1beta2", namespace: ns };

type Obj = {
  metadata: {
    finalizers?: string[];
    ownerReferences?: { kind: string; name: string }[];
    labels?: Record<string, string>;
  };
  spec?: { providerIDList?: string[] };
  status?: {
    phase?: string;
    replicas?: number;
    initialization?: { infrastructureProvisioned?: boolean; bootstrapDataSecretCreated?: boolean };
  };
};

let controller: GuardedProcess | undefined;

async function eventually<T>(check: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    if (controller && !controller.running)
      throw new Error(`machinepool-controller exited with ${controller.exitCode}`);
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline)
      throw new Error(`not reached within ${timeoutMs} ms (${String(last)})`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

describe.skipIf(!haveController)(
  "CAPI core's MachinePool controller on the real control plane",
  () => {
    let api: ControlPlane;
    let workDir: string;

    beforeAll(async () => {
      api = await startControlPlane();
      // An infrastructure CRD must say which of its versions implement which contract (CAPI reads the
      // label to find the version of an apiGroup/kind reference); the generated bases lack it.
      const devMachinePools = parse(
        readFileSync(capiCrd("infrastructure.cluster.x-k8s.io_devmachinepools.yaml"), "utf8"),
      ) as { metadata: { labels?: Record<string, string> } };
      devMachinePools.metadata.labels = { "cluster.x-k8s.io/v1beta2": "v1beta2" };
      await api.installCRDs([
        capiCrd("cluster.x-k8s.io_clusters.yaml"),
        capiCrd("cluster.x-k8s.io_machinepools.yaml"),
        capiCrd("cluster.x-k8s.io_machines.yaml"),
        devMachinePools,
      ]);
      workDir = await mkdtemp(join(tmpdir(), "capi-ts-capi-core-"));
      const kubeconfig = join(workDir, "kubeconfig");
      await api.writeKubeconfig(kubeconfig);
      controller = GuardedProcess.start(
        "machinepool-controller",
        controllerBinary as string,
        [`--kubeconfig=${kubeconfig}`],
        join(workDir, "controller.log"),
        5_000,
      );
    }, 180_000);

    afterAll(async () => {
      await controller?.stop();
      await api?.stop();
      if (workDir) await rm(workDir, { recursive: true, force: true });
    }, 60_000);

    it("adopts a MachinePool and mirrors the InfraMachinePool's provisioning", async () => {
      onTestFailed(() => {
        console.error(`machinepool-controller log (last lines):\n${controller?.logTail(80)}`);
      });
      const custom = api.kubeConfig.makeApiClient(CustomObjectsApi);
      await custom.createNamespacedCustomObject({
        ...core,
        plural: "clusters",
        body: {
          apiVersion: "cluster.x-k8s.io/v1beta2",
          kind: "Cluster",
          metadata: { name: "c1" },
          spec: { infrastructureRef: { apiGroup: infra.group, kind: "DevCluster", name: "c1" } },
        },
      });
      await custom.createNamespacedCustomObject({
        ...infra,
        plural: "devmachinepools",
        body: {
          apiVersion: "infrastructure.cluster.x-k8s.io/v1beta2",
          kind: "DevMachinePool",
          metadata: { name: "pool" },
          spec: { backend: { docker: {} } },
        },
      });
      await custom.createNamespacedCustomObject({
        ...core,
        plural: "machinepools",
        body: {
          apiVersion: "cluster.x-k8s.io/v1beta2",
          kind: "MachinePool",
          metadata: { name: "pool" },
          spec: {
            clusterName: "c1",
            replicas: 2,
            template: {
              spec: {
                clusterName: "c1",
                bootstrap: { dataSecretName: "pool-bootstrap" },
                infrastructureRef: { apiGroup: infra.group, kind: "DevMachinePool", name: "pool" },
              },
            },
          },
        },
      });
      const get = (plural: string, group = core) =>
        custom.getNamespacedCustomObject({ ...group, plural, name: "pool" }) as Promise<Obj>;

      const adopted = await eventually(async () => {
        const pool = await get("machinepools");
        return pool.metadata.finalizers?.includes("machinepool.cluster.x-k8s.io") &&
          pool.metadata.ownerReferences?.some(
            (ref) => ref.kind === "Cluster" && ref.name === "c1",
          ) &&
          pool.status?.phase
          ? pool
          : undefined;
      });
      expect(adopted.metadata.labels?.["cluster.x-k8s.io/cluster-name"]).toBe("c1");
      expect(adopted.status?.initialization?.infrastructureProvisioned).toBeFalsy();

      // CAPI core makes the MachinePool owner of its InfraMachinePool.
      const devPool = await eventually(async () => {
        const pool = await get("devmachinepools", infra);
        return pool.metadata.ownerReferences?.some((ref) => ref.kind === "MachinePool")
          ? pool
          : undefined;
      });
      expect(devPool.metadata.ownerReferences?.map((ref) => ref.name)).toContain("pool");

      // The provider reports ready: CAPI core's MachinePool controller (1.13) reads `status.ready` of the
      // InfraMachinePool, not `status.initialization.provisioned`, and mirrors it into the MachinePool.
      await custom.patchNamespacedCustomObjectStatus(
        { ...infra, plural: "devmachinepools", name: "pool", body: { status: { ready: true } } },
        mergePatch,
      );
      const provisioned = await eventually(async () => {
        const pool = await get("machinepools");
        return pool.status?.initialization?.infrastructureProvisioned === true ? pool : undefined;
      });
      expect(provisioned.status?.phase).toBeTruthy();
    }, 180_000);
  },
);
