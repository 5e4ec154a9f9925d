/**
 * The rollout strategy of a pool: where it comes from (the pool's `spec.strategy`, the controller's
 * option, the default), its schema for a provider's spec, and how percentages resolve against the
 * desired replicas.
 *
 * @module
 */
import { z } from "zod";

/**
 * Which instances go first when the pool shrinks, after unhealthy, outdated and not-yet-running ones:
 * `Oldest` (launched first), `Newest` (launched last) or `Random` (a stable pseudo-random order, so
 * two reconciles pick the same victim).
 */
export type DeletePolicy = "Oldest" | "Newest" | "Random";

/** An absolute count or a percentage of the desired replicas (`"25%"`), as in a Deployment. */
export type IntOrPercent = number | `${number}%`;

/**
 * How a pool rolls out a template change and shrinks — the `spec.strategy` of an InfraMachinePool
 * (see {@link machinePoolStrategySchema}) or the controller-wide default
 * (`MachinePoolControllerOptions.strategy`).
 */
export interface MachinePoolStrategy {
  /**
   * Instances that may exist above the desired replicas during a rollout (new ones launch before old
   * ones go). A percentage rounds up. Default 1. Ignored (0) when an autoscaler manages the replicas.
   */
  maxSurge?: IntOrPercent;
  /**
   * Instances that may be unavailable during a rollout (old ones go before new ones are ready). A
   * percentage rounds down. Default 0. When both resolve to 0, 1 is used (as a Deployment does).
   */
  maxUnavailable?: IntOrPercent;
  /** Victim order on scale-down, after unhealthy, outdated and pending instances. Default `Oldest`. */
  deletePolicy?: DeletePolicy;
}

/** A {@link MachinePoolStrategy} resolved against a desired replica count. */
export interface ResolvedStrategy {
  /** Absolute surge. */
  readonly maxSurge: number;
  /** Absolute unavailability budget. */
  readonly maxUnavailable: number;
  /** Victim order. */
  readonly deletePolicy: DeletePolicy;
}

/** The built-in strategy: surge one at a time, never below the desired count, oldest first. */
export const DEFAULT_STRATEGY: Required<MachinePoolStrategy> = {
  maxSurge: 1,
  maxUnavailable: 0,
  deletePolicy: "Oldest",
};

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
});

function resolveIntOrPercent(
  value: IntOrPercent,
  desired: number,
  roundUp: boolean,
  field: string,
): number {
  if (typeof value === "number") {
    if (!Number.isInteger(value) || value < 0) {
      throw new RangeError(`strategy.${field} must be an integer ≥ 0 or "N%", got ${value}`);
    }
    return value;
  }
  const match = /^(\d+)%$/.exec(value);
  if (!match || Number(match[1]) > 100) {
    throw new RangeError(
      `strategy.${field} must be an integer ≥ 0 or a percentage "0%"…"100%", got ${JSON.stringify(value)}`,
    );
  }
  const scaled = (Number(match[1]) * desired) / 100;
  return roundUp ? Math.ceil(scaled) : Math.floor(scaled);
}

/**
 * Merges strategies (later wins, field by field) over {@link DEFAULT_STRATEGY} and resolves them
 * against `desired`. With `externallyManaged` there is no surge (the kit never sets the group's size
 * then). If both budgets are 0, `maxUnavailable` becomes 1 so a rollout can progress.
 *
 * @example
 * ```ts
 * resolveStrategy(10, false, { maxSurge: "25%", maxUnavailable: "25%" });
 * // { maxSurge: 3, maxUnavailable: 2, deletePolicy: "Oldest" }
 * ```
 */
export function resolveStrategy(
  desired: number,
  externallyManaged: boolean,
  ...layers: readonly (MachinePoolStrategy | undefined)[]
): ResolvedStrategy {
  const merged: Required<MachinePoolStrategy> = { ...DEFAULT_STRATEGY };
  for (const layer of layers) {
    if (!layer) continue;
    if (layer.maxSurge !== undefined) merged.maxSurge = layer.maxSurge;
    if (layer.maxUnavailable !== undefined) merged.maxUnavailable = layer.maxUnavailable;
    if (layer.deletePolicy !== undefined) merged.deletePolicy = layer.deletePolicy;
  }
  if (!["Oldest", "Newest", "Random"].includes(merged.deletePolicy)) {
    throw new RangeError(
      `strategy.deletePolicy must be Oldest, Newest or Random, got ${JSON.stringify(merged.deletePolicy)}`,
    );
  }
  const maxSurge = externallyManaged
    ? 0
    : resolveIntOrPercent(merged.maxSurge, desired, true, "maxSurge");
  let maxUnavailable = resolveIntOrPercent(merged.maxUnavailable, desired, false, "maxUnavailable");
  if (maxSurge === 0 && maxUnavailable === 0) maxUnavailable = 1;
  return { maxSurge, maxUnavailable, deletePolicy: merged.deletePolicy };
}

/**
 * A rollout's limits as a cloud's percentages of `replicas`: the share that must stay healthy
 * (rounded up, so that at most `maxUnavailable` instances are down) and the share the group may grow
 * to (rounded down, so that at most `maxSurge` extra instances exist), clamped to 0–100 and 100–200
 * as AWS instance refresh takes them. An empty pool gives 100/100.
 *
 * @example
 * ```ts
 * rolloutPercentages(3, 1, 0); // { minHealthyPercent: 100, maxHealthyPercent: 133 }
 * rolloutPercentages(4, 0, 1); // { minHealthyPercent: 75, maxHealthyPercent: 100 }
 * ```
 */
export function rolloutPercentages(
  replicas: number,
  maxSurge: number,
  maxUnavailable: number,
): { minHealthyPercent: number; maxHealthyPercent: number } {
  if (replicas <= 0) return { minHealthyPercent: 100, maxHealthyPercent: 100 };
  const healthy = Math.max(0, replicas - maxUnavailable);
  const minHealthyPercent = Math.min(100, Math.ceil((healthy * 100) / replicas));
  const maxHealthyPercent = Math.min(
    200,
    Math.max(100, Math.floor(((replicas + maxSurge) * 100) / replicas)),
  );
  return { minHealthyPercent, maxHealthyPercent };
}
