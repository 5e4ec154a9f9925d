/**
 * The suite's scenarios: the built-in list with titles, and the registry that gives each scenario its
 * host, its skip reason for this provider and cloud, and the checks that follow every scenario.
 *
 * @module
 */
import { type AutoscalerScenarioHost, autoscalerScenarios } from "./autoscaler-actions.js";
import { realCoreScenarios } from "./core-controllers.js";
import {
  apiServerFaultsScenario,
  type CoreScenarioHost,
  cloudThrottlingScenario,
  deletionInFlightScenario,
  externalAutoscalerScenario,
  outOfBandScenario,
  pauseScenario,
  scaleScenario,
  templateRolloutScenario,
  tokenRotationScenario,
  watchFilterScenario,
} from "./core-scenarios.js";
import { drainScenarios } from "./drain.js";
import type { ConformanceError } from "./invariants.js";
import { checkKindDefinition } from "./kind-checks.js";
import { type MachinesScenarioHost, machinePoolMachinesScenarios } from "./machines.js";
import { type MoveScenarioHost, moveScenarios } from "./move.js";
import { type NodeScenarioHost, nodeScenarios } from "./nodes.js";
import { type ProviderUpgradeHost, providerUpgradeScenarios } from "./provider-upgrade.js";
import { type ScaleFromZeroHost, scaleFromZeroScenarios } from "./scale-from-zero.js";
import {
  AUTOSCALER_SCENARIOS,
  DRAIN_SCENARIOS,
  MACHINE_POOL_MACHINES_SCENARIOS,
  NODE_SCENARIOS,
  PROVIDER_LIFECYCLE_SCENARIOS,
  REAL_CORE_SCENARIOS,
  SCALE_FROM_ZERO_SCENARIOS,
  STRATEGY_SCENARIOS,
  TOPOLOGY_SCENARIOS,
  WORKLOAD_CLUSTER_SCENARIOS,
} from "./scenario-ids.js";
import { crdHasStrategyField, type StrategyScenarioHost, strategyScenarios } from "./strategies.js";
import { type TopologyScenarioHost, topologyScenarios } from "./topology.js";
import type {
  ConformanceActors,
  ConformanceCore,
  ConformanceScenario,
  ConformanceScenarioContext,
  MachinePoolConformanceOptions,
} from "./types.js";
import { type WorkloadScenarioHost, workloadClusterScenarios } from "./workload.js";

/**
 * The built-in scenarios, in the order they run: id and what each checks. Select a subset with
 * `scenarios`, add your own with `extraScenarios`.
 *
 * @example
 * ```ts
 * runMachinePoolConformance({ ...options, scenarios: CONFORMANCE_SCENARIOS.map((s) => s.id).filter((id) => id !== "autoscaler") });
 * ```
 */
export const CONFORMANCE_SCENARIOS: readonly {
  readonly id: ConformanceScenario;
  readonly title: string;
}[] = [
  { id: "crd", title: "CRD, RBAC and contract labels" },
  { id: "scale", title: "scale up, down and to zero" },
  { id: "tokenRotation", title: "bootstrap token rotation replaces no instance" },
  { id: "templateRollout", title: "a template change rolls every instance" },
  { id: "autoscaler", title: "replicas handed to an external autoscaler and back" },
  { id: "pause", title: "pause and unpause" },
  { id: "deletionInFlight", title: "deletion with instances in flight" },
  { id: "outOfBandDeletion", title: "an instance deleted out of band" },
  { id: "spotInterruption", title: "a spot interruption" },
  { id: "cloudThrottling", title: "cloud throttling" },
  { id: "apiServerFaults", title: "API server errors and cut watches" },
  ...WORKLOAD_CLUSTER_SCENARIOS,
  ...MACHINE_POOL_MACHINES_SCENARIOS,
  ...AUTOSCALER_SCENARIOS,
  ...REAL_CORE_SCENARIOS,
  ...TOPOLOGY_SCENARIOS,
  ...PROVIDER_LIFECYCLE_SCENARIOS,
  ...SCALE_FROM_ZERO_SCENARIOS,
  ...NODE_SCENARIOS,
  ...STRATEGY_SCENARIOS,
  ...DRAIN_SCENARIOS,
  { id: "watchFilter", title: "a pool outside the watch filter is never touched (R20)" },
  { id: "cleanup", title: "every pool deleted leaves nothing behind" },
];

/** One scenario: a name for the report, the actor it needs, and its body. */
export interface ConformanceScenarioDefinition {
  /** Scenario id (built-in or the provider's own). */
  readonly id: string;
  /** What it does, for the test name. */
  readonly title: string;
  /** Why it was skipped, or undefined when it can run with the provider's cloud. */
  readonly skipReason: string | undefined;
  /** Runs it; throws a {@link ConformanceError} naming the broken invariant. */
  run(): Promise<void>;
}

const LIFECYCLE_IDS: ReadonlySet<string> = new Set(PROVIDER_LIFECYCLE_SCENARIOS.map((s) => s.id));

/** The suite as the registry reaches it: each family's host, built only when a scenario runs. */
export interface ScenarioHosts {
  /** Which core judges this run. */
  readonly core: ConformanceCore;
  /** The cloud's out-of-band actors, once the provider runs. */
  actors(): ConformanceActors | undefined;
  coreHost(): CoreScenarioHost;
  workloadHost(): WorkloadScenarioHost;
  machinesHost(): MachinesScenarioHost;
  autoscalerHost(): AutoscalerScenarioHost;
  topologyHost(): TopologyScenarioHost;
  providerUpgradeHost(): ProviderUpgradeHost;
  moveHost(): MoveScenarioHost;
  scaleFromZeroHost(): ScaleFromZeroHost;
  nodesHost(): NodeScenarioHost;
  strategyHost(): StrategyScenarioHost;
  /** What a provider's own scenario gets. */
  context(): ConformanceScenarioContext;
  /** The `cleanup` scenario. */
  cleanup(): Promise<void>;
  /** Checks every scenario must leave true, given when it started; throws a {@link ConformanceError}. */
  afterScenario(since: number): void;
}

/** One row of the registry: id, title, skip reason, body. */
type ScenarioRow = [string, string, () => string | undefined, () => Promise<void>];

/** A scenario as its family's module defines it. */
interface FamilyScenario {
  readonly id: string;
  readonly title: string;
  skipReason(): string | undefined;
  run(): Promise<void>;
}

function row(scenario: FamilyScenario): ScenarioRow {
  return [scenario.id, scenario.title, () => scenario.skipReason(), () => scenario.run()];
}

/**
 * Every scenario the options select, in the order they run, with the reason it is skipped for this
 * provider (if it is). Throws on an extra scenario whose id is taken and on an unknown selected id.
 */
export function conformanceScenarios(
  o: MachinePoolConformanceOptions,
  hosts: ScenarioHosts,
): ConformanceScenarioDefinition[] {
  const actors = () => hosts.actors();
  const defs: ScenarioRow[] = [
    [
      "crd",
      "CRD, RBAC and contract labels",
      () => undefined,
      async () => checkKindDefinition(o.kind),
    ],
    ["scale", "scale up, down and to zero", () => undefined, () => scaleScenario(hosts.coreHost())],
    [
      "tokenRotation",
      "bootstrap token rotation replaces no instance",
      () => undefined,
      () => tokenRotationScenario(hosts.coreHost()),
    ],
    [
      "templateRollout",
      "a template change rolls every instance",
      () => (o.templateChange ? undefined : "no templateChange option"),
      () => templateRolloutScenario(hosts.coreHost()),
    ],
    [
      "autoscaler",
      "replicas handed to an external autoscaler and back",
      () => (actors()?.setDesiredReplicas ? undefined : "cloud.actors.setDesiredReplicas missing"),
      () => externalAutoscalerScenario(hosts.coreHost()),
    ],
    ["pause", "pause and unpause", () => undefined, () => pauseScenario(hosts.coreHost())],
    [
      "deletionInFlight",
      "deletion with instances in flight",
      () => undefined,
      () => deletionInFlightScenario(hosts.coreHost()),
    ],
    [
      "outOfBandDeletion",
      "an instance deleted out of band",
      () => (actors()?.terminateInstance ? undefined : "cloud.actors.terminateInstance missing"),
      () => outOfBandScenario(hosts.coreHost(), "terminateInstance"),
    ],
    [
      "spotInterruption",
      "a spot interruption",
      () => (actors()?.interruptSpot ? undefined : "cloud.actors.interruptSpot missing"),
      () => outOfBandScenario(hosts.coreHost(), "interruptSpot"),
    ],
    [
      "cloudThrottling",
      "cloud throttling",
      () => (actors()?.throttle ? undefined : "cloud.actors.throttle missing"),
      () => cloudThrottlingScenario(hosts.coreHost()),
    ],
    [
      "apiServerFaults",
      "API server errors and cut watches",
      () =>
        hosts.core === "real"
          ? "needs fault injection, which only the in-memory API server has (core: emulator)"
          : undefined,
      () => apiServerFaultsScenario(hosts.coreHost()),
    ],
    ...workloadClusterScenarios(() => hosts.workloadHost(), {
      hasTemplateChange: o.templateChange !== undefined,
      joinDelayActor: () => actors()?.setNodeJoinDelay !== undefined,
    }).map(row),
    ...machinePoolMachinesScenarios(() => hosts.machinesHost()).map(row),
    ...autoscalerScenarios(() => hosts.autoscalerHost()).map(row),
    ...realCoreScenarios(() => ({ ...hosts.machinesHost(), core: hosts.core })).map(row),
    ...topologyScenarios(() => hosts.topologyHost()).map(row),
    ...providerUpgradeScenarios(() => hosts.providerUpgradeHost()).map(row),
    ...moveScenarios(() => hosts.moveHost()).map(row),
    ...scaleFromZeroScenarios(() => hosts.scaleFromZeroHost(), {
      hasCapacityChange: o.capacityChange !== undefined,
    }).map(row),
    ...nodeScenarios(() => hosts.nodesHost(), {
      hasTemplateChange: o.templateChange !== undefined,
    }).map(row),
    ...strategyScenarios(() => hosts.strategyHost(), {
      hasTemplateChange: o.templateChange !== undefined,
      canTerminate: () => actors()?.terminateInstance !== undefined,
      machinePoolMachines: o.kind.machine !== undefined,
      hasStrategyField: crdHasStrategyField(o.kind.crd),
    }).map(row),
    ...drainScenarios(() => hosts.autoscalerHost()).map(row),
    [
      "watchFilter",
      "a pool outside the watch filter is never touched (R20)",
      () => undefined,
      () => watchFilterScenario(hosts.coreHost()),
    ],
  ];
  for (const extra of o.extraScenarios ?? []) {
    if (defs.some(([id]) => id === extra.id) || extra.id === "cleanup") {
      throw new Error(
        `conformance: extraScenarios has the id "${extra.id}", which is taken; give your scenario its own id`,
      );
    }
    defs.push([extra.id, extra.title, () => undefined, () => extra.run(hosts.context())]);
  }
  defs.push([
    "cleanup",
    "every pool deleted leaves nothing behind",
    () => undefined,
    () => hosts.cleanup(),
  ]);
  const known = new Set(defs.map(([id]) => id));
  const unknown = (o.scenarios ?? []).filter((id) => !known.has(id));
  if (unknown.length > 0) {
    throw new Error(
      `conformance: unknown scenario(s) ${unknown.map((id) => JSON.stringify(id)).join(", ")} in scenarios; known: ${[...known].join(", ")}`,
    );
  }
  return defs
    .filter(([id]) => !o.scenarios || o.scenarios.includes(id))
    .map(([id, title, skip, run]) => ({
      id,
      title: `${id}: ${title}`,
      get skipReason() {
        // The upgrade replaces the kind's CRDs with the releases' and the suite's provider with the
        // second release's: it runs only when a suite lists it.
        if (LIFECYCLE_IDS.has(id) && !o.scenarios?.includes(id)) {
          return "runs only when listed in `scenarios` (clusterctl changes the management cluster's components or moves objects out of it)";
        }
        return skip();
      },
      run: async () => {
        const since = Date.now();
        await run();
        hosts.afterScenario(since);
      },
    }));
}
