/**
 * Liveness of the event loop: how long timers, sockets and signals had to wait, which reconciles ran
 * while they waited, and the turn that controller workers give the loop between reconciles.
 *
 * @module
 */
import { createHistogram, performance, type RecordableHistogram } from "node:perf_hooks";
import type { RuntimeLogger } from "./logging.js";
import type { RuntimeMetrics } from "./metrics.js";

let turn: Promise<void> | undefined;
let lastTurnAt = performance.now();

/** How long workers may run reconciles back to back before they give the loop a turn, ms. */
export const EVENT_LOOP_SLICE_MS = 5;

/**
 * Resolves on the next turn of the event loop (a `setImmediate`), after timers and pending I/O had
 * their phase. A reconcile that reads only the cache resolves on microtasks, which Node runs to the
 * end before anything else: workers await this between reconciles so that a backlog of ready keys
 * cannot starve lease renewals, watch events, probes and signals. Workers that finish together share
 * one turn.
 */
export function eventLoopTurn(): Promise<void> {
  turn ??= new Promise((resolve) => {
    setImmediate(() => {
      turn = undefined;
      lastTurnAt = performance.now();
      resolve();
    });
  });
  return turn;
}

/**
 * {@link eventLoopTurn} once {@link EVENT_LOOP_SLICE_MS} have passed since the last one, else
 * `undefined` (go on at once): what the controller workers do after each reconcile. Timers, sockets
 * and signals wait at most a slice plus one reconcile, and a burst of short reconciles pays one
 * `setImmediate` per slice instead of one each.
 */
export function eventLoopTurnIfDue(): Promise<void> | undefined {
  if (turn === undefined && performance.now() - lastTurnAt < EVENT_LOOP_SLICE_MS) return undefined;
  return eventLoopTurn();
}

/** One reconcile as the monitor tracks it, to name it when the loop was blocked. */
interface Activity {
  controller: string;
  key: string;
  startedAt: number;
  endedAt?: number;
}

/** A block of the event loop: how long, when it ended, and the reconciles that ran meanwhile. */
export interface EventLoopBlock {
  /** How long the loop could not run timers, ms. */
  readonly durationMs: number;
  /** When the block ended (`Date.now()`). */
  readonly endedAt: number;
  /** Reconciles that ran during the block, longest first (at most 5). */
  readonly reconciles: readonly { controller: string; key: string; durationMs: number }[];
}

/** Options of {@link EventLoopMonitor}. */
export interface EventLoopMonitorOptions {
  /** A block at least this long fails the health check and is logged as an error, ms. Default 5,000. */
  blockThresholdMs?: number;
  /** Where blocks are logged (warn from 1 s or the threshold if lower, error from the threshold). */
  logger?: RuntimeLogger;
  /** Where the delay metrics go (see {@link EventLoopMonitor}); none when absent. */
  metrics?: RuntimeMetrics;
}

// One timer does both jobs at 4 Hz: an idle manager's monitor costs ~1 ms of CPU a second (Node's
// monitorEventLoopDelay, a 10 ms timer, cost 7 ms a second, twenty times an idle controller-runtime).
const HEARTBEAT_MS = 250;
const MAX_NAMED = 5;

/**
 * Watches the event loop of the process. Two signals:
 *
 * - the delay metric: how late each heartbeat (every 250 ms) fired,
 *   `capi_ts_event_loop_delay_seconds{quantile="0.5"|"0.9"|"0.99"|"1"}` since the monitor started
 *   (quantile 1 is the max), and `capi_ts_event_loop_blocks_total`, blocks past the threshold;
 * - blocks: a heartbeat timer that fires late by `d` ms means the loop could not run timers for `d`
 *   ms. A block of a second or more is logged with the reconciles that ran during it (controller and
 *   key, longest first: a synchronous hot loop in a reconciler is its only long one); a block of at
 *   least `blockThresholdMs` fails {@link EventLoopMonitor.healthCheck} for as long again, and at
 *   least 10 s, so a probe after the block still sees it and a loop that keeps blocking keeps failing.
 *
 * The loop cannot answer a probe while it is blocked: the kubelet's probe timeout fails it then; this
 * check keeps it failing after the loop has come back.
 */
export class EventLoopMonitor {
  /** The threshold of a failing health check, ms. */
  readonly blockThresholdMs: number;
  private readonly histogram: RecordableHistogram = createHistogram();
  private readonly log: RuntimeLogger | undefined;
  private readonly running = new Set<Activity>();
  /** Reconciles that ended while the heartbeat was overdue: they ran during the ongoing block. */
  private endedLate: Activity[] = [];
  private lastBeat = performance.now();
  private timer: NodeJS.Timeout | undefined;
  private lastBlock: EventLoopBlock | undefined;
  private readonly blocks: { inc(): void } | undefined;

  /** Creates a stopped monitor; {@link EventLoopMonitor.start} starts it. */
  constructor(options: EventLoopMonitorOptions = {}) {
    const threshold = options.blockThresholdMs ?? 5000;
    if (!Number.isFinite(threshold) || threshold < 0) {
      throw new RangeError(
        `the event loop block threshold must be a number of ms ≥ 0 (0 turns the health check off), got ${threshold}`,
      );
    }
    this.blockThresholdMs = threshold;
    this.log = options.logger?.child({ component: "event-loop" });
    if (options.metrics) this.blocks = this.registerMetrics(options.metrics);
  }

  /** Starts sampling; calling it twice does nothing. */
  start(): void {
    if (this.timer) return;
    this.lastBeat = performance.now();
    this.timer = setInterval(() => this.beat(), HEARTBEAT_MS);
    this.timer.unref();
  }

  /** Stops sampling. */
  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** The largest delay seen since start, ms. */
  maxDelayMs(): number {
    return this.histogram.max / 1e6;
  }

  /** The last block of at least a second, if any. */
  lastBlocked(): EventLoopBlock | undefined {
    return this.lastBlock;
  }

  /**
   * Records that a reconcile starts; call the returned function when it ends. Cheap: a set insert,
   * and a clock read at the end.
   */
  track(controller: string, key: string): () => void {
    const activity: Activity = { controller, key, startedAt: performance.now() };
    this.running.add(activity);
    return () => {
      this.running.delete(activity);
      const now = performance.now();
      if (now - this.lastBeat > HEARTBEAT_MS + this.logThresholdMs()) {
        activity.endedAt = now;
        if (this.endedLate.length < 1000) this.endedLate.push(activity);
      }
    };
  }

  /** A `/healthz` check: fails for a while after a block past the threshold (see the class). */
  healthCheck(): string | undefined {
    const block = this.lastBlock;
    if (this.blockThresholdMs === 0 || !block || block.durationMs < this.blockThresholdMs) {
      return undefined;
    }
    const failFor = Math.max(10_000, block.durationMs);
    if (Date.now() - block.endedAt > failFor) return undefined;
    return `the event loop was blocked for ${(block.durationMs / 1000).toFixed(1)} s (threshold ${this.blockThresholdMs / 1000} s) until ${new Date(block.endedAt).toISOString()}${describeReconciles(block)}`;
  }

  private logThresholdMs(): number {
    return this.blockThresholdMs > 0 ? Math.min(1000, this.blockThresholdMs) : 1000;
  }

  private beat(): void {
    const now = performance.now();
    const lateMs = now - this.lastBeat - HEARTBEAT_MS;
    // A timer can fire a hair early; the histogram takes whole nanoseconds ≥ 1.
    this.histogram.record(Math.max(1, Math.round(lateMs * 1e6)));
    const blockStart = this.lastBeat;
    this.lastBeat = now;
    const late = this.endedLate;
    if (late.length > 0) this.endedLate = [];
    if (lateMs < this.logThresholdMs()) return;
    const ran: { controller: string; key: string; durationMs: number }[] = [];
    for (const activity of [...late, ...this.running]) {
      const end = activity.endedAt ?? now;
      if (end < blockStart) continue;
      ran.push({
        controller: activity.controller,
        key: activity.key,
        durationMs: Math.round(end - activity.startedAt),
      });
    }
    ran.sort((a, b) => b.durationMs - a.durationMs);
    const block: EventLoopBlock = {
      durationMs: Math.round(lateMs),
      endedAt: Date.now(),
      reconciles: ran.slice(0, MAX_NAMED),
    };
    this.lastBlock = block;
    const culprit = block.reconciles[0];
    const fields = {
      blockedMs: block.durationMs,
      ...(culprit ? { controller: culprit.controller, key: culprit.key } : {}),
      reconciles: block.reconciles,
    };
    const past = this.blockThresholdMs > 0 && lateMs >= this.blockThresholdMs;
    if (past) this.blocks?.inc();
    const message = `event loop blocked: timers, sockets and signals waited${culprit ? " while reconciles ran (a synchronous loop in one of them?)" : ""}`;
    if (past) this.log?.error(fields, message);
    else this.log?.warn(fields, message);
  }

  private registerMetrics(metrics: RuntimeMetrics): { inc(): void } {
    const histogram = this.histogram;
    const seconds = (ns: number) => (Number.isFinite(ns) ? ns / 1e9 : 0);
    metrics.gauge({
      name: "capi_ts_event_loop_delay_seconds",
      help: "Event loop delay since the manager started (how late a 250 ms heartbeat fired), by quantile; quantile 1 is the max",
      labelNames: ["quantile"],
      collect(gauge) {
        const empty = histogram.count === 0;
        gauge.set({ quantile: "0.5" }, empty ? 0 : seconds(histogram.percentile(50)));
        gauge.set({ quantile: "0.9" }, empty ? 0 : seconds(histogram.percentile(90)));
        gauge.set({ quantile: "0.99" }, empty ? 0 : seconds(histogram.percentile(99)));
        gauge.set({ quantile: "1" }, empty ? 0 : seconds(histogram.max));
      },
    });
    return metrics
      .counter({
        name: "capi_ts_event_loop_blocks_total",
        help: "Times the event loop was blocked at least the health check's threshold",
      })
      .labels({});
  }
}

function describeReconciles(block: EventLoopBlock): string {
  if (block.reconciles.length === 0) return "";
  const list = block.reconciles
    .map((r) => `controller ${r.controller} key ${r.key} (${(r.durationMs / 1000).toFixed(1)} s)`)
    .join(", ");
  return `; reconciles that ran meanwhile, longest first: ${list}`;
}
