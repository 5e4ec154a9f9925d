/**
 * {@link ResolvedPoolOptions}: the options a reconcile works with, every default applied. A leaf, so
 * that the scope a phase sees does not depend on the controller's options (which list the phases).
 *
 * @module
 */
import type { InfraMachinePoolKind } from "./kind.js";
import type { InfraMachineKind } from "./machines.js";
import type { MachinePoolStrategy } from "./strategy.js";

/** The controller's options with every default applied (`resolvePoolOptions`). */
export interface ResolvedPoolOptions<Spec> {
  /** See `MachinePoolControllerOptions.pollIntervalMs`. */
  readonly pollMs: number;
  /** See `MachinePoolControllerOptions.resyncPeriodMs`. */
  readonly resyncMs: number;
  /** See `MachinePoolControllerOptions.missingInstanceGraceMs`. */
  readonly missingGraceMs: number;
  /** See `MachinePoolControllerOptions.transientToleranceMs`. */
  readonly transientToleranceMs: number;
  /** See `MachinePoolControllerOptions.readiness`. */
  readonly readiness: "instance" | "node";
  /** See `MachinePoolControllerOptions.bootstrapData`. */
  readonly bootstrapData: "required" | "none";
  /** See `MachinePoolControllerOptions.waitForClusterInfrastructure`. */
  readonly waitForClusterInfrastructure: boolean;
  /** See `MachinePoolControllerOptions.useNativeRollout`. */
  readonly useNativeRollout: boolean;
  /** See `MachinePoolControllerOptions.strategy`. */
  readonly strategy: MachinePoolStrategy | undefined;
  /** A pool's own strategy (the option, else `spec.strategy`). */
  readonly strategyOf: (spec: Spec) => MachinePoolStrategy | undefined;
  /** The kind's schema, if any. */
  readonly schema: InfraMachinePoolKind<Spec>["schema"];
  /** See `MachinePoolControllerOptions.conditionTypes`. */
  readonly conditionTypes: readonly string[];
  /** The InfraMachine kind of MachinePool Machines ({@link InfraMachinePoolKind.machine}), if any. */
  readonly machines: InfraMachineKind | undefined;
}
