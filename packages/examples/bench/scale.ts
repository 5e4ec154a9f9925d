/**
 * One provider manager at scale, processes as in production: `./dev bench scale [--pools 1000]
 * [--clusters 100] [--replicas 3] [--speed 30] [--steady 60] [--converge-timeout 1800]`.
 *
 * This process is the rest of the world: the management cluster (in-memory API server), CAPI core
 * (the emulator), one in-memory HTTPS API server per workload cluster (each Cluster's
 * `<cluster>-kubeconfig` Secret points at its own, on its own port) and the kubelets that register
 * the instances' Nodes there. The manager (`scale-manager.ts`: the example provider, readiness
 * `node`, the fake cloud) runs in a child process, so its CPU, memory and sockets are its own.
 *
 * It prints: time to converge (every pool Ready with its instances counted by core), the manager's
 * CPU to converge, its peak and steady RSS, heap after a full GC at steady state, its established
 * TCP sockets per workload server port (read from `/proc/<pid>/fd` and `/proc/<pid>/net/tcp*`,
 * sampled through the steady window), and its writes (management and workload clusters) in the
 * steady window; each against the issue's target, with the load average of the machine.
 *
 * @module
 */
import { type ChildProcess, fork } from "node:child_process";
import {
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { availableParallelism, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { clusterv1beta2 } from "@capi-ts/sdk/api";
import { ConnectionError, KubeClient, type ResourceDescriptor } from "@capi-ts/sdk/runtime";
import {
  type ApiServer,
  capiCrdsFolder,
  markWorkloadClusterReady,
  type RequestRecord,
  startApiServer,
  startCapiCore,
} from "@capi-ts/testing";
import type { KubernetesObject } from "@kubernetes/client-node";
import { bundleAsShipped } from "../../testing/bench/bundle.js";
import { type InstanceBoot, type KubeletHooks, nodeRegistrar } from "../src/cloud/index.js";
import { FakeCloudMachinePool } from "../src/provider/index.js";
import type { ScaleManagerStart, ScaleManagerStats } from "./scale-manager.js";

const PROVIDER = "fakecloud-provider";
const NAMESPACE = "default";
const SYNC_PERIOD_MS = 10 * 60_000;
const CONCURRENCY = 10;
/** The targets and its baseline (main before this work, same setup but one shared workload server). */
const TARGET_STEADY_RSS_MIB = 250;
const TARGET_SOCKETS_PER_CLUSTER = 2;

const { values } = parseArgs({
  options: {
    pools: { type: "string", default: "1000" },
    clusters: { type: "string", default: "100" },
    replicas: { type: "string", default: "3" },
    speed: { type: "string", default: "30" },
    steady: { type: "string", default: "60" },
    "converge-timeout": { type: "string", default: "1800" },
  },
});

function positive(flag: string, text: string, integer = true): number {
  const n = Number(text);
  if (!Number.isFinite(n) || n <= 0 || (integer && !Number.isInteger(n))) {
    throw new Error(
      `--${flag} must be a positive ${integer ? "integer" : "number"}, got "${text}"`,
    );
  }
  return n;
}
const pools = positive("pools", values.pools);
const clusterCount = positive("clusters", values.clusters);
const replicas = positive("replicas", values.replicas);
const speed = positive("speed", values.speed, false);
const steadyS = positive("steady", values.steady, false);
const convergeTimeoutS = positive("converge-timeout", values["converge-timeout"], false);
if (clusterCount > pools)
  throw new Error("--clusters must not exceed --pools: every Cluster gets a pool");

type Obj = KubernetesObject & {
  spec?: Record<string, unknown> & { providerIDList?: string[] };
  status?: Record<string, unknown> & {
    replicas?: number;
    conditions?: { type: string; status: string }[];
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
const isProviderWrite = (r: RequestRecord): boolean =>
  !READ_VERBS.has(r.verb) &&
  (r.fieldManager === PROVIDER || r.userAgent?.includes(PROVIDER) === true);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const fixed = (n: number, digits = 1) => n.toFixed(digits);
const MiB = (bytes: number) => bytes / 2 ** 20;
const load = () =>
  loadavg()
    .map((l) => fixed(l, 2))
    .join(" ");
const clusterOfPool = (i: number) => `c${i % clusterCount}`;

/** Established TCP sockets of a process, by remote port (its fds joined with the netns's tables). */
function socketsByRemotePort(pid: number): Map<number, number> {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const link = readlinkSync(`/proc/${pid}/fd/${fd}`);
      if (link.startsWith("socket:[")) inodes.add(link.slice(8, -1));
    } catch {
      // The fd closed between the listing and the read.
    }
  }
  const byPort = new Map<number, number>();
  for (const table of ["tcp", "tcp6"]) {
    let text = "";
    try {
      text = readFileSync(`/proc/${pid}/net/${table}`, "utf8");
    } catch {
      continue;
    }
    for (const line of text.split("\n").slice(1)) {
      const fields = line.trim().split(/\s+/);
      // local remote state … inode (field 9); state 01 is ESTABLISHED.
      if (fields.length < 10 || fields[3] !== "01" || !inodes.has(fields[9] ?? "")) continue;
      const port = Number.parseInt(fields[2]?.split(":")[1] ?? "", 16);
      byPort.set(port, (byPort.get(port) ?? 0) + 1);
    }
  }
  return byPort;
}

interface Manager {
  readonly child: ChildProcess;
  stats(): Promise<ScaleManagerStats>;
  stop(): Promise<void>;
}

/**
 * The environment the scaffold's image gives a provider (its Dockerfile's `ENV` lines): the manager
 * runs with it, so the memory measured is the memory a provider ships with. A variable set in the
 * benchmark's own environment wins, for experiments (`MALLOC_ARENA_MAX=8 ./dev bench scale`).
 */
function imageEnvironment(): Record<string, string> {
  const dockerfile = readFileSync(
    fileURLToPath(new URL("../../create-capi-provider/template/Dockerfile", import.meta.url)),
    "utf8",
  );
  const env: Record<string, string> = {};
  for (const match of dockerfile.matchAll(/^ENV ([A-Z_][A-Z0-9_]*)=(\S+)$/gm)) {
    if (match[1] !== undefined && match[2] !== undefined) {
      env[match[1]] = process.env[match[1]] ?? match[2];
    }
  }
  return env;
}
const managerEnv = imageEnvironment();
const managerEnvText =
  Object.entries(managerEnv)
    .map(([name, value]) => `${name}=${value}`)
    .join(" ") || "none";

// The manager runs bundled, as a provider ships it.
async function buildManager(): Promise<string> {
  const outDir = await bundleAsShipped("bench-scale", {
    "scale-manager": fileURLToPath(new URL("./scale-manager.ts", import.meta.url)),
  });
  return join(outDir, "scale-manager.js");
}

/** Forks the manager process; its kubelet hooks run here, against the instance's workload server. */
async function startManager(
  kubeconfigPath: string,
  kubelets: Map<string, KubeletHooks>,
): Promise<Manager> {
  const managerBundle = await buildManager();
  // No tsx and no source conditions: the bundle runs on plain Node, as a provider's image does.
  const child = fork(managerBundle, [], {
    execArgv: [],
    env: { ...process.env, ...managerEnv },
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  let statsWaiter: ((stats: ScaleManagerStats) => void) | undefined;
  const ready = new Promise<void>((resolve, reject) => {
    child.once("exit", (code) => reject(new Error(`the manager process exited (${code})`)));
    child.on(
      "message",
      (message: { type: string; id?: number; hook?: keyof KubeletHooks; boot?: InstanceBoot }) => {
        if (message.type === "ready") resolve();
        if (message.type === "stats") statsWaiter?.(message as unknown as ScaleManagerStats);
        if (message.type === "kubelet" && message.boot && message.hook) {
          // The group is `<cluster>.<namespace>.<pool>` (the example driver's resourceName).
          const cluster = message.boot.groupName?.split(".")[0] ?? "";
          const hook = kubelets.get(cluster)?.[message.hook] as
            | ((boot: InstanceBoot) => Promise<unknown>)
            | undefined;
          Promise.resolve(hook ? hook(message.boot) : undefined).then(
            () => child.send({ type: "kubelet-done", id: message.id }),
            (error: unknown) =>
              child.send({ type: "kubelet-done", id: message.id, error: String(error) }),
          );
        }
      },
    );
  });
  const start: ScaleManagerStart = {
    type: "start",
    kubeconfigPath,
    provider: PROVIDER,
    speed,
    syncPeriodMs: SYNC_PERIOD_MS,
    concurrency: CONCURRENCY,
  };
  child.send(start);
  await ready;
  return {
    child,
    stats: () =>
      new Promise((resolve) => {
        statsWaiter = resolve;
        child.send({ type: "stats" });
      }),
    stop: () =>
      new Promise((resolve) => {
        child.removeAllListeners("exit");
        child.once("exit", () => resolve());
        child.send({ type: "stop" });
      }),
  };
}

console.log(
  `scale benchmark (node ${process.version}): ${pools} pools × ${replicas} instances over ${clusterCount} Clusters, one workload API server each; manager in its own process (example provider, readiness node, --sync-period ${SYNC_PERIOD_MS / 60_000} min, --concurrency ${CONCURRENCY}; the image's environment: ${managerEnvText}); cloud and kit clock ${speed}× wall time; ${availableParallelism()} cores, load average ${load()}`,
);
const api = await startApiServer();
await api.installCRDs([capiCrdsFolder]);
await api.installCRDs([FakeCloudMachinePool.crd]);
const core = await startCapiCore({
  kubeConfig: api.kubeConfig,
  machinePools: true,
  nodeRefRequeueMs: 200,
  rateLimitIntervalMs: 0,
  clusterCache: { connectionRetryMs: 200 },
});
const client = new KubeClient(api.kubeConfig, { fieldManager: "bench" });
const workloads = new Map<string, ApiServer>();
const kubelets = new Map<string, KubeletHooks>();
for (let c = 0; c < clusterCount; c++) {
  const name = `c${c}`;
  const workload = await startApiServer({ tls: true });
  workloads.set(name, workload);
  kubelets.set(name, nodeRegistrar({ kubeConfig: workload.kubeConfig }));
  await client.create(Clusters, {
    apiVersion: "cluster.x-k8s.io/v1beta2",
    kind: "Cluster",
    metadata: { name, namespace: NAMESPACE },
    spec: {
      infrastructureRef: { apiGroup: "infrastructure.cluster.x-k8s.io", kind: "DevCluster", name },
    },
  });
  await markWorkloadClusterReady(client, { namespace: NAMESPACE, name }, workload.kubeConfig);
}
const portOf = new Map([...workloads].map(([name, w]) => [Number(new URL(w.url).port), name]));

// The manager reads the management cluster's kubeconfig from a file, as a provider reads --kubeconfig.
const work = mkdtempSync(join(tmpdir(), "capi-ts-bench-scale-"));
const kubeconfigPath = join(work, "kubeconfig");
writeFileSync(kubeconfigPath, api.kubeConfig.exportConfig(), { mode: 0o600 });
const manager = await startManager(kubeconfigPath, kubelets);
const pid = manager.child.pid ?? 0;
const before = await manager.stats();
const started = performance.now();
let peakConvergeSockets = 0;
const createPool = async (i: number) => {
  const name = `p${i}`;
  const clusterName = clusterOfPool(i);
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
  await Promise.all(Array.from({ length: Math.min(20, pools - i) }, (_, k) => createPool(i + k)));
}

const deadline = performance.now() + convergeTimeoutS * 1000;
let lastProgress = performance.now();
let ready = 0;
const loads: number[] = [];
for (;;) {
  let infra: Obj[];
  let mps: Obj[];
  try {
    [infra, mps] = await Promise.all([
      client.list(Pools).then((l) => l.items),
      client.list(MachinePools).then((l) => l.items),
    ]);
  } catch (error) {
    if (!(error instanceof ConnectionError) || performance.now() > deadline) throw error;
    await sleep(250);
    continue;
  }
  const mpReplicas = new Map(mps.map((mp) => [mp.metadata?.name, mp.status?.replicas ?? 0]));
  ready = infra.filter(
    (p) =>
      p.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") &&
      p.spec?.providerIDList?.length === replicas &&
      p.status?.replicas === replicas &&
      mpReplicas.get(p.metadata?.name) === replicas,
  ).length;
  const sockets = [...socketsByRemotePort(pid)].filter(([port]) => portOf.has(port));
  peakConvergeSockets = Math.max(peakConvergeSockets, ...sockets.map(([, n]) => n), 0);
  if (ready === pools) break;
  if (performance.now() - lastProgress > 15_000) {
    lastProgress = performance.now();
    loads.push(loadavg()[0] ?? 0);
    const stats = await manager.stats();
    console.log(
      `  … ${ready}/${pools} pools converged after ${fixed((lastProgress - started) / 1000)} s; manager RSS ${fixed(MiB(stats.rssBytes), 0)} MiB; load ${load()}`,
    );
  }
  if (performance.now() > deadline) {
    throw new Error(
      `only ${ready} of ${pools} pools converged within ${convergeTimeoutS} s (raise --converge-timeout on a busy machine)`,
    );
  }
  await sleep(500);
}
const convergeS = (performance.now() - started) / 1000;
const converged = await manager.stats();

// Converged pools still get their Nodes' metadata (core drops the uninitialized taint, then the kit
// records its taints and labels): the window starts once the provider has written nothing for 5 s.
const settleStarted = performance.now();
const providerWrites = () =>
  api.requests(isProviderWrite).length +
  [...workloads.values()].reduce((sum, w) => sum + w.requests(isProviderWrite).length, 0);
for (;;) {
  api.clearRequests();
  for (const w of workloads.values()) w.clearRequests();
  await sleep(5000);
  if (providerWrites() === 0) break;
  if (performance.now() > deadline) {
    throw new Error(
      `the provider kept writing after converging (${providerWrites()} writes in 5 s)`,
    );
  }
}
const settleS = (performance.now() - settleStarted) / 1000;
api.clearRequests();
for (const w of workloads.values()) w.clearRequests();
const windowStart = await manager.stats();
const samples: Map<number, number>[] = [];
const windowEnd = performance.now() + steadyS * 1000;
while (performance.now() < windowEnd) {
  samples.push(socketsByRemotePort(pid));
  loads.push(loadavg()[0] ?? 0);
  await sleep(2000);
}
const steady = await manager.stats();
const managementWrites = api.requests(isProviderWrite).length;
const workloadWrites = [...workloads.values()].reduce(
  (sum, w) => sum + w.requests(isProviderWrite).length,
  0,
);
const perCluster = samples.flatMap((sample) =>
  [...portOf.keys()].map((port) => sample.get(port) ?? 0),
);
const maxSockets = Math.max(0, ...perCluster);
const meanSockets = perCluster.reduce((a, b) => a + b, 0) / Math.max(1, perCluster.length);
const managementPort = Number(new URL(api.url).port);
const managementSockets = Math.max(0, ...samples.map((s) => s.get(managementPort) ?? 0));
const cloudHours = (steady.cloudTimeMs - windowStart.cloudTimeMs) / 3_600_000;

await manager.stop();
await core.stop();
for (const w of workloads.values()) await w.stop();
await api.stop();
rmSync(work, { recursive: true, force: true });

const cpuS = (s: ScaleManagerStats) => (s.cpuUserMs + s.cpuSystemMs) / 1000;
const maxLoad = Math.max(...loads, loadavg()[0] ?? 0);
const cores = availableParallelism();
const verdict = (ok: boolean) => (ok ? "met" : "MISSED");
const rows: [string, string, string][] = [
  ["pools converged", `${ready} / ${pools}`, verdict(ready === pools)],
  ["time to converge (wall)", `${fixed(convergeS)} s`, "–"],
  ["manager CPU to converge", `${fixed(cpuS(converged) - cpuS(before))} s`, "–"],
  ["converged → no provider write for 5 s (Node metadata settling)", `${fixed(settleS)} s`, "–"],
  ["manager CPU in the steady window", `${fixed(cpuS(steady) - cpuS(windowStart), 2)} s`, "–"],
  ["manager peak RSS", `${fixed(MiB(steady.peakRssBytes), 0)} MiB`, "–"],
  [
    "manager steady RSS (end of window)",
    `${fixed(MiB(steady.rssBytes), 0)} MiB`,
    `${verdict(MiB(steady.rssBytes) <= TARGET_STEADY_RSS_MIB)} (≤ ${TARGET_STEADY_RSS_MIB} MiB)`,
  ],
  ["manager heap after GC, steady", `${fixed(MiB(steady.heapAfterGcBytes), 1)} MiB`, "–"],
  [
    "manager heap committed / external memory after GC, steady",
    `${fixed(MiB(steady.heapCommittedBytes), 1)} / ${fixed(MiB(steady.externalBytes), 1)} MiB`,
    "–",
  ],
  [
    "of which young generation / old generation committed (used), after GC",
    `${fixed(MiB(steady.youngCommittedBytes), 1)} / ${fixed(MiB(steady.oldCommittedBytes), 1)} (${fixed(MiB(steady.oldUsedBytes), 1)}) MiB`,
    "–",
  ],
  [
    "of the steady RSS: anonymous / file-backed",
    steady.rssAnonBytes === undefined || steady.rssFileBytes === undefined
      ? "not reported on this system"
      : `${fixed(MiB(steady.rssAnonBytes), 0)} / ${fixed(MiB(steady.rssFileBytes), 0)} MiB`,
    "–",
  ],
  ["sockets per workload server while converging, max", String(peakConvergeSockets), "–"],
  [
    "sockets per workload server at steady state, max (mean)",
    `${maxSockets} (${fixed(meanSockets, 2)})`,
    `${verdict(maxSockets <= TARGET_SOCKETS_PER_CLUSTER)} (≤ ${TARGET_SOCKETS_PER_CLUSTER})`,
  ],
  ["sockets to the management server at steady state, max", String(managementSockets), "–"],
  [
    "writes in the steady window (management + workload)",
    `${managementWrites} + ${workloadWrites}`,
    verdict(managementWrites + workloadWrites === 0),
  ],
  [
    "reconciles per pool per hour (steady)",
    fixed((steady.reconciles - windowStart.reconciles) / pools / cloudHours),
    "–",
  ],
  [
    "cloud mutations in the steady window",
    String(steady.cloudMutations - windowStart.cloudMutations),
    "–",
  ],
  ["kubelet hook errors", String(steady.hookErrors), "–"],
];
console.log();
console.log(
  `steady window ${steadyS} s wall (${fixed(cloudHours * 60)} min of kit time); load average max ${fixed(maxLoad, 2)} on ${cores} cores${maxLoad > cores ? ": the machine was busy, read times and CPU as upper bounds" : ""}`,
);
console.log("| figure | measured | target |");
console.log("| --- | --- | --- |");
for (const [figure, measured, target] of rows)
  console.log(`| ${figure} | ${measured} | ${target} |`);
process.exit(0);
