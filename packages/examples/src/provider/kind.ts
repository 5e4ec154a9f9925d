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
 * console.log(FakeCloudMachinePool.toYAML()); // CRDs (pool, template, InfraMachine) and ClusterRole
 * ```
 */
export const FakeCloudMachinePool = defineInfraMachinePool({
  group: "infrastructure.cluster.x-k8s.io",
  kind: "FakeCloudMachinePool",
  versions: ["v1beta2"],
  spec: FakeCloudMachinePoolSpecSchema,
  shortNames: ["fcmp"],
  // The InfraMachine kind FakeCloudMachinePoolMachine; the kit uses it only when the controller is
  // given a kind with `machine` (see withMachinePoolMachines).
  machinePoolMachines: true,
  description: "A pool of instances in the fake scaling-group cloud, managed as one scaling group.",
});

/**
 * The kind as the controller and the conformance suite get it: with MachinePool Machines (one
 * `FakeCloudMachinePoolMachine` per instance, deletions through core's Machines) or without (the
 * default: the pool alone).
 *
 * @example
 * ```ts
 * machinePoolController(driver, { manager, kind: fakeCloudKind({ machinePoolMachines: true }) });
 * ```
 */
export function fakeCloudKind(options: { machinePoolMachines?: boolean } = {}) {
  return options.machinePoolMachines
    ? FakeCloudMachinePool
    : { ...FakeCloudMachinePool, machine: undefined };
}
