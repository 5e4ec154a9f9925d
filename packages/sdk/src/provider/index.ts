/**
 * MachinePool provider kit: the {@link PoolDriver} interface a provider implements, and
 * {@link machinePoolController}, the reconciler that drives it.
 *
 * @module
 */
export * from "./controller.js";
export * from "./driver.js";
export * from "./strategy.js";
