/**
 * prom-client, loaded when the first metric is made rather than with the runtime's modules: a process
 * that imports the runtime pays for it only once it creates a manager. prom-client is CommonJS, so a
 * synchronous require works inside constructors.
 *
 * @module
 */
import { createRequire } from "node:module";

type PromClient = typeof import("prom-client");
let loaded: PromClient | undefined;

/** The prom-client module, required on first use. */
export function promClient(): PromClient {
  loaded ??= createRequire(import.meta.url)("prom-client") as PromClient;
  return loaded;
}
