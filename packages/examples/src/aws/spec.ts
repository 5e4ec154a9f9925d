/**
 * The spec of `ASGMachinePool`, the AWS reference provider's InfraMachinePool kind: an Auto Scaling
 * group launched from a launch template.
 *
 * @module
 */
import { z } from "zod";

/** `ASGMachinePool.spec`. */
export interface ASGMachinePoolSpec {
  /** EC2 instance type, e.g. `t3.medium`. Changing it rolls the pool. */
  instanceType: string;
  /** AMI ID (`ami-…`) of a Kubernetes node image. Changing it rolls the pool. */
  imageId: string;
  /** Lower bound of the group's size (`MinSize`). */
  minSize: number;
  /** Upper bound of the group's size (`MaxSize`). */
  maxSize: number;
  /**
   * Availability zones to use when the MachinePool names no failure domains. Default: the
   * provider's default zones.
   */
  availabilityZones?: string[];
}

/** Zod schema of {@link ASGMachinePoolSpec}. */
export const ASGMachinePoolSpecSchema = z
  .object({
    instanceType: z
      .string()
      .regex(/^[a-z0-9-]+\.[a-z0-9-]+$/, "an EC2 instance type, e.g. t3.medium"),
    imageId: z.string().regex(/^ami-[0-9a-f]{8,17}$/, "an AMI ID, e.g. ami-0123456789abcdef0"),
    minSize: z.number().int().min(0),
    maxSize: z.number().int().min(0),
    availabilityZones: z.array(z.string().min(1)).min(1).optional(),
  })
  .refine((spec) => spec.minSize <= spec.maxSize, {
    message: "minSize must not be greater than maxSize",
    path: ["minSize"],
  });
