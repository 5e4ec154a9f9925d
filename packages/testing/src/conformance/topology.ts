/**
 * ClusterClass scenarios: the provider's pools as core's topology controller makes and upgrades
 * them (the `ClusterTopology` feature gate), real core only — the emulator has no topology controller.
 *
 * The ClusterClass is the flavor a provider ships, rendered by `clusterClassFlavor` of
 * `@capi-ts/sdk/manifests` (as the scaffold's `templates/clusterclass-*.yaml` and
 * `cluster-template-clusterclass.yaml` are) for the kind under test: its worker MachinePool class
 * names the kind's `<Kind>Template` (R18) and a `KubeadmConfigTemplate` (the bootstrap stand-in writes
 * the data), the infrastructure cluster is a `DevClusterTemplate` (its DevCluster is made provisioned
 * as the suite's other Clusters' are) and the control plane an `ExternalControlPlaneTemplate`, whose
 * objects a stand-in plays as a managed control plane (`status.version` follows `spec.version`).
 *
 * @module
 */
import { clusterv1beta2 } from "@capi-ts/sdk/api";
import { Labels } from "@capi-ts/sdk/contract";
import type { Manifest } from "@capi-ts/sdk/crd";
import {
  clusterClassFlavor,
  componentsYAML,
  substituteClusterctlVariables,
} from "@capi-ts/sdk/manifests";
import { type KubeClient, NodeResource, type ResourceDescriptor } from "@capi-ts/sdk/runtime";
import type { KubeConfig, KubernetesObject } from "@kubernetes/client-node";
import { loadAll } from "js-yaml";
import { applyManifests, type ManifestObject } from "../apply.js";
import { externalControlPlaneTemplate, playManagedControlPlanes } from "../capi/control-plane.js";
import { markWorkloadClusterReady } from "../capi/workload.js";
import { TOPOLOGY_SCENARIOS, type TopologyScenario } from "./scenario-ids.js";
import type { ConformanceKind, ConformancePool, ConformanceProvider } from "./types.js";

/** What the ClusterClass scenarios need of the suite. */
export interface TopologyScenarioHost {
  /** A client of the management cluster. */
  readonly client: KubeClient;
  /** The management cluster (manifests are applied to it). */
  readonly kubeConfig: KubeConfig;
  /** A client of the workload cluster (Nodes). */
  readonly workload: KubeClient;
  /** The workload cluster, for the `<cluster>-kubeconfig` Secret and the DevCluster's endpoint. */
  readonly workloadKubeConfig: KubeConfig;
  /** The kind under test. */
  readonly kind: ConformanceKind;
  /** The provider under test. */
  readonly provider: ConformanceProvider;
  /** `spec` of a new pool: the `<Kind>Template`'s `spec.template.spec`. */
  readonly poolSpec: Record<string, unknown>;
  /** Whether a version change alone rolls the pool (`MachinePoolConformanceOptions.versionRollout`). */
  readonly versionRollout: boolean;
  /** Which core judges: only `real` runs these scenarios. */
  readonly core: "emulator" | "real";
  /** The suite's namespace. */
  readonly namespace: string;
  /** The watch-filter label every object of the suite carries (R20), and its value. */
  readonly watchFilter: { readonly label: string; readonly value: string };
  /** Tells the suite about a Cluster it made (core's errors about it fail the scenario). */
  trackCluster(name: string): void;
  /** Tells the suite about a pool it did not create itself (the cleanup scenario checks it). */
  trackPool(pool: ConformancePool): void;
  /** Waits until the pool is converged at `replicas` as core sees it. */
  converged(pool: ConformancePool, replicas: number, timeoutMs?: number): Promise<void>;
  /**
   * `steadyState.zeroWrites`: waits for convergence and quiet, then fails on any API write by the
   * provider or mutating cloud call in the suite's steady-state window.
   */
  steadyState(pool: ConformancePool, replicas: number): Promise<void>;
  /** Why the pool is not converged at `replicas`, or undefined. */
  notConverged(pool: ConformancePool, replicas: number): Promise<string | undefined>;
  /** Polls `check` (undefined when satisfied, else why not) until it passes; throws naming the last reason. */
  until(what: string, check: () => Promise<string | undefined>, timeoutMs?: number): Promise<void>;
  /** The suite's converge budget, ms. */
  readonly convergeMs: number;
}

/** A ClusterClass scenario: id, title, why it is skipped, body. */
export interface TopologyScenarioDef {
  /** Scenario id. */
  readonly id: TopologyScenario;
  /** What it checks. */
  readonly title: string;
  /** Why it cannot run with this judge or provider, or undefined. */
  skipReason(): string | undefined;
  /** The body. */
  run(): Promise<void>;
}

type Obj = KubernetesObject & {
  spec?: Record<string, unknown>;
  status?: Record<string, unknown> & {
    conditions?: { type: string; status: string; reason?: string; message?: string }[];
    observedGeneration?: number;
  };
};

const Clusters = clusterv1beta2.ClusterResource as unknown as ResourceDescriptor<Obj>;
const MachinePools = clusterv1beta2.MachinePoolResource as unknown as ResourceDescriptor<Obj>;

const FIELD_MANAGER = "capi-ts-conformance";
const FROM_VERSION = "v1.34.1";
const TO_VERSION = "v1.35.0";
const POOL_TOPOLOGY_NAME = "pool-0";
const TOPOLOGY_POOL_LABEL = "topology.cluster.x-k8s.io/pool-name";

/**
 * The ClusterClass scenarios over `host`:
 *
 * - `topologyCreate`: the kind's ClusterClass flavor is applied; a Cluster of the class with one
 *   worker MachinePool of 2 replicas is created; core's topology controller creates the MachinePool
 *   and the InfraMachinePool from the `<Kind>Template` (`topology.poolCreated`); the provider
 *   provisions it and it converges as every other pool (`converge`, the suite's invariants); the
 *   Cluster reports `TopologyReconciled=True` (`topology.reconciled`); then nobody writes
 *   (`steadyState.zeroWrites`).
 * - `topologyUpgrade`: the same at `v1.34.1`, then `spec.topology.version` goes to `v1.35.0`; the
 *   control plane upgrades first (the stand-in), then the topology controller sets the MachinePool's
 *   version (`topology.versionPropagated`), the provider replaces every instance
 *   (`topology.instancesRolled`), every Node of the pool reports kubelet `v1.35.0`
 *   (`topology.kubeletVersion`) and the Cluster reports `TopologyReconciled=True` again, the pool no
 *   longer upgrading (`topology.upgraded`), and nobody writes (`steadyState.zeroWrites`).
 *
 * Each ends by deleting its Cluster and waiting for the pool and its cloud resources to go.
 */
export function topologyScenarios(host: () => TopologyScenarioHost): TopologyScenarioDef[] {
  const skip = () => {
    const h = host();
    if (h.core !== "real") {
      return "needs core's topology controller (feature gate ClusterTopology), which only real core runs (core: real)";
    }
    return h.kind.templateCrd
      ? undefined
      : "the kind ships no <Kind>Template CRD (ConformanceKind.templateCrd), which a ClusterClass names";
  };
  let seq = 0;
  return [
    {
      id: "topologyCreate",
      title: TOPOLOGY_SCENARIOS[0].title,
      skipReason: skip,
      run: () => topologyCreate(host(), ++seq),
    },
    {
      id: "topologyUpgrade",
      title: TOPOLOGY_SCENARIOS[1].title,
      skipReason: () =>
        skip() ??
        (host().versionRollout
          ? undefined
          : "a version change alone rolls no instance of this provider (versionRollout: false; its spec pins the image)"),
      run: () => topologyUpgrade(host(), ++seq),
    },
  ];
}

/**
 * The objects of the kind's ClusterClass flavor for a Cluster `cluster` at `version`, as
 * `clusterctl generate cluster --flavor clusterclass` renders them, with the suite's watch filter.
 */
export function renderedFlavor(
  host: Pick<TopologyScenarioHost, "kind" | "poolSpec" | "namespace" | "workloadKubeConfig">,
  options: { readonly className: string; readonly cluster: string; readonly version: string },
): { readonly clusterClass: Obj[]; readonly cluster: Obj } {
  const kind = host.kind;
  const server = new URL(
    host.workloadKubeConfig.getCurrentCluster()?.server ?? "https://127.0.0.1",
  );
  const flavor = clusterClassFlavor({
    kind: {
      group: kind.group,
      storageVersion: kind.storageVersion,
      templateKind: `${kind.kind}Template`,
    },
    className: options.className,
    poolSpec: host.poolSpec,
    templates: {
      infrastructureCluster: {
        apiVersion: "infrastructure.cluster.x-k8s.io/v1beta2",
        kind: "DevClusterTemplate",
        metadata: { name: "" },
        spec: {
          template: {
            spec: {
              backend: { docker: {} },
              controlPlaneEndpoint: {
                host: server.hostname,
                port: Number(server.port || (server.protocol === "https:" ? 443 : 80)),
              },
            },
          },
        },
      },
      controlPlane: externalControlPlaneTemplate("", host.namespace) as Manifest,
    },
  });
  const text = substituteClusterctlVariables(
    componentsYAML([...flavor.clusterClass, flavor.cluster]),
    {
      NAMESPACE: host.namespace,
      CLUSTER_NAME: options.cluster,
      KUBERNETES_VERSION: options.version,
      WORKER_MACHINE_COUNT: "2",
    },
  );
  const objects = (loadAll(text) as Obj[]).filter((o) => o !== null && o !== undefined);
  const cluster = objects.find((o) => o.kind === "Cluster");
  if (!cluster) throw new Error("topology: the rendered flavor has no Cluster");
  return { clusterClass: objects.filter((o) => o !== cluster), cluster };
}

interface TopologyRun {
  readonly cluster: string;
  readonly pool: ConformancePool;
  readonly replicas: number;
  stop(): Promise<void>;
}

function topologyCondition(cluster: Obj) {
  return cluster.status?.conditions?.find((c) => c.type === "TopologyReconciled");
}

async function startTopologyCluster(host: TopologyScenarioHost, seq: number): Promise<TopologyRun> {
  const { client, namespace, watchFilter } = host;
  const clusterName = `conf-topology-${seq}`;
  const className = `conf-class-${seq}`;
  const replicas = 2;
  const flavor = renderedFlavor(host, { className, cluster: clusterName, version: FROM_VERSION });
  // The suite's objects carry its watch filter (R20): the pool's through its template's metadata,
  // which the topology controller copies onto the InfraMachinePool.
  const poolKind = `${host.kind.kind}Template`;
  for (const object of flavor.clusterClass) {
    if (object.kind === poolKind) {
      const template = (
        object.spec as { template: { metadata?: { labels?: Record<string, string> } } }
      ).template;
      template.metadata = {
        labels: { ...template.metadata?.labels, [watchFilter.label]: watchFilter.value },
      };
    }
  }
  const workers = (
    flavor.cluster.spec as {
      topology: {
        workers: {
          machinePools: {
            replicas?: unknown;
            metadata?: { labels?: Record<string, string> };
          }[];
        };
      };
    }
  ).topology.workers.machinePools;
  for (const pool of workers) {
    pool.replicas = replicas;
    // The MachinePool the topology controller makes carries the topology's labels, not the
    // Cluster's: without the filter label a provider filtering its watches (R20) never hears of
    // core setting the pool's bootstrap data, and the pool waits for it until an unrelated event.
    pool.metadata = {
      ...pool.metadata,
      labels: { ...pool.metadata?.labels, [watchFilter.label]: watchFilter.value },
    };
  }
  flavor.cluster.metadata = {
    ...flavor.cluster.metadata,
    labels: { ...flavor.cluster.metadata?.labels, [watchFilter.label]: watchFilter.value },
  };
  // The templates before the ClusterClass that names them, the class before the Cluster.
  const ordered = [
    ...flavor.clusterClass.filter((o) => o.kind !== "ClusterClass"),
    ...flavor.clusterClass.filter((o) => o.kind === "ClusterClass"),
  ];
  // Server-side applied with strict field validation, as `kubectl apply --server-side` would.
  await applyManifests(host.kubeConfig, ordered as ManifestObject[], {
    fieldManager: FIELD_MANAGER,
  });
  const controlPlanes = playManagedControlPlanes(client, { namespace, cluster: clusterName });
  host.trackCluster(clusterName);
  // The Cluster webhook resolves the class: it may not have seen the ClusterClass reconciled yet.
  await host.until(
    `Cluster ${clusterName} of ClusterClass ${className} to be admitted`,
    async () => {
      try {
        await applyManifests(host.kubeConfig, [flavor.cluster as ManifestObject], {
          fieldManager: FIELD_MANAGER,
        });
        return undefined;
      } catch (error) {
        return `topology.clusterAdmitted: ${error instanceof Error ? error.message : String(error)}`;
      }
    },
  );
  // The infrastructure provider's and the control plane provider's part: the DevCluster the topology
  // controller made is provisioned, the kubeconfig Secret written.
  await host.until(
    `core's topology controller to give ${clusterName} its infrastructure`,
    async () => {
      const cluster = await client.get(Clusters, { namespace, name: clusterName });
      const ref = (cluster.spec as { infrastructureRef?: { name?: string } }).infrastructureRef;
      if (!ref?.name) {
        const condition = topologyCondition(cluster);
        return `topology.clusterCreated: the Cluster has no spec.infrastructureRef yet (TopologyReconciled ${condition ? `${condition.status}/${condition.reason}: ${condition.message ?? ""}` : "unset"})`;
      }
      return undefined;
    },
  );
  await markWorkloadClusterReady(client, { namespace, name: clusterName }, host.workloadKubeConfig);
  let pool: ConformancePool | undefined;
  await host.until(
    `core's topology controller to create the MachinePool of ${clusterName}`,
    async () => {
      const list = await client.list(MachinePools, {
        namespace,
        labelSelector: `${Labels.ClusterName}=${clusterName},${TOPOLOGY_POOL_LABEL}=${POOL_TOPOLOGY_NAME}`,
      });
      const mp = list.items[0];
      const infra = (
        mp?.spec as {
          template?: { spec?: { infrastructureRef?: { kind?: string; name?: string } } };
        }
      )?.template?.spec?.infrastructureRef;
      if (!mp?.metadata?.name || !infra?.name) {
        const cluster = await client.get(Clusters, { namespace, name: clusterName });
        const condition = topologyCondition(cluster);
        return `topology.poolCreated: no MachinePool ${POOL_TOPOLOGY_NAME} of Cluster ${clusterName} yet (TopologyReconciled ${condition ? `${condition.status}/${condition.reason}: ${condition.message ?? ""}` : "unset"})`;
      }
      if (infra.kind !== host.kind.kind) {
        throw new Error(
          `topology.poolCreated: the MachinePool's infrastructureRef is a ${infra.kind}, want ${host.kind.kind} (from the class's ${poolKind})`,
        );
      }
      pool = { namespace, name: infra.name, machinePoolName: mp.metadata.name, clusterName };
      return undefined;
    },
  );
  if (!pool) throw new Error("topology.poolCreated: no pool");
  host.trackPool(pool);
  const created = pool;
  return {
    cluster: clusterName,
    pool: created,
    replicas,
    stop: async () => {
      await client.delete(Clusters, { namespace, name: clusterName }).catch(() => undefined);
      await host.until(`Cluster ${clusterName} and its pool to be deleted`, async () => {
        const left = await host.provider.cloud.resourcesLeft(created);
        if (left.length > 0) return `cleanup.complete: cloud resources left: ${left.join(", ")}`;
        const cluster = await client
          .get(Clusters, { namespace, name: clusterName })
          .catch(() => undefined);
        return cluster
          ? `deletion.completes: Cluster ${clusterName} still exists (finalizers ${JSON.stringify(cluster.metadata?.finalizers ?? [])})`
          : undefined;
      });
      await controlPlanes.stop();
    },
  };
}

/** Why the Cluster's topology is not reconciled at `version`, or undefined. */
async function topologyNotReconciled(
  host: TopologyScenarioHost,
  cluster: string,
): Promise<string | undefined> {
  const current = await host.client.get(Clusters, { namespace: host.namespace, name: cluster });
  const condition = topologyCondition(current);
  if (condition?.status !== "True") {
    return `topology.reconciled: TopologyReconciled is ${condition ? `${condition.status}/${condition.reason}: ${condition.message ?? ""}` : "unset"}`;
  }
  if (current.status?.observedGeneration !== current.metadata?.generation) {
    return `topology.reconciled: core has not observed generation ${current.metadata?.generation} of the Cluster yet`;
  }
  return undefined;
}

async function topologyCreate(host: TopologyScenarioHost, seq: number): Promise<void> {
  const run = await startTopologyCluster(host, seq);
  try {
    await host.converged(run.pool, run.replicas);
    await host.until(`Cluster ${run.cluster}'s topology to be reconciled`, () =>
      topologyNotReconciled(host, run.cluster),
    );
    // Nothing changes now: neither the kit nor core (topology controller included) may write.
    await host.steadyState(run.pool, run.replicas);
  } finally {
    await run.stop();
  }
}

async function topologyUpgrade(host: TopologyScenarioHost, seq: number): Promise<void> {
  const { client, namespace } = host;
  const run = await startTopologyCluster(host, seq);
  try {
    const { pool, replicas } = run;
    await host.converged(pool, replicas);
    await host.until(`Cluster ${run.cluster}'s topology to be reconciled`, () =>
      topologyNotReconciled(host, run.cluster),
    );
    const before = await host.provider.cloud.liveProviderIds(pool);
    await client.mergePatch(
      Clusters,
      { namespace, name: run.cluster },
      {
        spec: { topology: { version: TO_VERSION } },
      },
    );
    await host.until(
      `${pool.name} to be upgraded to ${TO_VERSION} through the topology`,
      async () => {
        const mp = await client.get(MachinePools, {
          namespace,
          name: pool.machinePoolName ?? pool.name,
        });
        const version = (mp.spec as { template?: { spec?: { version?: string } } }).template?.spec
          ?.version;
        if (version !== TO_VERSION) {
          return `topology.versionPropagated: the MachinePool's version is ${version ?? "unset"}, want ${TO_VERSION} (the control plane upgrades first)`;
        }
        const live = await host.provider.cloud.liveProviderIds(pool);
        const old = live.filter((id) => before.includes(id));
        if (old.length > 0) {
          return `topology.instancesRolled: ${old.length} instance(s) from before the upgrade still live`;
        }
        const outdated = (await host.provider.cloud.outdatedProviderIds?.(pool)) ?? [];
        if (outdated.length > 0) {
          return `topology.instancesRolled: outdated instances ${JSON.stringify(outdated)}`;
        }
        const problem = await host.notConverged(pool, replicas);
        if (problem) return problem;
        const ids = new Set(live);
        const nodes = (await host.workload.list(NodeResource)).items.filter((n) =>
          ids.has(n.spec?.providerID ?? ""),
        );
        const stale = nodes.filter((n) => n.status?.nodeInfo?.kubeletVersion !== TO_VERSION);
        if (nodes.length !== replicas || stale.length > 0) {
          return `topology.kubeletVersion: ${nodes.length} Nodes of ${replicas}, kubelets ${JSON.stringify(nodes.map((n) => n.status?.nodeInfo?.kubeletVersion ?? "unset"))}, want all ${TO_VERSION}`;
        }
        const reconciled = await topologyNotReconciled(host, run.cluster);
        return reconciled?.replace("topology.reconciled", "topology.upgraded");
      },
      host.convergeMs * 3,
    );
    await host.steadyState(pool, replicas);
  } finally {
    await run.stop();
  }
}
