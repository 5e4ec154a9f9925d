import {
  CoreV1Api,
  type KubernetesObject,
  makeInformer,
  PatchStrategy,
  setHeaderOptions,
  type V1ConfigMap,
  Watch,
} from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Backend, onReal, startBackend } from "../support/backend.js";
import { eventually } from "../support/fixtures.js";

let backend: Backend;
let core: CoreV1Api;
let nsCounter = 0;

async function freshNamespace(): Promise<string> {
  nsCounter += 1;
  const name = `watch-${nsCounter}`;
  await core.createNamespace({ body: { metadata: { name } } });
  return name;
}

interface Seen {
  type: string;
  name?: string;
  rv?: string;
  obj: KubernetesObject & { code?: number; reason?: string };
}

/** Opens a watch and records every event; `ended` resolves when the stream ends. */
async function record(path: string, query: Record<string, string | number | boolean | undefined>) {
  const events: Seen[] = [];
  let endedResolve: (err: unknown) => void = () => {};
  const ended = new Promise<unknown>((r) => {
    endedResolve = r;
  });
  const controller = await new Watch(backend.kubeConfig).watch(
    path,
    query,
    (type, obj: KubernetesObject & { code?: number }) =>
      events.push({ type, name: obj.metadata?.name, rv: obj.metadata?.resourceVersion, obj }),
    (err) => endedResolve(err ?? null),
  );
  return { events, ended, stop: () => controller.abort() };
}

beforeAll(async () => {
  backend = await startBackend({ bookmarkIntervalMs: 100 });
  core = backend.kubeConfig.makeApiClient(CoreV1Api);
});
afterAll(() => backend.stop());

const mergePatch = setHeaderOptions("Content-Type", PatchStrategy.MergePatch);

describe("watch", () => {
  it("streams ADDED, MODIFIED and DELETED from a resourceVersion", async () => {
    const ns = await freshNamespace();
    const list = await core.listNamespacedConfigMap({ namespace: ns });
    const w = await record(`/api/v1/namespaces/${ns}/configmaps`, {
      resourceVersion: list.metadata?.resourceVersion,
    });
    await core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: "a" } } });
    await core.patchNamespacedConfigMap(
      { namespace: ns, name: "a", body: { data: { x: "1" } } },
      mergePatch,
    );
    await core.deleteNamespacedConfigMap({ namespace: ns, name: "a" });
    await eventually(() => w.events.length >= 3);
    expect(w.events.map((e) => `${e.type} ${e.name}`)).toEqual([
      "ADDED a",
      "MODIFIED a",
      "DELETED a",
    ]);
    const rvs = w.events.map((e) => Number(e.rv));
    expect(rvs).toEqual([...rvs].sort((a, b) => a - b));
    w.stop();
  });

  it("replays changes after an older resourceVersion from the window", async () => {
    const ns = await freshNamespace();
    const start = (await core.listNamespacedConfigMap({ namespace: ns })).metadata?.resourceVersion;
    await core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: "r1" } } });
    await core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: "r2" } } });
    const w = await record(`/api/v1/namespaces/${ns}/configmaps`, { resourceVersion: start });
    await eventually(() => w.events.length >= 2);
    expect(w.events.map((e) => e.name)).toEqual(["r1", "r2"]);
    w.stop();
  });

  it("sends the current state as ADDED when no resourceVersion is given", async () => {
    const ns = await freshNamespace();
    await core.createNamespacedConfigMap({
      namespace: ns,
      body: { metadata: { name: "existing" } },
    });
    const w = await record(`/api/v1/namespaces/${ns}/configmaps`, {});
    await eventually(() => w.events.length >= 1);
    expect(w.events[0]).toMatchObject({ type: "ADDED", name: "existing" });
    w.stop();
  });

  it("answers a too-old resourceVersion with an ERROR event carrying a 410 Status", async () => {
    const ns = await freshNamespace();
    const rv = (await core.listNamespacedConfigMap({ namespace: ns })).metadata?.resourceVersion;
    backend.capabilities.inMemory?.faults.expireWatchWindow();
    const w = await record(`/api/v1/namespaces/${ns}/configmaps`, { resourceVersion: rv });
    await w.ended;
    expect(w.events).toHaveLength(1);
    expect(w.events[0]?.type).toBe("ERROR");
    expect(w.events[0]?.obj).toMatchObject({ kind: "Status", code: 410, reason: "Expired" });
  });

  it("sends periodic BOOKMARK events when allowed", async () => {
    const ns = await freshNamespace();
    const rv = (await core.listNamespacedConfigMap({ namespace: ns })).metadata?.resourceVersion;
    const w = await record(`/api/v1/namespaces/${ns}/configmaps`, {
      resourceVersion: rv,
      allowWatchBookmarks: true,
    });
    await eventually(() => w.events.some((e) => e.type === "BOOKMARK"));
    const bookmark = w.events.find((e) => e.type === "BOOKMARK");
    expect(bookmark?.obj).toMatchObject({ kind: "ConfigMap", apiVersion: "v1" });
    expect(Number(bookmark?.rv)).toBeGreaterThanOrEqual(Number(rv));
    w.stop();
    const noBookmarks = await record(`/api/v1/namespaces/${ns}/configmaps`, {
      resourceVersion: rv,
    });
    await new Promise((r) => setTimeout(r, 300));
    expect(noBookmarks.events.filter((e) => e.type === "BOOKMARK")).toHaveLength(0);
    noBookmarks.stop();
  });

  it("ends the stream after timeoutSeconds", async () => {
    const ns = await freshNamespace();
    const started = Date.now();
    const w = await record(`/api/v1/namespaces/${ns}/configmaps`, { timeoutSeconds: 1 });
    expect(await w.ended).toBeNull();
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
  });

  it("filters by selectors and turns selector transitions into ADDED/DELETED", async () => {
    const ns = await freshNamespace();
    const rv = (await core.listNamespacedConfigMap({ namespace: ns })).metadata?.resourceVersion;
    const w = await record(`/api/v1/namespaces/${ns}/configmaps`, {
      resourceVersion: rv,
      labelSelector: "app=web",
    });
    await core.createNamespacedConfigMap({
      namespace: ns,
      body: { metadata: { name: "other", labels: { app: "db" } } },
    });
    await core.createNamespacedConfigMap({
      namespace: ns,
      body: { metadata: { name: "mover", labels: { app: "db" } } },
    });
    await core.patchNamespacedConfigMap(
      { namespace: ns, name: "mover", body: { metadata: { labels: { app: "web" } } } },
      mergePatch,
    );
    await core.patchNamespacedConfigMap(
      { namespace: ns, name: "mover", body: { data: { a: "1" } } },
      mergePatch,
    );
    await core.patchNamespacedConfigMap(
      { namespace: ns, name: "mover", body: { metadata: { labels: { app: "db" } } } },
      mergePatch,
    );
    await eventually(() => w.events.length >= 3);
    expect(w.events.map((e) => `${e.type} ${e.name}`)).toEqual([
      "ADDED mover",
      "MODIFIED mover",
      "DELETED mover",
    ]);
    w.stop();
    const byField = await record("/api/v1/configmaps", {
      resourceVersion: rv,
      fieldSelector: `metadata.name=other`,
    });
    await eventually(() => byField.events.length >= 1);
    expect(byField.events.map((e) => e.name)).toEqual(["other"]);
    byField.stop();
  });

  it("supports sendInitialEvents with an initial-events-end bookmark", async () => {
    const ns = await freshNamespace();
    await core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: "i1" } } });
    await core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: "i2" } } });
    const w = await record(`/api/v1/namespaces/${ns}/configmaps`, {
      sendInitialEvents: true,
      resourceVersionMatch: "NotOlderThan",
      allowWatchBookmarks: true,
    });
    await eventually(() => w.events.some((e) => e.type === "BOOKMARK"));
    expect(w.events.slice(0, 3).map((e) => `${e.type} ${e.name ?? ""}`)).toEqual([
      "ADDED i1",
      "ADDED i2",
      "BOOKMARK ",
    ]);
    const bookmark = w.events[2]?.obj as KubernetesObject;
    expect(bookmark.metadata?.annotations).toEqual({ "k8s.io/initial-events-end": "true" });
    await core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: "i3" } } });
    await eventually(() => w.events.some((e) => e.name === "i3"));
    w.stop();
  });
});

describe("informer (client-node makeInformer)", () => {
  function cacheNames(
    informer: { list(ns?: string): readonly V1ConfigMap[] },
    ns: string,
  ): string[] {
    return informer
      .list(ns)
      .map((o) => `${o.metadata?.name}=${o.data?.v ?? ""}`)
      .sort();
  }

  async function serverNames(ns: string): Promise<string[]> {
    const list = await core.listNamespacedConfigMap({ namespace: ns });
    return list.items.map((o) => `${o.metadata?.name}=${o.data?.v ?? ""}`).sort();
  }

  it("survives a forced 410, a cut stream and a restart, ending with the server's state", async () => {
    const api = backend.capabilities.inMemory;
    if (!api) return;
    const ns = await freshNamespace();
    for (let i = 0; i < 3; i++) {
      await core.createNamespacedConfigMap({
        namespace: ns,
        body: { metadata: { name: `c${i}` }, data: { v: "0" } },
      });
    }
    const informer = makeInformer<V1ConfigMap>(
      backend.kubeConfig,
      `/api/v1/namespaces/${ns}/configmaps`,
      () => core.listNamespacedConfigMap({ namespace: ns }),
    );
    let errors = 0;
    // The client-node idiom: an informer stops on any non-timeout error; restart it.
    informer.on("error", () => {
      errors++;
      setTimeout(() => void informer.start().catch(() => {}), 50);
    });
    await informer.start();
    expect(cacheNames(informer, ns)).toEqual(await serverNames(ns));

    // 1. forced 410: the open watch gets an ERROR 410 and ends; the informer relists.
    api.faults.expireWatchWindow();
    await core.deleteNamespacedConfigMap({ namespace: ns, name: "c0" });
    await core.createNamespacedConfigMap({
      namespace: ns,
      body: { metadata: { name: "c3" }, data: { v: "1" } },
    });
    await eventually(
      async () =>
        JSON.stringify(cacheNames(informer, ns)) === JSON.stringify(await serverNames(ns)),
    );

    // 2. cut stream: the socket is destroyed mid-watch; changes made meanwhile arrive after reconnect.
    await eventually(() => api.openWatches > 0);
    api.faults.cutWatches();
    await core.patchNamespacedConfigMap(
      { namespace: ns, name: "c1", body: { data: { v: "2" } } },
      mergePatch,
    );
    await core.deleteNamespacedConfigMap({ namespace: ns, name: "c2" });
    await eventually(
      async () =>
        JSON.stringify(cacheNames(informer, ns)) === JSON.stringify(await serverNames(ns)),
    );

    // 3. restart: every connection dropped, state kept.
    await eventually(() => api.openWatches > 0);
    await api.restart();
    await core.createNamespacedConfigMap({
      namespace: ns,
      body: { metadata: { name: "c4" }, data: { v: "3" } },
    });
    await eventually(
      async () =>
        JSON.stringify(cacheNames(informer, ns)) === JSON.stringify(await serverNames(ns)),
      8000,
    );
    expect(cacheNames(informer, ns)).toEqual(["c1=2", "c3=1", "c4=3"]);
    expect(errors).toBeGreaterThanOrEqual(1);
    await informer.stop();
  });
});

describe("watch window", () => {
  // The window size is an in-memory knob.
  it.skipIf(onReal)(
    "is per resource: a quiet resource's old resourceVersion stays watchable, a busy one's expires",
    async () => {
      const small = await startBackend({ watchWindow: 5 });
      try {
        const api = small.kubeConfig.makeApiClient(CoreV1Api);
        await api.createNamespacedConfigMap({
          namespace: "default",
          body: { metadata: { name: "quiet" } },
        });
        const start = (await api.listNamespacedConfigMap({ namespace: "default" })).metadata
          ?.resourceVersion;
        for (let i = 0; i < 10; i++) {
          await api.createNamespacedSecret({
            namespace: "default",
            body: { metadata: { name: `busy-${i}` } },
          });
        }
        const events: string[] = [];
        const quiet = await new Watch(small.kubeConfig).watch(
          "/api/v1/namespaces/default/configmaps",
          { resourceVersion: start },
          (type, obj: KubernetesObject) => events.push(`${type} ${obj.metadata?.name}`),
          () => {},
        );
        await api.createNamespacedConfigMap({
          namespace: "default",
          body: { metadata: { name: "later" } },
        });
        await eventually(() => events.length >= 1);
        expect(events).toEqual(["ADDED later"]);
        quiet.abort();
        const busy: { type: string; code?: number }[] = [];
        await new Watch(small.kubeConfig).watch(
          "/api/v1/namespaces/default/secrets",
          { resourceVersion: start },
          (type, obj: { code?: number }) => busy.push({ type, code: obj.code }),
          () => {},
        );
        await eventually(() => busy.length >= 1);
        expect(busy).toEqual([{ type: "ERROR", code: 410 }]);
      } finally {
        await small.stop();
      }
    },
  );
});
