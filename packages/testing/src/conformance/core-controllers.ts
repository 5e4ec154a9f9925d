/**
 * Scenarios that need a controller of a real cluster which the emulator does not grow to cover:
 * CAPI's MachineHealthCheck controller and kube-controller-manager's garbage collector. They run on
 * real core only (`core: "real"`: CAPI's own manager and kube-controller-manager) and are listed as
 * skipped, with the reason, when the emulator judges — as `apiServerFaults` is the other way round.
 * Both need MachinePool Machines (a kind with an InfraMachine kind).
 *
 * @module
 */
import { clusterv1beta2 } from "@capi-ts/sdk/api";
import { formatLabelValue, Labels } from "@capi-ts/sdk/contract";
import { NodeResource, type ResourceDescriptor } from "@capi-ts/sdk/runtime";
import type { KubernetesObject } from "@kubernetes/client-node";
import type { MachinesScenarioHost } from "./machines.js";
import { REAL_CORE_SCENARIOS, type RealCoreScenario } from "./scenario-ids.js";
import type { ConformancePool } from "./types.js";

type Machine = clusterv1beta2.Machine;
type MachineHealthCheck = KubernetesObject & {
  spec?: Record<string, unknown>;
  status?: { expectedMachines?: number; currentHealthy?: number; targets?: string[] };
};

/** What these scenarios need of the suite: the MachinePool Machines host, and which core judges. */
export interface RealCoreScenarioHost extends MachinesScenarioHost {
  /** The judge: only `real` runs these scenarios. */
  readonly core: "emulator" | "real";
}

/** A real-core-only scenario: id, title, why it is skipped, body. */
export interface RealCoreScenarioDef {
  /** Scenario id. */
  readonly id: RealCoreScenario;
  /** What it checks. */
  readonly title: string;
  /** Why it cannot run with this judge or provider, or undefined. */
  skipReason(): string | undefined;
  /** The body. */
  run(): Promise<void>;
}

const MachineResource = clusterv1beta2.MachineResource as unknown as ResourceDescriptor<Machine>;
const MachineHealthCheckResource: ResourceDescriptor<MachineHealthCheck> = {
  group: "cluster.x-k8s.io",
  version: "v1beta2",
  kind: "MachineHealthCheck",
  plural: "machinehealthchecks",
  scope: "Namespaced",
  subresources: { status: true },
};

/**
 * The real-core-only scenarios over `host`:
 *
 * - `machineHealthCheck`: a pool of 2 converges; a MachineHealthCheck selecting its Machines (the
 *   `cluster.x-k8s.io/pool-name` label) is reconciled by core: `status.expectedMachines` and
 *   `currentHealthy` are 2 and every Machine has `HealthCheckSucceeded=True` (`mhc.counted`); the
 *   provider replaced no instance meanwhile (`mhc.poolUntouched`).
 * - `machineHealthCheckRemediation`: a pool of 3 converges under a MachineHealthCheck; one Node turns
 *   `Ready=False` (as a kubelet that lost its runtime reports it); core's MHC marks that Machine
 *   `HealthCheckSucceeded=False`, `OwnerRemediated=False` and leaves it to its owner
 *   (`machinehealthcheck_controller.go`, `patchUnhealthyTargets`). The provider marks it
 *   `OwnerRemediated=False, MachineDeleting` and deletes it, core drains it and the cloud replaces
 *   exactly its instance (`mhc.remediated`); the other two instances stay throughout
 *   (`mhc.othersUntouched`); the pool is back at 3 with every Machine healthy (`mhc.recovered`).
 * - `garbageCollection`: a pool of 2 converges; each Machine is controlled by the MachinePool; the
 *   MachinePool is deleted, and its Machines and InfraMachines are gone with the cloud's resources
 *   (`gc.machinesCollected`) — the Machines through their owner reference, which only a garbage
 *   collector follows.
 */
export function realCoreScenarios(host: () => RealCoreScenarioHost): RealCoreScenarioDef[] {
  const skip = (needs: string) => () => {
    const h = host();
    if (h.core !== "real") return `needs ${needs}, which only real core has (core: real)`;
    return h.kind.machine
      ? undefined
      : "the kind has no InfraMachine kind (ConformanceKind.machine; defineInfraMachinePool({ machinePoolMachines: true }))";
  };
  return [
    {
      id: "machineHealthCheck",
      title: REAL_CORE_SCENARIOS[0].title,
      skipReason: skip("CAPI's MachineHealthCheck controller"),
      run: () => machineHealthCheck(host()),
    },
    {
      id: "machineHealthCheckRemediation",
      title: REAL_CORE_SCENARIOS[1].title,
      skipReason: skip("CAPI's MachineHealthCheck controller"),
      run: () => machineHealthCheckRemediation(host()),
    },
    {
      id: "garbageCollection",
      title: REAL_CORE_SCENARIOS[2].title,
      skipReason: skip("kube-controller-manager's garbage collector"),
      run: () => garbageCollection(host()),
    },
  ];
}

async function machinesOf(host: RealCoreScenarioHost, pool: ConformancePool): Promise<Machine[]> {
  return (await host.client.list(MachineResource, { namespace: pool.namespace })).items.filter(
    (m) => m.metadata?.labels?.[Labels.MachinePoolName] === formatLabelValue(pool.name),
  );
}

async function machineHealthCheck(host: RealCoreScenarioHost): Promise<void> {
  const pool = await host.createPool(2);
  await host.converged(pool, 2);
  const before = [...(await host.provider.cloud.liveProviderIds(pool))].sort();
  const name = `${pool.name}-mhc`;
  await host.client.create(MachineHealthCheckResource, healthCheck(pool, name, 300));
  try {
    await host.until(`core's MachineHealthCheck ${name} to count the pool's Machines`, async () => {
      const mhc = await host.client.get(MachineHealthCheckResource, {
        namespace: pool.namespace,
        name,
      });
      const status = mhc.status ?? {};
      if (status.expectedMachines !== 2 || status.currentHealthy !== 2) {
        return `mhc.counted: expectedMachines ${status.expectedMachines ?? "unset"}, currentHealthy ${status.currentHealthy ?? "unset"} (want 2 and 2)`;
      }
      const unchecked = (await machinesOf(host, pool)).filter(
        (m) =>
          !m.status?.conditions?.some(
            (c) => c.type === "HealthCheckSucceeded" && c.status === "True",
          ),
      );
      if (unchecked.length > 0) {
        return `mhc.counted: Machines without HealthCheckSucceeded=True: ${unchecked.map((m) => m.metadata?.name).join(", ")}`;
      }
      return undefined;
    });
    const after = [...(await host.provider.cloud.liveProviderIds(pool))].sort();
    if (after.join(",") !== before.join(",")) {
      throw new Error(
        `mhc.poolUntouched: the instances changed while core only checked them: ${before.join(", ")} -> ${after.join(", ")}`,
      );
    }
  } finally {
    await host.client
      .delete(MachineHealthCheckResource, { namespace: pool.namespace, name })
      .catch(() => undefined);
  }
  await host.deletePool(pool);
}

function healthCheck(
  pool: ConformancePool,
  name: string,
  timeoutSeconds: number,
): MachineHealthCheck {
  return {
    apiVersion: "cluster.x-k8s.io/v1beta2",
    kind: "MachineHealthCheck",
    metadata: { name, namespace: pool.namespace },
    spec: {
      clusterName: pool.clusterName,
      selector: { matchLabels: { [Labels.MachinePoolName]: formatLabelValue(pool.name) } },
      checks: {
        unhealthyNodeConditions: [
          { type: "Ready", status: "Unknown", timeoutSeconds },
          { type: "Ready", status: "False", timeoutSeconds },
        ],
      },
    },
  };
}

const conditionOf = (machine: Machine, type: string) =>
  machine.status?.conditions?.find((c) => c.type === type);

async function machineHealthCheckRemediation(host: RealCoreScenarioHost): Promise<void> {
  const pool = await host.createPool(3);
  await host.converged(pool, 3);
  const name = `${pool.name}-mhc`;
  const reasons: string[] = [];
  const watching = new AbortController();
  let watcher: Promise<void> = Promise.resolve();
  // A short timeout: the Node below turned NotReady well before it, so the MHC acts on its next look.
  await host.client.create(MachineHealthCheckResource, healthCheck(pool, name, 1));
  try {
    const machines = await machinesOf(host, pool);
    const victim = [...machines].sort((a, b) =>
      (a.metadata?.name ?? "").localeCompare(b.metadata?.name ?? ""),
    )[1];
    const providerID = victim?.spec?.providerID;
    if (!victim || !providerID) {
      throw new Error(`mhc.remediated: no Machine with a providerID among ${machines.length}`);
    }
    const others = machines
      .map((m) => m.spec?.providerID ?? "")
      .filter((id) => id !== "" && id !== providerID);
    const node = (await host.workload.list(NodeResource)).items.find(
      (n) => n.spec?.providerID === providerID,
    );
    if (!node?.metadata?.name)
      throw new Error(`mhc.remediated: no Node has providerID ${providerID}`);
    // Every version of the victim's Machine, from a list before the Node turns: the provider's
    // MachineDeleting mark may live only as long as the drain, which a poll can miss.
    const listed = await host.client.list(MachineResource, { namespace: pool.namespace });
    let resourceVersion: string | undefined = listed.metadata.resourceVersion;
    watcher = (async () => {
      while (!watching.signal.aborted) {
        try {
          resourceVersion ??= (
            await host.client.list(MachineResource, { namespace: pool.namespace })
          ).metadata.resourceVersion;
          for await (const event of host.client.watch(MachineResource, {
            namespace: pool.namespace,
            resourceVersion,
            signal: watching.signal,
          })) {
            resourceVersion = event.object.metadata?.resourceVersion ?? resourceVersion;
            if (event.type === "BOOKMARK" || event.object.metadata?.name !== victim.metadata?.name)
              continue;
            const reason = conditionOf(event.object, "OwnerRemediated")?.reason;
            if (reason && reasons.at(-1) !== reason) reasons.push(reason);
          }
        } catch {
          // A cut or expired watch: list again, then watch from there.
          resourceVersion = undefined;
          if (!watching.signal.aborted) await new Promise((r) => setTimeout(r, 20));
        }
      }
    })();
    // The kubelet stand-in writes its conditions once and sends no heartbeat, so this sticks.
    const since = new Date(Date.now() - 10 * 60_000).toISOString().replace(/\.\d+Z$/, "Z");
    await host.workload.mergePatchStatus(NodeResource, node, {
      status: {
        conditions: [
          {
            type: "Ready",
            status: "False",
            reason: "KubeletNotReady",
            message: "container runtime is down",
            lastHeartbeatTime: since,
            lastTransitionTime: since,
          },
        ],
      },
    });
    await host.until(`the pool to remediate Machine ${victim.metadata?.name}`, async () => {
      const live = await host.provider.cloud.liveProviderIds(pool);
      const missing = others.filter((id) => !live.includes(id));
      if (missing.length > 0) {
        throw new Error(
          `mhc.othersUntouched: healthy instances left the cloud during remediation: ${missing.join(", ")}`,
        );
      }
      const now = await machinesOf(host, pool);
      const marked = now.find((m) => m.metadata?.name === victim.metadata?.name);
      if (marked) {
        const owner = conditionOf(marked, "OwnerRemediated");
        return `mhc.remediated: Machine ${victim.metadata?.name} still exists (HealthCheckSucceeded=${conditionOf(marked, "HealthCheckSucceeded")?.status ?? "unset"}, OwnerRemediated=${owner ? `${owner.status}/${owner.reason}` : "unset"})`;
      }
      if (live.includes(providerID)) {
        return `mhc.remediated: its Machine is gone, its instance ${providerID} is still in the cloud`;
      }
      return live.length === 3
        ? undefined
        : `mhc.remediated: ${live.length} live instances, want 3`;
    });
    watching.abort();
    await watcher;
    if (!reasons.includes("MachineDeleting")) {
      throw new Error(
        `mhc.markedBeforeDelete: Machine ${victim.metadata?.name} went without OwnerRemediated=False/MachineDeleting, as core's MachineSet marks its own before deleting (reasons seen: ${reasons.join(", ") || "none"})`,
      );
    }
    await host.converged(pool, 3);
    await host.until(`core's MachineHealthCheck ${name} to find the pool healthy`, async () => {
      const mhc = await host.client.get(MachineHealthCheckResource, {
        namespace: pool.namespace,
        name,
      });
      const status = mhc.status ?? {};
      if (status.expectedMachines !== 3 || status.currentHealthy !== 3) {
        return `mhc.recovered: expectedMachines ${status.expectedMachines ?? "unset"}, currentHealthy ${status.currentHealthy ?? "unset"} (want 3 and 3)`;
      }
      return undefined;
    });
  } finally {
    watching.abort();
    await watcher;
    await host.client
      .delete(MachineHealthCheckResource, { namespace: pool.namespace, name })
      .catch(() => undefined);
  }
  await host.deletePool(pool);
}

async function garbageCollection(host: RealCoreScenarioHost): Promise<void> {
  const pool = await host.createPool(2);
  await host.converged(pool, 2);
  const machines = await machinesOf(host, pool);
  if (machines.length !== 2) {
    throw new Error(`gc.machinesCollected: the pool has ${machines.length} Machines, want 2`);
  }
  for (const machine of machines) {
    const owner = machine.metadata?.ownerReferences?.find(
      (ref) => ref.kind === "MachinePool" && ref.controller === true,
    );
    if (owner?.name !== pool.name) {
      throw new Error(
        `gc.machinesCollected: Machine ${machine.metadata?.name} is not controlled by MachinePool ${pool.name}`,
      );
    }
  }
  // Deletes the MachinePool and waits for it, the InfraMachinePool and the cloud's resources.
  await host.deletePool(pool);
  await host.until(`the Machines of ${pool.name} to be collected`, async () => {
    const left = await machinesOf(host, pool);
    return left.length === 0
      ? undefined
      : `gc.machinesCollected: Machines left after their MachinePool was deleted: ${left.map((m) => m.metadata?.name).join(", ")}`;
  });
}
