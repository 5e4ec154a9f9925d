// Benchmark of the in-memory API server, run by scripts/bench-apiserver.ts
// (`./dev bench apiserver [--objects N] [--watchers N] [--updates N]`): write throughput, LIST latency
// at N objects, and watch fan-out to many watchers. The server runs in a child process so its CPU time
// per operation is reported apart from the clients' (wall-clock figures depend on the machine's load).
import { fork } from "node:child_process";
import { Agent, get } from "node:http";
import { availableParallelism, loadavg } from "node:os";
import { join } from "node:path";
import { CoreV1Api, KubeConfig } from "@kubernetes/client-node";

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  const v = i >= 0 ? Number(process.argv[i + 1]) : fallback;
  if (!Number.isFinite(v) || v <= 0) throw new Error(`--${name} must be a positive number`);
  return v;
}

const OBJECTS = arg("objects", 10_000);
const WATCHERS = arg("watchers", 500);
const UPDATES = arg("updates", 200);
const CONCURRENCY = 16;

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

const fmt = (n: number, digits = 1) => n.toFixed(digits);

// ---- the server, in a child process ---------------------------------------------------------------
const child = fork(join(import.meta.dirname, "apiserver-child.ts"), [], {
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
const serverCpuMicros = async () => Number((await ask("cpu")).cpuMicros);

const kubeConfig = new KubeConfig();
kubeConfig.loadFromOptions({
  clusters: [{ name: "bench", server: url, skipTLSVerify: true }],
  users: [{ name: "bench", token: "bench" }],
  contexts: [{ name: "bench", cluster: "bench", user: "bench" }],
  currentContext: "bench",
});
const core = kubeConfig.makeApiClient(CoreV1Api);
await core.createNamespace({ body: { metadata: { name: "bench" } } });

// ---- 1. writes ------------------------------------------------------------------------------------
// N creates over keep-alive HTTP, CONCURRENCY in flight; then a smaller batch through client-node,
// which opens a new connection per request.
const body = (i: number) =>
  JSON.stringify({
    metadata: { name: `cm-${i}`, labels: { shard: String(i % 10), app: "bench" } },
    data: { index: String(i), payload: "x".repeat(200) },
  });
let next = 0;
let cpu = await serverCpuMicros();
const writeStart = performance.now();
await Promise.all(
  Array.from({ length: CONCURRENCY }, async () => {
    for (let i = next++; i < OBJECTS; i = next++) {
      const res = await fetch(`${url}/api/v1/namespaces/bench/configmaps`, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: body(i),
      });
      if (res.status !== 201) throw new Error(`create answered ${res.status}: ${await res.text()}`);
      await res.arrayBuffer();
    }
  }),
);
const writeSeconds = (performance.now() - writeStart) / 1000;
const writeCpu = (await serverCpuMicros()) - cpu;

const CLIENT_WRITES = Math.min(1000, OBJECTS);
let clientNext = 0;
const clientStart = performance.now();
await Promise.all(
  Array.from({ length: CONCURRENCY }, async () => {
    for (let i = clientNext++; i < CLIENT_WRITES; i = clientNext++) {
      await core.createNamespacedConfigMap({
        namespace: "bench",
        body: { metadata: { name: `client-${i}` }, data: { payload: "x".repeat(200) } },
      });
    }
  }),
);
const clientSeconds = (performance.now() - clientStart) / 1000;
await fetch(`${url}/api/v1/namespaces/bench/configmaps?labelSelector=!app`, { method: "DELETE" });

// ---- 2. LIST at N objects -------------------------------------------------------------------------
const RUNS = 10;
const rawTimes: number[] = [];
const selectorTimes: number[] = [];
const typedTimes: number[] = [];
let bytes = 0;
let rawCpu = 0;
let selectorCpu = 0;
for (let i = 0; i < RUNS; i++) {
  cpu = await serverCpuMicros();
  let t = performance.now();
  const res = await fetch(`${url}/api/v1/namespaces/bench/configmaps`);
  const text = await res.text();
  bytes = text.length;
  const parsed = JSON.parse(text) as { items: unknown[] };
  if (parsed.items.length !== OBJECTS)
    throw new Error(`LIST returned ${parsed.items.length} items`);
  rawTimes.push(performance.now() - t);
  rawCpu += (await serverCpuMicros()) - cpu;
  cpu = await serverCpuMicros();
  t = performance.now();
  const shard = await fetch(`${url}/api/v1/namespaces/bench/configmaps?labelSelector=shard%3D3`);
  await shard.json();
  selectorTimes.push(performance.now() - t);
  selectorCpu += (await serverCpuMicros()) - cpu;
  if (i < 3) {
    t = performance.now();
    const typed = await core.listNamespacedConfigMap({ namespace: "bench" });
    if (typed.items.length !== OBJECTS) throw new Error("typed LIST returned the wrong count");
    typedTimes.push(performance.now() - t);
  }
}

// ---- 3. watch fan-out -----------------------------------------------------------------------------
// WATCHERS watches on the namespace, then UPDATES patches; every watcher must receive every event.
const listed = (await (
  await fetch(`${url}/api/v1/namespaces/bench/configmaps?limit=1`)
).json()) as {
  metadata: { resourceVersion: string };
};
const agent = new Agent({ keepAlive: true, maxSockets: Number.POSITIVE_INFINITY });
let received = 0;
const expected = WATCHERS * UPDATES;
let allReceived: () => void = () => {};
const done = new Promise<void>((r) => {
  allReceived = r;
});
const requests = await Promise.all(
  Array.from(
    { length: WATCHERS },
    () =>
      new Promise<ReturnType<typeof get>>((resolve, reject) => {
        const req = get(
          `${url}/api/v1/namespaces/bench/configmaps?watch=1&resourceVersion=${listed.metadata.resourceVersion}`,
          { agent },
          (res) => {
            res.on("data", (chunk: Buffer) => {
              for (const b of chunk) {
                if (b === 10) {
                  received++;
                  if (received === expected) allReceived();
                }
              }
            });
            resolve(req);
          },
        );
        req.on("error", reject);
      }),
  ),
);
const openWatches = Number((await ask("cpu")).openWatches);
cpu = await serverCpuMicros();
const fanStart = performance.now();
for (let i = 0; i < UPDATES; i++) {
  await fetch(`${url}/api/v1/namespaces/bench/configmaps/cm-${i}`, {
    method: "PATCH",
    headers: { "Content-Type": "application/merge-patch+json" },
    body: JSON.stringify({ data: { touched: String(i) } }),
  });
}
await done;
const fanSeconds = (performance.now() - fanStart) / 1000;
const fanCpu = (await serverCpuMicros()) - cpu;
for (const r of requests) r.destroy();
agent.destroy();

const heapMb = Number((await ask("cpu")).heapMb);
child.send("stop");

console.log(
  `in-memory API server benchmark (${OBJECTS} ConfigMaps, ${WATCHERS} watchers, ${UPDATES} updates)`,
);
console.log(
  `writes, create over keep-alive HTTP (${CONCURRENCY} in flight): ${fmt(OBJECTS / writeSeconds, 0)} objects/s wall; server CPU ${fmt(writeCpu / OBJECTS, 0)} µs per create (= ${fmt(OBJECTS / (writeCpu / 1e6), 0)} creates per CPU-second)`,
);
console.log(
  `writes, create via client-node CoreV1Api (${CONCURRENCY} in flight, ${CLIENT_WRITES} objects): ${fmt(CLIENT_WRITES / clientSeconds, 0)} objects/s wall`,
);
console.log(
  `LIST ${OBJECTS} objects (${fmt(bytes / 1024 / 1024, 1)} MiB), raw HTTP + JSON.parse: p50 ${fmt(percentile(rawTimes, 50))} ms wall; server CPU ${fmt(rawCpu / RUNS / 1000, 1)} ms per LIST`,
);
console.log(
  `LIST with labelSelector (1/10 match): p50 ${fmt(percentile(selectorTimes, 50))} ms wall; server CPU ${fmt(selectorCpu / RUNS / 1000, 1)} ms`,
);
console.log(
  `LIST ${OBJECTS} objects via client-node CoreV1Api: p50 ${fmt(percentile(typedTimes, 50))} ms wall`,
);
console.log(
  `watch fan-out: ${expected} events to ${openWatches} open watches in ${fmt(fanSeconds, 2)} s = ${fmt(expected / fanSeconds, 0)} events/s delivered wall; server CPU ${fmt(fanCpu / expected, 1)} µs per delivered event (patches included) = ${fmt(expected / (fanCpu / 1e6), 0)} events per CPU-second`,
);
console.log(`server heap at the end: ${fmt(heapMb, 0)} MiB`);
console.log(
  `machine load average (1 min) during the run: ${fmt(loadavg()[0] ?? 0, 1)} on ${availableParallelism()} cores`,
);
