/**
 * The rollout strategy of a pool: where it comes from (the pool's `spec.strategy`, the controller's
 * option, the default) and how percentages resolve against the desired replicas.
 *
 * @module
 */

/**
 * Which instances go first when the pool shrinks, after unhealthy, outdated and not-yet-running ones:
 * `Oldest` (launched first), `Newest` (launched last) or `Random` (a stable pseudo-random order, so
 * two reconciles pick the same victim).
 */
export type DeletePolicy = "Oldest" | "Newest" | "Random";

/** An absolute count or a percentage of the desired replicas (`"25%"`), as in a Deployment. */
export type IntOrPercent = number | `${number}%`;

/**
 * Who replaces an out-of-date instance: `RollingUpdate` (default) — the kit, within `maxSurge` and
 * `maxUnavailable` (or the driver's native rollout); `OnDelete` — nobody until it is deleted (its
 * Machine with MachinePool Machines, or the instance itself in the cloud): its replacement then
 * launches from the current template. A MachineDeployment's `OnDelete`, for a pool.
 */
export type StrategyType = "RollingUpdate" | "OnDelete";

/**
 * How a pool rolls out a template change and shrinks — the `spec.strategy` of an InfraMachinePool
 * (`machinePoolStrategySchema` of `@capi-ts/sdk/crd`) or the controller-wide default
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
  /** Who replaces out-of-date instances (see {@link StrategyType}). Default `RollingUpdate`. */
  type?: StrategyType;
  /**
   * An RFC 3339 time (`2026-01-02T15:04:05Z`): once it has passed, every instance launched before it
   * is out of date and replaced like one on an old template, within the rollout budget, as a
   * MachineDeployment's `spec.rollout.after`. Instances launched after it are left alone, so the
   * rollout happens once; set a later time to roll again. A time in the future waits for it.
   */
  rolloutAfter?: string;
}

/** A {@link MachinePoolStrategy} resolved against a desired replica count. */
export interface ResolvedStrategy {
  /** Absolute surge. */
  readonly maxSurge: number;
  /** Absolute unavailability budget. */
  readonly maxUnavailable: number;
  /** Victim order. */
  readonly deletePolicy: DeletePolicy;
  /** Who replaces out-of-date instances; absent: `RollingUpdate`. */
  readonly type?: StrategyType;
  /** `rolloutAfter` in epoch milliseconds, when set. */
  readonly rolloutAfter?: number;
}

/** The built-in strategy: surge one at a time, never below the desired count, oldest first. */
export const DEFAULT_STRATEGY: Required<Omit<MachinePoolStrategy, "type" | "rolloutAfter">> = {
  maxSurge: 1,
  maxUnavailable: 0,
  deletePolicy: "Oldest",
};

/** Which strategy types exist, for the error that names them. */
const STRATEGY_TYPES: readonly StrategyType[] = ["RollingUpdate", "OnDelete"];

/** An RFC 3339 date-time with a zone (`Z` or `±hh:mm`), as a CRD's `format: date-time` accepts. */
const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})$/;

/**
 * `rolloutAfter` as epoch milliseconds; a value that is not an RFC 3339 time with a zone is refused
 * (a time without one would mean a different instant on every machine).
 */
function parseRolloutAfter(value: unknown): number {
  const text = typeof value === "string" ? value : "";
  const ms = RFC3339.test(text) ? Date.parse(text) : Number.NaN;
  if (!Number.isFinite(ms)) {
    throw new RangeError(
      `strategy.rolloutAfter must be an RFC 3339 time with a zone, e.g. "2026-01-02T15:04:05Z", got ${JSON.stringify(value).slice(0, 80)}`,
    );
  }
  return ms;
}

/**
 * Whether `instance` is out of date because of `rolloutAfter`: the time has passed (`now`) and the
 * instance launched before it. An instance whose launch time the cloud does not report (`createdAt`
 * not a positive number) never is: its replacement would not report one either, and would be
 * replaced again and again.
 *
 * @example
 * ```ts
 * predatesRollout({ createdAt: Date.parse("2026-01-01T00:00:00Z") }, { rolloutAfter: Date.parse("2026-02-01T00:00:00Z") }, Date.now()); // true
 * ```
 */
export function predatesRollout(
  instance: { readonly createdAt: number },
  strategy: Pick<ResolvedStrategy, "rolloutAfter">,
  now: number,
): boolean {
  const after = strategy.rolloutAfter;
  if (after === undefined || now < after) return false;
  const created = instance.createdAt;
  return Number.isFinite(created) && created > 0 && created < after;
}

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
  const merged: Required<Omit<MachinePoolStrategy, "type" | "rolloutAfter">> = {
    ...DEFAULT_STRATEGY,
  };
  let type: StrategyType = "RollingUpdate";
  let rolloutAfter: string | undefined;
  for (const layer of layers) {
    if (!layer) continue;
    if (layer.maxSurge !== undefined) merged.maxSurge = layer.maxSurge;
    if (layer.maxUnavailable !== undefined) merged.maxUnavailable = layer.maxUnavailable;
    if (layer.deletePolicy !== undefined) merged.deletePolicy = layer.deletePolicy;
    if (layer.type !== undefined) type = layer.type;
    if (layer.rolloutAfter !== undefined) rolloutAfter = layer.rolloutAfter;
  }
  if (!STRATEGY_TYPES.includes(type)) {
    throw new RangeError(
      `strategy.type must be RollingUpdate or OnDelete, got ${JSON.stringify(type).slice(0, 80)}`,
    );
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
  return {
    maxSurge,
    maxUnavailable,
    deletePolicy: merged.deletePolicy,
    // Only the non-default type is spelled out: a strategy of before it reads the same.
    ...(type === "OnDelete" ? { type } : {}),
    ...(rolloutAfter !== undefined ? { rolloutAfter: parseRolloutAfter(rolloutAfter) } : {}),
  };
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
