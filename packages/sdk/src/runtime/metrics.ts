import type { Counter, Gauge, Histogram, Registry } from "prom-client";
import type { InformerMetrics } from "./informer.js";
import { promClient } from "./promclient.js";
import type { WorkQueueMetrics } from "./queue.js";

const RECONCILE_BUCKETS = [
  0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9,
  1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60,
];
// client-go's workqueue buckets: 10^-8 … 10^1 seconds.
const QUEUE_BUCKETS = Array.from({ length: 10 }, (_, i) => 10 ** (i - 8));

/**
 * The manager's Prometheus metrics, with controller-runtime's names and labels so existing dashboards
 * and alerts work: `controller_runtime_reconcile_total{controller,result}`,
 * `controller_runtime_reconcile_errors_total`, `controller_runtime_terminal_reconcile_errors_total`,
 * `controller_runtime_reconcile_time_seconds`, `controller_runtime_reconcile_timeouts_total`,
 * `controller_runtime_max_concurrent_reconciles`, `controller_runtime_active_workers`,
 * `workqueue_depth`, `workqueue_adds_total`, `workqueue_retries_total`,
 * `workqueue_queue_duration_seconds`, `workqueue_work_duration_seconds`,
 * `workqueue_unfinished_work_seconds`, `workqueue_longest_running_processor_seconds`,
 * `leader_election_master_status`; plus `capi_ts_informer_lists_total` and
 * `capi_ts_informer_restarts_total{resource,reason}`.
 *
 * Each instance owns its own registry, so several managers can live in one process (tests).
 *
 * @example
 * ```ts
 * const metrics = new RuntimeMetrics();
 * const text = await metrics.registry.metrics(); // Prometheus text format
 * ```
 */
export class RuntimeMetrics {
  /** The prom-client registry holding every metric below. */
  readonly registry: Registry;
  /** Reconciles by controller and result (`success`, `error`, `requeue`, `requeue_after`). */
  readonly reconcileTotal: Counter<"controller" | "result">;
  /** Reconciles that returned an error. */
  readonly reconcileErrors: Counter<"controller">;
  /** Reconciles that threw a `TerminalError`. */
  readonly terminalReconcileErrors: Counter<"controller">;
  /** Reconciles that hit the reconcile timeout. */
  readonly reconcileTimeouts: Counter<"controller">;
  /** Reconcile durations in seconds. */
  readonly reconcileTime: Histogram<"controller">;
  /** Configured concurrency. */
  readonly maxConcurrentReconciles: Gauge<"controller">;
  /** Workers currently reconciling. */
  readonly activeWorkers: Gauge<"controller">;
  /** 1 while this process holds the lease. */
  readonly leaderStatus: Gauge<"name">;
  private readonly depth: Gauge<"name" | "controller">;
  private readonly adds: Counter<"name" | "controller">;
  private readonly retries: Counter<"name" | "controller">;
  private readonly queueDuration: Histogram<"name" | "controller">;
  private readonly workDuration: Histogram<"name" | "controller">;
  private readonly unfinishedWork: Gauge<"name" | "controller">;
  private readonly longestRunning: Gauge<"name" | "controller">;
  private readonly informerLists: Counter<"resource">;
  private readonly informerRestarts: Counter<"resource" | "reason">;
  /**
   * Reconciles and busy workers counted in plain numbers and handed to prom-client when a metric is
   * read (its `collect` hook runs on every scrape and `get()`): prom-client hashes the label set on
   * every `inc`, which was the largest share of a no-op reconcile.
   */
  private readonly pendingReconciles = new Map<
    string,
    { controller: string; result: string; count: number }
  >();
  private readonly busyWorkers = new Map<string, number>();

  /** Creates the metrics in a fresh registry; `processMetrics` adds Node's default process metrics. */
  constructor(options: { processMetrics?: boolean } = {}) {
    const { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } = promClient();
    const registry = new Registry();
    this.registry = registry;
    const registers = [registry];
    const pendingReconciles = this.pendingReconciles;
    this.reconcileTotal = new Counter({
      name: "controller_runtime_reconcile_total",
      help: "Total number of reconciliations per controller",
      labelNames: ["controller", "result"],
      registers,
      collect() {
        for (const entry of pendingReconciles.values()) {
          if (entry.count === 0) continue;
          this.inc({ controller: entry.controller, result: entry.result }, entry.count);
          entry.count = 0;
        }
      },
    });
    this.reconcileErrors = new Counter({
      name: "controller_runtime_reconcile_errors_total",
      help: "Total number of reconciliation errors per controller",
      labelNames: ["controller"],
      registers,
    });
    this.terminalReconcileErrors = new Counter({
      name: "controller_runtime_terminal_reconcile_errors_total",
      help: "Total number of terminal reconciliation errors per controller",
      labelNames: ["controller"],
      registers,
    });
    this.reconcileTimeouts = new Counter({
      name: "controller_runtime_reconcile_timeouts_total",
      help: "Total number of reconciliation timeouts per controller",
      labelNames: ["controller"],
      registers,
    });
    this.reconcileTime = new Histogram({
      name: "controller_runtime_reconcile_time_seconds",
      help: "Length of time per reconciliation per controller",
      labelNames: ["controller"],
      buckets: RECONCILE_BUCKETS,
      registers,
    });
    this.maxConcurrentReconciles = new Gauge({
      name: "controller_runtime_max_concurrent_reconciles",
      help: "Maximum number of concurrent reconciles per controller",
      labelNames: ["controller"],
      registers,
    });
    const busyWorkers = this.busyWorkers;
    this.activeWorkers = new Gauge({
      name: "controller_runtime_active_workers",
      help: "Number of currently used workers per controller",
      labelNames: ["controller"],
      registers,
      collect() {
        for (const [controller, busy] of busyWorkers) this.set({ controller }, busy);
      },
    });
    this.leaderStatus = new Gauge({
      name: "leader_election_master_status",
      help: "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master. 'name' is the string used to identify the lease.",
      labelNames: ["name"],
      registers,
    });
    this.depth = new Gauge({
      name: "workqueue_depth",
      help: "Current depth of workqueue",
      labelNames: ["name", "controller"],
      registers,
    });
    this.adds = new Counter({
      name: "workqueue_adds_total",
      help: "Total number of adds handled by workqueue",
      labelNames: ["name", "controller"],
      registers,
    });
    this.retries = new Counter({
      name: "workqueue_retries_total",
      help: "Total number of retries handled by workqueue",
      labelNames: ["name", "controller"],
      registers,
    });
    this.queueDuration = new Histogram({
      name: "workqueue_queue_duration_seconds",
      help: "How long in seconds an item stays in workqueue before being requested",
      labelNames: ["name", "controller"],
      buckets: QUEUE_BUCKETS,
      registers,
    });
    this.workDuration = new Histogram({
      name: "workqueue_work_duration_seconds",
      help: "How long in seconds processing an item from workqueue takes",
      labelNames: ["name", "controller"],
      buckets: QUEUE_BUCKETS,
      registers,
    });
    this.unfinishedWork = new Gauge({
      name: "workqueue_unfinished_work_seconds",
      help: "How many seconds of work has been done that is in progress and hasn't been observed by work_duration.",
      labelNames: ["name", "controller"],
      registers,
    });
    this.longestRunning = new Gauge({
      name: "workqueue_longest_running_processor_seconds",
      help: "How many seconds has the longest running processor for workqueue been running.",
      labelNames: ["name", "controller"],
      registers,
    });
    this.informerLists = new Counter({
      name: "capi_ts_informer_lists_total",
      help: "Full lists sent by informers (start-up and relists after 410 Gone)",
      labelNames: ["resource"],
      registers,
    });
    this.informerRestarts = new Counter({
      name: "capi_ts_informer_restarts_total",
      help: "Informer watch restarts by reason (closed, stale, gone, error)",
      labelNames: ["resource", "reason"],
      registers,
    });
    if (options.processMetrics) collectDefaultMetrics({ register: registry });
  }

  /**
   * Counts one reconcile of `controller` with its `result` in `controller_runtime_reconcile_total`
   * (`success`, `error`, `requeue`, `requeue_after`), without prom-client's per-call label hashing:
   * the count reaches the counter when it is read.
   */
  countReconcile(controller: string, result: string): void {
    const key = `${controller}\u0000${result}`;
    const entry = this.pendingReconciles.get(key);
    if (entry) entry.count++;
    else this.pendingReconciles.set(key, { controller, result, count: 1 });
  }

  /**
   * Moves `controller_runtime_active_workers` of `controller` by `delta` (+1 when a worker starts a
   * reconcile, -1 when it ends), read by the gauge when it is collected.
   */
  moveActiveWorkers(controller: string, delta: number): void {
    this.busyWorkers.set(controller, (this.busyWorkers.get(controller) ?? 0) + delta);
  }

  /** Work-queue hooks labelled for one controller (`name` and `controller` are both its name). */
  queueMetrics(controller: string): WorkQueueMetrics {
    const labels = { name: controller, controller };
    return {
      depth: (value) => this.depth.set(labels, value),
      added: () => this.adds.inc(labels),
      retried: () => this.retries.inc(labels),
      queued: (seconds) => this.queueDuration.observe(labels, seconds),
      worked: (seconds) => this.workDuration.observe(labels, seconds),
      unfinished: (total, longest) => {
        this.unfinishedWork.set(labels, total);
        this.longestRunning.set(labels, longest);
      },
    };
  }

  /** Informer hooks. */
  informerMetrics(): InformerMetrics {
    return {
      listed: (resource) => this.informerLists.inc({ resource }),
      restarted: (resource, reason) => this.informerRestarts.inc({ resource, reason }),
    };
  }

  /** Current value of a counter or gauge with the given labels (0 if never set): handy in tests. */
  async value(name: string, labels: Record<string, string> = {}): Promise<number> {
    const metric = this.registry.getSingleMetric(name);
    if (!metric) throw new Error(`no metric named ${name} in this registry`);
    const data = await metric.get();
    let total = 0;
    for (const sample of data.values) {
      const sampleLabels = sample.labels as Record<string, string | number>;
      if (Object.entries(labels).every(([key, value]) => String(sampleLabels[key]) === value)) {
        if ("metricName" in sample && String(sample.metricName).endsWith("_bucket")) continue;
        total += sample.value;
      }
    }
    return total;
  }
}
