import type { KubeClient } from "@capi-ts/sdk/runtime";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { CapiCore } from "../../src/index.js";
import { type Backend, onReal } from "../support/backend.js";
import {
  createNode,
  createReadyCluster,
  eventually,
  getMachinePool,
  KubeadmConfigs,
  type MachinePoolObject,
  MachinePools,
  machinePool,
  NodeResource,
  node,
  ns,
  type Obj,
  SecretResource,
  setPoolStatus,
  setProviderIDs,
  sleep,
  startCapiApiServer,
  startCore,
  TestMachinePools,
  testMachinePool,
  testMachinePoolCrd,
} from "./support.js";

// A real kube-apiserver + etcd (CAPI_TS_BACKEND=real) takes seconds to start and is slower to converge.
vi.setConfig({ testTimeout: onReal ? 60_000 : 20_000, hookTimeout: onReal ? 180_000 : 30_000 });
const PROVIDER_FINALIZER = "testmachinepool.infrastructure.cluster.x-k8s.io";

async function adopted(client: KubeClient, name: string): Promise<Obj> {
  return eventually(async () => {
    const imp = await client.get(TestMachinePools, { namespace: ns, name });
    expect(imp.metadata?.ownerReferences?.some((r) => r.kind === "MachinePool")).toBe(true);
    return imp;
  });
}

describe.each([
  ["ready", "status.ready only (CAPI v1.14.2)"],
  ["initialization", "initialization.provisioned with ready fallback (PR #14030)"],
] as const)("provisionedFrom: %s — %s", (mode, _description) => {
  let api: Backend;
  let client: KubeClient;
  let core: CapiCore;
  beforeAll(async () => {
    ({ api, client } = await startCapiApiServer());
    await createReadyCluster(client, api, "c1");
    core = await startCore(api, { provisionedFrom: mode });
  });
  afterAll(async () => {
    await core.stop();
    await api.stop();
  });

  /** Writes the pool status and returns what the first reconcile that read it decided. */
  async function provisionedAfter(name: string, status: Record<string, unknown>): Promise<boolean> {
    await adopted(client, name);
    const written = await setPoolStatus(client, name, status);
    const marker = `resourceVersion=${written.metadata?.resourceVersion} `;
    const record = await eventually(() => {
      const seen = core
        .reconciles({ machinePool: `${ns}/${name}`, event: "InfrastructureRead" })
        .find((r) => r.notes.some((n) => n.detail?.startsWith(marker)));
      expect(seen).toBeDefined();
      return seen;
    });
    expect(record?.error).toBeUndefined();
    await eventually(async () => {
      const mp = await getMachinePool(client, name);
      expect(Number(mp.metadata?.resourceVersion)).toBeGreaterThan(0);
      const detail = record?.notes.find((n) => n.detail?.startsWith(marker))?.detail ?? "";
      expect(mp.status?.initialization?.infrastructureProvisioned).toBe(
        detail.endsWith("infrastructureProvisioned=true"),
      );
    });
    return (
      (await getMachinePool(client, name)).status?.initialization?.infrastructureProvisioned ===
      true
    );
  }

  it("initialization.provisioned=false wins over ready=true only with the PR's rule", async () => {
    await client.create(TestMachinePools, testMachinePool("disagree"));
    await client.create(MachinePools, machinePool("disagree"));
    const provisioned = await provisionedAfter("disagree", {
      ready: true,
      initialization: { provisioned: false },
    });
    expect(provisioned).toBe(mode === "ready");
  });

  it("initialization.provisioned=true without ready counts only with the PR's rule", async () => {
    await client.create(TestMachinePools, testMachinePool("new-field"));
    await client.create(MachinePools, machinePool("new-field"));
    const provisioned = await provisionedAfter("new-field", {
      initialization: { provisioned: true },
    });
    expect(provisioned).toBe(mode === "initialization");
  });

  it("ready=true alone counts in both (the PR falls back when the new field is absent)", async () => {
    await client.create(TestMachinePools, testMachinePool("old-field"));
    await client.create(MachinePools, machinePool("old-field"));
    expect(await provisionedAfter("old-field", { ready: true })).toBe(true);
  });

  it("after provisioning, a reported false reverts the MachinePool only at HEAD; the PR keeps it and keeps copying", async () => {
    await client.create(TestMachinePools, testMachinePool("sticky"));
    await client.create(MachinePools, machinePool("sticky", { replicas: 1 }));
    await setProviderIDs(client, "sticky", ["test:///s-1"]);
    expect(
      await provisionedAfter("sticky", {
        ready: true,
        initialization: { provisioned: true },
        replicas: 1,
      }),
    ).toBe(true);
    const stillProvisioned = await provisionedAfter("sticky", {
      ready: false,
      initialization: { provisioned: false },
    });
    expect(stillProvisioned).toBe(mode === "initialization");
    await setProviderIDs(client, "sticky", ["test:///s-2"]);
    await sleep(300);
    const list = (await getMachinePool(client, "sticky")).spec?.providerIDList;
    expect(list).toEqual(mode === "initialization" ? ["test:///s-2"] : ["test:///s-1"]);
  });
});

describe("bootstrap config, token rotation, deletion ordering", () => {
  let api: Backend;
  let client: KubeClient;
  let core: CapiCore;
  beforeAll(async () => {
    ({ api, client } = await startCapiApiServer());
    await createReadyCluster(client, api, "c1");
    core = await startCore(api);
  });
  afterAll(async () => {
    await core.stop();
    await api.stop();
  });

  async function poolWithConfig(name: string, replicas = 2): Promise<void> {
    await client.create(KubeadmConfigs, {
      apiVersion: "bootstrap.cluster.x-k8s.io/v1beta2",
      kind: "KubeadmConfig",
      metadata: { name: `${name}-config`, namespace: ns },
      spec: { format: "cloud-config" },
    });
    await client.create(
      TestMachinePools,
      testMachinePool(name, { finalizers: [PROVIDER_FINALIZER] }),
    );
    await client.create(MachinePools, machinePool(name, { replicas, configRef: `${name}-config` }));
  }

  it("the stand-in serves the KubeadmConfig; core adopts it and copies dataSecretName", async () => {
    await poolWithConfig("boot");
    const mp = await eventually(async () => {
      const got = await getMachinePool(client, "boot");
      expect(got.status?.initialization?.bootstrapDataSecretCreated).toBe(true);
      return got;
    });
    expect(mp.spec?.template?.spec?.bootstrap?.dataSecretName).toBe("boot-config");
    const config = await client.get(KubeadmConfigs, { namespace: ns, name: "boot-config" });
    expect(config.status).toMatchObject({
      dataSecretName: "boot-config",
      initialization: { dataSecretCreated: true },
    });
    expect(config.metadata?.ownerReferences?.map((r) => [r.kind, r.name, r.controller])).toEqual([
      ["MachinePool", "boot", true],
    ]);
    expect(config.metadata?.labels?.["cluster.x-k8s.io/cluster-name"]).toBe("c1");
    const secret = await client.get(SecretResource, { namespace: ns, name: "boot-config" });
    expect(secret.type).toBe("cluster.x-k8s.io/secret");
    expect(secret.metadata?.ownerReferences?.[0]).toMatchObject({
      kind: "KubeadmConfig",
      name: "boot-config",
    });
  });

  it("rotateToken rewrites the same Secret with a new token and revokes the old one", async () => {
    const key = { namespace: ns, name: "boot" };
    const before = core.bootstrap?.tokenOf(key) as string;
    expect(before).toMatch(/^[a-z0-9]{6}\.[a-z0-9]{16}$/);
    const oldId = before.split(".")[0];
    await client.get(SecretResource, {
      namespace: "kube-system",
      name: `bootstrap-token-${oldId}`,
    });

    const after = (await core.bootstrap?.rotateToken(key)) as string;
    expect(after).not.toBe(before);
    const secret = await client.get(SecretResource, { namespace: ns, name: "boot-config" });
    const value = Buffer.from(secret.data?.value ?? "", "base64").toString();
    expect(value).toContain(`token: ${after}`);
    expect(value).not.toContain(before);
    expect(core.bootstrap?.isTokenValid(value)).toBe(true);
    expect(core.bootstrap?.isTokenValid(before)).toBe(false);
    await expect(
      client.get(SecretResource, { namespace: "kube-system", name: `bootstrap-token-${oldId}` }),
    ).rejects.toThrow(/not found/i);
    await client.get(SecretResource, {
      namespace: "kube-system",
      name: `bootstrap-token-${after.split(".")[0]}`,
    });
    // The MachinePool keeps pointing at the same Secret: only the content changed.
    expect(
      (await getMachinePool(client, "boot")).spec?.template?.spec?.bootstrap?.dataSecretName,
    ).toBe("boot-config");
    expect(
      core.writes({ actor: "bootstrap", name: "boot-config", verb: "patch" }).map((w) => w.reason),
    ).toContain("rotate the bootstrap token (same Secret name, new content)");
  });

  it("deletes in core's order: referenced objects, wait until gone, retired Nodes, then the finalizer", async () => {
    await poolWithConfig("del");
    await createNode(client, node("del-a", "test:///del-a"));
    await createNode(client, node("del-b", "test:///del-b"));
    await createNode(client, node("del-stale", "test:///del-stale"));
    await adopted(client, "del");
    await setProviderIDs(client, "del", ["test:///del-a", "test:///del-b"]);
    await setPoolStatus(client, "del", { ready: true, replicas: 2 });
    await eventually(async () => {
      expect((await getMachinePool(client, "del")).status?.phase).toBe("Running");
    });

    // A Node reference core has not re-computed yet when deletion starts: stop core, add it, delete.
    await core.stop();
    const mp = await getMachinePool(client, "del");
    await client.mergePatchStatus(
      MachinePools,
      { namespace: ns, name: "del" },
      {
        status: {
          nodeRefs: [
            ...(mp.status?.nodeRefs ?? []),
            {
              apiVersion: "v1",
              kind: "Node",
              name: "del-stale",
              uid: (await client.get(NodeResource, { name: "del-stale" })).metadata?.uid,
            },
          ],
        },
      },
    );
    await client.delete(MachinePools, { namespace: ns, name: "del" });
    core = await startCore(api);

    // Step 1: core deletes the InfraMachinePool and the bootstrap config, and waits.
    await eventually(async () => {
      const imp = await client.get(TestMachinePools, { namespace: ns, name: "del" });
      expect(imp.metadata?.deletionTimestamp).toBeDefined();
      await expect(
        client.get(KubeadmConfigs, { namespace: ns, name: "del-config" }),
      ).rejects.toThrow(/not found/i);
    });
    await sleep(300);
    const waiting = await getMachinePool(client, "del");
    expect(waiting.metadata?.finalizers).toContain("machinepool.cluster.x-k8s.io");
    expect(waiting.status?.phase).toBe("Deleting");
    await client.get(NodeResource, { name: "del-stale" }); // not yet
    expect(
      core.reconciles({ machinePool: `${ns}/del`, event: "WaitingForExternalDeletion" }).length,
    ).toBeGreaterThan(0);

    // Step 2: the provider finishes and drops its finalizer.
    await client.mergePatch(
      TestMachinePools,
      { namespace: ns, name: "del" },
      { metadata: { finalizers: null } },
    );
    await eventually(async () => {
      await expect(getMachinePool(client, "del")).rejects.toThrow(/not found/i);
    });
    await expect(client.get(NodeResource, { name: "del-stale" })).rejects.toThrow(/not found/i);
    // Nodes still in the frozen providerIDList are left alone.
    await client.get(NodeResource, { name: "del-a" });
    await client.get(NodeResource, { name: "del-b" });

    const writes = core.writes({ machinePool: `${ns}/del`, succeeded: true });
    const firstImpDelete = writes.findIndex(
      (w) => w.verb === "delete" && w.kind === "TestMachinePool",
    );
    const nodeDelete = writes.findIndex((w) => w.verb === "delete" && w.kind === "Node");
    const finalizerRemoved = writes.findIndex(
      (w) => w.reason === "remove finalizer machinepool.cluster.x-k8s.io",
    );
    expect(firstImpDelete).toBeGreaterThanOrEqual(0);
    expect(writes.some((w) => w.verb === "delete" && w.kind === "KubeadmConfig")).toBe(true);
    expect(nodeDelete).toBeGreaterThan(firstImpDelete);
    expect(finalizerRemoved).toBeGreaterThan(nodeDelete);
    expect(writes[nodeDelete]?.name).toBe("del-stale");
  });

  it("needs the contract label on a referenced CRD, as core does (R4)", async () => {
    // The shipped CAPI CRDs are all labelled: an unlabelled copy of the test kind under another name.
    const crd = testMachinePoolCrd(false) as {
      metadata: { name: string };
      spec: { names: Record<string, string> };
    };
    crd.metadata.name = "unlabelledmachinepools.infrastructure.cluster.x-k8s.io";
    crd.spec.names = {
      plural: "unlabelledmachinepools",
      singular: "unlabelledmachinepool",
      kind: "UnlabelledMachinePool",
      listKind: "UnlabelledMachinePoolList",
    };
    await api.installCRDs([crd]);
    const devMachinePool: MachinePoolObject = {
      apiVersion: "cluster.x-k8s.io/v1beta2",
      kind: "MachinePool",
      metadata: { name: "unlabelled", namespace: ns },
      spec: {
        clusterName: "c1",
        replicas: 1,
        template: {
          spec: {
            clusterName: "c1",
            bootstrap: { dataSecretName: "anything" },
            infrastructureRef: {
              apiGroup: "infrastructure.cluster.x-k8s.io",
              kind: "UnlabelledMachinePool",
              name: "unlabelled",
            },
          },
        },
      },
    };
    await client.create(MachinePools, devMachinePool);
    const failure = await eventually(() => {
      const failed = core.reconciles({ machinePool: `${ns}/unlabelled`, failed: true });
      expect(failed.length).toBeGreaterThan(0);
      return failed[0];
    });
    expect(failure?.error?.message).toContain(
      "cannot find any versions matching contract versions",
    );
    expect(failure?.error?.message).toContain(
      "unlabelledmachinepools.infrastructure.cluster.x-k8s.io",
    );
  });
});
