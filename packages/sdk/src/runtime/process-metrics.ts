/**
 * The process and Node.js metrics a Node service exports (`processMetrics: true` of the manager):
 * the names, types, labels and help texts of prom-client's `collectDefaultMetrics`, so dashboards
 * built for it read them unchanged, but kept in the runtime's own families and read when scraped.
 * Loading prom-client for them cost a manager ~1.5 MiB of heap and ~50 ms of its start.
 *
 * @module
 */
import { readdirSync, readFileSync } from "node:fs";
import {
  type ELDHistogram,
  monitorEventLoopDelay,
  type PerformanceEntry,
  PerformanceObserver,
  constants as perfConstants,
} from "node:perf_hooks";
import { getHeapSpaceStatistics } from "node:v8";
import type { CounterFamily, GaugeFamily, HistogramFamily } from "./metric-families.js";

/** What defines the families: the runtime's registry of them. */
export interface ProcessMetricsHost {
  /** Defines (or returns) a counter family. */
  counter<L extends string = never>(definition: {
    name: string;
    help: string;
    labelNames?: readonly L[];
  }): CounterFamily<L>;
  /** Defines (or returns) a gauge family. */
  gauge<L extends string = never>(definition: {
    name: string;
    help: string;
    labelNames?: readonly L[];
  }): GaugeFamily<L>;
  /** Defines (or returns) a histogram family. */
  histogram<L extends string = never>(definition: {
    name: string;
    help: string;
    labelNames?: readonly L[];
    buckets: readonly number[];
  }): HistogramFamily<L>;
}

const GC_BUCKETS = [0.001, 0.01, 0.1, 1, 2, 5];
const GC_KINDS: Record<number, string> = {
  [perfConstants.NODE_PERFORMANCE_GC_MAJOR]: "major",
  [perfConstants.NODE_PERFORMANCE_GC_MINOR]: "minor",
  [perfConstants.NODE_PERFORMANCE_GC_INCREMENTAL]: "incremental",
  [perfConstants.NODE_PERFORMANCE_GC_WEAKCB]: "weakcb",
};

/**
 * Event-loop delay, one monitor per process, sampled every 250 ms as the manager's own heartbeat is:
 * prom-client's 10 ms timer costs an idle process ~7 ms of CPU a second. Each scrape resets it (the
 * quantiles cover the time since the last scrape, as prom-client's do), so two managers of one
 * process that both export process metrics share one window.
 */
let loopDelay: ELDHistogram | undefined;
/** GC durations, observed once per process into the histogram of every live manager. */
const gcHistograms = new Set<WeakRef<HistogramFamily<"kind">>>();
let gcObserver: PerformanceObserver | undefined;

/** Linux's `/proc/self/status` fields, in bytes, or undefined elsewhere. */
function procStatus(): { rss: number; vsize: number; heap: number } | undefined {
  let text: string;
  try {
    text = readFileSync("/proc/self/status", "utf8");
  } catch {
    return undefined;
  }
  const kib = (field: string): number => {
    const match = new RegExp(`^${field}:\\s*(\\d+) kB`, "m").exec(text);
    return match ? Number(match[1]) * 1024 : 0;
  };
  return { rss: kib("VmRSS"), vsize: kib("VmSize"), heap: kib("VmData") };
}

/** The soft limit of open files (Linux), or undefined. */
function maxOpenFiles(): number | undefined {
  try {
    const match = /^Max open files\s+(\d+)/m.exec(readFileSync("/proc/self/limits", "utf8"));
    return match ? Number(match[1]) : undefined;
  } catch {
    return undefined;
  }
}

/** Counts by type name, for the active handles, requests and resources gauges. */
function countByType(types: readonly string[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const type of types) counts.set(type, (counts.get(type) ?? 0) + 1);
  return counts;
}

/** Sets a labelled gauge to `counts`, dropping the types no longer seen. */
function setCounts(gauge: GaugeFamily<"type">, counts: Map<string, number>, seen: Set<string>) {
  for (const type of seen) if (!counts.has(type)) gauge.remove({ type });
  seen.clear();
  for (const [type, count] of counts) {
    gauge.set({ type }, count);
    seen.add(type);
  }
}

type ProcessWithInternals = NodeJS.Process & {
  _getActiveHandles?: () => object[];
  _getActiveRequests?: () => object[];
};

/**
 * Defines the process and Node.js families on `host` and returns what sets them: call it before
 * each scrape (it reads `/proc/self`, the CPU and heap counters and the event-loop histogram once).
 */
export function defineProcessMetrics(host: ProcessMetricsHost): () => void {
  const refreshers = [
    defineCpuAndMemory(host),
    defineEventLoop(host),
    defineActivity(host),
    defineHeap(host),
  ];
  defineGc(host);
  return () => {
    for (const refresh of refreshers) refresh();
  };
}

function defineCpuAndMemory(host: ProcessMetricsHost): () => void {
  const user = host.counter({
    name: "process_cpu_user_seconds_total",
    help: "Total user CPU time spent in seconds.",
  });
  const system = host.counter({
    name: "process_cpu_system_seconds_total",
    help: "Total system CPU time spent in seconds.",
  });
  const total = host.counter({
    name: "process_cpu_seconds_total",
    help: "Total user and system CPU time spent in seconds.",
  });
  const startTime = host.gauge({
    name: "process_start_time_seconds",
    help: "Start time of the process since unix epoch in seconds.",
  });
  const resident = host.gauge({
    name: "process_resident_memory_bytes",
    help: "Resident memory size in bytes.",
  });
  // Linux only, as prom-client: the rest of the process figures come from /proc.
  const onLinux = procStatus() !== undefined;
  const maxFds = onLinux ? maxOpenFiles() : undefined;
  const linux = onLinux
    ? {
        virtual: host.gauge({
          name: "process_virtual_memory_bytes",
          help: "Virtual memory size in bytes.",
        }),
        heap: host.gauge({ name: "process_heap_bytes", help: "Process heap size in bytes." }),
        openFds: host.gauge({ name: "process_open_fds", help: "Number of open file descriptors." }),
        maxFds:
          maxFds === undefined
            ? undefined
            : host.gauge({
                name: "process_max_fds",
                help: "Maximum number of open file descriptors.",
              }),
      }
    : undefined;
  const startedAt = Math.round(Date.now() / 1000 - process.uptime());
  // Counters only go up, by what was spent since the last read.
  let reported = { user: 0, system: 0 };
  return () => {
    const usage = process.cpuUsage();
    const now = { user: usage.user / 1e6, system: usage.system / 1e6 };
    const userDelta = Math.max(0, now.user - reported.user);
    const systemDelta = Math.max(0, now.system - reported.system);
    user.inc({}, userDelta);
    system.inc({}, systemDelta);
    total.inc({}, userDelta + systemDelta);
    reported = now;
    startTime.set({}, startedAt);
    const status = linux ? procStatus() : undefined;
    resident.set({}, status?.rss || process.memoryUsage.rss());
    if (linux && status) {
      linux.virtual.set({}, status.vsize);
      linux.heap.set({}, status.heap);
      // readdir opens one descriptor of its own.
      linux.openFds.set({}, Math.max(0, readdirSync("/proc/self/fd").length - 1));
      if (maxFds !== undefined) linux.maxFds?.set({}, maxFds);
    }
  };
}

function defineEventLoop(host: ProcessMetricsHost): () => void {
  if (!loopDelay) {
    loopDelay = monitorEventLoopDelay({ resolution: 250 });
    loopDelay.enable();
  }
  const histogram = loopDelay;
  const lagGauge = host.gauge({
    name: "nodejs_eventloop_lag_seconds",
    help: "Lag of event loop in seconds.",
  });
  const quantiles: Array<[GaugeFamily, (h: ELDHistogram) => number]> = (
    [
      ["min", "The minimum recorded event loop delay.", (h) => h.min],
      ["max", "The maximum recorded event loop delay.", (h) => h.max],
      ["mean", "The mean of the recorded event loop delays.", (h) => h.mean],
      ["stddev", "The standard deviation of the recorded event loop delays.", (h) => h.stddev],
      ["p50", "The 50th percentile of the recorded event loop delays.", (h) => h.percentile(50)],
      ["p90", "The 90th percentile of the recorded event loop delays.", (h) => h.percentile(90)],
      ["p99", "The 99th percentile of the recorded event loop delays.", (h) => h.percentile(99)],
    ] as Array<[string, string, (h: ELDHistogram) => number]>
  ).map(([name, help, read]) => [
    host.gauge({ name: `nodejs_eventloop_lag_${name}_seconds`, help }),
    read,
  ]);
  // The lag of a setImmediate scheduled at one scrape, reported at the next (as prom-client does).
  let lag = 0;
  return () => {
    lagGauge.set({}, lag);
    const start = process.hrtime.bigint();
    setImmediate(() => {
      lag = Number(process.hrtime.bigint() - start) / 1e9;
    }).unref();
    for (const [gauge, read] of quantiles) {
      const nanoseconds = read(histogram);
      gauge.set({}, Number.isFinite(nanoseconds) ? nanoseconds / 1e9 : 0);
    }
    histogram.reset();
  };
}

function defineActivity(host: ProcessMetricsHost): () => void {
  const proc = process as ProcessWithInternals;
  const sources: Array<[string, string, string, () => string[]]> = [];
  if (typeof process.getActiveResourcesInfo === "function") {
    sources.push([
      "nodejs_active_resources",
      "Number of active resources that are currently keeping the event loop alive, grouped by async resource type.",
      "Total number of active resources.",
      () => process.getActiveResourcesInfo(),
    ]);
  }
  const getHandles = proc._getActiveHandles;
  if (typeof getHandles === "function") {
    sources.push([
      "nodejs_active_handles",
      "Number of active libuv handles grouped by handle type. Every handle type is C++ class name.",
      "Total number of active handles.",
      () => getHandles.call(proc).map((handle) => handle.constructor.name),
    ]);
  }
  const getRequests = proc._getActiveRequests;
  if (typeof getRequests === "function") {
    sources.push([
      "nodejs_active_requests",
      "Number of active libuv requests grouped by request type. Every request type is C++ class name.",
      "Total number of active requests.",
      () => getRequests.call(proc).map((request) => request.constructor.name),
    ]);
  }
  const refreshers = sources.map(([name, help, totalHelp, types]) => {
    const byType = host.gauge({ name, help, labelNames: ["type"] });
    const total = host.gauge({ name: `${name}_total`, help: totalHelp });
    const seen = new Set<string>();
    return () => {
      const latest = types();
      setCounts(byType, countByType(latest), seen);
      total.set({}, latest.length);
    };
  });
  return () => {
    for (const refresh of refreshers) refresh();
  };
}

function defineHeap(host: ProcessMetricsHost): () => void {
  const heapTotal = host.gauge({
    name: "nodejs_heap_size_total_bytes",
    help: "Process heap size from Node.js in bytes.",
  });
  const heapUsed = host.gauge({
    name: "nodejs_heap_size_used_bytes",
    help: "Process heap size used from Node.js in bytes.",
  });
  const external = host.gauge({
    name: "nodejs_external_memory_bytes",
    help: "Node.js external memory size in bytes.",
  });
  const spaces = (["total", "used", "available"] as const).map((kind) =>
    host.gauge({
      name: `nodejs_heap_space_size_${kind}_bytes`,
      help: `Process heap space size ${kind} from Node.js in bytes.`,
      labelNames: ["space"],
    }),
  );
  const [spaceTotal, spaceUsed, spaceAvailable] = spaces as [
    GaugeFamily<"space">,
    GaugeFamily<"space">,
    GaugeFamily<"space">,
  ];
  const version = host.gauge({
    name: "nodejs_version_info",
    help: "Node.js version info.",
    labelNames: ["version", "major", "minor", "patch"],
  });
  const [major = "", minor = "", patch = ""] = process.versions.node.split(".");
  return () => {
    const usage = process.memoryUsage();
    heapTotal.set({}, usage.heapTotal);
    heapUsed.set({}, usage.heapUsed);
    external.set({}, usage.external);
    for (const space of getHeapSpaceStatistics()) {
      const labels = { space: space.space_name.replace(/_space$/, "") };
      spaceTotal.set(labels, space.space_size);
      spaceUsed.set(labels, space.space_used_size);
      spaceAvailable.set(labels, space.space_available_size);
    }
    version.set({ version: process.version, major, minor, patch }, 1);
  };
}

function defineGc(host: ProcessMetricsHost): void {
  const histogram = host.histogram({
    name: "nodejs_gc_duration_seconds",
    help: "Garbage collection duration by kind, one of major, minor, incremental or weakcb.",
    labelNames: ["kind"],
    buckets: GC_BUCKETS,
  });
  gcHistograms.add(new WeakRef(histogram));
  if (gcObserver) return;
  gcObserver = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      const detail = (entry as PerformanceEntry & { detail?: { kind?: number } }).detail;
      const kind = GC_KINDS[detail?.kind ?? -1];
      if (kind === undefined) continue;
      for (const ref of gcHistograms) {
        const live = ref.deref();
        if (live) live.labels({ kind }).observe(entry.duration / 1000);
        else gcHistograms.delete(ref);
      }
    }
  });
  gcObserver.observe({ entryTypes: ["gc"] });
}
