// A test bed for the MachinePool provider kit: the API server of the run (in-memory, or a real
// kube-apiserver in the integration@real project) with the CAPI CRDs, the CAPI core emulator (owner refs, providerIDList copy, Nodes, bootstrap data with token rotation), the fake
// scaling-group cloud on a manual clock driven by a pump, and `machinePoolController` running the
// example provider's driver in a real Manager.

import { dirname } from "node:path";
import type { FakeCloudMachinePoolSpec } from "@capi-ts/examples";
import {
  bootstrapTokenCheck,
  type FakeCloudDriverOptions,
  type FakeCloudGroupSettings,
  type FakeCloudOptions,
  FakeScalingCloud,
  fakeCloudDriver,
  type InstanceBoot,
  nodeRegistrar,
} from "@capi-ts/examples";
import {
  type MachinePoolControllerOptions,
  Manager,
  type ManagerOptions,
  machinePoolController,
  type PoolDriver,
} from "@capi-ts/sdk";
import { defineInfraMachinePool, machinePoolStrategySchema } from "@capi-ts/sdk/crd";
import {
  EventResource,
  KubeClient,
  ManualClock,
  type ResourceDescriptor,
} from "@capi-ts/sdk/runtime";
import { type CapiCore, markWorkloadClusterReady, startCapiCore } from "@capi-ts/testing";
import type { KubernetesObject } from "@kubernetes/client-node";
import { z } from "zod";
import { type Backend, capiCrd, startBackend } from "../../../testing/test/support/backend.js";
import { eventually as retryUntilPasses } from "../../../testing/test/support/eventually.js";
import { namespacedKind } from "../../../testing/test/support/fixtures.js";

export const ns = "default";
export const CLUSTER = "c1";
export const MANAGER = "kit-test";

/** The kind under test, defined the way a provider defines its own. */
export const KitMachinePool = defineInfraMachinePool({
  group: "infrastructure.cluster.x-k8s.io",
  kind: "KitMachinePool",
  versions: ["v1beta2"],
  spec: z.object({
    instanceType: z.string().min(1),
    image: z.string().min(1).optional(),
    minSize: z.number().int().min(0),
    maxSize: z.number().int().min(0),
    zones: z.array(z.string().min(1)).optional(),
    strategy: machinePoolStrategySchema.optional(),
  }),
});

/** A loosely typed object for assertions. */
export type Obj = KubernetesObject & {
  spec?: Record<string, unknown> & { providerIDList?: string[]; replicas?: number };
  status?: Record<string, unknown> & {
    conditions?: { type: string; status: string; reason: string; message: string }[];
    replicas?: number;
    ready?: boolean;
    initialization?: { provisioned?: boolean; infrastructureProvisioned?: boolean };
  };
  data?: Record<string, string>;
};

const descriptor = (
  group: string,
  kind: string,
  plural: string,
  version = "v1beta2",
): ResourceDescriptor<Obj> => namespacedKind<Obj>(group, version, kind, plural);

export const Pools = descriptor(
  "infrastructure.cluster.x-k8s.io",
  "KitMachinePool",
  "kitmachinepools",
);
export const MachinePools = descriptor("cluster.x-k8s.io", "MachinePool", "machinepools");
export const Clusters = descriptor("cluster.x-k8s.io", "Cluster", "clusters");

export interface Bed {
  /** The API server of this run (in-memory or a real kube-apiserver, see test/support/backend.ts). */
  backend: Backend;
  client: KubeClient;
  core: CapiCore;
  cloud: FakeScalingCloud;
  clock: ManualClock;
  manager: Manager;
  driver: PoolDriver<FakeCloudMachinePoolSpec, FakeCloudGroupSettings>;
  /** Stops the controller's manager and starts a new one (no state carries over but the cluster's and the cloud's). */
  restartController(): Promise<void>;
  stop(): Promise<void>;
}

export interface BedOptions {
  cloud?: Omit<FakeCloudOptions, "clock" | "kubelet">;
  driver?: FakeCloudDriverOptions;
  controller?: Partial<
    Omit<MachinePoolControllerOptions<FakeCloudMachinePoolSpec>, "manager" | "kind">
  >;
  /** Manager options (e.g. a watch filter). */
  manager?: Partial<Omit<ManagerOptions, "kubeConfig">>;
  /** Cloud milliseconds per pump tick (every 10 ms real time). Default 250. */
  cloudMsPerTick?: number;
  /** Check bootstrap tokens at boot (instances with a revoked token never join). Default true. */
  checkTokens?: boolean;
  /** An extra join check (ANDed with the token check). */
  canJoin?: (boot: InstanceBoot, cloud: FakeScalingCloud) => boolean;
  /** Wraps the driver (e.g. to simulate an inconsistent cloud list). */
  wrapDriver?: (
    driver: PoolDriver<FakeCloudMachinePoolSpec, FakeCloudGroupSettings>,
  ) => PoolDriver<FakeCloudMachinePoolSpec, FakeCloudGroupSettings>;
}

export async function startBed(options: BedOptions = {}): Promise<Bed> {
  // HTTPS: the bed is its own workload cluster, and the kit's ClusterCache refuses plain HTTP.
  const backend = await startBackend({ tls: true });
  await backend.installCRDs([dirname(capiCrd("cluster.x-k8s.io_clusters.yaml"))]);
  await backend.installCRDs([KitMachinePool.crd]);
  const { kubeConfig } = backend;
  const client = new KubeClient(kubeConfig, { fieldManager: "test" });
  // Core's 1 s per-object rate limit and 30 s connection retry would only slow the suite down.
  const core = await startCapiCore({
    kubeConfig,
    nodeRefRequeueMs: 200,
    rateLimitIntervalMs: 0,
    clusterCache: { connectionRetryMs: 200 },
  });
  const clock = new ManualClock(Date.now());
  const tokenCheck = bootstrapTokenCheck(kubeConfig);
  const cloud: FakeScalingCloud = new FakeScalingCloud({
    seed: 7,
    timing: { lingerMs: 20_000 },
    ...options.cloud,
    clock,
    kubelet: nodeRegistrar({
      kubeConfig,
      canJoin: async (boot): Promise<boolean> =>
        (options.canJoin?.(boot, cloud) ?? true) &&
        (options.checkTokens === false || (await tokenCheck(boot))),
    }),
  });
  const plain = fakeCloudDriver(cloud.client, {
    defaultZones: ["zone-a", "zone-b"],
    busyRetryMs: 100,
    ...options.driver,
  });
  const driver = options.wrapDriver ? options.wrapDriver(plain) : plain;
  const startController = async () => {
    const manager = new Manager({
      kubeConfig,
      name: MANAGER,
      logger: { level: process.env.KIT_TEST_LOG === "1" ? "debug" : "silent" },
      gracefulShutdownTimeoutMs: 2000,
      ...options.manager,
    });
    machinePoolController(driver, {
      manager,
      kind: KitMachinePool,
      pollIntervalMs: 40,
      resyncPeriodMs: 400,
      ...options.controller,
    });
    const running = manager.start().catch(() => undefined);
    await manager.elected();
    return { manager, running };
  };
  let controller = await startController();
  const tick = options.cloudMsPerTick ?? 250;
  const pump = setInterval(() => clock.advance(tick), 10);
  await createCluster(client, CLUSTER, true);
  const bed: Bed = {
    backend,
    client,
    core,
    cloud,
    clock,
    manager: controller.manager,
    driver,
    async restartController() {
      await controller.manager.stop();
      await controller.running;
      controller = await startController();
      bed.manager = controller.manager;
    },
    async stop() {
      clearInterval(pump);
      await controller.manager.stop();
      await controller.running;
      await core.stop();
      await cloud.flush();
      await backend.stop();
    },
  };
  return bed;
}

/** Creates a Cluster, optionally with its infrastructure provisioned. */
export async function createCluster(
  client: KubeClient,
  name: string,
  provisioned: boolean,
  labels?: Record<string, string>,
): Promise<void> {
  await client.create(Clusters, {
    apiVersion: "cluster.x-k8s.io/v1beta2",
    kind: "Cluster",
    metadata: { name, namespace: ns, ...(labels ? { labels } : {}) },
    spec: {
      infrastructureRef: { apiGroup: "infrastructure.cluster.x-k8s.io", kind: "DevCluster", name },
    },
  } as Obj);
  if (provisioned) await setClusterProvisioned(client, name);
}

/**
 * Makes the Cluster's workload cluster reachable for core, as its infrastructure and control plane
 * providers would: the `<name>-kubeconfig` Secret (pointing at this same API server, where the fake
 * cloud registers its Nodes) and the provisioned/initialized status.
 */
export async function setClusterProvisioned(client: KubeClient, name: string): Promise<void> {
  await markWorkloadClusterReady(client, { namespace: ns, name }, client.kubeConfig);
}

let seq = 0;

/** Creates a MachinePool and its KitMachinePool; returns the pool name. */
export async function createPool(
  bed: Bed,
  options: {
    replicas?: number;
    spec?: Record<string, unknown>;
    annotations?: Record<string, string>;
    labels?: Record<string, string>;
    clusterName?: string;
  } = {},
): Promise<string> {
  const name = `pool-${++seq}`;
  const clusterName = options.clusterName ?? CLUSTER;
  await bed.client.create(Pools, {
    apiVersion: KitMachinePool.apiVersion,
    kind: KitMachinePool.kind,
    metadata: { name, namespace: ns, ...(options.labels ? { labels: options.labels } : {}) },
    spec: { instanceType: "small", minSize: 0, maxSize: 10, ...options.spec },
  } as Obj);
  await bed.client.create(MachinePools, {
    apiVersion: "cluster.x-k8s.io/v1beta2",
    kind: "MachinePool",
    metadata: {
      name,
      namespace: ns,
      ...(options.annotations ? { annotations: options.annotations } : {}),
      ...(options.labels ? { labels: options.labels } : {}),
    },
    spec: {
      clusterName,
      replicas: options.replicas ?? 1,
      template: {
        spec: {
          clusterName,
          version: "v1.34.1",
          bootstrap: {},
          infrastructureRef: {
            apiGroup: "infrastructure.cluster.x-k8s.io",
            kind: KitMachinePool.kind,
            name,
          },
        },
      },
    },
  } as Obj);
  return name;
}

/** The fake cloud's name of a pool's group and template. */
export function groupName(pool: string, clusterName = CLUSTER): string {
  return `${clusterName}.${ns}.${pool}`;
}

export function getPool(bed: Bed, name: string): Promise<Obj> {
  return bed.client.get(Pools, { namespace: ns, name });
}

export function getMachinePool(bed: Bed, name: string): Promise<Obj> {
  return bed.client.get(MachinePools, { namespace: ns, name });
}

export function condition(obj: Obj, type: string) {
  return obj.status?.conditions?.find((c) => c.type === type);
}

export async function setReplicas(bed: Bed, name: string, replicas: number): Promise<void> {
  await bed.client.mergePatch(MachinePools, { namespace: ns, name }, { spec: { replicas } });
}

/** Retries `check` until it passes; rethrows its last failure on timeout (support/eventually.ts). */
export const eventually = <T>(check: () => Promise<T> | T, timeoutMs = 20_000): Promise<T> =>
  retryUntilPasses(check, timeoutMs, 25);

/** Reasons of the Events recorded for an object. */
export async function eventReasons(bed: Bed, name: string): Promise<string[]> {
  const list = await bed.client.list(EventResource, { namespace: ns });
  return list.items
    .filter((e) => e.involvedObject?.name === name && e.source?.component === "kitmachinepool")
    .map((e) => e.reason ?? "");
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Waits until the pool is converged: Ready=True, list = live instances, core copied it. */
export async function converged(
  bed: Bed,
  name: string,
  replicas: number,
  clusterName = CLUSTER,
): Promise<Obj> {
  return eventually(async () => {
    const pool = await getPool(bed, name);
    const ids = bed.cloud.inspect.providerIds(groupName(name, clusterName));
    if (condition(pool, "Ready")?.status !== "True") {
      throw new Error(`Ready is ${JSON.stringify(condition(pool, "Ready"))}`);
    }
    if (ids.length !== replicas) throw new Error(`cloud has ${ids.length} instances`);
    if (JSON.stringify(pool.spec?.providerIDList ?? []) !== JSON.stringify(ids)) {
      throw new Error(`providerIDList ${pool.spec?.providerIDList} != cloud ${ids}`);
    }
    if (pool.status?.replicas !== replicas)
      throw new Error(`status.replicas ${pool.status?.replicas}`);
    const mp = await getMachinePool(bed, name);
    if ((mp.status?.replicas ?? 0) !== replicas)
      throw new Error(`MP status.replicas ${mp.status?.replicas}`);
    return pool;
  });
}
