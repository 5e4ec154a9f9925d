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

describe("renderComponents: credentials, env, volumes and extra objects", () => {
  type Container = {
    env: Array<Record<string, unknown>>;
    volumeMounts: Array<Record<string, unknown>>;
  };
  type Deployment = Rendered & {
    spec: {
      template: {
        spec: { containers: Container[]; volumes: Array<Record<string, unknown>> };
      };
    };
  };
  const deployment = (objects: Rendered[]) =>
    objects.find((o) => o.kind === "Deployment") as Deployment;

  it("ships a Secret from a clusterctl variable, mounted and as env, beside the webhook certificate", () => {
    const objects = rendered({
      secrets: [
        {
          name: "credentials",
          data: { credentials: "${FOO_B64ENCODED_CREDENTIALS}" },
          mountPath: "/home/.foo",
          env: [{ name: "FOO_CREDENTIALS", key: "credentials" }],
        },
      ],
      env: [
        { name: "FOO_REGION", value: "${FOO_REGION:=eu-1}" },
        { name: "FOO_TOKEN", valueFrom: { secretKeyRef: { name: "mine", key: "token" } } },
      ],
    });
    const secret = objects.find((o) => o.kind === "Secret") as Rendered & {
      metadata: { namespace: string };
      data: Record<string, string>;
    };
    expect(secret.metadata).toMatchObject({
      name: "foo-provider-credentials",
      namespace: "foo-provider-system",
      labels: { "cluster.x-k8s.io/provider": "infrastructure-foo" },
    });
    expect(secret.data).toEqual({ credentials: "${FOO_B64ENCODED_CREDENTIALS}" });
    const pod = deployment(objects).spec.template.spec;
    const container = pod.containers[0] as Container;
    expect(pod.volumes.map((v) => v.name)).toEqual(["cert", "credentials"]);
    expect(pod.volumes[1]).toEqual({
      name: "credentials",
      secret: { secretName: "foo-provider-credentials" },
    });
    expect(container.volumeMounts).toContainEqual({
      name: "credentials",
      mountPath: "/home/.foo",
      readOnly: true,
    });
    expect(container.env).toEqual(
      expect.arrayContaining([
        { name: "FOO_REGION", value: "${FOO_REGION:=eu-1}" },
        { name: "FOO_TOKEN", valueFrom: { secretKeyRef: { name: "mine", key: "token" } } },
        {
          name: "FOO_CREDENTIALS",
          valueFrom: { secretKeyRef: { name: "foo-provider-credentials", key: "credentials" } },
        },
      ]),
    );
  });

  it("adds volumes and extra objects, the latter labelled and namespaced", () => {
    const objects = rendered({
      volumes: [{ name: "cache", source: { emptyDir: {} }, mountPath: "/cache", readOnly: false }],
      extraObjects: [
        { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "foo-settings" } },
        {
          apiVersion: "rbac.authorization.k8s.io/v1",
          kind: "ClusterRole",
          metadata: { name: "r" },
        },
      ],
    });
    const pod = deployment(objects).spec.template.spec;
    expect(pod.volumes).toContainEqual({ name: "cache", emptyDir: {} });
    expect((pod.containers[0] as Container).volumeMounts).toContainEqual({
      name: "cache",
      mountPath: "/cache",
      readOnly: false,
    });
    const map = objects.find((o) => o.kind === "ConfigMap") as Rendered & {
      metadata: { namespace?: string };
    };
    expect(map.metadata.namespace).toBe("foo-provider-system");
    expect(map.metadata.labels).toEqual({ "cluster.x-k8s.io/provider": "infrastructure-foo" });
    const role = objects.find((o) => o.kind === "ClusterRole" && o.metadata.name === "r") as
      | (Rendered & { metadata: { namespace?: string } })
      | undefined;
    expect(role?.metadata.namespace).toBeUndefined();
  });

  it("refuses what the pod would refuse, saying what to give", () => {
    const render = (options: Partial<Parameters<typeof renderComponents>[0]>) => () =>
      renderComponents({ name: "foo", kinds: [Foo], image: "i", ...options });
    expect(
      render({ volumes: [{ name: "cert", source: { emptyDir: {} }, mountPath: "/x" }] }),
    ).toThrow(/"cert" is used twice \(cert is the webhook certificate's volume\)/);
    expect(render({ secrets: [{ name: "Creds", data: { a: "b" } }] })).toThrow(
      /must be a DNS label/,
    );
    expect(render({ secrets: [{ name: "c", data: {}, mountPath: "/c" }] })).toThrow(/has no data/);
    expect(render({ secrets: [{ name: "c", data: { a: "b" }, mountPath: "home" }] })).toThrow(
      /must be an absolute path/,
    );
    expect(
      render({ secrets: [{ name: "c", data: { a: "b" }, env: [{ name: "X", key: "z" }] }] }),
    ).toThrow(/reads key "z", which its data lacks \(keys: a\)/);
    expect(
      render({
        secrets: [
          { name: "c", data: { a: "b" }, mountPath: "/tmp/k8s-webhook-server/serving-certs" },
        ],
      }),
    ).toThrow(/is already mounted/);
  });
});
