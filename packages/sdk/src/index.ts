/**
 * The capi-ts SDK for Cluster API InfraMachinePool providers: generated CAPI types (one namespace
 * per group and version, e.g. `clusterv1beta2`), v1beta2 conditions, the patch helper, the
 * InfraMachinePool contract helpers, `defineInfraMachinePool` for a provider's own kinds, the
 * controller runtime (client, informers, work queue, manager) and the MachinePool provider kit
 * (`PoolDriver` + `machinePoolController`).
 *
 * @example
 * ```ts
 * import { Manager, machinePoolController } from "@capi-ts/sdk";
 *
 * const manager = new Manager({ kubeConfig, name: "foo-provider" });
 * machinePoolController(fooDriver, { manager, kind: FooMachinePool });
 * await manager.start();
 * ```
 *
 * @packageDocumentation
 */

/** The package version. */
export const version = "0.1.0";

// Generated CAPI API types: one namespace per group/version (clusterv1beta2, bootstrapv1beta2, ...).
export * from "./api/index.js";
export * from "./conditions/index.js";
export * from "./contract/index.js";
export * from "./crd/index.js";
export * from "./patch/index.js";
export * from "./provider/index.js";
export * from "./runtime/index.js";
