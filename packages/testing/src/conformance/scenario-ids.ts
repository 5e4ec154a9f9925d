// A leaf of conformance/: the ids of the scenario groups that live in their own modules. The option
// types (types.ts) name them and the scenario bodies (machines.ts, workload.ts, scale-from-zero.ts,
// autoscaler-actions.ts, strategies.ts) use the option types, so the ids sit below both rather than in either.

/** The ids of the workload-cluster scenarios, in the order they run. */
export const WORKLOAD_CLUSTER_SCENARIOS = [
  {
    id: "workloadUnreachable",
    title: "an unreachable workload cluster: named reason, no secret in it, backoff, recovery",
  },
  {
    id: "kubeconfigRotation",
    title: "a rotated kubeconfig Secret: reconnect, Node events keep arriving",
  },
  {
    id: "nodesJoinLate",
    title: "Nodes joining 500 ms late: a rollout keeps Ready Nodes ≥ replicas − maxUnavailable",
  },
] as const;

/** A workload-cluster scenario id. */
export type WorkloadClusterScenario = (typeof WORKLOAD_CLUSTER_SCENARIOS)[number]["id"];

/** The ids of the MachinePool Machines scenarios, in the order they run. */
export const MACHINE_POOL_MACHINES_SCENARIOS = [
  {
    id: "machinePoolMachines",
    title: "MachinePool Machines: one labelled InfraMachine per instance, a Machine for each (R11)",
  },
  {
    id: "machineDeletePriority",
    title: "scale-down takes the Machine annotated delete-machine, its Node cordoned first",
  },
  {
    id: "machineDeleted",
    title: "a deleted Machine removes exactly its instance, and the pool replaces it",
  },
  {
    id: "machineInterruptible",
    title:
      "a pool on spot capacity: each InfraMachine says interruptible, core labels its Node (cluster.x-k8s.io/interruptible)",
  },
] as const;

/** A MachinePool Machines scenario id. */
export type MachinePoolMachinesScenario = (typeof MACHINE_POOL_MACHINES_SCENARIOS)[number]["id"];

/**
 * The ids of the cluster-autoscaler scenarios, in the order they run (the suite plays the
 * autoscaler's Cluster API provider: autoscaler-actions.ts).
 */
export const AUTOSCALER_SCENARIOS = [
  {
    id: "autoscalerBounds",
    title:
      "cluster-autoscaler bounds wider than the group's: a size the old bounds refuse converges; an invalid one is named",
  },
  {
    id: "autoscalerDeleteMachine",
    title:
      "cluster-autoscaler scale-down with MachinePool Machines: delete-machine and a decrement remove exactly that instance",
  },
  {
    id: "autoscalerDeleteTainted",
    title:
      "cluster-autoscaler scale-down without MachinePool Machines: the instance of the tainted Node goes",
  },
] as const;

/** A cluster-autoscaler scenario id. */
export type AutoscalerScenario = (typeof AUTOSCALER_SCENARIOS)[number]["id"];

/**
 * The ids of the scenarios that need a controller only real core runs (CAPI's MachineHealthCheck
 * controller, the garbage collector of kube-controller-manager): skipped when the emulator judges.
 */
export const REAL_CORE_SCENARIOS = [
  {
    id: "machineHealthCheck",
    title: "core's MachineHealthCheck counts the pool's Machines healthy; the pool is left alone",
  },
  {
    id: "machineHealthCheckRemediation",
    title:
      "a Machine core's MachineHealthCheck marks unhealthy is remediated by the pool: marked, drained, replaced",
  },
  {
    id: "garbageCollection",
    title:
      "a deleted MachinePool's Machines and InfraMachines are gone, through the garbage collector",
  },
] as const;

/** A real-core-only scenario id. */
export type RealCoreScenario = (typeof REAL_CORE_SCENARIOS)[number]["id"];

/**
 * The ids of the ClusterClass scenarios (topology.ts), in the order they run: real core only (its
 * topology controller), skipped when the emulator judges.
 */
export const TOPOLOGY_SCENARIOS = [
  {
    id: "topologyCreate",
    title:
      "a Cluster of the kind's ClusterClass flavor: core's topology controller creates the pool from the <Kind>Template, it converges",
  },
  {
    id: "topologyUpgrade",
    title:
      "spec.topology.version changes: the control plane, then the MachinePool's version; every instance rolls, Nodes report the new kubelet, the topology is reconciled",
  },
] as const;

/** A ClusterClass scenario id. */
export type TopologyScenario = (typeof TOPOLOGY_SCENARIOS)[number]["id"];

/** The ids of the cluster-autoscaler's scale-from-zero scenarios, in the order they run. */
export const SCALE_FROM_ZERO_SCENARIOS = [
  {
    id: "scaleFromZero",
    title:
      "at 0 replicas the pool tells the cluster-autoscaler its capacity, and follows a spec change",
  },
] as const;

/** A scale-from-zero scenario id. */
export type ScaleFromZeroScenario = (typeof SCALE_FROM_ZERO_SCENARIOS)[number]["id"];

/** The ids of the scenarios of the pool's Nodes (the kit's taints, labels and minReadySeconds). */
export const NODE_SCENARIOS = [
  {
    id: "nodeTaintsAndLabels",
    title:
      "the MachinePool's taints and Node labels reach every Node of the pool, follow a change, leave others' alone, refuse a forbidden domain",
  },
  {
    id: "minReadySeconds",
    title:
      "with minReadySeconds a Ready Node is not available until it has been Ready that long; a rollout waits for it",
  },
] as const;

/** A Node scenario id. */
export type NodeScenario = (typeof NODE_SCENARIOS)[number]["id"];

/** The ids of the rollout-control and preflight scenarios (strategies.ts), in the order they run. */
export const STRATEGY_SCENARIOS = [
  {
    id: "onDelete",
    title:
      "strategy OnDelete: a template change replaces nothing; a deleted instance comes back on the new template",
  },
  {
    id: "rolloutAfter",
    title:
      "strategy.rolloutAfter set to now: every older instance is replaced within the budget, then nothing more",
  },
  {
    id: "preflightHoldsScaleUp",
    title:
      "a control plane upgrading holds a scale-up with a condition naming ControlPlaneIsStable; done, it proceeds",
  },
] as const;

/** A rollout-control or preflight scenario id. */
export type StrategyScenario = (typeof STRATEGY_SCENARIOS)[number]["id"];

/** The ids of the drain scenarios (pools without MachinePool Machines), in the order they run. */
export const DRAIN_SCENARIOS = [
  {
    id: "drainBeforeTerminate",
    title:
      "scale-down without MachinePool Machines: the victim's Node is cordoned and drained, a PodDisruptionBudget holds the termination until it allows",
  },
] as const;

/** A drain scenario id. */
export type DrainScenario = (typeof DRAIN_SCENARIOS)[number]["id"];

/**
 * The ids of the provider lifecycle scenarios (provider-upgrade.ts): real core only (the real
 * `clusterctl`), and only when listed in `scenarios`, since they replace the kind's CRDs.
 */
export const PROVIDER_LIFECYCLE_SCENARIOS = [
  {
    id: "providerUpgrade",
    title:
      "clusterctl upgrade apply from one release to the next with a pool live: no instance replaced, no status lost, readable at every version, storage version migrated, still scales",
  },
  {
    id: "move",
    title:
      "clusterctl move of a live pool to a second management cluster: block-move while instances launch, status rebuilt on the target from the cloud, no cloud change, still scales",
  },
] as const;

/** A provider lifecycle scenario id. */
export type ProviderLifecycleScenario = (typeof PROVIDER_LIFECYCLE_SCENARIOS)[number]["id"];
