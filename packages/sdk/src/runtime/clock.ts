/**
 * Time source used by the work queue and rate limiters. Injecting it lets tests drive time by hand
 * instead of sleeping.
 */
export interface Clock {
  /** Milliseconds since an arbitrary fixed origin; only differences are meaningful. */
  now(): number;
  /** Runs `callback` after `delayMs`; returns a handle for {@link Clock.clearTimer}. */
  setTimer(callback: () => void, delayMs: number): unknown;
  /** Cancels a timer returned by {@link Clock.setTimer}. Unknown handles are ignored. */
  clearTimer(handle: unknown): void;
}

/** The real clock: `performance.now()` and Node timers (unref'd so they never hold the process open). */
export const systemClock: Clock = {
  now: () => performance.now(),
  setTimer: (callback, delayMs) => {
    const timer = setTimeout(callback, Math.max(0, delayMs));
    timer.unref();
    return timer;
  },
  clearTimer: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

interface ManualTimer {
  id: number;
  at: number;
  callback: () => void;
}

/**
 * A clock that only moves when {@link ManualClock.advance} is called, for deterministic tests of
 * time-based logic (backoff, delayed requeues).
 *
 * @example
 * ```ts
 * const clock = new ManualClock();
 * const queue = new WorkQueue({ clock });
 * queue.add("ns/a", { after: 1000 });
 * clock.advance(1000); // "ns/a" is now ready
 * ```
 */
export class ManualClock implements Clock {
  private current = 0;
  private nextId = 1;
  private timers: ManualTimer[] = [];

  /** Creates a clock reading `start` milliseconds. */
  constructor(start = 0) {
    this.current = start;
  }

  /** The current reading in milliseconds. */
  now(): number {
    return this.current;
  }

  /** Registers a timer that fires once the clock has been advanced past its due time. */
  setTimer(callback: () => void, delayMs: number): unknown {
    const timer = { id: this.nextId++, at: this.current + Math.max(0, delayMs), callback };
    this.timers.push(timer);
    return timer.id;
  }

  /** Cancels a pending timer. */
  clearTimer(handle: unknown): void {
    this.timers = this.timers.filter((timer) => timer.id !== handle);
  }

  /** Number of timers still waiting to fire. */
  pendingTimers(): number {
    return this.timers.length;
  }

  /** Moves time forward by `ms`, firing due timers in time order (timers set while firing also run if due). */
  advance(ms: number): void {
    const target = this.current + ms;
    for (;;) {
      let next: ManualTimer | undefined;
      for (const timer of this.timers) {
        if (timer.at <= target && (next === undefined || timer.at < next.at)) next = timer;
      }
      if (next === undefined) break;
      const due = next;
      this.timers = this.timers.filter((timer) => timer !== due);
      this.current = Math.max(this.current, due.at);
      due.callback();
    }
    this.current = target;
  }
}
