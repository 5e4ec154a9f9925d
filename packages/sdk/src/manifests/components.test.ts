// renderComponents' autoscalerRole (scale from zero): the rendered YAML grants the cluster-autoscaler
// read access to each kind's InfraMachinePools, nothing more, and only when asked.
import { loadAll } from "js-yaml";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { defineInfraMachinePool } from "../crd/define.js";
import { componentsYAML, renderComponents } from "./components.js";

const kind = (name: string) =>
  defineInfraMachinePool({
    group: "infrastructure.foo.com",
    kind: name,
    versions: ["v1beta2"],
    spec: z.object({}),
    machinePoolMachines: true,
  });
const Foo = kind("FooMachinePool");
const Bar = kind("BarMachinePool");

type Rendered = {
  kind: string;
  metadata: { name: string; labels?: Record<string, string> };
  rules?: unknown[];
  roleRef?: unknown;
  subjects?: unknown[];
};

/** The objects as a cluster gets them: through the YAML. */
function rendered(options: Partial<Parameters<typeof renderComponents>[0]> = {}): Rendered[] {
  const yaml = componentsYAML(
    renderComponents({ name: "foo", kinds: [Foo], image: "ghcr.io/acme/foo:v0.1.0", ...options }),
  );
  return loadAll(yaml) as Rendered[];
}

const roleNamed = (objects: Rendered[], name: string) =>
  objects.find((o) => o.kind === "ClusterRole" && o.metadata.name === name);

describe("renderComponents: autoscalerRole", () => {
  it("renders no role for the autoscaler unless asked", () => {
    const objects = rendered();
    expect(objects.filter((o) => o.metadata.name.includes("autoscaler"))).toEqual([]);
    expect(rendered({ autoscalerRole: false })).toEqual(objects);
  });

  it("with true, a ClusterRole reading every kind's pools, labelled as the provider's", () => {
    const objects = rendered({ kinds: [Foo, Bar], autoscalerRole: true });
    const role = roleNamed(objects, "foo-provider-cluster-autoscaler");
    expect(role).toEqual({
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRole",
      metadata: {
        name: "foo-provider-cluster-autoscaler",
        labels: { "cluster.x-k8s.io/provider": "infrastructure-foo" },
      },
      // Neither templates nor InfraMachines: the autoscaler reads only what infrastructureRef names.
      rules: [
        {
          apiGroups: ["infrastructure.foo.com"],
          resources: ["barmachinepools"],
          verbs: ["get", "list", "watch"],
        },
        {
          apiGroups: ["infrastructure.foo.com"],
          resources: ["foomachinepools"],
          verbs: ["get", "list", "watch"],
        },
      ],
    });
    expect(
      objects.some(
        (o) => o.kind === "ClusterRoleBinding" && o.metadata.name === role?.metadata.name,
      ),
    ).toBe(false);
  });

  it("names it and binds it to the autoscaler's ServiceAccount when told", () => {
    const objects = rendered({
      autoscalerRole: {
        name: "capi-foo-autoscaler",
        serviceAccount: { namespace: "kube-system", name: "cluster-autoscaler" },
      },
    });
    expect(roleNamed(objects, "capi-foo-autoscaler")?.rules).toHaveLength(1);
    expect(
      objects.find(
        (o) => o.kind === "ClusterRoleBinding" && o.metadata.name === "capi-foo-autoscaler",
      ),
    ).toMatchObject({
      roleRef: {
        apiGroup: "rbac.authorization.k8s.io",
        kind: "ClusterRole",
        name: "capi-foo-autoscaler",
      },
      subjects: [{ kind: "ServiceAccount", name: "cluster-autoscaler", namespace: "kube-system" }],
    });
  });

  it("refuses a name or a ServiceAccount Kubernetes would refuse, saying what to give", () => {
    expect(() => rendered({ autoscalerRole: { name: "Cluster Autoscaler" } })).toThrow(
      /autoscalerRole.name "Cluster Autoscaler" must be a DNS subdomain/,
    );
    expect(() =>
      rendered({ autoscalerRole: { serviceAccount: { namespace: "kube.system", name: "ca" } } }),
    ).toThrow(
      /autoscalerRole.serviceAccount.namespace "kube.system" is not a valid namespace; give the cluster-autoscaler's ServiceAccount/,
    );
    expect(() =>
      rendered({ autoscalerRole: { serviceAccount: { namespace: "kube-system", name: "" } } }),
    ).toThrow(/autoscalerRole.serviceAccount.name "" is not a valid name/);
  });
});
