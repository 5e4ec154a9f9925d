// Two management clusters driven in lockstep, one judged by the CAPI core emulator and one by real
// CAPI core, and the tools to compare what each core wrote.
import { KubeClient, NodeResource } from "@capi-ts/sdk/runtime";
import type { KubeConfig, KubernetesObject } from "@kubernetes/client-node";
import {
  type CapiCore,
  capiCrdsFolder,
  externalControlPlaneCrd,
  markWorkloadClusterReady,
  setExternalControlPlane as setClusterControlPlane,
  startApiServer,
  startCapiCore,
  startControlPlane,
  type WorkloadClusterOptions,
} from "../../src/index.js";
import { namespacedKind } from "../support/fixtures.js";

export type Obj = KubernetesObject & {
  spec?: Record<string, unknown>;
  status?: Record<string, unknown>;
};

const resource = (group: string, version: string, kind: string, plural: string) =>
  namespacedKind<Obj>(group, version, kind, plural);

export const MachinePools = resource("cluster.x-k8s.io", "v1beta2", "MachinePool", "machinepools");
export const MachinePoolsV1beta1 = resource(
  "cluster.x-k8s.io",
  "v1beta1",
  "MachinePool",
  "machinepools",
);
export const Machines = resource("cluster.x-k8s.io", "v1beta2", "Machine", "machines");
export const Clusters = resource("cluster.x-k8s.io", "v1beta2", "Cluster", "clusters");
export const DevMachinePools = resource(
  "infrastructure.cluster.x-k8s.io",
  "v1beta2",
  "DevMachinePool",
  "devmachinepools",
);
export const DevMachines = resource(
  "infrastructure.cluster.x-k8s.io",
  "v1beta2",
  "DevMachine",
  "devmachines",
);
export const KubeadmConfigs = resource(
  "bootstrap.cluster.x-k8s.io",
  "v1beta2",
  "KubeadmConfig",
  "kubeadmconfigs",
);
export const NAMESPACE = "default";

/** One management cluster with its core: the test drives both the same way. */
export interface Side {
  readonly name: "emulator" | "real";
  readonly client: KubeClient;
  readonly kubeConfig: KubeConfig;
  /** The emulator itself (its write log), on the emulator's side only. */
  readonly core?: CapiCore;
  /** Failed reconciles of a MachinePool (or of a Machine: `kind`), from the core's records or log. */
  reconcileErrors(name: string, kind?: "MachinePool" | "Machine"): string[];
  stop(): Promise<void>;
}

export async function startEmulatorSide(): Promise<Side> {
  const api = await startApiServer();
  await api.installCRDs([capiCrdsFolder]);
  await api.installCRDs([externalControlPlaneCrd()]);
  const core: CapiCore = await startCapiCore({ kubeConfig: api.kubeConfig });
  return {
    name: "emulator",
    core,
    client: new KubeClient(api.kubeConfig, { fieldManager: "differential" }),
    kubeConfig: api.kubeConfig,
    reconcileErrors: (name, kind = "MachinePool") =>
      core
        .reconciles(
          kind === "Machine"
            ? { machine: `${NAMESPACE}/${name}`, actor: "machine", failed: true }
            : { machinePool: `${NAMESPACE}/${name}`, actor: "machinepool", failed: true },
        )
        .map((r) => r.error?.message ?? ""),
    async stop() {
      await core.stop();
      await api.stop();
    },
  };
}

export async function startRealSide(): Promise<Side> {
  const cp = await startControlPlane({ capiCore: true });
  await cp.installCRDs([externalControlPlaneCrd()]);
  const bootstrap = await startCapiCore({ kubeConfig: cp.kubeConfig, machinePools: false });
  return {
    name: "real",
    client: new KubeClient(cp.kubeConfig, { fieldManager: "differential" }),
    kubeConfig: cp.kubeConfig,
    reconcileErrors: (name, kind = "MachinePool") =>
      (cp.capiCore?.reconcileErrors({ kind, name }) ?? []).map((e) => e.error),
    async stop() {
      await bootstrap.stop();
      await cp.stop();
    },
  };
}

/** Creates a Cluster; `workload` says whether core can reach it (its kubeconfig Secret exists). */
export async function createCluster(
  side: Pick<Side, "client" | "kubeConfig">,
  name: string,
  workload: WorkloadClusterOptions = {},
): Promise<void> {
  await side.client.create(Clusters, {
    apiVersion: "cluster.x-k8s.io/v1beta2",
    kind: "Cluster",
    metadata: { name, namespace: NAMESPACE },
    spec: {
      infrastructureRef: { apiGroup: "infrastructure.cluster.x-k8s.io", kind: "DevCluster", name },
    },
  });
  await markWorkloadClusterReady(
    side.client,
    { namespace: NAMESPACE, name },
    side.kubeConfig,
    workload,
  );
}

/** A MachinePool with a KubeadmConfig and a DevMachinePool of the same name. */
export async function createPool(
  side: Pick<Side, "client" | "kubeConfig">,
  cluster: string,
  name: string,
  replicas: number,
): Promise<void> {
  await side.client.create(KubeadmConfigs, {
    apiVersion: "bootstrap.cluster.x-k8s.io/v1beta2",
    kind: "KubeadmConfig",
    metadata: { name, namespace: NAMESPACE },
    spec: { format: "cloud-config" },
  });
  await side.client.create(DevMachinePools, {
    apiVersion: "infrastructure.cluster.x-k8s.io/v1beta2",
    kind: "DevMachinePool",
    metadata: { name, namespace: NAMESPACE },
    spec: { backend: { docker: {} } },
  });
  await side.client.create(MachinePools, {
    apiVersion: "cluster.x-k8s.io/v1beta2",
    kind: "MachinePool",
    metadata: { name, namespace: NAMESPACE },
    spec: {
      clusterName: cluster,
      replicas,
      template: {
        spec: {
          clusterName: cluster,
          version: "v1.34.1",
          bootstrap: {
            configRef: { apiGroup: "bootstrap.cluster.x-k8s.io", kind: "KubeadmConfig", name },
          },
          infrastructureRef: {
            apiGroup: "infrastructure.cluster.x-k8s.io",
            kind: "DevMachinePool",
            name,
          },
        },
      },
    },
  });
}

/**
 * Makes the Cluster's control plane an externally managed one, so that core's Machine controller
 * drains and deletes the Nodes of deleted Machines.
 */
export async function setExternalControlPlane(
  side: Pick<Side, "client">,
  cluster: string,
): Promise<void> {
  await setClusterControlPlane(side.client, { namespace: NAMESPACE, name: cluster });
}

/**
 * Registers a Ready Node for an instance, as its kubelet would, in the workload cluster: Ready, and no
 * memory, disk or PID pressure (core's Machine controller reads all four for NodeHealthy).
 */
export async function registerNode(
  side: Pick<Side, "client" | "kubeConfig">,
  name: string,
  providerID: string,
): Promise<void> {
  await side.client.create(NodeResource, {
    apiVersion: "v1",
    kind: "Node",
    metadata: { name },
    spec: { providerID },
  });
  const now = new Date().toISOString();
  await side.client.mergePatchStatus(
    NodeResource,
    { name },
    {
      status: {
        nodeInfo: {
          kubeletVersion: "v1.34.1",
          architecture: "amd64",
          bootID: "",
          containerRuntimeVersion: "",
          kernelVersion: "",
          kubeProxyVersion: "",
          machineID: "",
          operatingSystem: "linux",
          osImage: "",
          systemUUID: "",
        },
        conditions: [
          {
            type: "Ready",
            status: "True",
            reason: "KubeletReady",
            message: "kubelet is posting ready status",
            lastHeartbeatTime: now,
            lastTransitionTime: now,
          },
          ...["MemoryPressure", "DiskPressure", "PIDPressure"].map((type) => ({
            type,
            status: "False",
            reason: `KubeletHasNo${type}`,
            message: "",
            lastHeartbeatTime: now,
            lastTransitionTime: now,
          })),
        ],
      },
    },
  );
}

/**
 * Posts a Node's heartbeat as its kubelet does while it runs: each condition's lastHeartbeatTime now,
 * nothing else changed. Each post is a Node update event for the controllers that watch Nodes.
 */
export async function heartbeat(side: Pick<Side, "client">, name: string): Promise<void> {
  const node = await side.client.get(NodeResource, { name });
  const now = new Date().toISOString();
  await side.client.mergePatchStatus(
    NodeResource,
    { name },
    {
      status: {
        conditions: (node.status?.conditions ?? []).map((condition) => ({
          ...condition,
          lastHeartbeatTime: now,
        })),
      },
    },
  );
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Waits until `read` returns the same (normalised) value for `quietMs`: core has nothing left to do
 * for now. Real core's own requeues (30 s for Nodes that are not all ready) are longer than the
 * window, as they are meant to be: the comparison is of what each core settles on.
 */
export async function settled(
  read: () => Promise<unknown>,
  quietMs = 2_500,
  timeoutMs = 45_000,
): Promise<unknown> {
  const deadline = Date.now() + timeoutMs;
  let last = JSON.stringify(await read());
  let since = Date.now();
  for (;;) {
    await sleep(250);
    const now = JSON.stringify(await read());
    if (now !== last) {
      last = now;
      since = Date.now();
    } else if (Date.now() - since >= quietMs) {
      return JSON.parse(last) as unknown;
    }
    if (Date.now() > deadline) return JSON.parse(last) as unknown;
  }
}

/** Fields that differ between any two clusters whatever the core: identities and clocks. */
const VOLATILE = new Set([
  "uid",
  "resourceVersion",
  "creationTimestamp",
  "managedFields",
  "lastTransitionTime",
  "lastHeartbeatTime",
  "deletionTimestamp",
  // A Machine's clocks: when its phase changed and when each deletion stage started.
  "lastUpdated",
  "nodeDrainStartTime",
  "waitForNodeVolumeDetachStartTime",
  "waitForPreDrainHookStartTime",
  "waitForPreTerminateHookStartTime",
]);

/** The object without server-assigned identities and timestamps, for comparison. */
export function normalise(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(normalise);
  if (value === null || typeof value !== "object") return value;
  const out: Record<string, unknown> = {};
  for (const [key, inner] of Object.entries(value as Record<string, unknown>).sort(([a], [b]) =>
    a.localeCompare(b),
  )) {
    if (VOLATILE.has(key)) continue;
    out[key] = normalise(inner);
  }
  return out;
}

/** One field that differs: its path and each side's value (undefined = absent). */
export interface FieldDifference {
  path: string;
  emulator: unknown;
  real: unknown;
}

/** Every leaf path where the two values differ. Lists of objects with `type` are keyed by it. */
export function diff(emulator: unknown, real: unknown, path = ""): FieldDifference[] {
  if (JSON.stringify(emulator) === JSON.stringify(real)) return [];
  const keyed = (list: unknown[]) =>
    list.every((item) => item !== null && typeof item === "object" && "type" in item)
      ? new Map(list.map((item) => [String((item as { type: unknown }).type), item]))
      : undefined;
  if (Array.isArray(emulator) && Array.isArray(real)) {
    const a = keyed(emulator);
    const b = keyed(real);
    if (a && b) {
      const types = [...new Set([...a.keys(), ...b.keys()])].sort();
      return types.flatMap((type) => diff(a.get(type), b.get(type), `${path}[type=${type}]`));
    }
    return [{ path, emulator, real }];
  }
  const isObject = (v: unknown) => v !== null && typeof v === "object" && !Array.isArray(v);
  if (isObject(emulator) && isObject(real)) {
    const e = emulator as Record<string, unknown>;
    const r = real as Record<string, unknown>;
    const keys = [...new Set([...Object.keys(e), ...Object.keys(r)])].sort();
    return keys.flatMap((key) => diff(e[key], r[key], path ? `${path}.${key}` : key));
  }
  return [{ path, emulator, real }];
}

export function formatDifferences(differences: FieldDifference[]): string {
  return differences
    .map(
      (d) =>
        `  ${d.path}: emulator ${JSON.stringify(d.emulator) ?? "(absent)"} | real ${JSON.stringify(d.real) ?? "(absent)"}`,
    )
    .join("\n");
}
