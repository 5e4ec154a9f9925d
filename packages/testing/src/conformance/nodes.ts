/**
 * The scenarios of the pool's Nodes: the MachinePool's taints and Node labels on every Node of the
 * pool (the kit's `nodes` phase, which core does for Machines and not for a pool), and
 * `minReadySeconds` holding availability and a rollout. They read the Nodes where they live, in the
 * workload cluster, and run on both judges with the same bodies.
 *
 * Taints come through the kit's `capi-ts.io/node-taints` annotation on the MachinePool: core's
 * MachinePool webhook (v1.14) refuses `spec.template.spec.taints` on a MachinePool. With MachinePool
 * Machines the same checks hold: core's Machine controller syncs the labels from each Machine (which
 * carries the template's labels), the kit the taints.
 *
 * @module
 */
import { NodeMetadataAnnotations } from "@capi-ts/sdk/provider";
import { type KubeClient, NodeResource, type ResourceDescriptor } from "@capi-ts/sdk/runtime";
import type { KubernetesObject, V1Node, V1Taint } from "@kubernetes/client-node";
import type { RequestRecord } from "../apiserver/index.js";
import { ConformanceError, type ConformancePoolObject } from "./invariants.js";
import { NODE_SCENARIOS, type NodeScenario } from "./scenario-ids.js";
import type { ConformancePool, ConformanceProvider } from "./types.js";

/** What the suite puts on a MachinePool it creates, beyond its defaults. */
export interface PoolMachinePool {
  /** `metadata.annotations`. */
  readonly annotations?: Readonly<Record<string, string>>;
  /** `spec.template.metadata.labels`. */
  readonly labels?: Readonly<Record<string, string>>;
  /** Fields of `spec.template.spec` (e.g. `minReadySeconds`). */
  readonly templateSpec?: Readonly<Record<string, unknown>>;
}

/** What the Node scenarios need of the suite. */
export interface NodeScenarioHost {
  /** The management cluster, as the suite writes it. */
  readonly client: KubeClient;
  /** The workload cluster, as the suite writes it (where the Nodes live). */
  readonly workload: KubeClient;
  /** The InfraMachinePool kind under test. */
  readonly pools: ResourceDescriptor<ConformancePoolObject>;
  /** Core's MachinePools. */
  readonly machinePools: ResourceDescriptor<KubernetesObject>;
  /** The provider under test. */
  readonly provider: ConformanceProvider;
  /** The suite's pool spec. */
  readonly poolSpec: Record<string, unknown>;
  /** The provider's template change (a rollout), if any. */
  readonly templateChange: ((spec: Record<string, unknown>) => Record<string, unknown>) | undefined;
  /** The provider's `maxUnavailable` during a rollout. */
  readonly rolloutMaxUnavailable: number;
  /** The steady-state window, ms. */
  readonly steadyStateMs: number;
  /** A pause for in-flight work to land, ms. */
  readonly settleMs: number;
  /** Creates a pool whose MachinePool carries `machinePool`. */
  createPool(replicas: number, machinePool?: PoolMachinePool): Promise<ConformancePool>;
  /** Waits until converged as core sees it. */
  converged(pool: ConformancePool, replicas: number): Promise<void>;
  /** Why the pool is not converged, or undefined. */
  notConverged(pool: ConformancePool, replicas: number): Promise<string | undefined>;
  /** Deletes the pool and waits until it is gone with its cloud resources. */
  deletePool(pool: ConformancePool): Promise<void>;
  /** Polls `check` (undefined = satisfied, else the reason) until it passes or times out. */
  until(what: string, check: () => Promise<string | undefined>, timeoutMs?: number): Promise<void>;
  /** The provider's writes to the workload cluster's Nodes since `since` (ms since the epoch). */
  nodeWritesSince(since: number): RequestRecord[];
}

/** A Node scenario: id, title, why it is skipped, body. */
export interface NodeScenarioDefinition {
  /** Scenario id. */
  readonly id: NodeScenario;
  /** What it checks. */
  readonly title: string;
  /** Why it cannot run with this provider, or undefined. */
  skipReason(): string | undefined;
  /** Runs it. */
  run(): Promise<void>;
}

/** The `minReadySeconds` the scenario sets: long enough to see, short enough to wait for twice. */
const MIN_READY_SECONDS = 3;
/** The suite's own taints live in a domain of their own. */
const DOMAIN = "conformance.capi-ts.io";

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** The Node scenarios. */
export function nodeScenarios(
  host: () => NodeScenarioHost,
  options: { hasTemplateChange: boolean },
): NodeScenarioDefinition[] {
  return [
    {
      id: "nodeTaintsAndLabels",
      title: NODE_SCENARIOS[0].title,
      skipReason: () => undefined,
      run: () => taintsAndLabels(host()),
    },
    {
      id: "minReadySeconds",
      title: NODE_SCENARIOS[1].title,
      skipReason: () => (options.hasTemplateChange ? undefined : "no templateChange option"),
      run: () => minReadySeconds(host()),
    },
  ];
}

function key(pool: ConformancePool) {
  return { namespace: pool.namespace, name: pool.name };
}

/** The Nodes of the pool's live instances, or why not every live instance has one yet. */
async function poolNodes(
  host: NodeScenarioHost,
  pool: ConformancePool,
): Promise<{ nodes: V1Node[]; missing: number }> {
  const live = new Set(await host.provider.cloud.liveProviderIds(pool));
  const all = await host.workload.list(NodeResource);
  const nodes = all.items.filter((n) => live.has(n.spec?.providerID ?? ""));
  return { nodes, missing: live.size - nodes.length };
}

function hasTaint(node: V1Node, taint: { key: string; effect: string; value?: string }): boolean {
  return (node.spec?.taints ?? []).some(
    (t) =>
      t.key === taint.key &&
      t.effect === taint.effect &&
      (taint.value === undefined || (t.value ?? "") === taint.value),
  );
}

function showTaints(node: V1Node): string {
  return JSON.stringify(
    (node.spec?.taints ?? []).map((t) => `${t.key}=${t.value ?? ""}:${t.effect}`),
  );
}

/** The pool's condition of `type`, as the provider last wrote it. */
async function conditionOf(host: NodeScenarioHost, pool: ConformancePool, type: string) {
  const imp = await host.client.get(host.pools, key(pool));
  return imp.status?.conditions?.find((c) => c.type === type);
}

/** Changes one Node's taints as someone else would: a whole list, with the lock, again on a conflict. */
async function editTaints(
  host: NodeScenarioHost,
  name: string,
  edit: (taints: V1Taint[]) => V1Taint[],
): Promise<void> {
  await host.until(`the suite to change the taints of Node ${name}`, async () => {
    const node = await host.workload.get(NodeResource, { name });
    const taints = edit([...(node.spec?.taints ?? [])]);
    try {
      await host.workload.mergePatch(
        NodeResource,
        { name },
        {
          metadata: { resourceVersion: node.metadata?.resourceVersion },
          spec: { taints: taints.length > 0 ? taints : null },
        },
      );
      return undefined;
    } catch (error) {
      return `converge: ${(error as Error).message}`;
    }
  });
}

async function taintsAndLabels(host: NodeScenarioHost): Promise<void> {
  const dedicated = { key: `${DOMAIN}/dedicated`, value: "gpu", effect: "NoSchedule" };
  const init = { key: `${DOMAIN}/init`, effect: "PreferNoSchedule" };
  const added = { key: `${DOMAIN}/added`, value: "1", effect: "NoSchedule" };
  const theirs = { key: "example.com/theirs", effect: "NoSchedule" };
  const started = Date.now();
  const pool = await host.createPool(2, {
    labels: {
      "node-role.kubernetes.io/conformance": "",
      "node.cluster.x-k8s.io/pool": "first",
      "example.com/team": "machines-only",
    },
    annotations: {
      [NodeMetadataAnnotations.NodeTaints]: JSON.stringify([
        dedicated,
        { ...init, propagation: "OnInitialization" },
      ]),
    },
  });
  await host.converged(pool, 2);
  await host.until(`the taints and labels of ${pool.name} on each of its Nodes`, async () => {
    const { nodes, missing } = await poolNodes(host, pool);
    if (missing > 0) return `converge: ${missing} live instance(s) without a Node yet`;
    for (const node of nodes) {
      const labels = node.metadata?.labels ?? {};
      const name = node.metadata?.name;
      if (
        labels["node-role.kubernetes.io/conformance"] !== "" ||
        labels["node.cluster.x-k8s.io/pool"] !== "first"
      ) {
        return `nodes.labelsApplied: Node ${name} lacks the MachinePool's Node labels (labels ${JSON.stringify(labels)})`;
      }
      if ("example.com/team" in labels) {
        throw new ConformanceError(
          "nodes.onlyNodeDomains",
          `Node ${name} got example.com/team, a label of the MachinePool's Machines: only node-role.kubernetes.io, node-restriction.kubernetes.io and node.cluster.x-k8s.io labels go to Nodes`,
        );
      }
      if (!hasTaint(node, dedicated) || !hasTaint(node, init)) {
        return `nodes.taintsApplied: Node ${name} has the taints ${showTaints(node)}, not the MachinePool's ${dedicated.key} and ${init.key}`;
      }
    }
    const condition = await conditionOf(host, pool, "NodeMetadata");
    return condition?.status === "True"
      ? undefined
      : `nodes.condition: NodeMetadata is ${JSON.stringify(condition ?? "missing")}, want True`;
  });

  // Someone else labels and taints one Node in the same domains.
  const [first] = (await poolNodes(host, pool)).nodes;
  const firstName = first?.metadata?.name ?? "";
  await host.workload.mergePatch(
    NodeResource,
    { name: firstName },
    { metadata: { labels: { "node-role.kubernetes.io/someone-else": "" } } },
  );
  await editTaints(host, firstName, (taints) => [...taints, theirs]);

  // The template changes: a label goes, one comes, one the pool may not own; a taint goes, one comes.
  await host.client.mergePatch(host.machinePools, key(pool), {
    metadata: {
      annotations: {
        [NodeMetadataAnnotations.NodeTaints]: JSON.stringify([
          added,
          { ...init, propagation: "OnInitialization" },
        ]),
      },
    },
    spec: {
      template: {
        metadata: {
          labels: {
            "node.cluster.x-k8s.io/pool": null,
            "node-role.kubernetes.io/changed": "",
            "kubernetes.io/hostname": "forbidden",
          },
        },
      },
    },
  });
  await host.until(`the Nodes of ${pool.name} to follow the changed template`, async () => {
    const { nodes, missing } = await poolNodes(host, pool);
    if (missing > 0) return `converge: ${missing} live instance(s) without a Node yet`;
    for (const node of nodes) {
      const labels = node.metadata?.labels ?? {};
      const name = node.metadata?.name;
      if (labels["kubernetes.io/hostname"] === "forbidden") {
        throw new ConformanceError(
          "nodes.forbiddenRefused",
          `Node ${name} got kubernetes.io/hostname from the MachinePool: a label of the kubelet's domain must be refused, not applied`,
        );
      }
      if (labels["node-role.kubernetes.io/changed"] !== "") {
        return `nodes.labelsApplied: Node ${name} lacks the added label node-role.kubernetes.io/changed (labels ${JSON.stringify(labels)})`;
      }
      if ("node.cluster.x-k8s.io/pool" in labels) {
        return `nodes.removedWhenDropped: Node ${name} still has node.cluster.x-k8s.io/pool, which the MachinePool no longer has`;
      }
      if (hasTaint(node, dedicated) || !hasTaint(node, added)) {
        return `nodes.removedWhenDropped: Node ${name} has the taints ${showTaints(node)}: want ${added.key} and not ${dedicated.key}`;
      }
      if (!hasTaint(node, init)) {
        throw new ConformanceError(
          "nodes.onInitializationKept",
          `Node ${name} lost ${init.key} (OnInitialization): the pool dropped no such taint, so it stays (taints ${showTaints(node)})`,
        );
      }
      if (name === firstName) {
        if (labels["node-role.kubernetes.io/someone-else"] !== "" || !hasTaint(node, theirs)) {
          throw new ConformanceError(
            "nodes.othersLeftAlone",
            `Node ${name} lost a label or taint someone else set (labels ${JSON.stringify(labels)}, taints ${showTaints(node)}): only what the provider applied may be removed`,
          );
        }
      }
    }
    const condition = await conditionOf(host, pool, "NodeMetadata");
    if (condition?.status !== "False" || !condition.message?.includes("kubernetes.io/hostname")) {
      return `nodes.forbiddenRefused: NodeMetadata is ${JSON.stringify(condition ?? "missing")}, want False naming kubernetes.io/hostname`;
    }
    return undefined;
  });

  // A user removes both taints from one Node: the Always one comes back, the OnInitialization one not.
  await editTaints(host, firstName, (taints) =>
    taints.filter((t) => t.key !== added.key && t.key !== init.key),
  );
  await host.until(`${added.key} (Always) back on Node ${firstName}`, async () => {
    const node = await host.workload.get(NodeResource, { name: firstName });
    return hasTaint(node, added)
      ? undefined
      : `nodes.alwaysRestored: Node ${firstName} has the taints ${showTaints(node)}, without ${added.key}`;
  });
  await sleep(host.settleMs);
  const after = await host.workload.get(NodeResource, { name: firstName });
  if (hasTaint(after, init)) {
    throw new ConformanceError(
      "nodes.onInitializationOnce",
      `${init.key} (OnInitialization) came back on Node ${firstName} after a user removed it: it is added once, when the Node joins`,
    );
  }

  // Steady state: no Node write when every Node matches.
  await sleep(host.settleMs);
  const since = Date.now();
  await sleep(host.steadyStateMs);
  const writes = host.nodeWritesSince(since);
  // The count below means something only if the log shows the provider's Node writes at all.
  if (host.nodeWritesSince(started).length === 0) {
    throw new Error(
      "conformance: the workload cluster's request log shows none of the provider's Node writes of this scenario; it cannot count them at rest",
    );
  }
  if (writes.length > 0) {
    throw new ConformanceError(
      "nodes.zeroWritesAtSteadyState",
      `the provider wrote ${writes.length} Node(s) in ${host.steadyStateMs} ms though every Node of ${pool.name} matches its MachinePool: ${writes
        .slice(0, 3)
        .map((w) => `${w.verb} ${w.name ?? ""}`)
        .join("; ")}`,
    );
  }
  await host.deletePool(pool);
}

/** When a Node's `Ready` condition turned True (ms), or undefined when it is not Ready. */
function readySince(node: V1Node): number | undefined {
  const ready = node.status?.conditions?.find((c) => c.type === "Ready");
  if (ready?.status !== "True") return undefined;
  return new Date(ready.lastTransitionTime as unknown as string).getTime();
}

/**
 * `availability.minReadySeconds`: the pool is not Ready while one of its Nodes turned Ready less than
 * `minReadySeconds` ago (a second of slack: the API server keeps whole seconds). The pool is read
 * first: a Ready pool must have been Ready before the Nodes are looked at.
 */
async function assertNotAvailableEarly(host: NodeScenarioHost, pool: ConformancePool) {
  const ready = await conditionOf(host, pool, "Ready");
  if (ready?.status !== "True") return;
  const { nodes } = await poolNodes(host, pool);
  const now = Date.now();
  for (const node of nodes) {
    const since = readySince(node);
    if (since !== undefined && now - since < (MIN_READY_SECONDS - 1) * 1000) {
      throw new ConformanceError(
        "availability.minReadySeconds",
        `${pool.name} reports Ready=True while its Node ${node.metadata?.name} has been Ready for ${now - since} ms only; with minReadySeconds ${MIN_READY_SECONDS} it is not available yet`,
      );
    }
  }
}

async function minReadySeconds(host: NodeScenarioHost): Promise<void> {
  const change = host.templateChange;
  if (!change) return;
  const replicas = 2;
  const pool = await host.createPool(replicas, {
    templateSpec: { minReadySeconds: MIN_READY_SECONDS },
  });
  await host.until(
    `${pool.name} to converge with minReadySeconds ${MIN_READY_SECONDS}`,
    async () => {
      await assertNotAvailableEarly(host, pool);
      return host.notConverged(pool, replicas);
    },
  );
  const before = await host.provider.cloud.liveProviderIds(pool);
  const floor = replicas - host.rolloutMaxUnavailable;
  await host.client.mergePatch(host.pools, key(pool), { spec: change(host.poolSpec) });
  await host.until(
    `${pool.name} to roll every instance, each replacement available before an old instance goes`,
    async () => {
      const { nodes } = await poolNodes(host, pool);
      const now = Date.now();
      const available = nodes.filter((n) => {
        const since = readySince(n);
        return since !== undefined && now - since >= (MIN_READY_SECONDS - 1) * 1000;
      }).length;
      if (available < floor) {
        throw new ConformanceError(
          "rollout.minReadySeconds",
          `${available} Node(s) of ${pool.name} have been Ready for minReadySeconds (${MIN_READY_SECONDS}) during the rollout; must stay ≥ replicas − maxUnavailable = ${floor}: an old instance went before its replacement was available`,
        );
      }
      const live = await host.provider.cloud.liveProviderIds(pool);
      const old = live.filter((id) => before.includes(id));
      if (old.length > 0)
        return `rollout.allUpToDate: ${old.length} instance(s) from before the change still live`;
      return host.notConverged(pool, replicas);
    },
    60_000,
  );
  await host.deletePool(pool);
}
