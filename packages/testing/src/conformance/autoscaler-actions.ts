/**
 * Cluster-autoscaler scenarios: the suite plays the cluster-autoscaler's Cluster API provider
 * (`cluster-autoscaler/cloudprovider/clusterapi` of kubernetes/autoscaler), which is not run here.
 * Each step is the request that provider makes, and names the function of its source it follows:
 *
 * - node-group bounds: the MachinePool's `cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size`
 *   and `…-max-size` annotations, read by `parseScalingBounds` (`clusterapi_utils.go`);
 * - scale-up: `nodegroup.IncreaseSize` (`clusterapi_nodegroup.go`), through
 *   `unstructuredScalableResource.Replicas` (GET of the MachinePool's `scale` subresource) and
 *   `SetSize` (a merge patch of it) (`clusterapi_unstructured.go`);
 * - scale-down of a Node: the autoscaler first taints it (`taints.MarkToBeDeleted`:
 *   `ToBeDeletedByClusterAutoscaler=<unix time>:NoSchedule`, by an update of the Node), drains it, then
 *   calls `nodegroup.DeleteNodes`: it refuses at the minimum size, finds the Node's Machine by
 *   providerID, annotates it `cluster.x-k8s.io/delete-machine` (`MarkMachineForDeletion`: get and
 *   update of the Machine, the value a timestamp) and lowers the replicas by one (`SetSize`); for a
 *   MachinePool without MachinePool Machines, where no Machine is found, it only lowers the replicas
 *   (autoscaler PR #9693).
 *
 * @module
 */
import { clusterv1beta2 } from "@capi-ts/sdk/api";
import { Annotations, ClusterAutoscalerTaint } from "@capi-ts/sdk/contract";
import {
  isConflict,
  NodeResource,
  type ResourceDescriptor,
  resourcePath,
} from "@capi-ts/sdk/runtime";
import type { V1Node } from "@kubernetes/client-node";
import { ConformanceError, type ConformancePoolObject } from "./invariants.js";
import { type MachinesScenarioHost, machinesProblem } from "./machines.js";
import { AUTOSCALER_SCENARIOS, type AutoscalerScenario } from "./scenario-ids.js";
import type { ConformancePool } from "./types.js";

type Machine = clusterv1beta2.Machine;
type MachinePool = ConformancePoolObject & { spec?: { replicas?: number } };

const MachineResource = clusterv1beta2.MachineResource as unknown as ResourceDescriptor<Machine>;
const MachinePoolResource =
  clusterv1beta2.MachinePoolResource as unknown as ResourceDescriptor<MachinePool>;

/** What the cluster-autoscaler scenarios need of the suite (the harness fills it in). */
export interface AutoscalerScenarioHost extends MachinesScenarioHost {
  /** Converged, then zero writes and no mutating cloud call for the steady-state window. */
  steadyState(pool: ConformancePool, replicas: number): Promise<void>;
  /** How long the suite lets things settle (the autoscaler's drain stands in for it). */
  readonly settleMs: number;
}

/** A cluster-autoscaler scenario: id, title, why it is skipped, body. */
export interface AutoscalerScenarioDef {
  /** Scenario id. */
  readonly id: AutoscalerScenario;
  /** What it checks. */
  readonly title: string;
  /** Why it cannot run with this provider, or undefined. */
  skipReason(): string | undefined;
  /** The body. */
  run(): Promise<void>;
}

/**
 * The three cluster-autoscaler scenarios over `host`:
 *
 * - `autoscalerBounds`: a pool of 2 converges; its MachinePool is annotated with node-group bounds
 *   wider than the cloud group's own (`cloud.groupBounds`), and scaled as the autoscaler scales to one
 *   more than the group's maximum, a size the old bounds refuse: the pool converges there and the
 *   group's bounds cover the annotations (`autoscaler.boundsWidened`), then stays at rest
 *   (`steadyState.zeroWrites`: no write of the bounds on every reconcile). Back at 2, a min-size of
 *   `"two"` is named on one of the pool's conditions with reason `InvalidAutoscalerBounds` while the
 *   pool stays converged, and the group's bounds stay valid (`autoscaler.invalidBoundsNamed`); once
 *   the annotations are removed the complaint goes (`autoscaler.invalidBoundsCleared`) and the pool
 *   is at rest again. Skipped without `cloud.groupBounds`.
 * - `autoscalerDeleteMachine` (MachinePool Machines): in a pool of 3 with bounds [1, 5], the Node of
 *   one instance (not the first by ID) is tainted, its Machine annotated `delete-machine` and the
 *   replicas lowered to 2, as `DeleteNodes` does: exactly that instance goes
 *   (`autoscaler.deleteMachineHonoured`). Skipped for a kind without an InfraMachine kind.
 * - `autoscalerDeleteTainted` (no MachinePool Machines): the same pool; the Node is tainted and, the
 *   MachinePool having no Machines, only the replicas are lowered: exactly the tainted Node's instance
 *   goes (`autoscaler.taintedNodeRemoved`). Skipped for a kind with an InfraMachine kind.
 */
export function autoscalerScenarios(host: () => AutoscalerScenarioHost): AutoscalerScenarioDef[] {
  const noMachines =
    "the kind has no InfraMachine kind, so the autoscaler has no Machine to annotate (autoscalerDeleteTainted covers it)";
  return [
    {
      id: "autoscalerBounds",
      title: AUTOSCALER_SCENARIOS[0].title,
      skipReason: () =>
        host().provider.cloud.groupBounds
          ? undefined
          : "cloud.groupBounds missing (the suite reads the group's own bounds there)",
      run: () => boundsScenario(host()),
    },
    {
      id: "autoscalerDeleteMachine",
      title: AUTOSCALER_SCENARIOS[1].title,
      skipReason: () => (host().kind.machine ? undefined : noMachines),
      run: () => deleteScenario(host(), "machine"),
    },
    {
      id: "autoscalerDeleteTainted",
      title: AUTOSCALER_SCENARIOS[2].title,
      skipReason: () =>
        host().kind.machine
          ? "the kind has MachinePool Machines, so the autoscaler annotates the Machine (autoscalerDeleteMachine covers it)"
          : undefined,
      run: () => deleteScenario(host(), "taint"),
    },
  ];
}

const key = (pool: ConformancePool) => ({ namespace: pool.namespace, name: pool.name });

/** `unstructuredScalableResource.Replicas`: `spec.replicas` of the MachinePool's Scale. */
async function replicasOf(host: AutoscalerScenarioHost, pool: ConformancePool): Promise<number> {
  const scale = (await host.client.request({
    method: "GET",
    path: resourcePath(MachinePoolResource, key(pool), "scale"),
  })) as { spec?: { replicas?: number } };
  return scale.spec?.replicas ?? 0;
}

/** `unstructuredScalableResource.SetSize`: a merge patch of the MachinePool's Scale. */
async function setSize(
  host: AutoscalerScenarioHost,
  pool: ConformancePool,
  replicas: number,
): Promise<void> {
  await host.client.request({
    method: "PATCH",
    path: resourcePath(MachinePoolResource, key(pool), "scale"),
    body: { spec: { replicas } },
    contentType: "application/merge-patch+json",
  });
}

/** The node-group bounds, as a user configures the autoscaler on a MachinePool. */
async function annotateBounds(
  host: AutoscalerScenarioHost,
  pool: ConformancePool,
  min: string | null,
  max: string | null,
): Promise<void> {
  await host.client.mergePatch(MachinePoolResource, key(pool), {
    metadata: {
      annotations: { [Annotations.AutoscalerMinSize]: min, [Annotations.AutoscalerMaxSize]: max },
    },
  });
}

/**
 * `taints.MarkToBeDeleted` (`utils/taints`): adds `ToBeDeletedByClusterAutoscaler` to the Node of
 * `providerID` by an update, again on a conflict, as `AddTaints` does.
 */
async function markToBeDeleted(host: AutoscalerScenarioHost, providerID: string): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    const nodes = await host.workload.list(NodeResource);
    const node = nodes.items.find((n) => n.spec?.providerID === providerID);
    if (!node)
      throw new Error(`conformance: no Node in the workload cluster has providerID ${providerID}`);
    const taint = {
      key: ClusterAutoscalerTaint.key,
      value: String(Math.floor(Date.now() / 1000)),
      effect: ClusterAutoscalerTaint.effect,
    };
    const next: V1Node = {
      ...node,
      spec: { ...node.spec, taints: [...(node.spec?.taints ?? []), taint] },
    };
    try {
      await host.workload.update(NodeResource, next);
      return;
    } catch (error) {
      if (!isConflict(error) || attempt >= 10) throw error;
    }
  }
}

/** The Machine of a providerID (the autoscaler's `findMachineByProviderID`), if there is one. */
async function findMachineByProviderID(
  host: AutoscalerScenarioHost,
  pool: ConformancePool,
  providerID: string,
): Promise<Machine | undefined> {
  const machines = await host.client.list(MachineResource, { namespace: pool.namespace });
  return machines.items.find(
    (m) => m.spec?.providerID === providerID && !m.metadata?.deletionTimestamp,
  );
}

/**
 * `nodegroup.DeleteNodes` for one Node: refused at the minimum size; the Machine, when there is one,
 * annotated `delete-machine` by a get and an update (`MarkMachineForDeletion`); then the replicas
 * lowered by one (`SetSize`). Without a Machine only the replicas are lowered (PR #9693).
 */
async function deleteNodes(
  host: AutoscalerScenarioHost,
  pool: ConformancePool,
  providerID: string,
  minSize: number,
): Promise<{ machine: string | undefined }> {
  const replicas = await replicasOf(host, pool);
  if (replicas <= minSize) {
    throw new Error(
      `conformance: min size reached (${replicas} ≤ ${minSize}), the autoscaler would delete nothing`,
    );
  }
  const found = await findMachineByProviderID(host, pool, providerID);
  if (found) await markMachineForDeletion(host, found, pool.namespace);
  await setSize(host, pool, replicas - 1);
  return { machine: found?.metadata?.name };
}

/**
 * `MarkMachineForDeletion`: the Machine read again and updated with the `delete-machine`
 * annotation. A conflict (core or the kit wrote the Machine in between) fails the autoscaler's
 * `DeleteNodes`, and its next loop tries again; here the next attempt follows at once.
 */
async function markMachineForDeletion(
  host: AutoscalerScenarioHost,
  found: Machine,
  namespace: string,
): Promise<void> {
  const key = {
    namespace: found.metadata?.namespace ?? namespace,
    name: found.metadata?.name ?? "",
  };
  for (let attempt = 0; ; attempt++) {
    const machine = await host.client.get(MachineResource, key);
    try {
      await host.client.update(MachineResource, {
        ...machine,
        metadata: {
          ...machine.metadata,
          annotations: {
            ...machine.metadata?.annotations,
            [Annotations.DeleteMachine]: new Date().toString(),
          },
        },
      });
      return;
    } catch (error) {
      if (!isConflict(error) || attempt >= 10) throw error;
    }
  }
}

const show = (b: { min?: number | undefined; max?: number | undefined } | undefined) =>
  `[${b?.min ?? "unset"}, ${b?.max ?? "unset"}]`;

async function boundsScenario(host: AutoscalerScenarioHost): Promise<void> {
  const cloud = host.provider.cloud;
  const groupBounds = cloud.groupBounds;
  if (!groupBounds) throw new Error("conformance: autoscalerBounds needs cloud.groupBounds");
  const pool = await host.createPool(2);
  await host.converged(pool, 2);
  const own = await groupBounds(pool);
  // One past the group's own maximum: a size its bounds refuse; the annotations are wider still.
  const target = own?.max !== undefined ? own.max + 1 : 3;
  const min = Math.max(0, (own?.min ?? 0) - 1);
  const max = target + 1;
  await annotateBounds(host, pool, String(min), String(max));
  // IncreaseSize: the current size from the Scale, the new one written back through it.
  const current = await replicasOf(host, pool);
  await setSize(host, pool, current + (target - current));
  await host.until(`${pool.name} to grow to ${target} within the autoscaler's bounds`, async () => {
    const now = await groupBounds(pool);
    const live = (await cloud.liveProviderIds(pool)).length;
    const ready = (await host.client.get(host.pools, key(pool))).status?.conditions?.find(
      (c) => c.type === "Ready",
    );
    if (ready?.status === "False" && ready.reason === "ReplicasOutOfRange") {
      // The kit's name for a size it will not send: no point waiting for it to change its mind.
      throw new ConformanceError(
        "autoscaler.boundsWidened",
        `the provider refuses the size ${target} the autoscaler set (Ready=False ReplicasOutOfRange: ${ready.message ?? ""}); the group's bounds are ${show(now)}, the autoscaler's [${min}, ${max}]: widen the group's own bounds so that the cloud accepts every size the autoscaler may set`,
      );
    }
    if ((now?.min ?? 0) > min || (now?.max !== undefined && now.max < max)) {
      return `autoscaler.boundsWidened: the group's bounds are ${show(now)} (they were ${show(own)}), the autoscaler's [${min}, ${max}]: widen the group's own bounds so that the cloud accepts every size the autoscaler may set`;
    }
    return live === target
      ? undefined
      : `autoscaler.boundsWidened: ${live} of ${target} instances, the size the autoscaler set through the scale subresource`;
  });
  await host.steadyState(pool, target);

  await host.setReplicas(pool, 2);
  await host.converged(pool, 2);
  await annotateBounds(host, pool, "two", String(max));
  await host.until(`${pool.name} to name its invalid autoscaler bounds`, async () => {
    const object = await host.client.get(host.pools, key(pool));
    const conditions = object.status?.conditions ?? [];
    const named = conditions.find(
      (c) => c.reason === "InvalidAutoscalerBounds" && c.status !== "True",
    );
    if (!named) {
      return `autoscaler.invalidBoundsNamed: no condition of ${pool.name} has reason InvalidAutoscalerBounds after ${Annotations.AutoscalerMinSize} was set to "two" (conditions: ${conditions.map((c) => `${c.type}=${c.status} ${c.reason}`).join(", ")}); name an annotation that is not a whole number on a condition, with what to write instead`;
    }
    if (!named.message?.includes(Annotations.AutoscalerMinSize)) {
      return `autoscaler.invalidBoundsNamed: the condition ${named.type} (${named.reason}) does not name the annotation ${Annotations.AutoscalerMinSize}: "${named.message ?? ""}"`;
    }
    return undefined;
  });
  const now = await groupBounds(pool);
  if (now && (now.min ?? 0) > (now.max ?? Number.POSITIVE_INFINITY)) {
    throw new ConformanceError(
      "autoscaler.invalidBoundsNamed",
      `with an invalid annotation the group's bounds became ${show(now)}; write no bounds from annotations that do not parse`,
    );
  }
  await host.converged(pool, 2);
  await annotateBounds(host, pool, null, null);
  // The pool reacts to the annotations' removal with a status write: wait for it, or the steady
  // window below may open before the provider has seen the change (a slow watch under load).
  await host.until(`${pool.name} to drop its InvalidAutoscalerBounds complaint`, async () => {
    const object = await host.client.get(host.pools, key(pool));
    const stale = (object.status?.conditions ?? []).find(
      (c) => c.reason === "InvalidAutoscalerBounds" && c.status !== "True",
    );
    return stale
      ? `autoscaler.invalidBoundsCleared: the condition ${stale.type} still has reason InvalidAutoscalerBounds after the autoscaler's annotations were removed; clear the complaint once the annotations are gone or valid`
      : undefined;
  });
  await host.steadyState(pool, 2);
  await host.deletePool(pool);
}

async function deleteScenario(
  host: AutoscalerScenarioHost,
  how: "machine" | "taint",
): Promise<void> {
  const pool = await host.createPool(3);
  await annotateBounds(host, pool, "1", "5");
  await host.converged(pool, 3);
  if (how === "machine") {
    await host.until(`${pool.name}'s InfraMachines and Machines`, () =>
      machinesProblem(host, pool),
    );
  }
  const before = [...(await host.provider.cloud.liveProviderIds(pool))].sort();
  // Not the first by ID, so that a provider that ignores the autoscaler's choice is seen to.
  const victim = before[1] as string;
  if (how === "machine") {
    await host.until(`the Machine of ${victim}`, async () =>
      (await findMachineByProviderID(host, pool, victim))
        ? undefined
        : `mpm.machines: no Machine has providerID ${victim} yet`,
    );
  }
  await markToBeDeleted(host, victim);
  // The autoscaler drains the Node between the taint and DeleteNodes.
  await new Promise((r) => setTimeout(r, Math.max(host.settleMs, 1_000)));
  const { machine } = await deleteNodes(host, pool, victim, 1);
  if (how === "machine" && !machine) {
    throw new Error(`conformance: the autoscaler found no Machine for ${victim} to annotate`);
  }
  await host.converged(pool, 2);
  const after = [...(await host.provider.cloud.liveProviderIds(pool))].sort();
  const expected = before.filter((id) => id !== victim);
  if (JSON.stringify(after) !== JSON.stringify(expected)) {
    throw how === "machine"
      ? new ConformanceError(
          "autoscaler.deleteMachineHonoured",
          `the autoscaler annotated the Machine of ${victim} ${Annotations.DeleteMachine} and lowered the replicas to 2, leaving ${JSON.stringify(after)}; the annotated Machine's instance, and only it, must go`,
        )
      : new ConformanceError(
          "autoscaler.taintedNodeRemoved",
          `the autoscaler tainted the Node of ${victim} ${ClusterAutoscalerTaint.key} and lowered the replicas to 2, leaving ${JSON.stringify(after)}; without MachinePool Machines the instance of the tainted Node, and only it, must go`,
        );
  }
  if (how === "machine") {
    await host.until(`${pool.name}'s InfraMachines and Machines`, () =>
      machinesProblem(host, pool),
    );
  }
  await host.deletePool(pool);
}
