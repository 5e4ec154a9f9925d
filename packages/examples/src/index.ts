/**
 * Examples for capi-ts: a fake scaling-group cloud (`cloud/`) and an example MachinePool provider built
 * on the SDK (`provider/`).
 *
 * @packageDocumentation
 */
export * from "./cloud/index.js";
export * from "./provider/index.js";

/** The package version. */
export const version = "0.1.0";
