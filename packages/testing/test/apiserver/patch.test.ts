import {
  CoreV1Api,
  CustomObjectsApi,
  KubernetesObjectApi,
  PatchStrategy,
  setHeaderOptions,
  type V1ConfigMap,
} from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Backend, startBackend } from "../support/backend.js";
import { apiError, widgetCrd, widgets } from "../support/fixtures.js";

let backend: Backend;
let core: CoreV1Api;
let custom: CustomObjectsApi;
let counter = 0;
const ns = "default";
const as = (type: string) => setHeaderOptions("Content-Type", type);

function unique(prefix: string): string {
  counter += 1;
  return `${prefix}-${counter}`;
}

beforeAll(async () => {
  backend = await startBackend();
  core = backend.kubeConfig.makeApiClient(CoreV1Api);
  custom = backend.kubeConfig.makeApiClient(CustomObjectsApi);
  await backend.installCRDs([widgetCrd]);
});
afterAll(() => backend.stop());

type Widget = {
  metadata: {
    name: string;
    resourceVersion?: string;
    managedFields?: { manager: string; operation: string; subresource?: string }[];
  };
  spec?: Record<string, unknown>;
  status?: Record<string, unknown>;
};

async function widget(name: string, spec: Record<string, unknown>): Promise<Widget> {
  return (await custom.createNamespacedCustomObject({
    ...widgets,
    namespace: ns,
    body: { apiVersion: `${widgets.group}/v1`, kind: "Widget", metadata: { name }, spec },
  })) as Widget;
}

describe("JSON merge patch", () => {
  it("merges objects, deletes with null and replaces lists", async () => {
    const name = unique("merge");
    await core.createNamespacedConfigMap({
      namespace: ns,
      body: { metadata: { name, labels: { a: "1", b: "2" } }, data: { x: "1", y: "2" } },
    });
    const patched = await core.patchNamespacedConfigMap(
      {
        namespace: ns,
        name,
        body: { metadata: { labels: { a: null, c: "3" } }, data: { y: null, z: "3" } },
      },
      as(PatchStrategy.MergePatch),
    );
    expect(patched.metadata?.labels).toEqual({ b: "2", c: "3" });
    expect(patched.data).toEqual({ x: "1", z: "3" });
  });

  it("answers 409 when the patch carries a stale resourceVersion (optimistic lock)", async () => {
    const name = unique("lock");
    const cm = await core.createNamespacedConfigMap({
      namespace: ns,
      body: { metadata: { name }, data: { a: "1" } },
    });
    await core.patchNamespacedConfigMap(
      { namespace: ns, name, body: { data: { a: "2" } } },
      as(PatchStrategy.MergePatch),
    );
    const err = await apiError(() =>
      core.patchNamespacedConfigMap(
        {
          namespace: ns,
          name,
          body: { metadata: { resourceVersion: cm.metadata?.resourceVersion }, data: { a: "3" } },
        },
        as(PatchStrategy.MergePatch),
      ),
    );
    expect(err.code).toBe(409);
    expect(err.status.reason).toBe("Conflict");
  });

  it("answers 404 for a missing object and 415 for an unknown content type", async () => {
    const missing = await apiError(() =>
      core.patchNamespacedConfigMap(
        { namespace: ns, name: "absent", body: { data: {} } },
        as(PatchStrategy.MergePatch),
      ),
    );
    expect(missing.code).toBe(404);
    const name = unique("ct");
    await core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name } } });
    const bad = await apiError(() =>
      core.patchNamespacedConfigMap({ namespace: ns, name, body: { data: {} } }, as("text/plain")),
    );
    expect(bad.code).toBe(415);
    expect(bad.status.reason).toBe("UnsupportedMediaType");
  });
});

describe("JSON patch", () => {
  it("applies operations (client-node's default for typed patch calls)", async () => {
    const name = unique("jp");
    await core.createNamespacedConfigMap({
      namespace: ns,
      body: { metadata: { name }, data: { a: "1" } },
    });
    const patched = await core.patchNamespacedConfigMap({
      namespace: ns,
      name,
      body: [
        { op: "test", path: "/data/a", value: "1" },
        { op: "replace", path: "/data/a", value: "2" },
        { op: "add", path: "/data/b", value: "3" },
      ],
    });
    expect(patched.data).toEqual({ a: "2", b: "3" });
    // The request log exists only in memory; on a real server the result above is the evidence.
    const log = backend.capabilities.inMemory?.requests({ verb: "patch", name });
    if (log) expect(log.at(-1)?.contentType).toBe("application/json-patch+json");
  });

  it("rejects a failing test operation with 422", async () => {
    const name = unique("jpfail");
    await core.createNamespacedConfigMap({
      namespace: ns,
      body: { metadata: { name }, data: { a: "1" } },
    });
    const err = await apiError(() =>
      core.patchNamespacedConfigMap({
        namespace: ns,
        name,
        body: [{ op: "test", path: "/data/a", value: "nope" }],
      }),
    );
    expect(err.code).toBe(422);
  });

  it("works on custom resources and their status", async () => {
    const name = unique("jpw");
    await widget(name, { size: 1 });
    const patched = (await custom.patchNamespacedCustomObjectStatus({
      ...widgets,
      namespace: ns,
      name,
      body: [{ op: "add", path: "/status", value: { ready: true } }],
    })) as Widget;
    expect(patched.status).toEqual({ ready: true });
  });
});

describe("strategic merge patch", () => {
  it("merges built-in kinds by their patch keys (Node conditions by type)", async () => {
    const name = unique("smp-node");
    await core.createNode({
      body: {
        metadata: { name },
        status: {
          conditions: [
            { type: "Ready", status: "False" },
            { type: "MemoryPressure", status: "False" },
          ],
        },
      },
    });
    const patched = await core.patchNodeStatus(
      { name, body: { status: { conditions: [{ type: "Ready", status: "True" }] } } },
      as(PatchStrategy.StrategicMergePatch),
    );
    expect(patched.status?.conditions?.map((c) => `${c.type}=${c.status}`)).toEqual([
      "Ready=True",
      "MemoryPressure=False",
    ]);
  });

  it("is the default of KubernetesObjectApi.patch for built-ins", async () => {
    const name = unique("smp-generic");
    const client = KubernetesObjectApi.makeApiClient(backend.kubeConfig);
    await client.create({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name, namespace: ns },
      data: { a: "1" },
    } as V1ConfigMap);
    const patched = await client.patch({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name, namespace: ns },
      data: { b: "2" },
    } as V1ConfigMap);
    expect(patched.data).toEqual({ a: "1", b: "2" });
  });
});

describe("server-side apply", () => {
  const apply = (name: string, spec: Record<string, unknown>, manager: string, force = false) =>
    custom.patchNamespacedCustomObject(
      {
        ...widgets,
        namespace: ns,
        name,
        body: { apiVersion: `${widgets.group}/v1`, kind: "Widget", metadata: { name }, spec },
        fieldManager: manager,
        force,
      },
      as(PatchStrategy.ServerSideApply),
    ) as Promise<Widget>;

  it("creates the object, records managedFields and is a no-op when re-applied", async () => {
    const name = unique("ssa");
    const created = await apply(name, { size: 2 }, "alice");
    expect(created.spec?.size).toBe(2);
    expect(created.metadata.managedFields?.map((m) => `${m.manager}/${m.operation}`)).toEqual([
      "alice/Apply",
    ]);
    const again = await apply(name, { size: 2 }, "alice");
    expect(again.metadata.resourceVersion).toBe(created.metadata.resourceVersion);
  });

  it("answers 409 on a conflict with another manager unless forced", async () => {
    const name = unique("ssa-conflict");
    await apply(name, { size: 2 }, "alice");
    const err = await apiError(() => apply(name, { size: 3 }, "bob"));
    expect(err.code).toBe(409);
    expect(err.status.reason).toBe("Conflict");
    expect(err.status.message).toContain('conflict with "alice"');
    expect(err.status.details?.causes?.[0]).toMatchObject({
      reason: "FieldManagerConflict",
      field: ".spec.size",
    });
    const forced = await apply(name, { size: 3 }, "bob", true);
    expect(forced.spec?.size).toBe(3);
  });

  it("removes fields a manager stops applying, and honours list-map keys", async () => {
    const name = unique("ssa-lists");
    await apply(name, { size: 1, tags: [{ key: "a", value: "1" }] }, "alice");
    const both = await apply(name, { size: 1, tags: [{ key: "b", value: "2" }] }, "bob");
    expect(both.spec?.tags).toEqual([
      { key: "a", value: "1" },
      { key: "b", value: "2" },
    ]);
    const aliceDrops = await apply(name, { size: 1 }, "alice");
    expect(aliceDrops.spec?.tags).toEqual([{ key: "b", value: "2" }]);
  });

  it("detects conflicts with fields set by a non-apply update", async () => {
    const name = unique("ssa-update");
    await apply(name, { size: 1 }, "alice");
    await custom.patchNamespacedCustomObject(
      {
        ...widgets,
        namespace: ns,
        name,
        body: { spec: { size: 5 } },
        fieldManager: "kubectl-edit",
      },
      as(PatchStrategy.MergePatch),
    );
    const err = await apiError(() => apply(name, { size: 1 }, "alice"));
    expect(err.code).toBe(409);
    expect(err.status.message).toContain("kubectl-edit");
  });

  it("applies status through the status subresource only", async () => {
    const name = unique("ssa-status");
    await apply(name, { size: 1 }, "alice");
    const st = (await custom.patchNamespacedCustomObjectStatus(
      {
        ...widgets,
        namespace: ns,
        name,
        body: {
          apiVersion: `${widgets.group}/v1`,
          kind: "Widget",
          metadata: { name },
          status: { ready: true },
          spec: { size: 9 },
        },
        fieldManager: "controller",
        force: true,
      },
      as(PatchStrategy.ServerSideApply),
    )) as Widget;
    expect(st.status).toEqual({ ready: true });
    expect(st.spec?.size).toBe(1);
    expect(st.metadata.managedFields?.find((m) => m.manager === "controller")?.subresource).toBe(
      "status",
    );
  });

  it("requires a fieldManager", async () => {
    const name = unique("ssa-nomgr");
    const err = await apiError(() =>
      custom.patchNamespacedCustomObject(
        {
          ...widgets,
          namespace: ns,
          name,
          body: {
            apiVersion: `${widgets.group}/v1`,
            kind: "Widget",
            metadata: { name },
            spec: { size: 1 },
          },
        },
        as(PatchStrategy.ServerSideApply),
      ),
    );
    expect(err.code).toBe(422);
    expect(err.status.details?.causes?.[0]).toMatchObject({
      field: "fieldManager",
      reason: "FieldValueRequired",
    });
  });

  it("works for built-in kinds through KubernetesObjectApi", async () => {
    const name = unique("ssa-cm");
    const client = KubernetesObjectApi.makeApiClient(backend.kubeConfig);
    const cm = {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name, namespace: ns },
      data: { a: "1" },
    } as V1ConfigMap;
    const created = await client.patch(
      cm,
      undefined,
      undefined,
      "tool",
      true,
      PatchStrategy.ServerSideApply,
    );
    expect(created.data).toEqual({ a: "1" });
    expect(created.metadata?.managedFields?.[0]?.manager).toBe("tool");
  });
});
