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
import type { ResourceDescriptor } from "@capi-ts/sdk/runtime";
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
      id: "garbageCollection",
      title: REAL_CORE_SCENARIOS[1].title,
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
  await host.client.create(MachineHealthCheckResource, {
    apiVersion: "cluster.x-k8s.io/v1beta2",
    kind: "MachineHealthCheck",
    metadata: { name, namespace: pool.namespace },
    spec: {
      clusterName: pool.clusterName,
      selector: { matchLabels: { [Labels.MachinePoolName]: formatLabelValue(pool.name) } },
      checks: {
        unhealthyNodeConditions: [
          { type: "Ready", status: "Unknown", timeoutSeconds: 300 },
          { type: "Ready", status: "False", timeoutSeconds: 300 },
        ],
      },
    },
  });
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
