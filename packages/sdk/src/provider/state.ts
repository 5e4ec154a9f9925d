/**
 * {@link PoolState}: what the phases of one reconcile found, in pipeline order. A phase reads what an
 * earlier phase wrote with {@link need}, which names the missing phase instead of failing on
 * `undefined` somewhere later.
 *
 * @module
 */

import type { WorkloadClusterUnavailableError } from "../clustercache/unavailable.js";
import type {
  PoolContext,
  PoolGroup,
  PoolInstance,
  TemplateStamp,
  TemplateVersion,
} from "./driver.js";
import type { MachinesState } from "./machines.js";
import type { Plan } from "./plan.js";
import type { ReadyState } from "./scope.js";
import type { ResolvedStrategy } from "./strategy.js";

/**
 * The working state of one reconcile.
 *
 * @typeParam Spec - the provider's spec type
 * @typeParam Settings - the driver's group settings
 */
export interface PoolState<Spec, Settings> {
  /** The validated spec (`validateSpec`). */
  spec?: Spec;
  /** The driver's context (built once the spec is known). */
  context?: PoolContext<Spec>;
  /** Bootstrap data (`bootstrapData`); never logged. */
  bootstrap?: {
    readonly userData: string;
    readonly format: "cloud-config" | "ignition";
    readonly secretRef: string;
  };
  /** The stamp the pool's template should carry (`desiredState`). */
  target?: TemplateStamp;
  /** The settings the group should have (`desiredState`). */
  settings?: Settings;
  /** Template versions, oldest first (`observe`). */
  versions?: readonly TemplateVersion[];
  /** The group, or `null` when it does not exist (`observe`). */
  group?: PoolGroup<Settings> | null;
  /** The version new instances should launch from (`template`). */
  targetVersion?: TemplateVersion;
  /** Whether an instance runs what the pool should run (`template`). */
  isUpToDate?: (instance: PoolInstance) => boolean;
  /** Desired replicas (`group`). */
  desired?: number;
  /** Replicas are managed by an external autoscaler. */
  external?: boolean;
  /** The resolved strategy (`scale`). */
  strategy?: ResolvedStrategy;
  /** The plan executed this reconcile (`scale`). */
  plan?: Plan;
  /** Instances not up to date (`scale`). */
  outdated?: number;
  /** Instances the cloud reports `failed` (`scale`). */
  failed?: number;
  /** A note on the native rollout for the `Ready` message. */
  rolloutNote?: string;
  /** Why the workload cluster's Nodes could not be read (`readiness: "node"`); rollouts hold. */
  workloadUnavailable?: WorkloadClusterUnavailableError;
  /** Whether the pool reached its size (provisioned), counted on instances. */
  provisionedNow?: boolean;
  /** The cloud resources are gone: the kit removes its finalizer (`teardown`). */
  deleted?: boolean;
  /** MachinePool Machines: leaving instances, their Machines, delete priorities (`machines`). */
  machines?: MachinesState;
  /** Conditions set by provider phases. */
  providerConditions?: ReadonlyMap<string, ReadyState>;
}

/**
 * Returns a value an earlier phase must have set, or throws an error naming that phase (a pipeline
 * assembled in the wrong order).
 *
 * @example
 * ```ts
 * const group = need(scope.state.group, "group", "observe");
 * ```
 */
export function need<T>(value: T | undefined, what: string, phase: string): T {
  if (value === undefined) {
    throw new Error(
      `the ${what} is not known yet: the "${phase}" phase must run before this one (check the phases option)`,
    );
  }
  return value;
}
