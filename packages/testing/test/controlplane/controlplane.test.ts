import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  ApiException,
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  PatchStrategy,
  setHeaderOptions,
  type V1Secret,
} from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type ControlPlane,
  findControlPlaneBinaries,
  startControlPlane,
} from "../../src/controlplane/index.js";
import { capiCrdFile } from "../../src/crds.js";

const machinePoolCRD = capiCrdFile("cluster.x-k8s.io_machinepools.yaml");

const binaries = findControlPlaneBinaries();
if (!binaries) {
  console.warn(
    "\n!!! SKIPPED: real control plane tests (no kube-apiserver/etcd). Run `./dev controlplane` or set KUBEBUILDER_ASSETS.\n",
  );
}

async function status(promise: Promise<unknown>): Promise<number> {
  try {
    await promise;
    return 200;
  } catch (error) {
    if (error instanceof ApiException) return error.code;
    throw error;
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe("startControlPlane without binaries", () => {
  it("says how to get them", async () => {
    const empty = await mkdtemp(join(tmpdir(), "capi-ts-empty-"));
    try {
      await expect(startControlPlane({ binaryDir: empty })).rejects.toThrow(/\.\/dev controlplane/);
      await expect(startControlPlane({ binaryDir: empty })).rejects.toThrow(/kube-apiserver/);
    } finally {
      await rm(empty, { recursive: true });
    }
  });
});

describe.skipIf(!binaries)("startControlPlane (real kube-apiserver + etcd)", () => {
  let api: ControlPlane;

  beforeAll(async () => {
    api = await startControlPlane();
  }, 180_000);

  afterAll(async () => {
    await api?.stop();
  }, 60_000);

  it("serves over verified TLS on loopback and reports its version", async () => {
    expect(api.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    expect(api.version).toMatch(/^v1\.\d+\.\d+/);
    expect(api.backend).toBe("real");
    expect(api.capabilities).toMatchObject({
      requestLog: false,
      faults: false,
      controllers: binaries?.kubeControllerManager !== undefined,
    });
    const cluster = api.kubeConfig.getCurrentCluster();
    expect(cluster?.skipTLSVerify).toBeFalsy();
    expect(cluster?.caData).toBeTruthy();
  });

  it("creates, reads, updates, patches and deletes a Secret through client-node", async () => {
    const core = api.kubeConfig.makeApiClient(CoreV1Api);
    const body: V1Secret = {
      metadata: { name: "crud", namespace: "default", labels: { a: "1" } },
      stringData: { password: "hunter2" },
    };
    const created = await core.createNamespacedSecret({ namespace: "default", body });
    expect(created.metadata?.uid).toBeTruthy();
    expect(created.data?.password).toBe(Buffer.from("hunter2").toString("base64"));

    const read = await core.readNamespacedSecret({ name: "crud", namespace: "default" });
    expect(read.metadata?.resourceVersion).toBe(created.metadata?.resourceVersion);

    read.metadata = { ...read.metadata, labels: { a: "2" } };
    const updated = await core.replaceNamespacedSecret({
      name: "crud",
      namespace: "default",
      body: read,
    });
    expect(updated.metadata?.labels).toEqual({ a: "2" });
    expect(updated.metadata?.resourceVersion).not.toBe(created.metadata?.resourceVersion);

    // A stale resourceVersion is a conflict.
    expect(
      await status(
        core.replaceNamespacedSecret({ name: "crud", namespace: "default", body: created }),
      ),
    ).toBe(409);

    await core.deleteNamespacedSecret({ name: "crud", namespace: "default" });
    expect(await status(core.readNamespacedSecret({ name: "crud", namespace: "default" }))).toBe(
      404,
    );
  });

  it("installs a CAPI CRD and serves MachinePools, status subresource included", async () => {
    await api.installCRDs(machinePoolCRD);
    const custom = api.kubeConfig.makeApiClient(CustomObjectsApi);
    const target = {
      group: "cluster.x-k8s.io",
      version: "v1beta2",
      namespace: "default",
      plural: "machinepools",
    };
    const body = {
      apiVersion: "cluster.x-k8s.io/v1beta2",
      kind: "MachinePool",
      metadata: { name: "pool-a", namespace: "default" },
      spec: {
        clusterName: "c1",
        replicas: 2,
        template: {
          spec: {
            clusterName: "c1",
            bootstrap: { dataSecretName: "bootstrap" },
            infrastructureRef: {
              apiGroup: "infrastructure.cluster.x-k8s.io",
              kind: "DevMachinePool",
              name: "pool-a",
            },
          },
        },
      },
    };
    const created = (await custom.createNamespacedCustomObject({
      ...target,
      body,
    })) as typeof body & {
      metadata: { uid?: string };
    };
    expect(created.metadata.uid).toBeTruthy();

    const statusPatched = (await custom.patchNamespacedCustomObjectStatus(
      {
        ...target,
        name: "pool-a",
        body: { status: { replicas: 2 } },
      },
      setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
    )) as { status?: { replicas?: number }; spec: { replicas: number } };
    expect(statusPatched.status?.replicas).toBe(2);
    expect(statusPatched.spec.replicas).toBe(2);

    // The schema is enforced: an unknown enum-free type error comes back as 422.
    expect(
      await status(
        custom.createNamespacedCustomObject({
          ...target,
          body: {
            ...body,
            metadata: { name: "pool-bad", namespace: "default" },
            spec: { ...body.spec, replicas: "two" },
          },
        }),
      ),
    ).toBe(422);

    await custom.deleteNamespacedCustomObject({ ...target, name: "pool-a" });
    expect(await status(custom.getNamespacedCustomObject({ ...target, name: "pool-a" }))).toBe(404);
  });

  it("installing the same CRD again replaces it and still waits until served", async () => {
    await api.installCRDs([machinePoolCRD]);
    const custom = api.kubeConfig.makeApiClient(CustomObjectsApi);
    const list = (await custom.listNamespacedCustomObject({
      group: "cluster.x-k8s.io",
      version: "v1beta2",
      namespace: "default",
      plural: "machinepools",
    })) as { items: unknown[] };
    expect(
      list.items.map((item) => (item as { metadata: { name: string } }).metadata.name),
    ).not.toContain("pool-a");
  });

  it.skipIf(!binaries?.kubeControllerManager)(
    "collects garbage: a deleted MachinePool's Machines go (kube-controller-manager)",
    async () => {
      await api.installCRDs([machinePoolCRD, capiCrdFile("cluster.x-k8s.io_machines.yaml")]);
      const custom = api.kubeConfig.makeApiClient(CustomObjectsApi);
      const at = (plural: string) => ({
        group: "cluster.x-k8s.io",
        version: "v1beta2",
        namespace: "default",
        plural,
      });
      const pool = (await custom.createNamespacedCustomObject({
        ...at("machinepools"),
        body: {
          apiVersion: "cluster.x-k8s.io/v1beta2",
          kind: "MachinePool",
          metadata: { name: "gc-pool" },
          spec: {
            clusterName: "c1",
            template: {
              spec: {
                clusterName: "c1",
                bootstrap: { dataSecretName: "bootstrap" },
                infrastructureRef: {
                  apiGroup: "infrastructure.cluster.x-k8s.io",
                  kind: "DevMachinePool",
                  name: "gc-pool",
                },
              },
            },
          },
        },
      })) as { metadata: { uid: string } };
      for (const name of ["gc-pool-0", "gc-pool-1"]) {
        await custom.createNamespacedCustomObject({
          ...at("machines"),
          body: {
            apiVersion: "cluster.x-k8s.io/v1beta2",
            kind: "Machine",
            metadata: {
              name,
              ownerReferences: [
                {
                  apiVersion: "cluster.x-k8s.io/v1beta2",
                  kind: "MachinePool",
                  name: "gc-pool",
                  uid: pool.metadata.uid,
                  controller: true,
                  blockOwnerDeletion: true,
                },
              ],
            },
            spec: {
              clusterName: "c1",
              bootstrap: { dataSecretName: "bootstrap" },
              infrastructureRef: {
                apiGroup: "infrastructure.cluster.x-k8s.io",
                kind: "DevMachine",
                name,
              },
            },
          },
        });
      }
      await custom.deleteNamespacedCustomObject({
        ...at("machinepools"),
        name: "gc-pool",
        propagationPolicy: "Background",
      });
      // The collector finds kinds of a new CRD at its next discovery (every 30 s), so allow two.
      const deadline = Date.now() + 90_000;
      let left: string[] = [];
      do {
        const list = (await custom.listNamespacedCustomObject(at("machines"))) as {
          items: { metadata: { name: string } }[];
        };
        left = list.items.map((m) => m.metadata.name).filter((n) => n.startsWith("gc-pool-"));
        if (left.length === 0) break;
        await new Promise((resolve) => setTimeout(resolve, 250));
      } while (Date.now() < deadline);
      expect(left, `kube-controller-manager log: ${api.controllerManagerLog}`).toEqual([]);
    },
    120_000,
  );

  it.skipIf(!binaries?.kubeControllerManager)(
    "finalizes a deleted namespace: its content goes, then the namespace (404)",
    async () => {
      const core = api.kubeConfig.makeApiClient(CoreV1Api);
      await core.createNamespace({ body: { metadata: { name: "ns-gone" } } });
      await core.createNamespacedConfigMap({
        namespace: "ns-gone",
        body: { metadata: { name: "content" } },
      });
      await core.deleteNamespace({ name: "ns-gone" });
      const deadline = Date.now() + 60_000;
      let answer = 200;
      while (answer !== 404 && Date.now() < deadline) {
        answer = await status(core.readNamespace({ name: "ns-gone" }));
        if (answer !== 404) await new Promise((resolve) => setTimeout(resolve, 250));
      }
      expect(answer).toBe(404);
    },
    90_000,
  );

  it("refuses a document that is not a CRD, naming it", async () => {
    await expect(
      api.installCRDs({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "x" } }),
    ).rejects.toThrow(/expected an apiextensions.k8s.io\/v1 CustomResourceDefinition.*ConfigMap/);
  });

  it("writes a kubeconfig file that client-node loads", async () => {
    const dir = await mkdtemp(join(tmpdir(), "capi-ts-kubeconfig-"));
    try {
      const file = join(dir, "kubeconfig");
      await api.writeKubeconfig(file);
      const loaded = new KubeConfig();
      loaded.loadFromFile(file);
      const namespaces = await loaded.makeApiClient(CoreV1Api).listNamespace();
      expect(namespaces.items.map((ns) => ns.metadata?.name)).toContain("kube-system");
    } finally {
      await rm(dir, { recursive: true });
    }
  });

  it("restart() keeps the state and serves again on the same URL", async () => {
    const core = api.kubeConfig.makeApiClient(CoreV1Api);
    await core.createNamespacedConfigMap({
      namespace: "default",
      body: { metadata: { name: "survives" }, data: { k: "v" } },
    });
    await api.restart();
    const read = await core.readNamespacedConfigMap({ name: "survives", namespace: "default" });
    expect(read.data).toEqual({ k: "v" });
  }, 120_000);
});

describe.skipIf(!binaries)("startControlPlane lifecycle", () => {
  it("runs without kube-controller-manager on request, and says so in its capabilities", async () => {
    const api = await startControlPlane({ controllerManager: false });
    try {
      expect(api.capabilities.controllers).toBe(false);
      expect(api.controllerManagerLog).toBeUndefined();
    } finally {
      await api.stop();
    }
  }, 180_000);

  it("refuses controllerManager: true when there is no kube-controller-manager, saying how to build it", async () => {
    if (!binaries) return;
    const { symlink } = await import("node:fs/promises");
    const folder = await mkdtemp(join(tmpdir(), "capi-ts-no-kcm-"));
    try {
      await symlink(binaries.kubeApiServer, join(folder, "kube-apiserver"));
      await symlink(binaries.etcd, join(folder, "etcd"));
      await expect(
        startControlPlane({ binaryDir: folder, controllerManager: true }),
      ).rejects.toThrow(/no kube-controller-manager.*\.\/dev controlplane/);
    } finally {
      await rm(folder, { recursive: true, force: true });
    }
  });

  it("stop() ends every process and removes the data folder", async () => {
    const api = await startControlPlane();
    const dataDir = api.dataDir;
    await api.stop();
    await api.stop();
    const { existsSync } = await import("node:fs");
    expect(existsSync(dataDir)).toBe(false);
    await expect(fetch(`${api.url}/readyz`)).rejects.toThrow();
  }, 180_000);

  it("leaves no server behind when the test process is killed", async () => {
    const { spawn } = await import("node:child_process");
    const script = join(import.meta.dirname, "fixtures", "start-and-hang.ts");
    const child = spawn(
      process.execPath,
      ["--conditions=capi-ts-source", "--import", "tsx", script],
      {
        stdio: ["ignore", "pipe", "inherit"],
      },
    );
    let output = "";
    const pids = await new Promise<number[]>((resolvePids, reject) => {
      child.stdout.on("data", (chunk: Buffer) => {
        output += chunk.toString();
        const match = /^pids (.+)$/m.exec(output);
        if (match?.[1]) resolvePids(match[1].split(" ").map(Number));
      });
      child.on("exit", (code) =>
        reject(new Error(`the fixture exited early with code ${code}: ${output}`)),
      );
    });
    expect(pids.length).toBe(binaries?.kubeControllerManager ? 3 : 2);
    expect(pids.every(isAlive)).toBe(true);
    child.kill("SIGKILL");
    const deadline = Date.now() + 20_000;
    while (pids.some(isAlive) && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 100));
    expect(pids.filter(isAlive)).toEqual([]);
    const dataDir = /^dir (.+)$/m.exec(output)?.[1] ?? "";
    const { existsSync } = await import("node:fs");
    while (existsSync(dataDir) && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 100));
    expect(existsSync(dataDir)).toBe(false);
  }, 180_000);
});
