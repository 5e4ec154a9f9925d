export {
  ConversionError,
  ConversionFunctionError,
  type ConvertibleContent,
  type KindConversion,
  type SpokeContent,
  type SpokeVersion,
  type ToHubContext,
} from "./conversion.js";
export {
  type DefinedResource,
  defineInfraMachinePool,
  generateInfraMachinePoolTypes,
  type InfraMachinePoolContent,
  type InfraMachinePoolContractSpec,
  type InfraMachinePoolContractStatus,
  type InfraMachinePoolDefinition,
  type InfraMachinePoolInput,
  type InfraMachinePoolObject,
  type PrinterColumn,
} from "./define.js";
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
export {
  KUBERNETES_STRING_FORMATS,
  NonStructuralSchemaError,
  type StructuralSchema,
  zodToStructuralSchema,
} from "./structural.js";
