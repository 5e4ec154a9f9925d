/**
 * The kit's rollout and scaling engine as pure functions: the rollout strategy (where it comes from,
 * how percentages resolve), which instances are outdated, the order victims are picked in, and the
 * plan of cloud changes one reconcile makes. No I/O: the reconciler feeds it one consistent snapshot of
 * the group and executes the plan.
 *
 * @module
 */
import { createHash } from "node:crypto";
import { z } from "zod";
import type { PoolInstance, PoolInstanceState, TemplateStamp, TemplateVersion } from "./driver.js";

// ── strategy ────────────────────────────────────────────────────────────────────────────────────

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

// ── stamps and hashes ───────────────────────────────────────────────────────────────────────────

/** JSON with object keys sorted and `undefined` members dropped: equal values, equal text. */
export function stableStringify(value: unknown): string {
  if (value === undefined) return "null";
  if (value === null || typeof value !== "object") {
    if (typeof value === "number" && !Number.isFinite(value)) {
      throw new TypeError(`cannot hash a non-finite number (${value}) in template inputs`);
    }
    if (typeof value === "bigint" || typeof value === "function" || typeof value === "symbol") {
      throw new TypeError(`template inputs must be JSON; got a ${typeof value}`);
    }
    return JSON.stringify(value);
  }
  if (Array.isArray(value)) return `[${value.map(stableStringify).join(",")}]`;
  if (value instanceof Date) return JSON.stringify(value.toISOString());
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${stableStringify(v)}`).join(",")}}`;
}

/** 40 lowercase hex characters of SHA-256: short enough for any cloud's tag or label value. */
export function shortHash(data: string | Uint8Array): string {
  return createHash("sha256").update(data).digest("hex").slice(0, 40);
}

/**
 * The stamp the pool's template should carry: `specHash` from the driver's template inputs,
 * `bootstrapHash` from the bootstrap payload, `bootstrapRef` from the secret's namespace/name.
 *
 * @example
 * ```ts
 * targetStamp({ image: "ami-1" }, Buffer.from(userData), "default/pool-a-bootstrap-1");
 * ```
 */
export function targetStamp(
  templateInputs: unknown,
  bootstrapData: string | Uint8Array,
  bootstrapRef: string,
): TemplateStamp {
  return {
    specHash: shortHash(stableStringify(templateInputs)),
    bootstrapHash: shortHash(bootstrapData),
    bootstrapRef: shortHash(bootstrapRef),
  };
}

/** Whether instances launched from `stamp` run what `target` describes (token-only changes don't count). */
export function stampIsCurrent(stamp: TemplateStamp | undefined, target: TemplateStamp): boolean {
  return (
    stamp !== undefined &&
    stamp.specHash === target.specHash &&
    stamp.bootstrapRef === target.bootstrapRef
  );
}

/** Whether a template version can be used as is (same spec, same bootstrap data). */
export function stampIsExact(stamp: TemplateStamp | undefined, target: TemplateStamp): boolean {
  return stampIsCurrent(stamp, target) && stamp?.bootstrapHash === target.bootstrapHash;
}

/**
 * Template versions that may be deleted: not the newest (last in the driver's order), not the
 * group's, and not the launch version of any instance that is not terminated.
 *
 * @example
 * ```ts
 * prunableVersions(versions, group.templateVersion, group.instances); // ["1", "2"]
 * ```
 */
export function prunableVersions(
  versions: readonly TemplateVersion[],
  groupVersion: string | undefined,
  instances: readonly PoolInstance[],
): string[] {
  const inUse = new Set<string>();
  if (groupVersion !== undefined) inUse.add(groupVersion);
  for (const instance of instances) {
    if (instance.state !== "terminated" && instance.templateVersion !== undefined) {
      inUse.add(instance.templateVersion);
    }
  }
  const newest = versions[versions.length - 1]?.version;
  return versions.map((v) => v.version).filter((v) => v !== newest && !inUse.has(v));
}

// ── instances ───────────────────────────────────────────────────────────────────────────────────

const GOING: ReadonlySet<PoolInstanceState> = new Set(["terminating", "terminated"]);

/** Instances that count as members: everything but `terminating` and `terminated`. */
export function liveInstances(instances: readonly PoolInstance[]): PoolInstance[] {
  return instances.filter((instance) => !GOING.has(instance.state));
}

/** Running and not failing its health check. */
export function isInstanceAvailable(instance: PoolInstance): boolean {
  return instance.state === "running" && instance.healthy !== false;
}

function isUnhealthy(instance: PoolInstance): boolean {
  return (
    instance.healthy === false ||
    instance.state === "stopping" ||
    instance.state === "stopped" ||
    instance.state === "failed"
  );
}

/**
 * Instances in the order the kit deletes them: unhealthy (failing health check, stopping, stopped,
 * failed) first, then outdated, then not yet running, then by the delete policy; ties by ID.
 *
 * @example
 * ```ts
 * const [victim] = victimOrder(live, (i) => current.has(i.templateVersion), "Oldest");
 * ```
 */
export function victimOrder(
  instances: readonly PoolInstance[],
  isUpToDate: (instance: PoolInstance) => boolean,
  policy: DeletePolicy,
): PoolInstance[] {
  const rank = (instance: PoolInstance): number[] => [
    isUnhealthy(instance) ? 0 : 1,
    isUpToDate(instance) ? 1 : 0,
    instance.state === "running" ? 1 : 0,
  ];
  const randomKey = new Map(
    instances.map((instance) => [instance.id, shortHash(`victim:${instance.id}`)]),
  );
  return [...instances].sort((a, b) => {
    const ra = rank(a);
    const rb = rank(b);
    for (let i = 0; i < ra.length; i++) {
      const d = (ra[i] as number) - (rb[i] as number);
      if (d !== 0) return d;
    }
    if (policy === "Oldest" && a.createdAt !== b.createdAt) return a.createdAt - b.createdAt;
    if (policy === "Newest" && a.createdAt !== b.createdAt) return b.createdAt - a.createdAt;
    if (policy === "Random") {
      const ka = randomKey.get(a.id) as string;
      const kb = randomKey.get(b.id) as string;
      if (ka !== kb) return ka < kb ? -1 : 1;
    }
    return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
  });
}

// ── the plan ────────────────────────────────────────────────────────────────────────────────────

/** What {@link planPool} is given: one snapshot of the group, and what the pool should be. */
export interface PlanInput {
  /** Desired replicas (with an external autoscaler: the group's own desired size). */
  readonly desired: number;
  /** The group's desired size as the cloud reports it. */
  readonly groupDesired: number;
  /** Every instance the cloud lists (terminated ones are ignored). */
  readonly instances: readonly PoolInstance[];
  /** Whether an instance runs the target template (spec and bootstrap secret). */
  readonly isUpToDate: (instance: PoolInstance) => boolean;
  /** Whether an instance counts as available (default: running and healthy). */
  readonly isAvailable?: (instance: PoolInstance) => boolean;
  /** The resolved strategy. */
  readonly strategy: ResolvedStrategy;
  /** An autoscaler manages the size: never set it, only replace. */
  readonly externallyManaged: boolean;
  /** Leave outdated instances alone (a native rollout replaces them). */
  readonly skipReplacement?: boolean;
  /**
   * Availability is unknown (the workload cluster cannot be read): surge and scale as usual, but
   * delete no outdated instance, since nothing proves its replacement serves.
   */
  readonly holdRollout?: boolean;
}

/** One cloud change of a {@link Plan}, in execution order. */
export type PlanAction =
  | {
      readonly kind: "setReplicas";
      readonly replicas: number;
      readonly reason: "ScaleUp" | "ScaleDown" | "Surge";
    }
  | {
      readonly kind: "deleteInstance";
      readonly instance: PoolInstance;
      readonly mode: "shrink" | "replace";
      readonly reason: "ScaleDown" | "Rollout" | "Remediation";
    };

/** The outcome of {@link planPool}. */
export interface Plan {
  /** Cloud changes, in order. Empty when the pool is where it should be (or must wait). */
  readonly actions: readonly PlanAction[];
  /** Members (not terminating or terminated). */
  readonly live: number;
  /** Members that are available. */
  readonly available: number;
  /** Members not on the target template. */
  readonly outdated: number;
  /** The group size the plan aims at (desired plus any surge). */
  readonly targetGroupSize: number;
  /** True when nothing is left to do: size, membership, availability and templates all match. */
  readonly converged: boolean;
  /** Outdated instances wait because deleting one would break `maxUnavailable`. */
  readonly blockedByAvailability: boolean;
  /** Members the cloud reports `failed` (replaced within the rollout budget). */
  readonly failed: number;
}

/**
 * One reconcile's worth of scaling and rolling, from a snapshot. Stateless by design: the surge of a
 * rollout is derived from the number of outdated instances, so a surged group is never "corrected"
 * back while old instances remain, and a scale-down during a rollout removes outdated instances first.
 *
 * - Scale up: raise the group's desired size (to desired + surge while instances are outdated).
 * - Scale down: the kit picks victims ({@link victimOrder}) and deletes them with `shrink`; capacity
 *   not yet launched is removed by lowering the desired size.
 * - Rollout: outdated instances are deleted while availability stays ≥ desired − maxUnavailable; with
 *   surge capacity in the group they `shrink` it, otherwise the cloud `replace`s them from the new
 *   template.
 * - External autoscaler: the size is never set; outdated instances are only replaced.
 * - Remediation: instances the cloud reports `failed` (it gave up on them and will not replace them
 *   itself) are replaced first, while fewer than `max(1, maxSurge + maxUnavailable)` members are
 *   not yet available — the rollout budget, so a cloud that fails every launch is not hammered.
 *
 * @example
 * ```ts
 * const plan = planPool({ desired: 3, groupDesired: 3, instances, isUpToDate, strategy, externallyManaged: false });
 * for (const action of plan.actions) await execute(action);
 * ```
 */
export function planPool(input: PlanInput): Plan {
  const { desired, strategy, externallyManaged } = input;
  const isAvailable = input.isAvailable ?? isInstanceAvailable;
  const live = liveInstances(input.instances);
  const outdated = input.skipReplacement ? [] : live.filter((i) => !input.isUpToDate(i));
  const available = live.filter(isAvailable);
  // No surge for an autoscaler's pool, nor for one going to zero (old instances just go).
  const surge =
    externallyManaged || desired === 0 ? 0 : Math.min(strategy.maxSurge, outdated.length);
  const targetGroupSize = desired + surge;
  const minAvailable = Math.max(0, desired - strategy.maxUnavailable);
  const actions: PlanAction[] = [];
  const removed = new Set<string>();
  let groupSize = input.groupDesired;
  let availableLeft = available.length;
  let liveLeft = live.length;
  const order = victimOrder(live, input.isUpToDate, strategy.deletePolicy);
  const rolling = outdated.length > 0;

  if (!externallyManaged && groupSize < targetGroupSize) {
    actions.push({
      kind: "setReplicas",
      replicas: targetGroupSize,
      reason: groupSize < desired ? "ScaleUp" : "Surge",
    });
    groupSize = targetGroupSize;
  }

  if (!externallyManaged && groupSize > targetGroupSize) {
    let excess = groupSize - targetGroupSize;
    for (const victim of order) {
      if (excess === 0 || liveLeft <= targetGroupSize) break;
      const availableVictim = isAvailable(victim);
      // While rolling, removing capacity must not break the availability budget either.
      if (rolling && availableVictim && availableLeft - 1 < minAvailable) continue;
      actions.push({
        kind: "deleteInstance",
        instance: victim,
        mode: "shrink",
        reason: "ScaleDown",
      });
      removed.add(victim.id);
      excess--;
      liveLeft--;
      groupSize--;
      if (availableVictim) availableLeft--;
    }
    // What is left is capacity the cloud has not launched yet (or that availability protects).
    if (excess > 0 && liveLeft <= targetGroupSize) {
      actions.push({ kind: "setReplicas", replicas: targetGroupSize, reason: "ScaleDown" });
      groupSize = targetGroupSize;
    }
  }

  // Remediation: failed members are unavailable already, so replacing them costs no availability;
  // the budget bounds how many replacements are in flight at once.
  const failed = live.filter((i) => i.state === "failed");
  let inFlight = live.filter((i) => !isAvailable(i) && i.state !== "failed").length;
  const budget = Math.max(1, strategy.maxSurge + strategy.maxUnavailable);
  for (const victim of failed) {
    if (removed.has(victim.id)) continue;
    if (inFlight >= budget) break;
    const shrink = !externallyManaged && groupSize > desired;
    actions.push({
      kind: "deleteInstance",
      instance: victim,
      mode: shrink ? "shrink" : "replace",
      reason: "Remediation",
    });
    removed.add(victim.id);
    inFlight++;
    if (shrink) groupSize--;
  }

  let blockedByAvailability = false;
  for (const victim of order) {
    if (removed.has(victim.id) || input.isUpToDate(victim) || input.skipReplacement) continue;
    if (input.holdRollout) {
      blockedByAvailability = true;
      continue;
    }
    const availableVictim = isAvailable(victim);
    if (availableVictim && availableLeft - 1 < minAvailable) {
      blockedByAvailability = true;
      continue;
    }
    const shrink = !externallyManaged && groupSize > desired;
    actions.push({
      kind: "deleteInstance",
      instance: victim,
      mode: shrink ? "shrink" : "replace",
      reason: "Rollout",
    });
    removed.add(victim.id);
    if (shrink) groupSize--;
    if (availableVictim) availableLeft--;
  }

  const converged =
    actions.length === 0 &&
    outdated.length === 0 &&
    input.groupDesired === desired &&
    live.length === desired &&
    available.length === live.length;
  return {
    actions,
    live: live.length,
    available: available.length,
    outdated: outdated.length,
    targetGroupSize,
    converged,
    blockedByAvailability,
    failed: failed.length,
  };
}
