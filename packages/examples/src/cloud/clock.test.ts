import { describe, expect, it } from "vitest";
import { RealClock } from "./clock.js";
import { SeededRandom } from "./random.js";

describe("RealClock", () => {
  it("runs cloud time faster than wall time and fires scaled timers", async () => {
    const clock = new RealClock({ speed: 100, start: 0 });
    const firedAt = await new Promise<number>((resolve) =>
      clock.setTimer(() => resolve(clock.now()), 1000),
    );
    // 1000 cloud ms at speed 100 is ~10 wall ms; timer resolution makes it a little later.
    expect(firedAt).toBeGreaterThanOrEqual(1000);
    clock.dispose();
  });

  it("clearTimer cancels one timer and ignores unknown or fired handles", async () => {
    const clock = new RealClock({ speed: 1000 });
    const seen: string[] = [];
    const cancelled = clock.setTimer(() => seen.push("cancelled"), 1000);
    const kept = clock.setTimer(() => seen.push("kept"), 1000);
    clock.clearTimer(cancelled);
    clock.clearTimer(cancelled);
    clock.clearTimer({ timeout: 1 });
    clock.clearTimer(undefined);
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(seen).toEqual(["kept"]);
    clock.clearTimer(kept);
    clock.dispose();
  });

  it("dispose cancels pending timers", async () => {
    const clock = new RealClock({ speed: 1000 });
    let fired = false;
    clock.setTimer(() => {
      fired = true;
    }, 1000);
    clock.dispose();
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(fired).toBe(false);
  });

  it("rejects a non-positive speed and a non-finite delay", () => {
    expect(() => new RealClock({ speed: 0 })).toThrow(/speed must be a finite number > 0/);
    expect(() => new RealClock().setTimer(() => {}, Number.NaN)).toThrow(
      /delayMs must be a finite number/,
    );
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
