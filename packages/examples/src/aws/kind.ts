/**
 * The AWS reference provider's kind, `ASGMachinePool`, defined once from its spec schema.
 *
 * @module
 */
import { defineInfraMachinePool } from "@capi-ts/sdk/crd";
import { ASGMachinePoolSpecSchema } from "./spec.js";

/** The kind with MachinePool Machines (see {@link asgKind}). */
const withMachines = defineInfraMachinePool({
  group: "infrastructure.cluster.x-k8s.io",
  kind: "ASGMachinePool",
  versions: ["v1beta2"],
  spec: ASGMachinePoolSpecSchema,
  shortNames: ["asgmp"],
  // Defines ASGMachinePoolMachine too; kept only for the kind asgKind({ machinePoolMachines: true }).
  machinePoolMachines: true,
  description:
    "A pool of EC2 instances managed as one AWS Auto Scaling group with a launch template.",
});

/**
 * `ASGMachinePool` (`infrastructure.cluster.x-k8s.io/v1beta2`): a pool of EC2 instances managed as
 * one Auto Scaling group, as the provider runs by default (without MachinePool Machines). In core's
 * infrastructure group, so core's manager already has RBAC on it; named apart from CAPA's
 * `AWSMachinePool` so both can be installed side by side.
 *
 * @example
 * ```ts
 * await api.installCRDs([ASGMachinePool.crd]);
 * ```
 */
export const ASGMachinePool: typeof withMachines = { ...withMachines, machine: undefined };

/**
 * The kind with MachinePool Machines (one `ASGMachinePoolMachine` per instance, deletions through
 * core's Machines) or without (the default).
 *
 * @example
 * ```ts
 * machinePoolController(driver, { manager, kind: asgKind({ machinePoolMachines: true }) });
 * ```
 */
export function asgKind(options: { machinePoolMachines?: boolean } = {}) {
  return options.machinePoolMachines ? withMachines : ASGMachinePool;
}
