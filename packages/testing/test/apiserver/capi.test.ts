import { dirname } from "node:path";
import {
  ApiextensionsV1Api,
  CustomObjectsApi,
  PatchStrategy,
  setHeaderOptions,
} from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Backend, capiCrd, startBackend } from "../support/backend.js";
import { apiError } from "../support/fixtures.js";

// CAPI's own CRDs, installed from the shared folder, with objects shaped like a real
// v1beta2 management cluster's.
let backend: Backend;
let custom: CustomObjectsApi;
const ns = "default";
const core = { group: "cluster.x-k8s.io", version: "v1beta2" };
const infra = { group: "infrastructure.cluster.x-k8s.io", version: "v1beta2" };
const mergePatch = setHeaderOptions("Content-Type", PatchStrategy.MergePatch);

type Obj = {
  apiVersion: string;
  kind: string;
  metadata: Record<string, unknown>;
  spec?: Record<string, unknown>;
  status?: Record<string, unknown>;
};

const cluster = {
  apiVersion: "cluster.x-k8s.io/v1beta2",
  kind: "Cluster",
  metadata: { name: "prod", namespace: ns, labels: { "cluster.x-k8s.io/cluster-name": "prod" } },
  spec: {
    clusterNetwork: {
      pods: { cidrBlocks: ["192.168.0.0/16"] },
      services: { cidrBlocks: ["10.128.0.0/12"] },
      serviceDomain: "cluster.local",
    },
    controlPlaneRef: {
      apiGroup: "controlplane.cluster.x-k8s.io",
      kind: "KubeadmControlPlane",
      name: "prod-cp",
    },
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
  metadata: {
    name: "prod-mp-0",
    namespace: ns,
    labels: { "cluster.x-k8s.io/cluster-name": "prod" },
  },
  spec: {
    clusterName: "prod",
    replicas: 3,
    template: {
      spec: {
        clusterName: "prod",
        version: "v1.34.1",
        bootstrap: {
          configRef: {
            apiGroup: "bootstrap.cluster.x-k8s.io",
            kind: "KubeadmConfig",
            name: "prod-mp-0",
          },
        },
        infrastructureRef: {
          apiGroup: "infrastructure.cluster.x-k8s.io",
          kind: "DevMachinePool",
          name: "prod-mp-0",
        },
      },
    },
  },
};

const devMachinePool = {
  apiVersion: "infrastructure.cluster.x-k8s.io/v1beta2",
  kind: "DevMachinePool",
  metadata: { name: "prod-mp-0", namespace: ns },
  spec: {
    backend: { docker: { preLoadImages: ["kindest/node:v1.34.1"], extraMounts: [] } },
    providerIDList: ["docker:////prod-mp-0-a", "docker:////prod-mp-0-b", "docker:////prod-mp-0-c"],
  },
};

beforeAll(async () => {
  backend = await startBackend();
  custom = backend.kubeConfig.makeApiClient(CustomObjectsApi);
  // The whole folder: every CAPI CRD, several of them multi-version.
  await backend.installCRDs([dirname(capiCrd("cluster.x-k8s.io_clusters.yaml"))]);
});
afterAll(() => backend.stop());

describe("CAPI CRDs", () => {
  it("install and are Established", async () => {
    const crds = await backend.kubeConfig
      .makeApiClient(ApiextensionsV1Api)
      .listCustomResourceDefinition();
    const capi = crds.items.filter((c) => c.spec.group.endsWith("cluster.x-k8s.io"));
    expect(capi.length).toBeGreaterThanOrEqual(23);
    for (const crd of capi) {
      expect(crd.status?.conditions?.find((c) => c.type === "Established")?.status).toBe("True");
    }
  });

  it("round-trip a v1beta2 Cluster, MachinePool and DevMachinePool", async () => {
    const created = (await custom.createNamespacedCustomObject({
      ...core,
      namespace: ns,
      plural: "clusters",
      body: cluster,
    })) as Obj;
    expect(created.spec).toEqual(cluster.spec);
    expect(created.metadata.generation).toBe(1);
    const mp = (await custom.createNamespacedCustomObject({
      ...core,
      namespace: ns,
      plural: "machinepools",
      body: machinePool,
    })) as Obj;
    expect(mp.spec).toEqual(machinePool.spec);
    const dmp = (await custom.createNamespacedCustomObject({
      ...infra,
      namespace: ns,
      plural: "devmachinepools",
      body: devMachinePool,
    })) as Obj;
    expect(dmp.kind).toBe("DevMachinePool");
    expect(dmp.spec).toEqual(devMachinePool.spec);
    const read = (await custom.getNamespacedCustomObject({
      ...core,
      namespace: ns,
      plural: "machinepools",
      name: "prod-mp-0",
    })) as Obj;
    expect(read.spec).toEqual(machinePool.spec);
    expect(read.metadata.labels).toEqual(machinePool.metadata.labels);

    // The provider's status write, through the status subresource.
    const status = {
      ready: true,
      replicas: 3,
      // Not part of DevMachinePool status: the server prunes it.
      providerIDList: ["docker:////prod-mp-0-a"],
      conditions: [
        {
          type: "Ready",
          status: "True",
          reason: "Ready",
          message: "",
          lastTransitionTime: "2026-01-01T00:00:00Z",
        },
      ],
    };
    const withStatus = (await custom.patchNamespacedCustomObjectStatus(
      { ...infra, namespace: ns, plural: "devmachinepools", name: "prod-mp-0", body: { status } },
      mergePatch,
    )) as Obj;
    expect(withStatus.status).toEqual({ ready: true, replicas: 3, conditions: status.conditions });
    expect(withStatus.metadata.generation).toBe(1);
  });

  it("serve the MachinePool scale subresource (autoscaling/v1 Scale)", async () => {
    const resources = await custom.getAPIResources({ ...core });
    expect(resources.resources.find((r) => r.name === "machinepools/scale")).toMatchObject({
      group: "autoscaling",
      version: "v1",
      kind: "Scale",
    });
    const scale = (await custom.getNamespacedCustomObjectScale({
      ...core,
      namespace: ns,
      plural: "machinepools",
      name: "prod-mp-0",
    })) as { spec: { replicas: number }; status: { replicas: number } };
    expect(scale.spec.replicas).toBe(3);
    await custom.patchNamespacedCustomObjectScale(
      {
        ...core,
        namespace: ns,
        plural: "machinepools",
        name: "prod-mp-0",
        body: { spec: { replicas: 5 } },
      },
      mergePatch,
    );
    const mp = (await custom.getNamespacedCustomObject({
      ...core,
      namespace: ns,
      plural: "machinepools",
      name: "prod-mp-0",
    })) as Obj;
    expect(mp.spec?.replicas).toBe(5);
    expect(mp.metadata.generation).toBe(2);
  });

  it("serve a v1beta2 object through v1beta1: apiVersion rewritten, then pruned by the v1beta1 schema", async () => {
    // What kube-apiserver does with `conversion: None`: no field mapping; fields the target version
    // does not declare (v1beta2's `apiGroup` in references) are dropped from the response.
    const v1beta1 = (await custom.getNamespacedCustomObject({
      group: "cluster.x-k8s.io",
      version: "v1beta1",
      namespace: ns,
      plural: "clusters",
      name: "prod",
    })) as Obj;
    expect(v1beta1.apiVersion).toBe("cluster.x-k8s.io/v1beta1");
    expect(v1beta1.spec).toEqual({
      clusterNetwork: cluster.spec.clusterNetwork,
      controlPlaneRef: { kind: "KubeadmControlPlane", name: "prod-cp" },
      infrastructureRef: { kind: "DevCluster", name: "prod" },
    });
    const stored = (await custom.getNamespacedCustomObject({
      ...core,
      namespace: ns,
      plural: "clusters",
      name: "prod",
    })) as Obj;
    expect(stored.spec).toEqual(cluster.spec);
  });

  it("validate as the real server: patterns, required fields, CEL rules, with field paths", async () => {
    const badRef = await apiError(() =>
      custom.createNamespacedCustomObject({
        ...core,
        namespace: ns,
        plural: "clusters",
        body: {
          ...cluster,
          metadata: { name: "bad-ref", namespace: ns },
          spec: {
            ...cluster.spec,
            controlPlaneRef: { apiGroup: "controlplane.cluster.x-k8s.io", kind: "1bad", name: "x" },
          },
        },
      }),
    );
    expect(badRef.code).toBe(422);
    expect(badRef.status.details?.causes?.map((c) => c.field)).toEqual([
      "spec.controlPlaneRef.kind",
    ]);

    const { clusterName: _c, ...specWithoutClusterName } = machinePool.spec;
    const missing = await apiError(() =>
      custom.createNamespacedCustomObject({
        ...core,
        namespace: ns,
        plural: "machinepools",
        body: {
          ...machinePool,
          metadata: { name: "no-cluster", namespace: ns },
          spec: specWithoutClusterName,
        },
      }),
    );
    expect(missing.status.details?.causes).toEqual([
      expect.objectContaining({ field: "spec.clusterName", reason: "FieldValueRequired" }),
    ]);

    const badVersion = await apiError(() =>
      custom.patchNamespacedCustomObject(
        {
          ...core,
          namespace: ns,
          plural: "machinepools",
          name: "prod-mp-0",
          body: { spec: { template: { spec: { version: "" } } } },
        },
        mergePatch,
      ),
    );
    expect(badVersion.code).toBe(422);
    expect(badVersion.status.details?.causes?.[0]?.field).toBe("spec.template.spec.version");

    const cel = await apiError(() =>
      custom.createNamespacedCustomObject({
        ...core,
        namespace: ns,
        plural: "clusters",
        body: {
          ...cluster,
          metadata: { name: "cel", namespace: ns },
          spec: {
            ...cluster.spec,
            topology: {
              classRef: { name: "quick-start" },
              version: "v1.34.1",
              controlPlane: {
                healthCheck: {
                  checks: {
                    unhealthyMachineConditions: [
                      { type: "Ready", status: "False", timeoutSeconds: 300 },
                    ],
                  },
                },
              },
            },
          },
        },
      }),
    );
    expect(cel.code).toBe(422);
    expect(cel.status.details?.causes?.[0]?.field).toBe(
      "spec.topology.controlPlane.healthCheck.checks.unhealthyMachineConditions[0].type",
    );
    expect(cel.status.message).toContain("type must not be one of");
  });

  it("default as the real server", async () => {
    const created = (await custom.createNamespacedCustomObject({
      ...infra,
      namespace: ns,
      plural: "devclusters",
      body: {
        apiVersion: "infrastructure.cluster.x-k8s.io/v1beta2",
        kind: "DevCluster",
        metadata: { name: "prod", namespace: ns },
        spec: { backend: { docker: { loadBalancer: { customHAProxyConfigTemplateRef: {} } } } },
      },
    })) as Obj;
    expect(created.spec).toEqual({
      backend: { docker: { loadBalancer: { customHAProxyConfigTemplateRef: { name: "" } } } },
    });
  });
});
