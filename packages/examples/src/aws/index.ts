/**
 * The AWS reference provider, `ASGMachinePool`: Auto Scaling groups with launch templates on the AWS
 * SDK v3, and its test bed on moto's server.
 *
 * @module
 */

export * from "./conformance.js";
export * from "./driver.js";
export * from "./kind.js";
export * from "./moto.js";
export * from "./run.js";
export * from "./spec.js";
export * from "./testbed.js";
