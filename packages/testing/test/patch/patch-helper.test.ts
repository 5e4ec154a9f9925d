import {
  ConditionConflictError,
  defineInfraMachinePool,
  getCondition,
  PatchError,
  PatchHelper,
  setCondition,
} from "@capi-ts/sdk";
import { CustomObjectsApi, PatchStrategy, setHeaderOptions } from "@kubernetes/client-node";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { type ApiServer, startApiServer } from "../../src/index.js";

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
let api: ApiServer;
let custom: CustomObjectsApi;
let counter = 0;

const clock = () => new Date("2026-01-02T03:04:05.678Z");

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
  api = await startApiServer();
  await api.installCRDs(Foo.manifests().filter((m) => m.kind === "CustomResourceDefinition"));
  custom = api.kubeConfig.makeApiClient(CustomObjectsApi);
});
afterAll(async () => {
  await api?.stop();
});
beforeEach(() => {
  api.clearRequests();
});

const ours = (name: string) => api.requests({ name, resource: Foo.plural });

describe("PatchHelper against the API server", () => {
  it("sends no request when nothing changed, including nil -> [] and undefined fields", async () => {
    const pool = await createPool();
    api.clearRequests();
    const patch = PatchHelper.snapshot(pool, { resource: Foo.resource });
    pool.spec.subnets = [];
    (pool.metadata as Record<string, unknown>).labels = undefined;
    const result = await patch.apply(api.kubeConfig, pool, { statusObservedGeneration: true });
    expect(result.requests).toBe(0);
    expect(ours(pool.metadata.name as string)).toEqual([]);
  });

  it("spec only: one merge patch of metadata+spec to the resource", async () => {
    const pool = await createPool();
    api.clearRequests();
    const patch = PatchHelper.snapshot(pool, { resource: Foo.resource });
    pool.spec.providerIDList = ["foo://b", "foo://a"];
    pool.metadata.finalizers = [Foo.finalizer];
    const result = await patch.apply(api.kubeConfig, pool);
    const requests = ours(pool.metadata.name as string);
    expect(requests.map((r) => [r.verb, r.subresource, r.contentType])).toEqual([
      ["patch", undefined, MERGE],
    ]);
    expect(requests[0]?.body).toEqual({
      metadata: { finalizers: [Foo.finalizer] },
      spec: { providerIDList: ["foo://b", "foo://a"] },
    });
    expect(result.patched).toEqual({ conditions: false, spec: true, status: false });
    expect((await read(pool.metadata.name as string)).spec.providerIDList).toEqual([
      "foo://b",
      "foo://a",
    ]);
  });

  it("status only: one merge patch to /status without conditions", async () => {
    const pool = await createPool();
    api.clearRequests();
    const patch = PatchHelper.snapshot(pool, { resource: Foo.resource });
    pool.status = { ...pool.status, replicas: 3, asgName: "asg-1" };
    await patch.apply(api.kubeConfig, pool);
    const requests = ours(pool.metadata.name as string);
    expect(requests.map((r) => [r.verb, r.subresource, r.contentType])).toEqual([
      ["patch", "status", MERGE],
    ]);
    expect(requests[0]?.body).toEqual({ status: { replicas: 3, asgName: "asg-1" } });
    expect((await read(pool.metadata.name as string)).status?.replicas).toBe(3);
  });

  it("conditions only: GET, then one optimistic-locked merge patch to /status", async () => {
    const pool = await createPool();
    api.clearRequests();
    const patch = PatchHelper.snapshot(pool, { resource: Foo.resource });
    setCondition(pool, { type: "Ready", status: "True", reason: "Ready" }, { clock });
    await patch.apply(api.kubeConfig, pool, { ownedConditions: ["Ready"] });
    const requests = ours(pool.metadata.name as string);
    expect(requests.map((r) => [r.verb, r.subresource, r.contentType ?? null])).toEqual([
      ["get", undefined, null],
      ["patch", "status", MERGE],
    ]);
    expect(requests[1]?.body).toEqual({
      metadata: { resourceVersion: pool.metadata.resourceVersion },
      status: {
        conditions: [
          {
            type: "Ready",
            status: "True",
            reason: "Ready",
            message: "",
            lastTransitionTime: "2026-01-02T03:04:05Z",
            observedGeneration: 1,
          },
        ],
      },
    });
  });

  it("spec, status and conditions together: conditions first, then spec, then status", async () => {
    const pool = await createPool();
    api.clearRequests();
    const patch = PatchHelper.snapshot(pool, { resource: Foo.resource });
    pool.spec.instanceType = "m6.large";
    pool.status = { ...pool.status, replicas: 2 };
    setCondition(pool, { type: "Paused", status: "False", reason: "NotPaused" }, { clock });
    const result = await patch.apply(api.kubeConfig, pool);
    expect(result.requests).toBe(4);
    expect(ours(pool.metadata.name as string).map((r) => [r.verb, r.subresource ?? ""])).toEqual([
      ["get", ""],
      ["patch", "status"],
      ["patch", ""],
      ["patch", "status"],
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
    api.clearRequests();
    setCondition(pool, { type: "Ready", status: "True", reason: "Ready" }, { clock });
    await patch.apply(api.kubeConfig, pool);
    const requests = ours(name);
    expect(requests.map((r) => r.verb)).toEqual(["get", "patch"]);
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
    api.clearRequests();
    setCondition(pool, { type: "Ready", status: "True", reason: "Ready" }, { clock });

    const failure = await patch.apply(api.kubeConfig, pool).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(PatchError);
    expect((failure as PatchError).errors[0]).toBeInstanceOf(ConditionConflictError);
    expect(ours(name).map((r) => r.verb)).toEqual(["get"]);
    expect(getCondition(await read(name), "Ready")?.status).toBe("Unknown");

    api.clearRequests();
    await patch.apply(api.kubeConfig, pool, { ownedConditions: ["Ready"] });
    expect(ours(name).map((r) => r.verb)).toEqual(["get", "patch"]);
    expect(getCondition(await read(name), "Ready")).toMatchObject({
      status: "True",
      reason: "Ready",
    });
  });

  it("re-reads and re-applies on 409, up to 5 attempts", async () => {
    const pool = await createPool();
    const name = pool.metadata.name as string;
    const patch = PatchHelper.snapshot(pool, { resource: Foo.resource });
    setCondition(pool, { type: "Ready", status: "True", reason: "Ready" }, { clock });
    api.faults.add({ verb: "patch", subresource: "status", name, status: 409, count: 2 });
    api.clearRequests();
    const result = await patch.apply(api.kubeConfig, pool, { retryDelayMs: 1 });
    expect(result.patched.conditions).toBe(true);
    expect(ours(name).map((r) => `${r.verb}:${r.status}`)).toEqual([
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
    await expect(again.apply(api.kubeConfig, next, { retryDelayMs: 1 })).rejects.toThrow(
      /after 5 attempts/,
    );
    expect(ours(name).filter((r) => r.verb === "patch")).toHaveLength(5);
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
    api.clearRequests();
    await expect(
      patch.apply(api.kubeConfig, pool, { precondition: "resourceVersion" }),
    ).rejects.toThrow(/409/);
    expect(ours(name)[0]?.body).toEqual({
      metadata: { resourceVersion: pool.metadata.resourceVersion },
      spec: { instanceType: "c5.xlarge" },
    });
    expect((await read(name)).spec.instanceType).toBe("m5.large");
  });

  it("derives the resource from apiVersion/kind when none is given", async () => {
    const pool = await createPool();
    const patch = PatchHelper.snapshot(pool);
    pool.spec.subnets = ["a"];
    api.clearRequests();
    await patch.apply(api.kubeConfig, pool);
    expect(ours(pool.metadata.name as string).map((r) => [r.group, r.resource])).toEqual([
      [Foo.group, Foo.plural],
    ]);
  });
});
