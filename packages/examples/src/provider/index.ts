/**
 * The example provider, `FakeCloudMachinePool`: its spec and its driver for the fake cloud.
 *
 * @module
 */

export * from "./conformance.js";
export * from "./driver.js";
export * from "./kind.js";
export * from "./run.js";
export * from "./scaleset-driver.js";
export * from "./spec.js";
export * from "./upgrade.js";
