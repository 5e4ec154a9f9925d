/**
 * The provider's kind, defined once: the CRDs, the template CRD, the aggregated ClusterRole and the
 * finalizer all come from this definition.
 */
import { defineInfraMachinePool, machinePoolStrategySchema } from "@capi-ts/sdk/crd";
import * as z from "zod";

/** What a user writes in `spec` (the contract fields such as providerIDList are added by the SDK). */
export const FooMachinePoolSpecSchema = z.object({
  /** TODO: your cloud's machine type names. */
  instanceType: z.string().min(1),
  /** Lower bound the cloud enforces on the group's size. */
  minSize: z.number().int().min(0),
  /** Upper bound the cloud enforces on the group's size. */
  maxSize: z.number().int().min(0),
  /** Zones to spread over (default: the MachinePool's failure domains, else the cloud's default). */
  zones: z.array(z.string().min(1)).optional(),
  /**
   * How the kit rolls out and shrinks the pool: maxSurge, maxUnavailable, deletePolicy, type
   * (RollingUpdate or OnDelete) and rolloutAfter. Changing it replaces no instance by itself.
   */
  strategy: machinePoolStrategySchema.optional(),
});

/** The spec as the driver reads it. */
export type FooMachinePoolSpec = z.output<typeof FooMachinePoolSpecSchema>;

/** `FooMachinePool` and `FooMachinePoolTemplate` in `infrastructure.foo.example.com/v1beta2`. */
export const FooMachinePool = defineInfraMachinePool({
  group: "infrastructure.foo.example.com",
  kind: "FooMachinePool",
  versions: ["v1beta2"],
  spec: FooMachinePoolSpecSchema,
  description: "A pool of foo instances managed as one scaling group.",
  // MachinePool Machines (CAPI's R11): with true, a FooMachinePoolMachine per instance, so that each
  // instance is a Machine users and MachineHealthChecks see, and core drains its Node before the kit
  // deletes it. Its CRD, RBAC and the conformance scenarios follow this definition.
  machinePoolMachines: false,
});

/**
 * Checks the webhook runs on create and update (the CRD schema already checked types and bounds).
 * One message per problem, field path first.
 */
export function validateFooMachinePoolSpec(spec: FooMachinePoolSpec): string[] {
  const problems: string[] = [];
  if (spec.minSize > spec.maxSize) {
    problems.push(
      `spec.minSize: Invalid value: ${spec.minSize}: must not exceed spec.maxSize (${spec.maxSize})`,
    );
  }
  return problems;
}
