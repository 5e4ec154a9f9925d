/**
 * Waits on an informer's cache: each waiter is a predicate over the cache, resolved `true` at the
 * first check that finds it satisfied (the informer checks after every event, list and bookmark),
 * or `false` once its timeout passes.
 *
 * @module
 */

interface Waiter {
  satisfied(): boolean;
  resolve(ok: boolean): void;
  cancel: () => void;
}

/** The pending waits of one informer. */
export class CacheWaiters {
  readonly #waiters = new Set<Waiter>();
  readonly #after: (ms: number, callback: () => void) => () => void;

  /** @param after - runs a callback after some ms on the informer's clock; returns its cancel */
  constructor(after: (ms: number, callback: () => void) => () => void) {
    this.#after = after;
  }

  /** Resolves `true` once `satisfied()` holds at a check (or now), `false` after `timeoutMs`. */
  wait(satisfied: () => boolean, timeoutMs: number): Promise<boolean> {
    if (satisfied()) return Promise.resolve(true);
    return new Promise((resolve) => {
      const waiter: Waiter = {
        satisfied,
        resolve,
        cancel: this.#after(timeoutMs, () => {
          this.#waiters.delete(waiter);
          resolve(false);
        }),
      };
      this.#waiters.add(waiter);
    });
  }

  /** Resolves every waiter that is satisfied now. */
  check(): void {
    if (this.#waiters.size === 0) return;
    for (const waiter of this.#waiters) {
      if (waiter.satisfied()) {
        waiter.cancel();
        this.#waiters.delete(waiter);
        waiter.resolve(true);
      }
    }
  }

  /** Resolves every waiter `false` (the informer stopped). */
  cancelAll(): void {
    for (const waiter of this.#waiters) {
      waiter.cancel();
      waiter.resolve(false);
    }
    this.#waiters.clear();
  }
}
