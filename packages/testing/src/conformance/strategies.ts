/**
 * The scenarios of a pool's rollout controls and of the preflight checks core's MachineSet runs,
 * for a MachinePool:
 *
 * - `onDelete`: a pool whose `spec.strategy.type` is `OnDelete` replaces nothing when its template
 *   changes (`strategy.onDeleteKeepsInstances`, then `steadyState.zeroWrites` with every instance
 *   out of date); an instance a user deletes (its Machine with MachinePool Machines, else the
 *   instance in the cloud) is replaced on the new template, and only that one
 *   (`strategy.onDeleteReplacesDeleted`).
 * - `rolloutAfter`: `spec.strategy.rolloutAfter` set to now replaces every instance launched before
 *   it, Ready Nodes never below `replicas − maxUnavailable` (`rollout.availability`), and then
 *   nothing more (`steadyState.zeroWrites`, `strategy.rolloutAfterOnce`).
 * - `preflightHoldsScaleUp`: while the Cluster's control plane upgrades (`spec.version` newer than
 *   `status.version`), a scale-up launches nothing (`preflight.holdsScaleUp`) and a condition of
 *   the pool names the check (`preflight.conditionNamesCheck`: `ControlPlaneIsStable`); once the
 *   control plane reports the new version the pool scales up (`converge`).
 *
 * The control plane is the suite's `ExternalControlPlane` (`packages/testing/src/capi`), written by
 * the suite on either judge: neither core's emulator nor real core reconciles it.
 *
 * @module
 */
import { clusterv1beta2 } from "@capi-ts/sdk/api";
import type { KubeClient, ResourceDescriptor } from "@capi-ts/sdk/runtime";
import { ExternalControlPlanes } from "../capi/control-plane.js";
import { ConformanceError, type ConformancePoolObject } from "./invariants.js";
import { STRATEGY_SCENARIOS, type StrategyScenario } from "./scenario-ids.js";
import type { ConformanceCore, ConformancePool, ConformanceProvider } from "./types.js";

const Machines = clusterv1beta2.MachineResource as unknown as ResourceDescriptor<
  clusterv1beta2.Machine & { spec?: { providerID?: string } }
>;

/** What the strategy scenarios need of the suite (the harness fills it in). */
export interface StrategyScenarioHost {
  /** The management cluster, as the suite writes it. */
  readonly client: KubeClient;
  /** The InfraMachinePool kind under test. */
  readonly pools: ResourceDescriptor<ConformancePoolObject>;
  /** The provider under test. */
  readonly provider: ConformanceProvider;
  /** Which core judges. */
  readonly core: ConformanceCore;
  /** `spec` of a new pool. */
  readonly poolSpec: Record<string, unknown>;
  /** The spec change that rolls every instance (the suite's `templateChange`). */
  readonly templateChange: (spec: Record<string, unknown>) => Record<string, unknown>;
  /** Whether the kind has MachinePool Machines (a user deletes a Machine, not an instance). */
  readonly machinePoolMachines: boolean;
  /** `maxUnavailable` of the provider's default rollout. */
  readonly rolloutMaxUnavailable: number;
  /** The suite's Cluster, whose control plane the preflight scenario upgrades. */
  readonly cluster: { readonly namespace: string; readonly name: string };
  /** How long to settle before a steady-state window. */
  readonly settleMs: number;
  /** Creates a pool in the suite's Cluster with `spec`. */
  createPool(replicas: number, spec: Record<string, unknown>): Promise<ConformancePool>;
  /** Sets the MachinePool's replicas. */
  setReplicas(pool: ConformancePool, replicas: number): Promise<void>;
  /** Waits until converged as core sees it. */
  converged(pool: ConformancePool, replicas: number): Promise<void>;
  /** Converged, then zero writes and no mutating cloud call for the steady-state window. */
  steadyState(pool: ConformancePool, replicas: number): Promise<void>;
  /** Deletes the pool and waits until it is gone with its cloud resources. */
  deletePool(pool: ConformancePool): Promise<void>;
  /** Polls `check` (undefined = satisfied, else the reason) until it passes or times out. */
  until(what: string, check: () => Promise<string | undefined>, timeoutMs?: number): Promise<void>;
  /** Ready Nodes of the pool's live instances in the workload cluster. */
  readyNodes(pool: ConformancePool): Promise<number>;
  /**
   * Waits until nobody but the suite has written for a while: a change that keeps the pool Ready
   * (a template change under OnDelete) still changes its status, which core then copies.
   */
  quiet(pool: ConformancePool): Promise<void>;
}

/** A strategy scenario: id, title, why it is skipped, body. */
export interface StrategyScenarioDef {
  /** Scenario id. */
  readonly id: StrategyScenario;
  /** What it checks. */
  readonly title: string;
  /** Why it cannot run with this provider, or undefined. */
  skipReason(): string | undefined;
  /** The body. */
  run(): Promise<void>;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** The strategy scenarios over `host`, in the order of {@link STRATEGY_SCENARIOS}. */
export function strategyScenarios(
  host: () => StrategyScenarioHost,
  options: {
    readonly hasTemplateChange: boolean;
    /** Whether a user can delete an instance out of band (`cloud.actors.terminateInstance`). */
    readonly canTerminate: () => boolean;
    readonly machinePoolMachines: boolean;
    /** Whether the kind's spec has the kit's `strategy` field (the CRD would prune it otherwise). */
    readonly hasStrategyField: boolean;
  },
): StrategyScenarioDef[] {
  const [onDeleteIds, rolloutAfterIds, preflightIds] = STRATEGY_SCENARIOS;
  const noStrategy = options.hasStrategyField
    ? undefined
    : "the kind's spec has no strategy field (add strategy: machinePoolStrategySchema.optional() to offer OnDelete and rolloutAfter)";
  return [
    {
      id: onDeleteIds.id,
      title: onDeleteIds.title,
      skipReason: () =>
        noStrategy ??
        (!options.hasTemplateChange
          ? "no templateChange option"
          : options.machinePoolMachines || options.canTerminate()
            ? undefined
            : "cloud.actors.terminateInstance missing (and no MachinePool Machines to delete)"),
      run: () => onDelete(host()),
    },
    {
      id: rolloutAfterIds.id,
      title: rolloutAfterIds.title,
      skipReason: () => noStrategy,
      run: () => rolloutAfter(host()),
    },
    {
      id: preflightIds.id,
      title: preflightIds.title,
      skipReason: () => undefined,
      run: () => preflightHoldsScaleUp(host()),
    },
  ];
}

const sorted = async (host: StrategyScenarioHost, pool: ConformancePool) =>
  [...(await host.provider.cloud.liveProviderIds(pool))].sort();

async function outdatedCount(host: StrategyScenarioHost, pool: ConformancePool) {
  return (await host.provider.cloud.outdatedProviderIds?.(pool))?.length;
}

/** Deletes `providerID` as a user would: its Machine with MachinePool Machines, else in the cloud. */
async function userDeletes(host: StrategyScenarioHost, pool: ConformancePool, providerID: string) {
  if (!host.machinePoolMachines) {
    const terminate = host.provider.cloud.actors?.terminateInstance;
    if (!terminate) throw new Error("conformance: onDelete needs cloud.actors.terminateInstance");
    await terminate(pool, providerID);
    return;
  }
  let name: string | undefined;
  await host.until(`the Machine of ${providerID}`, async () => {
    const list = await host.client.list(Machines, { namespace: pool.namespace });
    name = list.items.find((m) => m.spec?.providerID === providerID)?.metadata?.name;
    return name ? undefined : `mpm.machines: no Machine with providerID ${providerID} yet`;
  });
  await host.client.delete(Machines, { namespace: pool.namespace, name: name as string });
}

async function onDelete(host: StrategyScenarioHost): Promise<void> {
  const replicas = 3;
  const spec = { ...host.poolSpec, strategy: { type: "OnDelete" } };
  const pool = await host.createPool(replicas, spec);
  await host.converged(pool, replicas);
  const before = await sorted(host, pool);
  await host.client.mergePatch(host.pools, pool, {
    spec: { ...host.templateChange(host.poolSpec), strategy: { type: "OnDelete" } },
  });
  // The template change must have reached the cloud (a new template the instances do not run)
  // before the window that proves nothing is replaced.
  if (host.provider.cloud.outdatedProviderIds) {
    await host.until(`${pool.name}'s instances to be out of date`, async () => {
      const outdated = await outdatedCount(host, pool);
      return outdated === replicas
        ? undefined
        : `strategy.onDeleteKeepsInstances: the cloud reports ${outdated} of ${replicas} instances out of date after the template change`;
    });
  }
  await host.quiet(pool);
  await host.steadyState(pool, replicas);
  const kept = await sorted(host, pool);
  if (JSON.stringify(kept) !== JSON.stringify(before)) {
    throw new ConformanceError(
      "strategy.onDeleteKeepsInstances",
      `with strategy.type OnDelete a template change must replace no instance: before ${JSON.stringify(before)}, after ${JSON.stringify(kept)}`,
    );
  }
  const [victim, ...others] = before as [string, ...string[]];
  await userDeletes(host, pool, victim);
  await host.until(`${pool.name} to replace the deleted ${victim}`, async () => {
    const live = await sorted(host, pool);
    const gone = others.filter((id) => !live.includes(id));
    if (gone.length > 0) {
      throw new ConformanceError(
        "strategy.onDeleteReplacesDeleted",
        `deleting ${victim} also replaced ${gone.join(", ")}; under OnDelete only the deleted instance goes`,
      );
    }
    if (live.includes(victim)) return `strategy.onDeleteReplacesDeleted: ${victim} still runs`;
    const outdated = await outdatedCount(host, pool);
    if (outdated !== undefined && outdated !== others.length) {
      return `strategy.onDeleteReplacesDeleted: ${outdated} instances out of date, expected ${others.length} (the replacement must run the new template)`;
    }
    if (live.length !== replicas) {
      return `converge: ${live.length} live instances, the pool wants ${replicas}`;
    }
    return undefined;
  });
  await host.steadyState(pool, replicas);
  const after = await sorted(host, pool);
  const lost = others.filter((id) => !after.includes(id));
  if (lost.length > 0) {
    throw new ConformanceError(
      "strategy.onDeleteKeepsInstances",
      `after the replacement, ${lost.join(", ")} went too; under OnDelete only deleted instances are replaced`,
    );
  }
  await host.deletePool(pool);
}

async function rolloutAfter(host: StrategyScenarioHost): Promise<void> {
  const replicas = 3;
  const pool = await host.createPool(replicas, host.poolSpec);
  await host.converged(pool, replicas);
  await host.until(`${pool.name} Nodes to be Ready`, async () => {
    const ready = await host.readyNodes(pool);
    return ready === replicas ? undefined : `converge: ${ready} of ${replicas} Nodes Ready`;
  });
  const before = await sorted(host, pool);
  const floor = replicas - host.rolloutMaxUnavailable;
  // Now, as a user writes it: every instance of the pool launched before this moment.
  const at = new Date().toISOString();
  await host.client.mergePatch(host.pools, pool, { spec: { strategy: { rolloutAfter: at } } });
  let lowest = replicas;
  await host.until(`${pool.name} to replace every instance launched before ${at}`, async () => {
    lowest = Math.min(lowest, await host.readyNodes(pool));
    if (lowest < floor) {
      throw new ConformanceError(
        "rollout.availability",
        `Ready Nodes dropped to ${lowest} during the rollout; must stay ≥ replicas − maxUnavailable = ${floor}`,
      );
    }
    const live = await sorted(host, pool);
    const old = live.filter((id) => before.includes(id));
    if (old.length > 0) {
      return `strategy.rolloutAfter: ${old.length} instance(s) launched before ${at} still live`;
    }
    return live.length === replicas
      ? undefined
      : `converge: ${live.length} live instances, the pool wants ${replicas}`;
  });
  await host.steadyState(pool, replicas);
  const rolled = await sorted(host, pool);
  // Idempotent: a resync or two later the same instances still serve.
  await sleep(host.settleMs);
  await host.steadyState(pool, replicas);
  const later = await sorted(host, pool);
  if (JSON.stringify(later) !== JSON.stringify(rolled)) {
    throw new ConformanceError(
      "strategy.rolloutAfterOnce",
      `rolloutAfter ${at} rolled the pool again: ${JSON.stringify(rolled)} became ${JSON.stringify(later)}; only instances launched before it are replaced`,
    );
  }
  await host.deletePool(pool);
}

/** The control plane's versions: `null` removes one. */
async function setControlPlaneVersion(
  host: StrategyScenarioHost,
  spec: string | null,
  status: string | null,
): Promise<void> {
  const key = { namespace: host.cluster.namespace, name: `${host.cluster.name}-control-plane` };
  await host.client.mergePatch(ExternalControlPlanes, key, { spec: { version: spec } });
  await host.client.mergePatchStatus(ExternalControlPlanes, key, { status: { version: status } });
}

async function preflightHoldsScaleUp(host: StrategyScenarioHost): Promise<void> {
  const pool = await host.createPool(1, host.poolSpec);
  await host.converged(pool, 1);
  // The pool's version is v1.34.1: the control plane goes there from v1.33.5.
  await setControlPlaneVersion(host, "v1.34.1", "v1.33.5");
  try {
    // Give the provider the time it would take to see the upgrade (its reads are not watched).
    await sleep(host.settleMs);
    await host.setReplicas(pool, 3);
    const launched = async () => {
      const live = await sorted(host, pool);
      if (live.length > 1) {
        throw new ConformanceError(
          "preflight.holdsScaleUp",
          `the pool launched ${live.length - 1} instance(s) while its Cluster's control plane upgrades (spec.version v1.34.1, status.version v1.33.5); core's MachineSet holds such a scale-up ("ControlPlaneIsStable")`,
        );
      }
    };
    await host.until(`${pool.name} to say which preflight check holds its scale-up`, async () => {
      await launched();
      const imp = await host.client.get(host.pools, pool);
      const named = imp.status?.conditions?.find(
        (c) => c.status !== "True" && (c.message ?? "").includes("ControlPlaneIsStable"),
      );
      return named
        ? undefined
        : `preflight.conditionNamesCheck: no condition of the pool names ControlPlaneIsStable (conditions: ${JSON.stringify((imp.status?.conditions ?? []).map((c) => `${c.type}=${c.status} ${c.reason}`))})`;
    });
    // Held, not just slow: a few more polls launch nothing either.
    for (let i = 0; i < 5; i++) {
      await launched();
      await sleep(host.settleMs / 5);
    }
    await setControlPlaneVersion(host, "v1.34.1", "v1.34.1");
    await host.steadyState(pool, 3);
  } finally {
    await setControlPlaneVersion(host, null, null);
  }
  await host.deletePool(pool);
}

/**
 * Whether a kind's CRD has `spec.strategy` in every served version: where the kit reads `type` and
 * `rolloutAfter`.
 */
export function crdHasStrategyField(crd: Record<string, unknown>): boolean {
  const versions = (crd.spec as { versions?: unknown } | undefined)?.versions;
  if (!Array.isArray(versions) || versions.length === 0) return false;
  return versions.every((version) => {
    const schema = (version as { schema?: { openAPIV3Schema?: unknown } }).schema
      ?.openAPIV3Schema as
      | { properties?: { spec?: { properties?: Record<string, unknown> } } }
      | undefined;
    return schema?.properties?.spec?.properties?.strategy !== undefined;
  });
}
