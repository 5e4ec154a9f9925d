import { describe, expect, it } from "vitest";
import { ManualClock } from "./clock.js";
import { QueuePriority, WorkQueue } from "./queue.js";
import {
  defaultControllerRateLimiter,
  ExponentialFailureRateLimiter,
  MaxOfRateLimiter,
  TokenBucketRateLimiter,
} from "./ratelimiter.js";

/** Resolves what `get()` returns right now, or "pending" if nothing is ready. */
async function poll(queue: WorkQueue): Promise<string | undefined | "pending"> {
  let result: string | undefined | "pending" = "pending";
  const got = queue.get().then((key) => {
    result = key;
  });
  await Promise.resolve();
  await Promise.resolve();
  // When still pending, the waiter stays registered and receives the next ready key.
  void got;
  return result;
}

describe("rate limiters", () => {
  it("backs off exponentially from 5 ms to 1000 s per item and resets on forget", () => {
    const limiter = new ExponentialFailureRateLimiter();
    const delays = Array.from({ length: 20 }, () => limiter.when("a"));
    expect(delays.slice(0, 4)).toEqual([5, 10, 20, 40]);
    expect(delays[17]).toBe(655_360);
    expect(delays[18]).toBe(1_000_000);
    expect(delays[19]).toBe(1_000_000);
    expect(limiter.when("b")).toBe(5);
    expect(limiter.numRequeues("a")).toBe(20);
    limiter.forget("a");
    expect(limiter.numRequeues("a")).toBe(0);
    expect(limiter.when("a")).toBe(5);
  });

  it("limits the overall rate with a 10 qps / 100 burst bucket", () => {
    const clock = new ManualClock();
    const bucket = new TokenBucketRateLimiter({ clock });
    for (let i = 0; i < 100; i++) expect(bucket.when(`k${i}`)).toBe(0);
    expect(bucket.when("x")).toBeCloseTo(100);
    expect(bucket.when("y")).toBeCloseTo(200);
    clock.advance(1000);
    // 10 tokens refilled, 2 already borrowed.
    for (let i = 0; i < 8; i++) expect(bucket.when(`r${i}`)).toBe(0);
    expect(bucket.when("z")).toBeCloseTo(100);
  });

  it("combines limiters by taking the longest delay", () => {
    const clock = new ManualClock();
    const limiter = new MaxOfRateLimiter(
      new ExponentialFailureRateLimiter({ baseDelayMs: 1 }),
      new TokenBucketRateLimiter({ clock, qps: 1, burst: 1 }),
    );
    expect(limiter.when("a")).toBe(1);
    expect(limiter.when("a")).toBeCloseTo(1000);
    expect(limiter.numRequeues("a")).toBe(2);
  });

  it("rejects nonsense settings with a clear error", () => {
    expect(() => new ExponentialFailureRateLimiter({ baseDelayMs: 10, maxDelayMs: 1 })).toThrow(
      /baseDelayMs <= maxDelayMs/,
    );
    expect(() => new TokenBucketRateLimiter({ qps: 0 })).toThrow(/qps > 0/);
    expect(() => new MaxOfRateLimiter()).toThrow(/at least one/);
  });
});

describe("WorkQueue", () => {
  it("deduplicates keys waiting in the queue", async () => {
    const queue = new WorkQueue({ clock: new ManualClock() });
    queue.add("a");
    queue.add("b");
    queue.add("a");
    expect(queue.len()).toBe(2);
    expect(await queue.get()).toBe("a");
    expect(await queue.get()).toBe("b");
    expect(await poll(queue)).toBe("pending");
  });

  it("never hands out a key that is being processed; a re-add comes back after done", async () => {
    const queue = new WorkQueue({ clock: new ManualClock() });
    queue.add("a");
    const first = await queue.get();
    expect(first).toBe("a");
    queue.add("a");
    queue.add("b");
    // "a" is held by a worker: the second worker gets "b", a third waits.
    expect(await queue.get()).toBe("b");
    let third: string | undefined | null = null;
    void queue.get().then((key) => {
      third = key;
    });
    await Promise.resolve();
    expect(third).toBeNull();
    queue.done("a");
    await Promise.resolve();
    expect(third).toBe("a");
  });

  it("delays items added with `after` and keeps the earliest time on dedup", async () => {
    const clock = new ManualClock();
    const queue = new WorkQueue({ clock });
    queue.add("a", { after: 1000 });
    queue.add("a", { after: 300 });
    queue.add("a", { after: 5000 });
    expect(await poll(queue)).toBe("pending");
    clock.advance(299);
    await Promise.resolve();
    clock.advance(1);
    // The waiter registered by poll() above receives it.
    await Promise.resolve();
    expect(queue.len()).toBe(0);
    expect(queue.inFlight()).toBe(1);
  });

  it("does not let a superseded delay wake a later entry of the same key early", async () => {
    const clock = new ManualClock();
    const queue = new WorkQueue({ clock });
    queue.add("a", { after: 400 }); // its heap node stays behind once superseded
    queue.add("a"); // an event: ready now
    expect(await queue.get()).toBe("a");
    queue.add("a", { after: 1000 }); // the reconcile's requeueAfter, a new entry
    queue.done("a");
    clock.advance(400); // the superseded delay is due: it must not promote the new entry
    expect(await poll(queue)).toBe("pending");
    clock.advance(600);
    await Promise.resolve();
    expect(queue.inFlight()).toBe(1);
  });

  it("backs off rate-limited retries exponentially and resets on forget", async () => {
    const clock = new ManualClock();
    const queue = new WorkQueue({
      clock,
      rateLimiter: new ExponentialFailureRateLimiter({ baseDelayMs: 5, maxDelayMs: 1_000_000 }),
    });
    const readyTimes: number[] = [];
    for (let attempt = 0; attempt < 4; attempt++) {
      queue.add("a", { rateLimited: true });
      const got = queue.get();
      const start = clock.now();
      // Step 1 ms at a time to find when the item becomes ready.
      let key: string | undefined;
      void got.then((k) => {
        key = k;
      });
      while (key === undefined) {
        clock.advance(1);
        await Promise.resolve();
      }
      readyTimes.push(clock.now() - start);
      queue.done("a");
    }
    expect(readyTimes).toEqual([5, 10, 20, 40]);
    expect(queue.numRequeues("a")).toBe(4);
    queue.forget("a");
    expect(queue.numRequeues("a")).toBe(0);
  });

  it("serves higher priority first and FIFO within a priority", async () => {
    const queue = new WorkQueue({ clock: new ManualClock() });
    queue.add("initial-1", { priority: QueuePriority.Low });
    queue.add("initial-2", { priority: QueuePriority.Low });
    queue.add("change-1");
    queue.add("change-2");
    // A real change to an item waiting at low priority raises it.
    queue.add("initial-2");
    const order = [];
    for (let i = 0; i < 4; i++) order.push(await queue.get());
    expect(order).toEqual(["change-1", "change-2", "initial-2", "initial-1"]);
  });

  it("brings a key added while it was processed back after done, behind keys ready before", async () => {
    const queue = new WorkQueue({ clock: new ManualClock() });
    queue.add("a");
    expect(await queue.get()).toBe("a");
    queue.add("a");
    queue.add("b");
    queue.add("c");
    // The second worker passes over "a" (held) to "b"; "a" waits for done.
    expect(await queue.get()).toBe("b");
    queue.done("a");
    queue.add("d");
    const order = [];
    for (let i = 0; i < 3; i++) order.push(await queue.get());
    expect(order).toEqual(["c", "a", "d"]);
    expect(queue.len()).toBe(0);
  });

  it("serves a key raised while it was processed at its new priority, once", async () => {
    const queue = new WorkQueue({ clock: new ManualClock() });
    queue.add("a", { priority: QueuePriority.Low });
    expect(await queue.get()).toBe("a");
    queue.add("a", { priority: QueuePriority.Low });
    queue.add("low", { priority: QueuePriority.Low });
    expect(await queue.get()).toBe("low");
    queue.add("a");
    queue.add("c", { priority: QueuePriority.Low });
    queue.done("a");
    expect(await queue.get()).toBe("a");
    expect(await queue.get()).toBe("c");
    expect(await poll(queue)).toBe("pending");
    expect(queue.len()).toBe(0);
  });

  it("hands a raised key out once, from its new lane", async () => {
    const queue = new WorkQueue({ clock: new ManualClock() });
    queue.add("a", { priority: QueuePriority.Low });
    queue.add("b", { priority: QueuePriority.Low });
    queue.add("b");
    expect(await queue.get()).toBe("b");
    expect(await queue.get()).toBe("a");
    expect(await poll(queue)).toBe("pending");
  });

  it("does not lower the priority of a waiting item", async () => {
    const queue = new WorkQueue({ clock: new ManualClock() });
    queue.add("a");
    queue.add("b", { priority: QueuePriority.Low });
    queue.add("a", { priority: QueuePriority.Low });
    expect(await queue.get()).toBe("a");
  });

  it("hands every waiting worker a distinct key (bounded concurrency is the number of getters)", async () => {
    const queue = new WorkQueue({ clock: new ManualClock() });
    for (let i = 0; i < 10; i++) queue.add(`k${i}`);
    const got = await Promise.all([queue.get(), queue.get(), queue.get()]);
    expect(new Set(got).size).toBe(3);
    expect(queue.inFlight()).toBe(3);
    expect(queue.len()).toBe(7);
  });

  it("shutdown releases waiters, refuses adds, and drained() waits for in-flight work", async () => {
    const queue = new WorkQueue({ clock: new ManualClock() });
    queue.add("a");
    const key = await queue.get();
    const waiting = queue.get();
    queue.shutdown();
    expect(await waiting).toBeUndefined();
    queue.add("b");
    expect(queue.len()).toBe(0);
    expect(await queue.get()).toBeUndefined();
    let drained = false;
    const drain = queue.drained().then(() => {
      drained = true;
    });
    await Promise.resolve();
    expect(drained).toBe(false);
    queue.done(key as string);
    await drain;
    expect(drained).toBe(true);
  });

  it("reports metrics: depth, adds, retries, queue and work durations", async () => {
    const clock = new ManualClock();
    const seen = {
      depth: -1,
      added: 0,
      retried: 0,
      queued: [] as number[],
      worked: [] as number[],
    };
    const queue = new WorkQueue({
      clock,
      rateLimiter: defaultControllerRateLimiter({ clock }),
      metrics: {
        depth: (value) => {
          seen.depth = value;
        },
        added: () => {
          seen.added++;
        },
        retried: () => {
          seen.retried++;
        },
        queued: (seconds) => seen.queued.push(seconds),
        worked: (seconds) => seen.worked.push(seconds),
        unfinished: () => {},
      },
    });
    queue.add("a");
    queue.add("a");
    expect(seen.depth).toBe(1);
    clock.advance(2000);
    const key = await queue.get();
    expect(seen.queued).toEqual([2]);
    clock.advance(500);
    queue.done(key as string);
    expect(seen.worked).toEqual([0.5]);
    queue.add("a", { rateLimited: true });
    expect(seen.added).toBe(3);
    expect(seen.retried).toBe(1);
  });

  it("handles thousands of keys with mixed delays in ready-time order", async () => {
    const clock = new ManualClock();
    const queue = new WorkQueue({ clock });
    for (let i = 0; i < 5000; i++) queue.add(`k${i}`, { after: (i * 7919) % 1000 });
    clock.advance(1000);
    let previous = -1;
    for (let i = 0; i < 5000; i++) {
      const key = (await queue.get()) as string;
      const index = Number(key.slice(1));
      const readyAt = (index * 7919) % 1000;
      expect(readyAt).toBeGreaterThanOrEqual(previous);
      previous = readyAt;
      queue.done(key);
    }
    expect(queue.len()).toBe(0);
  });
});
