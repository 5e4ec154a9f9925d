import type { Registry } from "prom-client";
import type { InformerMetrics } from "./informer-types.js";
import {
  CounterFamily,
  type CounterSeries,
  type GaugeDefinition,
  GaugeFamily,
  type GaugeSeries,
  type HistogramDefinition,
  HistogramFamily,
  type HistogramSeries,
  type MetricDefinition,
  type MetricFamily,
} from "./metric-families.js";
import { defineProcessMetrics } from "./process-metrics.js";
import { promClient } from "./promclient.js";
import type { WorkQueueMetrics } from "./queue.js";

const RECONCILE_BUCKETS = [
  0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9,
  1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60,
];
// client-go's workqueue buckets: 10^-8 … 10^1 seconds.
const QUEUE_BUCKETS = Array.from({ length: 10 }, (_, i) => 10 ** (i - 8));

/** The reconcile results `controller_runtime_reconcile_total` counts. */
export type ReconcileOutcome = "success" | "error" | "requeue" | "requeue_after";

/** One controller's series, bound once so that its reconciles add to plain numbers. */
export interface ControllerMetrics {
  /** Counts one reconcile with its outcome. */
  reconciled(outcome: ReconcileOutcome): void;
  /** Moves the busy-worker gauge by `delta` (+1 when a reconcile starts, -1 when it ends). */
  moveActiveWorkers(delta: number): void;
  /** Observes one reconcile's duration. */
  reconcileTime(seconds: number): void;
  /** Counts a reconcile error (`terminal`: a `TerminalError`; `timeout`: it hit its deadline). */
  errored(kind: "error" | "terminal" | "timeout"): void;
}

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
 * They are kept in plain numbers ({@link CounterFamily}, {@link GaugeFamily},
 * {@link HistogramFamily}) and written by {@link RuntimeMetrics.text}; other parts of the SDK and a
 * provider add families with {@link RuntimeMetrics.counter}, {@link RuntimeMetrics.gauge} and
 * {@link RuntimeMetrics.histogram}. A provider that prefers prom-client registers its metrics in
 * {@link RuntimeMetrics.registry}, which is created (and prom-client loaded) on first use; the
 * scrape writes both. Each instance owns its metrics, so several managers can live in one process
 * (tests).
 *
 * @example
 * ```ts
 * const metrics = new RuntimeMetrics();
 * const calls = metrics.counter({ name: "acme_cloud_calls_total", help: "Cloud API calls", labelNames: ["op"] });
 * calls.inc({ op: "DescribeInstances" });
 * const text = await metrics.text(); // Prometheus text format
 * ```
 */
export class RuntimeMetrics {
  /** The content type of {@link RuntimeMetrics.text} (Prometheus text format 0.0.4). */
  readonly contentType = "text/plain; version=0.0.4; charset=utf-8";
  /** Reconciles by controller and result (`success`, `error`, `requeue`, `requeue_after`). */
  readonly reconcileTotal: CounterFamily<"controller" | "result">;
  /** Reconciles that returned an error. */
  readonly reconcileErrors: CounterFamily<"controller">;
  /** Reconciles that threw a `TerminalError`. */
  readonly terminalReconcileErrors: CounterFamily<"controller">;
  /** Reconciles that hit the reconcile timeout. */
  readonly reconcileTimeouts: CounterFamily<"controller">;
  /** Reconcile durations in seconds. */
  readonly reconcileTime: HistogramFamily<"controller">;
  /** Configured concurrency. */
  readonly maxConcurrentReconciles: GaugeFamily<"controller">;
  /** Workers currently reconciling. */
  readonly activeWorkers: GaugeFamily<"controller">;
  /** 1 while this process holds the lease. */
  readonly leaderStatus: GaugeFamily<"name">;
  private readonly depth: GaugeFamily<"name" | "controller">;
  private readonly adds: CounterFamily<"name" | "controller">;
  private readonly retries: CounterFamily<"name" | "controller">;
  private readonly queueDuration: HistogramFamily<"name" | "controller">;
  private readonly workDuration: HistogramFamily<"name" | "controller">;
  private readonly unfinishedWork: GaugeFamily<"name" | "controller">;
  private readonly longestRunning: GaugeFamily<"name" | "controller">;
  private readonly informerLists: CounterFamily<"resource">;
  private readonly informerRestarts: CounterFamily<"resource" | "reason">;
  private readonly families = new Map<string, MetricFamily<string, unknown>>();
  private readonly controllers = new Map<string, ControllerMetrics>();
  private promRegistry: Registry | undefined;
  private readonly refreshProcessMetrics: (() => void) | undefined;

  /**
   * Defines the runtime's families; `processMetrics` also defines the process and Node.js families
   * of prom-client's default metrics (same names, types and labels), read at each scrape.
   */
  constructor(options: { processMetrics?: boolean } = {}) {
    this.reconcileTotal = this.counter({
      name: "controller_runtime_reconcile_total",
      help: "Total number of reconciliations per controller",
      labelNames: ["controller", "result"],
    });
    this.reconcileErrors = this.counter({
      name: "controller_runtime_reconcile_errors_total",
      help: "Total number of reconciliation errors per controller",
      labelNames: ["controller"],
    });
    this.terminalReconcileErrors = this.counter({
      name: "controller_runtime_terminal_reconcile_errors_total",
      help: "Total number of terminal reconciliation errors per controller",
      labelNames: ["controller"],
    });
    this.reconcileTimeouts = this.counter({
      name: "controller_runtime_reconcile_timeouts_total",
      help: "Total number of reconciliation timeouts per controller",
      labelNames: ["controller"],
    });
    this.reconcileTime = this.histogram({
      name: "controller_runtime_reconcile_time_seconds",
      help: "Length of time per reconciliation per controller",
      labelNames: ["controller"],
      buckets: RECONCILE_BUCKETS,
    });
    this.maxConcurrentReconciles = this.gauge({
      name: "controller_runtime_max_concurrent_reconciles",
      help: "Maximum number of concurrent reconciles per controller",
      labelNames: ["controller"],
    });
    this.activeWorkers = this.gauge({
      name: "controller_runtime_active_workers",
      help: "Number of currently used workers per controller",
      labelNames: ["controller"],
    });
    this.leaderStatus = this.gauge({
      name: "leader_election_master_status",
      help: "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master. 'name' is the string used to identify the lease.",
      labelNames: ["name"],
    });
    this.depth = this.gauge({
      name: "workqueue_depth",
      help: "Current depth of workqueue",
      labelNames: ["name", "controller"],
    });
    this.adds = this.counter({
      name: "workqueue_adds_total",
      help: "Total number of adds handled by workqueue",
      labelNames: ["name", "controller"],
    });
    this.retries = this.counter({
      name: "workqueue_retries_total",
      help: "Total number of retries handled by workqueue",
      labelNames: ["name", "controller"],
    });
    this.queueDuration = this.histogram({
      name: "workqueue_queue_duration_seconds",
      help: "How long in seconds an item stays in workqueue before being requested",
      labelNames: ["name", "controller"],
      buckets: QUEUE_BUCKETS,
    });
    this.workDuration = this.histogram({
      name: "workqueue_work_duration_seconds",
      help: "How long in seconds processing an item from workqueue takes",
      labelNames: ["name", "controller"],
      buckets: QUEUE_BUCKETS,
    });
    this.unfinishedWork = this.gauge({
      name: "workqueue_unfinished_work_seconds",
      help: "How many seconds of work has been done that is in progress and hasn't been observed by work_duration.",
      labelNames: ["name", "controller"],
    });
    this.longestRunning = this.gauge({
      name: "workqueue_longest_running_processor_seconds",
      help: "How many seconds has the longest running processor for workqueue been running.",
      labelNames: ["name", "controller"],
    });
    this.informerLists = this.counter({
      name: "capi_ts_informer_lists_total",
      help: "Full lists sent by informers (start-up and relists after 410 Gone)",
      labelNames: ["resource"],
    });
    this.informerRestarts = this.counter({
      name: "capi_ts_informer_restarts_total",
      help: "Informer watch restarts by reason (closed, stale, gone, error)",
      labelNames: ["resource", "reason"],
    });
    if (options.processMetrics) this.refreshProcessMetrics = defineProcessMetrics(this);
  }

  /**
   * A prom-client registry for a provider's own prom-client metrics, scraped after the families
   * above. Made, and prom-client loaded, on first use. A metric named like one of the families is
   * left out of the scrape (the family wins).
   */
  get registry(): Registry {
    this.promRegistry ??= new (promClient().Registry)();
    return this.promRegistry;
  }

  /**
   * The counter family `definition.name`, defined on first call; a later call with the same name
   * returns it (so two ClusterCaches of one manager share their series). Throws when the name is
   * taken by another type or other labels.
   */
  counter<L extends string = never>(definition: MetricDefinition<L>): CounterFamily<L> {
    return this.define(definition, CounterFamily, () => new CounterFamily(definition));
  }

  /** The gauge family `definition.name`, as {@link RuntimeMetrics.counter} defines counters. */
  gauge<L extends string = never>(definition: GaugeDefinition<L>): GaugeFamily<L> {
    return this.define(definition, GaugeFamily, () => new GaugeFamily(definition));
  }

  /** The histogram family `definition.name`, as {@link RuntimeMetrics.counter} defines counters. */
  histogram<L extends string = never>(definition: HistogramDefinition<L>): HistogramFamily<L> {
    return this.define(definition, HistogramFamily, () => new HistogramFamily(definition));
  }

  /**
   * Every metric in Prometheus' text format: the families, then the prom-client registry's
   * metrics if one was made.
   */
  async text(): Promise<string> {
    this.refreshProcessMetrics?.();
    const parts = [...this.families.values()].map((family) => family.text());
    if (this.promRegistry) {
      for (const metric of this.promRegistry.getMetricsAsArray()) {
        if (this.families.has(metric.name)) continue;
        parts.push(await this.promRegistry.getSingleMetricAsString(metric.name));
      }
    }
    return `${parts.join("\n\n")}\n`;
  }

  /** One controller's series, bound once (the controller keeps it for its reconciles). */
  controllerMetrics(controller: string): ControllerMetrics {
    const known = this.controllers.get(controller);
    if (known) return known;
    const labels = { controller };
    const outcomes = new Map<ReconcileOutcome, CounterSeries>();
    const outcome = (result: ReconcileOutcome): CounterSeries => {
      let series = outcomes.get(result);
      if (!series) {
        series = this.reconcileTotal.labels({ controller, result });
        outcomes.set(result, series);
      }
      return series;
    };
    const active: GaugeSeries = this.activeWorkers.labels(labels);
    const time: HistogramSeries = this.reconcileTime.labels(labels);
    const errors = this.reconcileErrors.labels(labels);
    const terminal = this.terminalReconcileErrors.labels(labels);
    const timeouts = this.reconcileTimeouts.labels(labels);
    const bound: ControllerMetrics = {
      reconciled: (result) => outcome(result).inc(),
      moveActiveWorkers: (delta) => active.inc(delta),
      reconcileTime: (seconds) => time.observe(seconds),
      errored: (kind) => {
        errors.inc();
        if (kind === "terminal") terminal.inc();
        if (kind === "timeout") timeouts.inc();
      },
    };
    this.controllers.set(controller, bound);
    return bound;
  }

  /** Work-queue hooks labelled for one controller (`name` and `controller` are both its name). */
  queueMetrics(controller: string): WorkQueueMetrics {
    const labels = { name: controller, controller };
    const depth = this.depth.labels(labels);
    const adds = this.adds.labels(labels);
    const retries = this.retries.labels(labels);
    const queued = this.queueDuration.labels(labels);
    const worked = this.workDuration.labels(labels);
    const unfinished = this.unfinishedWork.labels(labels);
    const longest = this.longestRunning.labels(labels);
    return {
      depth: (value) => depth.set(value),
      added: () => adds.inc(),
      retried: () => retries.inc(),
      queued: (seconds) => queued.observe(seconds),
      worked: (seconds) => worked.observe(seconds),
      unfinished: (total, longestSeconds) => {
        unfinished.set(total);
        longest.set(longestSeconds);
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

  /**
   * Current value of a metric summed over the series whose labels include `labels` (0 if none): a
   * counter's or gauge's value, a histogram's count of observations. Handy in tests.
   */
  async value(name: string, labels: Record<string, string> = {}): Promise<number> {
    this.refreshProcessMetrics?.();
    const family = this.families.get(name);
    if (family) return family.value(labels);
    const metric = this.promRegistry?.getSingleMetric(name);
    if (!metric) throw new Error(`no metric named ${name} in this manager's metrics`);
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

  private define<F extends MetricFamily<string, unknown>>(
    definition: MetricDefinition<string>,
    type: abstract new (...args: never[]) => F,
    make: () => F,
  ): F {
    const existing = this.families.get(definition.name);
    if (existing) {
      const sameLabels = existing.labelNames.join(",") === (definition.labelNames ?? []).join(",");
      if (!(existing instanceof type) || !sameLabels) {
        throw new Error(
          `metric ${definition.name} is already defined as a ${existing.type} with labels [${existing.labelNames.join(", ")}]; pick another name`,
        );
      }
      return existing;
    }
    const family = make();
    this.families.set(definition.name, family);
    return family;
  }
}
