/**
 * The cluster-autoscaler's scale from zero, judged as the autoscaler's clusterapi provider
 * (`cluster-autoscaler/cloudprovider/clusterapi`) reads a MachinePool at 0 replicas: it has no Node
 * to copy, so it builds one from the object the MachinePool's `spec.template.spec.infrastructureRef`
 * names — the InfraMachinePool — and scales the group from zero only when that says cpu and memory.
 *
 * What the scenario follows, function by function of `clusterapi_unstructured.go`:
 * - `readInfrastructureReferenceResource`: the reference's `apiGroup`, `kind` and `name`; the
 *   group's preferred version from discovery (`getKindPreferredVersion`); the resource named
 *   `lower(kind) + "s"` (not the CRD's plural: a kind pluralised otherwise is never found), read in
 *   the MachinePool's namespace through an informer (`getInfrastructureResource`);
 * - `resourceCapacityFromInfrastructureObject`: `status.capacity` as a map of strings
 *   (`NestedStringMap`: one value that is not a string and the whole map is ignored), each value
 *   through `resource.ParseQuantity` (one that does not parse is dropped);
 * - `systemInfoFromInfrastructureObject`: `status.nodeInfo` as a map of strings, its
 *   `architecture` and `operatingSystem`;
 * - `CanScaleFromZero` (and `TemplateNodeInfo` of `clusterapi_nodegroup.go`, which calls it): cpu
 *   and memory present. The suite sets no `capacity.cluster-autoscaler.kubernetes.io/*` annotation,
 *   so everything comes from the pool.
 *
 * Where the autoscaler silently ignores or drops something, the suite fails instead: a provider
 * whose capacity the autoscaler would read as empty never scales from zero, and nobody is told.
 *
 * @module
 */
import { clusterv1beta2 } from "@capi-ts/sdk/api";
import { type KubeClient, parseQuantity, type ResourceDescriptor } from "@capi-ts/sdk/runtime";
import type { KubernetesObject } from "@kubernetes/client-node";
import { ConformanceError, type ConformancePoolObject } from "./invariants.js";
import { SCALE_FROM_ZERO_SCENARIOS, type ScaleFromZeroScenario } from "./scenario-ids.js";
import type { ConformanceKind, ConformancePool, ConformanceProvider } from "./types.js";

type MachinePool = clusterv1beta2.MachinePool;

/** What {@link autoscalerNodeTemplate} reads of a MachinePool (any MachinePool object fits). */
export interface AutoscalerMachinePoolView {
  /** Name and namespace. */
  readonly metadata?: { readonly name?: string; readonly namespace?: string };
  /** `spec.template.spec.infrastructureRef`, as the autoscaler reads it. */
  readonly spec?: {
    readonly template?: {
      readonly spec?: {
        readonly infrastructureRef?: {
          readonly apiGroup?: string;
          readonly kind?: string;
          readonly name?: string;
        };
      };
    };
  };
}

/** What the scale-from-zero scenario needs of the suite (the harness fills it in). */
export interface ScaleFromZeroHost {
  /** The management cluster, as the suite writes it (the autoscaler's reads go through it too). */
  readonly client: KubeClient;
  /** The InfraMachinePool kind under test, as the suite writes it. */
  readonly pools: ResourceDescriptor<ConformancePoolObject>;
  /** The kind under test. */
  readonly kind: ConformanceKind;
  /** The provider under test. */
  readonly provider: ConformanceProvider;
  /** `spec` of a new pool. */
  readonly poolSpec: Record<string, unknown>;
  /** The spec change that changes the capacity (the suite's `capacityChange` option). */
  readonly capacityChange: ((spec: Record<string, unknown>) => Record<string, unknown>) | undefined;
  /** Creates a pool in the suite's Cluster. */
  createPool(replicas: number): Promise<ConformancePool>;
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
}

/** A scale-from-zero scenario: id, title, why it is skipped, body. */
export interface ScaleFromZeroScenarioDef {
  /** Scenario id. */
  readonly id: ScaleFromZeroScenario;
  /** What it checks. */
  readonly title: string;
  /** Why it cannot run with this provider, or undefined. */
  skipReason(): string | undefined;
  /** The body. */
  run(): Promise<void>;
}

/** The node template the autoscaler builds for an empty pool, as far as the pool makes it. */
export interface AutoscalerNodeTemplate {
  /** Capacity by resource name, in base units, as `resourceCapacityFromInfrastructureObject` keeps it. */
  readonly capacity: ReadonlyMap<string, number>;
  /** `status.capacity` as the pool has it (the strings), for messages and comparison. */
  readonly published: Readonly<Record<string, unknown>> | undefined;
  /** `architecture` and `operatingSystem`, as `systemInfoFromInfrastructureObject` reads them. */
  readonly nodeInfo: { readonly architecture?: string; readonly operatingSystem?: string };
}

const MachinePoolResource =
  clusterv1beta2.MachinePoolResource as unknown as ResourceDescriptor<MachinePool>;

/**
 * The one scale-from-zero scenario over `host`, skipped without `capacityChange` (a provider that
 * publishes no capacity):
 *
 * - `scaleFromZero`: a pool of 1 converges and is scaled to 0; the pool the autoscaler finds
 *   through the MachinePool's `infrastructureRef` (`autoscaler.infrastructureRef`) carries a
 *   capacity it reads whole (`autoscaler.capacityStrings`: strings only;
 *   `autoscaler.capacityQuantities`: every one a quantity) with cpu and memory
 *   (`autoscaler.canScaleFromZero`) and a nodeInfo with architecture and operating system
 *   (`autoscaler.nodeInfo`), without churn (`steadyState.zeroWrites` at 0). Then `capacityChange`
 *   is applied to the pool's spec: still at 0 replicas and with no instance launched, the capacity
 *   changes and is read whole again (`autoscaler.capacityFollowsSpec`).
 */
export function scaleFromZeroScenarios(
  host: () => ScaleFromZeroHost,
  options: { readonly hasCapacityChange: boolean },
): ScaleFromZeroScenarioDef[] {
  return [
    {
      id: "scaleFromZero",
      title: SCALE_FROM_ZERO_SCENARIOS[0].title,
      // Asked before the suite starts (the report lists skips up front): the options, not the host.
      skipReason: () =>
        options.hasCapacityChange
          ? undefined
          : "no capacityChange option: the provider publishes no status.capacity for the cluster-autoscaler (PoolDriver.capacity)",
      run: () => scaleFromZero(host()),
    },
  ];
}

function isStringMap(value: unknown): value is Record<string, string> {
  return (
    typeof value === "object" &&
    value !== null &&
    !Array.isArray(value) &&
    Object.values(value).every((v) => typeof v === "string")
  );
}

/**
 * Reads the pool of `machinePool` as the autoscaler does and builds what it would put in the empty
 * node group's template; throws a {@link ConformanceError} where the autoscaler would find nothing or
 * silently lose part of it. `undefined` while the pool publishes no capacity yet.
 */
export async function autoscalerNodeTemplate(
  client: KubeClient,
  machinePool: AutoscalerMachinePoolView,
): Promise<AutoscalerNodeTemplate | undefined> {
  const ref = machinePool.spec?.template?.spec?.infrastructureRef;
  const namespace = machinePool.metadata?.namespace ?? "default";
  if (!ref?.apiGroup || !ref.kind || !ref.name) {
    throw new ConformanceError(
      "autoscaler.infrastructureRef",
      `MachinePool ${machinePool.metadata?.name} has infrastructureRef ${JSON.stringify(ref)}; the autoscaler needs its apiGroup, kind and name`,
    );
  }
  const group = (await client.request({ method: "GET", path: `/apis/${ref.apiGroup}` })) as {
    preferredVersion?: { version?: string };
  };
  const version = group.preferredVersion?.version;
  if (!version) {
    throw new ConformanceError(
      "autoscaler.infrastructureRef",
      `discovery names no preferred version of ${ref.apiGroup}, where the autoscaler looks ${ref.kind} up`,
    );
  }
  // The autoscaler's resource name: the kind lower-cased plus "s", whatever the CRD's plural is.
  const plural = `${ref.kind.toLowerCase()}s`;
  const resource: ResourceDescriptor<KubernetesObject & { status?: Record<string, unknown> }> = {
    group: ref.apiGroup,
    version,
    kind: ref.kind,
    plural,
    scope: "Namespaced",
    subresources: { status: true },
  };
  const infra = await client
    .get(resource, { namespace, name: ref.name })
    .catch((error: unknown) => {
      throw new ConformanceError(
        "autoscaler.infrastructureRef",
        `the autoscaler reads ${ref.kind} ${namespace}/${ref.name} as ${plural}.${version}.${ref.apiGroup} and gets ${error instanceof Error ? error.message : String(error)}; a kind whose plural is not its lower-cased name plus "s" is never found`,
      );
    });
  const published = infra.status?.capacity;
  if (published === undefined) return undefined;
  if (!isStringMap(published)) {
    throw new ConformanceError(
      "autoscaler.capacityStrings",
      `status.capacity is ${JSON.stringify(published).slice(0, 200)}: the autoscaler reads it as a map of strings and ignores all of it when one value is not (write "4", not 4)`,
    );
  }
  const capacity = new Map<string, number>();
  for (const [name, quantity] of Object.entries(published)) {
    try {
      capacity.set(name, parseQuantity(quantity));
    } catch (error) {
      throw new ConformanceError(
        "autoscaler.capacityQuantities",
        `status.capacity[${JSON.stringify(name)}] ${error instanceof Error ? error.message : String(error)}; the autoscaler drops it`,
      );
    }
  }
  const rawInfo = infra.status?.nodeInfo;
  if (rawInfo !== undefined && !isStringMap(rawInfo)) {
    throw new ConformanceError(
      "autoscaler.nodeInfo",
      `status.nodeInfo is ${JSON.stringify(rawInfo).slice(0, 200)}: the autoscaler reads it as a map of strings and ignores all of it when one value is not`,
    );
  }
  return {
    capacity,
    published,
    nodeInfo: {
      ...(rawInfo?.architecture !== undefined ? { architecture: rawInfo.architecture } : {}),
      ...(rawInfo?.operatingSystem !== undefined
        ? { operatingSystem: rawInfo.operatingSystem }
        : {}),
    },
  };
}

/** Why the template cannot scale the group from zero, or undefined. */
function templateProblem(template: AutoscalerNodeTemplate): string | undefined {
  for (const resource of ["cpu", "memory"]) {
    const value = template.capacity.get(resource);
    if (value === undefined || !(value > 0)) {
      return `autoscaler.canScaleFromZero: status.capacity ${JSON.stringify(template.published)} has no ${resource} above zero; the autoscaler scales a group from zero only with both cpu and memory`;
    }
  }
  const { architecture, operatingSystem } = template.nodeInfo;
  if (!architecture || !operatingSystem) {
    return `autoscaler.nodeInfo: status.nodeInfo is ${JSON.stringify(template.nodeInfo)}; the autoscaler labels the template Node kubernetes.io/arch and kubernetes.io/os from its architecture and operatingSystem`;
  }
  return undefined;
}

/** What the template says, independent of the order the pool lists it in. */
function canonical(template: AutoscalerNodeTemplate): string {
  const sorted = (record: object) => Object.entries(record).sort(([a], [b]) => (a < b ? -1 : 1));
  return JSON.stringify([sorted(template.published ?? {}), sorted(template.nodeInfo)]);
}

async function machinePoolOf(host: ScaleFromZeroHost, pool: ConformancePool) {
  return host.client.get(MachinePoolResource, { namespace: pool.namespace, name: pool.name });
}

async function scaleFromZero(host: ScaleFromZeroHost): Promise<void> {
  const change = host.capacityChange;
  if (!change) throw new Error("conformance: scaleFromZero needs the capacityChange option");
  // As a group the autoscaler scaled down: it ran an instance, now it has none.
  const pool = await host.createPool(1);
  await host.converged(pool, 1);
  await host.setReplicas(pool, 0);
  await host.converged(pool, 0);
  let before: AutoscalerNodeTemplate | undefined;
  await host.until(`${pool.name} to publish a capacity at 0 replicas`, async () => {
    const template = await autoscalerNodeTemplate(host.client, await machinePoolOf(host, pool));
    if (!template) {
      return "autoscaler.canScaleFromZero: the pool has no status.capacity at 0 replicas, so the autoscaler never scales it from zero";
    }
    const problem = templateProblem(template);
    if (problem) return problem;
    before = template;
    return undefined;
  });
  await host.steadyState(pool, 0);
  await host.client.mergePatch(
    host.pools,
    { namespace: pool.namespace, name: pool.name },
    { spec: change(host.poolSpec) },
  );
  await host.until(`${pool.name}'s capacity to follow its new spec at 0 replicas`, async () => {
    const machinePool = await machinePoolOf(host, pool);
    if ((machinePool.spec?.replicas ?? 0) !== 0) {
      throw new ConformanceError(
        "autoscaler.capacityFollowsSpec",
        `the MachinePool went to ${machinePool.spec?.replicas} replicas after a spec change; it must stay at 0`,
      );
    }
    const live = await host.provider.cloud.liveProviderIds(pool);
    if (live.length > 0) {
      throw new ConformanceError(
        "autoscaler.capacityFollowsSpec",
        `the pool launched ${live.length} instance(s) at 0 replicas to learn its capacity; publish it from the spec`,
      );
    }
    const template = await autoscalerNodeTemplate(host.client, machinePool);
    if (!template) {
      return "autoscaler.capacityFollowsSpec: the pool's status.capacity is gone after the spec change";
    }
    if (canonical(template) === (before ? canonical(before) : undefined)) {
      return `autoscaler.capacityFollowsSpec: status.capacity is still ${JSON.stringify(template.published)} and nodeInfo ${JSON.stringify(template.nodeInfo)} after the spec change (capacityChange must change what one instance offers)`;
    }
    return templateProblem(template);
  });
  await host.steadyState(pool, 0);
  await host.deletePool(pool);
}
