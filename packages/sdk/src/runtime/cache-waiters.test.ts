import { describe, expect, it } from "vitest";
import { CacheWaiters } from "./cache-waiters.js";

/** Timers the test fires by hand. */
function manualTimers() {
  const pending = new Set<() => void>();
  return {
    after: (_ms: number, callback: () => void) => {
      pending.add(callback);
      return () => pending.delete(callback);
    },
    fireAll: () => {
      for (const callback of [...pending]) {
        pending.delete(callback);
        callback();
      }
    },
    get pending() {
      return pending.size;
    },
  };
}

describe("CacheWaiters", () => {
  it("resolves at once when the wait is already satisfied, with no timer", async () => {
    const timers = manualTimers();
    const waiters = new CacheWaiters(timers.after);
    await expect(waiters.wait(() => true, 1000)).resolves.toBe(true);
    expect(timers.pending).toBe(0);
  });

  it("resolves true at the first check that finds it satisfied, and cancels its timer", async () => {
    const timers = manualTimers();
    const waiters = new CacheWaiters(timers.after);
    let seen = false;
    const waiting = waiters.wait(() => seen, 1000);
    waiters.check();
    expect(timers.pending).toBe(1);
    seen = true;
    waiters.check();
    await expect(waiting).resolves.toBe(true);
    expect(timers.pending).toBe(0);
  });

  it("resolves false when its timeout passes first, and a later check does not touch it", async () => {
    const timers = manualTimers();
    const waiters = new CacheWaiters(timers.after);
    let seen = false;
    const waiting = waiters.wait(() => seen, 1000);
    timers.fireAll();
    seen = true;
    waiters.check();
    await expect(waiting).resolves.toBe(false);
  });

  it("resolves every waiter false when cancelled, leaving no timer behind", async () => {
    const timers = manualTimers();
    const waiters = new CacheWaiters(timers.after);
    const a = waiters.wait(() => false, 1000);
    const b = waiters.wait(() => false, 2000);
    waiters.cancelAll();
    await expect(Promise.all([a, b])).resolves.toEqual([false, false]);
    expect(timers.pending).toBe(0);
  });
});
