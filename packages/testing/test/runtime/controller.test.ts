import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import {
  createLogger,
  Manager,
  type ManagerOptions,
  managerOptionsFromFlags,
  parseManagerFlags,
} from "@capi-ts/sdk";
import { hasWatchFilterLabel, Labels, notPaused } from "@capi-ts/sdk/contract";
import {
  ConfigMapResource,
  generationChanged,
  NamespaceResource,
  type ReconcileContext,
  type ReconcileRequest,
  TerminalError,
} from "@capi-ts/sdk/runtime";
import type { V1ConfigMap } from "@kubernetes/client-node";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type ApiServer, startApiServer } from "../../src/index.js";
import { eventually, GadgetResource, gadget, gadgetCrd, sleep } from "./support.js";

let api: ApiServer;
const managers: Manager[] = [];

beforeEach(async () => {
  api = await startApiServer({ crds: [gadgetCrd] });
});
afterEach(async () => {
  await Promise.all(managers.splice(0).map((manager) => manager.stop()));
  await api.stop();
});

function newManager(options: Partial<ManagerOptions> = {}): Manager {
  const manager = new Manager({
    kubeConfig: api.kubeConfig,
    name: "gadget-provider",
    logger: { level: "silent" },
    informer: { backoff: { initialMs: 20, maxMs: 300 } },
    ...options,
  });
  managers.push(manager);
  return manager;
}

/** Tracks what a reconciler does so tests can assert on overlap and side effects. */
class Recorder {
  readonly reconciles = new Map<string, number>();
  readonly active = new Set<string>();
  overlaps = 0;
  total = 0;
  enter(request: ReconcileRequest): string {
    const key = `${request.namespace}/${request.name}`;
    if (this.active.has(key)) this.overlaps++;
    this.active.add(key);
    this.total++;
    this.reconciles.set(key, (this.reconciles.get(key) ?? 0) + 1);
    return key;
  }
  leave(key: string): void {
    this.active.delete(key);
  }
}

/**
 * The reconciler of the convergence tests: ensures an owned ConfigMap exists (the side effect) and
 * mirrors spec.size into status.observedSize. Reads only from the cache; writes only what differs.
 */
function gadgetReconciler(
  recorder: Recorder,
  options: { cloudDelayMs?: number; configMap?: boolean } = {},
) {
  return async (request: ReconcileRequest, { cache, client }: ReconcileContext) => {
    const key = recorder.enter(request);
    try {
      const obj = await cache.get(GadgetResource, request);
      if (!obj) return;
      if (options.cloudDelayMs) await sleep(options.cloudDelayMs);
      const cmName = `${request.name}-cfg`;
      const wantConfigMap = options.configMap ?? true;
      const existing =
        wantConfigMap &&
        (await cache.get(ConfigMapResource, { namespace: request.namespace, name: cmName }));
      if (wantConfigMap && !existing) {
        const configMap: V1ConfigMap = {
          apiVersion: "v1",
          kind: "ConfigMap",
          metadata: {
            name: cmName,
            namespace: request.namespace ?? "default",
            ownerReferences: [
              {
                apiVersion: "test.capi-ts.dev/v1",
                kind: "Gadget",
                name: request.name,
                uid: obj.metadata?.uid ?? "",
                controller: true,
              },
            ],
          },
          data: { size: String(obj.spec.size) },
        };
        await client.create(ConfigMapResource, configMap);
      }
      if (obj.status?.observedSize !== obj.spec.size) {
        await client.mergePatchStatus(GadgetResource, obj, {
          status: { observedSize: obj.spec.size, observedGeneration: obj.metadata?.generation },
        });
      }
      return undefined;
    } finally {
      recorder.leave(key);
    }
  };
}

async function createGadgets(
  manager: Manager | undefined,
  count: number,
  prefix = "g",
): Promise<void> {
  const client = manager?.client;
  if (!client) throw new Error("need a manager client");
  for (let start = 0; start < count; start += 100) {
    await Promise.all(
      Array.from({ length: Math.min(100, count - start) }, (_, i) =>
        client.create(GadgetResource, gadget(`${prefix}-${start + i}`, (start + i) % 7)),
      ),
    );
  }
}

async function converged(manager: Manager, count: number, configMaps = true): Promise<boolean> {
  const gadgets = await manager.cache.list(GadgetResource);
  return (
    gadgets.length === count &&
    gadgets.every((obj) => obj.status?.observedSize === obj.spec.size) &&
    (!configMaps || (await manager.cache.list(ConfigMapResource)).length === count)
  );
}

async function idle(manager: Manager, name: string): Promise<void> {
  await eventually(async () => {
    const depth = await manager.metrics.value("workqueue_depth", { name });
    const active = await manager.metrics.value("controller_runtime_active_workers", {
      controller: name,
    });
    return depth === 0 && active === 0;
  }, "queue drained");
}

describe("controllers over HTTP", () => {
  it("converge 1,000 objects, then send zero requests while nothing changes", async () => {
    const manager = newManager({ maxConcurrentReconciles: 8 });
    const recorder = new Recorder();
    manager
      .controller("gadgets")
      .for(GadgetResource)
      .complete(gadgetReconciler(recorder, { configMap: false }));
    void manager.start();
    await manager.elected();
    await createGadgets(manager, 1000);
    await eventually(() => converged(manager, 1000, false), "1,000 gadgets converged", 150_000, 50);
    await idle(manager, "gadgets");
    // Exactly one status write per object: no write repeated because of a stale read.
    const writes = api.requests({ verb: "patch", subresource: "status" });
    const perObject = new Map<string, number>();
    for (const record of writes)
      perObject.set(record.name ?? "", (perObject.get(record.name ?? "") ?? 0) + 1);
    expect(perObject.size).toBe(1000);
    expect([...perObject.values()].every((count) => count === 1)).toBe(true);
    expect(recorder.overlaps).toBe(0);
    // Steady state: nothing changes, so nothing is sent (watches stay open, no polling, no writes).
    api.clearRequests();
    const reconcilesBefore = recorder.total;
    await sleep(1500);
    expect(api.requests()).toEqual([]);
    expect(recorder.total).toBe(reconcilesBefore);
    expect(await manager.metrics.value("controller_runtime_reconcile_errors_total")).toBe(0);
  }, 200_000);

  it("converge through cut watches, 410s, 5xx bursts, 429s and a server restart, with nothing lost or duplicated", async () => {
    const manager = newManager({
      maxConcurrentReconciles: 4,
      client: { maxThrottleRetries: 0 },
    });
    const recorder = new Recorder();
    manager
      .controller("gadgets")
      .for(GadgetResource)
      .owns(ConfigMapResource)
      .withOptions({})
      .complete(gadgetReconciler(recorder, { cloudDelayMs: 5 }));
    void manager.start();
    await manager.elected();
    api.faults.add({
      verb: "patch",
      subresource: "status",
      status: 500,
      probability: 0.3,
      count: 60,
    });
    api.faults.add({
      verb: "create",
      resource: "configmaps",
      status: 503,
      probability: 0.2,
      count: 30,
    });
    api.faults.add({
      verb: "create",
      resource: "configmaps",
      status: 429,
      retryAfterSeconds: 1,
      count: 3,
    });
    // The informers fill their caches by WatchList: fail those requests as a relist would fail.
    api.faults.add({ verb: "watch", status: 500, count: 2 });
    const writer = manager.client;
    // Create through a client that retries on its own, so the fixtures are not affected by the faults.
    await createGadgets({ client: writer } as Manager, 100, "a");
    api.faults.cutWatches();
    await createGadgets({ client: writer } as Manager, 100, "b");
    api.faults.expireWatchWindow();
    await sleep(50);
    await api.restart();
    await createGadgets({ client: writer } as Manager, 100, "c");
    api.faults.expireWatchWindow();
    api.faults.cutWatches();
    await eventually(
      () => converged(manager, 300),
      "300 gadgets converged despite faults",
      60_000,
      50,
    );
    await idle(manager, "gadgets");
    const creates = api.requests({ verb: "create", resource: "configmaps" });
    expect(creates.filter((record) => record.status === 201).length).toBe(300);
    expect(creates.filter((record) => record.status === 409)).toEqual([]);
    expect(recorder.overlaps).toBe(0);
    // The failures were retried with backoff, and that shows in the metrics.
    expect(
      await manager.metrics.value("controller_runtime_reconcile_errors_total"),
    ).toBeGreaterThan(0);
    expect(
      await manager.metrics.value("workqueue_retries_total", { name: "gadgets" }),
    ).toBeGreaterThan(0);
    expect(
      await manager.metrics.value("capi_ts_informer_restarts_total", { reason: "gone" }),
    ).toBeGreaterThan(0);
    // Every object is right on the server, not just in the cache.
    const list = await manager.client.list(GadgetResource);
    expect(list.items.filter((obj) => obj.status?.observedSize !== obj.spec.size)).toEqual([]);
  }, 180_000);

  it("maps owned objects and watched kinds to the primary key, and filters with predicates", async () => {
    const manager = newManager({ watchFilterValue: "mine" });
    const seen: string[] = [];
    manager
      .controller("mapper")
      .for(GadgetResource, { predicates: [generationChanged()] })
      .owns(ConfigMapResource)
      .watches(ConfigMapResource, (cm) =>
        cm.metadata?.labels?.gadget
          ? [{ namespace: "default", name: cm.metadata.labels.gadget }]
          : [],
      )
      .withEventFilter(
        hasWatchFilterLabel(manager.controllerDefaults.watchFilterValue),
        notPaused(),
      )
      .complete(async (request) => {
        seen.push(request.name);
      });
    void manager.start();
    await manager.elected();
    const client = manager.client;
    const labelled = (name: string, labels: Record<string, string>) => ({
      ...gadget(name, 1),
      metadata: { name, namespace: "default", labels },
    });
    const mine = await client.create(
      GadgetResource,
      labelled("mine", { [Labels.WatchFilter]: "mine" }),
    );
    await client.create(GadgetResource, labelled("theirs", { [Labels.WatchFilter]: "theirs" }));
    await eventually(() => seen.includes("mine"), "reconcile of mine");
    // Status-only writes do not change the generation: filtered out.
    await client.mergePatchStatus(GadgetResource, mine, { status: { ready: true } });
    // An owned ConfigMap maps to its controller owner; a labelled one through the map function. The
    // event filters apply to every watch, as CAPI's WithEventFilter does: both carry the label.
    await client.create(ConfigMapResource, {
      metadata: {
        name: "owned",
        namespace: "default",
        labels: { [Labels.WatchFilter]: "mine" },
        ownerReferences: [
          {
            apiVersion: "test.capi-ts.dev/v1",
            kind: "Gadget",
            name: "owner-x",
            uid: "u1",
            controller: true,
          },
        ],
      },
    });
    await client.create(ConfigMapResource, {
      metadata: {
        name: "mapped",
        namespace: "default",
        labels: { gadget: "mapped-y", [Labels.WatchFilter]: "mine" },
      },
    });
    await client.create(ConfigMapResource, {
      metadata: { name: "unlabelled", namespace: "default", labels: { gadget: "other-z" } },
    });
    await eventually(
      () => seen.includes("owner-x") && seen.includes("mapped-y"),
      "mapped reconciles",
    );
    // Paused objects are skipped until unpaused.
    const paused = await client.create(GadgetResource, {
      ...labelled("paused", { [Labels.WatchFilter]: "mine" }),
      metadata: {
        name: "paused",
        namespace: "default",
        labels: { [Labels.WatchFilter]: "mine" },
        annotations: { "cluster.x-k8s.io/paused": "" },
      },
    });
    await sleep(300);
    expect(seen).not.toContain("paused");
    expect(seen).not.toContain("theirs");
    expect(seen).not.toContain("other-z"); // a secondary object without the filter label
    expect(seen.filter((name) => name === "mine")).toHaveLength(1);
    await client.jsonPatch(GadgetResource, paused, [
      { op: "remove", path: "/metadata/annotations/cluster.x-k8s.io~1paused" },
      { op: "replace", path: "/spec/size", value: 2 },
    ]);
    await eventually(() => seen.includes("paused"), "reconcile after unpause");
  });

  it("honours requeueAfter, stops retrying on TerminalError, and times out slow reconciles", async () => {
    const manager = newManager();
    const calls = new Map<string, number[]>();
    manager
      .controller("behaviours")
      .for(GadgetResource)
      .withOptions({ reconcileTimeoutMs: 100 })
      .complete(async (request, { signal }) => {
        const times = calls.get(request.name) ?? [];
        times.push(Date.now());
        calls.set(request.name, times);
        if (request.name === "periodic") return { requeueAfter: 150 };
        if (request.name === "broken")
          throw new TerminalError("spec.size is not supported; fix the spec");
        if (request.name === "flaky" && times.length < 3) throw new Error("transient");
        if (request.name === "slow" && times.length === 1) {
          await new Promise((resolve) => signal.addEventListener("abort", resolve));
        }
        return undefined;
      });
    void manager.start();
    await manager.elected();
    for (const name of ["periodic", "broken", "flaky", "slow"]) {
      await manager.client.create(GadgetResource, gadget(name, 1));
    }
    await eventually(() => (calls.get("periodic")?.length ?? 0) >= 4, "periodic requeues");
    await eventually(() => (calls.get("flaky")?.length ?? 0) === 3, "flaky retried until success");
    await eventually(() => (calls.get("slow")?.length ?? 0) === 2, "slow retried after timeout");
    await sleep(300);
    const periodic = calls.get("periodic") ?? [];
    const gaps = periodic.slice(1).map((time, i) => time - (periodic[i] ?? 0));
    expect(Math.min(...gaps)).toBeGreaterThanOrEqual(140);
    expect(calls.get("broken")).toHaveLength(1);
    expect(calls.get("flaky")).toHaveLength(3);
    const metric = (name: string, labels = {}) =>
      manager.metrics.value(name, { controller: "behaviours", ...labels });
    expect(await metric("controller_runtime_terminal_reconcile_errors_total")).toBe(1);
    expect(await metric("controller_runtime_reconcile_timeouts_total")).toBe(1);
    expect(
      await metric("controller_runtime_reconcile_total", { result: "requeue_after" }),
    ).toBeGreaterThanOrEqual(4);
  });

  it("logs every reconcile with controller, kind, namespace, name and reconcile id", async () => {
    const lines: Record<string, unknown>[] = [];
    const destination = new PassThrough();
    destination.on("data", (chunk: Buffer) => {
      for (const line of chunk.toString().split("\n")) if (line) lines.push(JSON.parse(line));
    });
    const manager = newManager({ logger: createLogger({ level: "debug", destination }) });
    manager
      .controller("logged")
      .for(GadgetResource)
      .complete(async (_request, { log }) => {
        log.info("inside the reconcile");
        throw new Error("boom");
      });
    void manager.start();
    await manager.elected();
    await manager.client.create(GadgetResource, gadget("logged-1", 1));
    await eventually(
      () => lines.some((line) => line.msg === "reconcile failed; retrying with backoff"),
      "error line",
    );
    const inside = lines.find((line) => line.msg === "inside the reconcile");
    const failed = lines.find((line) => line.msg === "reconcile failed; retrying with backoff");
    for (const line of [inside, failed]) {
      expect(line).toMatchObject({
        controller: "logged",
        kind: "Gadget",
        namespace: "default",
        name: "logged-1",
      });
      expect(line?.reconcileID).toMatch(/^[0-9a-f-]{36}$/);
    }
    expect((failed?.err as { message?: string })?.message).toBe("boom");
  });

  it("records Events, aggregating repeats into one object with a count", async () => {
    const manager = newManager();
    manager
      .controller("eventful")
      .for(GadgetResource)
      .complete(async (request, { cache, recorder }) => {
        const obj = await cache.get(GadgetResource, request);
        if (!obj) return;
        for (let i = 0; i < 3; i++) recorder.event(obj, "Warning", "CloudQuota", "quota exceeded");
        recorder.event(obj, "Normal", "Scaled", "scaled to 1");
      });
    void manager.start();
    await manager.elected();
    await manager.client.create(GadgetResource, gadget("noisy", 1));
    await eventually(async () => {
      const events = await manager.client.list({
        group: "",
        version: "v1",
        kind: "Event",
        plural: "events",
        scope: "Namespaced",
      });
      const quota = events.items.find(
        (event) => (event as { reason?: string }).reason === "CloudQuota",
      ) as { count?: number } | undefined;
      return events.items.length === 2 && quota?.count === 3;
    }, "two Events, the repeated one with count 3");
  });

  it("serves /healthz, /readyz and /metrics with controller-runtime metric names", async () => {
    const manager = newManager({
      healthProbeBindAddress: "127.0.0.1:0",
      diagnosticsAddress: "127.0.0.1:0",
      insecureDiagnostics: true,
    });
    manager
      .controller("probed")
      .for(GadgetResource)
      .complete(async () => undefined);
    void manager.start();
    await manager.elected();
    await manager.client.create(GadgetResource, gadget("probe", 1));
    await eventually(
      async () =>
        (await manager.metrics.value("controller_runtime_reconcile_total", {
          controller: "probed",
        })) === 1,
      "one reconcile",
    );
    const health = manager.healthAddress();
    const metrics = manager.diagnosticsAddress();
    const healthz = await fetch(`http://127.0.0.1:${health?.port}/healthz`);
    const readyz = await fetch(`http://127.0.0.1:${health?.port}/readyz`);
    expect(healthz.status).toBe(200);
    expect(readyz.status).toBe(200);
    expect(await readyz.text()).toContain("[+]informers-synced ok");
    manager.addReadyCheck("cloud", () => "cloud API unreachable");
    const notReady = await fetch(`http://127.0.0.1:${health?.port}/readyz`);
    expect(notReady.status).toBe(500);
    expect(await notReady.text()).toContain("[-]cloud failed: cloud API unreachable");
    const text = await (await fetch(`http://127.0.0.1:${metrics?.port}/metrics`)).text();
    for (const name of [
      'controller_runtime_reconcile_total{controller="probed",result="success"} 1',
      "controller_runtime_reconcile_errors_total",
      "controller_runtime_reconcile_time_seconds_bucket",
      'workqueue_depth{name="probed",controller="probed"} 0',
      "workqueue_adds_total",
      "workqueue_retries_total",
      "workqueue_queue_duration_seconds_bucket",
      "workqueue_work_duration_seconds_bucket",
      "controller_runtime_max_concurrent_reconciles",
    ]) {
      expect(text).toContain(name);
    }
  });

  it("runs from the standard flags: --namespace and --watch-filter scope what is reconciled", async () => {
    const dir = await mkdtemp(join(tmpdir(), "capi-ts-flags-"));
    const kubeconfig = join(dir, "kubeconfig");
    await api.writeKubeconfig(kubeconfig);
    const flags = parseManagerFlags([
      "--kubeconfig",
      kubeconfig,
      "--namespace",
      "team-a",
      "--watch-filter",
      "blue",
      "--leader-elect",
      "--leader-election-namespace",
      "team-a",
      "--leader-elect-lease-duration",
      "2s",
      "--leader-elect-renew-deadline",
      "1500ms",
      "--leader-elect-retry-period",
      "200ms",
      "--diagnostics-address",
      "127.0.0.1:0",
      "--insecure-diagnostics",
      "--health-probe-bind-address",
      "127.0.0.1:0",
      "--log-level",
      "silent",
    ]);
    const manager = new Manager({
      ...managerOptionsFromFlags(flags),
      name: "flagged",
      handleSignals: false,
    });
    managers.push(manager);
    const seen: string[] = [];
    manager
      .controller("flagged")
      .for(GadgetResource)
      .withEventFilter(hasWatchFilterLabel(manager.controllerDefaults.watchFilterValue))
      .complete(async (request) => {
        seen.push(`${request.namespace}/${request.name}`);
      });
    const client = manager.client;
    await client.create(NamespaceResource, { metadata: { name: "team-a" } });
    await client.create(NamespaceResource, { metadata: { name: "team-b" } });
    const labelled = (namespace: string, name: string, filter: string) => ({
      ...gadget(name, 1, namespace),
      metadata: { name, namespace, labels: { [Labels.WatchFilter]: filter } },
    });
    await client.create(GadgetResource, labelled("team-a", "mine", "blue"));
    await client.create(GadgetResource, labelled("team-a", "other-filter", "green"));
    await client.create(GadgetResource, labelled("team-b", "other-namespace", "blue"));
    void manager.start();
    expect(await manager.elected()).toBe(true);
    await eventually(() => seen.includes("team-a/mine"), "reconcile in scope");
    await sleep(300);
    expect(seen).toEqual(["team-a/mine"]);
    const watches = api.requests({ verb: "watch", resource: "gadgets" });
    expect(watches.length).toBeGreaterThan(0);
    expect(watches.every((record) => record.namespace === "team-a")).toBe(true);
    expect(manager.diagnosticsAddress()?.port).toBeGreaterThan(0);
    await rm(dir, { recursive: true, force: true });
  });

  it("shares one informer per kind between controllers", async () => {
    const manager = newManager();
    const first: string[] = [];
    const second: string[] = [];
    manager
      .controller("first")
      .for(GadgetResource)
      .owns(ConfigMapResource)
      .complete(async (request) => {
        first.push(request.name);
      });
    manager
      .controller("second")
      .for(ConfigMapResource)
      .watches(GadgetResource, (obj) => [
        { namespace: "default", name: `${obj.metadata?.name}-cm` },
      ])
      .complete(async (request) => {
        second.push(request.name);
      });
    void manager.start();
    await manager.elected();
    await manager.client.create(GadgetResource, gadget("shared", 1));
    await eventually(
      () => first.includes("shared") && second.includes("shared-cm"),
      "both controllers",
    );
    // One WatchList per kind fills the shared cache: no LIST at all.
    expect(api.requests({ verb: "list" })).toHaveLength(0);
    expect(api.requests({ verb: "watch", resource: "configmaps" })).toHaveLength(1);
    expect(api.requests({ verb: "watch", resource: "gadgets" })).toHaveLength(1);
    expect(manager.cache.allInformers()).toHaveLength(2);
  });

  it("lets a source opt out of the event filters", async () => {
    const manager = newManager();
    const seen: string[] = [];
    manager
      .controller("opted-out")
      .for(GadgetResource)
      .watches(
        ConfigMapResource,
        (cm) => [{ namespace: "default", name: cm.metadata?.labels?.gadget ?? "" }],
        { eventFilters: false },
      )
      .withEventFilter(hasWatchFilterLabel("mine"))
      .complete(async (request) => {
        seen.push(request.name);
      });
    void manager.start();
    await manager.elected();
    await manager.client.create(GadgetResource, gadget("unlabelled-gadget", 1));
    await manager.client.create(ConfigMapResource, {
      metadata: { name: "unlabelled-cm", namespace: "default", labels: { gadget: "via-cm" } },
    });
    await eventually(() => seen.includes("via-cm"), "the opted-out source's event");
    await sleep(200);
    expect(seen).toEqual(["via-cm"]);
  });

  it("refuses a second scope for a kind's shared informer, naming both controllers and scopes", () => {
    const manager = newManager();
    const reconcile = async () => undefined;
    manager
      .controller("first")
      .for(GadgetResource)
      .owns(ConfigMapResource, { cache: { labelSelector: "team=a" } })
      .complete(reconcile);
    expect(() =>
      manager
        .controller("second")
        .for(ConfigMapResource, { cache: { labelSelector: "team=b" } })
        .complete(reconcile),
    ).toThrow(
      /informer for v1\/configmaps was created by controller "first" with \{ labelSelector: "team=a" \}; controller "second" asks for \{ labelSelector: "team=b" \}\..*same cache options.*predicates/,
    );
    expect(() =>
      manager
        .controller("third")
        .watches(GadgetResource, () => [])
        .for(ConfigMapResource)
        .complete(reconcile),
    ).toThrow(/controller "third" asks for no namespace, selector or transform/);
    // The same scope shares the informer.
    manager
      .controller("fourth")
      .for(ConfigMapResource, { cache: { labelSelector: "team=a" } })
      .complete(reconcile);
    expect(manager.cache.allInformers()).toHaveLength(2);
  });

  it("rejects bad builder and manager input with clear errors", () => {
    const manager = newManager();
    expect(() => manager.controller("Bad Name")).toThrow(/lower-case/);
    expect(() => manager.controller("x").complete(async () => undefined)).toThrow(
      /call for\(resource\)/,
    );
    expect(() => newManager({ diagnosticsAddress: "8080" })).toThrow(/host:port/);
    expect(() => newManager({ leaderElection: { namespace: "" } })).toThrow(/namespace/);
    expect(() =>
      newManager({
        leaderElection: { namespace: "default", leaseDurationMs: 1000, renewDeadlineMs: 2000 },
      }),
    ).toThrow(/leaseDuration > renewDeadline > retryPeriod/);
  });
});
