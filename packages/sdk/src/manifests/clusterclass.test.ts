import { describe, expect, it } from "vitest";
import { clusterClassFlavor } from "./clusterclass.js";
import { componentsYAML } from "./components.js";
import { clusterctlVariables } from "./variables.js";

const kind = {
  group: "infrastructure.foo.example.com",
  storageVersion: "v1beta2",
  templateKind: "FooMachinePoolTemplate",
};
const templates = {
  infrastructureCluster: {
    apiVersion: "infrastructure.foo.example.com/v1beta2",
    kind: "FooClusterTemplate",
    metadata: { name: "" },
    spec: { template: { spec: {} } },
  },
  controlPlane: {
    apiVersion: "controlplane.cluster.x-k8s.io/v1beta2",
    kind: "KubeadmControlPlaneTemplate",
    metadata: { name: "" },
    spec: { template: { spec: { kubeadmConfigSpec: {} } } },
  },
};

describe("clusterClassFlavor", () => {
  it("names every template it ships from the class, and the pool class names the kind's template", () => {
    const { clusterClass, cluster } = clusterClassFlavor({
      kind,
      className: "foo-default",
      poolSpec: { instanceType: "small" },
      templates,
    });
    const [cc, ...shipped] = clusterClass;
    expect(cc?.kind).toBe("ClusterClass");
    const spec = cc?.spec as {
      infrastructure: { templateRef: unknown };
      controlPlane: { templateRef: unknown };
      workers: {
        machinePools: {
          class: string;
          bootstrap: { templateRef: unknown };
          infrastructure: { templateRef: unknown };
        }[];
      };
    };
    const refs = [
      spec.infrastructure.templateRef,
      spec.controlPlane.templateRef,
      spec.workers.machinePools[0]?.bootstrap.templateRef,
      spec.workers.machinePools[0]?.infrastructure.templateRef,
    ];
    // Each reference names exactly one shipped template, and every shipped template is named.
    expect(refs).toEqual(
      shipped.map((t) => ({ apiVersion: t.apiVersion, kind: t.kind, name: t.metadata?.name })),
    );
    expect(shipped.map((t) => t.kind)).toEqual([
      "FooClusterTemplate",
      "KubeadmControlPlaneTemplate",
      "KubeadmConfigTemplate",
      "FooMachinePoolTemplate",
    ]);
    expect(shipped[3]?.spec).toEqual({ template: { spec: { instanceType: "small" } } });
    const topology = (cluster.spec as { topology: Record<string, unknown> }).topology;
    expect(topology).toMatchObject({
      classRef: { name: "foo-default" },
      workers: { machinePools: [{ class: spec.workers.machinePools[0]?.class, name: "pool-0" }] },
    });
    expect(
      clusterctlVariables(componentsYAML([...clusterClass, cluster])).map((v) => v.name),
    ).toEqual(["NAMESPACE", "CLUSTER_NAME", "KUBERNETES_VERSION", "WORKER_MACHINE_COUNT"]);
  });
});
