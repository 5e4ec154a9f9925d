/**
 * Placeholder entry point.
 *
 * @packageDocumentation
 */

/** The package version. */
export const version = "0.1.0";

export * from "./apiserver/index.js";
export * from "./controlplane/index.js";
export * from "./capi/index.js";
export * from "./conformance/index.js";
