import { describe, expect, it } from "vitest";
import { EVENT_LOOP_SLICE_MS, EventLoopMonitor, eventLoopTurnIfDue } from "./liveness.js";
import { RuntimeMetrics } from "./metrics.js";

function spin(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // a synchronous hot loop
  }
}

async function waitFor<T>(check: () => T | undefined, timeoutMs = 10_000): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const value = check();
    if (value !== undefined) return value;
    if (performance.now() > deadline) throw new Error("timed out");
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe("EventLoopMonitor", () => {
  it("names the reconcile that blocked the loop, fails the check and counts the block", async () => {
    const metrics = new RuntimeMetrics();
    const monitor = new EventLoopMonitor({ blockThresholdMs: 300, metrics });
    monitor.start();
    try {
      expect(monitor.healthCheck()).toBeUndefined();
      await new Promise((resolve) => setTimeout(resolve, 150));
      const quick = monitor.track("other", "ns/quick");
      quick();
      const end = monitor.track("pools", "ns/hot");
      spin(1200);
      end();
      const block = await waitFor(() => monitor.lastBlocked());
      expect(block.durationMs).toBeGreaterThanOrEqual(1000);
      expect(block.reconciles[0]).toMatchObject({ controller: "pools", key: "ns/hot" });
      expect(block.reconciles.some((r) => r.key === "ns/quick")).toBe(false);
      expect(monitor.healthCheck()).toMatch(/blocked for \d+\.\d s .*controller pools key ns\/hot/);
      expect(await metrics.value("capi_ts_event_loop_blocks_total")).toBe(1);
      const text = await metrics.text();
      const max = /capi_ts_event_loop_delay_seconds\{quantile="1"\} (\S+)/.exec(text)?.[1];
      expect(Number(max)).toBeGreaterThanOrEqual(1);
    } finally {
      monitor.stop();
    }
  });

  it("refuses a negative threshold, and 0 turns the check off", () => {
    expect(() => new EventLoopMonitor({ blockThresholdMs: -1 })).toThrow(/≥ 0/);
    expect(new EventLoopMonitor({ blockThresholdMs: 0 }).healthCheck()).toBeUndefined();
  });
});

describe("eventLoopTurnIfDue", () => {
  it("lets a timer run within a slice of back-to-back work", async () => {
    let fired = false;
    setTimeout(() => {
      fired = true;
    }, 0);
    const started = performance.now();
    // Microtask-only work that would never let the timer fire without the turn.
    while (!fired) {
      await Promise.resolve();
      const turn = eventLoopTurnIfDue();
      if (turn) await turn;
      if (performance.now() - started > 5000) break;
    }
    expect(fired).toBe(true);
    expect(performance.now() - started).toBeLessThan(EVENT_LOOP_SLICE_MS * 200);
  });
});
