// Type-level checks that the helpers accept the generated CAPI kinds (v1beta1 and v1beta2) and a
// provider's own kind; `./dev typecheck` fails if a helper's structural type drifts from them.
import type { KubeConfig } from "@kubernetes/client-node";
import { describe, expect, expectTypeOf, it } from "vitest";
import type { clusterv1beta1, clusterv1beta2, infrastructurev1beta2 } from "../api/index.js";
import { clusterv1beta2 as capi } from "../api/index.js";
import {
  getCondition,
  getV1Beta1Conditions,
  setCondition,
  summaryCondition,
} from "../conditions/index.js";
import { PatchHelper, type ResourceRef } from "../patch/index.js";
import {
  ensureFinalizer,
  ensurePausedCondition,
  findOwnerMachinePoolRef,
  getClusterFromMetadata,
  getOwnerMachinePool,
  isPaused,
  readCluster,
  readMachinePool,
  setPoolStatus,
  setReady,
  updatePausedCondition,
} from "./index.js";

const mpV1beta2: clusterv1beta2.MachinePool = {
  apiVersion: "cluster.x-k8s.io/v1beta2",
  kind: "MachinePool",
  metadata: { name: "mp", namespace: "ns", generation: 2 },
  spec: {
    clusterName: "c",
    replicas: 1,
    template: {
      spec: {
        clusterName: "c",
        bootstrap: { dataSecretName: "s" },
        infrastructureRef: {
          apiGroup: "infrastructure.cluster.x-k8s.io",
          kind: "DevMachinePool",
          name: "p",
        },
      },
    },
  },
};

const mpV1beta1: clusterv1beta1.MachinePool = {
  apiVersion: "cluster.x-k8s.io/v1beta1",
  kind: "MachinePool",
  metadata: { name: "mp", namespace: "ns", generation: 2 },
  spec: {
    clusterName: "c",
    template: {
      spec: {
        clusterName: "c",
        bootstrap: { dataSecretName: "s" },
        infrastructureRef: {
          apiVersion: "infrastructure.cluster.x-k8s.io/v1beta2",
          kind: "DevMachinePool",
          name: "p",
        },
      },
    },
  },
};

const cluster: clusterv1beta2.Cluster = {
  apiVersion: "cluster.x-k8s.io/v1beta2",
  kind: "Cluster",
  metadata: { name: "c", namespace: "ns" },
  spec: { paused: true },
};

const devPool: infrastructurev1beta2.DevMachinePool = {
  apiVersion: "infrastructure.cluster.x-k8s.io/v1beta2",
  kind: "DevMachinePool",
  metadata: { name: "p", namespace: "ns", generation: 1 },
  spec: {},
};

describe("generated CAPI types fit the helpers", () => {
  it("conditions: v1beta2 MachinePool, v1beta1 MachinePool, Cluster, DevMachinePool", () => {
    setCondition(mpV1beta2, { type: "Paused", status: "False", reason: "NotPaused" });
    setCondition(mpV1beta1, { type: "Paused", status: "False", reason: "NotPaused" });
    setCondition(devPool, { type: "Ready", status: "True", reason: "Ready" });
    expect(getCondition(mpV1beta2, "Paused")?.observedGeneration).toBe(2);
    expect(mpV1beta1.status?.v1beta2?.conditions?.[0]?.type).toBe("Paused");
    expect(getV1Beta1Conditions(mpV1beta1)).toEqual([]);
    expect(summaryCondition(devPool, "Available", { forConditionTypes: ["Ready"] }).status).toBe(
      "True",
    );
    expectTypeOf(getCondition).toBeCallableWith(cluster, "Ready");
  });

  it("contract: status writer on DevMachinePool, readers and pause on MachinePool/Cluster", () => {
    setPoolStatus(devPool, { providerIDs: ["docker:////a"], replicas: 1 });
    expect(setReady(devPool)).toBe(true);
    const [a, b] = [readMachinePool(mpV1beta1), readMachinePool(mpV1beta2)];
    expect(a.infrastructureRef).toEqual(b.infrastructureRef);
    expect(a.bootstrapDataSecretName).toBe(b.bootstrapDataSecretName);
    expect(readCluster(cluster).paused).toBe(true);
    expect(isPaused(cluster, devPool)).toBe(true);
    expect(updatePausedCondition(cluster, devPool).isPaused).toBe(true);
    expect(findOwnerMachinePoolRef(devPool)).toBeUndefined();
  });

  it("patch: snapshots generated kinds; generated resource metadata is a ResourceRef", () => {
    const helper = PatchHelper.snapshot(mpV1beta2, { resource: capi.MachinePoolResource });
    expect(helper.hasChanges(mpV1beta2)).toBe(false);
    expectTypeOf(capi.MachinePoolResource).toExtend<ResourceRef>();
  });

  it("objects read by the lookups flow into the readers and pause helpers without casts", () => {
    // Compiled, not run: the type checker proves the chain a reconcile uses.
    async function reconcile(kc: KubeConfig, pool: infrastructurev1beta2.DevMachinePool) {
      const mp = await getOwnerMachinePool(kc, pool);
      if (!mp) return;
      const cluster = await getClusterFromMetadata(kc, mp);
      readMachinePool(mp);
      readCluster(cluster);
      getCondition(mp, "Paused");
      setCondition(cluster, { type: "Example", status: "True", reason: "Example" });
      if (await ensureFinalizer(kc, pool, "devmachinepool.infrastructure.cluster.x-k8s.io")) return;
      await ensurePausedCondition(kc, cluster, pool);
    }
    expect(reconcile).toBeTypeOf("function");
  });
});
