/**
 * Examples for capi-ts: a fake scaling-group cloud (`cloud/`), an example MachinePool provider built
 * on the SDK (`provider/`), and the AWS reference provider on the AWS SDK, tested on moto (`aws/`).
 *
 * @packageDocumentation
 */
export * from "./aws/index.js";
export * from "./cloud/index.js";
export * from "./provider/index.js";

/** The package version. */
export const version = "0.1.0";
