import { CLUSTER_NAME_INDEX, indexByClusterName, Labels } from "@capi-ts/sdk/contract";
import { PatchHelper } from "@capi-ts/sdk/patch";
import {
  ConfigMapResource,
  Informer,
  InformerCache,
  KubeClient,
  OWNER_UID_INDEX,
  RuntimeMetrics,
} from "@capi-ts/sdk/runtime";
import type { V1ConfigMap } from "@kubernetes/client-node";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type ApiServer, startApiServer } from "../../src/index.js";
import { eventually, sleep } from "./support.js";

let api: ApiServer;
let client: KubeClient;
const informers: Informer<V1ConfigMap>[] = [];

beforeEach(async () => {
  api = await startApiServer({ namespaces: ["default", "other"] });
  client = new KubeClient(api.kubeConfig, { fieldManager: "informer-test" });
});
afterEach(async () => {
  await Promise.all(informers.splice(0).map((informer) => informer.stop()));
  await api.stop();
});

function configMap(
  name: string,
  options: {
    namespace?: string;
    labels?: Record<string, string>;
    data?: Record<string, string>;
  } = {},
): V1ConfigMap {
  return {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name, namespace: options.namespace ?? "default", labels: options.labels ?? {} },
    data: options.data ?? {},
  };
}

function newInformer(
  options: Partial<ConstructorParameters<typeof Informer<V1ConfigMap>>[0]> = {},
) {
  const informer = new Informer<V1ConfigMap>({
    client,
    resource: ConfigMapResource,
    backoff: { initialMs: 20, maxMs: 200 },
    ...options,
  });
  informers.push(informer);
  return informer;
}

interface Recorded {
  type: string;
  name: string | undefined;
  initial?: boolean;
  old?: string | undefined;
  finalStateUnknown?: boolean;
}

function record(informer: Informer<V1ConfigMap>): Recorded[] {
  const events: Recorded[] = [];
  informer.addEventHandler({
    onAdd: (obj, meta) =>
      events.push({ type: "add", name: obj.metadata?.name, initial: meta.initial }),
    onUpdate: (oldObj, newObj) =>
      events.push({ type: "update", name: newObj.metadata?.name, old: oldObj.data?.v }),
    onDelete: (obj, meta) =>
      events.push({
        type: "delete",
        name: obj.metadata?.name,
        finalStateUnknown: meta.finalStateUnknown,
      }),
  });
  return events;
}

describe("Informer over HTTP", () => {
  it("with initialSync list: lists then watches with bookmarks, and gives update handlers the old and the new object", async () => {
    await client.create(ConfigMapResource, configMap("a", { data: { v: "1" } }));
    const informer = newInformer({ initialSync: "list" });
    const events = record(informer);
    informer.start();
    await informer.waitForSync();
    expect(events).toEqual([{ type: "add", name: "a", initial: true }]);
    await client.mergePatch(
      ConfigMapResource,
      { namespace: "default", name: "a" },
      { data: { v: "2" } },
    );
    await client.create(ConfigMapResource, configMap("b"));
    await client.delete(ConfigMapResource, { namespace: "default", name: "a" });
    await eventually(() => events.length === 4, "three watch events");
    expect(events.slice(1)).toEqual([
      { type: "update", name: "a", old: "1" },
      { type: "add", name: "b", initial: false },
      { type: "delete", name: "a", finalStateUnknown: false },
    ]);
    expect(informer.list().map((obj) => obj.metadata?.name)).toEqual(["b"]);
    const watch = api.requests({ verb: "watch" })[0];
    expect(watch?.query.allowWatchBookmarks).toBe("true");
    expect(watch?.query.resourceVersion).toBeTruthy();
    expect(informer.stats.lists).toBe(1);
  });

  it("indexes by owner UID (built in) and by added functions (the contract's cluster-name index)", async () => {
    const owner = await client.create(ConfigMapResource, configMap("owner"));
    const ownerRef = {
      apiVersion: "v1",
      kind: "ConfigMap",
      name: "owner",
      uid: owner.metadata?.uid ?? "",
      controller: true,
    };
    await client.create(ConfigMapResource, {
      ...configMap("child-1", { labels: { [Labels.ClusterName]: "c1", tier: "x" } }),
      metadata: {
        name: "child-1",
        namespace: "default",
        labels: { [Labels.ClusterName]: "c1", tier: "x" },
        ownerReferences: [ownerRef],
      },
    });
    await client.create(
      ConfigMapResource,
      configMap("child-2", { labels: { [Labels.ClusterName]: "c1" } }),
    );
    const informer = newInformer();
    expect(() => informer.byIndex(CLUSTER_NAME_INDEX, "default/c1")).toThrow(
      /no index named "clusterName"/,
    );
    informer.addIndexer(CLUSTER_NAME_INDEX, indexByClusterName);
    informer.addIndexer("tier", (obj) =>
      obj.metadata?.labels?.tier ? [obj.metadata.labels.tier] : [],
    );
    informer.start();
    await informer.waitForSync();
    const names = (objects: V1ConfigMap[]) => objects.map((obj) => obj.metadata?.name).sort();
    expect(names(informer.byIndex(OWNER_UID_INDEX, owner.metadata?.uid ?? ""))).toEqual([
      "child-1",
    ]);
    expect(names(informer.byIndex(CLUSTER_NAME_INDEX, "default/c1"))).toEqual([
      "child-1",
      "child-2",
    ]);
    expect(names(informer.byIndex("tier", "x"))).toEqual(["child-1"]);
    // Relabelling moves the object between index entries.
    await client.mergePatch(
      ConfigMapResource,
      { namespace: "default", name: "child-2" },
      {
        metadata: { labels: { [Labels.ClusterName]: "c2" } },
      },
    );
    await eventually(
      () => informer.byIndex(CLUSTER_NAME_INDEX, "default/c2").length === 1,
      "reindex",
    );
    expect(names(informer.byIndex(CLUSTER_NAME_INDEX, "default/c1"))).toEqual(["child-1"]);
    expect(() => informer.byIndex("nope", "x")).toThrow(/no index named "nope"/);
  });

  it("scopes by namespace and label selector", async () => {
    await client.create(ConfigMapResource, configMap("in", { labels: { app: "yes" } }));
    await client.create(ConfigMapResource, configMap("unlabelled"));
    await client.create(
      ConfigMapResource,
      configMap("elsewhere", { namespace: "other", labels: { app: "yes" } }),
    );
    const informer = newInformer({
      namespace: "default",
      labelSelector: "app=yes",
      initialSync: "list",
    });
    informer.start();
    await informer.waitForSync();
    expect(informer.list().map((obj) => obj.metadata?.name)).toEqual(["in"]);
    const listed = api.requests({ verb: "list", resource: "configmaps" })[0];
    expect(listed?.namespace).toBe("default");
    expect(listed?.query.labelSelector).toBe("app=yes");
    // An object relabelled out of the selector leaves the cache.
    await client.mergePatch(
      ConfigMapResource,
      { namespace: "default", name: "in" },
      {
        metadata: { labels: { app: "no" } },
      },
    );
    await eventually(() => informer.list().length === 0, "relabelled object leaves the cache");
  });

  it("applies a transform before caching; the default drops managedFields", async () => {
    await client.apply(ConfigMapResource, configMap("ssa", { data: { big: "x".repeat(100) } }), {
      force: true,
    });
    const raw = await client.get(ConfigMapResource, { namespace: "default", name: "ssa" });
    expect(raw.metadata?.managedFields?.length ?? 0).toBeGreaterThan(0);
    const plain = newInformer();
    const slim = newInformer({ transform: (obj) => ({ ...obj, data: {} }) });
    plain.start();
    slim.start();
    await Promise.all([plain.waitForSync(), slim.waitForSync()]);
    expect(plain.get("default/ssa")?.metadata?.managedFields).toBeUndefined();
    expect(plain.get("default/ssa")?.data?.big).toHaveLength(100);
    expect(slim.get("default/ssa")?.data).toEqual({});
  });

  it("restarts a cut watch from its resourceVersion without relisting", async () => {
    const informer = newInformer();
    const events = record(informer);
    informer.start();
    await informer.waitForSync();
    for (let round = 0; round < 3; round++) {
      await eventually(() => api.openWatches > 0, "watch open");
      expect(api.faults.cutWatches()).toBeGreaterThan(0);
      await client.create(ConfigMapResource, configMap(`after-cut-${round}`));
    }
    await eventually(() => events.length === 3, "events after cuts");
    expect(informer.stats.lists).toBe(0);
    expect(informer.stats.watchLists).toBe(1);
    expect(informer.stats.restarts).toBeGreaterThanOrEqual(3);
    const [initial, ...resumed] = api.requests({ verb: "watch" });
    expect(initial?.query.sendInitialEvents).toBe("true");
    expect(resumed.length).toBeGreaterThanOrEqual(3);
    expect(resumed.every((watch) => watch.query.resourceVersion)).toBe(true);
    expect(resumed.every((watch) => watch.query.sendInitialEvents === undefined)).toBe(true);
  });

  it("relists after 410 Gone and emits synthetic deletes for objects that vanished meanwhile", async () => {
    await client.create(ConfigMapResource, configMap("stays"));
    await client.create(ConfigMapResource, configMap("vanishes"));
    const metrics = new RuntimeMetrics();
    const informer = newInformer({ metrics: metrics.informerMetrics() });
    const events = record(informer);
    informer.start();
    await informer.waitForSync();
    // Keep the informer disconnected while the world changes.
    const outage = api.faults.add({ verb: "watch", resource: "configmaps", status: 500 });
    api.faults.cutWatches();
    await client.delete(ConfigMapResource, { namespace: "default", name: "vanishes" });
    await client.create(ConfigMapResource, configMap("appears"));
    await client.mergePatch(
      ConfigMapResource,
      { namespace: "default", name: "stays" },
      { data: { v: "2" } },
    );
    api.faults.expireWatchWindow();
    await eventually(() => outage.hits >= 2, "watch retried during the outage");
    outage.remove();
    await eventually(() => events.length === 5, "relist events");
    expect(events.slice(2)).toEqual(
      expect.arrayContaining([
        { type: "delete", name: "vanishes", finalStateUnknown: true },
        { type: "add", name: "appears", initial: false },
        { type: "update", name: "stays", old: undefined },
      ]),
    );
    expect(informer.stats.watchLists).toBe(2);
    expect(informer.stats.lists).toBe(0);
    expect(
      await metrics.value("capi_ts_informer_restarts_total", { reason: "gone" }),
    ).toBeGreaterThanOrEqual(1);
    expect(
      await metrics.value("capi_ts_informer_restarts_total", { reason: "error" }),
    ).toBeGreaterThanOrEqual(2);
  });

  it("fills the cache with one WatchList request: no LIST, initial adds, then live events on the same stream", async () => {
    await client.create(ConfigMapResource, configMap("before-1"));
    await client.create(ConfigMapResource, configMap("before-2", { namespace: "other" }));
    const informer = newInformer({ namespace: "default" });
    const events = record(informer);
    informer.start();
    await informer.waitForSync();
    expect(events).toEqual([{ type: "add", name: "before-1", initial: true }]);
    await client.create(ConfigMapResource, configMap("after"));
    await eventually(() => events.length === 2, "live event");
    expect(events[1]).toEqual({ type: "add", name: "after", initial: false });
    expect(api.requests({ verb: "list" })).toHaveLength(0);
    const watches = api.requests({ verb: "watch" });
    expect(watches).toHaveLength(1);
    expect(watches[0]?.query).toMatchObject({
      sendInitialEvents: "true",
      resourceVersionMatch: "NotOlderThan",
      allowWatchBookmarks: "true",
    });
    expect(watches[0]?.namespace).toBe("default");
    expect(informer.stats).toMatchObject({ lists: 0, watchLists: 1, watches: 1 });
  });

  it("falls back to LIST for good when the server rejects WatchList", async () => {
    await client.create(ConfigMapResource, configMap("present"));
    api.faults.add({ verb: "watch", resource: "configmaps", status: 400, count: 1 });
    const informer = newInformer();
    const events = record(informer);
    informer.start();
    await informer.waitForSync();
    expect(events).toEqual([{ type: "add", name: "present", initial: true }]);
    expect(informer.stats.lists).toBe(1);
    await client.create(ConfigMapResource, configMap("later"));
    await eventually(() => events.length === 2, "live event after the fallback");
    api.faults.cutWatches();
    await eventually(() => informer.stats.watches >= 3, "watch resumed after a cut");
    const watches = api.requests({ verb: "watch", resource: "configmaps" });
    expect(watches[0]?.query.sendInitialEvents).toBe("true");
    expect(watches.slice(1).every((watch) => watch.query.sendInitialEvents === undefined)).toBe(
      true,
    );
  });

  it("survives a failing list at start with capped backoff, never stopping", async () => {
    await client.create(ConfigMapResource, configMap("x"));
    api.faults.add({ verb: "list", resource: "configmaps", status: 503, count: 4 });
    const informer = newInformer({ initialSync: "list" });
    informer.start();
    await informer.waitForSync(5000);
    expect(informer.list().length).toBe(1);
    const lists = api.requests({ verb: "list", resource: "configmaps" });
    expect(lists.map((entry) => entry.status)).toEqual([503, 503, 503, 503, 200]);
    // Backoff: gaps between attempts grow.
    const gaps = lists
      .slice(1)
      .map((entry, i) => entry.startedAt.getTime() - (lists[i]?.startedAt.getTime() ?? 0));
    expect(gaps[3]).toBeGreaterThan(gaps[0] ?? 0);
  });

  it("restarts a watch that went quiet (watchdog)", async () => {
    const informer = newInformer({ staleWatchTimeoutMs: 300 });
    const events = record(informer);
    // The first watch hangs before answering, like a dead connection behind a load balancer.
    api.faults.add({ verb: "watch", resource: "configmaps", latencyMs: 60_000, count: 1 });
    informer.start();
    await informer.waitForSync();
    await client.create(ConfigMapResource, configMap("seen-after-watchdog"));
    await eventually(() => events.length === 1, "event after the watchdog restart", 5000);
    expect(informer.stats.watches).toBeGreaterThanOrEqual(2);
  });

  it("recovers from a server restart", async () => {
    const informer = newInformer();
    const events = record(informer);
    informer.start();
    await informer.waitForSync();
    await api.restart();
    await client.create(ConfigMapResource, configMap("after-restart"));
    await eventually(
      () => events.some((event) => event.name === "after-restart"),
      "event after restart",
    );
  });

  it("re-announces cached objects on resync as unchanged, low-priority updates, without requests", async () => {
    await client.create(ConfigMapResource, configMap("resynced"));
    const informer = newInformer({ resyncPeriodMs: 100 });
    const resyncs: boolean[] = [];
    informer.addEventHandler({
      onUpdate: (oldObj, newObj, meta) => resyncs.push(oldObj === newObj && meta.initial),
    });
    informer.start();
    await informer.waitForSync();
    await eventually(() => api.openWatches === 1, "watch open");
    api.clearRequests();
    await eventually(() => resyncs.length >= 3, "three resyncs");
    expect(resyncs.every(Boolean)).toBe(true);
    expect(api.requests()).toEqual([]);
  });

  it("stops cleanly: no open watch, no further requests", async () => {
    const informer = newInformer();
    informer.start();
    await informer.waitForSync();
    await eventually(() => api.openWatches === 1, "watch open");
    await informer.stop();
    await eventually(() => api.openWatches === 0, "watch closed");
    const count = api.requests().length;
    await sleep(200);
    expect(api.requests().length).toBe(count);
  });
});

describe("InformerCache options", () => {
  it("adds up indexers across callers, once each, and refuses a taken name for another function", async () => {
    const cache = new InformerCache({ client });
    const byTier = (obj: V1ConfigMap) => [obj.metadata?.labels?.tier ?? ""];
    const informer = cache.informerFor(ConfigMapResource, { indexers: { tier: byTier } });
    expect(
      cache.informerFor(ConfigMapResource, {
        indexers: { tier: byTier, [CLUSTER_NAME_INDEX]: indexByClusterName },
      }),
    ).toBe(informer);
    expect(() =>
      cache.informerFor(ConfigMapResource, { indexers: { tier: () => ["x"] } }, "a late caller"),
    ).toThrow(/an index named "tier" already exists with another function/);
    await client.create(
      ConfigMapResource,
      configMap("indexed", { labels: { tier: "x", [Labels.ClusterName]: "c1" } }),
    );
    cache.start();
    await cache.waitForSync();
    const names = (objects: V1ConfigMap[]) => objects.map((obj) => obj.metadata?.name);
    expect(names(await cache.byIndex(ConfigMapResource, "tier", "x"))).toEqual(["indexed"]);
    expect(names(await cache.byIndex(ConfigMapResource, CLUSTER_NAME_INDEX, "default/c1"))).toEqual(
      ["indexed"],
    );
    await cache.stop();
  });

  it("refuses a second namespace, selector or transform for a kind, naming both callers", () => {
    const cache = new InformerCache({ client, namespace: "default" });
    const keep = (obj: V1ConfigMap) => obj;
    cache.informerFor(ConfigMapResource, { fieldSelector: "metadata.name=a" }, "caller one");
    const again = () => cache.informerFor(ConfigMapResource, { fieldSelector: "metadata.name=a" });
    expect(again).not.toThrow();
    expect(() =>
      cache.informerFor(ConfigMapResource, { namespace: "other", transform: keep }, "caller two"),
    ).toThrow(
      'the cache\'s informer for v1/configmaps was created by caller one with { namespace: "default", fieldSelector: "metadata.name=a" }; caller two asks for { namespace: "other", transform: keep }.',
    );
  });
});

describe("InformerCache read-your-own-writes", () => {
  it("never returns an object older than this process's last write of it", async () => {
    const cache = new InformerCache({ client });
    const informer = cache.informerFor(ConfigMapResource);
    cache.start();
    await cache.waitForSync();
    await client.create(ConfigMapResource, configMap("ryow", { data: { v: "0" } }));
    let staleWithoutWaiting = 0;
    for (let i = 1; i <= 30; i++) {
      const written = await client.mergePatch(
        ConfigMapResource,
        { namespace: "default", name: "ryow" },
        {
          data: { v: String(i) },
        },
      );
      if (
        informer.get("default/ryow")?.metadata?.resourceVersion !==
        written.metadata?.resourceVersion
      )
        staleWithoutWaiting++;
      const read = await cache.get(ConfigMapResource, { namespace: "default", name: "ryow" });
      expect(read?.metadata?.resourceVersion).toBe(written.metadata?.resourceVersion);
      expect(read?.data?.v).toBe(String(i));
    }
    // The raw informer lags the write (the watch event is still in flight), which is why the wait exists.
    expect(staleWithoutWaiting).toBeGreaterThan(0);
    await client.delete(ConfigMapResource, { namespace: "default", name: "ryow" });
    expect(
      await cache.get(ConfigMapResource, { namespace: "default", name: "ryow" }),
    ).toBeUndefined();
    expect(await cache.list(ConfigMapResource, { namespace: "default" })).toEqual([]);
    await cache.stop();
  });

  it("also waits for writes made through the patch helper (addressed by plural only)", async () => {
    const cache = new InformerCache({ client });
    cache.informerFor(ConfigMapResource);
    cache.start();
    await cache.waitForSync();
    let current = await client.create(ConfigMapResource, configMap("via-patch-helper"));
    const byPlural = { group: "", version: "v1", plural: "configmaps" };
    for (let i = 0; i < 10; i++) {
      const patch = PatchHelper.snapshot(current, { resource: byPlural });
      current.data = { v: String(i) };
      const result = await patch.apply(client, current);
      expect(result.requests).toBe(1);
      const written = result.object as V1ConfigMap;
      const read = await cache.get(ConfigMapResource, {
        namespace: "default",
        name: "via-patch-helper",
      });
      expect(read?.metadata?.resourceVersion).toBe(written.metadata?.resourceVersion);
      expect(read?.data?.v).toBe(String(i));
      current = written;
    }
    await cache.stop();
  });
});
