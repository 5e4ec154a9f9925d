import { type Clock, systemClock } from "./clock.js";

/**
 * Decides how long a failed item waits before it is retried. Same contract as client-go's
 * `workqueue.RateLimiter`: `when` records a failure and returns the delay, `forget` resets the item.
 */
export interface RateLimiter {
  /** Records one more failure of `item` and returns how many milliseconds it should wait. */
  when(item: string): number;
  /** Clears the failure history of `item` (call after a successful reconcile). */
  forget(item: string): void;
  /** How many times `item` has failed since it was last forgotten. */
  numRequeues(item: string): number;
}

/** Options of {@link ExponentialFailureRateLimiter}. */
export interface ExponentialFailureOptions {
  /** Delay after the first failure, in ms. Default 5 (controller-runtime's default). */
  baseDelayMs?: number;
  /** Upper bound of the delay, in ms. Default 1,000,000 (1000 s, controller-runtime's default). */
  maxDelayMs?: number;
}

/**
 * Per-item exponential backoff: `base * 2^failures`, capped at `max`.
 *
 * @example
 * ```ts
 * const limiter = new ExponentialFailureRateLimiter({ baseDelayMs: 5, maxDelayMs: 1_000_000 });
 * limiter.when("ns/a"); // 5
 * limiter.when("ns/a"); // 10
 * limiter.forget("ns/a");
 * ```
 */
export class ExponentialFailureRateLimiter implements RateLimiter {
  private readonly failures = new Map<string, number>();
  private readonly baseDelayMs: number;
  private readonly maxDelayMs: number;

  /** Creates the limiter; throws on a non-positive or inverted range. */
  constructor(options: ExponentialFailureOptions = {}) {
    this.baseDelayMs = options.baseDelayMs ?? 5;
    this.maxDelayMs = options.maxDelayMs ?? 1_000_000;
    if (!(this.baseDelayMs > 0) || !(this.maxDelayMs >= this.baseDelayMs)) {
      throw new RangeError(
        `ExponentialFailureRateLimiter: need 0 < baseDelayMs <= maxDelayMs, got ${this.baseDelayMs} and ${this.maxDelayMs}`,
      );
    }
  }

  when(item: string): number {
    const failures = this.failures.get(item) ?? 0;
    this.failures.set(item, failures + 1);
    // 2^failures overflows to Infinity long after the cap applies, so Math.min is enough.
    return Math.min(this.baseDelayMs * 2 ** failures, this.maxDelayMs);
  }

  forget(item: string): void {
    this.failures.delete(item);
  }

  numRequeues(item: string): number {
    return this.failures.get(item) ?? 0;
  }
}

/** Options of {@link TokenBucketRateLimiter}. */
export interface TokenBucketOptions {
  /** Sustained rate in tokens per second. Default 10 (controller-runtime's default). */
  qps?: number;
  /** Bucket size: how many retries may go out at once. Default 100 (controller-runtime's default). */
  burst?: number;
  /** Time source; defaults to the system clock. */
  clock?: Clock;
}

/**
 * An overall token bucket shared by every item: it bounds the total retry rate whatever the number of
 * failing keys. Each call reserves a token, possibly in the future, and returns the wait until then.
 *
 * @example
 * ```ts
 * const bucket = new TokenBucketRateLimiter({ qps: 10, burst: 100 });
 * bucket.when("ns/a"); // 0 while tokens remain, then 100 ms, 200 ms, …
 * ```
 */
export class TokenBucketRateLimiter implements RateLimiter {
  private readonly qps: number;
  private readonly burst: number;
  private readonly clock: Clock;
  private tokens: number;
  private last: number;

  /** Creates a full bucket. */
  constructor(options: TokenBucketOptions = {}) {
    this.qps = options.qps ?? 10;
    this.burst = options.burst ?? 100;
    this.clock = options.clock ?? systemClock;
    if (!(this.qps > 0) || !(this.burst >= 1)) {
      throw new RangeError(
        `TokenBucketRateLimiter: need qps > 0 and burst >= 1, got qps ${this.qps} and burst ${this.burst}`,
      );
    }
    this.tokens = this.burst;
    this.last = this.clock.now();
  }

  when(_item: string): number {
    const now = this.clock.now();
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.last) / 1000) * this.qps);
    this.last = now;
    this.tokens -= 1;
    return this.tokens >= 0 ? 0 : (-this.tokens / this.qps) * 1000;
  }

  forget(_item: string): void {}

  numRequeues(_item: string): number {
    return 0;
  }
}

/**
 * Combines limiters: the delay is the longest of theirs. controller-runtime's default controller rate
 * limiter is the max of a per-item exponential and an overall bucket.
 *
 * @example
 * ```ts
 * const limiter = new MaxOfRateLimiter(new ExponentialFailureRateLimiter(), new TokenBucketRateLimiter());
 * ```
 */
export class MaxOfRateLimiter implements RateLimiter {
  private readonly limiters: readonly RateLimiter[];

  /** Combines the given limiters (at least one). */
  constructor(...limiters: RateLimiter[]) {
    if (limiters.length === 0) throw new RangeError("MaxOfRateLimiter needs at least one limiter");
    this.limiters = limiters;
  }

  when(item: string): number {
    let delay = 0;
    for (const limiter of this.limiters) delay = Math.max(delay, limiter.when(item));
    return delay;
  }

  forget(item: string): void {
    for (const limiter of this.limiters) limiter.forget(item);
  }

  numRequeues(item: string): number {
    let count = 0;
    for (const limiter of this.limiters) count = Math.max(count, limiter.numRequeues(item));
    return count;
  }
}

/** Options of {@link defaultControllerRateLimiter}. */
export interface ControllerRateLimiterOptions extends ExponentialFailureOptions {
  /** Overall retry rate; default 10 per second. */
  qps?: number;
  /** Overall burst; default 100. */
  burst?: number;
  /** Time source; defaults to the system clock. */
  clock?: Clock;
}

/**
 * controller-runtime's default: per-item exponential 5 ms → 1000 s, combined with an overall
 * 10 qps / 100 burst token bucket. Every number is configurable.
 *
 * @example
 * ```ts
 * const limiter = defaultControllerRateLimiter({ baseDelayMs: 1, maxDelayMs: 50 }); // fast, for tests
 * ```
 */
export function defaultControllerRateLimiter(
  options: ControllerRateLimiterOptions = {},
): RateLimiter {
  const bucket: TokenBucketOptions = {};
  if (options.qps !== undefined) bucket.qps = options.qps;
  if (options.burst !== undefined) bucket.burst = options.burst;
  if (options.clock !== undefined) bucket.clock = options.clock;
  return new MaxOfRateLimiter(
    new ExponentialFailureRateLimiter(options),
    new TokenBucketRateLimiter(bucket),
  );
}
