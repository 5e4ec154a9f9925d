import { readFileSync } from "node:fs";
import { dirname } from "node:path";
import {
  KubeClient,
  NodeResource,
  type ResourceDescriptor,
  SecretResource,
} from "@capi-ts/sdk/runtime";
import type { KubernetesObject, V1Node } from "@kubernetes/client-node";
import { load } from "js-yaml";
import type { MachinePoolObject } from "../../src/capi/types.js";
import {
  type CapiCore,
  type CapiCoreOptions,
  markWorkloadClusterReady,
  startCapiCore,
} from "../../src/index.js";
import { type Backend, capiCrd, startBackend } from "../support/backend.js";
import { eventually as retryUntilPasses } from "../support/eventually.js";

export { NodeResource, SecretResource };

/** A loosely typed object for assertions. */
export type Obj = KubernetesObject & {
  spec?: Record<string, unknown>;
  status?: Record<string, unknown>;
};

export type { MachinePoolObject };

export const ns = "default";

export const MachinePools: ResourceDescriptor<MachinePoolObject> = {
  group: "cluster.x-k8s.io",
  version: "v1beta2",
  kind: "MachinePool",
  plural: "machinepools",
  scope: "Namespaced",
  subresources: { status: true },
};

export const Clusters: ResourceDescriptor<Obj> = {
  group: "cluster.x-k8s.io",
  version: "v1beta2",
  kind: "Cluster",
  plural: "clusters",
  scope: "Namespaced",
  subresources: { status: true },
};

export const TestMachinePools: ResourceDescriptor<Obj> = {
  group: "infrastructure.cluster.x-k8s.io",
  version: "v1beta2",
  kind: "TestMachinePool",
  plural: "testmachinepools",
  scope: "Namespaced",
  subresources: { status: true },
};

export const KubeadmConfigs: ResourceDescriptor<Obj> = {
  group: "bootstrap.cluster.x-k8s.io",
  version: "v1beta2",
  kind: "KubeadmConfig",
  plural: "kubeadmconfigs",
  scope: "Namespaced",
  subresources: { status: true },
};

/** A minimal InfraMachinePool CRD that follows the contract (R4 label, both readiness fields). */
export function testMachinePoolCrd(
  contractLabel: boolean | string = true,
): Record<string, unknown> {
  const labels: Record<string, string> = {};
  if (contractLabel)
    labels["cluster.x-k8s.io/v1beta2"] = contractLabel === true ? "v1beta2" : contractLabel;
  return {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name: "testmachinepools.infrastructure.cluster.x-k8s.io", labels },
    spec: {
      group: "infrastructure.cluster.x-k8s.io",
      scope: "Namespaced",
      names: {
        plural: "testmachinepools",
        singular: "testmachinepool",
        kind: "TestMachinePool",
        listKind: "TestMachinePoolList",
      },
      versions: [
        {
          name: "v1beta2",
          served: true,
          storage: true,
          subresources: { status: {} },
          schema: {
            openAPIV3Schema: {
              type: "object",
              properties: {
                apiVersion: { type: "string" },
                kind: { type: "string" },
                metadata: { type: "object" },
                spec: {
                  type: "object",
                  properties: {
                    providerIDList: { type: "array", items: { type: "string" } },
                  },
                },
                status: {
                  type: "object",
                  properties: {
                    ready: { type: "boolean" },
                    initialization: {
                      type: "object",
                      properties: { provisioned: { type: "boolean" } },
                    },
                    replicas: { type: "integer", format: "int32" },
                    failureReason: { type: "string" },
                    failureMessage: { type: "string" },
                    deprecated: { type: "object", "x-kubernetes-preserve-unknown-fields": true },
                    infrastructureMachineKind: { type: "string" },
                    conditions: {
                      type: "array",
                      items: { type: "object", "x-kubernetes-preserve-unknown-fields": true },
                    },
                  },
                },
              },
            },
          },
        },
      ],
    },
  };
}

/**
 * An InfraMachine CRD for MachinePool Machines (R11). The MachinePool controller lists it by kind; the
 * Machine controller reads each one through its contract label (R4), so it carries one.
 */
export function testMachineCrd(): Record<string, unknown> {
  return {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: {
      name: "testmachines.infrastructure.cluster.x-k8s.io",
      labels: { "cluster.x-k8s.io/v1beta2": "v1beta2" },
    },
    spec: {
      group: "infrastructure.cluster.x-k8s.io",
      scope: "Namespaced",
      names: {
        plural: "testmachines",
        singular: "testmachine",
        kind: "TestMachine",
        listKind: "TestMachineList",
      },
      versions: [
        {
          name: "v1beta2",
          served: true,
          storage: true,
          subresources: { status: {} },
          schema: {
            openAPIV3Schema: {
              type: "object",
              properties: {
                apiVersion: { type: "string" },
                kind: { type: "string" },
                metadata: { type: "object" },
                spec: {
                  type: "object",
                  properties: {
                    providerID: { type: "string" },
                    failureDomain: { type: "string" },
                  },
                },
                status: { type: "object", "x-kubernetes-preserve-unknown-fields": true },
              },
            },
          },
        },
      ],
    },
  };
}

export const TestMachines: ResourceDescriptor<Obj> = {
  group: "infrastructure.cluster.x-k8s.io",
  version: "v1beta2",
  kind: "TestMachine",
  plural: "testmachines",
  scope: "Namespaced",
  subresources: { status: true },
};

export const Machines: ResourceDescriptor<Obj> = {
  group: "cluster.x-k8s.io",
  version: "v1beta2",
  kind: "Machine",
  plural: "machines",
  scope: "Namespaced",
  subresources: { status: true },
};

/** The shared KubeadmConfig CRD with the contract label core needs (real deployments add it via kustomize). */
export function labelledKubeadmConfigCrd(): Record<string, unknown> {
  const crd = load(
    readFileSync(capiCrd("bootstrap.cluster.x-k8s.io_kubeadmconfigs.yaml"), "utf8"),
  ) as { metadata: { labels?: Record<string, string> } } & Record<string, unknown>;
  crd.metadata.labels = { ...crd.metadata.labels, "cluster.x-k8s.io/v1beta2": "v1beta2" };
  return crd;
}

/**
 * An API server (the in-memory one, or a real kube-apiserver when CAPI_TS_BACKEND=real) with the CAPI
 * CRDs, the test InfraMachinePool CRD and the labelled KubeadmConfig CRD.
 */
export async function startCapiApiServer(): Promise<{ api: Backend; client: KubeClient }> {
  const api = await startBackend();
  await api.installCRDs([dirname(capiCrd("cluster.x-k8s.io_clusters.yaml"))]);
  await api.installCRDs([testMachinePoolCrd(), testMachineCrd(), labelledKubeadmConfigCrd()]);
  return { api, client: new KubeClient(api.kubeConfig, { fieldManager: "test" }) };
}

/**
 * Starts the emulator with test-friendly timings: no per-object rate limit, a 200 ms Node re-check and
 * a ClusterCache that retries a failed connection after 200 ms (core: 1 s, 30 s, 30 s).
 */
export function startCore(
  api: Pick<Backend, "kubeConfig">,
  options: Partial<CapiCoreOptions> = {},
): Promise<CapiCore> {
  return startCapiCore({
    kubeConfig: api.kubeConfig,
    nodeRefRequeueMs: 200,
    rateLimitIntervalMs: 0,
    clusterCache: { connectionRetryMs: 200 },
    ...options,
  });
}

/**
 * Creates a Cluster whose workload cluster core can reach: its `<name>-kubeconfig` Secret points at
 * `workload` (default: the management API server itself) and its status says infrastructure
 * provisioned and control plane initialized.
 */
export async function createReadyCluster(
  client: KubeClient,
  api: Pick<Backend, "kubeConfig">,
  name: string,
  workload: Pick<Backend, "kubeConfig"> = api,
): Promise<void> {
  await client.create(Clusters, cluster(name));
  await markWorkloadClusterReady(client, { namespace: ns, name }, workload.kubeConfig);
}

export function cluster(name: string, paused = false): Obj {
  return {
    apiVersion: "cluster.x-k8s.io/v1beta2",
    kind: "Cluster",
    metadata: { name, namespace: ns },
    spec: {
      ...(paused ? { paused: true } : {}),
      infrastructureRef: { apiGroup: "infrastructure.cluster.x-k8s.io", kind: "DevCluster", name },
    },
  };
}

export function machinePool(
  name: string,
  options: {
    clusterName?: string;
    replicas?: number;
    configRef?: string;
    dataSecretName?: string;
    annotations?: Record<string, string>;
  } = {},
): MachinePoolObject {
  const clusterName = options.clusterName ?? "c1";
  const bootstrap: NonNullable<MachinePoolObject["spec"]>["template"]["spec"]["bootstrap"] = {};
  if (options.configRef) {
    bootstrap.configRef = {
      apiGroup: "bootstrap.cluster.x-k8s.io",
      kind: "KubeadmConfig",
      name: options.configRef,
    };
  }
  if (options.dataSecretName) bootstrap.dataSecretName = options.dataSecretName;
  return {
    apiVersion: "cluster.x-k8s.io/v1beta2",
    kind: "MachinePool",
    metadata: {
      name,
      namespace: ns,
      ...(options.annotations ? { annotations: options.annotations } : {}),
    },
    spec: {
      clusterName,
      ...(options.replicas !== undefined ? { replicas: options.replicas } : {}),
      template: {
        spec: {
          clusterName,
          version: "v1.34.1",
          bootstrap,
          infrastructureRef: {
            apiGroup: "infrastructure.cluster.x-k8s.io",
            kind: "TestMachinePool",
            name,
          },
        },
      },
    },
  };
}

export function testMachinePool(
  name: string,
  extra: { finalizers?: string[]; ownerReferences?: unknown[] } = {},
): Obj {
  return {
    apiVersion: "infrastructure.cluster.x-k8s.io/v1beta2",
    kind: "TestMachinePool",
    metadata: { name, namespace: ns, ...(extra as Record<string, unknown>) },
    spec: {},
  };
}

/** A Node as its kubelet reports it: Ready (or not) and no memory, disk or PID pressure. */
export function node(name: string, providerID: string, ready = true): V1Node {
  const since = new Date(Date.now() - 60_000);
  const pressure = (type: string) => ({
    type,
    status: "False",
    reason: `KubeletHasNo${type}`,
    message: "",
    lastTransitionTime: since,
    lastHeartbeatTime: new Date(),
  });
  return {
    apiVersion: "v1",
    kind: "Node",
    metadata: { name },
    spec: {
      providerID,
      taints: [{ key: "node.cluster.x-k8s.io/uninitialized", effect: "NoSchedule" }],
    },
    status: {
      conditions: [
        {
          type: "Ready",
          status: ready ? "True" : "False",
          reason: "KubeletReady",
          message: "",
          lastTransitionTime: since,
          lastHeartbeatTime: new Date(),
        },
        pressure("MemoryPressure"),
        pressure("DiskPressure"),
        pressure("PIDPressure"),
      ],
      nodeInfo: { kubeletVersion: "v1.34.1" } as never,
    },
  };
}

/** Creates a Node with its status (the status subresource ignores status on create). */
export async function createNode(client: KubeClient, body: V1Node): Promise<void> {
  const created = await client.create(NodeResource, body);
  await client.mergePatchStatus(NodeResource, created, { status: body.status });
}

/** Writes the InfraMachinePool status, as a provider would. */
export function setPoolStatus(
  client: KubeClient,
  name: string,
  status: Record<string, unknown>,
): Promise<Obj> {
  return client.mergePatchStatus(TestMachinePools, { namespace: ns, name }, { status });
}

/** Writes the InfraMachinePool providerIDList, as a provider would. */
export function setProviderIDs(
  client: KubeClient,
  name: string,
  ids: string[] | null,
): Promise<Obj> {
  return client.mergePatch(
    TestMachinePools,
    { namespace: ns, name },
    { spec: { providerIDList: ids } },
  );
}

export function getMachinePool(client: KubeClient, name: string): Promise<MachinePoolObject> {
  return client.get(MachinePools, { namespace: ns, name });
}

/** Retries `check` until it passes; rethrows its last failure on timeout (support/eventually.ts). */
export const eventually = <T>(check: () => Promise<T> | T, timeoutMs = 10_000): Promise<T> =>
  retryUntilPasses(check, timeoutMs, 20);

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
