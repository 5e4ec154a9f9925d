/**
 * The example provider's kind: `FakeCloudMachinePool`, defined once from its spec schema. The CRD,
 * the template CRD, the RBAC role and the finalizer all come from this definition.
 *
 * @module
 */
import { defineInfraMachinePool } from "@capi-ts/sdk";
import { FakeCloudMachinePoolSpecSchema } from "./spec.js";

/**
 * `FakeCloudMachinePool` (`infrastructure.cluster.x-k8s.io/v1beta2`): core's manager already has RBAC
 * on this group, so nothing else is needed to install it next to CAPI.
 *
 * @example
 * ```ts
 * await api.installCRDs([FakeCloudMachinePool.crd]);
 * console.log(FakeCloudMachinePool.toYAML()); // CRD, template CRD and ClusterRole for kubectl apply
 * ```
 */
export const FakeCloudMachinePool = defineInfraMachinePool({
  group: "infrastructure.cluster.x-k8s.io",
  kind: "FakeCloudMachinePool",
  versions: ["v1beta2"],
  spec: FakeCloudMachinePoolSpecSchema,
  shortNames: ["fcmp"],
  description: "A pool of instances in the fake scaling-group cloud, managed as one scaling group.",
});
