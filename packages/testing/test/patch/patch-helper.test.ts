import { ConditionConflictError, getCondition, setCondition } from "@capi-ts/sdk/conditions";
import { defineInfraMachinePool } from "@capi-ts/sdk/crd";
import {
  httpStatusOf,
  type KubeObject,
  PatchError,
  PatchHelper,
  type PatchTransport,
} from "@capi-ts/sdk/patch";
import { CustomObjectsApi, PatchStrategy, setHeaderOptions } from "@kubernetes/client-node";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import type { ApiServer } from "../../src/index.js";
import { type Backend, startBackend } from "../support/backend.js";
import { clearRequestLog, onRequestLog } from "../support/request-log.js";

const Foo = defineInfraMachinePool({
  group: "infrastructure.patch-test.capi-ts.dev",
  kind: "FooMachinePool",
  versions: ["v1beta2"],
  spec: z.object({ instanceType: z.string().min(1), subnets: z.array(z.string()).optional() }),
  status: z.object({ asgName: z.string().optional() }),
});
type Pool = z.output<typeof Foo.schema>;

const ns = "default";
const MERGE = "application/merge-patch+json";
let backend: Backend;
let custom: CustomObjectsApi;
let counter = 0;

const clock = { now: () => Date.parse("2026-01-02T03:04:05.678Z") };

async function createPool(): Promise<Pool> {
  const name = `pool-${++counter}`;
  const { group, version, plural } = Foo.resource;
  await custom.createNamespacedCustomObject({
    group,
    version,
    plural,
    namespace: ns,
    body: {
      apiVersion: Foo.apiVersion,
      kind: Foo.kind,
      metadata: { name, namespace: ns },
      spec: { instanceType: "m5.large" },
    },
  });
  await custom.patchNamespacedCustomObjectStatus(
    {
      group,
      version,
      plural,
      namespace: ns,
      name,
      body: {
        status: {
          replicas: 1,
          conditions: [
            {
              type: "Ready",
              status: "False",
              reason: "NotReady",
              message: "",
              lastTransitionTime: "2026-01-01T00:00:00Z",
            },
          ],
        },
      },
    },
    setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
  );
  return read(name);
}

async function read(name: string): Promise<Pool> {
  const { group, version, plural } = Foo.resource;
  return (await custom.getNamespacedCustomObject({
    group,
    version,
    plural,
    namespace: ns,
    name,
  })) as Pool;
}

/** Another controller writing the status subresource behind our back. */
async function otherWriterPatchesStatus(
  name: string,
  status: Record<string, unknown>,
): Promise<void> {
  const { group, version, plural } = Foo.resource;
  await custom.patchNamespacedCustomObjectStatus(
    { group, version, plural, namespace: ns, name, body: { status } },
    setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
  );
}

beforeAll(async () => {
  backend = await startBackend();
  await backend.installCRDs(Foo.manifests().filter((m) => m.kind === "CustomResourceDefinition"));
  custom = backend.kubeConfig.makeApiClient(CustomObjectsApi);
});
afterAll(async () => {
  await backend?.stop();
});
beforeEach(() => {
  clearRequestLog(backend);
});

/** What the helper sent for one of our objects; checked on the in-memory server only. */
const ours = (name: string, check: Parameters<typeof onRequestLog>[2]) =>
  onRequestLog(backend, { name, resource: Foo.plural }, check);

/** The in-memory server, for a test that injects faults (listed in `notOnReal`). */
function inMemoryOnly(): ApiServer {
  const api = backend.capabilities.inMemory;
  if (!api) throw new Error("this test needs the in-memory server (fault injection)");
  return api;
}

describe("PatchHelper against the API server", () => {
  it("sends no request when nothing changed, including nil -> [] and undefined fields", async () => {
    const pool = await createPool();
    const name = pool.metadata.name as string;
    clearRequestLog(backend);
    const patch = PatchHelper.snapshot(pool, { resource: Foo.resource });
    pool.spec.subnets = [];
    (pool.metadata as Record<string, unknown>).labels = undefined;
    const result = await patch.apply(backend.kubeConfig, pool, { statusObservedGeneration: true });
    expect(result.requests).toBe(0);
    ours(name, (requests) => expect(requests).toEqual([]));
    expect((await read(name)).metadata.resourceVersion).toBe(pool.metadata.resourceVersion);
  });

  it("spec only: one merge patch of metadata+spec to the resource", async () => {
    const pool = await createPool();
    const name = pool.metadata.name as string;
    clearRequestLog(backend);
    const patch = PatchHelper.snapshot(pool, { resource: Foo.resource });
    pool.spec.providerIDList = ["foo://b", "foo://a"];
    pool.metadata.finalizers = [Foo.finalizer];
    const result = await patch.apply(backend.kubeConfig, pool);
    ours(name, (requests) => {
      expect(requests.map((r) => [r.verb, r.subresource, r.contentType])).toEqual([
        ["patch", undefined, MERGE],
      ]);
      expect(requests[0]?.body).toEqual({
        metadata: { finalizers: [Foo.finalizer] },
        spec: { providerIDList: ["foo://b", "foo://a"] },
      });
    });
    expect(result.patched).toEqual({ conditions: false, spec: true, status: false });
    expect(result.requests).toBe(1);
    const stored = await read(name);
    expect(stored.spec.providerIDList).toEqual(["foo://b", "foo://a"]);
    expect(stored.metadata.finalizers).toEqual([Foo.finalizer]);
  });

  it("status only: one merge patch to /status without conditions", async () => {
    const pool = await createPool();
    const name = pool.metadata.name as string;
    clearRequestLog(backend);
    const patch = PatchHelper.snapshot(pool, { resource: Foo.resource });
    pool.status = { ...pool.status, replicas: 3, asgName: "asg-1" };
    const result = await patch.apply(backend.kubeConfig, pool);
    ours(name, (requests) => {
      expect(requests.map((r) => [r.verb, r.subresource, r.contentType])).toEqual([
        ["patch", "status", MERGE],
      ]);
      expect(requests[0]?.body).toEqual({ status: { replicas: 3, asgName: "asg-1" } });
    });
    expect(result).toMatchObject({
      requests: 1,
      patched: { conditions: false, spec: false, status: true },
    });
    const stored = await read(name);
    expect(stored.status).toMatchObject({ replicas: 3, asgName: "asg-1" });
    expect(getCondition(stored, "Ready")?.status).toBe("False");
  });

  it("conditions only: GET, then one optimistic-locked merge patch to /status", async () => {
    const pool = await createPool();
    const name = pool.metadata.name as string;
    clearRequestLog(backend);
    const patch = PatchHelper.snapshot(pool, { resource: Foo.resource });
    setCondition(pool, { type: "Ready", status: "True", reason: "Ready" }, { clock });
    const result = await patch.apply(backend.kubeConfig, pool, { ownedConditions: ["Ready"] });
    const written = {
      type: "Ready",
      status: "True",
      reason: "Ready",
      message: "",
      lastTransitionTime: "2026-01-02T03:04:05Z",
      observedGeneration: 1,
    };
    ours(name, (requests) => {
      expect(requests.map((r) => [r.verb, r.subresource, r.contentType ?? null])).toEqual([
        ["get", undefined, null],
        ["patch", "status", MERGE],
      ]);
      expect(requests[1]?.body).toEqual({
        metadata: { resourceVersion: pool.metadata.resourceVersion },
        status: { conditions: [written] },
      });
    });
    expect(result).toMatchObject({
      requests: 2,
      patched: { conditions: true, spec: false, status: false },
    });
    expect((await read(name)).status?.conditions).toEqual([written]);
  });

  it("spec, status and conditions together: conditions first, then spec, then status", async () => {
    const pool = await createPool();
    const name = pool.metadata.name as string;
    clearRequestLog(backend);
    const patch = PatchHelper.snapshot(pool, { resource: Foo.resource });
    pool.spec.instanceType = "m6.large";
    pool.status = { ...pool.status, replicas: 2 };
    setCondition(pool, { type: "Paused", status: "False", reason: "NotPaused" }, { clock });
    const result = await patch.apply(backend.kubeConfig, pool);
    expect(result.requests).toBe(4);
    ours(name, (requests) =>
      expect(requests.map((r) => [r.verb, r.subresource ?? ""])).toEqual([
        ["get", ""],
        ["patch", "status"],
        ["patch", ""],
        ["patch", "status"],
      ]),
    );
    const stored = await read(name);
    expect(stored.spec.instanceType).toBe("m6.large");
    expect(stored.status?.replicas).toBe(2);
    expect(stored.status?.conditions?.map((c) => [c.type, c.status])).toEqual([
      ["Ready", "False"],
      ["Paused", "False"],
    ]);
  });

  it("a concurrent writer changing another condition: both conditions survive", async () => {
    const pool = await createPool();
    const name = pool.metadata.name as string;
    const patch = PatchHelper.snapshot(pool, { resource: Foo.resource });
    await otherWriterPatchesStatus(name, {
      conditions: [
        ...(pool.status?.conditions ?? []),
        {
          type: "ScalingUp",
          status: "True",
          reason: "ScalingUp",
          message: "",
          lastTransitionTime: "2026-01-01T00:00:00Z",
        },
      ],
    });
    clearRequestLog(backend);
    setCondition(pool, { type: "Ready", status: "True", reason: "Ready" }, { clock });
    await patch.apply(backend.kubeConfig, pool);
    ours(name, (requests) => expect(requests.map((r) => r.verb)).toEqual(["get", "patch"]));
    const stored = await read(name);
    expect(stored.status?.conditions?.map((c) => [c.type, c.status])).toEqual([
      ["Ready", "True"],
      ["ScalingUp", "True"],
    ]);
  });

  it("a concurrent writer changing the same condition: conflict unless owned", async () => {
    const pool = await createPool();
    const name = pool.metadata.name as string;
    const patch = PatchHelper.snapshot(pool, { resource: Foo.resource });
    await otherWriterPatchesStatus(name, {
      conditions: [
        {
          type: "Ready",
          status: "Unknown",
          reason: "ReadyUnknown",
          message: "other",
          lastTransitionTime: "2026-01-01T00:00:00Z",
        },
      ],
    });
    clearRequestLog(backend);
    setCondition(pool, { type: "Ready", status: "True", reason: "Ready" }, { clock });

    const failure = await patch.apply(backend.kubeConfig, pool).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(PatchError);
    expect((failure as PatchError).errors[0]).toBeInstanceOf(ConditionConflictError);
    ours(name, (requests) => expect(requests.map((r) => r.verb)).toEqual(["get"]));
    expect(getCondition(await read(name), "Ready")?.status).toBe("Unknown");

    clearRequestLog(backend);
    await patch.apply(backend.kubeConfig, pool, { ownedConditions: ["Ready"] });
    ours(name, (requests) => expect(requests.map((r) => r.verb)).toEqual(["get", "patch"]));
    expect(getCondition(await read(name), "Ready")).toMatchObject({
      status: "True",
      reason: "Ready",
    });
  });

  it("re-reads and re-applies on injected 409s, up to 5 attempts", async () => {
    const api = inMemoryOnly();
    const pool = await createPool();
    const name = pool.metadata.name as string;
    const log = () => api.requests({ name, resource: Foo.plural });
    const patch = PatchHelper.snapshot(pool, { resource: Foo.resource });
    setCondition(pool, { type: "Ready", status: "True", reason: "Ready" }, { clock });
    api.faults.add({ verb: "patch", subresource: "status", name, status: 409, count: 2 });
    api.clearRequests();
    const result = await patch.apply(backend.kubeConfig, pool, { retryDelayMs: 1 });
    expect(result.patched.conditions).toBe(true);
    expect(log().map((r) => `${r.verb}:${r.status}`)).toEqual([
      "get:200",
      "patch:409",
      "get:200",
      "patch:409",
      "get:200",
      "patch:200",
    ]);

    const again = PatchHelper.snapshot(await read(name), { resource: Foo.resource });
    const next = await read(name);
    setCondition(next, { type: "Ready", status: "False", reason: "NotReady" }, { clock });
    api.faults.add({ verb: "patch", subresource: "status", name, status: 409, count: 5 });
    api.clearRequests();
    await expect(again.apply(backend.kubeConfig, next, { retryDelayMs: 1 })).rejects.toThrow(
      /after 5 attempts/,
    );
    expect(log().filter((r) => r.verb === "patch")).toHaveLength(5);
  });

  it("re-reads and re-applies when the server answers 409: another writer between our GET and our locked patch", async () => {
    const pool = await createPool();
    const name = pool.metadata.name as string;
    const { group, version, plural } = Foo.resource;
    const calls: string[] = [];
    let interferences = 2;
    // Each GET is followed by another controller's status write, so the locked patch built from it
    // carries a stale resourceVersion and the server itself answers 409 Conflict.
    const racing: PatchTransport = {
      async get(_resource, namespace, objectName) {
        calls.push("get");
        const current = await custom.getNamespacedCustomObject({
          group,
          version,
          plural,
          namespace: namespace as string,
          name: objectName,
        });
        if (interferences > 0) {
          interferences -= 1;
          await otherWriterPatchesStatus(objectName, { asgName: `other-${interferences}` });
        }
        return current as KubeObject;
      },
      async patch(_resource, namespace, objectName, body, contentType, subresource) {
        const request = {
          group,
          version,
          plural,
          namespace: namespace as string,
          name: objectName,
        };
        const headers = setHeaderOptions("Content-Type", contentType as PatchStrategy);
        try {
          const patched =
            subresource === "status"
              ? await custom.patchNamespacedCustomObjectStatus({ ...request, body }, headers)
              : await custom.patchNamespacedCustomObject({ ...request, body }, headers);
          calls.push("patch:200");
          return patched as KubeObject;
        } catch (error) {
          calls.push(`patch:${httpStatusOf(error)}`);
          throw error;
        }
      },
    };
    const patch = PatchHelper.snapshot(pool, { resource: Foo.resource });
    setCondition(pool, { type: "Ready", status: "True", reason: "Ready" }, { clock });
    const result = await patch.apply(racing, pool, { retryDelayMs: 1 });
    expect(result.patched.conditions).toBe(true);
    expect(calls).toEqual(["get", "patch:409", "get", "patch:409", "get", "patch:200"]);
    const stored = await read(name);
    expect(getCondition(stored, "Ready")).toMatchObject({ status: "True", reason: "Ready" });
    expect(stored.status?.asgName).toBe("other-0");
  });

  it("resourceVersion precondition: a concurrent spec write makes our patch fail with 409", async () => {
    const pool = await createPool();
    const name = pool.metadata.name as string;
    const patch = PatchHelper.snapshot(pool, { resource: Foo.resource });
    const { group, version, plural } = Foo.resource;
    await custom.patchNamespacedCustomObject(
      { group, version, plural, namespace: ns, name, body: { spec: { subnets: ["s-1"] } } },
      setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
    );
    pool.spec.instanceType = "c5.xlarge";
    clearRequestLog(backend);
    await expect(
      patch.apply(backend.kubeConfig, pool, { precondition: "resourceVersion" }),
    ).rejects.toThrow(/409/);
    ours(name, (requests) =>
      expect(requests[0]?.body).toEqual({
        metadata: { resourceVersion: pool.metadata.resourceVersion },
        spec: { instanceType: "c5.xlarge" },
      }),
    );
    const stored = await read(name);
    expect(stored.spec).toMatchObject({ instanceType: "m5.large", subnets: ["s-1"] });
  });

  it("removed fields go as null and the server drops them: spec list, label, status field", async () => {
    const pool = await createPool();
    const name = pool.metadata.name as string;
    const seeded = PatchHelper.snapshot(pool, { resource: Foo.resource });
    pool.spec.subnets = ["s-1", "s-2"];
    pool.metadata.labels = { keep: "1", drop: "1" };
    pool.status = { ...pool.status, asgName: "asg-old" };
    await seeded.apply(backend.kubeConfig, pool);
    const current = await read(name);
    const patch = PatchHelper.snapshot(current, { resource: Foo.resource });
    delete current.spec.subnets;
    current.metadata.labels = { keep: "1" };
    delete current.status?.asgName;
    clearRequestLog(backend);
    const result = await patch.apply(backend.kubeConfig, current);
    expect(result.patched).toEqual({ conditions: false, spec: true, status: true });
    ours(name, (requests) =>
      expect(requests.map((r) => r.body)).toEqual([
        { metadata: { labels: { drop: null } }, spec: { subnets: null } },
        { status: { asgName: null } },
      ]),
    );
    const stored = await read(name);
    expect(stored.spec).toEqual({ instanceType: "m5.large" });
    expect(stored.metadata.labels).toEqual({ keep: "1" });
    expect(stored.status?.asgName).toBeUndefined();
    expect(stored.status?.replicas).toBe(1);
  });

  it("derives the resource from apiVersion/kind when none is given", async () => {
    const pool = await createPool();
    const name = pool.metadata.name as string;
    const patch = PatchHelper.snapshot(pool);
    pool.spec.subnets = ["a"];
    clearRequestLog(backend);
    await patch.apply(backend.kubeConfig, pool);
    ours(name, (requests) =>
      expect(requests.map((r) => [r.group, r.resource])).toEqual([[Foo.group, Foo.plural]]),
    );
    expect((await read(name)).spec.subnets).toEqual(["a"]);
  });
});
