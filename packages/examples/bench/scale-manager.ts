/**
 * The manager process of `./dev bench scale` (see `scale.ts`): the example provider's manager alone,
 * as a provider runs in production, with the fake cloud it drives. The kubelets of the cloud's
 * instances live in the harness, beside the workload clusters they join: each kubelet hook is sent
 * to the harness over IPC and awaited, so the Nodes are written by the harness's clients and every
 * socket of this process to a workload server is the manager's own.
 *
 * Messages from the harness: `start` (management kubeconfig and settings), `kubelet-done` (a hook's
 * answer), `stats` (reply with reconciles, cloud calls, CPU, memory and the heap after a full GC),
 * `stop`. Not run on its own.
 *
 * @module
 */
import { readFileSync } from "node:fs";
import { getHeapSpaceStatistics, setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { Manager, machinePoolController } from "@capi-ts/sdk";
import { loadKubeconfig } from "@capi-ts/sdk/runtime";
// The modules themselves, not the packages' indexes: those also export the test-bed side (the
// kubelet on client-node, the conformance wiring on @capi-ts/testing), which a provider's
// manager does not load.
import { RealClock } from "../src/cloud/clock.js";
import { FakeScalingCloud, type InstanceBoot, type KubeletHooks } from "../src/cloud/cloud.js";
import { fakeCloudDriver } from "../src/provider/driver.js";
import { FakeCloudMachinePool } from "../src/provider/kind.js";

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

/** What the harness sends to start the manager. */
export interface ScaleManagerStart {
  readonly type: "start";
  /** The management cluster's kubeconfig file, read as a provider reads `--kubeconfig`. */
  readonly kubeconfigPath: string;
  readonly provider: string;
  readonly speed: number;
  readonly syncPeriodMs: number;
  readonly concurrency: number;
}

/** The manager's figures, as the harness asks for them. */
export interface ScaleManagerStats {
  readonly type: "stats";
  readonly reconciles: number;
  readonly cloudCalls: number;
  readonly cloudMutations: number;
  readonly cloudTimeMs: number;
  readonly cpuUserMs: number;
  readonly cpuSystemMs: number;
  readonly rssBytes: number;
  readonly peakRssBytes: number;
  readonly heapAfterGcBytes: number;
  /** V8's heap as committed after that GC: what of the RSS the JavaScript heap holds. */
  readonly heapCommittedBytes: number;
  /** Memory outside the V8 heap held by JavaScript objects (Buffers, TLS), after that GC. */
  readonly externalBytes: number;
  /** V8's young generation (new space) as committed after that GC: sized by the semi-space limit. */
  readonly youngCommittedBytes: number;
  /** The old generation (old, code and large-object spaces) committed and used after that GC. */
  readonly oldCommittedBytes: number;
  readonly oldUsedBytes: number;
  /**
   * The RSS split as the kernel counts it (Linux only, else undefined): anonymous memory (heaps, V8,
   * the allocator's arenas) and file-backed pages (the Node binary and its libraries).
   */
  readonly rssAnonBytes: number | undefined;
  readonly rssFileBytes: number | undefined;
  readonly hookErrors: number;
}

type HookName = "onJoin" | "onLeave" | "onTerminated";
type FromHarness =
  | ScaleManagerStart
  | { type: "kubelet-done"; id: number; error?: string }
  | { type: "stats" }
  | { type: "stop" };

const send = (message: unknown) => process.send?.(message);
const pendingHooks = new Map<number, { resolve(): void; reject(error: Error): void }>();
let nextHook = 0;

/** A kubelet hook run by the harness: the boot goes over IPC, the answer comes back. */
function remoteHook(hook: HookName): (boot: InstanceBoot) => Promise<void> {
  return (boot) =>
    new Promise<void>((resolve, reject) => {
      const id = nextHook++;
      pendingHooks.set(id, { resolve, reject });
      send({ type: "kubelet", id, hook, boot });
    });
}

let manager: Manager | undefined;
let running: Promise<void> | undefined;
let cloud: FakeScalingCloud | undefined;
let clock: RealClock | undefined;

async function start(settings: ScaleManagerStart): Promise<void> {
  const kubeConfig = loadKubeconfig({ path: settings.kubeconfigPath });
  clock = new RealClock({ speed: settings.speed });
  const kubelet: KubeletHooks = {
    onJoin: remoteHook("onJoin"),
    onLeave: remoteHook("onLeave"),
    onTerminated: remoteHook("onTerminated"),
  };
  cloud = new FakeScalingCloud({ clock, seed: 1, kubelet });
  manager = new Manager({
    kubeConfig,
    name: settings.provider,
    logger: { level: "silent" },
    clock,
    syncPeriodMs: settings.syncPeriodMs,
    maxConcurrentReconciles: settings.concurrency,
    gracefulShutdownTimeoutMs: 2000,
  });
  machinePoolController(fakeCloudDriver(cloud.client, { defaultZones: ["zone-a", "zone-b"] }), {
    manager,
    kind: FakeCloudMachinePool,
    readiness: "node",
  });
  running = manager.start();
  await Promise.race([manager.elected(), running]);
  send({ type: "ready" });
}

/** A `kB` field of `/proc/self/status` in bytes, or undefined where the kernel has none. */
function procStatusBytes(status: string | undefined, field: string): number | undefined {
  const match = status?.match(new RegExp(`^${field}:\\s+(\\d+) kB$`, "m"));
  return match?.[1] === undefined ? undefined : Number(match[1]) * 1024;
}

function readProcStatus(): string | undefined {
  try {
    return readFileSync("/proc/self/status", "utf8");
  } catch {
    return undefined;
  }
}

// The fake cloud logs every call for tests to assert on; a provider's real cloud SDK keeps no such
// log, so the manager counts the calls and empties it: left alone it held some 12 MiB of the steady
// heap after a 1,000-pool converge.
let cloudCalls = 0;
let cloudMutations = 0;

async function stats(): Promise<ScaleManagerStats> {
  const reconciles = (await manager?.metrics.value("controller_runtime_reconcile_total")) ?? 0;
  const calls = cloud?.calls() ?? [];
  cloud?.clearCalls();
  cloudCalls += calls.length;
  cloudMutations += calls.filter((c) => c.mutating).length;
  calls.length = 0; // still in scope: the GC below must not count the copies
  gc();
  const cpu = process.cpuUsage();
  const memory = process.memoryUsage();
  const spaces = getHeapSpaceStatistics();
  const status = readProcStatus();
  const young = spaces.filter((s) => s.space_name.startsWith("new_"));
  const old = spaces.filter((s) => !s.space_name.startsWith("new_"));
  const sum = (list: typeof spaces, field: "physical_space_size" | "space_used_size") =>
    list.reduce((total, s) => total + s[field], 0);
  return {
    type: "stats",
    reconciles,
    cloudCalls,
    cloudMutations,
    cloudTimeMs: clock?.now() ?? 0,
    cpuUserMs: cpu.user / 1000,
    cpuSystemMs: cpu.system / 1000,
    rssBytes: memory.rss,
    // maxRSS is in KiB.
    peakRssBytes: process.resourceUsage().maxRSS * 1024,
    heapAfterGcBytes: memory.heapUsed,
    heapCommittedBytes: memory.heapTotal,
    externalBytes: memory.external,
    youngCommittedBytes: sum(young, "physical_space_size"),
    oldCommittedBytes: sum(old, "physical_space_size"),
    oldUsedBytes: sum(old, "space_used_size"),
    rssAnonBytes: procStatusBytes(status, "RssAnon"),
    rssFileBytes: procStatusBytes(status, "RssFile"),
    hookErrors: cloud?.hookErrors.length ?? 0,
  };
}

async function stop(): Promise<void> {
  await manager?.stop();
  await running?.catch(() => undefined);
  clock?.dispose();
  process.exit(0);
}

process.on("message", (message: FromHarness) => {
  switch (message.type) {
    case "start":
      void start(message).catch((error: unknown) => {
        console.error("scale manager: start failed", error);
        process.exit(1);
      });
      return;
    case "kubelet-done": {
      const pending = pendingHooks.get(message.id);
      pendingHooks.delete(message.id);
      if (message.error === undefined) pending?.resolve();
      else pending?.reject(new Error(message.error));
      return;
    }
    case "stats":
      void stats().then(send);
      return;
    case "stop":
      void stop();
      return;
  }
});
// The harness going away ends the manager too: a benchmark leaves no process behind.
process.on("disconnect", () => process.exit(0));
