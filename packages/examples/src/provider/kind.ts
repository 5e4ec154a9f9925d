/**
 * The example provider's kind: `FakeCloudMachinePool`, defined once from its spec schema. The CRD,
 * the template CRD, the RBAC role and the finalizer all come from this definition.
 *
 * @module
 */
import { defineInfraMachinePool } from "@capi-ts/sdk/crd";
import { FakeCloudMachinePoolSpecSchema } from "./spec.js";

/** The kind with MachinePool Machines (see {@link fakeCloudKind}). */
const withMachines = defineInfraMachinePool({
  group: "infrastructure.cluster.x-k8s.io",
  kind: "FakeCloudMachinePool",
  versions: ["v1beta2"],
  spec: FakeCloudMachinePoolSpecSchema,
  shortNames: ["fcmp"],
  // Defines FakeCloudMachinePoolMachine too; the kit keeps them only for a kind that carries
  // `machine` (fakeCloudKind({ machinePoolMachines: true })).
  machinePoolMachines: true,
  description: "A pool of instances in the fake scaling-group cloud, managed as one scaling group.",
});

/**
 * `FakeCloudMachinePool` (`infrastructure.cluster.x-k8s.io/v1beta2`) as the example runs by default:
 * without MachinePool Machines (`machine` unset, so the kit keeps no InfraMachines and components carry
 * no InfraMachine CRD). Core's manager already has RBAC on this group, so nothing else is needed to
 * install it next to CAPI. `manifests()` and `toYAML()` still include the InfraMachine CRD, so that
 * switching to {@link fakeCloudKind}`({ machinePoolMachines: true })` needs nothing more installed.
 *
 * @example
 * ```ts
 * await api.installCRDs([FakeCloudMachinePool.crd]);
 * console.log(FakeCloudMachinePool.toYAML()); // CRDs (pool, template, InfraMachine) and ClusterRole
 * ```
 */
export const FakeCloudMachinePool: typeof withMachines = { ...withMachines, machine: undefined };

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
  return options.machinePoolMachines ? withMachines : FakeCloudMachinePool;
}
