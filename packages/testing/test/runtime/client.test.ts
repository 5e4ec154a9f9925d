import { mkdtempSync, writeFileSync } from "node:fs";
import { createServer, request as httpRequest } from "node:http";
import { connect as connectTcp } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  AlreadyExistsError,
  ConfigMapResource,
  ConflictError,
  ConnectionError,
  GoneError,
  InvalidError,
  KubeClient,
  kubeconfigFromFiles,
  NotFoundError,
  SecretResource,
  TooManyRequestsError,
  type WatchEvent,
} from "@capi-ts/sdk/runtime";
import type { V1ConfigMap } from "@kubernetes/client-node";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { type ApiServer, startApiServer } from "../../src/index.js";
import { type Gadget, GadgetResource, gadget, gadgetCrd } from "./support.js";

let api: ApiServer;
let client: KubeClient;

beforeAll(async () => {
  api = await startApiServer({ crds: [gadgetCrd] });
  client = new KubeClient(api.kubeConfig, { fieldManager: "client-test" });
});
afterAll(async () => {
  await api.stop();
});
beforeEach(() => {
  api.faults.clear();
  api.clearRequests();
});

function configMap(name: string, data: Record<string, string> = {}): V1ConfigMap {
  return { apiVersion: "v1", kind: "ConfigMap", metadata: { name, namespace: "default" }, data };
}

describe("KubeClient over HTTP", () => {
  it("creates, reads, lists, updates and deletes, addressing kinds without discovery", async () => {
    const created = await client.create(ConfigMapResource, configMap("crud", { a: "1" }));
    expect(created.metadata?.resourceVersion).toBeTruthy();
    const read = await client.get(ConfigMapResource, { namespace: "default", name: "crud" });
    expect(read.data).toEqual({ a: "1" });
    const updated = await client.update(ConfigMapResource, { ...read, data: { a: "2" } });
    expect(updated.data).toEqual({ a: "2" });
    const list = await client.list(ConfigMapResource, { namespace: "default" });
    expect(list.items.map((item) => item.metadata?.name)).toContain("crud");
    expect(list.items[0]?.kind).toBe("ConfigMap");
    expect(list.metadata.resourceVersion).toBeTruthy();
    await client.delete(ConfigMapResource, { namespace: "default", name: "crud" });
    await expect(
      client.get(ConfigMapResource, { namespace: "default", name: "crud" }),
    ).rejects.toBeInstanceOf(NotFoundError);
    const paths = api.requests().map((record) => record.path);
    expect(
      paths.filter((path) => path === "/api" || path === "/apis" || path === "/api/v1"),
    ).toEqual([]);
    expect(api.requests({ verb: "create" })[0]?.fieldManager).toBe("client-test");
  });

  it("raises typed errors carrying the parsed Status", async () => {
    await client.create(ConfigMapResource, configMap("errors"));
    const error = await client
      .create(ConfigMapResource, configMap("errors"))
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AlreadyExistsError);
    expect((error as AlreadyExistsError).status.reason).toBe("AlreadyExists");
    expect((error as AlreadyExistsError).code).toBe(409);

    const current = await client.get(ConfigMapResource, { namespace: "default", name: "errors" });
    await client.update(ConfigMapResource, { ...current, data: { x: "1" } });
    const stale = await client
      .update(ConfigMapResource, { ...current, data: { x: "2" } })
      .catch((e: unknown) => e);
    expect(stale).toBeInstanceOf(ConflictError);

    const invalid = await client.create(GadgetResource, gadget("bad", -5)).catch((e: unknown) => e);
    expect(invalid).toBeInstanceOf(InvalidError);
    expect((invalid as InvalidError).causes.map((cause) => cause.field)).toContain("spec.size");

    const missing = await client
      .get(SecretResource, { namespace: "default", name: "nope" })
      .catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(NotFoundError);
    expect((missing as NotFoundError).message).toMatch(/secrets\/nope: 404 NotFound/);
  });

  it("rejects addressing mistakes before sending anything", async () => {
    await expect(client.get(SecretResource, { name: "x" })).rejects.toThrow(
      /namespaced: pass the namespace/,
    );
    await expect(
      client.apply(SecretResource, { metadata: { name: "x", namespace: "default" } }, {} as never),
    ).rejects.toThrow(/force: true/);
    expect(api.requests()).toEqual([]);
  });

  it("sends merge patch, JSON patch and server-side apply with the right content types", async () => {
    await client.create(ConfigMapResource, configMap("patches", { a: "1" }));
    const key = { namespace: "default", name: "patches" };
    await client.mergePatch(ConfigMapResource, key, { data: { b: "2" } });
    await client.jsonPatch(ConfigMapResource, key, [{ op: "add", path: "/data/c", value: "3" }]);
    const applied = await client.apply(
      ConfigMapResource,
      { apiVersion: "v1", kind: "ConfigMap", metadata: key, data: { d: "4" } },
      { force: true, fieldManager: "ssa-owner" },
    );
    expect(applied.data).toMatchObject({ a: "1", b: "2", c: "3", d: "4" });
    const patches = api.requests({ verb: "patch" });
    expect(patches.map((record) => record.contentType)).toEqual([
      "application/merge-patch+json",
      "application/json-patch+json",
      "application/apply-patch+yaml",
    ]);
    expect(patches[2]?.fieldManager).toBe("ssa-owner");
    expect(patches[2]?.query.force).toBe("true");
  });

  it("writes status through the status subresource without touching spec or generation", async () => {
    const created = await client.create(GadgetResource, gadget("status", 3));
    const patched = await client.mergePatchStatus(GadgetResource, created, {
      status: { observedSize: 3 },
    });
    expect(patched.status?.observedSize).toBe(3);
    expect(patched.metadata?.generation).toBe(created.metadata?.generation);
    const updated = await client.updateStatus(GadgetResource, {
      ...patched,
      spec: { size: 99 },
      status: { observedSize: 4, ready: true },
    } as Gadget);
    expect(updated.spec.size).toBe(3);
    expect(updated.status).toMatchObject({ observedSize: 4, ready: true });
    expect(api.requests({ subresource: "status" }).map((record) => record.verb)).toEqual([
      "patch",
      "update",
    ]);
  });

  it("waits out a 429 Retry-After and retries; with retries off it surfaces retryAfterSeconds", async () => {
    await client.create(ConfigMapResource, configMap("throttled"));
    api.faults.add({
      verb: "get",
      resource: "configmaps",
      status: 429,
      retryAfterSeconds: 1,
      count: 1,
    });
    const started = Date.now();
    const read = await client.get(ConfigMapResource, { namespace: "default", name: "throttled" });
    expect(read.metadata?.name).toBe("throttled");
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);

    const impatient = new KubeClient(api.kubeConfig, { maxThrottleRetries: 0 });
    api.faults.add({
      verb: "get",
      resource: "configmaps",
      status: 429,
      retryAfterSeconds: 7,
      count: 1,
    });
    const error = await impatient
      .get(ConfigMapResource, { namespace: "default", name: "throttled" })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TooManyRequestsError);
    expect((error as TooManyRequestsError).retryAfterSeconds).toBe(7);
  });

  it("streams watch events, and raises GoneError for an expired resourceVersion", async () => {
    const list = await client.list(ConfigMapResource, { namespace: "default" });
    const abort = new AbortController();
    const seen: WatchEvent<V1ConfigMap>[] = [];
    const watching = (async () => {
      for await (const event of client.watch(ConfigMapResource, {
        namespace: "default",
        resourceVersion: list.metadata.resourceVersion,
        signal: abort.signal,
      })) {
        if (event.type !== "BOOKMARK") seen.push(event);
        if (seen.length === 2) abort.abort();
      }
    })().catch((error: unknown) => {
      if (!abort.signal.aborted) throw error;
    });
    await client.create(ConfigMapResource, configMap("watched"));
    await client.delete(ConfigMapResource, { namespace: "default", name: "watched" });
    await watching;
    expect(seen.map((event) => `${event.type} ${event.object.metadata?.name}`)).toEqual([
      "ADDED watched",
      "DELETED watched",
    ]);
    expect(api.requests({ verb: "watch" })[0]?.query.allowWatchBookmarks).toBe("true");

    api.faults.expireWatchWindow();
    const gone = await (async () => {
      for await (const _event of client.watch(ConfigMapResource, {
        namespace: "default",
        resourceVersion: list.metadata.resourceVersion,
      })) {
        // The server answers 410 for the stale resourceVersion.
      }
    })().catch((e: unknown) => e);
    expect(gone).toBeInstanceOf(GoneError);
  });

  it("reports a stopped server as a ConnectionError", async () => {
    const other = await startApiServer();
    const otherClient = new KubeClient(other.kubeConfig);
    await other.stop();
    const error = await otherClient.list(ConfigMapResource).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConnectionError);
    expect((error as ConnectionError).message).toMatch(/no response/);
  });
});

describe("KubeClient through the kubeconfig's proxy-url", () => {
  it("sends every request through the proxy", async () => {
    // What the proxy was asked to reach: an absolute URL's host (plain HTTP) or a CONNECT target.
    const reached: string[] = [];
    const proxy = createServer((request, response) => {
      const target = new URL(String(request.url));
      reached.push(target.host);
      const upstream = httpRequest(
        target,
        { method: request.method, headers: request.headers },
        (answer) => {
          response.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(response);
        },
      );
      upstream.on("error", () => response.destroy());
      request.pipe(upstream);
    });
    proxy.on("connect", (request, socket, head) => {
      reached.push(String(request.url));
      const [host = "", port = ""] = String(request.url).split(":");
      const upstream = connectTcp(Number(port), host, () => {
        socket.write("HTTP/1.1 200 Connection Established\r\n\r\n");
        upstream.write(head);
        upstream.pipe(socket);
        socket.pipe(upstream);
      });
      upstream.on("error", () => socket.destroy());
      socket.on("error", () => upstream.destroy());
    });
    await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
    const address = proxy.address();
    const proxyPort = typeof address === "object" && address ? address.port : 0;
    const file = join(mkdtempSync(join(tmpdir(), "proxy-url-")), "kubeconfig");
    writeFileSync(
      file,
      JSON.stringify({
        apiVersion: "v1",
        kind: "Config",
        "current-context": "x",
        clusters: [
          { name: "c", cluster: { server: api.url, "proxy-url": `http://127.0.0.1:${proxyPort}` } },
        ],
        users: [{ name: "u", user: { token: "capi-ts-in-memory" } }],
        contexts: [{ name: "x", context: { cluster: "c", user: "u" } }],
      }),
    );
    const proxied = new KubeClient(kubeconfigFromFiles([file]), { fieldManager: "proxied" });
    try {
      await proxied.create(ConfigMapResource, configMap("through-proxy", { a: "1" }));
      const read = await proxied.get(ConfigMapResource, {
        namespace: "default",
        name: "through-proxy",
      });
      expect(read.data).toEqual({ a: "1" });
      expect(reached.length).toBeGreaterThanOrEqual(2);
      expect(new Set(reached)).toEqual(new Set([new URL(api.url).host]));
      expect(api.requests({ verb: "create" }).map((r) => r.fieldManager)).toContain("proxied");
    } finally {
      proxied.close();
      await new Promise<void>((resolve) => proxy.close(() => resolve()));
    }
  });
});
