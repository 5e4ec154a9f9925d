import { describe, expect, it } from "vitest";
import { compareKubeAwareVersions } from "../../src/capi/contract-version.js";
import { defaultMachinePool } from "../../src/index.js";

const MIN = "cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size";
const MAX = "cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size";

function pool(replicas?: number, annotations?: Record<string, string>) {
  const metadata: { annotations?: Record<string, string>; labels?: Record<string, string> } = {};
  if (annotations) metadata.annotations = annotations;
  return {
    metadata,
    spec: {
      clusterName: "c1",
      ...(replicas !== undefined ? { replicas } : {}),
      template: { spec: { version: "1.34.1" } },
    },
  };
}

describe("defaultMachinePool (core's MachinePool defaulting webhook)", () => {
  it("keeps explicit replicas, else 1; adds the label, the deletion timeout and the version prefix", () => {
    expect(defaultMachinePool(pool(0)).spec.replicas).toBe(0);
    const defaulted = defaultMachinePool(pool());
    expect(defaulted.spec.replicas).toBe(1);
    expect(defaulted.metadata.labels).toEqual({ "cluster.x-k8s.io/cluster-name": "c1" });
    expect(defaulted.spec.template.spec).toEqual({
      version: "v1.34.1",
      deletion: { nodeDeletionTimeoutSeconds: 10 },
    });
  });

  it("takes the autoscaler minimum for a new pool and clamps an existing pool's value", () => {
    const sizes = { [MIN]: "2", [MAX]: "5" };
    expect(defaultMachinePool(pool(undefined, sizes)).spec.replicas).toBe(2);
    expect(
      defaultMachinePool(pool(undefined, sizes), { spec: { replicas: 4 } }).spec.replicas,
    ).toBe(4);
    expect(
      defaultMachinePool(pool(undefined, sizes), { spec: { replicas: 9 } }).spec.replicas,
    ).toBe(5);
    expect(
      defaultMachinePool(pool(undefined, sizes), { spec: { replicas: 1 } }).spec.replicas,
    ).toBe(2);
    expect(defaultMachinePool(pool(undefined, sizes), { spec: {} }).spec.replicas).toBe(2);
    // Only one annotation: not an autoscaled pool.
    expect(defaultMachinePool(pool(undefined, { [MIN]: "3" })).spec.replicas).toBe(1);
  });

  it("rejects an unparsable size annotation with the webhook's message", () => {
    expect(() => defaultMachinePool(pool(undefined, { [MIN]: "two", [MAX]: "5" }))).toThrow(
      /could not parse the value of the "cluster\.x-k8s\.io\/cluster-api-autoscaler-node-group-min-size" annotation/,
    );
  });
});

describe("compareKubeAwareVersions (how core picks the apiVersion from a contract label)", () => {
  it("orders GA > beta > alpha, then major, then minor", () => {
    const sorted = [
      "v1alpha1",
      "v1beta1",
      "v1",
      "v2",
      "v11beta2",
      "v10beta3",
      "v12alpha1",
      "v1beta2",
      "foo",
    ].sort(compareKubeAwareVersions);
    expect(sorted.reverse()).toEqual([
      "v2",
      "v1",
      "v11beta2",
      "v10beta3",
      "v1beta2",
      "v1beta1",
      "v12alpha1",
      "v1alpha1",
      "foo",
    ]);
  });
});
