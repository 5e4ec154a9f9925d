/**
 * The zod schema of the standard `spec.strategy` field, beside the kind's definition: the kit's
 * strategy planning (`provider/strategy.ts`) reads the parsed values and loads no zod.
 *
 * @module
 */
import * as z from "zod";

/**
 * The zod schema of the standard `spec.strategy` field ({@link MachinePoolStrategy} with absolute
 * counts: CRD schemas have no int-or-string type here; percentages are for the controller option).
 * Add it to your InfraMachinePool spec and the kit reads it for each pool (it wins over the
 * controller's `strategy` option, which wins over {@link DEFAULT_STRATEGY}).
 *
 * @example
 * ```ts
 * const FooMachinePool = defineInfraMachinePool({
 *   group: "infrastructure.foo.com", kind: "FooMachinePool", versions: ["v1beta2"],
 *   spec: z.object({ instanceType: z.string(), strategy: machinePoolStrategySchema.optional() }),
 * });
 * ```
 */
export const machinePoolStrategySchema: z.ZodObject<{
  maxSurge: z.ZodOptional<z.ZodNumber>;
  maxUnavailable: z.ZodOptional<z.ZodNumber>;
  deletePolicy: z.ZodOptional<z.ZodEnum<{ Oldest: "Oldest"; Newest: "Newest"; Random: "Random" }>>;
  type: z.ZodOptional<z.ZodEnum<{ RollingUpdate: "RollingUpdate"; OnDelete: "OnDelete" }>>;
  rolloutAfter: z.ZodOptional<z.ZodISODateTime>;
}> = z.object({
  maxSurge: z
    .number()
    .int()
    .min(0)
    .optional()
    .describe("Instances that may exist above the desired replicas during a rollout. Default 1."),
  maxUnavailable: z
    .number()
    .int()
    .min(0)
    .optional()
    .describe("Instances that may be unavailable during a rollout. Default 0."),
  deletePolicy: z
    .enum(["Oldest", "Newest", "Random"])
    .optional()
    .describe("Which instances go first on scale-down: Oldest (default), Newest or Random."),
  type: z
    .enum(["RollingUpdate", "OnDelete"])
    .optional()
    .describe(
      "RollingUpdate (default): out-of-date instances are replaced within maxSurge and maxUnavailable. OnDelete: an out-of-date instance is replaced only once it is deleted, from the current template.",
    ),
  rolloutAfter: z.iso
    .datetime({ offset: true })
    .optional()
    .describe(
      "Once this time has passed, every instance launched before it is replaced within the rollout budget (as a MachineDeployment's spec.rollout.after).",
    ),
});
