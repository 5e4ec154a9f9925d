export { MachinePoolConformance } from "./harness.js";
export {
  ConformanceError,
  type ConformancePoolObject,
  checkPoolObject,
  InvariantMonitor,
} from "./invariants.js";
export {
  type AutoscalerMachinePoolView,
  type AutoscalerNodeTemplate,
  autoscalerNodeTemplate,
} from "./scale-from-zero.js";
export {
  AUTOSCALER_SCENARIOS,
  type AutoscalerScenario,
  DRAIN_SCENARIOS,
  type DrainScenario,
  MACHINE_POOL_MACHINES_SCENARIOS,
  type MachinePoolMachinesScenario,
  NODE_SCENARIOS,
  type NodeScenario,
  PROVIDER_LIFECYCLE_SCENARIOS,
  type ProviderLifecycleScenario,
  REAL_CORE_SCENARIOS,
  type RealCoreScenario,
  SCALE_FROM_ZERO_SCENARIOS,
  type ScaleFromZeroScenario,
  STRATEGY_SCENARIOS,
  type StrategyScenario,
  TOPOLOGY_SCENARIOS,
  type TopologyScenario,
  WORKLOAD_CLUSTER_SCENARIOS,
  type WorkloadClusterScenario,
} from "./scenario-ids.js";
export { CONFORMANCE_SCENARIOS, type ConformanceScenarioDefinition } from "./scenario-registry.js";
export {
  type ConformanceTestBed,
  type ConformanceTestBedPlan,
  chosenTestBeds,
  planConformanceTestBeds,
} from "./test-beds.js";
export { scaled, timeScale } from "./time-scale.js";
export type * from "./types.js";
export { LATE_NODE_JOIN_MS } from "./workload.js";
