export {
  type DefinedResource,
  defineInfraMachinePool,
  generateInfraMachinePoolTypes,
  type InfraMachinePoolContractSpec,
  type InfraMachinePoolContractStatus,
  type InfraMachinePoolDefinition,
  type InfraMachinePoolInput,
  type InfraMachinePoolObject,
  type Manifest,
  type PrinterColumn,
} from "./define.js";
export {
  KUBERNETES_STRING_FORMATS,
  NonStructuralSchemaError,
  type StructuralSchema,
  zodToStructuralSchema,
} from "./structural.js";
