/**
 * MachinePool Machines scenarios (contract R11, §3): for a kind with an InfraMachine kind, one
 * labelled InfraMachine per instance and a Machine core made for each; a scale-down that takes the
 * Machine annotated `cluster.x-k8s.io/delete-machine`, its Node cordoned before the instance goes;
 * a Machine deleted by a user removes exactly its instance, which the pool replaces. They run on
 * both judges with the same bodies: on real core, its Machine controller drains and deletes.
 *
 * @module
 */
import { clusterv1beta2 } from "@capi-ts/sdk/api";
import { Annotations, formatLabelValue, Labels } from "@capi-ts/sdk/contract";
import { type KubeClient, NodeResource, type ResourceDescriptor } from "@capi-ts/sdk/runtime";
import type { KubernetesObject } from "@kubernetes/client-node";
import { ConformanceError, type ConformancePoolObject } from "./invariants.js";
import {
  MACHINE_POOL_MACHINES_SCENARIOS,
  type MachinePoolMachinesScenario,
} from "./scenario-ids.js";
import type { ConformanceKind, ConformancePool, ConformanceProvider } from "./types.js";

type Machine = clusterv1beta2.Machine;
type InfraMachine = KubernetesObject & {
  spec?: { providerID?: string };
  status?: Record<string, unknown>;
};

/** What the MachinePool Machines scenarios need of the suite (the harness fills it in). */
export interface MachinesScenarioHost {
  /** The management cluster, as the suite writes it. */
  readonly client: KubeClient;
  /** A client of the workload cluster (its Nodes). */
  readonly workload: KubeClient;
  /** The InfraMachinePool kind under test. */
  readonly pools: ResourceDescriptor<ConformancePoolObject>;
  /** The kind under test (its `machine`). */
  readonly kind: ConformanceKind;
  /** The provider under test. */
  readonly provider: ConformanceProvider;
  /** Creates a pool in the suite's Cluster (spec: the suite's `poolSpec` unless given). */
  createPool(replicas: number, spec?: Record<string, unknown>): Promise<ConformancePool>;
  /** The suite's `poolSpec` made interruptible (spot), when the provider offers one. */
  readonly interruptibleSpec?: Record<string, unknown> | undefined;
  /** Sets the MachinePool's replicas. */
  setReplicas(pool: ConformancePool, replicas: number): Promise<void>;
  /** Waits until converged as core sees it. */
  converged(pool: ConformancePool, replicas: number): Promise<void>;
  /** Deletes the pool and waits until it is gone with its cloud resources. */
  deletePool(pool: ConformancePool): Promise<void>;
  /** Polls `check` (undefined = satisfied, else the reason) until it passes or times out. */
  until(what: string, check: () => Promise<string | undefined>, timeoutMs?: number): Promise<void>;
}

/** A MachinePool Machines scenario: id, title, why it is skipped, body. */
export interface MachinesScenario {
  /** Scenario id. */
  readonly id: MachinePoolMachinesScenario;
  /** What it checks. */
  readonly title: string;
  /** Why it cannot run with this provider, or undefined. */
  skipReason(): string | undefined;
  /** The body. */
  run(): Promise<void>;
}

const MachineResource = clusterv1beta2.MachineResource as unknown as ResourceDescriptor<Machine>;

/**
 * The three MachinePool Machines scenarios over `host`; each is skipped for a kind without an
 * InfraMachine kind (`ConformanceKind.machine`).
 *
 * - `machinePoolMachines`: a pool of 2 converges; the pool names its InfraMachine kind
 *   (`mpm.infrastructureMachineKind`); exactly one InfraMachine per live instance, owned by the pool,
 *   labelled `cluster.x-k8s.io/cluster-name` and `cluster.x-k8s.io/pool-name` (the formatted
 *   MachinePool name), with that instance's providerID (`mpm.infraMachineLabels`); a Machine of the
 *   MachinePool for each, with a Node reference (`mpm.machines`).
 * - `machineDeletePriority`: in a pool of 3, the Machine of one instance (not the first by name) is
 *   annotated `cluster.x-k8s.io/delete-machine`; scaled to 2, exactly that instance goes
 *   (`mpm.deleteMachineHonoured`), and its Node was cordoned before the instance left the cloud
 *   (`mpm.drainBeforeDelete`: the provider deletes through the Machine, never behind core's back).
 * - `machineDeleted`: in a pool of 2, a user deletes one Machine; exactly its instance goes, the
 *   other stays, and the pool is back at 2 with a new instance and its InfraMachine
 *   (`mpm.deletedMachineRemovesItsInstance`).
 * - `machineInterruptible`: a pool of 2 on the provider's interruptible spec converges; each
 *   InfraMachine says `status.interruptible: true` (`mpm.interruptible`) and core labels each Node
 *   `cluster.x-k8s.io/interruptible` (`mpm.interruptibleNodeLabel`, `machine_controller_noderef.go`).
 *   Skipped without `interruptibleSpec`.
 */
export function machinePoolMachinesScenarios(host: () => MachinesScenarioHost): MachinesScenario[] {
  const skip = () =>
    host().kind.machine
      ? undefined
      : "the kind has no InfraMachine kind (ConformanceKind.machine; defineInfraMachinePool({ machinePoolMachines: true }))";
  return [
    {
      id: "machinePoolMachines",
      title: MACHINE_POOL_MACHINES_SCENARIOS[0].title,
      skipReason: skip,
      run: () => machinesOfPool(host()),
    },
    {
      id: "machineDeletePriority",
      title: MACHINE_POOL_MACHINES_SCENARIOS[1].title,
      skipReason: skip,
      run: () => deletePriority(host()),
    },
    {
      id: "machineDeleted",
      title: MACHINE_POOL_MACHINES_SCENARIOS[2].title,
      skipReason: skip,
      run: () => machineDeleted(host()),
    },
    {
      id: "machineInterruptible",
      title: MACHINE_POOL_MACHINES_SCENARIOS[3].title,
      skipReason: () =>
        skip() ??
        (host().interruptibleSpec
          ? undefined
          : "the provider gives no interruptible spec (MachinePoolConformanceOptions.interruptibleSpec)"),
      run: () => machineInterruptible(host()),
    },
  ];
}

function infraMachineResource(host: MachinesScenarioHost): ResourceDescriptor<InfraMachine> {
  const machine = host.kind.machine;
  if (!machine) throw new Error("conformance: the kind has no InfraMachine kind");
  const names = (machine.crd as { spec?: { names?: { plural?: string } } }).spec?.names;
  return {
    group: host.kind.group,
    version: host.kind.storageVersion,
    kind: machine.kind,
    plural: names?.plural ?? `${machine.kind.toLowerCase()}s`,
    scope: "Namespaced",
    subresources: { status: true },
  };
}

/** The pool's InfraMachines (owned by it) and its MachinePool's Machines. */
async function observe(host: MachinesScenarioHost, pool: ConformancePool) {
  const all = await host.client.list(infraMachineResource(host), { namespace: pool.namespace });
  const infraMachines = all.items.filter((im) =>
    (im.metadata?.ownerReferences ?? []).some(
      (ref) => ref.kind === host.kind.kind && ref.name === pool.name,
    ),
  );
  const machines = (
    await host.client.list(MachineResource, { namespace: pool.namespace })
  ).items.filter(
    (m) =>
      m.metadata?.labels?.[Labels.MachinePoolName] ===
      formatLabelValue(pool.machinePoolName ?? pool.name),
  );
  const live = [...(await host.provider.cloud.liveProviderIds(pool))].sort();
  return { infraMachines, machines, live };
}

/**
 * Why the pool's InfraMachines and Machines are not as core needs them and settled (a Machine per
 * InfraMachine, each with a Node reference and `Ready=True`), or undefined. The suite's
 * convergence includes it for a kind with MachinePool Machines: until then core itself still writes.
 */
export async function machinesProblem(
  host: MachinesScenarioHost,
  pool: ConformancePool,
): Promise<string | undefined> {
  const kind = host.kind.machine?.kind;
  const imp = await host.client.get(host.pools, { namespace: pool.namespace, name: pool.name });
  const named = imp.status?.infrastructureMachineKind;
  if (named !== kind) {
    return `mpm.infrastructureMachineKind: status.infrastructureMachineKind is ${JSON.stringify(named)}, must be ${JSON.stringify(kind)} (core creates Machines only for the kind the pool names)`;
  }
  const { infraMachines, machines, live } = await observe(host, pool);
  const ids = infraMachines
    .filter((im) => !im.metadata?.deletionTimestamp)
    .map((im) => im.spec?.providerID ?? "")
    .sort();
  if (JSON.stringify(ids) !== JSON.stringify(live)) {
    return `mpm.infraMachineLabels: InfraMachines of ${pool.name} have providerIDs ${JSON.stringify(ids)}, must be exactly one per live instance ${JSON.stringify(live)}`;
  }
  for (const im of infraMachines) {
    const labels = im.metadata?.labels ?? {};
    if (
      labels[Labels.ClusterName] !== pool.clusterName ||
      labels[Labels.MachinePoolName] !== formatLabelValue(pool.machinePoolName ?? pool.name)
    ) {
      return `mpm.infraMachineLabels: InfraMachine ${im.metadata?.name} is labelled ${JSON.stringify(labels)}; it needs ${Labels.ClusterName}=${pool.clusterName} and ${Labels.MachinePoolName}=${formatLabelValue(pool.machinePoolName ?? pool.name)} (core selects by both)`;
    }
  }
  const byName = new Map(machines.map((m) => [m.spec?.infrastructureRef?.name ?? "", m]));
  for (const im of infraMachines) {
    const machine = byName.get(im.metadata?.name ?? "");
    if (!machine)
      return `mpm.machines: core has not made a Machine for InfraMachine ${im.metadata?.name} yet`;
    if (!machine.status?.nodeRef?.name) {
      const conditions = (machine.status?.conditions ?? [])
        .filter((c) => c.status !== "True")
        .map((c) => `${c.type}=${c.status} (${c.reason}${c.message ? `: ${c.message}` : ""})`)
        .join("; ");
      return `mpm.machines: Machine ${machine.metadata?.name} has no Node reference yet (its InfraMachine's providerID ${im.spec?.providerID} must match a Node)${conditions ? `; its conditions: ${conditions}` : ""}`;
    }
    const ready = machine.status?.conditions?.find((c) => c.type === "Ready");
    if (ready?.status !== "True") {
      return `mpm.machines: Machine ${machine.metadata?.name} is not Ready yet (${ready ? `${ready.reason}: ${ready.message ?? ""}` : "no Ready condition"})`;
    }
  }
  const extra = machines.filter(
    (m) => !infraMachines.some((im) => im.metadata?.name === m.spec?.infrastructureRef?.name),
  );
  if (extra.length > 0) {
    return `mpm.machines: Machine ${extra[0]?.metadata?.name} has no InfraMachine of the pool (its instance is gone: the provider deletes such Machines)`;
  }
  return undefined;
}

async function machinesOfPool(host: MachinesScenarioHost): Promise<void> {
  const pool = await host.createPool(2);
  await host.converged(pool, 2);
  await host.until(`${pool.name}'s InfraMachines and Machines`, () => machinesProblem(host, pool));
  await host.deletePool(pool);
}

async function machineOf(
  host: MachinesScenarioHost,
  pool: ConformancePool,
  providerID: string,
): Promise<Machine> {
  let found: Machine | undefined;
  await host.until(`the Machine of ${providerID}`, async () => {
    const { infraMachines, machines } = await observe(host, pool);
    const im = infraMachines.find((i) => i.spec?.providerID === providerID);
    found = machines.find((m) => m.spec?.infrastructureRef?.name === im?.metadata?.name);
    return found ? undefined : `mpm.machines: no Machine for the instance ${providerID} yet`;
  });
  return found as Machine;
}

async function deletePriority(host: MachinesScenarioHost): Promise<void> {
  const pool = await host.createPool(3);
  await host.converged(pool, 3);
  await host.until(`${pool.name}'s InfraMachines and Machines`, () => machinesProblem(host, pool));
  const before = [...(await host.provider.cloud.liveProviderIds(pool))].sort();
  // Not the first by name, so that a provider that ignores the annotation is seen to.
  const victim = before[1] as string;
  const machine = await machineOf(host, pool, victim);
  await host.client.mergePatch(MachineResource, machine, {
    metadata: { annotations: { [Annotations.DeleteMachine]: "conformance" } },
  });
  let cordonedAt: number | undefined;
  let goneAt: number | undefined;
  let machineDeletingAt: number | undefined;
  const watching = { on: true };
  // With nothing to evict, core cordons, drains and deletes the InfraMachine in one reconcile, and the
  // Node may be deleted right after the instance goes: a poll can miss the cordon; a watch from a
  // list sees every version of the Node.
  const cordoned = (
    node: KubernetesObject & { spec?: { providerID?: string; unschedulable?: boolean } },
  ) => node.spec?.providerID === victim && node.spec?.unschedulable === true;
  const listNodes = async () => {
    const nodes = await host.workload.list(NodeResource);
    if (nodes.items.some(cordoned)) cordonedAt ??= Date.now();
    return nodes.metadata.resourceVersion ?? "";
  };
  const nodeWatch = new AbortController();
  // Listed before the scale-down, so the watch misses nothing that follows it.
  let resourceVersion: string | undefined = await listNodes();
  const nodeWatcher = (async () => {
    while (!nodeWatch.signal.aborted && cordonedAt === undefined) {
      try {
        resourceVersion ??= await listNodes();
        for await (const event of host.workload.watch(NodeResource, {
          resourceVersion,
          signal: nodeWatch.signal,
        })) {
          resourceVersion = event.object.metadata?.resourceVersion ?? resourceVersion;
          if (event.type !== "BOOKMARK" && cordoned(event.object)) {
            cordonedAt = Date.now();
            break;
          }
        }
      } catch {
        // A cut or expired watch: list again, then watch from there.
        resourceVersion = undefined;
        if (!nodeWatch.signal.aborted) await new Promise((r) => setTimeout(r, 20));
      }
    }
  })();
  const watcher = (async () => {
    while (watching.on) {
      const now = Date.now();
      if (machineDeletingAt === undefined) {
        const current = await host.client
          .get(MachineResource, { namespace: pool.namespace, name: machine.metadata?.name ?? "" })
          .catch(() => undefined);
        if (!current || current.metadata?.deletionTimestamp) machineDeletingAt = now;
      }
      if (goneAt === undefined) {
        const live = await host.provider.cloud.liveProviderIds(pool);
        if (!live.includes(victim)) goneAt = now;
      }
      await new Promise((r) => setTimeout(r, 20));
    }
  })();
  try {
    await host.setReplicas(pool, 2);
    await host.converged(pool, 2);
  } finally {
    watching.on = false;
    nodeWatch.abort();
    await Promise.all([watcher, nodeWatcher]);
  }
  const after = [...(await host.provider.cloud.liveProviderIds(pool))].sort();
  const expected = before.filter((id) => id !== victim);
  if (JSON.stringify(after) !== JSON.stringify(expected)) {
    throw new ConformanceError(
      "mpm.deleteMachineHonoured",
      `scaling ${pool.name} from 3 to 2 with the Machine of ${victim} annotated ${Annotations.DeleteMachine} left ${JSON.stringify(after)}; the annotated Machine's instance must go first`,
    );
  }
  if (machineDeletingAt === undefined || (goneAt !== undefined && machineDeletingAt > goneAt)) {
    throw new ConformanceError(
      "mpm.drainBeforeDelete",
      `the instance ${victim} left the cloud before its Machine ${machine.metadata?.name} was deleted; with MachinePool Machines scale down by deleting the Machine, and delete the instance once core deletes its InfraMachine`,
    );
  }
  if (cordonedAt === undefined || (goneAt !== undefined && cordonedAt > goneAt)) {
    throw new ConformanceError(
      "mpm.drainBeforeDelete",
      `the instance ${victim} left the cloud ${cordonedAt === undefined ? "without its Node ever being cordoned" : `${cordonedAt - (goneAt ?? 0)} ms before its Node was cordoned`}; with MachinePool Machines delete the Machine and let core drain the Node, then delete the instance once core deletes its InfraMachine`,
    );
  }
  await host.until(`${pool.name}'s InfraMachines and Machines`, () => machinesProblem(host, pool));
  await host.deletePool(pool);
}

/** Where core's deletion of a Machine stands (its `Deleting` condition), for a failure message. */
async function deletingState(host: MachinesScenarioHost, machine: Machine): Promise<string> {
  const current = await host.client
    .get(MachineResource, {
      namespace: machine.metadata?.namespace ?? "",
      name: machine.metadata?.name ?? "",
    })
    .catch(() => undefined);
  if (!current) return `; the Machine ${machine.metadata?.name} is gone`;
  const deleting = current.status?.conditions?.find((c) => c.type === "Deleting");
  return deleting
    ? `; core's Machine ${machine.metadata?.name}: Deleting=${deleting.status} (${deleting.reason}${deleting.message ? `: ${deleting.message}` : ""})`
    : "";
}

async function machineDeleted(host: MachinesScenarioHost): Promise<void> {
  const pool = await host.createPool(2);
  await host.converged(pool, 2);
  await host.until(`${pool.name}'s InfraMachines and Machines`, () => machinesProblem(host, pool));
  const before = [...(await host.provider.cloud.liveProviderIds(pool))].sort();
  const [keep, victim] = before as [string, string];
  const machine = await machineOf(host, pool, victim);
  await host.client.delete(MachineResource, machine);
  await host.until(`${pool.name} to replace the instance of the deleted Machine`, async () => {
    const live = await host.provider.cloud.liveProviderIds(pool);
    if (!live.includes(keep)) {
      throw new ConformanceError(
        "mpm.deletedMachineRemovesItsInstance",
        `deleting the Machine of ${victim} removed ${keep} too; only the deleted Machine's instance may go`,
      );
    }
    if (live.includes(victim)) {
      return `mpm.deletedMachineRemovesItsInstance: ${victim} still runs after its Machine was deleted${await deletingState(host, machine)}`;
    }
    if (live.length !== 2)
      return `mpm.deletedMachineRemovesItsInstance: ${live.length} live instances, the pool wants 2`;
    return undefined;
  });
  await host.converged(pool, 2);
  await host.until(`${pool.name}'s InfraMachines and Machines`, () => machinesProblem(host, pool));
  await host.deletePool(pool);
}

async function machineInterruptible(host: MachinesScenarioHost): Promise<void> {
  const spec = host.interruptibleSpec;
  if (!spec) throw new Error("conformance: machineInterruptible needs interruptibleSpec");
  const pool = await host.createPool(2, spec);
  await host.converged(pool, 2);
  const resource = infraMachineResource(host);
  await host.until(`the InfraMachines and Nodes of ${pool.name} to say interruptible`, async () => {
    const owned = (await host.client.list(resource, { namespace: pool.namespace })).items.filter(
      (im) => im.metadata?.ownerReferences?.some((ref) => ref.name === pool.name),
    );
    const notMarked = owned.filter((im) => im.status?.interruptible !== true);
    if (owned.length !== 2 || notMarked.length > 0) {
      return `mpm.interruptible: ${owned.length} InfraMachines, ${notMarked.length} without status.interruptible: true (${notMarked.map((im) => im.metadata?.name).join(", ")})`;
    }
    const providerIDs = new Set(owned.map((im) => im.spec?.providerID ?? ""));
    const nodes = (await host.workload.list(NodeResource)).items.filter((n) =>
      providerIDs.has(n.spec?.providerID ?? ""),
    );
    const unlabelled = nodes.filter(
      (n) => n.metadata?.labels?.[Labels.Interruptible] === undefined,
    );
    if (nodes.length !== 2 || unlabelled.length > 0) {
      return `mpm.interruptibleNodeLabel: ${nodes.length} Nodes, ${unlabelled.length} without the ${Labels.Interruptible} label core sets from status.interruptible`;
    }
    return undefined;
  });
  await host.deletePool(pool);
}
