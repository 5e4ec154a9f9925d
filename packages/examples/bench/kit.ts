/**
 * The provider kit at scale: the example provider (`FakeCloudMachinePool`) over many pools, with the
 * fake cloud and the kit on one sped-up clock, against the in-memory API server and the CAPI core
 * emulator. Run: `./dev bench kit [--pools 100,500] [--replicas 3] [--speed 30] [--steady 60]`.
 *
 * Per pool count it prints:
 * - converge: wall time from creating the pools (Cluster, MachinePool, FakeCloudMachinePool) to every
 *   pool `Ready=True` with its instances in `providerIDList` and counted by core;
 * - reconciles, API requests of the provider (to the management cluster) and cloud calls, per pool,
 *   while converging;
 * - steady state: over a window of `--steady` wall seconds (`--speed` × as long in cloud time), the
 *   reconciles, cloud reads and API requests per pool, projected to one hour of cloud time, and the
 *   provider's API writes (which must be 0);
 * - event-loop delay (`monitorEventLoopDelay`: how long timers, sockets and signals waited) while
 *   converging and in the steady window, p99 and max, and the process's peak RSS. The API servers,
 *   core and the cloud share the process with the provider, so the delay is the whole process's: an
 *   upper bound of the provider's.
 *
 * The kit runs with its defaults (poll interval, resync period) and the manager with the settings a
 * provider binary built with `parseManagerFlags` gets (`--sync-period` 10 min, `--concurrency` 10); the
 * output names them. Every timer of the kit, the manager and the cloud runs on the same sped-up clock,
 * so "per hour" means per hour of the kit's own time.
 *
 * @module
 */
import { monitorEventLoopDelay, performance } from "node:perf_hooks";
import { parseArgs } from "node:util";
import { Manager, machinePoolController } from "@capi-ts/sdk";
import { clusterv1beta2 } from "@capi-ts/sdk/api";
import { DEFAULT_POLL_INTERVAL_MS } from "@capi-ts/sdk/provider";
import { resolvePoolOptions } from "@capi-ts/sdk/provider/testing";
import { ConnectionError, KubeClient, type ResourceDescriptor } from "@capi-ts/sdk/runtime";
import {
  capiCrdsFolder,
  markWorkloadClusterReady,
  type RequestRecord,
  startApiServer,
  startCapiCore,
} from "@capi-ts/testing";
import type { KubernetesObject } from "@kubernetes/client-node";
import { FakeScalingCloud, nodeRegistrar, RealClock } from "../src/cloud/index.js";
import { FakeCloudMachinePool, fakeCloudDriver } from "../src/provider/index.js";

const PROVIDER = "fakecloud-provider";
const NAMESPACE = "default";
/** What a provider binary built with `parseManagerFlags` runs with (CAPI providers' flag defaults). */
const SYNC_PERIOD_MS = 10 * 60_000;
const CONCURRENCY = 10;

const { values } = parseArgs({
  options: {
    pools: { type: "string", default: "100,500" },
    replicas: { type: "string", default: "3" },
    "pools-per-cluster": { type: "string", default: "100" },
    speed: { type: "string", default: "30" },
    steady: { type: "string", default: "60" },
    "converge-timeout": { type: "string", default: "300" },
    readiness: { type: "string" },
  },
});

function positiveInt(flag: string, text: string): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n <= 0) {
    throw new Error(`--${flag} must be a positive integer, got "${text}"`);
  }
  return n;
}
function positiveNumber(flag: string, text: string): number {
  const n = Number(text);
  if (!Number.isFinite(n) || n <= 0) {
    throw new Error(`--${flag} must be a positive number, got "${text}"`);
  }
  return n;
}

const poolCounts = values.pools.split(",").map((s) => positiveInt("pools", s));
const replicas = positiveInt("replicas", values.replicas);
const poolsPerCluster = positiveInt("pools-per-cluster", values["pools-per-cluster"]);
const speed = positiveNumber("speed", values.speed);
const steadyS = positiveNumber("steady", values.steady);
if (values.readiness !== undefined && !["node", "instance"].includes(values.readiness)) {
  throw new Error(`--readiness takes "node" or "instance", not "${values.readiness}"`);
}
const readiness = values.readiness as "node" | "instance" | undefined;
const convergeTimeoutS = positiveNumber("converge-timeout", values["converge-timeout"]);

type Obj = KubernetesObject & {
  spec?: Record<string, unknown> & { providerIDList?: string[]; replicas?: number };
  status?: Record<string, unknown> & {
    replicas?: number;
    conditions?: { type: string; status: string; reason?: string }[];
  };
};
const Pools: ResourceDescriptor<Obj> = {
  group: FakeCloudMachinePool.group,
  version: FakeCloudMachinePool.storageVersion,
  kind: FakeCloudMachinePool.kind,
  plural: FakeCloudMachinePool.plural,
  scope: "Namespaced",
  subresources: { status: true },
};
const MachinePools = clusterv1beta2.MachinePoolResource as unknown as ResourceDescriptor<Obj>;
const Clusters = clusterv1beta2.ClusterResource as unknown as ResourceDescriptor<Obj>;

const READ_VERBS = new Set(["get", "list", "watch"]);
const isProvider = (r: RequestRecord): boolean =>
  r.fieldManager === PROVIDER || r.userAgent?.includes(PROVIDER) === true;
const isWrite = (r: RequestRecord): boolean => !READ_VERBS.has(r.verb);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const fixed = (n: number, digits = 1) => n.toFixed(digits);

async function reconcileCount(manager: Manager): Promise<number> {
  return manager.metrics.value("controller_runtime_reconcile_total");
}

interface Row {
  pools: number;
  convergeS: number;
  convergeReconciles: number;
  convergeRequests: number;
  convergeCalls: number;
  convergeMutating: number;
  windowCloudMin: number;
  steadyReconcilesPerHour: number;
  steadyReadsPerHour: number;
  steadyMutating: number;
  steadyRequestsPerHour: number;
  steadyWrites: number;
  steadyWriteKinds: string;
  convergeLoop: LoopDelay;
  steadyLoop: LoopDelay;
  peakRssMiB: number;
}

interface LoopDelay {
  p99Ms: number;
  maxMs: number;
}

/** Samples the event-loop delay from now: `read` what it saw so far, `stop` and read. */
function watchLoopDelay(): { read(): LoopDelay; stop(): LoopDelay } {
  const histogram = monitorEventLoopDelay({ resolution: 10 });
  histogram.enable();
  const read = () => ({ p99Ms: histogram.percentile(99) / 1e6, maxMs: histogram.max / 1e6 });
  return {
    read,
    stop: () => {
      histogram.disable();
      return read();
    },
  };
}

const rssMiB = () => process.memoryUsage().rss / 2 ** 20;

async function runOne(pools: number): Promise<Row> {
  const api = await startApiServer();
  const workload = await startApiServer({ tls: true });
  await api.installCRDs([capiCrdsFolder]);
  await api.installCRDs([FakeCloudMachinePool.crd]);
  // Core runs in wall time: without these its 1 s per-object rate limit, 10 s Node reference requeue
  // and 30 s workload-connection retry would dominate the time to converge, and the sped-up kit would
  // poll through them.
  const core = await startCapiCore({
    kubeConfig: api.kubeConfig,
    machinePools: true,
    nodeRefRequeueMs: 200,
    rateLimitIntervalMs: 0,
    clusterCache: { connectionRetryMs: 200 },
  });
  const clock = new RealClock({ speed });
  const cloud = new FakeScalingCloud({
    clock,
    seed: 1,
    kubelet: nodeRegistrar({ kubeConfig: workload.kubeConfig }),
  });
  const manager = new Manager({
    kubeConfig: api.kubeConfig,
    name: PROVIDER,
    logger: { level: "silent" },
    clock,
    syncPeriodMs: SYNC_PERIOD_MS,
    maxConcurrentReconciles: CONCURRENCY,
    gracefulShutdownTimeoutMs: 2000,
  });
  machinePoolController(fakeCloudDriver(cloud.client, { defaultZones: ["zone-a", "zone-b"] }), {
    manager,
    kind: FakeCloudMachinePool,
    ...(readiness ? { readiness } : {}),
  });
  const running = manager.start();
  await Promise.race([manager.elected(), running]);

  const client = new KubeClient(api.kubeConfig, { fieldManager: "bench" });
  const clusters = Math.ceil(pools / poolsPerCluster);
  for (let c = 0; c < clusters; c++) {
    const name = `c${c}`;
    await client.create(Clusters, {
      apiVersion: "cluster.x-k8s.io/v1beta2",
      kind: "Cluster",
      metadata: { name, namespace: NAMESPACE },
      spec: {
        infrastructureRef: {
          apiGroup: "infrastructure.cluster.x-k8s.io",
          kind: "DevCluster",
          name,
        },
      },
    });
    await markWorkloadClusterReady(client, { namespace: NAMESPACE, name }, workload.kubeConfig);
  }

  api.clearRequests();
  const callsBefore = cloud.lastCallSeq();
  const reconcilesBefore = await reconcileCount(manager);
  const convergeLoop = watchLoopDelay();
  const started = performance.now();
  const create = async (i: number) => {
    const name = `p${i}`;
    const clusterName = `c${Math.floor(i / poolsPerCluster)}`;
    await client.create(Pools, {
      apiVersion: FakeCloudMachinePool.apiVersion,
      kind: FakeCloudMachinePool.kind,
      metadata: { name, namespace: NAMESPACE },
      spec: { instanceType: "small", minSize: 0, maxSize: 10 },
    });
    await client.create(MachinePools, {
      apiVersion: "cluster.x-k8s.io/v1beta2",
      kind: "MachinePool",
      metadata: { name, namespace: NAMESPACE },
      spec: {
        clusterName,
        replicas,
        template: {
          spec: {
            clusterName,
            version: "v1.34.1",
            bootstrap: {},
            infrastructureRef: {
              apiGroup: FakeCloudMachinePool.group,
              kind: FakeCloudMachinePool.kind,
              name,
            },
          },
        },
      },
    });
  };
  for (let i = 0; i < pools; i += 20) {
    await Promise.all(Array.from({ length: Math.min(20, pools - i) }, (_, k) => create(i + k)));
  }

  const deadline = performance.now() + convergeTimeoutS * 1000;
  let ready = 0;
  let lastProgress = performance.now();
  for (;;) {
    let infra: Awaited<ReturnType<typeof client.list<Obj>>>;
    let mps: typeof infra;
    try {
      [infra, mps] = await Promise.all([client.list(Pools), client.list(MachinePools)]);
    } catch (error) {
      // The bench's own look may meet a reset keep-alive connection of a busy server: look again.
      if (!(error instanceof ConnectionError) || performance.now() > deadline) throw error;
      await sleep(250);
      continue;
    }
    const mpReplicas = new Map(
      mps.items.map((mp) => [mp.metadata?.name, mp.status?.replicas ?? 0] as const),
    );
    ready = infra.items.filter(
      (p) =>
        p.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") &&
        p.spec?.providerIDList?.length === replicas &&
        p.status?.replicas === replicas &&
        mpReplicas.get(p.metadata?.name) === replicas,
    ).length;
    if (ready === pools) break;
    if (performance.now() - lastProgress > 10_000) {
      lastProgress = performance.now();
      const waiting = infra.items.find(
        (p) => !p.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True"),
      );
      const reason = waiting?.status?.conditions?.find((c) => c.type === "Ready")?.reason;
      console.log(
        `  … ${ready}/${pools} pools converged after ${fixed((lastProgress - started) / 1000)} s${reason ? ` (one waits with Ready reason ${reason})` : ""}; event-loop delay max so far ${fixed(convergeLoop.read().maxMs, 0)} ms, RSS ${fixed(rssMiB(), 0)} MiB`,
      );
    }
    if (performance.now() > deadline) {
      throw new Error(
        `${pools} pools: only ${ready} converged within ${convergeTimeoutS} s (raise --converge-timeout on a busy machine)`,
      );
    }
    await sleep(250);
  }
  const convergeS = (performance.now() - started) / 1000;
  const convergeDelay = convergeLoop.stop();
  const convergeRequests = api.requests(isProvider).length;
  const convergeCalls = cloud.calls({ afterSeq: callsBefore });
  const convergeReconciles = (await reconcileCount(manager)) - reconcilesBefore;

  // Let the last status writes and core's follow-ups land, then measure a quiet window.
  await sleep(2000);
  api.clearRequests();
  const mark = cloud.lastCallSeq();
  const reconcilesMark = await reconcileCount(manager);
  const cloudStart = clock.now();
  const steadyLoop = watchLoopDelay();
  await sleep(steadyS * 1000);
  const steadyDelay = steadyLoop.stop();
  const cloudHours = (clock.now() - cloudStart) / 3_600_000;
  const steadyCalls = cloud.calls({ afterSeq: mark });
  const steadyRequests = api.requests(isProvider);
  const writes = steadyRequests.filter(isWrite);
  const writeKinds = [
    ...new Set(writes.map((w) => `${w.verb} ${w.resource}/${w.subresource ?? ""}`)),
  ];
  // A write at steady state is a finding: say which Ready reasons the writes carried.
  const readyReasons = new Map<string, number>();
  for (const write of writes) {
    const conditions = (
      write.body as { status?: { conditions?: { type?: string; reason?: string }[] } }
    )?.status?.conditions;
    const ready = conditions?.find((c) => c.type === "Ready")?.reason ?? "(no Ready change)";
    readyReasons.set(ready, (readyReasons.get(ready) ?? 0) + 1);
  }
  if (writes.length > 0) {
    console.log(
      `  steady-state writes by the Ready reason they carry: ${[...readyReasons].map(([r, n]) => `${r} ${n}`).join(", ")}`,
    );
  }
  const steadyReconciles = (await reconcileCount(manager)) - reconcilesMark;

  await manager.stop();
  await running.catch(() => undefined);
  await core.stop();
  clock.dispose();
  await cloud.flush();
  await workload.stop();
  await api.stop();

  const perPoolHour = (n: number) => n / pools / cloudHours;
  return {
    pools,
    convergeS,
    convergeReconciles: convergeReconciles / pools,
    convergeRequests: convergeRequests / pools,
    convergeCalls: convergeCalls.length / pools,
    convergeMutating: convergeCalls.filter((c) => c.mutating).length / pools,
    windowCloudMin: cloudHours * 60,
    steadyReconcilesPerHour: perPoolHour(steadyReconciles),
    steadyReadsPerHour: perPoolHour(steadyCalls.filter((c) => !c.mutating).length),
    steadyMutating: steadyCalls.filter((c) => c.mutating).length,
    steadyRequestsPerHour: perPoolHour(steadyRequests.length),
    steadyWrites: writes.length,
    steadyWriteKinds: writeKinds.join(", ") || "-",
    convergeLoop: convergeDelay,
    steadyLoop: steadyDelay,
    // maxRSS is in KiB, and the peak of the whole run so far (pool counts run in order).
    peakRssMiB: process.resourceUsage().maxRSS / 1024,
  };
}

const kit = resolvePoolOptions(readiness ? { readiness } : {});
console.log(
  `kit benchmark (node ${process.version}): example provider, in-memory API server + CAPI core emulator, ${replicas} instances per pool, ${poolsPerCluster} pools per Cluster`,
);
console.log(
  `settings: kit defaults poll ${kit.pollMs / 1000} s (DEFAULT_POLL_INTERVAL_MS ${DEFAULT_POLL_INTERVAL_MS}), resync ${kit.resyncMs / 60_000} min; manager --sync-period ${SYNC_PERIOD_MS / 60_000} min, --concurrency ${CONCURRENCY}; readiness ${kit.readiness}; cloud and kit clock ${speed}× wall time; steady window ${steadyS} s wall`,
);
const rows: Row[] = [];
for (const pools of poolCounts) {
  const row = await runOne(pools);
  rows.push(row);
  console.log(
    `${pools} pools: converged in ${fixed(row.convergeS)} s; event-loop delay max ${fixed(row.convergeLoop.maxMs, 0)} ms; steady window ${fixed(row.windowCloudMin)} cloud min; writes ${row.steadyWrites} (${row.steadyWriteKinds}); peak RSS ${fixed(row.peakRssMiB, 0)} MiB`,
  );
}

const header = ["figure", ...rows.map((r) => `${r.pools} pools`)];
const line = (cells: string[]) => `| ${cells.join(" | ")} |`;
const table: [string, (r: Row) => string][] = [
  ["time to converge (wall)", (r) => `${fixed(r.convergeS)} s`],
  ["reconciles per pool while converging", (r) => fixed(r.convergeReconciles)],
  ["API requests per pool while converging", (r) => fixed(r.convergeRequests)],
  [
    "cloud calls per pool while converging (mutating)",
    (r) => `${fixed(r.convergeCalls)} (${fixed(r.convergeMutating)})`,
  ],
  ["steady state: reconciles per pool per hour", (r) => fixed(r.steadyReconcilesPerHour)],
  ["steady state: cloud reads per pool per hour", (r) => fixed(r.steadyReadsPerHour)],
  ["steady state: cloud mutations", (r) => String(r.steadyMutating)],
  ["steady state: API requests per pool per hour", (r) => fixed(r.steadyRequestsPerHour)],
  ["steady state: API writes", (r) => String(r.steadyWrites)],
  [
    "event-loop delay while converging, p99 / max",
    (r) => `${fixed(r.convergeLoop.p99Ms, 0)} / ${fixed(r.convergeLoop.maxMs, 0)} ms`,
  ],
  [
    "event-loop delay at steady state, p99 / max",
    (r) => `${fixed(r.steadyLoop.p99Ms, 0)} / ${fixed(r.steadyLoop.maxMs, 0)} ms`,
  ],
  ["peak RSS of the process (so far)", (r) => `${fixed(r.peakRssMiB, 0)} MiB`],
];
console.log();
console.log(line(header));
console.log(line(header.map(() => "---")));
for (const [name, cell] of table) console.log(line([name, ...rows.map(cell)]));
