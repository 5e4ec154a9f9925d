/**
 * CRD to TypeScript code generator: interfaces, zod schemas, defaults, Model classes compatible
 * with `@kubernetes-models/base`, and resource metadata, one module per API group and version.
 * Use the {@link generate} API or the `capi-ts-codegen` command.
 *
 * @example
 * ```ts
 * import { generate, writeGenerated } from "@capi-ts/codegen";
 *
 * const { files } = await generate({ inputs: ["config/crd/bases"] });
 * await writeGenerated(files, "src/api");
 * ```
 *
 * @packageDocumentation
 */

export { type ClusterOptions, DEFAULT_CLUSTER_TIMEOUT_MS, loadClusterCrds } from "./cluster.js";
export { CodegenError, type InputLocation } from "./errors.js";
export {
  checkGenerated,
  GENERATED_HEADER,
  type GeneratedFile,
  type GeneratedGroupVersion,
  type GenerateOptions,
  type GenerateResult,
  generate,
  generateFromCrds,
  type RuntimeEmit,
  type StaleReport,
  writeGenerated,
} from "./generate.js";
export { INPUT_LIMITS, type InputLimits } from "./limits.js";
export {
  type CrdDefinition,
  type CrdInput,
  type CrdVersion,
  type LoadedDocument,
  loadDocuments,
  parseText,
  readCrds,
  type SchemaNode,
} from "./load.js";

/**
 * The version of this package (semver), as in its package.json; generated files do not embed it.
 */
export const version = "0.2.1";
