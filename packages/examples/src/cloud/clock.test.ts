import { describe, expect, it } from "vitest";
import { ManualClock, RealClock } from "./clock.js";
import { SeededRandom } from "./random.js";

describe("ManualClock", () => {
  it("fires timers in time order, ties in scheduling order, with now() at their due time", () => {
    const clock = new ManualClock(1000);
    const seen: string[] = [];
    clock.setTimer(30, () => seen.push(`c@${clock.now()}`));
    clock.setTimer(10, () => seen.push(`a@${clock.now()}`));
    clock.setTimer(10, () => seen.push(`b@${clock.now()}`));
    expect(clock.advance(20)).toBe(2);
    expect(seen).toEqual(["a@1010", "b@1010"]);
    expect(clock.now()).toBe(1020);
    clock.advance(100);
    expect(seen).toEqual(["a@1010", "b@1010", "c@1030"]);
    expect(clock.now()).toBe(1120);
  });

  it("fires timers scheduled by a firing timer within the same advance window", () => {
    const clock = new ManualClock(0);
    const seen: number[] = [];
    clock.setTimer(5, () => {
      seen.push(clock.now());
      clock.setTimer(5, () => seen.push(clock.now()));
      clock.setTimer(50, () => seen.push(clock.now()));
    });
    clock.advance(20);
    expect(seen).toEqual([5, 10]);
    expect(clock.pendingTimers).toBe(1);
    expect(clock.nextTimerAt()).toBe(55);
  });

  it("does not fire cancelled timers", () => {
    const clock = new ManualClock(0);
    let fired = false;
    const handle = clock.setTimer(5, () => {
      fired = true;
    });
    handle.cancel();
    handle.cancel();
    clock.advance(10);
    expect(fired).toBe(false);
    expect(clock.pendingTimers).toBe(0);
  });

  it("runUntilIdle jumps from timer to timer and stops when nothing is left", () => {
    const clock = new ManualClock(0);
    const seen: number[] = [];
    clock.setTimer(1000, () => seen.push(clock.now()));
    clock.setTimer(60_000, () => seen.push(clock.now()));
    expect(clock.runUntilIdle()).toBe(2);
    expect(seen).toEqual([1000, 60_000]);
    expect(clock.now()).toBe(60_000);
  });

  it("runUntilIdle refuses to spin forever on a self-rescheduling timer", () => {
    const clock = new ManualClock(0);
    const tick = (): void => {
      clock.setTimer(1, tick);
    };
    tick();
    expect(() => clock.runUntilIdle(50)).toThrow(/still busy after 50 timers/);
  });

  it("rejects negative or non-finite durations with a clear message", () => {
    const clock = new ManualClock(0);
    expect(() => clock.advance(-1)).toThrow(/advance: ms must be a finite number ≥ 0, got -1/);
    expect(() => clock.setTimer(Number.NaN, () => {})).toThrow(/delayMs must be a finite number/);
    expect(() => new ManualClock(Number.POSITIVE_INFINITY)).toThrow(/start must be a finite/);
  });
});

describe("RealClock", () => {
  it("runs cloud time faster than wall time and fires scaled timers", async () => {
    const clock = new RealClock({ speed: 100, start: 0 });
    const firedAt = await new Promise<number>((resolve) =>
      clock.setTimer(1000, () => resolve(clock.now())),
    );
    // 1000 cloud ms at speed 100 is ~10 wall ms; timer resolution makes it a little later.
    expect(firedAt).toBeGreaterThanOrEqual(1000);
    clock.dispose();
  });

  it("dispose cancels pending timers", async () => {
    const clock = new RealClock({ speed: 1000 });
    let fired = false;
    clock.setTimer(1000, () => {
      fired = true;
    });
    clock.dispose();
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(fired).toBe(false);
  });

  it("rejects a non-positive speed", () => {
    expect(() => new RealClock({ speed: 0 })).toThrow(/speed must be a finite number > 0/);
  });
});

describe("SeededRandom", () => {
  it("is reproducible from its seed and differs between seeds", () => {
    const a = new SeededRandom(42);
    const b = new SeededRandom(42);
    const c = new SeededRandom(43);
    const seqA = [a.next(), a.next(), a.hex(8)];
    expect([b.next(), b.next(), b.hex(8)]).toEqual(seqA);
    expect([c.next(), c.next(), c.hex(8)]).not.toEqual(seqA);
  });

  it("shuffles into a permutation without touching the input", () => {
    const random = new SeededRandom(7);
    const input = [1, 2, 3, 4, 5, 6, 7, 8];
    const shuffled = random.shuffle(input);
    expect(input).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect([...shuffled].sort((x, y) => x - y)).toEqual(input);
  });

  it("rejects a non-integer seed", () => {
    expect(() => new SeededRandom(1.5)).toThrow(/seed must be an integer/);
  });
});
