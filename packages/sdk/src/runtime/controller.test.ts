import type { KubernetesObject } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import type { InformerCache } from "./cache.js";
import type { KubeClient } from "./client.js";
import { ManualClock } from "./clock.js";
import { Controller, type ControllerHost, type Reconciler } from "./controller.js";
import { FencedError, TerminalError, TooManyRequestsError } from "./errors.js";
import type { EventRecorder } from "./events.js";
import { silentLogger } from "./logging.js";
import { RuntimeMetrics } from "./metrics.js";
import { ExponentialFailureRateLimiter } from "./ratelimiter.js";
import { SecretResource } from "./resource.js";

// What a controller does with a reconcile's outcome, on a ManualClock: the work queue's delays are
// the clock's timers, so "retried after 200 ms" is read off the clock, never measured.

function host(clock: ManualClock, leading: () => boolean = () => true): ControllerHost {
  return {
    client: {} as KubeClient,
    cache: {} as InformerCache,
    logger: silentLogger(),
    metrics: new RuntimeMetrics(),
    controllerDefaults: { maxConcurrentReconciles: 1 },
    clock,
    recorderFor: () => ({}) as EventRecorder,
    isLeader: leading,
    register: () => {},
  };
}

/** Lets workers run until `condition` holds; fails (without timing anything) if it never does. */
async function until(condition: () => boolean, what: string): Promise<void> {
  for (let turn = 0; turn < 500; turn++) {
    if (condition()) return;
    await new Promise((resolve) => setImmediate(resolve));
  }
  throw new Error(`never happened: ${what}`);
}

async function settle(): Promise<void> {
  for (let turn = 0; turn < 20; turn++) await new Promise((resolve) => setImmediate(resolve));
}

/** A controller whose reconciles are recorded as [key, clock time]; `outcome` decides each one. */
function setup(
  outcome: (key: string, call: number) => ReturnType<Reconciler>,
  options: { concurrency?: number; leading?: () => boolean } = {},
) {
  const clock = new ManualClock();
  const calls: Array<[string, number]> = [];
  const controller = new Controller(
    host(clock, options.leading),
    "test",
    SecretResource,
    (request) => {
      const key = `${request.namespace}/${request.name}`;
      calls.push([key, clock.now() - start]);
      return outcome(key, calls.length);
    },
    {
      maxConcurrentReconciles: options.concurrency ?? 1,
      rateLimiter: new ExponentialFailureRateLimiter({ baseDelayMs: 100, maxDelayMs: 400 }),
    },
  );
  const start = clock.now();
  const times = () => calls.map(([, at]) => at);
  /** Moves the clock to the next queue timer, if any. */
  const next = () => {
    const at = clock.nextTimerAt();
    if (at !== undefined) clock.advance(at - clock.now());
  };
  return { clock, controller, calls, times, next };
}

const a = { namespace: "d", name: "a" };

describe("Controller", () => {
  it("retries a failing reconcile with a doubling backoff up to the cap, and forgets it on success", async () => {
    const t = setup(async (_key, call) => {
      if (call <= 5) throw new Error("cloud said no");
    });
    t.controller.start();
    t.controller.enqueue(a);
    for (let call = 1; call <= 6; call++) {
      await until(() => t.calls.length === call, `reconcile ${call}`);
      await settle();
      if (call < 6) t.next();
    }
    expect(t.times()).toEqual([0, 100, 300, 700, 1100, 1500]);
    expect(t.controller.queue.numRequeues("d/a")).toBe(0);
    await settle();
    expect(t.clock.pendingTimers).toBe(0);
    await t.controller.stop(1000);
  });

  it("requeues after the asked delay and resets the error backoff", async () => {
    const t = setup(async (_key, call) => {
      if (call <= 2) throw new Error("transient");
      if (call === 3) return { requeueAfter: 5000 };
      return undefined;
    });
    t.controller.start();
    t.controller.enqueue(a);
    await until(() => t.calls.length === 1, "first reconcile");
    await settle();
    t.next();
    await until(() => t.calls.length === 2, "second reconcile");
    await settle();
    t.next();
    await until(() => t.calls.length === 3, "third reconcile");
    await settle();
    expect(t.controller.queue.numRequeues("d/a")).toBe(0);
    t.clock.advance(4999);
    await settle();
    expect(t.calls).toHaveLength(3);
    t.clock.advance(1);
    await until(() => t.calls.length === 4, "the requeue after 5 s");
    expect(t.times()).toEqual([0, 100, 300, 5300]);
    await t.controller.stop(1000);
  });

  it("treats requeue: true as a rate-limited retry", async () => {
    const t = setup(async (_key, call) => (call <= 2 ? { requeue: true } : undefined));
    t.controller.start();
    t.controller.enqueue(a);
    for (let call = 1; call <= 3; call++) {
      await until(() => t.calls.length === call, `reconcile ${call}`);
      await settle();
      if (call < 3) {
        expect(t.controller.queue.numRequeues("d/a")).toBe(call);
        t.next();
      }
    }
    expect(t.times()).toEqual([0, 100, 300]);
    await t.controller.stop(1000);
  });

  it("contains a reconcile that throws synchronously or throws a non-Error, and keeps working", async () => {
    const clock = new ManualClock();
    const seen: string[] = [];
    const reconciler = ((request: { name: string }) => {
      seen.push(request.name);
      if (request.name === "sync") throw new Error("thrown before any await");
      if (request.name === "string") return Promise.reject("a bare string");
      return Promise.resolve();
    }) as Reconciler;
    const controller = new Controller(host(clock), "test", SecretResource, reconciler, {
      rateLimiter: new ExponentialFailureRateLimiter({ baseDelayMs: 100 }),
    });
    controller.start();
    controller.enqueue({ namespace: "d", name: "sync" });
    controller.enqueue({ namespace: "d", name: "string" });
    controller.enqueue({ namespace: "d", name: "fine" });
    await until(() => seen.length === 3, "all three reconciles");
    expect(seen).toEqual(["sync", "string", "fine"]);
    await settle();
    // Both failures wait for their retry; the worker is free for it.
    expect(controller.queue.numRequeues("d/sync")).toBe(1);
    expect(controller.queue.numRequeues("d/string")).toBe(1);
    clock.advance(100);
    await until(() => seen.length === 5, "both retries");
    expect(seen.slice(3).sort()).toEqual(["string", "sync"]);
    await controller.stop(1000);
  });

  it("does not retry a TerminalError or a FencedError", async () => {
    const t = setup(async (key) => {
      if (key === "d/a") throw new TerminalError("the spec can never work");
      throw new FencedError("leadership lost");
    });
    t.controller.start();
    t.controller.enqueue(a);
    t.controller.enqueue({ namespace: "d", name: "b" });
    await until(() => t.calls.length === 2, "both reconciles");
    await settle();
    expect(t.controller.queue.len()).toBe(0);
    expect(t.clock.pendingTimers).toBe(0);
    expect(t.controller.queue.numRequeues("d/a")).toBe(0);
    await t.controller.stop(1000);
  });

  it("waits the server's Retry-After on a 429 when it is longer than the backoff", async () => {
    const t = setup(async (_key, call) => {
      if (call === 1) {
        throw new TooManyRequestsError(429, {}, { method: "GET", path: "/x" }, 2);
      }
    });
    t.controller.start();
    t.controller.enqueue(a);
    await until(() => t.calls.length === 1, "first reconcile");
    await settle();
    t.clock.advance(1999);
    await settle();
    expect(t.calls).toHaveLength(1);
    t.clock.advance(1);
    await until(() => t.calls.length === 2, "the retry after 2 s");
    await t.controller.stop(1000);
  });

  it("never runs two reconciles of one key at once, even with free workers", async () => {
    const release: Array<() => void> = [];
    let running = 0;
    let most = 0;
    const t = setup(
      () => {
        running++;
        most = Math.max(most, running);
        return new Promise<undefined>((resolve) => {
          release.push(() => {
            running--;
            resolve(undefined);
          });
        });
      },
      { concurrency: 3 },
    );
    t.controller.start();
    t.controller.enqueue(a);
    await until(() => t.calls.length === 1, "the first reconcile of a");
    t.controller.enqueue(a);
    t.controller.enqueue({ namespace: "d", name: "b" });
    await until(() => t.calls.length === 2, "b on another worker");
    await settle();
    expect(t.calls.map(([key]) => key)).toEqual(["d/a", "d/b"]);
    release.shift()?.();
    await until(() => t.calls.length === 3, "a again, once the first is done");
    expect(t.calls.map(([key]) => key)).toEqual(["d/a", "d/b", "d/a"]);
    expect(most).toBe(2);
    for (const done of release.splice(0)) done();
    await t.controller.stop(1000);
  });

  it("fences a side effect once this process no longer leads, and does not retry", async () => {
    const clock = new ManualClock();
    let leading = true;
    const effects: string[] = [];
    const controller = new Controller(
      host(clock, () => leading),
      "fenced",
      SecretResource,
      async (_request, context) => {
        context.fence();
        effects.push("first write");
        leading = false;
        try {
          context.fence();
          effects.push("second write");
        } catch (error) {
          effects.push(error instanceof FencedError ? "fenced" : "other error");
          expect(context.signal.aborted).toBe(true);
          throw error;
        }
      },
      { rateLimiter: new ExponentialFailureRateLimiter({ baseDelayMs: 100 }) },
    );
    controller.start();
    controller.enqueue(a);
    await until(() => effects.length === 2, "the reconcile");
    await settle();
    expect(effects).toEqual(["first write", "fenced"]);
    expect(controller.queue.len()).toBe(0);
    expect(clock.pendingTimers).toBe(0);
    await controller.stop(1000);
  });

  it("maps an update to both the old and the new target, enqueuing a shared key once", async () => {
    const t = setup(async () => undefined);
    const owner = (name: string): KubernetesObject => ({
      metadata: { name: "child", namespace: "d", labels: { pool: name } },
    });
    const handler = t.controller.mapHandler(
      (obj: KubernetesObject) => [
        { namespace: "d", name: obj.metadata?.labels?.pool ?? "" },
        { namespace: "d", name: "shared" },
      ],
      [],
    );
    handler.onUpdate?.(owner("old"), owner("new"), { initial: false });
    expect(t.controller.queue.len()).toBe(3);
    t.controller.start();
    await until(() => t.calls.length === 3, "three reconciles");
    expect(t.calls.map(([key]) => key).sort()).toEqual(["d/new", "d/old", "d/shared"]);
    await t.controller.stop(1000);
  });

  it("maps an owned object to its controlling owner of the primary kind only", async () => {
    const t = setup(async () => undefined);
    const handler = t.controller.ownsHandler([]);
    handler.onAdd?.(
      {
        metadata: {
          name: "child",
          namespace: "d",
          ownerReferences: [
            { apiVersion: "v1", kind: "Secret", name: "boss", uid: "1", controller: true },
            { apiVersion: "v1", kind: "Secret", name: "peer", uid: "2" },
            {
              apiVersion: "x.io/v1",
              kind: "Secret",
              name: "other-group",
              uid: "3",
              controller: true,
            },
            { apiVersion: "v1", kind: "ConfigMap", name: "cm", uid: "4", controller: true },
          ],
        },
      },
      { initial: false },
    );
    t.controller.start();
    await until(() => t.calls.length === 1, "the owner's reconcile");
    await settle();
    expect(t.calls.map(([key]) => key)).toEqual(["d/boss"]);
    await t.controller.stop(1000);
  });
});
