import { describe, expect, it } from "vitest";
import { BoundedCache } from "./diagnostics.js";

describe("BoundedCache (the diagnostics token and decision caches)", () => {
  it("holds at most max entries, dropping the oldest", () => {
    let now = 0;
    const cache = new BoundedCache<number>(3, () => now);
    for (let i = 0; i < 5; i++) cache.set(`k${i}`, i, 60_000);
    expect(cache.size).toBe(3);
    expect(cache.get("k0")).toBeUndefined();
    expect(cache.get("k4")?.value).toBe(4);
    now += 1;
    // Setting a key again makes it the newest.
    cache.set("k2", 22, 60_000);
    cache.set("k5", 5, 60_000);
    expect(cache.get("k3")).toBeUndefined();
    expect(cache.get("k2")?.value).toBe(22);
  });

  it("sweeps expired entries on a later lookup, not only the one looked up", () => {
    let now = 0;
    const cache = new BoundedCache<string>(100, () => now);
    for (let i = 0; i < 50; i++) cache.set(`short${i}`, "x", 30_000);
    cache.set("long", "y", 300_000);
    expect(cache.size).toBe(51);
    now = 31_000;
    expect(cache.get("long")?.value).toBe("y");
    expect(cache.size).toBe(1);
    now = 301_000;
    expect(cache.get("long")).toBeUndefined();
    expect(cache.size).toBe(0);
  });
});
