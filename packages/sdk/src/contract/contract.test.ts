import { inspect } from "node:util";
import { describe, expect, it } from "vitest";
import { getCondition } from "../conditions/index.js";
import {
  addFinalizer,
  assertNoFailureFields,
  BootstrapData,
  ContractViolationError,
  calculateCRDName,
  canonicalProviderIDs,
  finalizerFor,
  findOwnerMachinePoolRef,
  formatLabelValue,
  hasForeignController,
  type InfraMachinePoolContractFields,
  isPaused,
  labelValueMatches,
  pausedCondition,
  readCluster,
  readMachinePool,
  removeFinalizer,
  replicasManagedByExternalAutoscaler,
  setPoolStatus,
  setProviderIDs,
  setReady,
  setReplicas,
  updatePausedCondition,
} from "./index.js";

describe("formatLabelValue (CAPI MustFormatValue)", () => {
  it.each([
    ["machineSetName".repeat(12), "hash_FR_ghQ_z"],
    ["a".repeat(64), "hash_2W8PhQ_z"],
    ["my.pool-", "hash_Gm1OoA_z"],
    ["machineSetName", "machineSetName"],
    ["", ""],
    ["a".repeat(63), "a".repeat(63)],
  ])("%s -> %s", (input, expected) => {
    expect(formatLabelValue(input)).toBe(expected);
    expect(labelValueMatches(input, expected)).toBe(true);
  });
});

describe("calculateCRDName", () => {
  it.each([
    ["infrastructure.foo.com", "FooMachinePool", "foomachinepools.infrastructure.foo.com"],
    [
      "infrastructure.cluster.x-k8s.io",
      "AWSMachinePool",
      "awsmachinepools.infrastructure.cluster.x-k8s.io",
    ],
    [
      "infrastructure.cluster.x-k8s.io",
      "AzureMachinePoolTemplate",
      "azuremachinepooltemplates.infrastructure.cluster.x-k8s.io",
    ],
    [
      "infrastructure.cluster.x-k8s.io",
      "AWSManagedMachinePool",
      "awsmanagedmachinepools.infrastructure.cluster.x-k8s.io",
    ],
    ["cluster.x-k8s.io", "ClusterClass", "clusterclasses.cluster.x-k8s.io"],
    ["cluster.x-k8s.io", "MachineHealthCheck", "machinehealthchecks.cluster.x-k8s.io"],
    ["ipam.cluster.x-k8s.io", "IPAddress", "ipaddresses.ipam.cluster.x-k8s.io"],
    [
      "addons.cluster.x-k8s.io",
      "ClusterResourceSetBinding",
      "clusterresourcesetbindings.addons.cluster.x-k8s.io",
    ],
    ["cluster.x-k8s.io", "MachineDrainRule", "machinedrainrules.cluster.x-k8s.io"],
    ["runtime.cluster.x-k8s.io", "ExtensionConfig", "extensionconfigs.runtime.cluster.x-k8s.io"],
    ["example.com", "NetworkPolicy", "networkpolicies.example.com"],
  ])("%s %s", (group, kind, name) => {
    expect(calculateCRDName(group, kind)).toBe(name);
  });
});

describe("status writer", () => {
  it("canonicalises provider IDs: drop empty, dedupe, sort byte-wise", () => {
    expect(canonicalProviderIDs(["b", "", "a", "B", "a"])).toEqual(["B", "a", "b"]);
  });

  it("refuses entries over 512 characters and lists over 10,000 entries", () => {
    expect(() => canonicalProviderIDs(["x".repeat(513)])).toThrow(ContractViolationError);
    expect(canonicalProviderIDs(["x".repeat(512)])).toHaveLength(1);
    const many = Array.from({ length: 10_001 }, (_, i) => `id-${i}`);
    expect(() => canonicalProviderIDs(many)).toThrow(/at most 10000/);
    expect(canonicalProviderIDs(many.slice(0, 10_000))).toHaveLength(10_000);
  });

  it("setProviderIDs reports changes and removes the field for an empty list", () => {
    const pool: InfraMachinePoolContractFields = {};
    expect(setProviderIDs(pool, ["b", "a"])).toBe(true);
    expect(pool.spec?.providerIDList).toEqual(["a", "b"]);
    expect(setProviderIDs(pool, ["a", "b", "a"])).toBe(false);
    expect(setProviderIDs(pool, [])).toBe(true);
    expect(pool.spec?.providerIDList).toBeUndefined();
  });

  it("setReplicas writes int32 >= 0 only", () => {
    const pool: InfraMachinePoolContractFields = {};
    expect(setReplicas(pool, 0)).toBe(true);
    expect(pool.status?.replicas).toBe(0);
    expect(() => setReplicas(pool, -1)).toThrow(/int32/);
    expect(() => setReplicas(pool, 1.5)).toThrow(/int32/);
  });

  it("setReady writes both fields and never reverts them", () => {
    const pool: InfraMachinePoolContractFields = {};
    expect(setReady(pool, false)).toBe(false);
    expect(pool.status).toBeUndefined();
    expect(setReady(pool)).toBe(true);
    expect(pool.status).toEqual({ ready: true, initialization: { provisioned: true } });
    expect(setReady(pool, false)).toBe(false);
    expect(pool.status).toEqual({ ready: true, initialization: { provisioned: true } });
  });

  it("setReady repairs disagreeing fields towards provisioned", () => {
    const pool: InfraMachinePoolContractFields = { status: { ready: true } };
    expect(setReady(pool, false)).toBe(true);
    expect(pool.status?.initialization?.provisioned).toBe(true);
  });

  it("setPoolStatus refuses replicas > 0 with an empty list, before writing anything", () => {
    const pool: InfraMachinePoolContractFields = {
      spec: { providerIDList: ["a"] },
      status: { replicas: 1 },
    };
    expect(() => setPoolStatus(pool, { providerIDs: [], replicas: 2 })).toThrow(
      /providerIDList is empty/,
    );
    expect(pool).toEqual({ spec: { providerIDList: ["a"] }, status: { replicas: 1 } });
    expect(setPoolStatus(pool, { providerIDs: [], replicas: 0 })).toBe(true);
    expect(pool).toEqual({ spec: {}, status: { replicas: 0 } });
  });

  it("setPoolStatus writes everything in one call and refuses an empty infrastructureMachineKind", () => {
    const pool: InfraMachinePoolContractFields = {};
    setPoolStatus(pool, {
      providerIDs: ["p2", "p1"],
      replicas: 2,
      ready: true,
      providerID: "asg/x",
      infrastructureMachineKind: "FooMachine",
    });
    expect(pool).toEqual({
      spec: { providerIDList: ["p1", "p2"], providerID: "asg/x" },
      status: {
        replicas: 2,
        infrastructureMachineKind: "FooMachine",
        ready: true,
        initialization: { provisioned: true },
      },
    });
    expect(() =>
      setPoolStatus(pool, { providerIDs: ["a"], replicas: 1, infrastructureMachineKind: "" }),
    ).toThrow(/R11/);
  });

  it("never lets failureReason/failureMessage through (G4)", () => {
    const pool = { status: { failureReason: "InsufficientCapacity" } };
    expect(() => assertNoFailureFields(pool)).toThrow(/panics/);
    expect(() =>
      setPoolStatus(pool as InfraMachinePoolContractFields, { providerIDs: [], replicas: 0 }),
    ).toThrow(/R17/);
  });
});

describe("pause (CAPI IsPaused / EnsurePausedCondition)", () => {
  const annotated = {
    kind: "FooMachinePool",
    metadata: { generation: 3, annotations: { "cluster.x-k8s.io/paused": "" } },
  };
  const plain = { kind: "FooMachinePool", metadata: { generation: 3, annotations: {} } };

  it("IsPaused: cluster spec.paused or the annotation with any value", () => {
    expect(isPaused({ spec: { paused: true } }, plain)).toBe(true);
    expect(isPaused({ spec: { paused: false } }, annotated)).toBe(true);
    expect(isPaused({ spec: {} }, plain)).toBe(false);
    expect(isPaused(undefined, plain)).toBe(false);
  });

  it("Paused condition messages and reasons", () => {
    expect(pausedCondition({ spec: { paused: true } }, annotated)).toEqual({
      type: "Paused",
      status: "True",
      reason: "Paused",
      message:
        "Cluster spec.paused is set to true, FooMachinePool has the cluster.x-k8s.io/paused annotation",
      observedGeneration: 3,
    });
    expect(
      pausedCondition(null, { metadata: { annotations: { "cluster.x-k8s.io/paused": "x" } } })
        .message,
    ).toBe("Object has the cluster.x-k8s.io/paused annotation");
    expect(pausedCondition({ spec: {} }, plain)).toEqual({
      type: "Paused",
      status: "False",
      reason: "NotPaused",
      message: "",
      observedGeneration: 3,
    });
  });

  it("first call persists now, second is a no-op, generation bump persists only when paused", () => {
    for (const clusterPaused of [false, true]) {
      const obj = structuredClone(plain) as typeof plain & { status?: object };
      const cluster = { spec: { paused: clusterPaused } };
      expect(updatePausedCondition(cluster, obj)).toEqual({
        isPaused: clusterPaused,
        mustPersistNow: true,
      });
      expect(getCondition(obj, "Paused")?.observedGeneration).toBe(3);
      expect(updatePausedCondition(cluster, obj)).toEqual({
        isPaused: clusterPaused,
        mustPersistNow: false,
      });
      obj.metadata.generation = 4;
      expect(updatePausedCondition(cluster, obj)).toEqual({
        isPaused: clusterPaused,
        mustPersistNow: clusterPaused,
      });
      expect(getCondition(obj, "Paused")?.observedGeneration).toBe(4);
    }
  });
});

describe("owners and finalizers", () => {
  it("finds the MachinePool owner by group and kind, any version", () => {
    const ref = {
      apiVersion: "cluster.x-k8s.io/v1beta1",
      kind: "MachinePool",
      name: "mp",
      uid: "u",
    };
    expect(findOwnerMachinePoolRef({ metadata: { ownerReferences: [ref] } })).toEqual(ref);
    expect(
      findOwnerMachinePoolRef({
        metadata: { ownerReferences: [{ ...ref, apiVersion: "other.io/v1beta2" }] },
      }),
    ).toBeUndefined();
  });

  it("detects a foreign controller reference (R22)", () => {
    const owners = [
      {
        apiVersion: "cluster.x-k8s.io/v1beta2",
        kind: "MachinePool",
        name: "mp",
        uid: "u",
        controller: true,
      },
    ];
    expect(
      hasForeignController(
        { metadata: { ownerReferences: owners } },
        { group: "cluster.x-k8s.io", kind: "MachinePool", name: "mp" },
      ),
    ).toBe(false);
    expect(
      hasForeignController(
        { metadata: { ownerReferences: owners } },
        { group: "cluster.x-k8s.io", kind: "MachinePool", name: "other" },
      ),
    ).toBe(true);
  });

  it("adds and removes only our finalizer", () => {
    const f = finalizerFor("FooMachinePool", "infrastructure.cluster.x-k8s.io");
    expect(f).toBe("foomachinepool.infrastructure.cluster.x-k8s.io");
    const obj = { metadata: { finalizers: ["test"] } };
    expect(addFinalizer(obj, f)).toBe(true);
    expect(addFinalizer(obj, f)).toBe(false);
    expect(obj.metadata.finalizers).toEqual(["test", f]);
    expect(removeFinalizer(obj, f)).toBe(true);
    expect(obj.metadata.finalizers).toEqual(["test"]);
  });
});

describe("readers (appendix B)", () => {
  const v1beta2 = {
    apiVersion: "cluster.x-k8s.io/v1beta2",
    kind: "MachinePool",
    metadata: {
      name: "mp",
      namespace: "ns",
      annotations: { "cluster.x-k8s.io/replicas-managed-by": "" },
    },
    spec: {
      clusterName: "c",
      replicas: 3,
      failureDomains: ["a"],
      providerIDList: ["p1"],
      template: {
        spec: {
          version: "v1.31.0",
          minReadySeconds: 5,
          bootstrap: { dataSecretName: "s" },
          deletion: { nodeDrainTimeoutSeconds: 600 },
          infrastructureRef: {
            apiGroup: "infrastructure.example.com",
            kind: "FooMachinePool",
            name: "imp",
          },
        },
      },
    },
    status: {
      initialization: { infrastructureProvisioned: true, bootstrapDataSecretCreated: true },
      conditions: [
        {
          type: "Paused",
          status: "False",
          reason: "NotPaused",
          message: "",
          lastTransitionTime: "2024-01-01T00:00:00Z",
        },
      ],
      deprecated: { v1beta1: { readyReplicas: 2 } },
    },
  };
  const v1beta1 = {
    apiVersion: "cluster.x-k8s.io/v1beta1",
    kind: "MachinePool",
    metadata: {
      name: "mp",
      namespace: "ns",
      annotations: { "cluster.x-k8s.io/replicas-managed-by": "" },
    },
    spec: {
      clusterName: "c",
      replicas: 3,
      minReadySeconds: 5,
      failureDomains: ["a"],
      providerIDList: ["p1"],
      template: {
        spec: {
          version: "v1.31.0",
          bootstrap: { dataSecretName: "s" },
          nodeDrainTimeout: "10m0s",
          infrastructureRef: {
            apiVersion: "infrastructure.example.com/v1beta2",
            kind: "FooMachinePool",
            name: "imp",
            namespace: "ns",
          },
        },
      },
    },
    status: {
      infrastructureReady: true,
      bootstrapReady: true,
      readyReplicas: 2,
      conditions: [{ type: "Ready", status: "True", lastTransitionTime: "2024-01-01T00:00:00Z" }],
      v1beta2: {
        conditions: [
          {
            type: "Paused",
            status: "False",
            reason: "NotPaused",
            message: "",
            lastTransitionTime: "2024-01-01T00:00:00Z",
          },
        ],
      },
    },
  };

  it("reads v1beta1 and v1beta2 MachinePools into the same view", () => {
    const a = readMachinePool(v1beta2);
    const b = readMachinePool(v1beta1);
    expect(b).toEqual(a);
    expect(a).toMatchObject({
      replicas: 3,
      version: "v1.31.0",
      bootstrapDataSecretName: "s",
      minReadySeconds: 5,
      nodeDrainTimeoutSeconds: 600,
      infrastructureRef: {
        apiGroup: "infrastructure.example.com",
        kind: "FooMachinePool",
        name: "imp",
      },
      infrastructureProvisioned: true,
      bootstrapDataSecretCreated: true,
      nodeReadyReplicas: 2,
      replicasManagedByExternalAutoscaler: true,
      deleting: false,
    });
  });

  it("reads v1beta1 and v1beta2 Clusters", () => {
    expect(
      readCluster({
        apiVersion: "cluster.x-k8s.io/v1beta2",
        metadata: { name: "c", namespace: "ns" },
        spec: { paused: true },
        status: {
          initialization: { infrastructureProvisioned: true, controlPlaneInitialized: true },
        },
      }),
    ).toMatchObject({
      paused: true,
      infrastructureProvisioned: true,
      controlPlaneInitialized: true,
    });
    expect(
      readCluster({
        apiVersion: "cluster.x-k8s.io/v1beta1",
        metadata: { name: "c", namespace: "ns" },
        spec: {},
        status: {
          infrastructureReady: true,
          conditions: [{ type: "ControlPlaneInitialized", status: "True" }],
        },
      }),
    ).toMatchObject({
      paused: false,
      infrastructureProvisioned: true,
      controlPlaneInitialized: true,
    });
  });

  it('replicas-managed-by is truthy unless exactly "false"', () => {
    const mp = (v?: string) => {
      const annotations: Record<string, string> = {};
      if (v !== undefined) annotations["cluster.x-k8s.io/replicas-managed-by"] = v;
      return { metadata: { annotations } };
    };
    expect(replicasManagedByExternalAutoscaler(mp(""))).toBe(true);
    expect(replicasManagedByExternalAutoscaler(mp("cluster-autoscaler"))).toBe(true);
    expect(replicasManagedByExternalAutoscaler(mp("False"))).toBe(true);
    expect(replicasManagedByExternalAutoscaler(mp("false"))).toBe(false);
    expect(replicasManagedByExternalAutoscaler(mp())).toBe(false);
  });

  it("reads a v1beta1 drain timeout through the runtime's Go-duration parser", () => {
    const v1beta1 = (nodeDrainTimeout: string) => ({
      apiVersion: "cluster.x-k8s.io/v1beta1",
      kind: "MachinePool",
      metadata: { name: "p", namespace: "ns" },
      spec: { template: { spec: { nodeDrainTimeout } } },
    });
    expect(readMachinePool(v1beta1("1h30m")).nodeDrainTimeoutSeconds).toBe(5400);
    expect(readMachinePool(v1beta1("300ms")).nodeDrainTimeoutSeconds).toBe(0.3);
    expect(() => readMachinePool(v1beta1("10 minutes"))).toThrow(/invalid Go duration/);
  });
});

describe("BootstrapData", () => {
  it("never shows the payload in JSON, inspect or String", () => {
    const data = new BootstrapData(
      Buffer.from("#cloud-config\npassword: hunter2"),
      "cloud-config",
      { namespace: "ns", name: "s" },
    );
    expect(data.text()).toContain("hunter2");
    for (const shown of [
      JSON.stringify(data),
      inspect(data),
      String(data),
      `${data}`,
      inspect({ nested: data }),
    ]) {
      expect(shown).not.toContain("hunter2");
      expect(shown).not.toContain(
        Buffer.from("#cloud-config\npassword: hunter2").toString("base64"),
      );
    }
    expect(data.hash).toMatch(/^sha256:[0-9a-f]{64}$/);
  });
});
