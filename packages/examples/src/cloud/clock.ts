/**
 * Clocks for the fake cloud. The cloud never reads `Date.now()` or calls `setTimeout` itself: every
 * delay (boot, termination, lingering, refresh steps, …) is a timer on a {@link Clock}, so a test can run
 * minutes of cloud time in microseconds with a {@link ManualClock}, and a demo can run it in (scaled)
 * real time with a {@link RealClock}.
 *
 * @module
 */

/** A scheduled callback; `cancel()` is idempotent. */
export interface TimerHandle {
  /** Stops the callback from running (no effect once it ran). */
  cancel(): void;
}

/** The time source and scheduler the fake cloud runs on. */
export interface Clock {
  /** Current time in milliseconds since the Unix epoch. */
  now(): number;
  /** Runs `callback` once, `delayMs` (≥ 0) from now. */
  setTimer(delayMs: number, callback: () => void): TimerHandle;
}

interface PendingTimer {
  readonly at: number;
  readonly seq: number;
  readonly callback: () => void;
  cancelled: boolean;
}

/** 2026-01-01T00:00:00Z: a fixed start so that timestamps in test output are reproducible. */
const DEFAULT_START = Date.UTC(2026, 0, 1);

/**
 * A clock that only moves when told to. Timers fire in time order (ties in scheduling order), and timers
 * scheduled by a firing timer fire in the same `advance` call if they fall inside the window.
 *
 * @example
 * ```ts
 * const clock = new ManualClock();
 * const cloud = new FakeScalingCloud({ clock });
 * await cloud.client.createGroup({ name: "pool", minSize: 0, maxSize: 5, desiredCapacity: 2, … });
 * clock.advance(10_000);       // 10 s of cloud time: instances launched and booted
 * clock.runUntilIdle();        // or: until nothing is scheduled any more
 * ```
 */
export class ManualClock implements Clock {
  #now: number;
  #seq = 0;
  /** Binary min-heap on (at, seq); cancelled timers are dropped lazily when they reach the top. */
  readonly #heap: PendingTimer[] = [];
  #live = 0;

  /** @param start - the initial time in epoch milliseconds (default 2026-01-01T00:00:00Z) */
  constructor(start: number = DEFAULT_START) {
    if (!Number.isFinite(start)) {
      throw new TypeError(
        `ManualClock: start must be a finite epoch-milliseconds number, got ${start}`,
      );
    }
    this.#now = start;
  }

  /** {@inheritDoc Clock.now} */
  now(): number {
    return this.#now;
  }

  /** {@inheritDoc Clock.setTimer} */
  setTimer(delayMs: number, callback: () => void): TimerHandle {
    if (!Number.isFinite(delayMs) || delayMs < 0) {
      throw new RangeError(
        `ManualClock.setTimer: delayMs must be a finite number ≥ 0, got ${delayMs}`,
      );
    }
    const timer: PendingTimer = {
      at: this.#now + delayMs,
      seq: this.#seq++,
      callback,
      cancelled: false,
    };
    this.#push(timer);
    this.#live++;
    return {
      cancel: () => {
        if (timer.cancelled) return;
        timer.cancelled = true;
        this.#live--;
      },
    };
  }

  /** Number of timers still scheduled. */
  get pendingTimers(): number {
    return this.#live;
  }

  /** Time of the next scheduled timer, or `undefined` when nothing is scheduled. */
  nextTimerAt(): number | undefined {
    return this.#peek()?.at;
  }

  /**
   * Moves time forward by `ms`, firing every timer that falls due on the way (in order, each with
   * `now()` equal to its due time). Returns the number of timers fired.
   */
  advance(ms: number): number {
    if (!Number.isFinite(ms) || ms < 0) {
      throw new RangeError(`ManualClock.advance: ms must be a finite number ≥ 0, got ${ms}`);
    }
    const target = this.#now + ms;
    let fired = 0;
    for (;;) {
      const next = this.#peek();
      if (next === undefined || next.at > target) break;
      this.#fireTop();
      fired++;
    }
    this.#now = target;
    return fired;
  }

  /**
   * Fires timers (advancing time to each) until none is left. Throws after `maxTimers` to catch a
   * simulation that keeps rescheduling itself forever. Returns the number of timers fired.
   */
  runUntilIdle(maxTimers = 1_000_000): number {
    let fired = 0;
    while (this.#peek() !== undefined) {
      if (fired >= maxTimers) {
        throw new Error(
          `ManualClock.runUntilIdle: still busy after ${maxTimers} timers; something reschedules ` +
            "itself forever. Use advance(ms) for open-ended simulations.",
        );
      }
      this.#fireTop();
      fired++;
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

  #fireTop(): void {
    const timer = this.#pop();
    if (timer === undefined) return;
    timer.cancelled = true;
    this.#live--;
    this.#now = Math.max(this.#now, timer.at);
    timer.callback();
  }
}

/**
 * A clock that follows wall time, optionally sped up (`speed: 10` runs ten cloud seconds per real
 * second). Timers are unref'd so they never keep a process alive; call {@link RealClock.dispose} to
 * cancel the rest.
 *
 * @example
 * ```ts
 * const clock = new RealClock({ speed: 20 });   // a 5 s boot takes 250 ms
 * const cloud = new FakeScalingCloud({ clock });
 * // … later
 * clock.dispose();
 * ```
 */
export class RealClock implements Clock {
  readonly #speed: number;
  readonly #realStart = Date.now();
  readonly #start: number;
  readonly #handles = new Set<ReturnType<typeof setTimeout>>();

  /** @param options - `speed` (default 1) and `start` (cloud time at creation, default now) */
  constructor(options: { speed?: number; start?: number } = {}) {
    const speed = options.speed ?? 1;
    if (!Number.isFinite(speed) || speed <= 0) {
      throw new RangeError(`RealClock: speed must be a finite number > 0, got ${speed}`);
    }
    this.#speed = speed;
    this.#start = options.start ?? this.#realStart;
  }

  /** {@inheritDoc Clock.now} */
  now(): number {
    return this.#start + (Date.now() - this.#realStart) * this.#speed;
  }

  /** {@inheritDoc Clock.setTimer} */
  setTimer(delayMs: number, callback: () => void): TimerHandle {
    if (!Number.isFinite(delayMs) || delayMs < 0) {
      throw new RangeError(
        `RealClock.setTimer: delayMs must be a finite number ≥ 0, got ${delayMs}`,
      );
    }
    // Wall-clock timers may fire a little early; re-arm until cloud time has really reached `due`, so
    // a callback never sees now() before its due time (as with ManualClock).
    const due = this.now() + delayMs;
    let handle: ReturnType<typeof setTimeout>;
    const arm = (ms: number): void => {
      handle = setTimeout(() => {
        this.#handles.delete(handle);
        const remaining = due - this.now();
        if (remaining > 0) arm(remaining);
        else callback();
      }, ms / this.#speed);
      handle.unref();
      this.#handles.add(handle);
    };
    arm(delayMs);
    return {
      cancel: () => {
        clearTimeout(handle);
        this.#handles.delete(handle);
      },
    };
  }

  /** Cancels every timer still scheduled. */
  dispose(): void {
    for (const handle of this.#handles) clearTimeout(handle);
    this.#handles.clear();
  }
}
