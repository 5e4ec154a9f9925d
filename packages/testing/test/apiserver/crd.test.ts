import {
  ApiextensionsV1Api,
  ApisApi,
  CoreApi,
  CoreV1Api,
  CustomObjectsApi,
  Health,
  PatchStrategy,
  setHeaderOptions,
  VersionApi,
} from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Backend, startBackend } from "../support/backend.js";
import { apiError, eventually, rawRequest, widgetCrd, widgets } from "../support/fixtures.js";

let backend: Backend;
let custom: CustomObjectsApi;
let ext: ApiextensionsV1Api;

type Widget = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; generation?: number; resourceVersion?: string; uid?: string };
  spec?: Record<string, unknown>;
  status?: Record<string, unknown>;
};

beforeAll(async () => {
  backend = await startBackend();
  custom = backend.kubeConfig.makeApiClient(CustomObjectsApi);
  ext = backend.kubeConfig.makeApiClient(ApiextensionsV1Api);
  await backend.installCRDs([widgetCrd]);
});
afterAll(() => backend.stop());

const mergePatch = setHeaderOptions("Content-Type", PatchStrategy.MergePatch);

describe("discovery", () => {
  it("serves /api, /apis, group and resource lists, /version and health", async () => {
    const coreVersions = await backend.kubeConfig.makeApiClient(CoreApi).getAPIVersions();
    expect(coreVersions.versions).toEqual(["v1"]);
    const groups = await backend.kubeConfig.makeApiClient(ApisApi).getAPIVersions();
    const widgetGroup = groups.groups.find((g) => g.name === "example.capi-ts.dev");
    expect(widgetGroup?.versions.map((v) => v.version)).toEqual(["v2", "v1"]);
    expect(widgetGroup?.preferredVersion?.version).toBe("v2");
    expect(groups.groups.map((g) => g.name)).toEqual(
      expect.arrayContaining(["apiextensions.k8s.io", "coordination.k8s.io", "events.k8s.io"]),
    );
    const resources = await custom.getAPIResources({ group: widgets.group, version: "v1" });
    const main = resources.resources.find((r) => r.name === "widgets");
    expect(main).toMatchObject({
      kind: "Widget",
      namespaced: true,
      singularName: "widget",
      shortNames: ["wd"],
      categories: ["all", "examples"],
    });
    expect(main?.verbs.sort()).toEqual(
      ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"].sort(),
    );
    expect(resources.resources.find((r) => r.name === "widgets/status")?.verbs).toEqual([
      "get",
      "patch",
      "update",
    ]);
    const coreResources = await backend.kubeConfig.makeApiClient(CoreV1Api).getAPIResources();
    expect(coreResources.resources.find((r) => r.name === "namespaces")?.namespaced).toBe(false);
    const version = await backend.kubeConfig.makeApiClient(VersionApi).getCode();
    expect(version.major).toBe("1");
    const health = new Health(backend.kubeConfig);
    expect(await health.livez({})).toBe(true);
    expect(await health.readyz({})).toBe(true);
    const missing = await apiError(() =>
      custom.getAPIResources({ group: "nope.example", version: "v1" }),
    );
    expect(missing.code).toBe(404);
    // A group/version served only by CRDs answers an unknown resource with the plain-text 404.
    const unknown = await rawRequest(
      backend.kubeConfig,
      "GET",
      `/apis/${widgets.group}/v1/nothings`,
    );
    expect(unknown.status).toBe(404);
    expect(unknown.body.trim()).toBe("404 page not found");
  });
});

describe("CustomResourceDefinition lifecycle", () => {
  it("sets NamesAccepted and Established, serves on create and stops serving on delete", async () => {
    const crd = structuredClone(widgetCrd);
    crd.metadata.name = "gadgets.example.capi-ts.dev";
    crd.spec.names = {
      plural: "gadgets",
      singular: "gadget",
      kind: "Gadget",
      listKind: "GadgetList",
      shortNames: [],
      categories: [],
    };
    await ext.createCustomResourceDefinition({ body: crd });
    const established = await eventually(async () => {
      const got = await ext.readCustomResourceDefinition({ name: crd.metadata.name });
      const conds = got.status?.conditions ?? [];
      return conds.some((c) => c.type === "Established" && c.status === "True") &&
        conds.some((c) => c.type === "NamesAccepted" && c.status === "True")
        ? got
        : undefined;
    });
    expect(established.status?.acceptedNames?.kind).toBe("Gadget");
    expect(established.status?.storedVersions).toEqual(["v1"]);
    await custom.createNamespacedCustomObject({
      group: widgets.group,
      version: "v1",
      namespace: "default",
      plural: "gadgets",
      body: {
        apiVersion: `${widgets.group}/v1`,
        kind: "Gadget",
        metadata: { name: "g" },
        spec: { size: 1 },
      },
    });
    await ext.deleteCustomResourceDefinition({ name: crd.metadata.name });
    await eventually(async () => {
      const err = await apiError(() =>
        ext.readCustomResourceDefinition({ name: crd.metadata.name }),
      );
      return err.code === 404;
    });
    const err = await apiError(() =>
      custom.listNamespacedCustomObject({
        group: widgets.group,
        version: "v1",
        namespace: "default",
        plural: "gadgets",
      }),
    );
    expect(err.code).toBe(404);
  });

  it("deletes its custom resources before itself, waiting for their finalizers", async () => {
    const crd = structuredClone(widgetCrd);
    crd.metadata.name = "sprockets.example.capi-ts.dev";
    crd.spec.names = {
      plural: "sprockets",
      singular: "sprocket",
      kind: "Sprocket",
      listKind: "SprocketList",
      shortNames: [],
      categories: [],
    };
    await backend.installCRDs([crd]);
    const sprockets = {
      group: widgets.group,
      version: "v1",
      plural: "sprockets",
      namespace: "default",
    };
    await custom.createNamespacedCustomObject({
      ...sprockets,
      body: {
        apiVersion: `${widgets.group}/v1`,
        kind: "Sprocket",
        metadata: { name: "held", finalizers: ["example.com/hold"] },
        spec: { size: 1 },
      },
    });
    await ext.deleteCustomResourceDefinition({ name: crd.metadata.name });
    const terminating = await eventually(async () => {
      const got = await ext.readCustomResourceDefinition({ name: crd.metadata.name });
      return got.status?.conditions?.find((c) => c.type === "Terminating" && c.status === "True")
        ? got
        : undefined;
    }, 10_000);
    expect(terminating.metadata?.finalizers).toContain(
      "customresourcecleanup.apiextensions.k8s.io",
    );
    const held = (await eventually(async () => {
      const obj = (await custom.getNamespacedCustomObject({ ...sprockets, name: "held" })) as {
        metadata: { deletionTimestamp?: string };
      };
      return obj.metadata.deletionTimestamp ? obj : undefined;
    }, 10_000)) as { metadata: { deletionTimestamp?: string } };
    expect(held.metadata.deletionTimestamp).toBeDefined();
    await custom.patchNamespacedCustomObject(
      { ...sprockets, name: "held", body: { metadata: { finalizers: null } } },
      mergePatch,
    );
    await eventually(async () => {
      const err = await apiError(() =>
        ext.readCustomResourceDefinition({ name: crd.metadata.name }),
      );
      return err.code === 404;
    }, 10_000);
  });

  it("rejects a CRD whose name is not plural.group", async () => {
    const crd = structuredClone(widgetCrd);
    crd.metadata.name = "wrong.example.capi-ts.dev";
    const err = await apiError(() => ext.createCustomResourceDefinition({ body: crd }));
    expect(err.code).toBe(422);
    expect(err.status.details?.causes?.[0]?.field).toBe("metadata.name");
  });

  it("serves a newly added version after a CRD update", async () => {
    const crd = structuredClone(widgetCrd);
    crd.metadata.name = "doohickeys.example.capi-ts.dev";
    crd.spec.names = {
      plural: "doohickeys",
      singular: "doohickey",
      kind: "Doohickey",
      listKind: "DoohickeyList",
      shortNames: [],
      categories: [],
    };
    crd.spec.versions = crd.spec.versions.filter((v) => v.name === "v1");
    await backend.installCRDs([crd]);
    const list = () =>
      custom.listNamespacedCustomObject({
        group: widgets.group,
        version: "v2",
        namespace: "default",
        plural: "doohickeys",
      });
    expect((await apiError(list)).code).toBe(404);
    await backend.installCRDs([
      structuredClone({
        ...widgetCrd,
        metadata: crd.metadata,
        spec: { ...widgetCrd.spec, names: crd.spec.names },
      }),
    ]);
    await eventually(async () => ((await list()) as { items: unknown[] }).items !== undefined);
  });
});

describe("custom resources", () => {
  const ns = "default";
  const create = (
    name: string,
    spec: Record<string, unknown>,
    extra: Record<string, unknown> = {},
  ) =>
    custom.createNamespacedCustomObject({
      ...widgets,
      namespace: ns,
      body: {
        apiVersion: `${widgets.group}/v1`,
        kind: "Widget",
        metadata: { name },
        spec,
        ...extra,
      },
    }) as Promise<Widget>;

  it("starts at generation 1, ignores status on create and defaults from the schema", async () => {
    const w = await create("w-create", { size: 3 }, { status: { ready: true } });
    expect(w.metadata.generation).toBe(1);
    expect(w.status).toBeUndefined();
    expect(w.spec?.color).toBe("red");
  });

  it("serves the same object in every served version", async () => {
    await create("w-multi", { size: 2 });
    const v2 = (await custom.getNamespacedCustomObject({
      ...widgets,
      version: "v2",
      namespace: ns,
      name: "w-multi",
    })) as Widget;
    expect(v2.apiVersion).toBe(`${widgets.group}/v2`);
    expect(v2.spec?.size).toBe(2);
    const list = (await custom.listNamespacedCustomObject({
      ...widgets,
      version: "v2",
      namespace: ns,
    })) as {
      apiVersion: string;
      items: Widget[];
    };
    expect(list.apiVersion).toBe(`${widgets.group}/v2`);
    expect(list.items.every((i) => i.apiVersion === `${widgets.group}/v2`)).toBe(true);
    // A write through v2 is stored and readable through v1.
    await custom.patchNamespacedCustomObject(
      { ...widgets, version: "v2", namespace: ns, name: "w-multi", body: { spec: { size: 5 } } },
      mergePatch,
    );
    const v1 = (await custom.getNamespacedCustomObject({
      ...widgets,
      namespace: ns,
      name: "w-multi",
    })) as Widget;
    expect(v1.spec?.size).toBe(5);
    expect(v1.apiVersion).toBe(`${widgets.group}/v1`);
  });

  it("status writes change only status; main writes ignore status; generation follows spec", async () => {
    const w = await create("w-status", { size: 1 });
    const afterStatus = (await custom.patchNamespacedCustomObjectStatus(
      {
        ...widgets,
        namespace: ns,
        name: "w-status",
        body: { status: { ready: true }, spec: { size: 9 }, metadata: { labels: { a: "b" } } },
      },
      mergePatch,
    )) as Widget & { metadata: { labels?: Record<string, string> } };
    expect(afterStatus.status).toEqual({ ready: true });
    expect(afterStatus.spec?.size).toBe(1);
    expect(afterStatus.metadata.labels).toBeUndefined();
    expect(afterStatus.metadata.generation).toBe(1);

    const afterMain = (await custom.patchNamespacedCustomObject(
      {
        ...widgets,
        namespace: ns,
        name: "w-status",
        body: { status: { ready: false }, metadata: { labels: { a: "b" } } },
      },
      mergePatch,
    )) as Widget;
    expect(afterMain.status).toEqual({ ready: true });
    expect(afterMain.metadata.generation).toBe(1);

    const afterSpec = (await custom.patchNamespacedCustomObject(
      { ...widgets, namespace: ns, name: "w-status", body: { spec: { size: 4 } } },
      mergePatch,
    )) as Widget;
    expect(afterSpec.metadata.generation).toBe(2);
    expect(Number(afterSpec.metadata.resourceVersion)).toBeGreaterThan(
      Number(w.metadata.resourceVersion),
    );

    const got = (await custom.getNamespacedCustomObjectStatus({
      ...widgets,
      namespace: ns,
      name: "w-status",
    })) as Widget;
    expect(got.status).toEqual({ ready: true });
  });

  it("requires a resourceVersion on update and answers 409 on a stale one", async () => {
    const w = await create("w-update", { size: 1 });
    const { resourceVersion: _rv, ...metaWithoutRv } = w.metadata;
    const noRv = await apiError(() =>
      custom.replaceNamespacedCustomObject({
        ...widgets,
        namespace: ns,
        name: "w-update",
        body: { ...w, metadata: metaWithoutRv },
      }),
    );
    expect(noRv.code).toBe(422);
    await custom.replaceNamespacedCustomObject({
      ...widgets,
      namespace: ns,
      name: "w-update",
      body: { ...w, spec: { size: 2 } },
    });
    const stale = await apiError(() =>
      custom.replaceNamespacedCustomObject({
        ...widgets,
        namespace: ns,
        name: "w-update",
        body: { ...w, spec: { size: 3 } },
      }),
    );
    expect(stale.code).toBe(409);
  });

  it("validates against the schema with field paths, and prunes unknown fields", async () => {
    const err = await apiError(() => create("w-bad", { size: 11, color: "pink" }));
    expect(err.code).toBe(422);
    expect(err.status.reason).toBe("Invalid");
    const fields = err.status.details?.causes?.map((c) => c.field).sort();
    expect(fields).toEqual(["spec.color", "spec.size"]);
    expect(err.status.message).toContain('Widget.example.capi-ts.dev "w-bad" is invalid');
    const missing = await apiError(() => create("w-missing", {}));
    expect(missing.status.details?.causes).toEqual([
      expect.objectContaining({ field: "spec.size", reason: "FieldValueRequired" }),
    ]);
    const pruned = await create(
      "w-pruned",
      { size: 1, unknown: "x", free: { kept: { deep: 1 } } },
      { extra: 1 },
    );
    expect(pruned.spec).toEqual({ size: 1, color: "red", free: { kept: { deep: 1 } } });
    expect((pruned as Record<string, unknown>).extra).toBeUndefined();
  });

  it("rejects duplicate list-map keys", async () => {
    const err = await apiError(() =>
      create("w-dup", { size: 1, tags: [{ key: "a" }, { key: "a", value: "b" }] }),
    );
    expect(err.code).toBe(422);
    expect(err.status.details?.causes?.[0]?.reason).toBe("FieldValueDuplicate");
    expect(err.status.details?.causes?.[0]?.field).toBe("spec.tags[1]");
  });

  it("answers 415 for strategic merge patch on a custom resource", async () => {
    await create("w-smp", { size: 1 });
    const err = await apiError(() =>
      custom.patchNamespacedCustomObject(
        { ...widgets, namespace: ns, name: "w-smp", body: { spec: { size: 2 } } },
        setHeaderOptions("Content-Type", PatchStrategy.StrategicMergePatch),
      ),
    );
    expect(err.code).toBe(415);
    expect(err.status.reason).toBe("UnsupportedMediaType");
  });

  it("lists across namespaces, deletes (answering a Success Status) and deletes collections", async () => {
    const core = backend.kubeConfig.makeApiClient(CoreV1Api);
    await core.createNamespace({ body: { metadata: { name: "crd-other" } } });
    await custom.createNamespacedCustomObject({
      ...widgets,
      namespace: "crd-other",
      body: {
        apiVersion: `${widgets.group}/v1`,
        kind: "Widget",
        metadata: { name: "elsewhere", labels: { del: "yes" } },
        spec: { size: 1 },
      },
    });
    const all = (await custom.listCustomObjectForAllNamespaces({
      group: widgets.group,
      version: widgets.version,
      resourcePlural: widgets.plural,
    })) as { items: Widget[] };
    expect(all.items.map((i) => i.metadata.name)).toContain("elsewhere");
    await create("w-del", { size: 1 }, {});
    const deleted = (await custom.deleteNamespacedCustomObject({
      ...widgets,
      namespace: ns,
      name: "w-del",
    })) as { kind: string; status: string; details: { name: string; kind: string } };
    expect(deleted).toMatchObject({
      kind: "Status",
      status: "Success",
      details: { name: "w-del", kind: "widgets" },
    });
    await custom.deleteCollectionNamespacedCustomObject({
      ...widgets,
      namespace: "crd-other",
      labelSelector: "del=yes",
    });
    const left = (await custom.listNamespacedCustomObject({
      ...widgets,
      namespace: "crd-other",
    })) as { items: Widget[] };
    expect(left.items).toHaveLength(0);
  });
});
