/**
 * The fake scaling-group cloud: a sped-up real clock for demos, errors, wire types and the simulation.
 *
 * @module
 */
export * from "./clock.js";
export * from "./cloud.js";
export * from "./errors.js";
export * from "./instance-types.js";
export * from "./kubelet.js";
export * from "./random.js";
export * from "./scaleset.js";
export * from "./schemas.js";
