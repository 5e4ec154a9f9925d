import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CoreV1Api, KubeConfig, PatchStrategy, setHeaderOptions } from "@kubernetes/client-node";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { ApiServer } from "../../src/index.js";
import { type Backend, startBackend } from "../support/backend.js";
import { apiError } from "../support/fixtures.js";

// Fault injection, the request log and restart exist only on the in-memory server.
let backend: Backend;
let api: ApiServer;
let core: CoreV1Api;
const mergePatch = setHeaderOptions("Content-Type", PatchStrategy.MergePatch);

beforeAll(async () => {
  backend = await startBackend();
  const inMemory = backend.capabilities.inMemory;
  if (!inMemory) throw new Error("these tests need the in-memory server");
  api = inMemory;
  core = backend.kubeConfig.makeApiClient(CoreV1Api);
  await core.createNamespacedConfigMap({
    namespace: "default",
    body: { metadata: { name: "target" }, data: { a: "1" } },
  });
});
afterAll(() => backend.stop());
beforeEach(() => {
  api.faults.clear();
  api.clearRequests();
});

describe("fault injection", () => {
  it("fails matching requests `count` times with the real reason", async () => {
    const rule = api.faults.add({
      verb: "get",
      resource: "configmaps",
      name: "target",
      status: 500,
      count: 2,
    });
    for (let i = 0; i < 2; i++) {
      const err = await apiError(() =>
        core.readNamespacedConfigMap({ namespace: "default", name: "target" }),
      );
      expect(err.code).toBe(500);
      expect(err.status.reason).toBe("InternalError");
    }
    expect(
      (await core.readNamespacedConfigMap({ namespace: "default", name: "target" })).data,
    ).toEqual({ a: "1" });
    expect(rule.hits).toBe(2);
    expect(api.faults.list()).toHaveLength(0);
  });

  it("answers 429 with Retry-After and 503 / 409 as asked", async () => {
    api.faults.add({ verb: "list", status: 429, retryAfterSeconds: 3, count: 1 });
    const throttled = await apiError(() => core.listNamespacedConfigMap({ namespace: "default" }));
    expect(throttled.code).toBe(429);
    expect(throttled.status.reason).toBe("TooManyRequests");
    expect(throttled.status.details?.retryAfterSeconds).toBe(3);
    expect(throttled.headers["retry-after"]).toBe("3");
    api.faults.add({ verb: "patch", status: 409, count: 1 });
    const conflict = await apiError(() =>
      core.patchNamespacedConfigMap(
        { namespace: "default", name: "target", body: { data: { b: "2" } } },
        mergePatch,
      ),
    );
    expect(conflict.code).toBe(409);
    expect(conflict.status.reason).toBe("Conflict");
    api.faults.add({ resource: "configmaps", status: 503, count: 1 });
    expect(
      (await apiError(() => core.listNamespacedConfigMap({ namespace: "default" }))).status.reason,
    ).toBe("ServiceUnavailable");
  });

  it("leaves non-matching requests alone and honours probability", async () => {
    api.faults.add({ verb: "get", resource: "secrets", status: 500 });
    api.faults.add({ verb: "get", resource: "configmaps", status: 500, probability: 0 });
    for (let i = 0; i < 5; i++) {
      await core.readNamespacedConfigMap({ namespace: "default", name: "target" });
    }
    api.faults.clear();
    api.faults.add({ verb: "get", resource: "configmaps", status: 500, probability: 1 });
    expect(
      (await apiError(() => core.readNamespacedConfigMap({ namespace: "default", name: "target" })))
        .code,
    ).toBe(500);
  });

  it("adds latency and can drop the connection", async () => {
    api.faults.add({ verb: "get", resource: "configmaps", latencyMs: 150, count: 1 });
    const started = performance.now();
    await core.readNamespacedConfigMap({ namespace: "default", name: "target" });
    expect(performance.now() - started).toBeGreaterThanOrEqual(140);
    api.faults.add({ verb: "get", resource: "configmaps", dropConnection: true, count: 1 });
    await expect(
      core.readNamespacedConfigMap({ namespace: "default", name: "target" }),
    ).rejects.toThrow();
    await core.readNamespacedConfigMap({ namespace: "default", name: "target" });
  });

  it("rejects a rule that does nothing, with a message saying what to add", () => {
    expect(() => api.faults.add({ verb: "get" })).toThrow(
      /needs a status, a latencyMs or dropConnection/,
    );
    expect(() => api.faults.add({ status: 500, probability: 2 })).toThrow(/between 0 and 1/);
  });
});

describe("request log", () => {
  it("records verb, resource, subresource, name, status, content type, body and timing", async () => {
    await core.patchNamespacedConfigMap(
      { namespace: "default", name: "target", body: { data: { c: "3" } } },
      mergePatch,
    );
    await apiError(() => core.readNamespacedConfigMap({ namespace: "default", name: "nope" }));
    await core.listNamespacedConfigMap({ namespace: "default", labelSelector: "x=y" });
    const patches = api.requests({ verb: "patch" });
    expect(patches).toHaveLength(1);
    expect(patches[0]).toMatchObject({
      verb: "patch",
      resource: "configmaps",
      namespace: "default",
      name: "target",
      status: 200,
      contentType: "application/merge-patch+json",
      body: { data: { c: "3" } },
    });
    expect(patches[0]?.durationMs).toBeGreaterThanOrEqual(0);
    expect(api.requests({ status: 404 }).map((r) => r.name)).toEqual(["nope"]);
    expect(api.requests((r) => r.verb === "list")[0]?.query.labelSelector).toBe("x=y");
    api.clearRequests();
    expect(api.requests()).toHaveLength(0);
  });

  it("records status subresource writes as such", async () => {
    await core.createNode({ body: { metadata: { name: "log-node" } } });
    await core.patchNodeStatus(
      { name: "log-node", body: { status: { phase: "Running" } } },
      mergePatch,
    );
    expect(api.requests({ verb: "patch", subresource: "status" })).toHaveLength(1);
  });
});

describe("restart and kubeconfig", () => {
  it("keeps state across a restart on the same URL", async () => {
    const before = await core.readNamespacedConfigMap({ namespace: "default", name: "target" });
    await api.restart();
    const after = await core.readNamespacedConfigMap({ namespace: "default", name: "target" });
    expect(after.metadata?.resourceVersion).toBe(before.metadata?.resourceVersion);
  });

  it("writes a kubeconfig that client-node loads", async () => {
    const dir = await mkdtemp(join(tmpdir(), "capi-ts-kubeconfig-"));
    try {
      const file = join(dir, "config");
      await api.writeKubeconfig(file);
      const kc = new KubeConfig();
      kc.loadFromFile(file);
      expect(kc.getCurrentCluster()?.server).toBe(api.url);
      const read = await kc
        .makeApiClient(CoreV1Api)
        .readNamespacedConfigMap({ namespace: "default", name: "target" });
      expect(read.metadata?.name).toBe("target");
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
