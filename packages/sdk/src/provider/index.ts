/**
 * MachinePool provider kit: the {@link PoolDriver} interface a provider implements.
 *
 * @module
 */
export * from "./driver.js";
