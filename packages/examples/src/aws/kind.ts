/**
 * The AWS reference provider's kind, `ASGMachinePool`, defined once from its spec schema.
 *
 * @module
 */
import { defineInfraMachinePool } from "@capi-ts/sdk";
import { ASGMachinePoolSpecSchema } from "./spec.js";

/**
 * `ASGMachinePool` (`infrastructure.cluster.x-k8s.io/v1beta2`): a pool of EC2 instances managed as
 * one Auto Scaling group. In core's infrastructure group, so core's manager already has RBAC on it;
 * named apart from CAPA's `AWSMachinePool` so both can be installed side by side.
 *
 * @example
 * ```ts
 * await api.installCRDs([ASGMachinePool.crd]);
 * ```
 */
export const ASGMachinePool = defineInfraMachinePool({
  group: "infrastructure.cluster.x-k8s.io",
  kind: "ASGMachinePool",
  versions: ["v1beta2"],
  spec: ASGMachinePoolSpecSchema,
  shortNames: ["asgmp"],
  description:
    "A pool of EC2 instances managed as one AWS Auto Scaling group with a launch template.",
});
