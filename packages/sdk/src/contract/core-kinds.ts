/**
 * The CAPI core kinds the kit reads, as the runtime addresses them. The generated API modules carry
 * the same metadata plus zod schemas and Model classes; importing them costs several MiB of heap and
 * most of a provider's start-up, so the kit's own code names its kinds here and imports the generated
 * types only as types.
 */
import type { Cluster, Machine, MachinePool } from "../api/cluster.x-k8s.io/v1beta2.js";
import type { ResourceDescriptor } from "../runtime/resource.js";

/** `cluster.x-k8s.io/v1beta2` Cluster. */
export const CoreCluster: ResourceDescriptor<Cluster> = {
  group: "cluster.x-k8s.io",
  version: "v1beta2",
  kind: "Cluster",
  plural: "clusters",
  scope: "Namespaced",
  subresources: { status: true },
};

/** `cluster.x-k8s.io/v1beta2` MachinePool. */
export const CoreMachinePool: ResourceDescriptor<MachinePool> = {
  group: "cluster.x-k8s.io",
  version: "v1beta2",
  kind: "MachinePool",
  plural: "machinepools",
  scope: "Namespaced",
  subresources: { status: true },
};

/** `cluster.x-k8s.io/v1beta2` Machine. */
export const CoreMachine: ResourceDescriptor<Machine> = {
  group: "cluster.x-k8s.io",
  version: "v1beta2",
  kind: "Machine",
  plural: "machines",
  scope: "Namespaced",
  subresources: { status: true },
};
