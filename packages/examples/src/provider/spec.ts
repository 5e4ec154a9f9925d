/**
 * The spec of `FakeCloudMachinePool`, the example provider's InfraMachinePool kind: what a user writes
 * in YAML to get a pool of fake-cloud instances.
 *
 * @module
 */
import type { MachinePoolStrategy } from "@capi-ts/sdk";
import { machinePoolStrategySchema } from "@capi-ts/sdk/crd";
import { z } from "zod";

/** `FakeCloudMachinePool.spec`. */
export interface FakeCloudMachinePoolSpec {
  /** Instance size, e.g. `small`. Changing it rolls the pool. */
  instanceType: string;
  /** Machine image. Default: `fake-k8s-<Kubernetes version>`. Changing it rolls the pool. */
  image?: string;
  /** Lower bound of the group's size. */
  minSize: number;
  /** Upper bound of the group's size. */
  maxSize: number;
  /** Zones to use when the MachinePool names no failure domains. Default: every zone of the region. */
  zones?: string[];
  /**
   * Launch on spot capacity the cloud may reclaim at any time. Changing it rolls the pool; with
   * MachinePool Machines core labels the Nodes `cluster.x-k8s.io/interruptible`.
   */
  spot?: boolean;
  /**
   * How the pool rolls out and shrinks: `maxSurge`, `maxUnavailable`, `deletePolicy`, `type`
   * (`RollingUpdate` or `OnDelete`) and `rolloutAfter` (the kit's `spec.strategy`). Changing it
   * replaces no instance by itself (but a `rolloutAfter` that has passed does).
   */
  strategy?: MachinePoolStrategy;
}

/** Zod schema of {@link FakeCloudMachinePoolSpec} (a zod object, so `defineInfraMachinePool` takes it). */
export const FakeCloudMachinePoolSpecSchema = z
  .object({
    instanceType: z.string().min(1),
    image: z.string().min(1).optional(),
    minSize: z.number().int().min(0),
    maxSize: z.number().int().min(0),
    zones: z.array(z.string().min(1)).min(1).optional(),
    spot: z.boolean().optional(),
    strategy: machinePoolStrategySchema.optional(),
  })
  .refine((spec) => spec.minSize <= spec.maxSize, {
    message: "minSize must not be greater than maxSize",
    path: ["minSize"],
  });
