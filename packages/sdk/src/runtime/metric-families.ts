/**
 * The runtime's own metrics: counters, gauges and histograms kept in plain numbers and written in
 * Prometheus' text format when scraped. prom-client hashes a label set on every `inc` and `observe`,
 * and loading it (with the OpenTelemetry API it requires) was a tenth of a manager's start; here a
 * series is looked up once and bound, so the reconcile path adds to numbers, and prom-client is
 * loaded only for a registry a provider asks for.
 *
 * @module
 */

/** Label values of one series, by label name. */
export type LabelValues<L extends string> = Readonly<Record<L, string>>;

/** What defines a family: its name, help text and label names. */
export interface MetricDefinition<L extends string = never> {
  /** Metric name (`[a-zA-Z_:][a-zA-Z0-9_:]*`). */
  readonly name: string;
  /** The `# HELP` text. */
  readonly help: string;
  /** Label names (`[a-zA-Z_][a-zA-Z0-9_]*`), in the order they are written. */
  readonly labelNames?: readonly L[];
}

/** One series of a counter, bound to its labels. */
export interface CounterSeries {
  /** Adds `by` (default 1; never negative). */
  inc(by?: number): void;
}

/** One series of a gauge, bound to its labels. */
export interface GaugeSeries {
  /** Sets the value. */
  set(value: number): void;
  /** Adds `by` (default 1; may be negative). */
  inc(by?: number): void;
}

/** One series of a histogram, bound to its labels. */
export interface HistogramSeries {
  /** Counts one observation. */
  observe(value: number): void;
}

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

/** One line of a family's text: `<name><suffix><labels> <value>`. */
export interface MetricSample {
  /** Appended to the family's name (`_bucket`, `_sum`, `_count`, or empty). */
  readonly suffix: string;
  /** The `{…}` label text, or empty. */
  readonly labels: string;
  /** The value. */
  readonly value: number;
}

/** What every family shares: its definition, its series by label values, and the text it writes. */
export abstract class MetricFamily<L extends string, S> {
  /** Metric name. */
  readonly name: string;
  /** The `# HELP` text. */
  readonly help: string;
  /** Label names, in the order they are written. */
  readonly labelNames: readonly L[];
  /** `counter`, `gauge` or `histogram`. */
  abstract readonly type: "counter" | "gauge" | "histogram";
  private readonly series = new Map<string, { labels: LabelValues<L>; text: string; series: S }>();

  /** Checks the names; the series come with their first use. */
  constructor(definition: MetricDefinition<L>) {
    if (!METRIC_NAME.test(definition.name)) {
      throw new RangeError(`metric name "${definition.name}" is not a Prometheus metric name`);
    }
    for (const label of definition.labelNames ?? []) {
      if (!LABEL_NAME.test(label) || label.startsWith("__") || label === "le") {
        throw new RangeError(`metric ${definition.name}: "${label}" is not a usable label name`);
      }
    }
    this.name = definition.name;
    this.help = definition.help;
    this.labelNames = [...(definition.labelNames ?? [])];
  }

  /**
   * The series of these label values, made (at zero) on first use. Bind it once where the labels
   * are known and keep it: the lookup is the only per-call cost a series has.
   */
  labels(values: LabelValues<L>): S {
    const key = this.keyOf(values);
    let entry = this.series.get(key);
    if (!entry) {
      const labels = Object.fromEntries(
        this.labelNames.map((name) => [name, values[name]]),
      ) as LabelValues<L>;
      entry = { labels, text: labelText(this.labelNames, labels), series: this.makeSeries() };
      this.series.set(key, entry);
    }
    return entry.series;
  }

  /** Drops the series of these label values (a cluster that is gone), if it exists. */
  remove(values: LabelValues<L>): void {
    this.series.delete(this.keyOf(values));
  }

  /** The family in Prometheus' text format (`# HELP`, `# TYPE`, then one line per sample). */
  text(): string {
    this.beforeRead();
    const lines = [
      `# HELP ${this.name} ${escapeHelp(this.help)}`,
      `# TYPE ${this.name} ${this.type}`,
    ];
    // A family without labels has its one series from the start, as Prometheus clients do.
    if (this.series.size === 0 && this.labelNames.length === 0) this.labels({} as LabelValues<L>);
    for (const entry of this.series.values()) {
      for (const sample of this.samples(entry.series, entry.text)) {
        lines.push(`${this.name}${sample.suffix}${sample.labels} ${formatNumber(sample.value)}`);
      }
    }
    return lines.join("\n");
  }

  /**
   * The sum over the series whose labels include `labels` (a counter's or gauge's value; a
   * histogram's count of observations).
   */
  value(labels: Readonly<Record<string, string>> = {}): number {
    this.beforeRead();
    let total = 0;
    for (const entry of this.series.values()) {
      const own = entry.labels as Readonly<Record<string, string>>;
      if (Object.entries(labels).every(([name, value]) => own[name] === value)) {
        total += this.valueOf(entry.series);
      }
    }
    return total;
  }

  /** Runs before the family is read (a gauge's collect hook). */
  protected beforeRead(): void {}
  /** A new series at zero. */
  protected abstract makeSeries(): S;
  /** The samples of one series; `labels` is its `{…}` text, or empty. */
  protected abstract samples(series: S, labels: string): MetricSample[];
  /** What {@link MetricFamily.value} adds up for one series. */
  protected abstract valueOf(series: S): number;

  private keyOf(values: LabelValues<L>): string {
    let key = "";
    for (const name of this.labelNames) {
      const value = values[name];
      if (typeof value !== "string") {
        throw new TypeError(`metric ${this.name}: label "${name}" needs a string value`);
      }
      key += `${value}\u0000`;
    }
    for (const name of Object.keys(values)) {
      if (!this.labelNames.includes(name as L)) {
        throw new TypeError(`metric ${this.name} has no label "${name}"`);
      }
    }
    return key;
  }
}

/** A counter's or gauge's series: one number. */
class ScalarValue {
  value = 0;
}

class CounterValue extends ScalarValue implements CounterSeries {
  inc(by = 1): void {
    if (!(by >= 0) || by === Number.POSITIVE_INFINITY) {
      throw new RangeError(`a counter only goes up by a finite amount (got ${by})`);
    }
    this.value += by;
  }
}

class GaugeValue extends ScalarValue implements GaugeSeries {
  set(value: number): void {
    this.value = value;
  }
  inc(by = 1): void {
    this.value += by;
  }
}

/** What counters and gauges share: one sample per series, its number. */
abstract class ScalarFamily<L extends string, S> extends MetricFamily<L, S> {
  protected samples(series: S, labels: string): MetricSample[] {
    return [{ suffix: "", labels, value: (series as ScalarValue).value }];
  }
  protected valueOf(series: S): number {
    return (series as ScalarValue).value;
  }
}

/** A counter family (`controller_runtime_reconcile_total{controller,result}`). */
export class CounterFamily<L extends string = never> extends ScalarFamily<L, CounterSeries> {
  /** Always `counter`. */
  readonly type = "counter";
  /** Adds `by` (default 1) to the series of `labels`. */
  inc(labels: LabelValues<L>, by = 1): void {
    this.labels(labels).inc(by);
  }
  protected makeSeries(): CounterSeries {
    return new CounterValue();
  }
}

/** What a gauge family takes beyond its definition. */
export interface GaugeDefinition<L extends string = never> extends MetricDefinition<L> {
  /** Sets the gauge's series right before every read (scrape or `value`). */
  readonly collect?: (gauge: GaugeFamily<L>) => void;
}

/** A gauge family (`workqueue_depth{name,controller}`). */
export class GaugeFamily<L extends string = never> extends ScalarFamily<L, GaugeSeries> {
  /** Always `gauge`. */
  readonly type = "gauge";
  private readonly collect: ((gauge: GaugeFamily<L>) => void) | undefined;
  /** A gauge; `collect`, if given, sets its series before every read. */
  constructor(definition: GaugeDefinition<L>) {
    super(definition);
    this.collect = definition.collect;
  }
  /** Sets the series of `labels` to `value`. */
  set(labels: LabelValues<L>, value: number): void {
    this.labels(labels).set(value);
  }
  protected override beforeRead(): void {
    this.collect?.(this);
  }
  protected makeSeries(): GaugeSeries {
    return new GaugeValue();
  }
}

class HistogramValue implements HistogramSeries {
  readonly counts: Float64Array;
  sum = 0;
  count = 0;
  constructor(private readonly bounds: readonly number[]) {
    this.counts = new Float64Array(bounds.length);
  }
  observe(value: number): void {
    if (!Number.isFinite(value)) {
      throw new TypeError(`a histogram observes finite numbers only (got ${value})`);
    }
    this.sum += value;
    this.count++;
    const bounds = this.bounds;
    for (let i = 0; i < bounds.length; i++) {
      if (value <= (bounds[i] as number)) {
        (this.counts[i] as number)++;
        return;
      }
    }
  }
}

/** What a histogram family takes beyond its definition. */
export interface HistogramDefinition<L extends string = never> extends MetricDefinition<L> {
  /** Upper bounds of the buckets, ascending (`+Inf` is implied). */
  readonly buckets: readonly number[];
}

/** A histogram family (`controller_runtime_reconcile_time_seconds{controller}`). */
export class HistogramFamily<L extends string = never> extends MetricFamily<L, HistogramSeries> {
  /** Always `histogram`. */
  readonly type = "histogram";
  /** Upper bounds of the buckets. */
  readonly buckets: readonly number[];
  /** A histogram over `buckets`. */
  constructor(definition: HistogramDefinition<L>) {
    super(definition);
    const buckets = [...definition.buckets];
    if (buckets.some((b, i) => !Number.isFinite(b) || (i > 0 && b <= (buckets[i - 1] as number)))) {
      throw new RangeError(`metric ${definition.name}: buckets must be finite and ascending`);
    }
    this.buckets = buckets;
  }
  /** Counts `value` in the series of `labels`. */
  observe(labels: LabelValues<L>, value: number): void {
    this.labels(labels).observe(value);
  }
  protected makeSeries(): HistogramSeries {
    return new HistogramValue(this.buckets);
  }
  protected samples(series: HistogramSeries, labels: string): MetricSample[] {
    const histogram = series as HistogramValue;
    // `le` first, as prom-client writes it.
    const withLe = (le: string) =>
      labels === "" ? `{le="${le}"}` : `{le="${le}",${labels.slice(1)}`;
    const samples: MetricSample[] = [];
    let cumulative = 0;
    this.buckets.forEach((bound, i) => {
      cumulative += histogram.counts[i] as number;
      samples.push({ suffix: "_bucket", labels: withLe(formatNumber(bound)), value: cumulative });
    });
    samples.push({ suffix: "_bucket", labels: withLe("+Inf"), value: histogram.count });
    samples.push({ suffix: "_sum", labels, value: histogram.sum });
    samples.push({ suffix: "_count", labels, value: histogram.count });
    return samples;
  }
  protected valueOf(series: HistogramSeries): number {
    return (series as HistogramValue).count;
  }
}

function labelText(names: readonly string[], labels: Readonly<Record<string, string>>): string {
  if (names.length === 0) return "";
  return `{${names.map((name) => `${name}="${escapeLabelValue(labels[name] ?? "")}"`).join(",")}}`;
}

function escapeLabelValue(value: string): string {
  return value.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/"/g, '\\"');
}

function escapeHelp(help: string): string {
  return help.replace(/\\/g, "\\\\").replace(/\n/g, "\\n");
}

function formatNumber(value: number): string {
  if (Number.isNaN(value)) return "NaN";
  if (value === Number.POSITIVE_INFINITY) return "+Inf";
  if (value === Number.NEGATIVE_INFINITY) return "-Inf";
  return String(value);
}
