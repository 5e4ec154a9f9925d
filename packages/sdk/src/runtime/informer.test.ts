import type { KubernetesObject } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import type { KubeClient } from "./client.js";
import type { ObjectList, WatchEvent, WatchOptions } from "./client-types.js";
import { ManualClock } from "./clock.js";
import { GoneError } from "./errors.js";
import { Informer } from "./informer.js";
import type { InformerOptions } from "./informer-types.js";
import { SecretResource } from "./resource.js";

// The informer's logic (list, watch, relist on 410, backoff, resync) runs against a scripted client:
// the client's own decoding is tested beside it, and what matters here is what the informer does
// with each event and failure, on a clock the test moves.

type Obj = KubernetesObject;

function secret(name: string, resourceVersion: string): Obj {
  return { apiVersion: "v1", kind: "Secret", metadata: { name, namespace: "d", resourceVersion } };
}

/** One watch request: the test feeds it events, a failure or its end. */
class FakeWatch {
  private readonly items: Array<{ event: WatchEvent<Obj> } | { error: Error } | { end: true }> = [];
  private wake: (() => void) | undefined;

  constructor(readonly options: WatchOptions) {}

  send(type: WatchEvent<Obj>["type"], object: Obj): void {
    this.push({ event: { type, object } });
  }

  fail(error: Error): void {
    this.push({ error });
  }

  end(): void {
    this.push({ end: true });
  }

  private push(item: FakeWatch["items"][number]): void {
    this.items.push(item);
    this.wake?.();
  }

  async *stream(): AsyncGenerator<WatchEvent<Obj>, void, undefined> {
    const signal = this.options.signal;
    for (;;) {
      while (this.items.length === 0) {
        if (signal?.aborted) throw signal.reason;
        await new Promise<void>((resolve) => {
          this.wake = resolve;
          signal?.addEventListener("abort", () => resolve(), { once: true });
        });
      }
      const item = this.items.shift();
      if (item === undefined || "end" in item) return;
      if ("error" in item) throw item.error;
      yield item.event;
    }
  }
}

function scriptedClient() {
  const lists: ObjectList<Obj>[] = [];
  const watches: FakeWatch[] = [];
  let listCalls = 0;
  const client = {
    listAll: async () => {
      listCalls++;
      const next = lists.shift();
      if (next === undefined) throw new Error("the test scripted no more lists");
      return next;
    },
    watch: (_resource: unknown, options: WatchOptions) => {
      const watch = new FakeWatch(options);
      watches.push(watch);
      return watch.stream();
    },
  };
  return {
    client: client as unknown as KubeClient,
    lists,
    watches,
    listCalls: () => listCalls,
    lastWatch: (): FakeWatch => {
      const watch = watches.at(-1);
      if (watch === undefined) throw new Error("no watch was opened");
      return watch;
    },
  };
}

/** Lets the informer's loop run until `condition` holds; fails (without timing anything) if it never does. */
async function until(condition: () => boolean, what: string): Promise<void> {
  for (let turn = 0; turn < 500; turn++) {
    if (condition()) return;
    await new Promise((resolve) => setImmediate(resolve));
  }
  throw new Error(`never happened: ${what}`);
}

/** A timer other than an open watch's watchdog (which is 1e9 ms away) is due: the loop sleeps. */
function backoffPending(clock: ManualClock): boolean {
  return (clock.nextTimerAt() ?? Number.POSITIVE_INFINITY) < clock.now() + 1e6;
}

/** A few turns of the event loop, to show that something does not happen. */
async function settle(): Promise<void> {
  for (let turn = 0; turn < 20; turn++) await new Promise((resolve) => setImmediate(resolve));
}

function recorder() {
  const events: string[] = [];
  return {
    events,
    handler: {
      onAdd: (obj: Obj, meta: { initial: boolean }) =>
        events.push(`add ${obj.metadata?.name}${meta.initial ? " initial" : ""}`),
      onUpdate: (oldObj: Obj, newObj: Obj, meta: { initial: boolean }) =>
        events.push(
          `update ${newObj.metadata?.name} ${oldObj.metadata?.resourceVersion}->${newObj.metadata?.resourceVersion}${meta.initial ? " initial" : ""}`,
        ),
      onDelete: (obj: Obj, meta: { finalStateUnknown: boolean }) =>
        events.push(`delete ${obj.metadata?.name}${meta.finalStateUnknown ? " unknown" : ""}`),
    },
  };
}

function informer(
  client: KubeClient,
  clock: ManualClock,
  options: Partial<InformerOptions<Obj>> = {},
): Informer<Obj> {
  return new Informer<Obj>({
    client,
    resource: SecretResource as unknown as InformerOptions<Obj>["resource"],
    initialSync: "list",
    clock,
    watchTimeoutSeconds: 300,
    // The watchdog never fires in these tests unless one moves the clock that far.
    staleWatchTimeoutMs: 1e9,
    backoff: { initialMs: 1000, maxMs: 3000, jitter: 0 },
    ...options,
  });
}

const gone = () => new GoneError(410, { reason: "Expired" }, { method: "GET", path: "/w" });

describe("Informer", () => {
  it("lists, then watches from the list's version, and hands each event to the handlers", async () => {
    const clock = new ManualClock();
    const api = scriptedClient();
    api.lists.push({ items: [secret("a", "1")], metadata: { resourceVersion: "10" } });
    const inf = informer(api.client, clock);
    const seen = recorder();
    inf.addEventHandler(seen.handler);
    inf.start();
    await inf.waitForSync();
    await until(() => api.watches.length === 1, "the watch opens");
    expect(api.lastWatch().options.resourceVersion).toBe("10");
    expect(seen.events).toEqual(["add a initial"]);

    const watch = api.lastWatch();
    watch.send("ADDED", secret("b", "11"));
    watch.send("MODIFIED", secret("a", "12"));
    watch.send("MODIFIED", secret("a", "12")); // same version: nothing changed
    watch.send("BOOKMARK", { metadata: { resourceVersion: "13" } });
    watch.send("DELETED", secret("b", "14"));
    await until(() => inf.lastResourceVersion() === "14", "every event is applied");
    expect(seen.events).toEqual(["add a initial", "add b", "update a 1->12", "delete b"]);
    expect(inf.list().map((obj) => obj.metadata?.name)).toEqual(["a"]);
    await inf.stop();
  });

  it("relists at once after a 410 and reports what the watch missed", async () => {
    const clock = new ManualClock();
    const api = scriptedClient();
    api.lists.push({
      items: [secret("keep", "1"), secret("change", "2"), secret("vanish", "3")],
      metadata: { resourceVersion: "10" },
    });
    api.lists.push({
      items: [secret("keep", "1"), secret("change", "20"), secret("new", "21")],
      metadata: { resourceVersion: "30" },
    });
    const inf = informer(api.client, clock);
    const seen = recorder();
    inf.addEventHandler(seen.handler);
    inf.start();
    await until(() => api.watches.length === 1, "the first watch opens");
    seen.events.length = 0;

    api.lastWatch().fail(gone());
    // No clock movement: the first 410 relists without a backoff.
    await until(() => api.watches.length === 2, "the watch reopens after the relist");
    expect(api.listCalls()).toBe(2);
    expect(seen.events.sort()).toEqual(["add new", "delete vanish unknown", "update change 2->20"]);
    expect(api.lastWatch().options.resourceVersion).toBe("30");
    expect(inf.stats.relists).toBe(1);
    await inf.stop();
  });

  it("backs off a second 410 in a row instead of relisting in a loop", async () => {
    const clock = new ManualClock();
    const api = scriptedClient();
    for (let i = 0; i < 3; i++) api.lists.push({ items: [], metadata: { resourceVersion: "1" } });
    const inf = informer(api.client, clock);
    inf.start();
    await until(() => api.watches.length === 1, "the first watch opens");
    api.lastWatch().fail(gone());
    await until(() => api.watches.length === 2, "the relist after the first 410");
    api.lastWatch().fail(gone());
    await until(() => backoffPending(clock), "the backoff is scheduled");
    expect(clock.nextTimerAt()).toBe(clock.now() + 1000);
    clock.advance(999);
    await settle();
    expect(api.listCalls()).toBe(2);
    clock.advance(1);
    await until(() => api.listCalls() === 3, "the relist after the backoff");
    await inf.stop();
  });

  it("retries a failing watch with a doubling backoff up to its cap, without relisting", async () => {
    const clock = new ManualClock();
    const api = scriptedClient();
    api.lists.push({ items: [secret("a", "1")], metadata: { resourceVersion: "5" } });
    const inf = informer(api.client, clock);
    inf.start();
    const delays: number[] = [];
    for (let attempt = 1; attempt <= 4; attempt++) {
      await until(() => api.watches.length === attempt, `watch ${attempt} opens`);
      api.lastWatch().fail(new Error("connection reset"));
      await until(() => backoffPending(clock), `backoff ${attempt} is scheduled`);
      const next = clock.nextTimerAt() ?? Number.NaN;
      delays.push(next - clock.now());
      clock.advance(next - clock.now());
    }
    await until(() => api.watches.length === 5, "the fifth watch opens");
    expect(delays).toEqual([1000, 2000, 3000, 3000]);
    expect(api.listCalls()).toBe(1);
    // Each retry resumes from the version the cache is at.
    expect(api.watches.map((watch) => watch.options.resourceVersion)).toEqual(Array(5).fill("5"));
    expect(inf.hasSynced()).toBe(true);
    await inf.stop();
  });

  it("re-announces every cached object at each resync period as low-priority updates", async () => {
    const clock = new ManualClock();
    const api = scriptedClient();
    api.lists.push({
      items: [secret("a", "1"), secret("b", "2")],
      metadata: { resourceVersion: "5" },
    });
    const inf = informer(api.client, clock, { resyncPeriodMs: 60_000 });
    const seen = recorder();
    inf.addEventHandler(seen.handler);
    inf.start();
    await inf.waitForSync();
    seen.events.length = 0;
    clock.advance(59_999);
    expect(seen.events).toEqual([]);
    clock.advance(1);
    expect(seen.events).toEqual(["update a 1->1 initial", "update b 2->2 initial"]);
    clock.advance(60_000);
    expect(seen.events).toHaveLength(4);
    await inf.stop();
    clock.advance(60_000);
    expect(seen.events).toHaveLength(4);
  });

  it("fills the cache from a WatchList and falls back to LIST when the server ignores it", async () => {
    const clock = new ManualClock();
    const api = scriptedClient();
    const inf = informer(api.client, clock, { initialSync: "watchList" });
    const seen = recorder();
    inf.addEventHandler(seen.handler);
    inf.start();
    await until(() => api.watches.length === 1, "the WatchList opens");
    const first = api.lastWatch();
    expect(first.options.sendInitialEvents).toBe(true);
    expect(first.options.resourceVersionMatch).toBe("NotOlderThan");
    expect(first.options.resourceVersion).toBeUndefined();
    first.send("ADDED", secret("a", "1"));
    first.send("ADDED", secret("b", "2"));
    first.send("DELETED", secret("b", "3"));
    await settle();
    // Nothing is announced before the end of the initial events.
    expect(seen.events).toEqual([]);
    expect(inf.hasSynced()).toBe(false);
    first.send("BOOKMARK", {
      metadata: { resourceVersion: "4", annotations: { "k8s.io/initial-events-end": "true" } },
    });
    await inf.waitForSync();
    expect(seen.events).toEqual(["add a initial"]);
    expect(api.listCalls()).toBe(0);
    await inf.stop();

    // A server that does not know WatchList sends a plain bookmark: LIST from then on.
    const old = scriptedClient();
    old.lists.push({ items: [secret("c", "7")], metadata: { resourceVersion: "7" } });
    const fallback = informer(old.client, clock, { initialSync: "watchList" });
    fallback.start();
    await until(() => old.watches.length === 1, "the WatchList opens");
    old.lastWatch().send("BOOKMARK", { metadata: { resourceVersion: "6" } });
    await fallback.waitForSync();
    await until(() => old.watches.length === 2, "a plain watch follows the LIST");
    expect(old.listCalls()).toBe(1);
    expect(old.lastWatch().options.sendInitialEvents).toBeUndefined();
    expect(old.lastWatch().options.resourceVersion).toBe("7");
    await fallback.stop();
  });

  it("keeps delivering when a handler throws", async () => {
    const clock = new ManualClock();
    const api = scriptedClient();
    api.lists.push({ items: [], metadata: { resourceVersion: "1" } });
    const inf = informer(api.client, clock);
    const seen = recorder();
    inf.addEventHandler({
      onAdd: () => {
        throw new Error("handler bug");
      },
    });
    inf.addEventHandler(seen.handler);
    inf.start();
    await until(() => api.watches.length === 1, "the watch opens");
    api.lastWatch().send("ADDED", secret("a", "2"));
    api.lastWatch().send("ADDED", secret("b", "3"));
    await until(() => seen.events.length === 2, "both adds reach the second handler");
    expect(seen.events).toEqual(["add a", "add b"]);
    expect(inf.size()).toBe(2);
    await inf.stop();
  });

  it("answers read-your-own-writes waits from bookmarks, and times out on its clock", async () => {
    const clock = new ManualClock();
    const api = scriptedClient();
    api.lists.push({ items: [secret("a", "1")], metadata: { resourceVersion: "5" } });
    const inf = informer(api.client, clock);
    inf.start();
    await until(() => api.watches.length === 1, "the watch opens");
    const seen = inf.waitForVersion("d/a", "8", 1000);
    const never = inf.waitForVersion("d/a", "100", 1000);
    api.lastWatch().send("BOOKMARK", { metadata: { resourceVersion: "9" } });
    await expect(seen).resolves.toBe(true);
    clock.advance(1000);
    await expect(never).resolves.toBe(false);
    await inf.stop();
  });
});
