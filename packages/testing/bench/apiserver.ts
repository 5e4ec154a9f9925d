// Benchmark of the in-memory API server, run by scripts/bench-apiserver.ts (`./dev bench apiserver [--objects N] [--watchers N] [--updates N]`):
// write throughput through client-node, LIST latency at N objects, and watch fan-out to many watchers.
import { Agent, get } from "node:http";
import { availableParallelism, loadavg } from "node:os";
import { CoreV1Api } from "@kubernetes/client-node";
import { startApiServer } from "../src/index.js";

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

const api = await startApiServer({ watchWindow: 50_000 });
const core = api.kubeConfig.makeApiClient(CoreV1Api);
await core.createNamespace({ body: { metadata: { name: "bench" } } });

// 1. Writes: create N ConfigMaps over keep-alive HTTP (the server's cost), CONCURRENCY in flight;
// then a smaller batch through client-node, which opens a new connection per request.
const body = (i: number) =>
  JSON.stringify({
    metadata: { name: `cm-${i}`, labels: { shard: String(i % 10), app: "bench" } },
    data: { index: String(i), payload: "x".repeat(200) },
  });
let next = 0;
const writeStart = performance.now();
await Promise.all(
  Array.from({ length: CONCURRENCY }, async () => {
    for (let i = next++; i < OBJECTS; i = next++) {
      const res = await fetch(`${api.url}/api/v1/namespaces/bench/configmaps`, {
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
await fetch(`${api.url}/api/v1/namespaces/bench/configmaps?labelSelector=!app`, {
  method: "DELETE",
});

// 2. LIST at N objects: raw HTTP + JSON.parse (the server's cost) and client-node's typed list.
const rawTimes: number[] = [];
const selectorTimes: number[] = [];
const typedTimes: number[] = [];
let bytes = 0;
for (let i = 0; i < 10; i++) {
  let t = performance.now();
  const res = await fetch(`${api.url}/api/v1/namespaces/bench/configmaps`);
  const text = await res.text();
  bytes = text.length;
  const parsed = JSON.parse(text) as { items: unknown[] };
  if (parsed.items.length !== OBJECTS)
    throw new Error(`LIST returned ${parsed.items.length} items`);
  rawTimes.push(performance.now() - t);
  t = performance.now();
  const shard = await fetch(
    `${api.url}/api/v1/namespaces/bench/configmaps?labelSelector=shard%3D3`,
  );
  await shard.json();
  selectorTimes.push(performance.now() - t);
  if (i < 3) {
    t = performance.now();
    const typed = await core.listNamespacedConfigMap({ namespace: "bench" });
    if (typed.items.length !== OBJECTS) throw new Error("typed LIST returned the wrong count");
    typedTimes.push(performance.now() - t);
  }
}

// 3. Watch fan-out: WATCHERS open watches on the namespace; UPDATES patches; every watcher must
// receive every event.
const agent = new Agent({ keepAlive: true, maxSockets: Number.POSITIVE_INFINITY });
const rv = api.resourceVersion;
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
          `${api.url}/api/v1/namespaces/bench/configmaps?watch=1&resourceVersion=${rv}`,
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
const fanStart = performance.now();
const patchStart = performance.now();
for (let i = 0; i < UPDATES; i++) {
  await fetch(`${api.url}/api/v1/namespaces/bench/configmaps/cm-${i}`, {
    method: "PATCH",
    headers: { "Content-Type": "application/merge-patch+json" },
    body: JSON.stringify({ data: { touched: String(i) } }),
  });
}
const patchSeconds = (performance.now() - patchStart) / 1000;
await done;
const fanSeconds = (performance.now() - fanStart) / 1000;
for (const r of requests) r.destroy();
agent.destroy();

const heapMb = process.memoryUsage().heapUsed / 1024 / 1024;
await api.stop();

console.log(
  `in-memory API server benchmark (${OBJECTS} ConfigMaps, ${WATCHERS} watchers, ${UPDATES} updates)`,
);
console.log(
  `writes (create over keep-alive HTTP, ${CONCURRENCY} in flight): ${fmt(OBJECTS / writeSeconds, 0)} objects/s (${fmt(writeSeconds, 2)} s)`,
);
console.log(
  `writes (create via client-node CoreV1Api, ${CONCURRENCY} in flight, ${CLIENT_WRITES} objects): ${fmt(CLIENT_WRITES / clientSeconds, 0)} objects/s`,
);
console.log(
  `LIST ${OBJECTS} objects, raw HTTP + JSON.parse (${fmt(bytes / 1024 / 1024, 1)} MiB): p50 ${fmt(percentile(rawTimes, 50))} ms, max ${fmt(Math.max(...rawTimes))} ms`,
);
console.log(`LIST with labelSelector (1/10 match): p50 ${fmt(percentile(selectorTimes, 50))} ms`);
console.log(
  `LIST ${OBJECTS} objects via client-node CoreV1Api: p50 ${fmt(percentile(typedTimes, 50))} ms`,
);
console.log(
  `watch fan-out: ${expected} events to ${WATCHERS} watchers in ${fmt(fanSeconds, 2)} s = ${fmt(expected / fanSeconds, 0)} events/s delivered (patches sent at ${fmt(UPDATES / patchSeconds, 0)}/s)`,
);
console.log(`heap used at the end: ${fmt(heapMb, 0)} MiB`);
console.log(
  `machine load average (1 min) during the run: ${fmt(loadavg()[0] ?? 0, 1)} on ${availableParallelism()} cores`,
);
