/**
 * A sped-up wall clock for demos. The fake cloud never reads `Date.now()` or calls `setTimeout` itself:
 * every delay (boot, termination, lingering, refresh steps, …) is a timer on the SDK's `Clock`, so a
 * test runs minutes of cloud time in microseconds with the SDK's `ManualClock`, and a demo runs it in
 * scaled real time with a {@link RealClock}.
 *
 * @module
 */
import type { Clock } from "@capi-ts/sdk/runtime";

/** A wall-clock timer; re-armed (new timeout) when it fires early, so the handle wraps the current one. */
interface RealTimer {
  timeout: ReturnType<typeof setTimeout>;
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
  readonly #timers = new Set<RealTimer>();

  /** @param options - `speed` (default 1) and `start` (cloud time at creation, default now) */
  constructor(options: { speed?: number; start?: number } = {}) {
    const speed = options.speed ?? 1;
    if (!Number.isFinite(speed) || speed <= 0) {
      throw new RangeError(`RealClock: speed must be a finite number > 0, got ${speed}`);
    }
    this.#speed = speed;
    this.#start = options.start ?? this.#realStart;
  }

  /** Cloud time in epoch milliseconds. */
  now(): number {
    return this.#start + (Date.now() - this.#realStart) * this.#speed;
  }

  /**
   * The wall time at which the cloud's clock read `cloudMs`: what a real cloud reports as a launch
   * time, which users compare with wall-clock times (a pool's `strategy.rolloutAfter`).
   */
  wallTimeOf(cloudMs: number): number {
    return this.#realStart + (cloudMs - this.#start) / this.#speed;
  }

  /** Runs `callback` once, `delayMs` of cloud time from now (a negative delay counts as 0). */
  setTimer(callback: () => void, delayMs: number): unknown {
    if (!Number.isFinite(delayMs)) {
      throw new RangeError(
        `RealClock.setTimer: delayMs must be a finite number of milliseconds, got ${delayMs}`,
      );
    }
    // Wall-clock timers may fire a little early; re-arm until cloud time has really reached `due`, so
    // a callback never sees now() before its due time (as with a ManualClock).
    const delay = Math.max(0, delayMs);
    const due = this.now() + delay;
    const timer: RealTimer = { timeout: this.#arm(() => fire(), delay) };
    const fire = (): void => {
      const remaining = due - this.now();
      if (remaining > 0) {
        timer.timeout = this.#arm(fire, remaining);
        return;
      }
      this.#timers.delete(timer);
      callback();
    };
    this.#timers.add(timer);
    return timer;
  }

  /** Cancels a timer from {@link RealClock.setTimer}; unknown or fired handles are ignored. */
  clearTimer(handle: unknown): void {
    const timer = handle as RealTimer;
    if (!this.#timers.delete(timer)) return;
    clearTimeout(timer.timeout);
  }

  /** Cancels every timer still scheduled. */
  dispose(): void {
    for (const timer of this.#timers) clearTimeout(timer.timeout);
    this.#timers.clear();
  }

  #arm(fire: () => void, cloudMs: number): ReturnType<typeof setTimeout> {
    const timeout = setTimeout(fire, cloudMs / this.#speed);
    timeout.unref();
    return timeout;
  }
}
