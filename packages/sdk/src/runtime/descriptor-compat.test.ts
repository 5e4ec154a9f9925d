import { KubeConfig } from "@kubernetes/client-node";
import { describe, expect, expectTypeOf, it } from "vitest";
import { clusterv1beta2 } from "../api/index.js";
import { KubeClient } from "./client.js";
import {
  hasStatusSubresource,
  isNamespaced,
  type ResourceDescriptor,
  resourcePath,
  SecretResource,
} from "./resource.js";

describe("generated resource metadata as runtime descriptors", () => {
  it("addresses generated kinds by their metadata, with no discovery", () => {
    const pools = clusterv1beta2.MachinePoolResource;
    expect(isNamespaced(pools)).toBe(true);
    expect(hasStatusSubresource(pools)).toBe(true);
    expect(resourcePath(pools, { namespace: "ns", name: "p" }, "status")).toBe(
      "/apis/cluster.x-k8s.io/v1beta2/namespaces/ns/machinepools/p/status",
    );
    expect(isNamespaced(SecretResource)).toBe(true);
    expect(hasStatusSubresource(SecretResource)).toBeUndefined();
    const untyped = { group: "", version: "v1", kind: "X", plural: "xs" } as ResourceDescriptor;
    expect(() => isNamespaced(untyped)).toThrow(
      'the descriptor of X has scope undefined; give it scope: "Namespaced" or scope: "Cluster", as in its CRD',
    );
    expect(() => isNamespaced({ ...untyped, scope: "namespaced" as "Namespaced" })).toThrow(
      /has scope "namespaced"/,
    );
  });

  it("infers the object type from the generated metadata", () => {
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromOptions({
      clusters: [{ name: "c", server: "http://127.0.0.1:1", skipTLSVerify: true }],
      users: [{ name: "u" }],
      contexts: [{ name: "x", cluster: "c", user: "u" }],
      currentContext: "x",
    });
    const client = new KubeClient(kubeConfig);
    // Type-level only: the requests are never awaited.
    const get = () =>
      client.get(clusterv1beta2.MachinePoolResource, { namespace: "ns", name: "p" });
    expectTypeOf(get).returns.resolves.toEqualTypeOf<clusterv1beta2.MachinePool>();
    const secret = () => client.get(SecretResource, { namespace: "ns", name: "s" });
    expectTypeOf(secret).returns.resolves.toHaveProperty("data");
    const descriptor: ResourceDescriptor<clusterv1beta2.Cluster> = clusterv1beta2.ClusterResource;
    expect(descriptor.kind).toBe("Cluster");
  });
});
