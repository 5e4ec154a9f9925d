import { describe, expect, it } from "vitest";
import { ManualClock, systemClock } from "./clock.js";

describe("ManualClock", () => {
  it("starts at a fixed epoch reading, or at the given one", () => {
    expect(new ManualClock().now()).toBe(Date.UTC(2026, 0, 1));
    expect(new ManualClock(42).now()).toBe(42);
  });

  it("fires timers in due-time order with now() at each due time", () => {
    const clock = new ManualClock(1000);
    const seen: string[] = [];
    clock.setTimer(() => seen.push(`c@${clock.now()}`), 30);
    clock.setTimer(() => seen.push(`a@${clock.now()}`), 10);
    clock.setTimer(() => seen.push(`b@${clock.now()}`), 20);
    expect(clock.advance(20)).toBe(2);
    expect(seen).toEqual(["a@1010", "b@1020"]);
    expect(clock.now()).toBe(1020);
    expect(clock.advance(100)).toBe(1);
    expect(seen).toEqual(["a@1010", "b@1020", "c@1030"]);
    expect(clock.now()).toBe(1120);
  });

  it("fires timers with equal due times in scheduling order, also past the heap's first levels", () => {
    const clock = new ManualClock(0);
    const seen: number[] = [];
    // Interleave two due times so the heap has to reorder entries; ties must keep insertion order.
    for (let n = 0; n < 200; n++) clock.setTimer(() => seen.push(n), n % 2 === 0 ? 50 : 10);
    expect(clock.advance(50)).toBe(200);
    const odd = Array.from({ length: 100 }, (_, k) => 2 * k + 1);
    const even = Array.from({ length: 100 }, (_, k) => 2 * k);
    expect(seen).toEqual([...odd, ...even]);
  });

  it("treats a negative delay as 0 and fires it on the next advance", () => {
    const clock = new ManualClock(0);
    let fired = 0;
    clock.setTimer(() => fired++, -5);
    expect(clock.nextTimerAt()).toBe(0);
    expect(clock.advance(0)).toBe(1);
    expect(fired).toBe(1);
  });

  it("fires timers scheduled by a firing timer within the same advance when due, in order", () => {
    const clock = new ManualClock(0);
    const seen: string[] = [];
    clock.setTimer(() => {
      seen.push(`first@${clock.now()}`);
      clock.setTimer(() => seen.push(`nested-late@${clock.now()}`), 50);
      clock.setTimer(() => seen.push(`nested@${clock.now()}`), 5);
      clock.setTimer(() => seen.push(`nested-now@${clock.now()}`), 0);
    }, 5);
    clock.setTimer(() => seen.push(`second@${clock.now()}`), 8);
    expect(clock.advance(20)).toBe(4);
    expect(seen).toEqual(["first@5", "nested-now@5", "second@8", "nested@10"]);
    expect(clock.pendingTimers).toBe(1);
    expect(clock.nextTimerAt()).toBe(55);
    expect(clock.now()).toBe(20);
  });

  it("clearTimer cancels only that timer and ignores unknown, fired or repeated handles", () => {
    const clock = new ManualClock(0);
    const seen: string[] = [];
    const early = clock.setTimer(() => seen.push("early"), 1);
    const cancelled = clock.setTimer(() => seen.push("cancelled"), 5);
    clock.setTimer(() => seen.push("kept"), 5);
    expect(clock.pendingTimers).toBe(3);
    clock.advance(1);
    clock.clearTimer(cancelled);
    clock.clearTimer(cancelled);
    clock.clearTimer(early);
    clock.clearTimer(undefined);
    clock.clearTimer("not a handle");
    clock.clearTimer(999);
    expect(clock.pendingTimers).toBe(1);
    expect(clock.nextTimerAt()).toBe(5);
    expect(clock.advance(10)).toBe(1);
    expect(seen).toEqual(["early", "kept"]);
    expect(clock.pendingTimers).toBe(0);
    expect(clock.nextTimerAt()).toBeUndefined();
  });

  it("a cancelled timer at the top of the heap does not hide the next one", () => {
    const clock = new ManualClock(0);
    const first = clock.setTimer(() => {}, 1);
    clock.setTimer(() => {}, 7);
    clock.clearTimer(first);
    expect(clock.nextTimerAt()).toBe(7);
    expect(clock.runUntilIdle()).toBe(1);
    expect(clock.now()).toBe(7);
  });

  it("runUntilIdle jumps from timer to timer, including ones they schedule, until none is left", () => {
    const clock = new ManualClock(0);
    const seen: number[] = [];
    clock.setTimer(() => {
      seen.push(clock.now());
      clock.setTimer(() => seen.push(clock.now()), 120_000);
    }, 1000);
    clock.setTimer(() => seen.push(clock.now()), 60_000);
    expect(clock.runUntilIdle()).toBe(3);
    expect(seen).toEqual([1000, 60_000, 121_000]);
    expect(clock.now()).toBe(121_000);
    expect(clock.runUntilIdle()).toBe(0);
  });

  it("runUntilIdle settles exactly at its limit but refuses to spin forever", () => {
    const exact = new ManualClock(0);
    for (let n = 0; n < 3; n++) exact.setTimer(() => {}, n);
    expect(exact.runUntilIdle(3)).toBe(3);

    const clock = new ManualClock(0);
    let ticks = 0;
    const tick = (): void => {
      ticks++;
      clock.setTimer(tick, 1);
    };
    tick();
    expect(() => clock.runUntilIdle(50)).toThrow(
      /runUntilIdle: still busy after 50 timers; something reschedules itself forever/,
    );
    expect(ticks).toBe(51);
    expect(clock.now()).toBe(50);
    expect(() => clock.runUntilIdle(-1)).toThrow(/maxTimers must be an integer ≥ 0, got -1/);
  });

  it("refuses to be moved from inside one of its own timers", () => {
    const clock = new ManualClock(0);
    let caught: unknown;
    clock.setTimer(() => {
      try {
        clock.advance(1);
      } catch (error) {
        caught = error;
      }
    }, 1);
    clock.advance(5);
    expect(String(caught)).toMatch(/called from inside a timer callback/);
    clock.setTimer(() => {}, 1);
    expect(clock.advance(1)).toBe(1);
  });

  it("stays usable after a callback throws, at that timer's due time", () => {
    const clock = new ManualClock(0);
    clock.setTimer(() => {
      throw new Error("boom");
    }, 3);
    clock.setTimer(() => {}, 4);
    expect(() => clock.advance(10)).toThrow("boom");
    expect(clock.now()).toBe(3);
    expect(clock.pendingTimers).toBe(1);
    expect(clock.advance(10)).toBe(1);
  });

  it("rejects bad durations and starts with a clear message", () => {
    const clock = new ManualClock(0);
    expect(() => clock.advance(-1)).toThrow(/advance: ms must be a finite number ≥ 0, got -1/);
    expect(() => clock.advance(Number.NaN)).toThrow(/advance: ms must be a finite number/);
    expect(() => clock.setTimer(() => {}, Number.NaN)).toThrow(
      /setTimer: delayMs must be a finite number of milliseconds, got NaN/,
    );
    expect(() => clock.setTimer(() => {}, Number.POSITIVE_INFINITY)).toThrow(/got Infinity/);
    expect(() => new ManualClock(Number.POSITIVE_INFINITY)).toThrow(/start must be a finite/);
  });
});

describe("systemClock", () => {
  it("reads epoch milliseconds and fires its timers", async () => {
    expect(Math.abs(systemClock.now() - Date.now())).toBeLessThan(1000);
    const fired = await new Promise<boolean>((resolve) => {
      systemClock.setTimer(() => resolve(true), -1);
    });
    expect(fired).toBe(true);
    let cancelledFired = false;
    const handle = systemClock.setTimer(() => {
      cancelledFired = true;
    }, 1);
    systemClock.clearTimer(handle);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(cancelledFired).toBe(false);
  });
});
