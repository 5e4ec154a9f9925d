// How a provider uses the generated CAPI types (hand-written; the generator leaves this file alone).
import { describe, expect, test } from "vitest";
import { clusterv1beta2, infrastructurev1beta2, type ResourceInfo, SchemaValidationError } from "./index.js";

const pool: clusterv1beta2.MachinePool = {
  apiVersion: "cluster.x-k8s.io/v1beta2",
  kind: "MachinePool",
  metadata: { name: "pool-0", namespace: "default" },
  spec: {
    clusterName: "demo",
    replicas: 2,
    template: {
      spec: {
        clusterName: "demo",
        bootstrap: { dataSecretName: "pool-0-bootstrap" },
        infrastructureRef: { apiGroup: "infrastructure.cluster.x-k8s.io", kind: "DevMachinePool", name: "pool-0" },
      },
    },
  },
};

describe("generated CAPI API types", () => {
  test("a MachinePool parses, and a bad one is rejected with the field path", () => {
    expect(clusterv1beta2.MachinePoolSchema.parse(pool)).toEqual(pool);
    const model = new clusterv1beta2.MachinePool({ ...pool, spec: { ...pool.spec, clusterName: "" } });
    expect(() => model.validate()).toThrow(SchemaValidationError);
    expect(() => model.validate()).toThrow(/spec\.clusterName/);
  });

  test("resource metadata addresses kinds without discovery", () => {
    const resources: ResourceInfo<unknown>[] = [
      clusterv1beta2.MachinePoolResource,
      infrastructurev1beta2.DevMachinePoolResource,
    ];
    expect(resources.map((r) => `${r.apiVersion} ${r.plural} ${r.scope} status=${r.subresources.status}`)).toEqual([
      "cluster.x-k8s.io/v1beta2 machinepools Namespaced status=true",
      "infrastructure.cluster.x-k8s.io/v1beta2 devmachinepools Namespaced status=true",
    ]);
    expect(clusterv1beta2.MachinePool.is(pool)).toBe(true);
  });
});
