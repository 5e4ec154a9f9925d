/**
 * The drain scenario: for a kind without MachinePool Machines (with them core's Machine controller
 * drains, which `machineDeletePriority` checks), a scale-down must drain the victim's Node through
 * the workload cluster before the instance is terminated, honouring PodDisruptionBudgets through the
 * Eviction API, as CAPI's drain does for Machines.
 *
 * The workload cluster runs no scheduler and no kubelet: the suite binds one Pod to each Node itself
 * (`spec.nodeName`), marks it Running and Ready, and gives it no grace period, so an accepted
 * eviction deletes it at once on both judges. With real core the workload cluster's
 * kube-controller-manager runs the disruption controller, which computes the budget's status; the
 * in-memory server computes it on the eviction path.
 *
 * @module
 */
import { NodeResource, type ResourceDescriptor } from "@capi-ts/sdk/runtime";
import type { KubernetesObject, V1Node } from "@kubernetes/client-node";
import { PodResource } from "../capi/types.js";
import { ConformanceError } from "./invariants.js";
import type { MachinesScenarioHost } from "./machines.js";
import { DRAIN_SCENARIOS, type DrainScenario } from "./scenario-ids.js";
import type { ConformancePool } from "./types.js";

/** What the drain scenario needs of the suite (the harness fills it in). */
export interface DrainScenarioHost extends MachinesScenarioHost {
  /** Converged, then zero writes and no mutating cloud call for the steady-state window. */
  steadyState(pool: ConformancePool, replicas: number): Promise<void>;
  /** How long the suite lets things settle. */
  readonly settleMs: number;
}

/** A drain scenario: id, title, why it is skipped, body. */
export interface DrainScenarioDef {
  /** Scenario id. */
  readonly id: DrainScenario;
  /** What it checks. */
  readonly title: string;
  /** Why it cannot run with this provider, or undefined. */
  skipReason(): string | undefined;
  /** The body. */
  run(): Promise<void>;
}

type Budget = KubernetesObject & {
  spec?: { minAvailable?: number | string; selector?: { matchLabels?: Record<string, string> } };
  status?: { observedGeneration?: number; disruptionsAllowed?: number };
};

const BudgetResource: ResourceDescriptor<Budget> = {
  group: "policy",
  version: "v1",
  kind: "PodDisruptionBudget",
  plural: "poddisruptionbudgets",
  scope: "Namespaced",
  subresources: { status: true },
};

/** Where the suite's workloads run in the workload cluster. */
const NAMESPACE = "default";
/** How long the instance must stay while the budget refuses, at least (a window: never stretched). */
const HOLD_WINDOW_MS = 2_000;

/**
 * The drain scenario over `host`:
 *
 * - `drainBeforeTerminate` (no MachinePool Machines): a pool of 3 converges; one Pod runs on each of
 *   its Nodes, all selected by one PodDisruptionBudget with `minAvailable: 3`, which allows no
 *   eviction. Scaled to 2: exactly one of its Nodes is cordoned (`drain.cordoned`) and the pool's
 *   `Draining` condition names the budget (`drain.budgetNamed`), while its instance stays in the
 *   cloud for as long as the budget refuses (`drain.heldWhileBlocked`). The budget relaxed to
 *   `minAvailable: 2`: that Node's Pod is evicted, the others stay (`drain.podsEvicted`), exactly
 *   that Node's instance is terminated (`drain.victimTerminated`), the condition is gone
 *   (`drain.conditionCleared`) and the pool reaches steady state with zero writes.
 *   Skipped for a kind with an InfraMachine kind (core drains its Machines' Nodes).
 */
export function drainScenarios(host: () => DrainScenarioHost): DrainScenarioDef[] {
  return [
    {
      id: "drainBeforeTerminate",
      title: DRAIN_SCENARIOS[0].title,
      skipReason: () =>
        host().kind.machine
          ? "the kind has MachinePool Machines, so core's Machine controller drains (machineDeletePriority covers it)"
          : undefined,
      run: () => drainScenario(host()),
    },
  ];
}

const key = (pool: ConformancePool) => ({ namespace: pool.namespace, name: pool.name });

async function poolNodes(host: DrainScenarioHost, ids: readonly string[]): Promise<V1Node[]> {
  const nodes = await host.workload.list(NodeResource);
  return nodes.items.filter((n) => ids.includes(n.spec?.providerID ?? ""));
}

async function draining(host: DrainScenarioHost, pool: ConformancePool) {
  const object = await host.client.get(host.pools, key(pool));
  return object.status?.conditions?.find((c) => c.type === "Draining");
}

/** A Pod bound to `node`, Running and Ready, as a kubelet would report it. */
async function runPod(host: DrainScenarioHost, name: string, node: string, app: string) {
  await host.workload.create(PodResource, {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { namespace: NAMESPACE, name, labels: { app } },
    spec: {
      nodeName: node,
      terminationGracePeriodSeconds: 0,
      containers: [{ name: "app", image: "registry.k8s.io/pause:3.10" }],
    },
  });
  await host.workload.mergePatchStatus(
    PodResource,
    { namespace: NAMESPACE, name },
    {
      status: {
        phase: "Running",
        conditions: [
          { type: "Ready", status: "True", lastTransitionTime: new Date().toISOString() },
        ],
      },
    },
  );
}

async function drainScenario(host: DrainScenarioHost): Promise<void> {
  const pool = await host.createPool(3);
  await host.converged(pool, 3);
  const before = [...(await host.provider.cloud.liveProviderIds(pool))].sort();
  const app = `drain-${pool.name}`;
  const podNames: string[] = [];
  await host.until(`the Nodes of ${pool.name}`, async () => {
    const nodes = await poolNodes(host, before);
    return nodes.length === before.length
      ? undefined
      : `${nodes.length} of ${before.length} Nodes of ${pool.name} registered`;
  });
  try {
    await host.workload.create(BudgetResource, {
      apiVersion: "policy/v1",
      kind: "PodDisruptionBudget",
      metadata: { namespace: NAMESPACE, name: app },
      spec: { minAvailable: before.length, selector: { matchLabels: { app } } },
    });
    const nodes = await poolNodes(host, before);
    for (const [i, node] of nodes.entries()) {
      const name = `${app}-${i}`;
      podNames.push(name);
      await runPod(host, name, node.metadata?.name ?? "", app);
    }
    // Real judge: the disruption controller must have computed the budget (until then the API
    // server refuses every eviction as "still being processed", which would hold the drain too).
    await host.until(`PodDisruptionBudget ${app} to be observed`, async () => {
      const budget = await host.workload.get(BudgetResource, { namespace: NAMESPACE, name: app });
      const status = budget.status;
      if (status === undefined) return undefined; // in memory: computed on the eviction path
      return status.observedGeneration === budget.metadata?.generation
        ? undefined
        : `PodDisruptionBudget ${app}: observedGeneration ${status.observedGeneration ?? "unset"} of ${budget.metadata?.generation}`;
    });

    await host.setReplicas(pool, 2);
    const seen: { victim?: V1Node } = {};
    const stillThree = async (what: string) => {
      const live = await host.provider.cloud.liveProviderIds(pool);
      if (live.length < before.length) {
        throw new ConformanceError(
          "drain.heldWhileBlocked",
          `${what}: ${live.length} of ${before.length} instances left while PodDisruptionBudget ${NAMESPACE}/${app} allows no eviction of their Pods; drain the Node (evict its Pods through the Eviction API) before terminating the instance`,
        );
      }
    };
    await host.until(`${pool.name} to cordon its victim's Node and name the budget`, async () => {
      await stillThree("before the drain was reported");
      const cordoned = (await poolNodes(host, before)).filter((n) => n.spec?.unschedulable);
      if (cordoned.length !== 1) {
        return `drain.cordoned: ${cordoned.length} of the pool's Nodes are cordoned after a scale-down by one (${cordoned.map((n) => n.metadata?.name).join(", ")}); cordon exactly the victim's Node before evicting its Pods`;
      }
      seen.victim = cordoned[0];
      const condition = await draining(host, pool);
      if (!condition?.message?.includes(app)) {
        return `drain.budgetNamed: the pool's Draining condition ${condition ? `says ${condition.status} ${condition.reason ?? ""}: "${condition.message ?? ""}"` : "is absent"}; name the PodDisruptionBudget (${NAMESPACE}/${app}) that refuses the eviction`;
      }
      return undefined;
    });
    // The budget still refuses: the instance stays for the whole window.
    const holdUntil = Date.now() + Math.max(HOLD_WINDOW_MS, host.settleMs);
    while (Date.now() < holdUntil) {
      await stillThree("while the budget refused");
      await new Promise((resolve) => setTimeout(resolve, 200));
    }

    await host.workload.mergePatch(
      BudgetResource,
      { namespace: NAMESPACE, name: app },
      { spec: { minAvailable: before.length - 1 } },
    );
    const victimID = seen.victim?.spec?.providerID ?? "";
    const victimNode = seen.victim?.metadata?.name ?? "";
    await host.until(`${pool.name} to terminate the drained instance`, async () => {
      const live = [...(await host.provider.cloud.liveProviderIds(pool))].sort();
      if (live.length > 2) return `${live.length} instances, 2 wanted`;
      const expected = before.filter((id) => id !== victimID);
      if (JSON.stringify(live) !== JSON.stringify(expected)) {
        throw new ConformanceError(
          "drain.victimTerminated",
          `the Node ${victimNode} of ${victimID} was cordoned and drained, but the pool terminated ${JSON.stringify(before.filter((id) => !live.includes(id)))}; terminate the instance whose Node was drained`,
        );
      }
      return undefined;
    });
    const pods = await host.workload.list(PodResource, { namespace: NAMESPACE });
    const left = pods.items.filter((p) => podNames.includes(p.metadata?.name ?? ""));
    const onVictim = left.filter((p) => p.spec?.nodeName === victimNode);
    if (onVictim.length > 0 || left.length !== podNames.length - 1) {
      throw new ConformanceError(
        "drain.podsEvicted",
        `after the drain of ${victimNode}, ${left.length} of ${podNames.length} Pods are left (${onVictim.length} on the drained Node); evict the drained Node's Pods, and only those`,
      );
    }
    await host.steadyState(pool, 2);
    const condition = await draining(host, pool);
    if (condition) {
      throw new ConformanceError(
        "drain.conditionCleared",
        `the drain is over but the pool's Draining condition says ${condition.status} ${condition.reason ?? ""}: "${condition.message ?? ""}"; remove it once no drain runs`,
      );
    }
  } finally {
    for (const name of podNames) {
      await host.workload
        .delete(PodResource, { namespace: NAMESPACE, name })
        .catch(() => undefined);
    }
    await host.workload
      .delete(BudgetResource, { namespace: NAMESPACE, name: app })
      .catch(() => undefined);
  }
  await host.deletePool(pool);
}
