import {
  CoordinationV1Api,
  CoreV1Api,
  EventsV1Api,
  KubernetesObjectApi,
  PatchStrategy,
  setHeaderOptions,
  type V1ConfigMap,
} from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Backend, startBackend } from "../support/backend.js";
import { apiError, rawRequest } from "../support/fixtures.js";

let backend: Backend;
let core: CoreV1Api;
let nsCounter = 0;

async function freshNamespace(): Promise<string> {
  nsCounter += 1;
  const name = `crud-${nsCounter}-${Date.now().toString(36)}`;
  await core.createNamespace({ body: { metadata: { name } } });
  return name;
}

beforeAll(async () => {
  backend = await startBackend();
  core = backend.kubeConfig.makeApiClient(CoreV1Api);
});
afterAll(() => backend.stop());

describe("create", () => {
  it("sets uid, creationTimestamp and a resourceVersion from one global counter", async () => {
    const ns = await freshNamespace();
    const a = await core.createNamespacedConfigMap({
      namespace: ns,
      body: { metadata: { name: "a" } },
    });
    const b = await core.createNamespacedSecret({
      namespace: ns,
      body: { metadata: { name: "b" }, stringData: { k: "v" } },
    });
    expect(a.metadata?.uid).toMatch(/^[0-9a-f-]{36}$/);
    expect(a.metadata?.creationTimestamp).toBeInstanceOf(Date);
    expect(Number(b.metadata?.resourceVersion)).toBeGreaterThan(
      Number(a.metadata?.resourceVersion),
    );
    expect(a.metadata?.generation).toBeUndefined();
    expect(b.type).toBe("Opaque");
    expect(b.data).toEqual({ k: Buffer.from("v").toString("base64") });
    expect(b.stringData).toBeUndefined();
  });

  it("generates names from generateName", async () => {
    const ns = await freshNamespace();
    const a = await core.createNamespacedConfigMap({
      namespace: ns,
      body: { metadata: { generateName: "gen-" } },
    });
    expect(a.metadata?.name).toMatch(/^gen-[a-z0-9]{5}$/);
  });

  it("answers 409 AlreadyExists for a duplicate name", async () => {
    const ns = await freshNamespace();
    await core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: "dup" } } });
    const err = await apiError(() =>
      core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: "dup" } } }),
    );
    expect(err.code).toBe(409);
    expect(err.status.reason).toBe("AlreadyExists");
    expect(err.status.message).toBe('configmaps "dup" already exists');
  });

  it("answers 404 in a namespace that does not exist", async () => {
    const err = await apiError(() =>
      core.createNamespacedConfigMap({ namespace: "nowhere", body: { metadata: { name: "x" } } }),
    );
    expect(err.code).toBe(404);
    expect(err.status.message).toBe('namespaces "nowhere" not found');
  });

  it("answers 422 Invalid with causes for a bad name", async () => {
    const ns = await freshNamespace();
    const err = await apiError(() =>
      core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: "Not_Valid" } } }),
    );
    expect(err.code).toBe(422);
    expect(err.status.reason).toBe("Invalid");
    expect(err.status.details?.causes?.[0]?.field).toBe("metadata.name");
    expect(err.status.details?.causes?.[0]?.reason).toBe("FieldValueInvalid");
    const missing = await apiError(() =>
      core.createNamespacedConfigMap({ namespace: ns, body: { metadata: {} } }),
    );
    expect(missing.status.details?.causes?.[0]).toMatchObject({
      field: "metadata.name",
      reason: "FieldValueRequired",
    });
  });

  it("refuses a finalizer whose name part is over 63 characters, with or without a domain", async () => {
    const ns = await freshNamespace();
    // <kind>.<group> of a long kind and group, as the SDK once derived it: 64 characters.
    const long = `${"a".repeat(27)}.infrastructure.${"b".repeat(9)}.example.com`;
    expect(long).toHaveLength(64);
    for (const finalizer of [long, `example.com/${"c".repeat(64)}`]) {
      const err = await apiError(() =>
        core.createNamespacedConfigMap({
          namespace: ns,
          body: { metadata: { name: `f-${finalizer.length}`, finalizers: [finalizer] } },
        }),
      );
      expect(err.code).toBe(422);
      expect(err.status.details?.causes?.[0]).toMatchObject({
        field: "metadata.finalizers",
        message: expect.stringContaining("name part must be no more than 63 bytes"),
      });
    }
    // A core kind takes only qualified finalizers (a custom resource also takes <kind>.<group>).
    const fits = `example.com/${"c".repeat(63)}`;
    const created = await core.createNamespacedConfigMap({
      namespace: ns,
      body: { metadata: { name: "f-63", finalizers: [fits] } },
    });
    expect(created.metadata?.finalizers).toEqual([fits]);
    await core.patchNamespacedConfigMap(
      { namespace: ns, name: "f-63", body: [{ op: "remove", path: "/metadata/finalizers" }] },
      setHeaderOptions("Content-Type", PatchStrategy.JsonPatch),
    );
  });

  it("rejects a body whose namespace differs from the URL with 400", async () => {
    const ns = await freshNamespace();
    const err = await apiError(() =>
      core.createNamespacedConfigMap({
        namespace: ns,
        body: { metadata: { name: "x", namespace: "default" } },
      }),
    );
    expect(err.code).toBe(400);
    expect(err.status.reason).toBe("BadRequest");
  });
});

describe("get, list and selectors", () => {
  it("lists with equality and set-based label selectors", async () => {
    const ns = await freshNamespace();
    const mk = (name: string, labels: Record<string, string>) =>
      core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name, labels } } });
    await mk("a", { tier: "web", env: "prod" });
    await mk("b", { tier: "db", env: "prod" });
    await mk("c", { tier: "web", env: "dev" });
    await mk("d", { other: "x" });
    const names = async (labelSelector: string) =>
      (await core.listNamespacedConfigMap({ namespace: ns, labelSelector })).items.map(
        (i) => i.metadata?.name,
      );
    expect(await names("tier=web")).toEqual(["a", "c"]);
    expect(await names("tier==web,env=prod")).toEqual(["a"]);
    expect(await names("tier!=web")).toEqual(["b", "d"]);
    expect(await names("env in (prod, dev),tier notin (db)")).toEqual(["a", "c"]);
    expect(await names("other")).toEqual(["d"]);
    expect(await names("!tier")).toEqual(["d"]);
    const bad = await apiError(() =>
      core.listNamespacedConfigMap({ namespace: ns, labelSelector: "a b c" }),
    );
    expect(bad.code).toBe(400);
  });

  it("lists with field selectors on metadata.name and metadata.namespace", async () => {
    const ns1 = await freshNamespace();
    const ns2 = await freshNamespace();
    await core.createNamespacedConfigMap({ namespace: ns1, body: { metadata: { name: "same" } } });
    await core.createNamespacedConfigMap({ namespace: ns2, body: { metadata: { name: "same" } } });
    await core.createNamespacedConfigMap({ namespace: ns2, body: { metadata: { name: "other" } } });
    const byName = await core.listConfigMapForAllNamespaces({
      fieldSelector: "metadata.name=same",
    });
    expect(byName.items.map((i) => i.metadata?.namespace).sort()).toEqual([ns1, ns2].sort());
    const byNs = await core.listConfigMapForAllNamespaces({
      fieldSelector: `metadata.namespace=${ns2},metadata.name!=same`,
    });
    expect(byNs.items.map((i) => i.metadata?.name)).toEqual(["other"]);
    const bad = await apiError(() =>
      core.listConfigMapForAllNamespaces({ fieldSelector: "data.x=1" }),
    );
    expect(bad.code).toBe(400);
    expect(bad.status.message).toBe(
      '"data.x" is not a known field selector: only "metadata.name", "metadata.namespace"',
    );
  });

  it("lists built-in items without apiVersion/kind (only the list has them)", async () => {
    const ns = await freshNamespace();
    await core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: "a" } } });
    const list = await core.listNamespacedConfigMap({ namespace: ns });
    expect(list.apiVersion).toBe("v1");
    expect(list.kind).toBe("ConfigMapList");
    expect(list.items[0]?.kind).toBeUndefined();
    expect(list.items[0]?.apiVersion).toBeUndefined();
    const one = await core.readNamespacedConfigMap({ namespace: ns, name: "a" });
    expect(one.kind).toBe("ConfigMap");
  });

  it("pages with limit and continue", async () => {
    const ns = await freshNamespace();
    for (let i = 0; i < 7; i++) {
      await core.createNamespacedConfigMap({
        namespace: ns,
        body: { metadata: { name: `p${i}` } },
      });
    }
    const seen: string[] = [];
    let token: string | undefined;
    let pages = 0;
    do {
      const page = await core.listNamespacedConfigMap({
        namespace: ns,
        limit: 3,
        _continue: token,
      });
      pages++;
      seen.push(...page.items.map((i) => i.metadata?.name ?? ""));
      token = page.metadata?._continue || undefined;
      if (token) expect(page.metadata?.remainingItemCount).toBe(7 - seen.length);
    } while (token);
    expect(pages).toBe(3);
    expect(seen).toEqual(["p0", "p1", "p2", "p3", "p4", "p5", "p6"]);
  });

  it("answers 404 NotFound for a missing object", async () => {
    const err = await apiError(() =>
      core.readNamespacedConfigMap({ namespace: "default", name: "missing" }),
    );
    expect(err.code).toBe(404);
    expect(err.status).toMatchObject({
      kind: "Status",
      status: "Failure",
      reason: "NotFound",
      message: 'configmaps "missing" not found',
      details: { name: "missing", kind: "configmaps" },
    });
  });
});

describe("update", () => {
  it("bumps the resourceVersion and rejects a stale one with 409 Conflict", async () => {
    const ns = await freshNamespace();
    const created = await core.createNamespacedConfigMap({
      namespace: ns,
      body: { metadata: { name: "u" }, data: { a: "1" } },
    });
    const updated = await core.replaceNamespacedConfigMap({
      namespace: ns,
      name: "u",
      body: { ...created, data: { a: "2" } },
    });
    expect(Number(updated.metadata?.resourceVersion)).toBeGreaterThan(
      Number(created.metadata?.resourceVersion),
    );
    const err = await apiError(() =>
      core.replaceNamespacedConfigMap({
        namespace: ns,
        name: "u",
        body: { ...created, data: { a: "3" } },
      }),
    );
    expect(err.code).toBe(409);
    expect(err.status.reason).toBe("Conflict");
    expect(err.status.message).toContain("the object has been modified");
  });

  it("does not write when nothing changed (same resourceVersion)", async () => {
    const ns = await freshNamespace();
    const created = await core.createNamespacedConfigMap({
      namespace: ns,
      body: { metadata: { name: "same" }, data: { a: "1" } },
    });
    const again = await core.replaceNamespacedConfigMap({
      namespace: ns,
      name: "same",
      body: created,
    });
    expect(again.metadata?.resourceVersion).toBe(created.metadata?.resourceVersion);
  });

  it("keeps creationTimestamp, treats a body uid as a precondition, rejects a name mismatch", async () => {
    const ns = await freshNamespace();
    const created = await core.createNamespacedConfigMap({
      namespace: ns,
      body: { metadata: { name: "k" } },
    });
    const moved: V1ConfigMap = {
      ...created,
      metadata: { ...created.metadata, creationTimestamp: new Date("2000-01-01T00:00:00Z") },
      data: { a: "1" },
    };
    const updated = await core.replaceNamespacedConfigMap({
      namespace: ns,
      name: "k",
      body: moved,
    });
    expect(updated.metadata?.creationTimestamp).toEqual(created.metadata?.creationTimestamp);
    expect(updated.metadata?.uid).toBe(created.metadata?.uid);
    const otherUid: V1ConfigMap = { ...updated, metadata: { ...updated.metadata, uid: "changed" } };
    const uidErr = await apiError(() =>
      core.replaceNamespacedConfigMap({ namespace: ns, name: "k", body: otherUid }),
    );
    expect(uidErr.code).toBe(409);
    expect(uidErr.status.message).toContain("Precondition failed: UID in precondition: changed");
    const err = await apiError(() =>
      core.replaceNamespacedConfigMap({ namespace: ns, name: "other", body: created }),
    );
    expect(err.code).toBe(400);
  });
});

describe("HTTP surface", () => {
  it("answers 405 MethodNotAllowed for a verb the path does not support", async () => {
    const ns = await freshNamespace();
    await core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: "m" } } });
    const res = await rawRequest(
      backend.kubeConfig,
      "POST",
      `/api/v1/namespaces/${ns}/configmaps/m`,
      {
        body: "{}",
        headers: { "Content-Type": "application/json" },
      },
    );
    expect(res.status).toBe(405);
    expect(JSON.parse(res.body)).toMatchObject({
      kind: "Status",
      reason: "MethodNotAllowed",
      code: 405,
    });
  });

  it("answers an unserved group/version with a plain-text 404, an unknown resource with a Status", async () => {
    const unserved = await rawRequest(
      backend.kubeConfig,
      "GET",
      "/apis/nope.example.com/v1/things",
    );
    expect(unserved.status).toBe(404);
    expect(unserved.body.trim()).toBe("404 page not found");
    const unknown = await rawRequest(backend.kubeConfig, "GET", "/api/v1/things");
    expect(unknown.status).toBe(404);
    expect(JSON.parse(unknown.body)).toMatchObject({ kind: "Status", reason: "NotFound" });
  });

  it("answers an empty create body with 400 as the real decoder words it", async () => {
    const ns = await freshNamespace();
    const res = await rawRequest(
      backend.kubeConfig,
      "POST",
      `/api/v1/namespaces/${ns}/configmaps`,
      {
        body: "",
        headers: { "Content-Type": "application/json" },
      },
    );
    expect(res.status).toBe(400);
    expect(JSON.parse(res.body)).toMatchObject({
      reason: "BadRequest",
      message:
        "the object provided is unrecognized (must be of type ConfigMap): couldn't get version/kind; json parse error: unexpected end of JSON input (<empty>)",
    });
  });

  it("streams a watch as chunked, newline-delimited JSON events", async () => {
    const ns = await freshNamespace();
    await core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: "w1" } } });
    await core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: "w2" } } });
    const res = await rawRequest(
      backend.kubeConfig,
      "GET",
      `/api/v1/namespaces/${ns}/configmaps?watch=1`,
      {
        maxMs: 1000,
      },
    );
    expect(res.status).toBe(200);
    expect(res.headers["transfer-encoding"]).toBe("chunked");
    expect(res.headers["content-type"]).toContain("application/json");
    const lines = res.body.split("\n").filter((l) => l !== "");
    expect(lines.map((l) => JSON.parse(l).type)).toEqual(["ADDED", "ADDED"]);
    expect(lines.map((l) => JSON.parse(l).object.metadata.name)).toEqual(["w1", "w2"]);
  });
});

describe("immutable ConfigMaps and Secrets", () => {
  it("refuse data changes and unsetting immutable once it is set", async () => {
    const ns = await freshNamespace();
    const cm = await core.createNamespacedConfigMap({
      namespace: ns,
      body: { metadata: { name: "frozen" }, data: { a: "1" }, immutable: true },
    });
    const err = await apiError(() =>
      core.replaceNamespacedConfigMap({
        namespace: ns,
        name: "frozen",
        body: { ...cm, data: { a: "2" } },
      }),
    );
    expect(err.code).toBe(422);
    expect(err.status.details?.causes?.[0]).toMatchObject({
      field: "data",
      reason: "FieldValueForbidden",
    });
    const labelled = await core.replaceNamespacedConfigMap({
      namespace: ns,
      name: "frozen",
      body: { ...cm, metadata: { ...cm.metadata, labels: { ok: "yes" } } },
    });
    expect(labelled.metadata?.labels).toEqual({ ok: "yes" });
    const secret = await core.createNamespacedSecret({
      namespace: ns,
      body: { metadata: { name: "s" }, stringData: { k: "v" } },
    });
    const typeErr = await apiError(() =>
      core.replaceNamespacedSecret({
        namespace: ns,
        name: "s",
        body: { ...secret, type: "kubernetes.io/tls" },
      }),
    );
    expect(typeErr.code).toBe(422);
    expect(typeErr.status.details?.causes?.[0]?.field).toBe("type");
  });
});

describe("delete", () => {
  it("deletes an object and a collection by selector", async () => {
    const ns = await freshNamespace();
    for (const [name, app] of [
      ["a", "x"],
      ["b", "x"],
      ["c", "y"],
    ] as const) {
      await core.createNamespacedConfigMap({
        namespace: ns,
        body: { metadata: { name, labels: { app } } },
      });
    }
    const status = await core.deleteNamespacedConfigMap({ namespace: ns, name: "c" });
    expect(status.status).toBe("Success");
    await core.deleteCollectionNamespacedConfigMap({ namespace: ns, labelSelector: "app=x" });
    expect((await core.listNamespacedConfigMap({ namespace: ns })).items).toHaveLength(0);
    const err = await apiError(() => core.deleteNamespacedConfigMap({ namespace: ns, name: "c" }));
    expect(err.code).toBe(404);
  });

  it("checks delete preconditions", async () => {
    const ns = await freshNamespace();
    const cm = await core.createNamespacedConfigMap({
      namespace: ns,
      body: { metadata: { name: "pre" } },
    });
    const err = await apiError(() =>
      core.deleteNamespacedConfigMap({
        namespace: ns,
        name: "pre",
        body: { preconditions: { uid: "nope" } },
      }),
    );
    expect(err.code).toBe(409);
    await core.deleteNamespacedConfigMap({
      namespace: ns,
      name: "pre",
      body: {
        preconditions: { uid: cm.metadata?.uid, resourceVersion: cm.metadata?.resourceVersion },
      },
    });
  });
});

describe("dry run", () => {
  it("validates and answers without storing", async () => {
    const ns = await freshNamespace();
    const cm = await core.createNamespacedConfigMap({
      namespace: ns,
      body: { metadata: { name: "dry" } },
      dryRun: "All",
    });
    expect(cm.metadata?.name).toBe("dry");
    await expect(
      core.readNamespacedConfigMap({ namespace: ns, name: "dry" }),
    ).rejects.toMatchObject({ code: 404 });
  });
});

describe("other built-in kinds", () => {
  it("serves Nodes (cluster-scoped, status on create), Leases and Events in both groups", async () => {
    const node = await core.createNode({
      body: { metadata: { name: "n1" }, status: { capacity: { cpu: "4" } } },
    });
    expect(node.status?.capacity?.cpu).toBe("4");
    const updated = await core.replaceNode({
      name: "n1",
      body: { ...node, status: { capacity: { cpu: "8" } } },
    });
    expect(updated.status?.capacity?.cpu).toBe("4");
    const st = await core.replaceNodeStatus({
      name: "n1",
      body: { ...updated, status: { capacity: { cpu: "8" } } },
    });
    expect(st.status?.capacity?.cpu).toBe("8");

    const coord = backend.kubeConfig.makeApiClient(CoordinationV1Api);
    const lease = await coord.createNamespacedLease({
      namespace: "default",
      body: {
        metadata: { name: "leader" },
        spec: { holderIdentity: "me", leaseDurationSeconds: 15 },
      },
    });
    expect(lease.spec?.holderIdentity).toBe("me");

    const ev = await core.createNamespacedEvent({
      namespace: "default",
      body: {
        metadata: { name: "ev1" },
        involvedObject: { kind: "ConfigMap", name: "x", namespace: "default" },
        reason: "Tested",
        message: "hello",
        type: "Normal",
      },
    });
    expect(ev.reason).toBe("Tested");
    const events = backend.kubeConfig.makeApiClient(EventsV1Api);
    const v1ev = await events.readNamespacedEvent({ namespace: "default", name: "ev1" });
    expect(v1ev.note).toBe("hello");
    expect(v1ev.regarding?.name).toBe("x");
    const byReason = await core.listNamespacedEvent({
      namespace: "default",
      fieldSelector: "reason=Tested",
    });
    expect(byReason.items).toHaveLength(1);
  });

  it("stores Events written through events.k8s.io/v1 where core/v1 reads them", async () => {
    const event = {
      apiVersion: "events.k8s.io/v1",
      kind: "Event",
      metadata: { name: "ev2", namespace: "default" },
      // A MicroTime: exactly six fractional digits. client-node's typed EventsV1Api serializes a
      // Date with milliseconds, which the server refuses (400), so the generic client sends a string.
      eventTime: "2026-01-01T00:00:00.000000Z",
      reportingController: "capi-ts.dev/test",
      reportingInstance: "test-1",
      action: "Testing",
      reason: "Written",
      note: "via events.k8s.io",
      type: "Normal",
      regarding: { kind: "ConfigMap", name: "y", namespace: "default" },
    };
    const client = KubernetesObjectApi.makeApiClient(backend.kubeConfig);
    await client.create(event);
    const coreEvent = await core.readNamespacedEvent({ namespace: "default", name: "ev2" });
    expect(coreEvent.message).toBe("via events.k8s.io");
    expect(coreEvent.involvedObject.name).toBe("y");
    expect(coreEvent.reportingComponent).toBe("capi-ts.dev/test");
    const events = backend.kubeConfig.makeApiClient(EventsV1Api);
    const millis = await apiError(() =>
      events.createNamespacedEvent({
        namespace: "default",
        body: { ...event, metadata: { name: "ev3" }, eventTime: new Date("2026-01-01T00:00:00Z") },
      }),
    );
    expect(millis.code).toBe(400);
    expect(millis.status.message).toContain('parsing time "2026-01-01T00:00:00.000Z"');
  });

  it("works through KubernetesObjectApi (discovery-driven generic client)", async () => {
    const client = KubernetesObjectApi.makeApiClient(backend.kubeConfig);
    const created = await client.create({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "generic", namespace: "default" },
      data: { a: "b" },
    } as V1ConfigMap);
    expect(created.metadata?.uid).toBeDefined();
    const read = await client.read<V1ConfigMap>({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "generic", namespace: "default" },
    });
    expect(read.data).toEqual({ a: "b" });
    const list = await client.list("v1", "ConfigMap", "default");
    expect(list.items.map((i) => i.metadata?.name)).toContain("generic");
    await client.delete(read);
  });
});
