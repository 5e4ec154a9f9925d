import { type Clock, systemClock } from "./clock.js";
import { defaultControllerRateLimiter, type RateLimiter } from "./ratelimiter.js";

/**
 * Queue priorities. Higher runs first. Events from initial lists and resyncs are enqueued at
 * {@link QueuePriority.Low} so that real changes overtake the start-up flood (as CAPI's priority queue).
 */
export const QueuePriority = {
  /** Initial list, relist and periodic resync events. */
  Low: -100,
  /** Everything else. */
  Normal: 0,
} as const;

/** Options of {@link WorkQueue.add}. */
export interface AddOptions {
  /** Make the item ready only after this many milliseconds. */
  after?: number;
  /** Delay the item by the rate limiter (a retry after a failure); counts in `workqueue_retries_total`. */
  rateLimited?: boolean;
  /** Priority; higher is served first. Default {@link QueuePriority.Normal}. */
  priority?: number;
}

/**
 * Hooks a work queue calls so that a metrics backend can observe it (see `RuntimeMetrics.queueMetrics`).
 * All durations are in seconds.
 */
export interface WorkQueueMetrics {
  /** The number of waiting items changed. */
  depth(value: number): void;
  /** An item was added (deduplicated adds count too, as in client-go). */
  added(): void;
  /** An item was re-added through the rate limiter. */
  retried(): void;
  /** An item was handed to a worker after waiting `seconds` since it became ready. */
  queued(seconds: number): void;
  /** A worker finished an item after `seconds` of work. */
  worked(seconds: number): void;
  /** Periodic report of in-flight work: total and longest running seconds. */
  unfinished(totalSeconds: number, longestSeconds: number): void;
}

/** Options of {@link WorkQueue}. */
export interface WorkQueueOptions {
  /** Time source; inject a `ManualClock` in tests. */
  clock?: Clock;
  /** Retry delays; default {@link defaultControllerRateLimiter}. */
  rateLimiter?: RateLimiter;
  /**
   * Where the queue reports depth, adds, latency and work duration (in seconds); none by default.
   */
  metrics?: WorkQueueMetrics;
}

interface Entry {
  key: string;
  /** Clock time at which the item may be handed out. */
  readyAt: number;
  priority: number;
  /** Bumped whenever readyAt changes so stale heap nodes can be skipped. */
  version: number;
  /** When the item became ready (for queue-duration metrics). */
  readySince: number;
  ready: boolean;
  /** Bumped whenever the entry joins a ready lane, so an older slot of it is skipped. */
  slot: number;
}

/** One place in a ready lane: stale once its entry was handed out or moved to another lane. */
interface ReadySlot {
  entry: Entry;
  slot: number;
}

/**
 * The ready keys of one priority in FIFO order: an array read from `head`, compacted once half of it
 * is consumed, so handing out the next key costs the same with 10 or 10,000 waiting.
 */
class ReadyLane {
  private slots: ReadySlot[] = [];
  private head = 0;

  push(slot: ReadySlot): void {
    this.slots.push(slot);
  }

  shift(): ReadySlot | undefined {
    const slot = this.slots[this.head];
    if (slot === undefined) return undefined;
    this.head++;
    if (this.head === this.slots.length) {
      this.slots = [];
      this.head = 0;
    } else if (this.head >= 1024 && this.head * 2 >= this.slots.length) {
      this.slots = this.slots.slice(this.head);
      this.head = 0;
    }
    return slot;
  }
}

interface HeapNode {
  at: number;
  key: string;
  version: number;
}

/**
 * A deduplicating, priority-ordered, rate-limited work queue with controller-runtime semantics:
 *
 * - a key waiting in the queue is stored once however often it is added (the earliest ready time and
 *   the highest priority win);
 * - a key being processed is never handed to a second worker; adds during processing are kept and the
 *   key comes back after {@link WorkQueue.done};
 * - `after` delays an item, `rateLimited` delays it by the rate limiter (per-item exponential backoff
 *   plus an overall token bucket by default); {@link WorkQueue.forget} resets the backoff.
 *
 * @example
 * ```ts
 * const queue = new WorkQueue();
 * queue.add("default/a");
 * const key = await queue.get(); // "default/a"
 * try { await work(key); queue.forget(key); } catch { queue.add(key, { rateLimited: true }); }
 * finally { queue.done(key); }
 * ```
 */
export class WorkQueue {
  private readonly clock: Clock;
  private readonly rateLimiter: RateLimiter;
  private readonly metrics: WorkQueueMetrics | undefined;
  private readonly entries = new Map<string, Entry>();
  /** Ready keys by priority, each lane in FIFO order. */
  private readonly readyByPriority = new Map<number, ReadyLane>();
  /**
   * Ready keys found held by a worker (added again while being processed): they rejoin their lane
   * at {@link WorkQueue.done}, as client-go's dirty set does, instead of being skipped on every take.
   */
  private readonly parked = new Set<string>();
  private priorities: number[] = [];
  private readonly delayed: HeapNode[] = [];
  private readonly processing = new Map<string, number>();
  private readonly waiters: Array<(key: string | undefined) => void> = [];
  private timer: unknown;
  private versionSeq = 0;
  private timerAt = Number.POSITIVE_INFINITY;
  private closed = false;
  private drainWaiters: Array<() => void> = [];

  /** Creates an empty queue. */
  constructor(options: WorkQueueOptions = {}) {
    this.clock = options.clock ?? systemClock;
    this.rateLimiter = options.rateLimiter ?? defaultControllerRateLimiter({ clock: this.clock });
    this.metrics = options.metrics;
  }

  /** Adds `key` (deduplicated). Ignored after {@link WorkQueue.shutdown}. */
  add(key: string, options: AddOptions = {}): void {
    if (this.closed) return;
    let delay = Math.max(0, options.after ?? 0);
    if (options.rateLimited) {
      delay = Math.max(delay, this.rateLimiter.when(key));
      this.metrics?.retried();
    }
    const priority = options.priority ?? QueuePriority.Normal;
    const now = this.clock.now();
    const readyAt = now + delay;
    this.metrics?.added();
    const existing = this.entries.get(key);
    if (existing === undefined) {
      // Versions are unique per queue, not per entry: a delayed node left in the heap by an entry
      // that was already handed out must never match a later entry of the same key.
      const entry: Entry = {
        key,
        readyAt,
        priority,
        version: ++this.versionSeq,
        readySince: now,
        ready: false,
        slot: 0,
      };
      this.entries.set(key, entry);
      this.place(entry, now);
    } else {
      const raise = priority > existing.priority;
      const sooner = readyAt < existing.readyAt;
      if (!raise && !sooner) return;
      if (existing.ready) {
        if (raise) {
          existing.priority = priority;
          // A parked key rejoins a lane at done(), at its new priority.
          if (!this.parked.has(existing.key)) this.pushReady(existing);
        }
      } else {
        if (raise) existing.priority = priority;
        if (sooner) {
          existing.readyAt = readyAt;
          existing.version = ++this.versionSeq;
          this.place(existing, now);
        }
      }
    }
    this.metrics?.depth(this.entries.size);
    this.dispatch();
  }

  /** Shorthand for `add(key, { after: delayMs })`. */
  addAfter(key: string, delayMs: number): void {
    this.add(key, { after: delayMs });
  }

  /** Shorthand for `add(key, { rateLimited: true })`. */
  addRateLimited(key: string): void {
    this.add(key, { rateLimited: true });
  }

  /** Resets the backoff of `key`; call it when processing succeeded. */
  forget(key: string): void {
    this.rateLimiter.forget(key);
  }

  /** How many rate-limited retries `key` has had since it was last forgotten. */
  numRequeues(key: string): number {
    return this.rateLimiter.numRequeues(key);
  }

  /** Number of waiting items (ready or delayed), not counting those being processed. */
  len(): number {
    return this.entries.size;
  }

  /** Number of items handed out and not yet {@link WorkQueue.done}. */
  inFlight(): number {
    return this.processing.size;
  }

  /** True once {@link WorkQueue.shutdown} was called. */
  isShutDown(): boolean {
    return this.closed;
  }

  /**
   * Waits for the next ready key that no other worker holds. Resolves `undefined` once the queue is
   * shut down (waiting items are dropped: the informers re-deliver them on the next start).
   */
  get(): Promise<string | undefined> {
    if (this.closed) return Promise.resolve(undefined);
    return new Promise((resolve) => {
      this.waiters.push(resolve);
      this.dispatch();
    });
  }

  /** Marks `key` as processed; if it was re-added meanwhile it becomes available again. */
  done(key: string): void {
    const started = this.processing.get(key);
    if (started === undefined) return;
    this.processing.delete(key);
    this.metrics?.worked((this.clock.now() - started) / 1000);
    if (this.parked.delete(key)) {
      const entry = this.entries.get(key);
      if (entry?.ready) this.pushReady(entry);
    }
    if (this.processing.size === 0) {
      const waiters = this.drainWaiters;
      this.drainWaiters = [];
      for (const resolve of waiters) resolve();
    }
    this.dispatch();
  }

  /** Stops handing out items; pending {@link WorkQueue.get} calls resolve `undefined`. */
  shutdown(): void {
    if (this.closed) return;
    this.closed = true;
    if (this.timer !== undefined) this.clock.clearTimer(this.timer);
    this.timer = undefined;
    for (const resolve of this.waiters.splice(0)) resolve(undefined);
  }

  /** Resolves once no item is being processed (use after {@link WorkQueue.shutdown}). */
  drained(): Promise<void> {
    if (this.processing.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.drainWaiters.push(resolve));
  }

  /** Reports in-flight work to the metrics hooks (called periodically by the controller). */
  reportUnfinished(): void {
    if (this.metrics === undefined) return;
    const now = this.clock.now();
    let total = 0;
    let longest = 0;
    for (const started of this.processing.values()) {
      const seconds = (now - started) / 1000;
      total += seconds;
      longest = Math.max(longest, seconds);
    }
    this.metrics.unfinished(total, longest);
  }

  private place(entry: Entry, now: number): void {
    if (entry.readyAt <= now) {
      this.pushReady(entry);
      return;
    }
    this.heapPush({ at: entry.readyAt, key: entry.key, version: entry.version });
    this.schedule();
  }

  private pushReady(entry: Entry): void {
    if (!entry.ready) entry.readySince = this.clock.now();
    entry.ready = true;
    let lane = this.readyByPriority.get(entry.priority);
    if (lane === undefined) {
      lane = new ReadyLane();
      this.readyByPriority.set(entry.priority, lane);
      this.priorities = [...this.readyByPriority.keys()].sort((a, b) => b - a);
    }
    entry.slot = ++this.versionSeq;
    lane.push({ entry, slot: entry.slot });
  }

  private promoteDue(): void {
    const now = this.clock.now();
    for (;;) {
      const top = this.delayed[0];
      if (top === undefined || top.at > now) break;
      this.heapPop();
      const entry = this.entries.get(top.key);
      if (entry === undefined || entry.ready || entry.version !== top.version) continue;
      this.pushReady(entry);
    }
  }

  private schedule(): void {
    const top = this.delayed[0];
    if (this.closed || top === undefined) return;
    if (top.at >= this.timerAt && this.timer !== undefined) return;
    if (this.timer !== undefined) this.clock.clearTimer(this.timer);
    this.timerAt = top.at;
    this.timer = this.clock.setTimer(() => {
      this.timer = undefined;
      this.timerAt = Number.POSITIVE_INFINITY;
      this.dispatch();
    }, top.at - this.clock.now());
  }

  private dispatch(): void {
    this.promoteDue();
    while (this.waiters.length > 0) {
      const key = this.takeReady();
      if (key === undefined) break;
      const resolve = this.waiters.shift();
      resolve?.(key);
    }
    this.schedule();
  }

  private takeReady(): string | undefined {
    for (const priority of this.priorities) {
      const lane = this.readyByPriority.get(priority);
      if (lane === undefined) continue;
      for (let next = lane.shift(); next !== undefined; next = lane.shift()) {
        const { entry, slot } = next;
        if (slot !== entry.slot || this.entries.get(entry.key) !== entry) continue;
        if (this.processing.has(entry.key)) {
          this.parked.add(entry.key);
          continue;
        }
        this.entries.delete(entry.key);
        const now = this.clock.now();
        this.processing.set(entry.key, now);
        this.metrics?.queued((now - entry.readySince) / 1000);
        this.metrics?.depth(this.entries.size);
        return entry.key;
      }
    }
    return undefined;
  }

  private heapPush(node: HeapNode): void {
    const heap = this.delayed;
    heap.push(node);
    let index = heap.length - 1;
    while (index > 0) {
      const parent = (index - 1) >> 1;
      const parentNode = heap[parent] as HeapNode;
      if (parentNode.at <= node.at) break;
      heap[index] = parentNode;
      index = parent;
    }
    heap[index] = node;
  }

  private heapPop(): void {
    const heap = this.delayed;
    const last = heap.pop();
    if (last === undefined || heap.length === 0) return;
    let index = 0;
    for (;;) {
      const left = index * 2 + 1;
      if (left >= heap.length) break;
      const right = left + 1;
      const leftNode = heap[left] as HeapNode;
      const rightNode = heap[right];
      const child = rightNode !== undefined && rightNode.at < leftNode.at ? right : left;
      const childNode = heap[child] as HeapNode;
      if (childNode.at >= last.at) break;
      heap[index] = childNode;
      index = child;
    }
    heap[index] = last;
  }
}
