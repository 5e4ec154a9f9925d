/**
 * How core paces its reconciles (feature gate `ReconcilerRateLimiting`): the work queue's backoff after
 * a failure, and at most one reconcile of an object per interval.
 *
 * @module
 */
import type { RateLimiter, ReconcileRequest, ReconcileResult } from "@capi-ts/sdk/runtime";

/**
 * Core's reconciler rate limiter (`ReconcilerRateLimiting`): a failed item waits the rate-limit interval
 * plus 5 ms · 2^failures, at most 1000 s; forgetting is left to success and `requeueAfter`.
 */
export class CoreRateLimiter implements RateLimiter {
  private readonly failures = new Map<string, number>();
  private readonly intervalMs: number;

  constructor(intervalMs: number) {
    this.intervalMs = intervalMs;
  }

  when(item: string): number {
    const failures = this.failures.get(item) ?? 0;
    this.failures.set(item, failures + 1);
    return Math.min(this.intervalMs + 5 * 2 ** failures, 1_000_000);
  }

  forget(item: string): void {
    this.failures.delete(item);
  }

  numRequeues(item: string): number {
    return this.failures.get(item) ?? 0;
  }
}

/**
 * controller-runtime's rate limiting as core wraps it, one per controller: one reconcile of an
 * object per interval; a request that comes earlier is deferred, and a shorter `requeueAfter` is
 * stretched. `defer` is core's `DeferNextReconcileForObject`.
 */
export function reconcileLimiter(rateLimitIntervalMs: number) {
  const lastStarted = new Map<string, number>();
  const deferredUntil = new Map<string, number>();
  return {
    defer: (id: string, ms: number) => {
      deferredUntil.set(id, Math.max(deferredUntil.get(id) ?? 0, Date.now() + ms));
    },
    run: async (
      request: ReconcileRequest,
      run: () => Promise<ReconcileResult | undefined>,
    ): Promise<ReconcileResult | undefined> => {
      const id = `${request.namespace ?? ""}/${request.name}`;
      const now = Date.now();
      const until = deferredUntil.get(id);
      if (until !== undefined) {
        if (now < until) return { requeueAfter: until - now };
        deferredUntil.delete(id);
      }
      if (rateLimitIntervalMs <= 0) return run();
      const last = lastStarted.get(id);
      if (last !== undefined && now - last < rateLimitIntervalMs) {
        return { requeueAfter: rateLimitIntervalMs - (now - last) };
      }
      lastStarted.set(id, now);
      const result = await run();
      if (result?.requeueAfter !== undefined && result.requeueAfter > 0) {
        const remaining = now + rateLimitIntervalMs - Date.now();
        return { requeueAfter: Math.max(result.requeueAfter, remaining, 1) };
      }
      return result;
    },
  };
}
