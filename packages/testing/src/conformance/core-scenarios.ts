/**
 * The scenarios every provider runs on both judges, apart from the kind checks: scale, token
 * rotation, template rollout, the external autoscaler, pause, deletion in flight, out-of-band
 * deletion and spot interruption, cloud throttling, API server faults and the watch filter. Each gets
 * the suite through a {@link CoreScenarioHost}, as the other scenario families get theirs.
 *
 * @module
 */
import { clusterv1beta2 } from "@capi-ts/sdk/api";
import type { KubeClient, ResourceDescriptor } from "@capi-ts/sdk/runtime";
import type { KubeConfig, KubernetesObject } from "@kubernetes/client-node";
import type { ApiServer, RequestRecord } from "../apiserver/index.js";
import { type CapiCore, markWorkloadClusterReady } from "../capi/index.js";
import { ConformanceError, type ConformancePoolObject } from "./invariants.js";
import type {
  ConformancePool,
  ConformanceProvider,
  MachinePoolConformanceOptions,
} from "./types.js";

/** The namespace of every object the suite creates. */
export const SUITE_NAMESPACE = "default";
/** The watch-filter value the suite's manager runs with (R20). */
export const WATCH_FILTER_VALUE = "capi-ts-conformance";
/** The Cluster of another team, outside the watch filter. */
export const OTHER_CLUSTER = "conformance-other-team";
const WATCH_FILTER_LABEL = "cluster.x-k8s.io/watch-filter";
const REPLICAS_MANAGED_BY = "cluster.x-k8s.io/replicas-managed-by";

/** An object of the suite, loosely typed. */
export type Obj = KubernetesObject & {
  spec?: Record<string, unknown> & { replicas?: number; paused?: boolean };
  status?: Record<string, unknown> & { replicas?: number };
};
/** The suite's MachinePools, loosely typed. */
export const MachinePools =
  clusterv1beta2.MachinePoolResource as unknown as ResourceDescriptor<Obj>;

/** Whether `write` is the provider's: its field manager, or its User-Agent naming `identity`. */
export function writtenBy(write: RequestRecord, identity: string): boolean {
  return write.fieldManager === identity || write.userAgent?.includes(identity) === true;
}

/** Resolves after `ms`. */
export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** The suite's timings, defaults applied (see `MachinePoolConformanceOptions.timeouts`). */
export interface SuiteTimings {
  readonly convergeMs: number;
  readonly steadyStateMs: number;
  readonly settleMs: number;
  readonly pauseMs: number;
}

/** A pool's Cluster and the watch-filter label it carries. */
export interface PoolTeam {
  readonly cluster: string;
  readonly watchFilter: string;
}

/** What the core scenarios get of the suite. */
export interface CoreScenarioHost {
  readonly client: KubeClient;
  readonly provider: ConformanceProvider;
  readonly core: CapiCore;
  readonly workloadKubeConfig: KubeConfig;
  /** Fault injection: the in-memory API server only. */
  readonly faults: ApiServer["faults"] | undefined;
  readonly options: MachinePoolConformanceOptions;
  readonly timings: SuiteTimings;
  /** The provider's pool kind. */
  readonly pools: ResourceDescriptor<ConformancePoolObject>;
  /** The finalizers a pool (by uid) carried when the suite first saw it, if it saw it. */
  finalizersSeen(uid: string): readonly string[] | undefined;
  createCluster(name: string, watchFilter: string): Promise<void>;
  createPool(
    replicas: number,
    spec?: Record<string, unknown>,
    team?: PoolTeam,
  ): Promise<ConformancePool>;
  setReplicas(pool: ConformancePool, replicas: number): Promise<void>;
  setClusterPaused(paused: boolean): Promise<void>;
  converged(pool: ConformancePool, replicas: number, timeoutMs?: number): Promise<void>;
  /** Why `pool` has not converged at `replicas`, or `undefined` once it has. */
  notConverged(pool: ConformancePool, replicas: number): Promise<string | undefined>;
  steadyState(pool: ConformancePool, replicas: number): Promise<void>;
  /** Waits until the provider stops writing `pool`. */
  quiet(pool: ConformancePool): Promise<void>;
  deletePool(pool: ConformancePool): Promise<void>;
  until(what: string, check: () => Promise<string | undefined>, timeoutMs?: number): Promise<void>;
  readyNodes(pool: ConformancePool): Promise<number>;
  writesSince(since: number): RequestRecord[];
  key(pool: ConformancePool): { namespace: string; name: string };
  mpKey(pool: ConformancePool): { namespace: string; name: string };
}

export async function scaleScenario(h: CoreScenarioHost): Promise<void> {
  const { client, provider } = h;
  const pool = await h.createPool(2);
  // The finalizer must be persisted before the first instance exists.
  await h.until(`${pool.name} to launch its first instance`, async () => {
    if ((await provider.cloud.liveProviderIds(pool)).length === 0)
      return "converge: no instance yet";
    const imp = await client.get(h.pools, h.key(pool));
    const seen = h.finalizersSeen(imp.metadata?.uid ?? "");
    const expected = h.options.kind.finalizer;
    const ok = seen !== undefined && (expected === undefined || seen.includes(expected));
    if (!ok) {
      throw new ConformanceError(
        "deletion.finalizerFirst",
        `an instance exists before the pool carried ${expected ? `the finalizer ${expected}` : "a finalizer"} (finalizers ${JSON.stringify(imp.metadata?.finalizers ?? [])})`,
      );
    }
    return undefined;
  });
  await h.steadyState(pool, 2);
  await h.setReplicas(pool, 4);
  await h.steadyState(pool, 4);
  await h.setReplicas(pool, 1);
  await h.steadyState(pool, 1);
  await h.setReplicas(pool, 0);
  await h.steadyState(pool, 0);
  await h.deletePool(pool);
}

export async function tokenRotationScenario(h: CoreScenarioHost): Promise<void> {
  const { core, provider } = h;
  const pool = await h.createPool(2);
  await h.converged(pool, 2);
  const before = [...(await provider.cloud.liveProviderIds(pool))].sort();
  const versions = await provider.cloud.templateVersionCount?.(pool);
  if (!core.bootstrap) throw new Error("the bootstrap stand-in is off");
  await core.bootstrap.rotateToken(h.key(pool));
  if (versions !== undefined) {
    await h.until(`${pool.name} to get a template version with the new token`, async () => {
      const now = (await provider.cloud.templateVersionCount?.(pool)) ?? 0;
      return now > versions
        ? undefined
        : `rollout.tokenRefreshesTemplate: still ${now} template versions after a token rotation`;
    });
    // The replica count never changed, so "converged" held all along: the provider is still
    // finishing its reaction (the Event about the version, pointing the group at it) when the cloud
    // first shows the version. Let that reaction end before the zero-write window opens; a provider
    // that never stops writing fails the wait with its writes.
    await h.quiet(pool);
  }
  await h.steadyState(pool, 2);
  const after = [...(await provider.cloud.liveProviderIds(pool))].sort();
  if (JSON.stringify(after) !== JSON.stringify(before)) {
    throw new ConformanceError(
      "rollout.tokenOnlyNoReplace",
      `a token-only rotation must replace no instance: before ${JSON.stringify(before)}, after ${JSON.stringify(after)}`,
    );
  }
  await h.deletePool(pool);
}

export async function templateRolloutScenario(h: CoreScenarioHost): Promise<void> {
  if (!h.options.templateChange) return;
  const replicas = 3;
  const pool = await h.createPool(replicas);
  await rollEveryInstance(h, pool, replicas);
  await h.steadyState(pool, replicas);
  await h.deletePool(pool);
}

/**
 * Converges `pool` with every Node Ready, applies the template change and waits until every
 * instance is replaced, failing `rollout.availability` as soon as the Ready Nodes of the pool's live
 * instances in the workload cluster drop below `replicas − maxUnavailable`.
 */
export async function rollEveryInstance(
  h: CoreScenarioHost,
  pool: ConformancePool,
  replicas: number,
): Promise<void> {
  const { client, provider } = h;
  const change = h.options.templateChange;
  if (!change) throw new Error("conformance: a rollout needs the templateChange option");
  await h.converged(pool, replicas);
  await h.until(`${pool.name} Nodes to be Ready`, async () => {
    const ready = await h.readyNodes(pool);
    return ready === replicas ? undefined : `converge: ${ready} of ${replicas} Nodes Ready`;
  });
  const before = await provider.cloud.liveProviderIds(pool);
  const floor = replicas - (h.options.rolloutMaxUnavailable ?? 0);
  await client.mergePatch(h.pools, h.key(pool), { spec: change(h.options.poolSpec) });
  let lowest = replicas;
  await h.until(
    `${pool.name} to roll every instance`,
    async () => {
      lowest = Math.min(lowest, await h.readyNodes(pool));
      if (lowest < floor) {
        throw new ConformanceError(
          "rollout.availability",
          `Ready Nodes dropped to ${lowest} during the rollout; must stay ≥ replicas − maxUnavailable = ${floor}`,
        );
      }
      const live = await provider.cloud.liveProviderIds(pool);
      const old = live.filter((id) => before.includes(id));
      if (old.length > 0)
        return `rollout.allUpToDate: ${old.length} instance(s) from before the change still live`;
      const outdated = (await provider.cloud.outdatedProviderIds?.(pool)) ?? [];
      if (outdated.length > 0)
        return `rollout.allUpToDate: outdated instances ${JSON.stringify(outdated)}`;
      return h.notConverged(pool, replicas);
    },
    h.timings.convergeMs * 2,
  );
}

export async function externalAutoscalerScenario(h: CoreScenarioHost): Promise<void> {
  const { client, provider } = h;
  const setDesired = provider.cloud.actors?.setDesiredReplicas;
  if (!setDesired) return;
  const pool = await h.createPool(2);
  await h.converged(pool, 2);
  await client.mergePatch(MachinePools, h.mpKey(pool), {
    metadata: { annotations: { [REPLICAS_MANAGED_BY]: "external-autoscaler" } },
  });
  await sleep(h.timings.settleMs);
  const resizes = provider.cloud.callCount({ resizes: true });
  await setDesired(pool, 4);
  await h.until(`MachinePool ${pool.name} spec.replicas to follow the cloud's 4`, async () => {
    const mp = await client.get(MachinePools, h.mpKey(pool));
    return mp.spec?.replicas === 4
      ? h.notConverged(pool, 4)
      : `replicas.externallyManaged: MachinePool.spec.replicas is ${mp.spec?.replicas}, the cloud's desired size is 4`;
  });
  await h.steadyState(pool, 4);
  const resized = provider.cloud.callCount({ resizes: true }) - resizes;
  if (resized > 0) {
    throw new ConformanceError(
      "replicas.externallyManaged",
      `the provider set the group's desired size ${resized} time(s) while an autoscaler manages it`,
    );
  }
  await client.mergePatch(MachinePools, h.mpKey(pool), {
    metadata: { annotations: { [REPLICAS_MANAGED_BY]: null } },
  });
  await h.setReplicas(pool, 2);
  await h.steadyState(pool, 2);
  await h.deletePool(pool);
}

export async function pauseScenario(h: CoreScenarioHost): Promise<void> {
  const { client, provider } = h;
  const pool = await h.createPool(1);
  await h.converged(pool, 1);
  await h.setClusterPaused(true);
  try {
    await h.until(
      `${pool.name} to report Paused=True`,
      async () => {
        const imp = await client.get(h.pools, h.key(pool));
        const paused = imp.status?.conditions?.find((c) => c.type === "Paused");
        return paused?.status === "True"
          ? undefined
          : `pause.condition: Paused is ${JSON.stringify(paused ?? "missing")}`;
      },
      5000,
    );
    await sleep(h.timings.settleMs);
    const calls = provider.cloud.callCount();
    const since = Date.now();
    await h.setReplicas(pool, 3);
    await sleep(h.timings.pauseMs);
    const made = provider.cloud.callCount() - calls;
    if (made > 0) {
      throw new ConformanceError(
        "pause.noCloudCallsWhilePaused",
        `the provider made ${made} cloud call(s) in ${h.timings.pauseMs} ms while the Cluster was paused`,
      );
    }
    const identity = h.provider.identity;
    const writes = h
      .writesSince(since)
      .filter((w) => w.resource === h.options.kind.plural && writtenBy(w, identity));
    if (writes.length > 0) {
      throw new ConformanceError(
        "pause.noWritesWhilePaused",
        `the provider wrote its pool ${writes.length} time(s) while paused (only the Paused condition may change)`,
      );
    }
  } finally {
    await h.setClusterPaused(false);
  }
  await h.steadyState(pool, 3);
  await h.deletePool(pool);
}

export async function deletionInFlightScenario(h: CoreScenarioHost): Promise<void> {
  const { provider } = h;
  const pool = await h.createPool(3);
  await h.until(`${pool.name} to launch an instance`, async () =>
    (await provider.cloud.liveProviderIds(pool)).length > 0
      ? undefined
      : "converge: no instance yet",
  );
  await h.deletePool(pool);
}

export async function outOfBandScenario(
  h: CoreScenarioHost,
  actor: "terminateInstance" | "interruptSpot",
): Promise<void> {
  const { client, provider } = h;
  const act = provider.cloud.actors?.[actor];
  if (!act) return;
  const pool = await h.createPool(3);
  await h.converged(pool, 3);
  const [victim] = await provider.cloud.liveProviderIds(pool);
  if (!victim) throw new Error("no instance to disturb");
  await act(pool, victim);
  await h.until(`${pool.name} to drop ${victim} and get back to 3`, async () => {
    const imp = await client.get(h.pools, h.key(pool));
    if (imp.spec?.providerIDList?.includes(victim)) {
      return `status.providerIDsMatchCloud: ${victim} was terminated but is still in providerIDList`;
    }
    return h.notConverged(pool, 3);
  });
  await h.steadyState(pool, 3);
  await h.deletePool(pool);
}

export async function cloudThrottlingScenario(h: CoreScenarioHost): Promise<void> {
  const { provider } = h;
  const throttle = provider.cloud.actors?.throttle;
  if (!throttle) return;
  const pool = await h.createPool(1);
  await h.converged(pool, 1);
  await throttle(6);
  await h.setReplicas(pool, 3);
  await h.steadyState(pool, 3);
  await h.deletePool(pool);
}

export async function apiServerFaultsScenario(h: CoreScenarioHost): Promise<void> {
  const faults = h.faults;
  if (!faults) return;
  const pool = await h.createPool(1);
  await h.converged(pool, 1);
  const plural = h.options.kind.plural;
  const handles = [
    faults.add({ verb: "patch", resource: plural, count: 3, status: 500 }),
    faults.add({
      verb: ["update", "patch"],
      resource: plural,
      subresource: "status",
      count: 2,
      status: 409,
    }),
    faults.add({
      verb: "get",
      resource: "secrets",
      count: 2,
      status: 503,
      retryAfterSeconds: 0,
    }),
  ];
  faults.cutWatches();
  try {
    await h.setReplicas(pool, 3);
    await h.converged(pool, 3);
    faults.cutWatches();
    await h.setReplicas(pool, 2);
    await h.steadyState(pool, 2);
  } finally {
    for (const h of handles) h.remove();
  }
  await h.deletePool(pool);
}

/**
 * `runtime.watchFilter` (R20): a pool, its MachinePool and its Cluster labelled for another team
 * are never touched by the provider — no finalizer, no status, no cloud resources — even when its
 * MachinePool changes.
 */
export async function watchFilterScenario(h: CoreScenarioHost): Promise<void> {
  const { client, provider } = h;
  const other = "another-team";
  await h.createCluster(OTHER_CLUSTER, other);
  await markWorkloadClusterReady(
    client,
    { namespace: SUITE_NAMESPACE, name: OTHER_CLUSTER },
    h.workloadKubeConfig,
  );
  const pool = await h.createPool(1, h.options.poolSpec, {
    cluster: OTHER_CLUSTER,
    watchFilter: other,
  });
  const since = Date.now();
  // Core adopts the pool first: only then would a provider that ignores the filter act on it.
  await h.until(`core to adopt ${pool.name} into its MachinePool`, async () => {
    const imp = await client.get(h.pools, h.key(pool));
    return imp.metadata?.ownerReferences?.some((ref) => ref.kind === "MachinePool")
      ? undefined
      : "converge: the pool has no owner MachinePool yet";
  });
  await sleep(h.timings.settleMs);
  await h.setReplicas(pool, 2);
  await sleep(h.timings.steadyStateMs + h.timings.settleMs);
  const imp = await client.get(h.pools, h.key(pool));
  const touched: string[] = [];
  const finalizers = (imp.metadata?.finalizers ?? []).filter(
    (f) => !f.startsWith("cluster.x-k8s.io"),
  );
  if (finalizers.length > 0) touched.push(`it added the finalizer(s) ${finalizers.join(", ")}`);
  const identity = provider.identity;
  const writes = h
    .writesSince(since)
    .filter(
      (w) => w.resource === h.options.kind.plural && w.name === pool.name && writtenBy(w, identity),
    );
  if (writes.length > 0) touched.push(`it wrote the pool ${writes.length} time(s)`);
  const resources = await provider.cloud.resourcesLeft(pool);
  if (resources.length > 0) touched.push(`it created ${resources.join(", ")}`);
  if (touched.length > 0) {
    throw new ConformanceError(
      "runtime.watchFilter",
      `${pool.name} is labelled ${WATCH_FILTER_LABEL}: ${other}, outside the provider's watch filter "${WATCH_FILTER_VALUE}", but ${touched.join("; ")}; run the manager with the watchFilterValue the suite passes (env.watchFilterValue) and filter every watch by it`,
    );
  }
  await h.deletePool(pool);
}
