/**
 * The provider's InfraMachinePool kind as the kit needs it ({@link InfraMachinePoolKind}), and the
 * shape of a schema's answer ({@link SpecParseResult}). A leaf: the options, the scope and the
 * phases all read it.
 *
 * @module
 */
import type { InfraMachineKind } from "./machines.js";

/** One problem with a field, as a schema reports it (zod's `issues` fit). */
export interface SpecIssue {
  /** Where, from the object's root (`["spec", "minSize"]`). */
  readonly path: readonly PropertyKey[];
  /** What is wrong. */
  readonly message: string;
}

/** The result of parsing an object with a schema (zod's `safeParse` fits). */
export type SpecParseResult<Spec> =
  | { readonly success: true; readonly data: { readonly spec: Spec } }
  | {
      readonly success: false;
      readonly error: { readonly message: string; readonly issues?: readonly SpecIssue[] };
    };

/**
 * The provider's InfraMachinePool kind, as the kit needs it. The result of `defineInfraMachinePool`
 * fits as is.
 *
 * @typeParam Spec - the spec type the driver works with
 */
export interface InfraMachinePoolKind<Spec> {
  /** API group, e.g. `infrastructure.foo.com`. */
  readonly group: string;
  /** Kind, e.g. `FooMachinePool`. */
  readonly kind: string;
  /** Plural resource name, e.g. `foomachinepools`. */
  readonly plural: string;
  /** The version the controller reads and writes (default: the last of `versions`). */
  readonly storageVersion?: string;
  /** Served versions. */
  readonly versions?: readonly string[];
  /** The finalizer (default `<kind-lowercase>.<group>`). */
  readonly finalizer?: string;
  /**
   * Validates a whole object and yields its spec (e.g. `defineInfraMachinePool(...).schema`). An
   * invalid spec is reported as `Ready=False/InvalidSpec` with one `field: message` per problem, and
   * nothing is sent to the cloud.
   */
  readonly schema?: { safeParse(data: unknown): SpecParseResult<Spec> };
  /**
   * The InfraMachine kind of MachinePool Machines (`defineInfraMachinePool({ machinePoolMachines:
   * true }).machine`). When set, the kit keeps one InfraMachine per instance, sets
   * `status.infrastructureMachineKind`, and deletes instances only through their Machine (core
   * cordons and drains the Node first; `cluster.x-k8s.io/delete-machine` goes first).
   */
  readonly machine?: InfraMachineKind | undefined;
}
