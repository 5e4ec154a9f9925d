import type { KubeClient } from "@capi-ts/sdk/runtime";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import type { CapiCore } from "../../src/index.js";
import { type Backend, onReal } from "../support/backend.js";
import {
  createNode,
  createReadyCluster,
  eventually,
  getMachinePool,
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
} from "./support.js";

// A real kube-apiserver + etcd (CAPI_TS_BACKEND=real) takes seconds to start and is slower to converge.
vi.setConfig({ testTimeout: onReal ? 60_000 : 20_000, hookTimeout: onReal ? 180_000 : 30_000 });
let api: Backend;
let client: KubeClient;
let core: CapiCore;
let seq = 0;

beforeAll(async () => {
  ({ api, client } = await startCapiApiServer());
  await createReadyCluster(client, api, "c1");
  core = await startCore(api);
});
afterAll(async () => {
  await core.stop();
  await api.stop();
});
afterEach(() => {
  core.clearWrites();
  core.clearReconciles();
});

/** A fresh MachinePool + TestMachinePool pair per test. */
async function pool(options: Parameters<typeof machinePool>[1] = {}): Promise<string> {
  const name = `mp-${++seq}`;
  await client.create(TestMachinePools, testMachinePool(name));
  await client.create(MachinePools, machinePool(name, options));
  return name;
}

async function waitForAdoption(name: string): Promise<Obj> {
  return eventually(async () => {
    const imp = await client.get(TestMachinePools, { namespace: ns, name });
    expect(imp.metadata?.ownerReferences?.some((r) => r.kind === "MachinePool")).toBe(true);
    return imp;
  });
}

describe("core's MachinePool controller on an InfraMachinePool", () => {
  it("adopts the InfraMachinePool: controller owner reference and cluster-name label, metadata only", async () => {
    const name = await pool();
    const imp = await waitForAdoption(name);
    // The MachinePool's own metadata is patched at the end of the same reconcile.
    const mp = await eventually(async () => {
      const got = await getMachinePool(client, name);
      expect(got.metadata?.ownerReferences).toHaveLength(1);
      return got;
    });
    expect(imp.metadata?.ownerReferences).toEqual([
      {
        apiVersion: "cluster.x-k8s.io/v1beta2",
        kind: "MachinePool",
        name,
        uid: mp.metadata?.uid,
        controller: true,
        blockOwnerDeletion: true,
      },
    ]);
    expect(imp.metadata?.labels?.["cluster.x-k8s.io/cluster-name"]).toBe("c1");
    // The MachinePool itself: finalizer, cluster-name label, non-controller owner ref to the Cluster.
    expect(mp.metadata?.finalizers).toContain("machinepool.cluster.x-k8s.io");
    expect(mp.metadata?.labels?.["cluster.x-k8s.io/cluster-name"]).toBe("c1");
    expect(mp.metadata?.ownerReferences?.map((r) => [r.kind, r.name, r.controller])).toEqual([
      ["Cluster", "c1", undefined],
    ]);
    // Exactly one write to the InfraMachinePool, to the main resource (never spec or status).
    const impWrites = core.writes({ kind: "TestMachinePool" });
    expect(impWrites).toHaveLength(1);
    expect(impWrites[0]?.subresource).toBeUndefined();
    expect(Object.keys(impWrites[0]?.body as object)).toEqual(["metadata"]);
    expect(impWrites[0]?.machinePool).toBe(`${ns}/${name}`);
  });

  it("defaults replicas like the webhook, and the bootstrap stand-in supplies data", async () => {
    const name = await pool();
    const mp = await eventually(async () => {
      const got = await getMachinePool(client, name);
      expect(got.spec?.template?.spec?.bootstrap?.dataSecretName).toBe(`${name}-bootstrap`);
      expect(got.status?.initialization?.bootstrapDataSecretCreated).toBe(true);
      return got;
    });
    expect(mp.spec?.replicas).toBe(1);
    expect(mp.spec?.template?.spec?.deletion?.nodeDeletionTimeoutSeconds).toBe(10);
    const secret = await client.get(SecretResource, { namespace: ns, name: `${name}-bootstrap` });
    const value = Buffer.from(secret.data?.value ?? "", "base64").toString();
    expect(value.startsWith("#cloud-config\n")).toBe(true);
    expect(value).toMatch(/^token: [a-z0-9]{6}\.[a-z0-9]{16}$/m);
    expect(Buffer.from(secret.data?.format ?? "", "base64").toString()).toBe("cloud-config");
    expect(core.bootstrap?.isTokenValid(value)).toBe(true);
    const defaulting = core.writes({ machinePool: `${ns}/${name}`, reason: /defaulting webhook/ });
    expect(defaulting).toHaveLength(1);
    expect(defaulting[0]?.body).toMatchObject({ spec: { replicas: 1 } });
    // Waiting for the stand-in's data is not an error (the webhook would have rejected such a pool).
    expect(core.reconciles({ machinePool: `${ns}/${name}`, failed: true })).toEqual([]);
  });

  it("fails with 'already owned' when the InfraMachinePool has another controller (R22)", async () => {
    const name = `mp-${++seq}`;
    await client.create(
      TestMachinePools,
      testMachinePool(name, {
        ownerReferences: [
          {
            apiVersion: "example.com/v1",
            kind: "Owner",
            name: "other",
            uid: "u-other",
            controller: true,
          },
        ],
      }),
    );
    await client.create(MachinePools, machinePool(name));
    const failure = await eventually(() => {
      const failed = core.reconciles({ machinePool: `${ns}/${name}`, failed: true });
      expect(failed.length).toBeGreaterThan(0);
      return failed[0];
    });
    expect(failure?.error?.message).toContain(
      `Object ${ns}/${name} is already owned by another Owner controller other`,
    );
    const imp = await client.get(TestMachinePools, { namespace: ns, name });
    expect(imp.metadata?.ownerReferences).toHaveLength(1);
    expect(core.writes({ kind: "TestMachinePool", name })).toEqual([]);
  });

  it("copies nothing while the InfraMachinePool is not ready", async () => {
    const name = await pool({ replicas: 2 });
    await waitForAdoption(name);
    await setProviderIDs(client, name, ["test:///a", "test:///b"]);
    await setPoolStatus(client, name, { replicas: 2, ready: false });
    await eventually(() => {
      expect(
        core.reconciles({ machinePool: `${ns}/${name}`, event: "InfrastructureNotProvisioned" })
          .length,
      ).toBeGreaterThan(0);
    });
    await sleep(100);
    const mp = await getMachinePool(client, name);
    expect(mp.spec?.providerIDList).toBeUndefined();
    expect(mp.status?.replicas).toBeUndefined();
    expect(mp.status?.initialization?.infrastructureProvisioned).toBe(false);
    expect(mp.status?.phase).toBe("Provisioning");
    expect(
      mp.status?.deprecated?.v1beta1?.conditions?.find(
        (c: { type: string }) => c.type === "InfrastructureReady",
      ),
    ).toMatchObject({ status: "False", reason: "WaitingForInfrastructure", severity: "Info" });
    expect(
      core
        .writes({ kind: "MachinePool", name })
        .some((w) => JSON.stringify(w.body).includes("providerIDList")),
    ).toBe(false);
  });

  it("copies providerIDList and replicas once ready, and re-computes provisioned every reconcile (G3)", async () => {
    const name = await pool({ replicas: 2 });
    await waitForAdoption(name);
    await setProviderIDs(client, name, ["test:///a", "test:///b"]);
    await setPoolStatus(client, name, { replicas: 2, ready: true });
    const mp = await eventually(async () => {
      const got = await getMachinePool(client, name);
      expect(got.spec?.providerIDList).toEqual(["test:///a", "test:///b"]);
      expect(got.status?.replicas).toBe(2);
      return got;
    });
    expect(mp.status?.readyReplicas).toBe(2);
    expect(mp.status?.initialization?.infrastructureProvisioned).toBe(true);
    expect(mp.status?.phase).toBe("ScalingUp"); // no Nodes yet: node-derived ready count is 0
    // The v1beta1 mirror (G5): no Ready condition on the pool, so the fallback True.
    expect(
      mp.status?.deprecated?.v1beta1?.conditions?.find(
        (c: { type: string }) => c.type === "InfrastructureReady",
      )?.status,
    ).toBe("True");
    // At HEAD a later ready=false flips the MachinePool back and stops propagation.
    await setPoolStatus(client, name, { ready: false, replicas: 1 });
    await setProviderIDs(client, name, ["test:///a"]);
    const reverted = await eventually(async () => {
      const got = await getMachinePool(client, name);
      expect(got.status?.initialization?.infrastructureProvisioned).toBe(false);
      return got;
    });
    expect(reverted.spec?.providerIDList).toEqual(["test:///a", "test:///b"]);
    expect(
      core.reconciles({ machinePool: `${ns}/${name}`, event: "InfrastructureProvisionedReverted" })
        .length,
    ).toBe(1);
  });

  it("an empty providerIDList with replicas > 0 is not copied; with replicas 0 it is", async () => {
    const name = await pool({ replicas: 2 });
    await waitForAdoption(name);
    await setProviderIDs(client, name, ["test:///a", "test:///b"]);
    await setPoolStatus(client, name, { replicas: 2, ready: true });
    await eventually(async () => {
      expect((await getMachinePool(client, name)).spec?.providerIDList).toHaveLength(2);
    });
    await setProviderIDs(client, name, []);
    await eventually(() => {
      expect(
        core.reconciles({ machinePool: `${ns}/${name}`, event: "EmptyProviderIDListIgnored" })
          .length,
      ).toBeGreaterThan(0);
    });
    expect((await getMachinePool(client, name)).spec?.providerIDList).toEqual([
      "test:///a",
      "test:///b",
    ]);
    await setPoolStatus(client, name, { replicas: 0 });
    await eventually(async () => {
      const got = await getMachinePool(client, name);
      expect(got.spec?.providerIDList).toBeUndefined();
      expect(got.status?.replicas).toBe(0);
    });
  });

  it("an unsorted providerIDList churns: every reorder is copied and resets the deprecated counters", async () => {
    const name = await pool({ replicas: 3 });
    const ids = ["test:///churn-a", "test:///churn-b", "test:///churn-c"];
    for (const [i, id] of ids.entries()) await createNode(client, node(`churn-${name}-${i}`, id));
    await waitForAdoption(name);
    await setProviderIDs(client, name, ids);
    await setPoolStatus(client, name, { replicas: 3, ready: true });
    await eventually(async () => {
      const got = await getMachinePool(client, name);
      expect(got.status?.phase).toBe("Running");
      expect(got.status?.deprecated?.v1beta1?.readyReplicas).toBe(3);
    });
    core.clearWrites();
    core.clearReconciles();
    // Same set, different order, as a provider listing instances from an unordered cloud API would write.
    await setProviderIDs(client, name, [ids[2] as string, ids[0] as string, ids[1] as string]);
    await eventually(() => {
      expect(
        core.reconciles({ machinePool: `${ns}/${name}`, event: "DeprecatedCountersReset" }),
      ).toHaveLength(1);
    });
    const specWrites = core
      .writes({ kind: "MachinePool", name, subresource: "main" })
      .filter((w) => JSON.stringify(w.body).includes("providerIDList"));
    expect(specWrites).toHaveLength(1);
    const mp = await eventually(async () => {
      const got = await getMachinePool(client, name);
      expect(got.status?.nodeRefs?.[0]?.name).toBe(`churn-${name}-2`);
      return got;
    });
    expect(mp.status?.deprecated?.v1beta1?.readyReplicas).toBe(3); // restored from Nodes in the same reconcile
    // The spec write bumped the generation: one more reconcile records it in status.observedGeneration.
    await eventually(async () => {
      const got = await getMachinePool(client, name);
      expect(got.status?.observedGeneration).toBe(got.metadata?.generation);
    });
    await sleep(100);
    // A sorted, stable list: the same content again causes no MachinePool write at all.
    core.clearWrites();
    await setProviderIDs(client, name, [ids[2] as string, ids[0] as string, ids[1] as string]);
    await setPoolStatus(client, name, { replicas: 3 });
    await sleep(300);
    expect(core.writes({ kind: "MachinePool", name })).toEqual([]);
  });

  it("references Nodes by providerID, removes the uninitialized taint, deletes retired Nodes", async () => {
    const name = await pool({ replicas: 3 });
    const ids = ["test:///n-a", "test:///n-b", "test:///n-c"];
    for (const [i, id] of ids.entries()) await createNode(client, node(`${name}-node-${i}`, id));
    await createNode(client, node(`${name}-stranger`, "test:///stranger"));
    await waitForAdoption(name);
    await setProviderIDs(client, name, ids);
    await setPoolStatus(client, name, { replicas: 3, ready: true });
    const mp = await eventually(async () => {
      const got = await getMachinePool(client, name);
      expect(got.status?.phase).toBe("Running");
      return got;
    });
    expect(mp.status?.nodeRefs?.map((r) => r.name)).toEqual([
      `${name}-node-0`,
      `${name}-node-1`,
      `${name}-node-2`,
    ]);
    expect(mp.status?.deprecated?.v1beta1).toMatchObject({
      readyReplicas: 3,
      availableReplicas: 3,
    });
    expect(mp.status?.versions).toEqual([{ version: "v1.34.1", replicas: 3 }]);
    const joined = await client.get(NodeResource, { name: `${name}-node-0` });
    // (A real kube-apiserver also adds node.kubernetes.io/not-ready at creation; only core's taint matters.)
    expect((joined.spec?.taints ?? []).map((t) => t.key)).not.toContain(
      "node.cluster.x-k8s.io/uninitialized",
    );
    expect(joined.metadata?.annotations).toMatchObject({
      "cluster.x-k8s.io/cluster-name": "c1",
      "cluster.x-k8s.io/cluster-namespace": ns,
      "cluster.x-k8s.io/owner-kind": "MachinePool",
      "cluster.x-k8s.io/owner-name": name,
    });
    const stranger = await client.get(NodeResource, { name: `${name}-stranger` });
    expect((stranger.spec?.taints ?? []).map((t) => t.key)).toContain(
      "node.cluster.x-k8s.io/uninitialized",
    );

    // The provider drops instance c: its Node goes; the pool now wants 3 but has 2 ready.
    await setProviderIDs(client, name, ids.slice(0, 2));
    await setPoolStatus(client, name, { replicas: 2 });
    await eventually(async () => {
      await expect(client.get(NodeResource, { name: `${name}-node-2` })).rejects.toThrow(
        /not found/i,
      );
    });
    const deletes = core.writes({ verb: "delete", kind: "Node" });
    expect(deletes.map((w) => [w.name, w.reason])).toEqual([
      [`${name}-node-2`, "providerID test:///n-c is no longer in spec.providerIDList"],
    ]);
    await eventually(async () => {
      const got = await getMachinePool(client, name);
      expect(got.status?.nodeRefs).toHaveLength(2);
      expect(got.status?.phase).toBe("ScalingUp");
    });
    // An external autoscaler owns replicas: core only says "Scaling".
    await client.mergePatch(
      MachinePools,
      { namespace: ns, name },
      {
        metadata: {
          annotations: { "cluster.x-k8s.io/replicas-managed-by": "external-autoscaler" },
        },
      },
    );
    await eventually(async () => {
      expect((await getMachinePool(client, name)).status?.phase).toBe("Scaling");
    });
    expect(await client.get(NodeResource, { name: `${name}-stranger` })).toBeDefined();
  });

  it("writes nothing when a reconcile finds nothing new (steady state)", async () => {
    const name = await pool({ replicas: 2 });
    const ids = ["test:///steady-a", "test:///steady-b"];
    for (const [i, id] of ids.entries()) await createNode(client, node(`${name}-${i}`, id));
    await waitForAdoption(name);
    await setProviderIDs(client, name, ids);
    await setPoolStatus(client, name, {
      replicas: 2,
      ready: true,
      conditions: [
        {
          type: "Ready",
          status: "True",
          reason: "Ready",
          message: "",
          lastTransitionTime: "2026-01-01T00:00:00Z",
        },
      ],
    });
    await eventually(async () => {
      const got = await getMachinePool(client, name);
      expect(got.status?.phase).toBe("Running");
      expect(got.status?.observedGeneration).toBe(got.metadata?.generation);
    });
    await sleep(200);
    core.clearWrites();
    core.clearReconciles();
    // Events that make core reconcile again without changing anything it reads.
    for (let i = 0; i < 3; i++) {
      await client.mergePatch(
        TestMachinePools,
        { namespace: ns, name },
        {
          metadata: { annotations: { "example.com/touch": String(i) } },
        },
      );
    }
    await eventually(() => {
      expect(
        core.reconciles({ machinePool: `${ns}/${name}`, actor: "machinepool" }).length,
      ).toBeGreaterThan(0);
    });
    await sleep(200);
    expect(core.writes()).toEqual([]);
    const mp = await getMachinePool(client, name);
    expect(
      mp.status?.deprecated?.v1beta1?.conditions?.map(
        (c: { type: string; status: string }) => `${c.type}=${c.status}`,
      ),
    ).toEqual([
      "Ready=True",
      "BootstrapReady=True",
      "InfrastructureReady=True",
      "ReplicasReady=True",
    ]);
  });

  it("marks the MachinePool failed when a provisioned InfraMachinePool disappears", async () => {
    const name = await pool({ replicas: 0 });
    await waitForAdoption(name);
    await setPoolStatus(client, name, { replicas: 0, ready: true });
    await eventually(async () => {
      expect(
        (await getMachinePool(client, name)).status?.initialization?.infrastructureProvisioned,
      ).toBe(true);
    });
    await client.delete(TestMachinePools, { namespace: ns, name });
    const mp = await eventually(async () => {
      const got = await getMachinePool(client, name);
      expect(got.status?.deprecated?.v1beta1?.failureReason).toBe("InvalidConfiguration");
      return got;
    });
    expect(mp.status?.deprecated?.v1beta1?.failureMessage).toBe(
      `MachinePool infrastructure resource TestMachinePool ${ns}/${name} has been deleted after being ready`,
    );
    expect(
      mp.status?.deprecated?.v1beta1?.conditions?.find(
        (c: { type: string }) => c.type === "InfrastructureReady",
      ),
    ).toMatchObject({ status: "False", reason: "IncorrectExternalRef", severity: "Error" });
    expect(
      core.reconciles({ machinePool: `${ns}/${name}`, failed: true }).at(-1)?.error?.message,
    ).toContain("could not find TestMachinePool");
  });

  it("treats status.failureReason as core does: a panic, reported as a reconcile error (G4)", async () => {
    const name = await pool();
    await waitForAdoption(name);
    await setPoolStatus(client, name, { ready: true, failureReason: "InsufficientCapacity" });
    const record = await eventually(() => {
      const panics = core.reconciles({ machinePool: `${ns}/${name}`, event: "Panic" });
      expect(panics.length).toBeGreaterThan(0);
      return panics[0];
    });
    expect(record?.panicked).toBe(true);
    expect(record?.error?.name).toBe("CorePanicError");
    expect(record?.error?.message).toMatch(
      /^core would panic: TestMachinePool default\/mp-\d+ has status\.failureReason="InsufficientCapacity"/,
    );
    // It keeps failing until the provider stops writing the field.
    await eventually(() => {
      expect(
        core.reconciles({ machinePool: `${ns}/${name}`, event: "Panic" }).length,
      ).toBeGreaterThan(1);
    });
    await client.mergePatchStatus(
      TestMachinePools,
      { namespace: ns, name },
      { status: { failureReason: null } },
    );
    await eventually(async () => {
      expect(
        (await getMachinePool(client, name)).status?.initialization?.infrastructureProvisioned,
      ).toBe(true);
    });
  });

  it.skipIf(onReal)(
    "records failed writes and converges once the API server recovers",
    async () => {
      const faults = api.capabilities.inMemory?.faults;
      const name = `mp-${++seq}`;
      await client.create(TestMachinePools, testMachinePool(name));
      faults?.add({ verb: "patch", resource: "testmachinepools", name, status: 500, count: 2 });
      await client.create(MachinePools, machinePool(name));
      await waitForAdoption(name);
      const attempts = core.writes({ kind: "TestMachinePool", name });
      expect(attempts.map((w) => w.outcome === "ok")).toEqual([false, false, true]);
      expect(
        core.writes({ kind: "TestMachinePool", name, succeeded: false })[0]?.outcome,
      ).toMatchObject({
        error: expect.stringMatching(/500/),
      });
      expect(core.reconciles({ machinePool: `${ns}/${name}`, failed: true })).toHaveLength(2);
    },
  );

  it("stops at a paused Cluster or MachinePool with a Paused condition", async () => {
    const name = await pool();
    await waitForAdoption(name);
    // Let the bootstrap data land first: a later spec write bumps the generation, and core then
    // rewrites the Paused condition for the new observedGeneration (as it should).
    await eventually(async () => {
      const got = await getMachinePool(client, name);
      expect(got.status?.initialization?.bootstrapDataSecretCreated).toBe(true);
    });
    await client.mergePatch(
      MachinePools,
      { namespace: ns, name },
      {
        metadata: { annotations: { "cluster.x-k8s.io/paused": "" } },
      },
    );
    const mp = await eventually(async () => {
      const got = await getMachinePool(client, name);
      const paused = got.status?.conditions?.find((c) => c.type === "Paused");
      expect(paused?.status).toBe("True");
      expect(paused?.observedGeneration).toBe(got.metadata?.generation);
      return got;
    });
    await sleep(100);
    expect(mp.status?.conditions?.find((c: { type: string }) => c.type === "Paused")?.message).toBe(
      "MachinePool has the cluster.x-k8s.io/paused annotation",
    );
    core.clearWrites();
    await setPoolStatus(client, name, { ready: true });
    await sleep(200);
    expect(core.writes({ machinePool: `${ns}/${name}` })).toEqual([]);
    await client.mergePatch(
      MachinePools,
      { namespace: ns, name },
      {
        metadata: { annotations: { "cluster.x-k8s.io/paused": null } },
      },
    );
    await eventually(async () => {
      expect(
        (await getMachinePool(client, name)).status?.initialization?.infrastructureProvisioned,
      ).toBe(true);
    });
  });
});
