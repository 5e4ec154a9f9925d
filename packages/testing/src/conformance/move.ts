/**
 * The `move` scenario: the real `clusterctl move` of the target release takes a live pool from the
 * suite's management cluster to a second one (a real kube-apiserver with real core of its own), where
 * a second provider process, on the same cloud, takes it over.
 *
 * What the clusterctl provider contract asks of the provider, and what the scenario holds: while a
 * cloud call that launches or terminates instances is in flight the pool carries
 * `clusterctl.cluster.x-k8s.io/block-move`, and not after (`move.blockMove`); clusterctl's move
 * succeeds (`move.clusterctl`); the copies' deletion on the source (`delete-for-move`) makes no cloud
 * call and the target, which gets the objects without status and with new UIDs, rebuilds
 * `providerIDList`, `replicas` and `Ready` from the cloud (`move.statusRebuilt`) without a single
 * mutating cloud call by either provider (`move.noCloudChange`); the pool then scales on the target
 * (`move.scalesAfterMove`) and its deletion there removes its cloud resources.
 *
 * The moved Cluster lives in a namespace of its own, so the move takes nothing else of the suite.
 *
 * @module
 */

import { readdirSync } from "node:fs";
import {
  KubeClient as Client,
  type KubeClient,
  type ResourceDescriptor,
} from "@capi-ts/sdk/runtime";
import type { KubeConfig, KubernetesObject } from "@kubernetes/client-node";
import { setExternalControlPlane } from "../capi/control-plane.js";
import { markWorkloadClusterReady } from "../capi/workload.js";
import { findControlPlaneBinaries } from "../controlplane/binaries.js";
import { realCapiRelease } from "../controlplane/capi-core.js";
import {
  type ClusterctlProvider,
  clusterctlMove,
  findClusterctlBinary,
  prepareForClusterctl,
} from "../controlplane/clusterctl.js";
import { type ControlPlane, startControlPlane } from "../controlplane/controlplane.js";
import type { CRDSource } from "../controlplane/crds.js";
import { capiCrdsFolder } from "../crds.js";
import { PROVIDER_LIFECYCLE_SCENARIOS, type ProviderLifecycleScenario } from "./scenario-ids.js";
import type {
  ConformanceEnvironment,
  ConformanceKind,
  ConformancePool,
  ConformanceProvider,
  ProviderMoveOptions,
} from "./types.js";

/** What the move scenario needs of the suite. */
export interface MoveScenarioHost {
  /** The suite's management cluster: the source of the move. */
  readonly kubeConfig: KubeConfig;
  /** A client of it. */
  readonly client: KubeClient;
  /** What the suite's provider was started with (the target's provider gets the same, but its cluster). */
  readonly env: ConformanceEnvironment;
  /** The kind under test. */
  readonly kind: ConformanceKind;
  /** `spec` of a new pool. */
  readonly poolSpec: Record<string, unknown>;
  /** Which core judges: only `real` runs it. */
  readonly core: "emulator" | "real";
  /** The suite's provider (its cloud is the truth both sides are judged against). */
  readonly provider: ConformanceProvider;
  /** How to start the provider on the target, if the provider gave it. */
  readonly move: ProviderMoveOptions | undefined;
  /** The CRDs the suite installed for the provider (the kind's and the control plane stand-in's). */
  readonly providerCrds: readonly Record<string, unknown>[];
  /** The watch-filter label every object of the suite carries (R20), and its value. */
  readonly watchFilter: { readonly label: string; readonly value: string };
  /** Installs CRDs on the source (a real control plane's `installCRDs`). */
  installCRDs(crds: readonly CRDSource[]): Promise<void>;
  /** The suite's quiet window, ms: how long nothing may change for a steady state. */
  readonly steadyStateMs: number;
  /** Polls `check` (undefined when satisfied, else why not) until it passes; throws the last reason. */
  until(what: string, check: () => Promise<string | undefined>, timeoutMs?: number): Promise<void>;
}

/** The scenario: id, title, why it is skipped, body. */
export interface MoveScenarioDef {
  /** Scenario id. */
  readonly id: ProviderLifecycleScenario;
  /** What it checks. */
  readonly title: string;
  /** Why it cannot run with this judge or provider, or undefined. */
  skipReason(): string | undefined;
  /** The body. */
  run(): Promise<void>;
}

type Obj = KubernetesObject & {
  spec?: Record<string, unknown> & { providerIDList?: string[]; replicas?: number };
  status?: Record<string, unknown> & {
    replicas?: number;
    conditions?: { type: string; status: string; reason?: string; message?: string }[];
  };
};

const BLOCK_MOVE = "clusterctl.cluster.x-k8s.io/block-move";
const NAMESPACE = "conf-move";
const CLUSTER = "conf-move-1";
const INFRA_NAMESPACE = "conformance-provider-system";

const namespaced = (
  group: string,
  version: string,
  kind: string,
  plural: string,
): ResourceDescriptor<Obj> => ({
  group,
  version,
  kind,
  plural,
  scope: "Namespaced",
  subresources: { status: true },
});
const Clusters = namespaced("cluster.x-k8s.io", "v1beta2", "Cluster", "clusters");
const MachinePools = namespaced("cluster.x-k8s.io", "v1beta2", "MachinePool", "machinepools");
const KubeadmConfigs = namespaced(
  "bootstrap.cluster.x-k8s.io",
  "v1beta2",
  "KubeadmConfig",
  "kubeadmconfigs",
);
const Namespaces: ResourceDescriptor<KubernetesObject> = {
  group: "",
  version: "v1",
  kind: "Namespace",
  plural: "namespaces",
  scope: "Cluster",
};

/** The scenario over `host`. */
export function moveScenarios(host: () => MoveScenarioHost): MoveScenarioDef[] {
  const def = PROVIDER_LIFECYCLE_SCENARIOS.find((s) => s.id === "move");
  if (!def) throw new Error("move: no scenario id");
  return [
    {
      id: def.id,
      title: def.title,
      skipReason: () => {
        const h = host();
        if (h.core !== "real") {
          return "needs the real clusterctl between two real kube-apiservers with real core (core: real)";
        }
        if (!h.move) return "no move option (how to start the provider on the target cluster)";
        if (!findClusterctlBinary(findControlPlaneBinaries())) {
          return `clusterctl ${realCapiRelease()} is not built (run \`./dev controlplane --capi\`)`;
        }
        return undefined;
      },
      run: () => move(host()),
    },
  ];
}

function crdName(crd: Record<string, unknown>): string {
  return (crd.metadata as { name: string }).name;
}

/** What `clusterctl init` would have recorded: core with its CRDs, the provider with its own. */
function inventory(providerCrds: readonly Record<string, unknown>[]): ClusterctlProvider[] {
  const core = readdirSync(capiCrdsFolder)
    .filter((file) => file.endsWith(".yaml"))
    .map((file) => {
      const [group, plural] = file.replace(/\.yaml$/, "").split("_") as [string, string];
      return `${plural}.${group}`;
    });
  return [
    {
      name: "cluster-api",
      type: "CoreProvider",
      version: realCapiRelease(),
      namespace: "capi-system",
      crds: core,
    },
    {
      name: "conformance",
      type: "InfrastructureProvider",
      version: "v0.0.0",
      namespace: INFRA_NAMESPACE,
      crds: providerCrds.map(crdName),
    },
  ];
}

async function ensureNamespace(client: KubeClient, name: string): Promise<void> {
  await client
    .create(Namespaces, { apiVersion: "v1", kind: "Namespace", metadata: { name } })
    .catch((error: unknown) => {
      if ((error as { code?: number }).code !== 409) throw error;
    });
}

const readyOf = (pool: Obj) => pool.status?.conditions?.find((c) => c.type === "Ready");
const sorted = (ids: readonly string[]) => [...ids].sort();
const same = (a: readonly string[], b: readonly string[]) =>
  JSON.stringify(sorted(a)) === JSON.stringify(sorted(b));

async function move(host: MoveScenarioHost): Promise<void> {
  const options = host.move as ProviderMoveOptions;
  const clusterctl = findClusterctlBinary(findControlPlaneBinaries()) as string;
  const { client: a, kind } = host;
  const labels = { [host.watchFilter.label]: host.watchFilter.value };
  const pools = namespaced(kind.group, kind.storageVersion, kind.kind, kind.plural);
  const pool: ConformancePool = {
    namespace: NAMESPACE,
    name: "conf-move-pool",
    clusterName: CLUSTER,
  };
  const key = { namespace: NAMESPACE, name: pool.name };
  const cloud = host.provider.cloud;
  const target = startControlPlane({ capiCore: true });
  // A rejected start is awaited below; this keeps it from being reported as unhandled meanwhile.
  target.catch(() => undefined);
  let plane: ControlPlane | undefined;
  let targetProvider: ConformanceProvider | undefined;
  let b: KubeClient | undefined;
  let moved = false;
  let failed = false;
  try {
    // The Cluster and its pool on the source, in their own namespace.
    await ensureNamespace(a, NAMESPACE);
    await a.create(Clusters, {
      apiVersion: "cluster.x-k8s.io/v1beta2",
      kind: "Cluster",
      metadata: { name: CLUSTER, namespace: NAMESPACE, labels },
      spec: {
        infrastructureRef: {
          apiGroup: "infrastructure.cluster.x-k8s.io",
          kind: "DevCluster",
          name: CLUSTER,
        },
      },
    });
    await setExternalControlPlane(a, { namespace: NAMESPACE, name: CLUSTER }, labels);
    await markWorkloadClusterReady(
      a,
      { namespace: NAMESPACE, name: CLUSTER },
      host.env.workloadKubeConfig,
    );
    await a.create(KubeadmConfigs, {
      apiVersion: "bootstrap.cluster.x-k8s.io/v1beta2",
      kind: "KubeadmConfig",
      metadata: { name: pool.name, namespace: NAMESPACE },
      spec: { format: "cloud-config" },
    });
    await a.create(pools, {
      apiVersion: `${kind.group}/${kind.storageVersion}`,
      kind: kind.kind,
      metadata: { ...key, labels },
      spec: host.poolSpec,
    });
    await a.create(MachinePools, {
      apiVersion: "cluster.x-k8s.io/v1beta2",
      kind: "MachinePool",
      metadata: { ...key, labels },
      spec: {
        clusterName: CLUSTER,
        replicas: 2,
        template: {
          spec: {
            clusterName: CLUSTER,
            version: "v1.34.1",
            bootstrap: {
              configRef: {
                apiGroup: "bootstrap.cluster.x-k8s.io",
                kind: "KubeadmConfig",
                name: pool.name,
              },
            },
            infrastructureRef: { apiGroup: kind.group, kind: kind.kind, name: pool.name },
          },
        },
      },
    });
    const converged = (client: KubeClient, replicas: number, side: string) =>
      host.until(`${pool.name} converged at ${replicas} on the ${side}`, async () => {
        const live = await cloud.liveProviderIds(pool);
        const imp = await client.get(pools, key).catch(() => undefined);
        if (!imp) return `the ${side} has no ${kind.kind} ${pool.name}`;
        const ids = imp.spec?.providerIDList ?? [];
        if (live.length !== replicas)
          return `the cloud has ${live.length} live instances, want ${replicas}`;
        if (!same(ids, live)) {
          return `providerIDList is ${JSON.stringify(ids)}, the cloud has ${JSON.stringify(sorted(live))}`;
        }
        if (imp.status?.replicas !== replicas)
          return `status.replicas is ${imp.status?.replicas}, want ${replicas}`;
        const ready = readyOf(imp);
        if (ready?.status !== "True") {
          return `Ready is ${ready ? `${ready.status} (${ready.reason}: ${ready.message ?? ""})` : "missing"}`;
        }
        const mp = await client.get(MachinePools, key);
        if (!same((mp.spec?.providerIDList as string[] | undefined) ?? [], live)) {
          return `core has not copied providerIDList to the MachinePool (${JSON.stringify(mp.spec?.providerIDList ?? [])})`;
        }
        return undefined;
      });
    await converged(a, 2, "source");

    // A scale-up is a cloud call that launches instances: block-move while it runs, not after.
    const watch = new AbortController();
    let sawBlockMove = false;
    const list = await a.list(pools, { namespace: NAMESPACE });
    const watching = (async () => {
      for await (const event of a.watch(pools, {
        namespace: NAMESPACE,
        fieldSelector: `metadata.name=${pool.name}`,
        resourceVersion: list.metadata?.resourceVersion ?? "",
        signal: watch.signal,
      })) {
        if (event.object.metadata?.annotations?.[BLOCK_MOVE] !== undefined) sawBlockMove = true;
      }
    })().catch(() => undefined);
    await a.mergePatch(MachinePools, key, { spec: { replicas: 3 } });
    await converged(a, 3, "source");
    await host.until("the block-move annotation to be cleared", async () => {
      const imp = await a.get(pools, key);
      const mark = imp.metadata?.annotations?.[BLOCK_MOVE];
      return mark === undefined
        ? undefined
        : `move.blockMove: the pool still carries ${BLOCK_MOVE}: ${JSON.stringify(mark)} after the scale-up converged`;
    });
    watch.abort();
    await watching;
    if (!sawBlockMove) {
      throw new Error(
        `move.blockMove: the pool never carried ${BLOCK_MOVE} while it scaled from 2 to 3 (clusterctl move would not wait for the launch)`,
      );
    }

    // The target: a management cluster with core, the provider's CRDs and the provider.
    plane = await target;
    b = new Client(plane.kubeConfig, { fieldManager: "capi-ts-conformance" });
    await plane.installCRDs([...host.providerCrds]);
    const providers = inventory(host.providerCrds);
    for (const client of [a, b]) {
      await ensureNamespace(client, "capi-system");
      await ensureNamespace(client, INFRA_NAMESPACE);
    }
    const targetPlane = plane;
    await prepareForClusterctl(host.kubeConfig, (crds) => host.installCRDs(crds), providers);
    await prepareForClusterctl(
      plane.kubeConfig,
      (crds) => targetPlane.installCRDs(crds),
      providers,
    );
    targetProvider = await options.startTargetProvider(
      { ...host.env, kubeConfig: plane.kubeConfig },
      host.provider,
    );

    const before = await a.get(pools, key);
    const instances = sorted(await cloud.liveProviderIds(pool));
    const mutating = cloud.callCount({ mutating: true });
    const run = clusterctlMove({
      clusterctl,
      from: host.kubeConfig,
      to: plane.kubeConfig,
      namespace: NAMESPACE,
    });
    const result = await run.done;
    if (result.code !== 0) {
      throw new Error(
        `move.clusterctl: clusterctl move exited ${String(result.code)}:\n${result.stderr.split("\n").slice(-30).join("\n")}`,
      );
    }
    moved = true;
    await host.until(`${pool.name} gone from the source`, async () => {
      const left = await a.get(pools, key).catch(() => undefined);
      return left ? "the source still has the pool (clusterctl deletes its copies)" : undefined;
    });
    // Status is not moved: the target plays the infrastructure and control plane providers again.
    await setExternalControlPlane(b, { namespace: NAMESPACE, name: CLUSTER }, labels);
    await markWorkloadClusterReady(
      b,
      { namespace: NAMESPACE, name: CLUSTER },
      host.env.workloadKubeConfig,
    );
    const target2 = b;
    await host.until("move.statusRebuilt", async () => {
      const imp = await target2.get(pools, key).catch(() => undefined);
      if (!imp) return `move.statusRebuilt: the target has no ${kind.kind} ${pool.name}`;
      if (imp.metadata?.uid === before.metadata?.uid)
        return "move.statusRebuilt: the pool kept its UID (not moved?)";
      const ids = imp.spec?.providerIDList ?? [];
      if (!same(ids, instances)) {
        return `move.statusRebuilt: providerIDList on the target is ${JSON.stringify(ids)}, the instances are ${JSON.stringify(instances)}`;
      }
      if (imp.status?.replicas !== instances.length) {
        return `move.statusRebuilt: status.replicas on the target is ${imp.status?.replicas}, want ${instances.length}`;
      }
      const ready = readyOf(imp);
      if (ready?.status !== "True") {
        return `move.statusRebuilt: Ready on the target is ${ready ? `${ready.status} (${ready.reason}: ${ready.message ?? ""})` : "missing"}`;
      }
      if (imp.metadata?.annotations?.[BLOCK_MOVE] !== undefined) {
        return `move.statusRebuilt: the moved pool carries ${BLOCK_MOVE}`;
      }
      return undefined;
    });
    // A quiet window: neither provider changes anything in the cloud for the moved pool.
    await new Promise((resolve) => setTimeout(resolve, host.steadyStateMs));
    const calls = cloud.callCount({ mutating: true }) - mutating;
    const after = sorted(await cloud.liveProviderIds(pool));
    if (calls !== 0 || !same(after, instances)) {
      throw new Error(
        `move.noCloudChange: ${calls} mutating cloud calls since the move started; instances before ${JSON.stringify(instances)}, after ${JSON.stringify(after)}`,
      );
    }
    await b.mergePatch(MachinePools, key, { spec: { replicas: 4 } });
    await converged(b, 4, "target").catch((error: unknown) => {
      throw new Error(`move.scalesAfterMove: ${(error as Error).message}`);
    });
  } catch (error) {
    failed = true;
    throw error;
  } finally {
    // The pool is deleted where it lives now, by the provider there, down to its cloud resources.
    const where = moved ? b : a;
    if (where) {
      await where.delete(MachinePools, key).catch(() => undefined);
      await host
        .until(`${pool.name}'s cloud resources to be deleted`, async () => {
          const left = await cloud.resourcesLeft(pool);
          return left.length === 0 ? undefined : `left: ${left.join(", ")}`;
        })
        .catch((error: unknown) => {
          // A failure of the scenario itself is the one to report.
          if (!failed) throw error;
        });
      await where.delete(Clusters, { namespace: NAMESPACE, name: CLUSTER }).catch(() => undefined);
    }
    await targetProvider?.stop().catch(() => undefined);
    const started = plane ?? (await target.catch(() => undefined));
    await started?.stop().catch(() => undefined);
  }
}
