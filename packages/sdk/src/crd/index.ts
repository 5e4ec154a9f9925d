// The runtime types the storage migration names. Re-exported here so that this entry's declarations
// import them from the shared chunks: otherwise the bundler routes them through the package root,
// and an editor that imports only `@capi-ts/sdk/crd` loads every type of the SDK.

export type { KubeClient } from "../runtime/client.js";
export type { RuntimeLogger } from "../runtime/logging.js";
export type { Runnable } from "../runtime/runnable.js";
export {
  ConversionError,
  ConversionFunctionError,
  type ConvertibleContent,
  type KindConversion,
  type SpokeContent,
  type SpokeVersion,
  type ToHubContext,
} from "./conversion.js";
export { defineInfraMachinePool } from "./define.js";
export type {
  DefinedResource,
  InfraMachinePoolContent,
  InfraMachinePoolContractSpec,
  InfraMachinePoolContractStatus,
  InfraMachinePoolDefinition,
  InfraMachinePoolInput,
  InfraMachinePoolObject,
  PrinterColumn,
} from "./definition.js";
export { generateInfraMachinePoolTypes } from "./generate-types.js";
export {
  type InfraMachineAddress,
  type InfraMachineDefinition,
  type InfraMachineObject,
  type InfraMachineResource,
  infraMachineDefinition,
} from "./machine.js";
export type { Manifest } from "./manifest.js";
export {
  CRD_MIGRATION_OBSERVED_GENERATION,
  type MigratedKind,
  migrateStorageVersion,
  type StorageVersionMigratorOptions,
  storageVersionMigrator,
} from "./storage-migration.js";
export { machinePoolStrategySchema } from "./strategy-schema.js";
export {
  KUBERNETES_STRING_FORMATS,
  NonStructuralSchemaError,
  type StructuralSchema,
  zodToStructuralSchema,
} from "./structural.js";
