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
    expect(api.capabilities).toMatchObject({ requestLog: false, faults: false });
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
  it("stop() ends both processes and removes the data folder", async () => {
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
    expect(pids.length).toBe(2);
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
