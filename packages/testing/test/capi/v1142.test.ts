import type { KubeClient } from "@capi-ts/sdk/runtime";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { type CapiCore, validateMachinePool } from "../../src/index.js";
import { type Backend, onReal } from "../support/backend.js";
import {
  createNode,
  createReadyCluster,
  eventually,
  getMachinePool,
  MachinePools,
  Machines,
  machinePool,
  node,
  ns,
  type Obj,
  setPoolStatus,
  setProviderIDs,
  sleep,
  startCapiApiServer,
  startCore,
  TestMachinePools,
  TestMachines,
  testMachinePool,
} from "./support.js";

// What CAPI core v1.14.2 does that the emulator did not do before.
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

async function adoptedPool(options: Parameters<typeof machinePool>[1] = {}): Promise<string> {
  const name = `v-${++seq}`;
  await client.create(TestMachinePools, testMachinePool(name));
  await client.create(MachinePools, machinePool(name, { dataSecretName: "data", ...options }));
  await eventually(async () => {
    const imp = await client.get(TestMachinePools, { namespace: ns, name });
    expect(imp.metadata?.ownerReferences?.length).toBe(1);
  });
  return name;
}

function testMachine(name: string, pool: string, providerID: string): Obj {
  return {
    apiVersion: "infrastructure.cluster.x-k8s.io/v1beta2",
    kind: "TestMachine",
    metadata: {
      name,
      namespace: ns,
      labels: { "cluster.x-k8s.io/pool-name": pool, "cluster.x-k8s.io/cluster-name": "c1" },
    },
    spec: { providerID },
  };
}

describe("MachinePool Machines (R11)", () => {
  it("creates one Machine per labelled InfraMachine, marks it UpToDate and counts replicas from Machines", async () => {
    const name = await adoptedPool({ replicas: 2 });
    await createNode(client, node(`${name}-n1`, `test:///${name}-1`));
    await client.create(TestMachines, testMachine(`${name}-m1`, name, `test:///${name}-1`));
    await client.create(TestMachines, testMachine(`${name}-m2`, name, `test:///${name}-2`));
    // Another pool's InfraMachine is not this pool's.
    await client.create(TestMachines, testMachine(`${name}-other`, "someone-else", "test:///x"));
    await setProviderIDs(client, name, [`test:///${name}-1`, `test:///${name}-2`]);
    await setPoolStatus(client, name, {
      ready: true,
      replicas: 2,
      infrastructureMachineKind: "TestMachine",
    });

    const machines = await eventually(async () => {
      const list = await client.list(Machines, {
        namespace: ns,
        labelSelector: `cluster.x-k8s.io/pool-name=${name}`,
      });
      expect(list.items.map((m) => m.metadata?.name).sort()).toEqual([`${name}-m1`, `${name}-m2`]);
      for (const m of list.items) {
        const status = m.status as { conditions?: { type: string; status: string }[] } | undefined;
        expect(status?.conditions?.find((c) => c.type === "UpToDate")?.status).toBe("True");
      }
      return list.items;
    });
    const mp = await getMachinePool(client, name);
    const m1 = machines.find((m) => m.metadata?.name === `${name}-m1`) as Obj;
    expect(m1.metadata?.ownerReferences).toEqual([
      {
        apiVersion: "cluster.x-k8s.io/v1beta2",
        kind: "MachinePool",
        name,
        uid: mp.metadata?.uid,
        controller: true,
        blockOwnerDeletion: true,
      },
    ]);
    expect(m1.metadata?.labels).toMatchObject({
      "cluster.x-k8s.io/pool-name": name,
      "cluster.x-k8s.io/cluster-name": "c1",
    });
    expect(m1.spec).toMatchObject({
      clusterName: "c1",
      bootstrap: { dataSecretName: "" },
      infrastructureRef: {
        apiGroup: "infrastructure.cluster.x-k8s.io",
        kind: "TestMachine",
        name: `${name}-m1`,
      },
      version: "v1.34.1", // the kubelet version of its Node
    });
    const m2 = machines.find((m) => m.metadata?.name === `${name}-m2`) as Obj;
    expect(m2.spec?.version).toBeUndefined(); // no Node yet
    await expect(client.get(Machines, { namespace: ns, name: `${name}-other` })).rejects.toThrow(
      /not found/i,
    );
    expect(core.writes({ kind: "Machine", verb: "apply" }).length).toBeGreaterThanOrEqual(2);

    // Counters come from the Machines' conditions — UpToDate (the MachinePool controller sets it),
    // Ready/Available (the Machine controller's, False while the InfraMachines are not provisioned) —
    // not from status.replicas.
    await eventually(async () => {
      const got = await getMachinePool(client, name);
      expect(got.status?.upToDateReplicas).toBe(2);
      expect(got.status?.readyReplicas).toBe(0);
      expect(got.status?.availableReplicas).toBe(0);
      expect(got.status?.versions).toEqual([{ version: "v1.34.1", replicas: 1 }]);
    });
    // The provider reports m1 provisioned: the Machine controller makes that Machine Ready and
    // Available (its Node exists), and the pool counts it at its next reconcile (core's MachinePool
    // controller does not watch Machines; the InfraMachine's change is what brings it back).
    await client.mergePatchStatus(
      TestMachines,
      { namespace: ns, name: `${name}-m1` },
      { status: { initialization: { provisioned: true } } },
    );
    await eventually(async () => {
      const got = await client.get(Machines, { namespace: ns, name: `${name}-m1` });
      const ready = ((got.status?.conditions ?? []) as { type: string; status: string }[]).find(
        (c) => c.type === "Available",
      );
      expect(ready?.status).toBe("True");
    });
    await client.mergePatch(
      MachinePools,
      { namespace: ns, name },
      { metadata: { annotations: { "test.example.com/nudge": "1" } } },
    );
    await eventually(async () => {
      const got = await getMachinePool(client, name);
      expect(got.status?.readyReplicas).toBe(1);
      expect(got.status?.availableReplicas).toBe(1);
    });
    expect(core.reconciles({ machinePool: `${ns}/${name}`, failed: true })).toEqual([]);
  });
});

describe("deprecated v1beta1 summary and mirror", () => {
  it("ranks a False condition without severity last (merge priority 99): Ready stays True", async () => {
    const name = await adoptedPool();
    await setProviderIDs(client, name, []);
    await setPoolStatus(client, name, {
      ready: true,
      replicas: 0,
      conditions: [{ type: "Ready", status: "False", reason: "NoSeverity" }],
    });
    await eventually(async () => {
      const got = await getMachinePool(client, name);
      const conditions = got.status?.deprecated?.v1beta1?.conditions ?? [];
      expect(conditions.find((c) => c.type === "InfrastructureReady")).toMatchObject({
        status: "False",
        reason: "NoSeverity",
      });
      expect(conditions.find((c) => c.type === "BootstrapReady")?.status).toBe("True");
      // True (priority 3) beats False without severity (99).
      expect(conditions.find((c) => c.type === "Ready")?.status).toBe("True");
    });
  });

  it("mirrors the InfraMachinePool's status.deprecated.v1beta1 Ready before its status.conditions", async () => {
    const name = await adoptedPool();
    await setPoolStatus(client, name, {
      ready: true,
      conditions: [
        {
          type: "Ready",
          status: "True",
          reason: "Ready",
          lastTransitionTime: "2026-01-01T00:00:00Z",
        },
      ],
      deprecated: {
        v1beta1: {
          conditions: [
            {
              type: "Ready",
              status: "False",
              severity: "Warning",
              reason: "StillScaling",
              lastTransitionTime: "2026-01-01T00:00:00Z",
            },
          ],
        },
      },
    });
    await eventually(async () => {
      const got = await getMachinePool(client, name);
      const infra = got.status?.deprecated?.v1beta1?.conditions?.find(
        (c) => c.type === "InfrastructureReady",
      );
      expect(infra).toMatchObject({ status: "False", severity: "Warning", reason: "StillScaling" });
    });
  });
});

describe("the failureReason panic (G4): what core's inverted guards do before panicking", () => {
  it("empties status.deprecated, writes that in the deferred patch and bumps observedGeneration", async () => {
    const name = await adoptedPool({ replicas: 0 });
    await setProviderIDs(client, name, []);
    await setPoolStatus(client, name, { ready: true, replicas: 0 });
    await eventually(async () => {
      const got = await getMachinePool(client, name);
      expect(got.status?.deprecated?.v1beta1?.conditions?.length).toBeGreaterThan(0);
    });
    const { generation } = (await getMachinePool(client, name)).metadata ?? {};
    await setPoolStatus(client, name, { failureMessage: "quota" });
    await eventually(async () => {
      const got = await getMachinePool(client, name);
      expect(
        core.reconciles({ machinePool: `${ns}/${name}`, event: "Panic" }).length,
      ).toBeGreaterThan(0);
      // The v1beta1 conditions and counters are gone (core replaced status.deprecated with {}).
      expect(got.status?.deprecated?.v1beta1?.conditions ?? []).toEqual([]);
      expect(Object.keys(got.status?.deprecated?.v1beta1 ?? {})).toEqual([]);
      expect(got.status?.observedGeneration).toBe(generation);
    });
  });
});

describe("webhook rules", () => {
  it("validateMachinePool answers as core's validating webhook", () => {
    const base = machinePool("vm", { clusterName: "c1" });
    expect(validateMachinePool(base)?.message).toBe(
      'admission webhook "validation.machinepool.cluster.x-k8s.io" denied the request: MachinePool.cluster.x-k8s.io "vm" is invalid: spec.template.spec.bootstrap: Required value: expected either spec.template.spec.bootstrap.dataSecretName or spec.template.spec.bootstrap.configRef to be populated',
    );
    const ok = machinePool("vm", { clusterName: "c1", dataSecretName: "d" });
    expect(validateMachinePool(ok)).toBeUndefined();
    const moved = machinePool("vm", { clusterName: "c2", dataSecretName: "d" });
    expect(validateMachinePool(moved, ok)?.message).toContain(
      "is invalid: spec.clusterName: Forbidden: field is immutable",
    );
    const badVersion = machinePool("vm", { clusterName: "c1", dataSecretName: "d" });
    badVersion.spec.template.spec.version = "v1.34";
    expect(validateMachinePool(badVersion)?.message).toContain(
      'spec.template.spec.version: Invalid value: "v1.34": must be a valid semantic version',
    );
  });

  it("opt-in validation refuses a pool the webhook would have rejected, without writing to it", async () => {
    // An API server of its own: the shared core's bootstrap stand-in would otherwise race the strict
    // core and fill in the missing bootstrap data first.
    const own = await startCapiApiServer();
    await createReadyCluster(own.client, own.api, "c1");
    const strict = await startCore(own.api, {
      name: "strict-core",
      validation: true,
      bootstrap: false,
    });
    const client = own.client;
    try {
      const name = `v-${++seq}`;
      await client.create(TestMachinePools, testMachinePool(name));
      await client.create(MachinePools, {
        ...machinePool(name),
        metadata: { name, namespace: ns, labels: { strict: "yes" } },
      });
      const failure = await eventually(() => {
        const failed = strict.reconciles({ machinePool: `${ns}/${name}`, failed: true });
        expect(failed.length).toBeGreaterThan(0);
        return failed[0];
      });
      expect(failure?.error?.message).toContain(
        "spec.template.spec.bootstrap: Required value: expected either",
      );
      expect(failure?.notes.map((n) => n.event)).toEqual(["WebhookDenied"]);
      expect(strict.writes({ machinePool: `${ns}/${name}` })).toEqual([]);
    } finally {
      await strict.stop();
      await own.api.stop();
    }
  });

  it("parses the autoscaler size annotations as strconv.ParseInt does (no spaces)", async () => {
    const name = `v-${++seq}`;
    await client.create(TestMachinePools, testMachinePool(name));
    await client.create(
      MachinePools,
      machinePool(name, {
        dataSecretName: "d",
        annotations: {
          "cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size": " 2",
          "cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size": "5",
        },
      }),
    );
    const failure = await eventually(() => {
      const failed = core.reconciles({ machinePool: `${ns}/${name}`, failed: true });
      expect(failed.length).toBeGreaterThan(0);
      return failed[0];
    });
    expect(failure?.error?.message).toBe(
      'failed to caculate MachinePool replicas value: could not parse the value of the "cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size" annotation: strconv.ParseInt: parsing " 2": invalid syntax',
    );
  });
});

describe("rate limiting (ReconcilerRateLimiting)", () => {
  it("reconciles one object at most once per interval", async () => {
    const limited = await startCore(api, {
      name: "limited-core",
      rateLimitIntervalMs: 1_000,
      machines: false,
    });
    try {
      const name = await adoptedPool();
      limited.clearReconciles();
      for (let i = 0; i < 5; i++) {
        await client.mergePatch(
          MachinePools,
          { namespace: ns, name },
          { metadata: { annotations: { tick: String(i) } } },
        );
        await sleep(100);
      }
      await sleep(200);
      // Five changes within ~0.7 s: at most one reconcile in that window (plus one the change
      // before the window may have started).
      expect(
        limited.reconciles({ machinePool: `${ns}/${name}`, actor: "machinepool" }).length,
      ).toBeLessThanOrEqual(2);
      await eventually(() => {
        expect(
          limited.reconciles({ machinePool: `${ns}/${name}`, actor: "machinepool" }).length,
        ).toBeGreaterThan(0);
      }, 3_000);
    } finally {
      await limited.stop();
    }
  });
});
