/**
 * Placeholder entry point.
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
