import { httpStatusOf, PatchError, PatchHelper, type PatchTransport } from "@capi-ts/sdk/patch";
import {
  ConflictError,
  KubeClient,
  NodeResource,
  NotFoundError,
  SecretResource,
} from "@capi-ts/sdk/runtime";
import {
  CoreV1Api,
  PatchStrategy,
  setHeaderOptions,
  type V1Node,
  type V1Secret,
} from "@kubernetes/client-node";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { ApiServer } from "../../src/index.js";
import { type Backend, startBackend } from "../support/backend.js";
import { clearRequestLog, onRequestLog } from "../support/request-log.js";

const ns = "default";
const MERGE = "application/merge-patch+json";
let backend: Backend;
let client: KubeClient;
let counter = 0;

beforeAll(async () => {
  backend = await startBackend();
  client = new KubeClient(backend.kubeConfig, { fieldManager: "patch-core-test" });
});
afterAll(async () => {
  await backend?.stop();
});
beforeEach(() => {
  clearRequestLog(backend);
});

/** The in-memory server, for a test that injects faults (listed in `notOnReal`). */
function inMemoryOnly(): ApiServer {
  const api = backend.capabilities.inMemory;
  if (!api) throw new Error("this test needs the in-memory server (fault injection)");
  return api;
}

async function createSecret(): Promise<V1Secret> {
  return client.create(SecretResource, {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: `secret-${++counter}`, namespace: ns, labels: { keep: "yes" } },
    stringData: { value: "x" },
  });
}

const readyCondition = {
  type: "Ready",
  status: "True",
  reason: "KubeletReady",
  message: "kubelet is posting ready status",
  lastHeartbeatTime: "2026-01-01T00:00:00Z",
  lastTransitionTime: "2026-01-01T00:00:00Z",
};

async function createNode(): Promise<V1Node> {
  const name = `node-${++counter}`;
  await client.create(NodeResource, {
    apiVersion: "v1",
    kind: "Node",
    metadata: { name, labels: { role: "worker" } },
    spec: { providerID: `fake://${name}` },
  });
  return client.mergePatchStatus(
    NodeResource,
    { name },
    { status: { conditions: [readyCondition] } },
  );
}

describe("PatchHelper on core kinds (the core API group)", () => {
  it("Secret labels through a KubeConfig: one merge patch to /api/v1, resource derived from apiVersion/kind", async () => {
    const secret = await createSecret();
    const name = secret.metadata?.name as string;
    clearRequestLog(backend);
    const patch = PatchHelper.snapshot(secret);
    secret.metadata = { ...secret.metadata, labels: { keep: "yes", added: "by-helper" } };
    const result = await patch.apply(backend.kubeConfig, secret);
    expect(result).toMatchObject({ requests: 1, patched: { spec: true, status: false } });
    onRequestLog(backend, { name }, (requests) => {
      expect(
        requests.map((r) => [r.verb, r.group, r.resource, r.namespace, r.contentType]),
      ).toEqual([["patch", "", "secrets", ns, MERGE]]);
      expect(requests[0]?.body).toEqual({ metadata: { labels: { added: "by-helper" } } });
    });
    const stored = await client.get(SecretResource, { namespace: ns, name });
    expect(stored.metadata?.labels).toEqual({ keep: "yes", added: "by-helper" });
    expect(result.object?.metadata?.resourceVersion).toBe(stored.metadata?.resourceVersion);

    clearRequestLog(backend);
    const unchanged = await PatchHelper.snapshot(stored).apply(backend.kubeConfig, stored);
    expect(unchanged.requests).toBe(0);
    onRequestLog(backend, { name }, (requests) => expect(requests).toEqual([]));
    expect(
      (await client.get(SecretResource, { namespace: ns, name })).metadata?.resourceVersion,
    ).toBe(stored.metadata?.resourceVersion);
  });

  it("Node status conditions and labels through a KubeClient: cluster-scoped, locked /status patch first", async () => {
    const node = await createNode();
    const name = node.metadata?.name as string;
    clearRequestLog(backend);
    const patch = PatchHelper.snapshot(node, { resource: NodeResource });
    const networkCondition = {
      type: "NetworkUnavailable",
      status: "False",
      reason: "RouteCreated",
      message: "routes are set up",
      lastHeartbeatTime: "2026-01-02T00:00:00Z",
      lastTransitionTime: "2026-01-02T00:00:00Z",
    };
    node.status?.conditions?.push(networkCondition as never);
    node.metadata = { ...node.metadata, labels: { role: "worker", zone: "a" } };
    const result = await patch.apply(client, node, { ownedConditions: ["NetworkUnavailable"] });
    expect(result).toMatchObject({
      requests: 3,
      patched: { conditions: true, spec: true, status: false },
    });
    onRequestLog(backend, { name }, (requests) => {
      expect(
        requests.map((r) => [r.verb, r.resource, r.subresource ?? "", r.namespace ?? "", r.status]),
      ).toEqual([
        ["get", "nodes", "", "", 200],
        ["patch", "nodes", "status", "", 200],
        ["patch", "nodes", "", "", 200],
      ]);
      expect(requests[1]?.body).toEqual({
        metadata: { resourceVersion: node.metadata?.resourceVersion },
        status: { conditions: [readyCondition, networkCondition] },
      });
      expect(requests[2]?.body).toEqual({ metadata: { labels: { zone: "a" } } });
    });
    const stored = await client.get(NodeResource, { name });
    expect(stored.status?.conditions?.map((c) => [c.type, c.status])).toEqual([
      ["Ready", "True"],
      ["NetworkUnavailable", "False"],
    ]);
    expect(stored.metadata?.labels).toEqual({ role: "worker", zone: "a" });
  });

  it("failures surface the runtime's typed errors: ConflictError on a stale precondition, NotFoundError when gone", async () => {
    const secret = await createSecret();
    const name = secret.metadata?.name as string;
    const patch = PatchHelper.snapshot(secret);
    await client.mergePatch(SecretResource, secret, { metadata: { labels: { other: "writer" } } });
    secret.metadata = { ...secret.metadata, labels: { mine: "yes" } };
    const conflict = await patch
      .apply(client, secret, { precondition: "resourceVersion" })
      .catch((e: unknown) => e);
    expect(conflict).toBeInstanceOf(PatchError);
    expect((conflict as PatchError).errors[0]).toBeInstanceOf(ConflictError);
    expect((conflict as PatchError).message).toMatch(/409/);

    await client.delete(SecretResource, { namespace: ns, name });
    const gone = await patch.apply(client, secret).catch((e: unknown) => e);
    expect(gone).toBeInstanceOf(PatchError);
    expect((gone as PatchError).errors[0]).toBeInstanceOf(NotFoundError);
  });

  it("a custom PatchTransport over client-node's CoreV1Api: its errors (numeric code) still drive the retries on injected 409s", async () => {
    const api = inMemoryOnly();
    const node = await createNode();
    const name = node.metadata?.name as string;
    const core = backend.kubeConfig.makeApiClient(CoreV1Api);
    const calls: string[] = [];
    const transport: PatchTransport = {
      async get(resource, _namespace, nodeName) {
        calls.push(`get ${resource.plural}`);
        return core.readNode({ name: nodeName }) as never;
      },
      async patch(resource, _namespace, nodeName, body, contentType, subresource) {
        calls.push(`patch ${resource.plural}${subresource ? `/${subresource}` : ""}`);
        const headers = setHeaderOptions("Content-Type", contentType as PatchStrategy);
        return (
          subresource === "status"
            ? core.patchNodeStatus({ name: nodeName, body }, headers)
            : core.patchNode({ name: nodeName, body }, headers)
        ) as never;
      },
    };
    const patch = PatchHelper.snapshot(node);
    node.status?.conditions?.push({
      type: "MemoryPressure",
      status: "False",
      reason: "KubeletHasSufficientMemory",
      message: "",
      lastHeartbeatTime: "2026-01-03T00:00:00Z",
      lastTransitionTime: "2026-01-03T00:00:00Z",
    } as never);
    api.faults.add({ verb: "patch", subresource: "status", name, status: 409, count: 2 });
    api.clearRequests();
    const result = await patch.apply(transport, node, { retryDelayMs: 1 });
    expect(result.patched.conditions).toBe(true);
    expect(calls).toEqual([
      "get nodes",
      "patch nodes/status",
      "get nodes",
      "patch nodes/status",
      "get nodes",
      "patch nodes/status",
    ]);
    expect(
      api.requests({ name }).map((r) => `${r.verb}:${r.status}:${r.contentType ?? ""}`),
    ).toEqual([
      "get:200:",
      `patch:409:${PatchStrategy.MergePatch}`,
      "get:200:",
      `patch:409:${PatchStrategy.MergePatch}`,
      "get:200:",
      `patch:200:${PatchStrategy.MergePatch}`,
    ]);
    const stored = await client.get(NodeResource, { name });
    expect(stored.status?.conditions?.map((c) => c.type)).toEqual(["Ready", "MemoryPressure"]);
  });
});

describe("PatchHelper on core kinds, against the server's own 409", () => {
  it("a custom PatchTransport over client-node's CoreV1Api: a real 409 (another write after our GET) is retried", async () => {
    const node = await createNode();
    const name = node.metadata?.name as string;
    const core = backend.kubeConfig.makeApiClient(CoreV1Api);
    const calls: string[] = [];
    let interferences = 2;
    // After each of the first two GETs another writer bumps the Node's resourceVersion, so the
    // helper's locked /status patch is stale and the server answers 409 by itself.
    const transport: PatchTransport = {
      async get(_resource, _namespace, nodeName) {
        calls.push("get");
        const current = await core.readNode({ name: nodeName });
        if (interferences > 0) {
          interferences -= 1;
          await client.mergePatch(NodeResource, current, {
            metadata: { labels: { heartbeat: `${interferences}` } },
          });
        }
        return current as never;
      },
      async patch(_resource, _namespace, nodeName, body, contentType, subresource) {
        const headers = setHeaderOptions("Content-Type", contentType as PatchStrategy);
        try {
          const patched = await (subresource === "status"
            ? core.patchNodeStatus({ name: nodeName, body }, headers)
            : core.patchNode({ name: nodeName, body }, headers));
          calls.push(`patch ${subresource ?? ""}:200`);
          return patched as never;
        } catch (error) {
          calls.push(`patch ${subresource ?? ""}:${httpStatusOf(error)}`);
          throw error;
        }
      },
    };
    const patch = PatchHelper.snapshot(node);
    node.status?.conditions?.push({
      type: "DiskPressure",
      status: "False",
      reason: "KubeletHasNoDiskPressure",
      message: "",
      lastHeartbeatTime: "2026-01-04T00:00:00Z",
      lastTransitionTime: "2026-01-04T00:00:00Z",
    } as never);
    const result = await patch.apply(transport, node, { retryDelayMs: 1 });
    expect(result.patched.conditions).toBe(true);
    expect(calls).toEqual([
      "get",
      "patch status:409",
      "get",
      "patch status:409",
      "get",
      "patch status:200",
    ]);
    const stored = await client.get(NodeResource, { name });
    expect(stored.status?.conditions?.map((c) => c.type)).toEqual(["Ready", "DiskPressure"]);
    expect(stored.metadata?.labels).toMatchObject({ heartbeat: "0" });
  });
});
