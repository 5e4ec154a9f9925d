// Core's Machine controller for MachinePool Machines (contract R11) in the emulator: what a provider
// that creates one InfraMachine per instance sees core do with it, and the order of the deletion.
import type { KubeClient } from "@capi-ts/sdk/runtime";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { type CapiCore, type CoreWrite, markWorkloadClusterReady } from "../../src/index.js";
import { type Backend, onReal } from "../support/backend.js";
import {
  Clusters,
  cluster,
  createNode,
  createReadyCluster,
  eventually,
  getMachinePool,
  MachinePools,
  Machines,
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
  TestMachines,
  testMachinePool,
} from "./support.js";

vi.setConfig({ testTimeout: onReal ? 90_000 : 30_000, hookTimeout: onReal ? 180_000 : 30_000 });
let api: Backend;
let client: KubeClient;
let core: CapiCore;
let seq = 0;

const HOLD = "test.example.com/hold";

type Condition = { type: string; status: string; reason?: string; message?: string };
const conditionsOf = (obj: Obj | undefined): Condition[] =>
  ((obj?.status as { conditions?: Condition[] } | undefined)?.conditions ?? []) as Condition[];
const condition = (obj: Obj | undefined, type: string) =>
  conditionsOf(obj).find((c) => c.type === type);

/** A control plane Machine of the cluster: core drains and deletes a Node only while one exists. */
async function controlPlaneMachine(clusterName: string): Promise<void> {
  await client.create(Machines, {
    apiVersion: "cluster.x-k8s.io/v1beta2",
    kind: "Machine",
    metadata: {
      name: `${clusterName}-cp-0`,
      namespace: ns,
      labels: {
        "cluster.x-k8s.io/cluster-name": clusterName,
        "cluster.x-k8s.io/control-plane": "",
      },
    },
    spec: {
      clusterName,
      bootstrap: { dataSecretName: "cp-data" },
      infrastructureRef: {
        apiGroup: "infrastructure.cluster.x-k8s.io",
        kind: "TestMachine",
        name: `${clusterName}-cp-0`,
      },
    },
  });
}

beforeAll(async () => {
  ({ api, client } = await startCapiApiServer());
  await createReadyCluster(client, api, "c1");
  await controlPlaneMachine("c1");
  core = await startCore(api, { machines: { drainRetryIntervalMs: 200 } });
});
afterAll(async () => {
  await core?.stop();
  await api?.stop();
});
afterEach(() => {
  core.clearWrites();
  core.clearReconciles();
});

/**
 * A pool whose InfraMachinePool names the InfraMachine kind, and one InfraMachine the way a provider
 * kit creates it: labelled for the pool, owned (not controlled) by the InfraMachinePool, with its
 * providerID and provisioned, held by the provider's finalizer; plus its Node.
 */
async function poolWithInstance(
  clusterName = "c1",
): Promise<{ pool: string; im: string; nodeName: string; providerID: string }> {
  const pool = `mm-${++seq}`;
  const im = `${pool}-0`;
  const providerID = `test:///${im}`;
  const imp = await client.create(TestMachinePools, testMachinePool(pool));
  await client.create(
    MachinePools,
    machinePool(pool, { clusterName, replicas: 1, dataSecretName: "data" }),
  );
  await client.create(TestMachines, {
    apiVersion: "infrastructure.cluster.x-k8s.io/v1beta2",
    kind: "TestMachine",
    metadata: {
      name: im,
      namespace: ns,
      labels: { "cluster.x-k8s.io/pool-name": pool, "cluster.x-k8s.io/cluster-name": clusterName },
      finalizers: [HOLD],
      ownerReferences: [
        {
          apiVersion: "infrastructure.cluster.x-k8s.io/v1beta2",
          kind: "TestMachinePool",
          name: pool,
          uid: imp.metadata?.uid ?? "",
        },
      ],
    },
    spec: { providerID },
  });
  await client.mergePatchStatus(
    TestMachines,
    { namespace: ns, name: im },
    { status: { initialization: { provisioned: true } } },
  );
  await createNode(client, node(im, providerID));
  await setProviderIDs(client, pool, [providerID]);
  await setPoolStatus(client, pool, {
    ready: true,
    replicas: 1,
    infrastructureMachineKind: "TestMachine",
  });
  return { pool, im, nodeName: im, providerID };
}

const getMachine = (name: string) =>
  client.get(Machines, { namespace: ns, name }).catch(() => undefined);
const getIM = (name: string) =>
  client.get(TestMachines, { namespace: ns, name }).catch(() => undefined);
const getNode = (name: string) => client.get(NodeResource, { name }).catch(() => undefined);

async function waitForRunning(im: string): Promise<Obj> {
  return eventually(async () => {
    const m = await getMachine(im);
    expect(condition(m, "Available")?.status).toBe("True");
    expect(m?.status?.phase).toBe("Running");
    return m as Obj;
  }, 20_000);
}

async function releaseIM(name: string): Promise<void> {
  await client.mergePatch(
    TestMachines,
    { namespace: ns, name },
    { metadata: { finalizers: null } },
  );
}

describe("core's Machine controller on MachinePool Machines (R11)", () => {
  it("takes the InfraMachine over, copies providerID, sets nodeRef, Ready and Available, and the pool counts it", async () => {
    const { pool, im, nodeName, providerID } = await poolWithInstance();
    await waitForRunning(im);
    // UpToDate is the MachinePool controller's, not the Machine controller's: it may come later.
    const machine = await eventually(async () => {
      const m = await getMachine(im);
      expect(condition(m, "UpToDate")?.status).toBe("True");
      return m as Obj;
    }, 20_000);
    const imp = await client.get(TestMachinePools, { namespace: ns, name: pool });

    expect(machine.metadata?.finalizers).toEqual(["machine.cluster.x-k8s.io"]);
    expect(machine.spec).toMatchObject({ providerID, bootstrap: { dataSecretName: "" } });
    expect(machine.status).toMatchObject({
      nodeRef: { name: nodeName },
      initialization: { infrastructureProvisioned: true },
      nodeInfo: { kubeletVersion: "v1.34.1" },
    });
    // A MachinePool Machine has no bootstrap config: core never sets bootstrapDataSecretCreated.
    expect(
      (machine.status?.initialization as Record<string, unknown> | undefined)
        ?.bootstrapDataSecretCreated,
    ).toBeUndefined();
    for (const [type, reason] of [
      ["BootstrapConfigReady", "DataSecretProvided"],
      ["InfrastructureReady", "Ready"],
      ["NodeReady", "NodeReady"],
      ["NodeHealthy", "NodeHealthy"],
      ["Ready", "Ready"],
      ["Available", "Available"],
      ["UpToDate", "UpToDate"],
    ]) {
      expect(condition(machine, type as string), type).toMatchObject({ status: "True", reason });
    }
    expect(condition(machine, "Deleting")).toMatchObject({
      status: "False",
      reason: "NotDeleting",
    });

    // The InfraMachine: the Machine is its controller; the InfraMachinePool's reference stays.
    const infra = (await getIM(im)) as Obj;
    expect(infra.metadata?.ownerReferences).toEqual([
      {
        apiVersion: "infrastructure.cluster.x-k8s.io/v1beta2",
        kind: "TestMachinePool",
        name: pool,
        uid: imp.metadata?.uid,
      },
      {
        apiVersion: "cluster.x-k8s.io/v1beta2",
        kind: "Machine",
        name: im,
        uid: machine.metadata?.uid,
        controller: true,
        blockOwnerDeletion: true,
      },
    ]);
    expect(infra.metadata?.labels?.["cluster.x-k8s.io/cluster-name"]).toBe("c1");

    // The Node carries the Machine's bookkeeping annotations.
    const n = await getNode(nodeName);
    expect(n?.metadata?.annotations).toMatchObject({
      "cluster.x-k8s.io/machine": im,
      "cluster.x-k8s.io/owner-kind": "MachinePool",
      "cluster.x-k8s.io/owner-name": pool,
      "cluster.x-k8s.io/labels-from-machine": "",
      "cluster.x-k8s.io/annotations-from-machine": "",
    });

    // Core's MachinePool controller does not watch Machines: it counts them at its next reconcile
    // (an InfraMachine, Node or InfraMachinePool change, or the resync). Give it one.
    await client.mergePatch(
      MachinePools,
      { namespace: ns, name: pool },
      { metadata: { annotations: { "test.example.com/nudge": "1" } } },
    );
    await eventually(async () => {
      const mp = await getMachinePool(client, pool);
      expect(mp.status?.readyReplicas).toBe(1);
      expect(mp.status?.availableReplicas).toBe(1);
      expect(mp.status?.upToDateReplicas).toBe(1);
    });
    expect(core.reconciles({ actor: "machine", machine: `${ns}/${im}`, failed: true })).toEqual([]);

    // Steady state: another reconcile finds nothing to write.
    await sleep(300);
    core.clearWrites();
    await client.mergePatch(
      Machines,
      { namespace: ns, name: im },
      { metadata: { annotations: { "test.example.com/touch": "1" } } },
    );
    await sleep(500);
    expect(core.writes({ actor: "machine", machine: `${ns}/${im}` })).toEqual([]);
    await releaseIM(im);
  });

  it("deletes in core's order: cordon and drain, delete the InfraMachine, wait until it is gone, delete the Node, remove the finalizer", async () => {
    const { im, nodeName } = await poolWithInstance();
    await waitForRunning(im);
    core.clearWrites();

    // The provider kit scales down by deleting the Machine.
    await client.delete(Machines, { namespace: ns, name: im });
    // Core drains, then asks for the InfraMachine's deletion; the provider's finalizer holds it.
    const held = await eventually(async () => {
      const obj = await getIM(im);
      expect(obj?.metadata?.deletionTimestamp).toBeTruthy();
      return obj as Obj;
    });
    expect(held.metadata?.finalizers).toEqual([HOLD]);
    expect((await getNode(nodeName))?.spec?.unschedulable).toBe(true);
    // Core's patch helper writes the conditions first and the rest of the status (the phase) in a
    // second request, so a reader can see the one without the other for a moment: wait for both.
    const waiting = await eventually(async () => {
      const m = await getMachine(im);
      expect(condition(m, "Deleting")).toMatchObject({
        status: "True",
        reason: "WaitingForInfrastructureDeletion",
        message: "Waiting for TestMachine to be deleted",
      });
      expect(m?.status?.phase).toBe("Deleting");
      return m as Obj;
    });
    expect(condition(waiting, "Ready")).toMatchObject({
      status: "False",
      reason: "NotReady",
      message: "* Deleting: Machine deletion in progress, stage: WaitingForInfrastructureDeletion",
    });
    expect(waiting.status?.deletion).toMatchObject({
      nodeDrainStartTime: expect.any(String),
      waitForNodeVolumeDetachStartTime: expect.any(String),
    });
    // Nothing else happens while the InfraMachine exists: the Node stays, and so does the Machine.
    expect(await getNode(nodeName)).toBeDefined();

    await releaseIM(im);
    await eventually(async () => {
      expect(await getMachine(im)).toBeUndefined();
      expect(await getNode(nodeName)).toBeUndefined();
    });

    const writes = core.writes({ actor: "machine", machine: `${ns}/${im}`, succeeded: true });
    const index = (predicate: (w: CoreWrite) => boolean, what: string) => {
      const found = writes.find(predicate);
      expect(found, what).toBeDefined();
      return (found as CoreWrite).seq;
    };
    const cordon = index(
      (w) => w.kind === "Node" && w.verb === "patch" && /cordon/.test(w.reason),
      "the cordon",
    );
    const imDelete = index((w) => w.kind === "TestMachine" && w.verb === "delete", "IM delete");
    const nodeDelete = index((w) => w.kind === "Node" && w.verb === "delete", "Node delete");
    const finalizer = index(
      (w) => w.kind === "Machine" && /remove finalizer/.test(w.reason),
      "finalizer removal",
    );
    expect(cordon).toBeLessThan(imDelete);
    expect(imDelete).toBeLessThan(nodeDelete);
    expect(nodeDelete).toBeLessThan(finalizer);
    // The InfraMachine is deleted once, however often core looks while it waits.
    expect(writes.filter((w) => w.kind === "TestMachine" && w.verb === "delete")).toHaveLength(1);
    const events = core
      .reconciles({ actor: "machine", machine: `${ns}/${im}` })
      .flatMap((r) => r.notes.map((n) => n.event));
    expect(events).toEqual(
      expect.arrayContaining([
        "NodeCordoned",
        "DrainCompleted",
        "InfraMachineDeleted",
        "WaitingForInfrastructureDeletion",
        "NodeDeleted",
        "FinalizerRemoved",
      ]),
    );
  });

  it("neither drains nor deletes the Node of a cluster without control plane Machines, as core", async () => {
    await client.create(Clusters, cluster("c2"));
    await markWorkloadClusterReady(client, { namespace: ns, name: "c2" }, api.kubeConfig);
    const { im, nodeName } = await poolWithInstance("c2");
    await waitForRunning(im);
    await client.delete(Machines, { namespace: ns, name: im });
    await eventually(async () =>
      expect((await getIM(im))?.metadata?.deletionTimestamp).toBeTruthy(),
    );
    await releaseIM(im);
    await eventually(async () => expect(await getMachine(im)).toBeUndefined());
    const n = await getNode(nodeName);
    expect(n).toBeDefined();
    expect(n?.spec?.unschedulable).toBeUndefined();
    expect(
      core
        .reconciles({ actor: "machine", machine: `${ns}/${im}`, event: "NodeDeletionNotAllowed" })
        .flatMap((r) => r.notes.filter((x) => x.event === "NodeDeletionNotAllowed"))[0]?.detail,
    ).toBe("no control plane members");
    await client.delete(NodeResource, { name: nodeName });
  });

  it("keeps retrying the drain while the workload cluster is unreachable, and goes on once it is back", async () => {
    const { im, nodeName } = await poolWithInstance();
    await waitForRunning(im);
    const secretKey = { namespace: ns, name: "c1-kubeconfig" };
    const secret = await client.get(SecretResource, secretKey);
    await client.delete(SecretResource, secretKey);
    await client.delete(Machines, { namespace: ns, name: im });
    const failed = await eventually(async () => {
      const records = core.reconciles({ actor: "machine", machine: `${ns}/${im}`, failed: true });
      const drain = records.find((r) => /failed to drain Node/.test(r.error?.message ?? ""));
      expect(drain).toBeDefined();
      return drain;
    });
    expect(failed?.error?.message).toContain("connection to the workload cluster is down");
    const m = await getMachine(im);
    expect(condition(m, "Deleting")).toMatchObject({ status: "True", reason: "DrainingNode" });
    // The InfraMachine is not touched while the drain cannot run.
    expect((await getIM(im))?.metadata?.deletionTimestamp).toBeFalsy();

    await client.create(SecretResource, {
      ...secret,
      metadata: {
        name: secret.metadata?.name ?? "",
        namespace: ns,
        labels: secret.metadata?.labels ?? {},
      },
    });
    await eventually(async () => {
      expect((await getIM(im))?.metadata?.deletionTimestamp).toBeTruthy();
      expect((await getNode(nodeName))?.spec?.unschedulable).toBe(true);
    }, 20_000);
    await releaseIM(im);
    await eventually(async () => {
      expect(await getMachine(im)).toBeUndefined();
      expect(await getNode(nodeName)).toBeUndefined();
    }, 20_000);
  });
});
