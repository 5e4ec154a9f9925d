import { inspect } from "node:util";
import { getCondition } from "@capi-ts/sdk/conditions";
import {
  ensureFinalizer,
  ensurePausedCondition,
  getClusterFromMetadata,
  getOwnerMachinePool,
  type OwnerReference,
  readBootstrapData,
  readMachinePool,
  removeFinalizer,
} from "@capi-ts/sdk/contract";
import { PatchError, PatchHelper } from "@capi-ts/sdk/patch";
import { ConflictError } from "@capi-ts/sdk/runtime";
import {
  CoreV1Api,
  CustomObjectsApi,
  PatchStrategy,
  setHeaderOptions,
} from "@kubernetes/client-node";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { type Backend, capiCrd, startBackend } from "../support/backend.js";
import { clearRequestLog, onRequestLog } from "../support/request-log.js";

const ns = "default";
const devPools = {
  group: "infrastructure.cluster.x-k8s.io",
  version: "v1beta2",
  plural: "devmachinepools",
};
let backend: Backend;
let custom: CustomObjectsApi;

const cluster = {
  apiVersion: "cluster.x-k8s.io/v1beta2",
  kind: "Cluster",
  metadata: { name: "prod", namespace: ns },
  spec: {
    paused: true,
    clusterNetwork: { pods: { cidrBlocks: ["192.168.0.0/16"] } },
    infrastructureRef: {
      apiGroup: "infrastructure.cluster.x-k8s.io",
      kind: "DevCluster",
      name: "prod",
    },
  },
};

const machinePool = {
  apiVersion: "cluster.x-k8s.io/v1beta2",
  kind: "MachinePool",
  metadata: { name: "prod-mp", namespace: ns, labels: { "cluster.x-k8s.io/cluster-name": "prod" } },
  spec: {
    clusterName: "prod",
    replicas: 2,
    template: {
      spec: {
        clusterName: "prod",
        version: "v1.34.1",
        bootstrap: { dataSecretName: "prod-mp-bootstrap" },
        infrastructureRef: {
          apiGroup: "infrastructure.cluster.x-k8s.io",
          kind: "DevMachinePool",
          name: "prod-mp",
        },
      },
    },
  },
};

type Obj = {
  apiVersion: string;
  kind: string;
  metadata: Record<string, unknown> & {
    name: string;
    namespace?: string;
    uid?: string;
    ownerReferences?: OwnerReference[];
  };
};

let mp: Obj;

beforeAll(async () => {
  backend = await startBackend();
  await backend.installCRDs([
    capiCrd("cluster.x-k8s.io_clusters.yaml"),
    capiCrd("cluster.x-k8s.io_machinepools.yaml"),
    capiCrd("infrastructure.cluster.x-k8s.io_devmachinepools.yaml"),
  ]);
  custom = backend.kubeConfig.makeApiClient(CustomObjectsApi);
  await custom.createNamespacedCustomObject({
    group: "cluster.x-k8s.io",
    version: "v1beta2",
    plural: "clusters",
    namespace: ns,
    body: cluster,
  });
  mp = (await custom.createNamespacedCustomObject({
    group: "cluster.x-k8s.io",
    version: "v1beta2",
    plural: "machinepools",
    namespace: ns,
    body: machinePool,
  })) as Obj;
  await backend.kubeConfig.makeApiClient(CoreV1Api).createNamespacedSecret({
    namespace: ns,
    body: {
      metadata: { name: "prod-mp-bootstrap", namespace: ns },
      data: {
        value: Buffer.from(
          "#cloud-config\nwrite_files: [{path: /etc/token, content: s3cr3t-token}]",
        ).toString("base64"),
        format: Buffer.from("cloud-config").toString("base64"),
      },
    },
  });
});
afterAll(async () => {
  await backend?.stop();
});
beforeEach(() => clearRequestLog(backend));

async function createDevPool(name: string, extra: Record<string, unknown> = {}): Promise<Obj> {
  return (await custom.createNamespacedCustomObject({
    ...devPools,
    namespace: ns,
    body: {
      apiVersion: "infrastructure.cluster.x-k8s.io/v1beta2",
      kind: "DevMachinePool",
      metadata: {
        name,
        namespace: ns,
        ownerReferences: [
          // v1beta1 in the reference: owner lookup ignores the version.
          {
            apiVersion: "cluster.x-k8s.io/v1beta1",
            kind: "MachinePool",
            name: mp.metadata.name,
            uid: mp.metadata.uid,
          },
        ],
        ...extra,
      },
      spec: {},
    },
  })) as Obj;
}

describe("contract helpers against the API server", () => {
  it("getOwnerMachinePool and getClusterFromMetadata read the owners", async () => {
    const pool = await createDevPool("owned");
    const owner = await getOwnerMachinePool(backend.kubeConfig, pool);
    expect(owner?.metadata?.name).toBe("prod-mp");
    const view = readMachinePool(owner as Obj);
    expect(view).toMatchObject({
      clusterName: "prod",
      replicas: 2,
      bootstrapDataSecretName: "prod-mp-bootstrap",
    });
    const found = await getClusterFromMetadata(backend.kubeConfig, owner as Obj);
    expect(found.metadata?.name).toBe("prod");
    await expect(getClusterFromMetadata(backend.kubeConfig, pool)).rejects.toThrow(
      /cluster-name label/,
    );
  });

  it("readBootstrapData returns data, format, hash and ref, and never leaks the payload", async () => {
    const data = await readBootstrapData(backend.kubeConfig, mp);
    expect(data?.format).toBe("cloud-config");
    expect(data?.secretRef).toEqual({ namespace: ns, name: "prod-mp-bootstrap" });
    expect(data?.text()).toContain("s3cr3t-token");
    expect(JSON.stringify(data)).not.toContain("s3cr3t-token");
    expect(inspect(data)).not.toContain("s3cr3t-token");
    const noSecret = structuredClone(machinePool);
    noSecret.spec.template.spec.bootstrap.dataSecretName = "missing";
    await expect(readBootstrapData(backend.kubeConfig, noSecret)).rejects.toThrow(
      /ns|default\/missing/,
    );
    const notReady = structuredClone(machinePool) as {
      spec: { template: { spec: { bootstrap: object } } };
    };
    notReady.spec.template.spec.bootstrap = {};
    await expect(readBootstrapData(backend.kubeConfig, notReady)).resolves.toBeUndefined();
  });

  it("ensureFinalizer persists our finalizer at once and keeps foreign ones", async () => {
    const pool = await createDevPool("finalized", { finalizers: ["test"] });
    const f = "devmachinepool.infrastructure.cluster.x-k8s.io";
    const readVersion = (pool.metadata as { resourceVersion?: string }).resourceVersion;
    clearRequestLog(backend);
    expect(await ensureFinalizer(backend.kubeConfig, pool, f)).toBe(true);
    onRequestLog(backend, { verb: "patch", name: "finalized" }, (patches) =>
      expect(patches.map((r) => r.body)).toEqual([
        { metadata: { finalizers: ["test", f], resourceVersion: readVersion } },
      ]),
    );
    expect(await ensureFinalizer(backend.kubeConfig, pool, f)).toBe(false);
    const stored = (await custom.getNamespacedCustomObject({
      ...devPools,
      namespace: ns,
      name: "finalized",
    })) as Obj;
    expect(stored.metadata.finalizers).toEqual(["test", f]);
    // The caller's copy carries the written resourceVersion, so its next locked write is not stale.
    expect(pool.metadata.resourceVersion).toBe(stored.metadata.resourceVersion);

    const patch = PatchHelper.snapshot(stored);
    removeFinalizer(stored, f);
    await patch.apply(backend.kubeConfig, stored);
    const after = (await custom.getNamespacedCustomObject({
      ...devPools,
      namespace: ns,
      name: "finalized",
    })) as Obj;
    expect(after.metadata.finalizers).toEqual(["test"]);
  });

  it("ensureFinalizer on a stale copy: the server's 409 surfaces and nothing is written", async () => {
    const pool = await createDevPool("stale");
    const f = "devmachinepool.infrastructure.cluster.x-k8s.io";
    await custom.patchNamespacedCustomObject(
      {
        ...devPools,
        namespace: ns,
        name: "stale",
        body: { metadata: { labels: { "other-writer": "yes" } } },
      },
      setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
    );
    const failure = await ensureFinalizer(backend.kubeConfig, pool, f).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(PatchError);
    expect((failure as PatchError).errors[0]).toBeInstanceOf(ConflictError);
    const stored = (await custom.getNamespacedCustomObject({
      ...devPools,
      namespace: ns,
      name: "stale",
    })) as Obj;
    expect(stored.metadata.finalizers).toBeUndefined();
    expect(stored.metadata.labels).toEqual({ "other-writer": "yes" });
  });

  it("ensurePausedCondition: first call patches and requeues, second is a no-op", async () => {
    const pool = await createDevPool("paused");
    clearRequestLog(backend);
    const first = await ensurePausedCondition(backend.kubeConfig, cluster, pool);
    expect(first).toEqual({ isPaused: true, requeue: true });
    onRequestLog(backend, { name: "paused" }, (requests) =>
      expect(requests.map((r) => `${r.verb}/${r.subresource ?? ""}`)).toEqual([
        "get/",
        "patch/status",
      ]),
    );
    const stored = (await custom.getNamespacedCustomObject({
      ...devPools,
      namespace: ns,
      name: "paused",
    })) as Obj;
    expect(getCondition(stored, "Paused")).toMatchObject({
      status: "True",
      reason: "Paused",
      message: "Cluster spec.paused is set to true",
      observedGeneration: 1,
    });
    clearRequestLog(backend);
    expect(await ensurePausedCondition(backend.kubeConfig, cluster, stored)).toEqual({
      isPaused: true,
      requeue: false,
    });
    onRequestLog(backend, { name: "paused" }, (requests) => expect(requests).toEqual([]));
    const unchanged = (await custom.getNamespacedCustomObject({
      ...devPools,
      namespace: ns,
      name: "paused",
    })) as Obj;
    expect(unchanged.metadata.resourceVersion).toBe(stored.metadata.resourceVersion);
  });
});
