/**
 * Time source and timer scheduler. The runtime (work queue, rate limiters) and simulations such as a
 * fake cloud never read the time or call `setTimeout` themselves but go through a `Clock`, so tests can
 * drive time by hand with a {@link ManualClock} instead of sleeping.
 */
export interface Clock {
  /**
   * Milliseconds since the Unix epoch; never moves backwards. The runtime only uses differences
   * between readings; simulations may also turn a reading into a timestamp.
   */
  now(): number;
  /**
   * Runs `callback` once, `delayMs` from now (a negative delay counts as 0); returns a handle for
   * {@link Clock.clearTimer}.
   */
  setTimer(callback: () => void, delayMs: number): unknown;
  /** Cancels a timer returned by {@link Clock.setTimer}. Unknown or already fired handles are ignored. */
  clearTimer(handle: unknown): void;
}

/**
 * The real clock: monotonic time anchored at the process start (`performance.timeOrigin +
 * performance.now()`, so it reads as epoch milliseconds but does not jump when the system clock is
 * set) and Node timers, unref'd so they never hold the process open.
 */
export const systemClock: Clock = {
  now: () => performance.timeOrigin + performance.now(),
  setTimer: (callback, delayMs) => {
    const timer = setTimeout(callback, Math.max(0, delayMs));
    timer.unref();
    return timer;
  },
  clearTimer: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

interface PendingTimer {
  readonly at: number;
  /** Scheduling order (and the timer's handle): breaks ties between equal due times. */
  readonly seq: number;
  readonly callback: () => void;
  cancelled: boolean;
}

/** 2026-01-01T00:00:00Z: a fixed start, so that timestamps derived from a test's clock are reproducible. */
const DEFAULT_START = Date.UTC(2026, 0, 1);

/**
 * A clock that only moves when told to, for deterministic tests and simulations of time-based logic
 * (backoff, delayed requeues, a fake cloud's boot and termination delays). Timers fire in due-time
 * order, ties in scheduling order, each with `now()` equal to its due time; a timer scheduled by a
 * firing timer fires in the same {@link ManualClock.advance} call if it falls due inside the window.
 * Timers sit in a binary heap, so a simulation with many thousands of timers stays fast.
 *
 * @example
 * ```ts
 * const clock = new ManualClock();
 * const queue = new WorkQueue({ clock });
 * queue.add("ns/a", { after: 1000 });
 * clock.advance(1000); // "ns/a" is now ready
 * clock.runUntilIdle(); // or: fire every timer, jumping from one to the next, until none is left
 * ```
 */
export class ManualClock implements Clock {
  #now: number;
  #seq = 0;
  /** Binary min-heap on (at, seq); cancelled timers are dropped lazily when they reach the top. */
  readonly #heap: PendingTimer[] = [];
  /** Timers not yet fired nor cancelled, by handle. */
  readonly #live = new Map<number, PendingTimer>();
  #firing = false;

  /** @param start - the initial reading in epoch milliseconds (default 2026-01-01T00:00:00Z) */
  constructor(start: number = DEFAULT_START) {
    if (!Number.isFinite(start)) {
      throw new TypeError(
        `ManualClock: start must be a finite epoch-milliseconds number, got ${start}`,
      );
    }
    this.#now = start;
  }

  /** The current reading in milliseconds; only `advance` and `runUntilIdle` move it. */
  now(): number {
    return this.#now;
  }

  /**
   * Registers a timer that fires once the clock reaches `now() + delayMs` (a negative delay counts as
   * 0). Throws on a non-finite delay, which would otherwise never fire or fire at once.
   */
  setTimer(callback: () => void, delayMs: number): unknown {
    if (!Number.isFinite(delayMs)) {
      throw new RangeError(
        `ManualClock.setTimer: delayMs must be a finite number of milliseconds, got ${delayMs}`,
      );
    }
    const timer: PendingTimer = {
      at: this.#now + Math.max(0, delayMs),
      seq: ++this.#seq,
      callback,
      cancelled: false,
    };
    this.#push(timer);
    this.#live.set(timer.seq, timer);
    return timer.seq;
  }

  /** Cancels a pending timer; unknown, fired or already cancelled handles are ignored. */
  clearTimer(handle: unknown): void {
    if (typeof handle !== "number") return;
    const timer = this.#live.get(handle);
    if (timer === undefined) return;
    timer.cancelled = true;
    this.#live.delete(handle);
  }

  /** Number of timers still waiting to fire. */
  get pendingTimers(): number {
    return this.#live.size;
  }

  /** Due time of the next timer, or `undefined` when nothing is scheduled. */
  nextTimerAt(): number | undefined {
    return this.#peek()?.at;
  }

  /**
   * Moves time forward by `ms`, firing every timer that falls due on the way, in order, each with
   * `now()` at its due time. Returns the number of timers fired. If a callback throws, the error
   * propagates and the clock stays at that timer's due time.
   */
  advance(ms: number): number {
    if (!Number.isFinite(ms) || ms < 0) {
      throw new RangeError(`ManualClock.advance: ms must be a finite number ≥ 0, got ${ms}`);
    }
    const target = this.#now + ms;
    const fired = this.#fireWhile((next) => next.at <= target, Number.POSITIVE_INFINITY);
    this.#now = target;
    return fired;
  }

  /**
   * Fires timers, jumping time to each one's due time, until none is left; returns the number fired.
   * Throws once `maxTimers` have fired with more still scheduled, which catches a simulation that
   * keeps rescheduling itself forever (drive such a one with {@link ManualClock.advance}).
   */
  runUntilIdle(maxTimers = 1_000_000): number {
    if (!Number.isInteger(maxTimers) || maxTimers < 0) {
      throw new RangeError(
        `ManualClock.runUntilIdle: maxTimers must be an integer ≥ 0, got ${maxTimers}`,
      );
    }
    const fired = this.#fireWhile(() => true, maxTimers);
    if (this.#peek() !== undefined) {
      throw new Error(
        `ManualClock.runUntilIdle: still busy after ${maxTimers} timers; something reschedules ` +
          "itself forever. Use advance(ms) for open-ended simulations, or raise maxTimers.",
      );
    }
    return fired;
  }

  /** Fires the earliest timers while `due` accepts them, up to `limit`; returns how many fired. */
  #fireWhile(due: (next: PendingTimer) => boolean, limit: number): number {
    if (this.#firing) {
      throw new Error(
        "ManualClock: advance/runUntilIdle called from inside a timer callback; schedule another " +
          "timer with setTimer instead of moving the clock from within one.",
      );
    }
    this.#firing = true;
    let fired = 0;
    try {
      for (;;) {
        const next = this.#peek();
        if (next === undefined || fired >= limit || !due(next)) break;
        this.#pop();
        this.#live.delete(next.seq);
        next.cancelled = true;
        this.#now = Math.max(this.#now, next.at);
        fired++;
        next.callback();
      }
    } finally {
      this.#firing = false;
    }
    return fired;
  }

  #before(a: PendingTimer, b: PendingTimer): boolean {
    return a.at < b.at || (a.at === b.at && a.seq < b.seq);
  }

  #push(timer: PendingTimer): void {
    const heap = this.#heap;
    heap.push(timer);
    let i = heap.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      const p = heap[parent] as PendingTimer;
      if (!this.#before(timer, p)) break;
      heap[i] = p;
      i = parent;
    }
    heap[i] = timer;
  }

  #pop(): PendingTimer | undefined {
    const heap = this.#heap;
    const top = heap[0];
    const last = heap.pop();
    if (top === undefined || last === undefined || heap.length === 0) return top;
    let i = 0;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= heap.length) break;
      const right = left + 1;
      const l = heap[left] as PendingTimer;
      const r = heap[right];
      const child = r !== undefined && this.#before(r, l) ? right : left;
      const c = heap[child] as PendingTimer;
      if (!this.#before(c, last)) break;
      heap[i] = c;
      i = child;
    }
    heap[i] = last;
    return top;
  }

  /** The earliest live timer, discarding cancelled ones on top. */
  #peek(): PendingTimer | undefined {
    while (this.#heap[0]?.cancelled) this.#pop();
    return this.#heap[0];
  }
}
