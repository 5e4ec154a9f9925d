/**
 * The InfraCluster kind whose objects name each Cluster's identity (`spec.identityRef.name`). The
 * kit watches it, reads the one a pool's Cluster names in `spec.infrastructureRef`, and hands it to
 * the credentials hook (src/credentials.ts).
 * TODO: your cloud's InfraCluster kind (this provider's own, or another provider's, e.g. CAPA's
 * `AWSCluster`), with its CRD installed beside this provider's.
 */
import type { ResourceDescriptor } from "@capi-ts/sdk/runtime";
import type { KubernetesObject } from "@kubernetes/client-node";

/** A FooCluster as the credentials hook reads it. */
export interface FooClusterObject {
  readonly metadata?: { readonly name?: string; readonly namespace?: string };
  readonly spec?: {
    /** The Secret (in the Cluster's namespace) holding this Cluster's credentials. */
    readonly identityRef?: { readonly name?: string };
  };
}

/** `FooCluster` in `infrastructure.foo.example.com/v1beta2`. */
export const FooCluster: ResourceDescriptor<FooClusterObject & KubernetesObject> = {
  group: "infrastructure.foo.example.com",
  version: "v1beta2",
  kind: "FooCluster",
  plural: "fooclusters",
  scope: "Namespaced",
};
