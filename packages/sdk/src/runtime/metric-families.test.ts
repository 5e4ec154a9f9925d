import { createRequire } from "node:module";
import { describe, expect, it } from "vitest";
import { CounterFamily, GaugeFamily, HistogramFamily } from "./metric-families.js";
import { RuntimeMetrics } from "./metrics.js";

type PromClient = typeof import("prom-client");
const promClient = createRequire(import.meta.url)("prom-client") as PromClient;

// Prometheus' text format as prom-client writes it, for the same observations: a scraper that read
// prom-client's output reads this one.
describe("metric families", () => {
  it("write the text format prom-client writes for the same values", async () => {
    const registry = new promClient.Registry();
    const theirs = {
      counter: new promClient.Counter({
        name: "calls_total",
        help: "Calls \\ with\nnewline",
        labelNames: ["op", "result"],
        registers: [registry],
      }),
      gauge: new promClient.Gauge({ name: "depth", help: "Depth", registers: [registry] }),
      histogram: new promClient.Histogram({
        name: "took_seconds",
        help: "Took",
        labelNames: ["op"],
        buckets: [0.1, 1, 10],
        registers: [registry],
      }),
    };
    const counter = new CounterFamily({
      name: "calls_total",
      help: "Calls \\ with\nnewline",
      labelNames: ["op", "result"],
    });
    const gauge = new GaugeFamily({ name: "depth", help: "Depth" });
    const histogram = new HistogramFamily({
      name: "took_seconds",
      help: "Took",
      labelNames: ["op"],
      buckets: [0.1, 1, 10],
    });
    for (const [op, result] of [
      ["get", "ok"],
      ["get", "ok"],
      ['say "hi"\\\n', "error"],
    ] as const) {
      counter.inc({ op, result });
      theirs.counter.inc({ op, result });
    }
    gauge.set({}, 7);
    theirs.gauge.set(7);
    for (const value of [0.05, 0.1, 0.5, 3, 30]) {
      histogram.observe({ op: "get" }, value);
      theirs.histogram.observe({ op: "get" }, value);
    }
    const ours = [counter.text(), gauge.text(), histogram.text()].join("\n\n");
    expect(`${ours}\n`).toBe(await registry.metrics());
  });

  it("bind a series once, and refuse what Prometheus would not take", () => {
    const counter = new CounterFamily({ name: "adds_total", help: "Adds", labelNames: ["queue"] });
    const series = counter.labels({ queue: "pools" });
    series.inc();
    series.inc(2);
    expect(counter.labels({ queue: "pools" })).toBe(series);
    expect(counter.value({ queue: "pools" })).toBe(3);
    expect(counter.value()).toBe(3);
    expect(() => series.inc(-1)).toThrow(/only goes up/);
    expect(() => counter.inc({ queue: "pools", extra: "x" } as never)).toThrow(/no label "extra"/);
    expect(() => counter.inc({} as never)).toThrow(/label "queue" needs a string/);
    expect(() => new CounterFamily({ name: "bad-name", help: "" })).toThrow(/metric name/);
    expect(() => new CounterFamily({ name: "ok", help: "", labelNames: ["le"] })).toThrow(
      /label name/,
    );
    expect(() => new HistogramFamily({ name: "h", help: "", buckets: [1, 1] })).toThrow(
      /ascending/,
    );
    expect(() =>
      new HistogramFamily({ name: "h", help: "", buckets: [1] }).observe({}, Number.NaN),
    ).toThrow(/finite numbers only \(got NaN\)/);
    counter.remove({ queue: "pools" });
    expect(counter.text()).toBe("# HELP adds_total Adds\n# TYPE adds_total counter");
  });

  it("run a gauge's collect hook before every read", () => {
    let calls = 0;
    const gauge = new GaugeFamily({
      name: "delay",
      help: "Delay",
      labelNames: ["quantile"],
      collect: (self) => self.set({ quantile: "1" }, ++calls),
    });
    expect(gauge.value({ quantile: "1" })).toBe(1);
    expect(gauge.text()).toContain('delay{quantile="1"} 2');
  });
});

describe("RuntimeMetrics", () => {
  it("loads no prom-client registry until one is asked for, then scrapes both", async () => {
    const metrics = new RuntimeMetrics();
    metrics.controllerMetrics("pools").reconciled("success");
    const before = await metrics.text();
    expect(before).toContain(
      'controller_runtime_reconcile_total{controller="pools",result="success"} 1',
    );
    const own = new promClient.Counter({
      name: "acme_calls_total",
      help: "Cloud calls",
      registers: [metrics.registry],
    });
    own.inc(4);
    // A prom-client metric that takes a family's name is left out: the family wins.
    new promClient.Gauge({ name: "workqueue_depth", help: "dup", registers: [metrics.registry] });
    const after = await metrics.text();
    expect(after).toContain("acme_calls_total 4");
    expect(after.match(/# TYPE workqueue_depth /g)).toHaveLength(1);
    expect(await metrics.value("acme_calls_total")).toBe(4);
  });

  it("shares a family defined twice, and refuses a name taken by another type or labels", () => {
    const metrics = new RuntimeMetrics();
    const first = metrics.counter({ name: "acme_total", help: "A", labelNames: ["x"] });
    expect(metrics.counter({ name: "acme_total", help: "A", labelNames: ["x"] })).toBe(first);
    expect(() => metrics.gauge({ name: "acme_total", help: "A", labelNames: ["x"] })).toThrow(
      /already defined as a counter/,
    );
    expect(() => metrics.counter({ name: "acme_total", help: "A", labelNames: ["y"] })).toThrow(
      /labels \[x\]/,
    );
  });

  it("counts a controller's outcomes and errors on its bound series", async () => {
    const metrics = new RuntimeMetrics();
    const pools = metrics.controllerMetrics("pools");
    expect(metrics.controllerMetrics("pools")).toBe(pools);
    pools.reconciled("success");
    pools.reconciled("error");
    pools.errored("terminal");
    pools.errored("timeout");
    pools.errored("error");
    pools.moveActiveWorkers(1);
    pools.reconcileTime(0.02);
    expect(await metrics.value("controller_runtime_reconcile_total", { controller: "pools" })).toBe(
      2,
    );
    expect(await metrics.value("controller_runtime_reconcile_errors_total")).toBe(3);
    expect(await metrics.value("controller_runtime_terminal_reconcile_errors_total")).toBe(1);
    expect(await metrics.value("controller_runtime_reconcile_timeouts_total")).toBe(1);
    expect(await metrics.value("controller_runtime_active_workers")).toBe(1);
    expect(await metrics.value("controller_runtime_reconcile_time_seconds")).toBe(1);
  });
});
