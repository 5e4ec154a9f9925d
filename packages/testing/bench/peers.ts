// ./dev bench peers [--backend real|memory] [--n 1000,5000] [--rounds 3] [--steady 30] [--workers 8]
//                   [--peers controller-runtime,provider,capi-ts,client-node] [--cpu-prof DIR]
//                   [--heap-snapshot DIR] [--provider-build bundle|tsc]
//
// Peers: "provider" is capi-ts as a scaffolded provider ships (the scaffold's main.ts and kind.ts
// imports, its tsup build, its Dockerfile's ENV); "capi-ts" imports only @capi-ts/sdk/runtime (the
// lower bound); "client-node" is @kubernetes/client-node by hand; "controller-runtime" is Go.
//
// --heap-snapshot DIR: the TypeScript peers write a heap snapshot once converged after a restart
// (`<peer>.js-<n>-<pid>.heapsnapshot`), for Chrome DevTools' Memory tab.
//
// --cpu-prof DIR: the TypeScript peers run with `node --cpu-prof`, one profile per process in DIR
// (`<peer>-<n>-<pid>.cpuprofile`; the first of a size converges, the second restarts); open them in
// Chrome DevTools or any .cpuprofile viewer.
//
// The same Gadget controller (spec.size → status.observedSize, 8 workers, reads from a cache) written
// with capi-ts, plain @kubernetes/client-node and Go controller-runtime, each run as its own process
// against one API server (a real kube-apiserver + etcd, or the in-memory server in a child process).
// Rounds are interleaved (the peer order rotates every round) and every figure is the median of the
// rounds, printed with its ratio to controller-runtime: on a shared machine only the ratios of one run
// mean something; the absolute times are informational.
//
// One run of a peer at size N:
//   1. the harness deletes every Gadget and creates N fresh ones (no status);
//   2. the peer starts; "converge" is spawn → the harness's watch has seen all N statuses written;
//      controller CPU, server CPU and the peer's requests are counted over the same span;
//   3. steady state: the converged peer keeps running for --steady seconds (largest N only): its CPU
//      and writes in that window (the client's 30 s request timers fire in it if they are not cleared);
//   4. the peer is stopped and started again: "restart → idle" is spawn → every Gadget reconciled once
//      (the peer reports it), with the writes of that restart (should be 0); then the peer reports its
//      heap after a full GC, and the harness reads its RSS.
import { type ChildProcess, fork, spawn, spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { type AddressInfo, createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { KubeClient, type ResourceDescriptor, selfSignedCertificate } from "@capi-ts/sdk/runtime";
import { KubeConfig } from "@kubernetes/client-node";
import type { Options } from "tsup";
import { type ControlPlane, startControlPlane } from "../src/index.js";
import { bundleAsShipped } from "./bundle.js";
import {
  GADGET_GROUP,
  GADGET_PLURAL,
  GADGET_VERSION,
  type Gadget,
  gadgetCrd,
} from "./peers/gadget.js";

// "provider" is capi-ts as a scaffolded provider ships (its imports, its build, its image's ENV);
// "capi-ts" is the runtime subpath bundled, the lower bound.
const PEERS = ["controller-runtime", "provider", "capi-ts", "client-node"] as const;
type PeerName = (typeof PEERS)[number];
const HARNESS_AGENT = "capi-ts-bench-harness";
const NAMESPACE = "default";
const WRITE_VERBS = new Set(["create", "update", "patch", "delete", "deletecollection"]);

function arg(name: string, fallback: string): string {
  const index = process.argv.indexOf(`--${name}`);
  return index >= 0 ? (process.argv[index + 1] ?? fallback) : fallback;
}

const backend = arg("backend", "real");
if (backend !== "real" && backend !== "memory") {
  throw new Error(`--backend must be "real" or "memory" (got "${backend}")`);
}
const sizes = arg("n", "1000,5000").split(",").map(Number);
const rounds = Number(arg("rounds", "3"));
const steadySeconds = Number(arg("steady", "30"));
const workers = Number(arg("workers", "8"));
const peers = arg("peers", PEERS.join(",")).split(",") as PeerName[];
const cpuProfDir = arg("cpu-prof", "");
const heapSnapshotDir = arg("heap-snapshot", "");
if (heapSnapshotDir) mkdirSync(resolve(heapSnapshotDir), { recursive: true });
const providerBuild = arg("provider-build", "bundle");
if (providerBuild !== "bundle" && providerBuild !== "tsc") {
  throw new Error(`--provider-build must be "bundle" or "tsc" (got "${providerBuild}")`);
}
if (cpuProfDir) mkdirSync(resolve(cpuProfDir), { recursive: true });
for (const peer of peers) {
  if (!PEERS.includes(peer))
    throw new Error(`--peers: unknown peer "${peer}" (${PEERS.join(", ")})`);
}
if (sizes.some((n) => !Number.isInteger(n) || n <= 0)) {
  throw new Error(`--n takes positive integers separated by commas (got "${arg("n", "")}")`);
}

const root = resolve(import.meta.dirname, "..", "..", "..");
const work = join(tmpdir(), `capi-ts-bench-peers-${process.pid}`);
mkdirSync(work, { recursive: true });
const clockTicks = Number(spawnSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).stdout) || 100;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** `promise`, or `fallback` after `ms`; the timer is cleared either way (a pending one keeps the process alive). */
async function within<T>(promise: Promise<T>, ms: number, fallback: T): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<T>((resolve) => {
    timer = setTimeout(() => resolve(fallback), ms);
  });
  try {
    return await Promise.race([promise, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

// ---- peers: build ----------------------------------------------------------------------------------
const goPeer = join(root, "tools", "peers", "bin", "gadget-controller-runtime");
function buildGoPeer(): void {
  const sources = ["main.go", "go.mod", "go.sum"].map(
    (f) => statSync(join(root, "tools", "peers", "controller-runtime", f)).mtimeMs,
  );
  let built = 0;
  try {
    built = statSync(goPeer).mtimeMs;
  } catch {}
  if (built > Math.max(...sources)) return;
  console.log("building the controller-runtime peer (Go)…");
  const result = spawnSync(join(root, "tools", "peers", "build.sh"), { stdio: "inherit" });
  if (result.status !== 0) throw new Error("tools/peers/build.sh failed (see above)");
}

// The runtime and client-node peers run bundled (the lower bound of what a Node controller costs).
const tsOut = join(root, "packages", "sdk", ".tmp", "bench-peers");
// The provider peer runs as a scaffolded provider does: built by the scaffold's tsup config from the
// built packages (--provider-build tsc: tsc's emit against node_modules, unbundled), with the ENV
// lines of the scaffold's Dockerfile.
// Under packages/sdk, as a scaffold's dist/ sits beside the SDK's dependencies in node_modules: the
// runtime requires its logger and HTTP client late, from there.
const providerOut = join(root, "packages", "sdk", ".tmp", "bench-peers-provider");
async function buildTsPeers(): Promise<void> {
  await bundleAsShipped("bench-peers", {
    "capi-ts": join(import.meta.dirname, "peers", "capi-ts.ts"),
    "client-node": join(import.meta.dirname, "peers", "client-node.ts"),
  });
  if (!peers.includes("provider")) return;
  console.log("building the packages the provider peer imports (turbo)…");
  const built = spawnSync("turbo", ["run", "build", "--output-logs=errors-only"], {
    cwd: root,
    stdio: "inherit",
  });
  if (built.status !== 0) throw new Error("the packages did not build (see above)");
  if (providerBuild === "bundle") {
    // The scaffold's own tsup.config.ts, pointed at the peer.
    const { default: scaffoldBuild } = await import(
      "../../create-capi-provider/template/tsup.config.js"
    );
    const { build } = await import("tsup");
    await build({
      ...(scaffoldBuild as Options),
      entry: { provider: join(import.meta.dirname, "peers", "provider.ts") },
      outDir: providerOut,
      config: false,
      silent: true,
    });
  } else {
    // tsc's emit, file by file, run against node_modules unbundled (the scaffold's build up to 0.2.0).
    const { default: ts } = await import("typescript");
    mkdirSync(providerOut, { recursive: true });
    for (const file of ["provider", "gadget"]) {
      const source = readFileSync(join(import.meta.dirname, "peers", `${file}.ts`), "utf8");
      const { outputText } = ts.transpileModule(source, {
        compilerOptions: {
          module: ts.ModuleKind.ESNext,
          target: ts.ScriptTarget.ES2023,
          verbatimModuleSyntax: true,
        },
        fileName: `${file}.ts`,
      });
      writeFileSync(join(providerOut, `${file}.js`), outputText);
    }
  }
  writeFileSync(join(providerOut, "package.json"), '{ "type": "module" }\n');
  const { cert, key } = selfSignedCertificate(["localhost", "127.0.0.1"]);
  mkdirSync(join(work, "webhook-certs"), { recursive: true });
  writeFileSync(join(work, "webhook-certs", "tls.crt"), cert);
  writeFileSync(join(work, "webhook-certs", "tls.key"), key);
}

/**
 * The environment the scaffold's image gives a provider: its Dockerfile's `ENV` lines (NODE_OPTIONS,
 * MALLOC_ARENA_MAX, NODE_ENV). A variable set in the benchmark's own environment wins.
 */
function imageEnvironment(): Record<string, string> {
  const dockerfile = readFileSync(
    join(root, "packages", "create-capi-provider", "template", "Dockerfile"),
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

const providerEnvironment = imageEnvironment();

/** A port free on loopback right now, for the provider peer's webhook server. */
async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((ready) => probe.listen(0, "127.0.0.1", ready));
  const { port } = probe.address() as AddressInfo;
  await new Promise((closed) => probe.close(closed));
  return port;
}

// ---- the server ------------------------------------------------------------------------------------
interface Server {
  kubeconfigFile: string;
  kubeConfig: KubeConfig;
  cpuSeconds(): Promise<number>;
  requestVerbs(): Promise<string[]>;
  clearRequests(): Promise<void>;
  stop(): Promise<void>;
}

function procCpuSeconds(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) / clockTicks;
  } catch {
    return Number.NaN;
  }
}

function procRssBytes(pid: number): number {
  try {
    const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return Number(match?.[1]) * 1024;
  } catch {
    return Number.NaN;
  }
}

/** Descendants of this process with one of these command names (the servers run under a guardian). */
function descendantPids(names: readonly string[]): number[] {
  const listing = spawnSync("ps", ["-e", "-o", "pid=,ppid=,comm="], { encoding: "utf8" });
  const parent = new Map<number, number>();
  const comm = new Map<number, string>();
  for (const line of listing.stdout.split("\n")) {
    const [pid, ppid, name] = line.trim().split(/\s+/);
    if (!pid || !ppid || !name) continue;
    parent.set(Number(pid), Number(ppid));
    comm.set(Number(pid), name);
  }
  const out: number[] = [];
  for (const [pid, name] of comm) {
    if (!names.includes(name)) continue;
    for (let up = parent.get(pid); up !== undefined && up > 1; up = parent.get(up)) {
      if (up === process.pid) {
        out.push(pid);
        break;
      }
    }
  }
  return out;
}

async function startRealServer(): Promise<Server> {
  process.env.KUBEBUILDER_ASSETS ??= join(root, "tools", "controlplane", "bin");
  const plane: ControlPlane = await startControlPlane({ requestLog: true });
  await plane.installCRDs(gadgetCrd);
  const kubeconfigFile = join(work, "kubeconfig");
  await plane.writeKubeconfig(kubeconfigFile);
  const pids = descendantPids(["kube-apiserver", "etcd"]);
  if (pids.length !== 2)
    throw new Error(`expected kube-apiserver and etcd as children, found ${pids}`);
  return {
    kubeconfigFile,
    kubeConfig: plane.kubeConfig,
    cpuSeconds: async () => pids.reduce((sum, pid) => sum + procCpuSeconds(pid), 0),
    requestVerbs: async () =>
      plane
        .requests()
        .filter((r) => r.userAgent === undefined || !r.userAgent.startsWith(HARNESS_AGENT))
        .map((r) => r.verb),
    clearRequests: async () => plane.clearRequests(),
    stop: () => plane.stop(),
  };
}

async function startMemoryServer(): Promise<Server> {
  const child = fork(join(import.meta.dirname, "peers-server-child.ts"), [HARNESS_AGENT], {
    execArgv: process.execArgv,
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  const replies: ((message: Record<string, unknown>) => void)[] = [];
  child.on("message", (message) => replies.shift()?.(message as Record<string, unknown>));
  const ask = (message?: string) =>
    new Promise<Record<string, unknown>>((resolve) => {
      replies.push(resolve);
      if (message) child.send(message);
    });
  const url = String((await ask()).url);
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromOptions({
    clusters: [{ name: "bench", server: url, skipTLSVerify: true }],
    users: [{ name: "bench", token: "bench" }],
    contexts: [{ name: "bench", cluster: "bench", user: "bench" }],
    currentContext: "bench",
  });
  const kubeconfigFile = join(work, "kubeconfig");
  writeFileSync(kubeconfigFile, kubeConfig.exportConfig(), { mode: 0o600 });
  return {
    kubeconfigFile,
    kubeConfig,
    cpuSeconds: async () => Number((await ask("cpu")).cpuMicros) / 1e6,
    requestVerbs: async () => (await ask("requests")).verbs as string[],
    clearRequests: async () => {
      await ask("clear");
    },
    stop: async () => {
      child.send("stop");
      await new Promise((r) => child.once("exit", r));
    },
  };
}

// ---- one peer run ----------------------------------------------------------------------------------
const GadgetResource: ResourceDescriptor<Gadget & { metadata: object }> = {
  group: GADGET_GROUP,
  version: GADGET_VERSION,
  kind: "Gadget",
  plural: GADGET_PLURAL,
  scope: "Namespaced",
  subresources: { status: true },
};

class Peer {
  readonly process: ChildProcess;
  readonly spawnedAt = performance.now();
  private buffer = "";
  private readonly waiting = new Map<string, (value: number) => void>();
  readonly reported = new Map<string, number>();
  private readonly exited: Promise<void>;

  constructor(name: PeerName, kubeconfig: string, expect: number, webhookPort: number) {
    const args = [
      "--kubeconfig",
      kubeconfig,
      "--workers",
      String(workers),
      "--expect",
      String(expect),
    ];
    // The provider peer takes the manager's standard flags, as a scaffolded main.ts does.
    const providerArgs = [
      "--kubeconfig",
      kubeconfig,
      "--concurrency",
      String(workers),
      "--expect",
      String(expect),
      "--webhook-port",
      String(webhookPort),
      "--webhook-cert-dir",
      join(work, "webhook-certs"),
      "--diagnostics-address",
      "127.0.0.1:0",
      "--health-probe-bind-address",
      "127.0.0.1:0",
    ];
    const nodeFlags = [
      "--expose-gc",
      ...(cpuProfDir
        ? [
            "--cpu-prof",
            `--cpu-prof-dir=${resolve(cpuProfDir)}`,
            `--cpu-prof-name=${name}-${expect}-\${pid}.cpuprofile`,
          ]
        : []),
    ];
    const snapshotEnv = heapSnapshotDir
      ? { BENCH_HEAP_SNAPSHOT_DIR: resolve(heapSnapshotDir) }
      : {};
    this.process =
      name === "controller-runtime"
        ? spawn(goPeer, args, { stdio: ["ignore", "pipe", "inherit"] })
        : name === "provider"
          ? spawn(
              process.execPath,
              [...nodeFlags, join(providerOut, "provider.js"), ...providerArgs],
              {
                stdio: ["ignore", "pipe", "inherit"],
                env: { ...process.env, ...providerEnvironment, ...snapshotEnv },
              },
            )
          : spawn(process.execPath, [...nodeFlags, join(tsOut, `${name}.js`), ...args], {
              stdio: ["ignore", "pipe", "inherit"],
              env: { ...process.env, ...snapshotEnv },
            });
    this.exited = new Promise((r) => this.process.once("exit", () => r()));
    this.process.stdout?.on("data", (chunk: Buffer) => {
      this.buffer += chunk.toString();
      let newline = this.buffer.indexOf("\n");
      while (newline >= 0) {
        const [key = "", value = ""] = this.buffer.slice(0, newline).split(" ");
        this.buffer = this.buffer.slice(newline + 1);
        newline = this.buffer.indexOf("\n");
        const at = key === "idle" ? performance.now() : Number(value);
        this.reported.set(key, at);
        this.waiting.get(key)?.(at);
      }
    });
  }

  get pid(): number {
    return this.process.pid ?? -1;
  }

  /** Resolves with the reported value (for `idle`: the time it was reported). */
  report(key: string, timeoutMs = 300_000): Promise<number> {
    const known = this.reported.get(key);
    if (known !== undefined) return Promise.resolve(known);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`peer did not report "${key}"`)), timeoutMs);
      this.waiting.set(key, (value) => {
        clearTimeout(timer);
        resolve(value);
      });
    });
  }

  async stop(): Promise<void> {
    this.process.kill("SIGTERM");
    const killer = setTimeout(() => this.process.kill("SIGKILL"), 5000);
    await this.exited;
    clearTimeout(killer);
  }
}

interface RunResult {
  convergeS: number;
  cpuS: number;
  serverCpuS: number;
  requests: number;
  initialLists: number;
  verbs: string;
  bootHeap: number;
  /** V8's memory outside its heap (Node peers): a Go heap holds the like of it. */
  external?: number;
  steadyCpuS?: number;
  steadyWrites?: number;
  restartIdleS: number;
  restartWrites: number;
  heap: number;
  rss: number;
}

async function seed(client: KubeClient, n: number): Promise<void> {
  await client.request({
    method: "DELETE",
    path: `/apis/${GADGET_GROUP}/${GADGET_VERSION}/namespaces/${NAMESPACE}/${GADGET_PLURAL}`,
  });
  while ((await client.list(GadgetResource, { namespace: NAMESPACE, limit: 1 })).items.length > 0) {
    await sleep(100);
  }
  let next = 0;
  const create = async () => {
    while (next < n) {
      const i = next++;
      await client.create(GadgetResource, {
        apiVersion: `${GADGET_GROUP}/${GADGET_VERSION}`,
        kind: "Gadget",
        metadata: { name: `g-${i}`, namespace: NAMESPACE },
        spec: { size: (i % 7) + 1 },
      });
    }
  };
  await Promise.all(Array.from({ length: 32 }, create));
}

/** Resolves when every Gadget's status matches its spec, as seen by a watch from `rv`. */
function convergence(client: KubeClient, n: number, rv: string) {
  const abort = new AbortController();
  const done = (async () => {
    const pending = new Set(Array.from({ length: n }, (_, i) => `g-${i}`));
    let from = rv;
    while (pending.size > 0) {
      try {
        for await (const event of client.watch(GadgetResource, {
          namespace: NAMESPACE,
          resourceVersion: from,
          signal: abort.signal,
        })) {
          from = event.object.metadata?.resourceVersion ?? from;
          const gadget = event.object;
          if (event.type === "BOOKMARK") continue;
          if (gadget.status?.observedSize === gadget.spec.size) {
            pending.delete(gadget.metadata?.name ?? "");
            if (pending.size === 0) break;
          }
        }
      } catch (error) {
        if (abort.signal.aborted) throw error;
      }
    }
    abort.abort();
    return performance.now();
  })();
  return { done, cancel: () => abort.abort() };
}

async function runPeer(
  server: Server,
  client: KubeClient,
  name: PeerName,
  n: number,
  steady: number,
): Promise<RunResult> {
  await seed(client, n);
  const listed = await client.list(GadgetResource, { namespace: NAMESPACE, limit: 1 });
  const watch = convergence(client, n, listed.metadata.resourceVersion ?? "0");
  await sleep(200);
  await server.clearRequests();
  const serverCpu0 = await server.cpuSeconds();
  const first = new Peer(name, server.kubeconfigFile, 0, await freePort());
  const convergedAt = await within(watch.done, 600_000, Number.NaN);
  const cpuS = procCpuSeconds(first.pid);
  const serverCpuS = (await server.cpuSeconds()) - serverCpu0;
  const verbs = await server.requestVerbs();
  const result: RunResult = {
    convergeS: (convergedAt - first.spawnedAt) / 1000,
    cpuS,
    serverCpuS,
    requests: verbs.length,
    initialLists: verbs.filter((v) => v === "list").length,
    verbs: [...new Set(verbs)].map((v) => `${v} ${verbs.filter((w) => w === v).length}`).join(", "),
    bootHeap: await first.report("boot-heap"),
    restartIdleS: Number.NaN,
    restartWrites: Number.NaN,
    heap: Number.NaN,
    rss: Number.NaN,
  };
  if (steady > 0) {
    const writesBefore = verbs.filter((v) => WRITE_VERBS.has(v)).length;
    await sleep(steady * 1000);
    result.steadyCpuS = procCpuSeconds(first.pid) - cpuS;
    result.steadyWrites =
      (await server.requestVerbs()).filter((v) => WRITE_VERBS.has(v)).length - writesBefore;
  }
  await first.stop();
  await server.clearRequests();
  const second = new Peer(name, server.kubeconfigFile, n, await freePort());
  const idleAt = await second.report("idle");
  result.restartIdleS = (idleAt - second.spawnedAt) / 1000;
  result.heap = await second.report("heap");
  if (name !== "controller-runtime") result.external = await second.report("external");
  result.rss = procRssBytes(second.pid);
  result.restartWrites = (await server.requestVerbs()).filter((v) => WRITE_VERBS.has(v)).length;
  await second.stop();
  return result;
}

// ---- main ------------------------------------------------------------------------------------------
const median = (values: readonly number[]): number => {
  const sorted = values.filter((v) => Number.isFinite(v)).sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  const mid = sorted.length / 2;
  return Number.isInteger(mid)
    ? ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2
    : (sorted[Math.floor(mid)] ?? Number.NaN);
};

if (peers.includes("controller-runtime")) buildGoPeer();
await buildTsPeers();
console.log(
  `starting the ${backend === "real" ? "real kube-apiserver + etcd" : "in-memory API server"}…`,
);
const server = backend === "real" ? await startRealServer() : await startMemoryServer();
const client = new KubeClient(server.kubeConfig, { userAgent: HARNESS_AGENT });
const results = new Map<string, RunResult[]>();
const largest = Math.max(...sizes);
try {
  for (let round = 0; round < rounds; round++) {
    for (const n of sizes) {
      const order = peers.map((_, i) => peers[(i + round) % peers.length] as PeerName);
      for (const name of order) {
        const result = await runPeer(server, client, name, n, n === largest ? steadySeconds : 0);
        const key = `${name}@${n}`;
        results.set(key, [...(results.get(key) ?? []), result]);
        console.log(
          `round ${round + 1}/${rounds} N=${n} ${name}: converge ${result.convergeS.toFixed(2)} s, cpu ${result.cpuS.toFixed(2)} s, server cpu ${result.serverCpuS.toFixed(2)} s, ${result.requests} requests (${result.verbs}), restart→idle ${result.restartIdleS.toFixed(2)} s, heap ${(result.heap / 2 ** 20).toFixed(1)} MiB, rss ${(result.rss / 2 ** 20).toFixed(0)} MiB${result.steadyCpuS === undefined ? "" : `, steady cpu ${result.steadyCpuS.toFixed(2)} s / ${result.steadyWrites} writes`}`,
        );
      }
    }
  }
} finally {
  await server.stop();
}

// ---- the table -------------------------------------------------------------------------------------
const figure = (peer: PeerName, n: number, pick: (r: RunResult) => number | undefined) =>
  median((results.get(`${peer}@${n}`) ?? []).map((r) => pick(r) ?? Number.NaN));
const anchor: PeerName = "controller-runtime";
const others = peers.filter((p) => p !== anchor);
const header = [
  "figure",
  ...(peers.includes(anchor) ? [anchor] : []),
  ...others.flatMap((p) => (peers.includes(anchor) ? [p, "ratio"] : [p])),
];
const rows: string[][] = [];
function row(label: string, values: (peer: PeerName) => number, format: (v: number) => string) {
  const base = peers.includes(anchor) ? values(anchor) : Number.NaN;
  const cells = [label];
  if (peers.includes(anchor)) cells.push(format(base));
  for (const peer of others) {
    const value = values(peer);
    cells.push(format(value));
    if (peers.includes(anchor)) {
      cells.push(
        base === 0 || !Number.isFinite(base) || !Number.isFinite(value)
          ? value === base
            ? "="
            : "–"
          : `${(value / base).toFixed(2)}×`,
      );
    }
  }
  rows.push(cells);
}
const s = (v: number) => `${v.toFixed(2)} s`;
const mib = (v: number) => (Number.isFinite(v) ? `${(v / 2 ** 20).toFixed(1)} MiB` : "–");
const count = (v: number) => (Number.isFinite(v) ? String(Math.round(v)) : "–");
for (const n of sizes)
  row(`spawn → ${n} statuses written`, (p) => figure(p, n, (r) => r.convergeS), s);
for (const n of sizes)
  row(`controller CPU to converge ${n}`, (p) => figure(p, n, (r) => r.cpuS), s);
for (const n of sizes)
  row(`server CPU while converging ${n}`, (p) => figure(p, n, (r) => r.serverCpuS), s);
for (const n of sizes)
  row(`requests to converge ${n}`, (p) => figure(p, n, (r) => r.requests), count);
for (const n of sizes)
  row(`  of which LIST, at ${n}`, (p) => figure(p, n, (r) => r.initialLists), count);
for (const n of sizes) row(`restart → idle, ${n}`, (p) => figure(p, n, (r) => r.restartIdleS), s);
for (const n of sizes)
  row(`writes on restart, ${n}`, (p) => figure(p, n, (r) => r.restartWrites), count);
if (steadySeconds > 0) {
  row(
    `controller CPU in ${steadySeconds} s steady state at ${largest}`,
    (p) => figure(p, largest, (r) => r.steadyCpuS),
    s,
  );
  row(
    `writes in ${steadySeconds} s steady state at ${largest}`,
    (p) => figure(p, largest, (r) => r.steadyWrites),
    count,
  );
}
row(
  "heap with modules loaded, before start",
  (p) => median(sizes.map((n) => figure(p, n, (r) => r.bootHeap))),
  mib,
);
if (sizes.length >= 2) {
  const small = Math.min(...sizes);
  row(
    `heap per object (${small}→${largest} slope)`,
    (p) =>
      (figure(p, largest, (r) => r.heap) - figure(p, small, (r) => r.heap)) / (largest - small),
    (v) => `${Math.round(v)} B`,
  );
}
for (const n of sizes)
  row(`heap after GC at ${n} (after restart)`, (p) => figure(p, n, (r) => r.heap), mib);
for (const n of sizes)
  row(`external memory at ${n} (after restart)`, (p) => figure(p, n, (r) => r.external), mib);
for (const n of sizes) row(`RSS at ${n} (after restart)`, (p) => figure(p, n, (r) => r.rss), mib);

console.log(
  `\npeers on the ${backend === "real" ? "real kube-apiserver" : "in-memory API server"}: ${workers} workers, medians of ${rounds} interleaved round(s); ratios are peer / controller-runtime (lower is better for capi-ts)\n`,
);
console.log(`| ${header.join(" | ")} |`);
console.log(`|${header.map(() => "---").join("|")}|`);
for (const cells of rows) console.log(`| ${cells.join(" | ")} |`);
