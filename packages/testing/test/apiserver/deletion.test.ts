import {
  CoreV1Api,
  CustomObjectsApi,
  PatchStrategy,
  setHeaderOptions,
  type V1ConfigMap,
  type V1OwnerReference,
} from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Backend, startBackend } from "../support/backend.js";
import { apiError, eventually, widgetCrd, widgets } from "../support/fixtures.js";

let backend: Backend;
let core: CoreV1Api;
let custom: CustomObjectsApi;
let nsCounter = 0;
const mergePatch = setHeaderOptions("Content-Type", PatchStrategy.MergePatch);

async function freshNamespace(): Promise<string> {
  nsCounter += 1;
  const name = `del-${nsCounter}`;
  await core.createNamespace({ body: { metadata: { name } } });
  return name;
}

async function exists(ns: string, name: string): Promise<boolean> {
  try {
    await core.readNamespacedConfigMap({ namespace: ns, name });
    return true;
  } catch {
    return false;
  }
}

function ownerRef(owner: V1ConfigMap, extra: Partial<V1OwnerReference> = {}): V1OwnerReference {
  return {
    apiVersion: "v1",
    kind: "ConfigMap",
    name: owner.metadata?.name ?? "",
    uid: owner.metadata?.uid ?? "",
    ...extra,
  };
}

beforeAll(async () => {
  backend = await startBackend();
  core = backend.kubeConfig.makeApiClient(CoreV1Api);
  custom = backend.kubeConfig.makeApiClient(CustomObjectsApi);
  await backend.installCRDs([widgetCrd]);
});
afterAll(() => backend.stop());

describe("finalizers", () => {
  it("hold the object with deletionTimestamp; removing the last one deletes it", async () => {
    const ns = await freshNamespace();
    await core.createNamespacedConfigMap({
      namespace: ns,
      body: {
        metadata: { name: "held", finalizers: ["example.com/cleanup", "example.com/other"] },
      },
    });
    await core.deleteNamespacedConfigMap({ namespace: ns, name: "held" });
    const deleting = await core.readNamespacedConfigMap({ namespace: ns, name: "held" });
    expect(deleting.metadata?.deletionTimestamp).toBeInstanceOf(Date);
    expect(deleting.metadata?.deletionGracePeriodSeconds).toBe(0);
    const added = await apiError(() =>
      core.patchNamespacedConfigMap(
        {
          namespace: ns,
          name: "held",
          body: {
            metadata: {
              finalizers: ["example.com/cleanup", "example.com/other", "example.com/new"],
            },
          },
        },
        mergePatch,
      ),
    );
    expect(added.code).toBe(422);
    await core.patchNamespacedConfigMap(
      { namespace: ns, name: "held", body: { metadata: { finalizers: ["example.com/other"] } } },
      mergePatch,
    );
    expect(await exists(ns, "held")).toBe(true);
    await core.patchNamespacedConfigMap(
      { namespace: ns, name: "held", body: { metadata: { finalizers: null } } },
      mergePatch,
    );
    expect(await exists(ns, "held")).toBe(false);
  });

  it("work the same for custom resources (delete returns the object while it is held)", async () => {
    await custom.createNamespacedCustomObject({
      ...widgets,
      namespace: "default",
      body: {
        apiVersion: `${widgets.group}/v1`,
        kind: "Widget",
        metadata: { name: "fin", finalizers: ["example.com/f"] },
        spec: { size: 1 },
      },
    });
    const held = (await custom.deleteNamespacedCustomObject({
      ...widgets,
      namespace: "default",
      name: "fin",
    })) as {
      metadata: { deletionTimestamp?: string };
    };
    expect(held.metadata.deletionTimestamp).toBeDefined();
    await custom.patchNamespacedCustomObject(
      { ...widgets, namespace: "default", name: "fin", body: { metadata: { finalizers: [] } } },
      mergePatch,
    );
    const gone = await apiError(() =>
      custom.getNamespacedCustomObject({ ...widgets, namespace: "default", name: "fin" }),
    );
    expect(gone.code).toBe(404);
  });
});

// On the real backend kube-controller-manager collects and finalizes, asynchronously: a few seconds.
const CONTROLLER_MS = 30_000;

describe("garbage collection", () => {
  it("Background: deletes dependents after the owner; keeps dependents with another live owner", async () => {
    const ns = await freshNamespace();
    const owner = await core.createNamespacedConfigMap({
      namespace: ns,
      body: { metadata: { name: "owner" } },
    });
    const other = await core.createNamespacedConfigMap({
      namespace: ns,
      body: { metadata: { name: "other-owner" } },
    });
    await core.createNamespacedConfigMap({
      namespace: ns,
      body: {
        metadata: { name: "child", ownerReferences: [ownerRef(owner, { controller: true })] },
      },
    });
    await core.createNamespacedConfigMap({
      namespace: ns,
      body: { metadata: { name: "shared", ownerReferences: [ownerRef(owner), ownerRef(other)] } },
    });
    await core.deleteNamespacedConfigMap({
      namespace: ns,
      name: "owner",
      propagationPolicy: "Background",
    });
    expect(await exists(ns, "owner")).toBe(false);
    await eventually(async () => !(await exists(ns, "child")), CONTROLLER_MS);
    const shared = await eventually(async () => {
      const s = await core.readNamespacedConfigMap({ namespace: ns, name: "shared" });
      return s.metadata?.ownerReferences?.length === 1 ? s : undefined;
    }, CONTROLLER_MS);
    expect(shared.metadata?.ownerReferences?.[0]?.name).toBe("other-owner");
  });

  it("Orphan: removes the owner reference from dependents, then deletes the owner", async () => {
    const ns = await freshNamespace();
    const owner = await core.createNamespacedConfigMap({
      namespace: ns,
      body: { metadata: { name: "owner" } },
    });
    await core.createNamespacedConfigMap({
      namespace: ns,
      body: { metadata: { name: "child", ownerReferences: [ownerRef(owner)] } },
    });
    await core.deleteNamespacedConfigMap({
      namespace: ns,
      name: "owner",
      propagationPolicy: "Orphan",
    });
    await eventually(async () => !(await exists(ns, "owner")), CONTROLLER_MS);
    const child = await core.readNamespacedConfigMap({ namespace: ns, name: "child" });
    expect(child.metadata?.ownerReferences).toBeUndefined();
  });

  it("Foreground: the owner waits (foregroundDeletion) until blocking dependents are gone", async () => {
    const ns = await freshNamespace();
    const owner = await core.createNamespacedConfigMap({
      namespace: ns,
      body: { metadata: { name: "owner" } },
    });
    await core.createNamespacedConfigMap({
      namespace: ns,
      body: {
        metadata: {
          name: "blocker",
          finalizers: ["example.com/hold"],
          ownerReferences: [ownerRef(owner, { blockOwnerDeletion: true })],
        },
      },
    });
    await core.createNamespacedConfigMap({
      namespace: ns,
      body: {
        metadata: {
          name: "nonblocking",
          ownerReferences: [ownerRef(owner, { blockOwnerDeletion: false })],
        },
      },
    });
    await core.deleteNamespacedConfigMap({
      namespace: ns,
      name: "owner",
      propagationPolicy: "Foreground",
    });
    await eventually(async () => !(await exists(ns, "nonblocking")), CONTROLLER_MS);
    const waiting = await core.readNamespacedConfigMap({ namespace: ns, name: "owner" });
    expect(waiting.metadata?.finalizers).toEqual(["foregroundDeletion"]);
    expect(waiting.metadata?.deletionTimestamp).toBeDefined();
    const blocker = await core.readNamespacedConfigMap({ namespace: ns, name: "blocker" });
    expect(blocker.metadata?.deletionTimestamp).toBeDefined();
    await core.patchNamespacedConfigMap(
      { namespace: ns, name: "blocker", body: { metadata: { finalizers: null } } },
      mergePatch,
    );
    await eventually(async () => !(await exists(ns, "owner")), CONTROLLER_MS);
  });
});

describe("namespaces", () => {
  it("terminate: phase Terminating, no new content (403), contents deleted, then the namespace", async () => {
    const ns = await freshNamespace();
    await core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: "a" } } });
    await core.createNamespacedConfigMap({
      namespace: ns,
      body: { metadata: { name: "held", finalizers: ["example.com/x"] } },
    });
    const created = await core.readNamespace({ name: ns });
    expect(created.status?.phase).toBe("Active");
    expect(created.spec?.finalizers).toEqual(["kubernetes"]);
    expect(created.metadata?.labels?.["kubernetes.io/metadata.name"]).toBe(ns);
    await core.deleteNamespace({ name: ns });
    const terminating = await core.readNamespace({ name: ns });
    expect(terminating.status?.phase).toBe("Terminating");
    const forbidden = await apiError(() =>
      core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: "new" } } }),
    );
    expect(forbidden.code).toBe(403);
    expect(forbidden.status.reason).toBe("Forbidden");
    await eventually(async () => !(await exists(ns, "a")), CONTROLLER_MS);
    expect((await core.readNamespace({ name: ns })).metadata?.deletionTimestamp).toBeDefined();
    await core.patchNamespacedConfigMap(
      { namespace: ns, name: "held", body: { metadata: { finalizers: null } } },
      mergePatch,
    );
    await eventually(
      async () => (await apiError(() => core.readNamespace({ name: ns }))).code === 404,
      CONTROLLER_MS,
    );
  });
});
