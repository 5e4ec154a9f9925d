import type { RuntimeLogger } from "@capi-ts/sdk";
import { clusterv1beta2 } from "@capi-ts/sdk/api";
import {
  setCondition,
  setV1Beta1Condition,
  setV1Beta1MirrorCondition,
  type V1Beta1ConditionInput,
} from "@capi-ts/sdk/conditions";
import {
  CLUSTER_API_GROUP,
  calculateCRDName,
  ensurePausedCondition,
  Finalizers,
  formatLabelValue,
  Labels,
  NodeUninitializedTaint,
  replicasManagedByExternalAutoscaler,
} from "@capi-ts/sdk/contract";
import { PatchHelper } from "@capi-ts/sdk/patch";
import {
  type InformerCache,
  type InformerHandler,
  isNotFound,
  NodeResource,
  type ReconcileRequest,
  type ReconcileResult,
  type ResourceDescriptor,
} from "@capi-ts/sdk/runtime";
import type { V1Node, V1OwnerReference, V1Taint } from "@kubernetes/client-node";
import type { WorkloadClusterCache, WorkloadConnection } from "./clustercache.js";
import type { ContractResolver, ResolvedKind } from "./contract-version.js";
import {
  asError,
  CorePanicError,
  clusterKey,
  groupOf,
  lowestNonZero,
  nestedBool,
  nestedString,
  wrap,
} from "./controller-helpers.js";
import {
  type ClusterObject,
  ClusterResource,
  CrdResource,
  type DeprecatedCondition,
  describeKey,
  type ExternalObject,
  isDefinedRef,
  isDeleting,
  jsonCopy,
  type MachinePoolObject,
  MachinePoolResource,
  type VersionedRef,
} from "./types.js";
import { defaultMachinePool, validateMachinePool } from "./webhook.js";
import type { RecordingWriter } from "./writes.js";

/** The referenced object does not exist (core wraps the NotFound and retries). */
class ExternalNotFoundError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ExternalNotFoundError";
  }
}

/** The readiness rule core applies to the InfraMachinePool. */
export type ProvisionedFrom = "ready" | "initialization";

export interface MachinePoolReconcilerOptions {
  provisionedFrom: ProvisionedFrom;
  nodeRefRequeueMs: number;
  defaulting: boolean;
  /** Refuse pools core's validating webhook would have rejected. */
  validation: boolean;
  /** The bootstrap stand-in fills in `dataSecretName` of pools that have no bootstrap at all. */
  bootstrapStandInServesPools: boolean;
}

export interface ReconcileNote {
  event: string;
  detail?: string;
}

/** What one reconcile did, besides writes. */
export interface ReconcileTrace {
  notes: ReconcileNote[];
}

/** A `cluster.x-k8s.io/v1beta2` Machine (generated type). */
type MachineObject = clusterv1beta2.Machine;
const MachineResource: ResourceDescriptor<MachineObject> = clusterv1beta2.MachineResource;

interface Scope {
  cluster: ClusterObject;
  mp: MachinePoolObject;
  imp?: ExternalObject;
  nodeRefMap?: Map<string, V1Node>;
  /** Machines of the pool (`getMachinesForMachinePool`), set for every normal reconcile. */
  machines?: MachineObject[];
  trace: ReconcileTrace;
  key: string;
}

export interface ReconcilerDeps {
  cache: InformerCache;
  writer: RecordingWriter;
  resolver: ContractResolver;
  /** Ensures the dynamic watch on a referenced kind (core's external ObjectTracker). */
  watchExternal: (kind: ResolvedKind) => Promise<void>;
  /**
   * Ensures the informer of a kind without adding a watch: core's cached client starts one on the
   * first read (the delete path reads but never watches).
   */
  readExternal: (resource: ResourceDescriptor) => Promise<void>;
  /** Ensures the watch of InfraMachines, mapped to their MachinePool by label. */
  watchInfraMachines: (resource: ResourceDescriptor) => Promise<void>;
  /** Core's ClusterCache: the only way to the workload cluster's Nodes. */
  clusterCache: WorkloadClusterCache;
  /** The handler the Node watch of a workload cluster feeds (`nodeToMachinePool`). */
  nodeHandler: () => InformerHandler<V1Node> | undefined;
  options: MachinePoolReconcilerOptions;
  log: RuntimeLogger;
}

const READY_V1BETA1_TYPES = ["BootstrapReady", "InfrastructureReady", "ReplicasReady"];
const OWNED_CONDITIONS = ["Paused", "Ready", ...READY_V1BETA1_TYPES];

function sameObjectRef(
  a: Pick<V1OwnerReference, "apiVersion" | "kind" | "name">,
  b: Pick<V1OwnerReference, "apiVersion" | "kind" | "name">,
): boolean {
  return groupOf(a.apiVersion) === groupOf(b.apiVersion) && a.kind === b.kind && a.name === b.name;
}

/** Go `reflect.DeepEqual` on two `[]string` where `undefined` is nil. */
function sameStringList(a: string[] | undefined, b: string[] | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  return a.length === b.length && a.every((value, i) => value === b[i]);
}

function setDeprecatedCounter(
  mp: MachinePoolObject,
  field: "readyReplicas" | "availableReplicas" | "unavailableReplicas",
  value: number,
): void {
  mp.status ??= {};
  mp.status.deprecated ??= {};
  mp.status.deprecated.v1beta1 ??= {};
  // int32 with omitempty in Go: zero is not serialised.
  if (value === 0) delete mp.status.deprecated.v1beta1[field];
  else mp.status.deprecated.v1beta1[field] = value;
}

function isNodeReady(node: V1Node): boolean {
  return node.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") ?? false;
}

function isNodeAvailable(node: V1Node, minReadySeconds: number, now: number): boolean {
  if (!isNodeReady(node)) return false;
  if (minReadySeconds === 0) return true;
  const ready = node.status?.conditions?.find((c) => c.type === "Ready");
  const since = ready?.lastTransitionTime ? new Date(ready.lastTransitionTime).getTime() : 0;
  return since > 0 && since + minReadySeconds * 1000 < now;
}

/** Go `semver.ParseTolerant` enough for Kubernetes versions: `v` prefix, missing minor/patch. */
function parseTolerant(version: string): number[] | undefined {
  const match = /^v?(\d+)(?:\.(\d+))?(?:\.(\d+))?(?:[-+].*)?$/.exec(version.trim());
  if (!match) return undefined;
  return [Number(match[1]), Number(match[2] ?? 0), Number(match[3] ?? 0)];
}

/** `statusVersions`: semver order, then text, then first-seen order; unparsable versions last. */
function sortStatusVersions(
  counts: { version: string; replicas: number; order: number }[],
): { version: string; replicas: number }[] | undefined {
  if (counts.length === 0) return undefined;
  const less = (a: (typeof counts)[number], b: (typeof counts)[number]): number => {
    const pa = parseTolerant(a.version);
    const pb = parseTolerant(b.version);
    if (pa && pb) {
      for (let i = 0; i < 3; i++) {
        const d = (pa[i] as number) - (pb[i] as number);
        if (d !== 0) return d;
      }
    } else if (pa) {
      return -1;
    } else if (pb) {
      return 1;
    }
    if (a.version !== b.version) return a.version < b.version ? -1 : 1;
    return a.order - b.order;
  };
  return [...counts].sort(less).map(({ version, replicas }) => ({ version, replicas }));
}

/** `VersionsFromMachines`: kubelet version (else `spec.version`) per Machine, oldest Machine first. */
function versionsFromMachines(
  machines: MachineObject[],
): { version: string; replicas: number }[] | undefined {
  const sorted = [...machines].sort((a, b) => {
    const ta = new Date(String(a.metadata?.creationTimestamp ?? 0)).getTime();
    const tb = new Date(String(b.metadata?.creationTimestamp ?? 0)).getTime();
    if (ta !== tb) return ta - tb;
    return (a.metadata?.name ?? "") < (b.metadata?.name ?? "") ? -1 : 1;
  });
  const counts: { version: string; replicas: number; order: number }[] = [];
  for (const machine of sorted) {
    const version = machine.status?.nodeInfo?.kubeletVersion || machine.spec?.version || "";
    if (!version) continue;
    const existing = counts.find((entry) => entry.version === version);
    if (existing) existing.replicas++;
    else counts.push({ version, replicas: 1, order: counts.length });
  }
  return sortStatusVersions(counts);
}

/** The label selector of a pool's Machines and InfraMachines (pool-name and cluster-name labels). */
function machineSelector(mp: MachinePoolObject): string {
  return `${Labels.MachinePoolName}=${formatLabelValue(mp.metadata?.name ?? "")},${Labels.ClusterName}=${mp.spec?.clusterName ?? ""}`;
}

/**
 * `computeDesiredMachine`: the Machine core applies for an InfraMachine — controller-owned by the pool,
 * the template's labels and annotations plus the pool-name and cluster-name labels, an empty
 * `dataSecretName`, the InfraMachine as `infrastructureRef`, and the Node's kubelet version.
 */
function computeDesiredMachine(
  mp: MachinePoolObject,
  infraMachine: ExternalObject,
  existing: MachineObject | undefined,
  node: V1Node | undefined,
): MachineObject {
  const labels: Record<string, string> = { ...(mp.spec?.template?.metadata?.labels ?? {}) };
  labels[Labels.MachinePoolName] = formatLabelValue(mp.metadata?.name ?? "");
  labels[Labels.ClusterName] = mp.spec?.clusterName ?? "";
  const annotations = { ...(mp.spec?.template?.metadata?.annotations ?? {}) };
  const metadata: MachineObject["metadata"] = {
    name: existing?.metadata?.name ?? infraMachine.metadata?.name ?? "",
    namespace: mp.metadata?.namespace ?? "",
    ownerReferences: [
      {
        apiVersion: `${CLUSTER_API_GROUP}/v1beta2`,
        kind: "MachinePool",
        name: mp.metadata?.name ?? "",
        uid: mp.metadata?.uid ?? "",
        controller: true,
        blockOwnerDeletion: true,
      },
    ],
    labels,
  };
  if (Object.keys(annotations).length > 0) metadata.annotations = annotations;
  if (existing?.metadata?.uid) metadata.uid = existing.metadata.uid;
  const [group] = (infraMachine.apiVersion ?? "").includes("/")
    ? (infraMachine.apiVersion ?? "").split("/")
    : [""];
  const spec: MachineObject["spec"] = {
    clusterName: mp.spec?.clusterName ?? "",
    bootstrap: { dataSecretName: "" },
    infrastructureRef: {
      apiGroup: group ?? "",
      kind: infraMachine.kind ?? "",
      name: infraMachine.metadata?.name ?? "",
    },
  };
  const kubeletVersion = node?.status?.nodeInfo?.kubeletVersion;
  if (kubeletVersion) spec.version = kubeletVersion;
  return {
    apiVersion: `${CLUSTER_API_GROUP}/v1beta2`,
    kind: "Machine",
    metadata,
    spec,
  };
}

/**
 * Core's SSA caching proxy skips an apply it already sent for the same resourceVersion; the emulator
 * skips an apply whose fields the Machine already has, which sends the same requests at steady state.
 */
function machineUnchanged(existing: MachineObject, desired: MachineObject): boolean {
  const subset = (want: unknown, have: unknown): boolean => {
    if (want === null || typeof want !== "object") return want === have;
    if (Array.isArray(want)) {
      return (
        Array.isArray(have) &&
        want.length === have.length &&
        want.every((item, i) => subset(item, have[i]))
      );
    }
    if (have === null || typeof have !== "object") return false;
    return Object.entries(want as Record<string, unknown>).every(([k, v]) =>
      subset(v, (have as Record<string, unknown>)[k]),
    );
  };
  return subset(desired.metadata, existing.metadata) && subset(desired.spec, existing.spec);
}

/** An error made of the errors of several reconcile phases (Go `kerrors.NewAggregate`). */
export class AggregateReconcileError extends Error {
  readonly errors: readonly Error[];
  constructor(errors: Error[]) {
    super(
      errors.length === 1
        ? (errors[0] as Error).message
        : `[${errors.map((e) => e.message).join(", ")}]`,
    );
    this.name = "AggregateReconcileError";
    this.errors = errors;
  }
}

type Phase = (scope: Scope) => Promise<ReconcileResult | undefined>;

/** How core's MachinePool controller words a field of the wrong type (readiness, then the rest). */
const poolAccessorError = (
  obj: ExternalObject,
  path: readonly string[],
  value: unknown,
  expected: string,
) =>
  expected === "bool"
    ? `failed to determine ${obj.kind} "${obj.metadata?.name}" readiness: .${path.join(".")} accessor error: ${JSON.stringify(value)} is of the type ${typeof value}, expected bool`
    : `failed to determine .${path.join(".")} on ${obj.apiVersion}, Kind=${obj.kind} "${obj.metadata?.name}": ${JSON.stringify(value)} is of the type ${typeof value}, expected ${expected}`;

/**
 * Core's MachinePool reconciler (`core/reconcilers/machinepool`) as it treats an InfraMachinePool,
 * ported phase by phase (v1.14.2), MachinePool Machines included.
 */
export class MachinePoolReconciler {
  private readonly deps: ReconcilerDeps;
  /** Last `spec.replicas` seen per MachinePool UID: the "old object" the defaulting webhook would see. */
  private readonly seenReplicas = new Map<string, number>();
  /** Last valid `spec.clusterName` per MachinePool UID: the webhook's old object for immutability. */
  private readonly seenClusterNames = new Map<string, string>();

  constructor(deps: ReconcilerDeps) {
    this.deps = deps;
  }

  private get options(): MachinePoolReconcilerOptions {
    return this.deps.options;
  }

  /**
   * The MachinePool webhooks, which real core runs at admission. A test API server has none, so
   * they run here, after the object was stored: a pool the validating webhook would refuse is left
   * alone with its answer as the error (thrown), and the defaulting webhook's changes are patched.
   * Returns true when it patched (the next event brings the reconcile). Core's controller calls it
   * before its rate limiter: an admission is no reconcile and does not spend the object's one
   * reconcile per interval.
   */
  async admit(request: ReconcileRequest, trace: ReconcileTrace): Promise<boolean> {
    const { cache, writer } = this.deps;
    const key = `${request.namespace ?? ""}/${request.name}`;
    // Read only: validation and defaulting each work on a copy.
    const mp = await cache.get(MachinePoolResource, request);
    if (!mp) return false;
    const note = (event: string, detail?: string) =>
      trace.notes.push(detail === undefined ? { event } : { event, detail });

    if (this.options.validation && !isDeleting(mp)) {
      const uid = mp.metadata?.uid ?? "";
      const previous = this.seenClusterNames.get(uid);
      // Validation sees the object as the defaulting webhook left it (it runs first).
      let denied: Error | undefined;
      try {
        denied = validateMachinePool(
          defaultMachinePool(jsonCopy(mp)),
          previous === undefined ? undefined : { spec: { clusterName: previous } },
        );
      } catch (error) {
        denied = new Error(
          `admission webhook "default.machinepool.cluster.x-k8s.io" denied the request: ${asError(error).message}`,
        );
      }
      if (denied) {
        note("WebhookDenied", denied.message);
        throw denied;
      }
      this.seenClusterNames.set(uid, mp.spec?.clusterName ?? "");
    }

    if (this.options.defaulting && !isDeleting(mp)) {
      const uid = mp.metadata?.uid ?? "";
      const before = jsonCopy(mp);
      const previous = this.seenReplicas.get(uid);
      const defaulted = defaultMachinePool(
        jsonCopy(mp),
        previous === undefined ? undefined : { spec: { replicas: previous } },
      );
      if (defaulted.spec?.replicas !== undefined)
        this.seenReplicas.set(uid, defaulted.spec.replicas);
      const helper = PatchHelper.snapshot(before, { resource: MachinePoolResource });
      if (helper.hasChanges(defaulted)) {
        note(
          "WebhookDefaulting",
          "applied MachinePool defaulting after the fact (no admission webhooks)",
        );
        await helper.apply(
          writer.transport(MachinePoolResource, {
            reason: "MachinePool defaulting webhook (emulated after admission)",
            machinePool: key,
          }),
          defaulted,
        );
        return true;
      }
    }
    return false;
  }

  async reconcile(
    request: ReconcileRequest,
    trace: ReconcileTrace,
  ): Promise<ReconcileResult | undefined> {
    const { cache, writer } = this.deps;
    const key = `${request.namespace ?? ""}/${request.name}`;
    const cached = await cache.get(MachinePoolResource, request);
    if (!cached) return undefined;
    const mp = jsonCopy(cached);
    const namespace = mp.metadata?.namespace ?? "";
    const name = mp.metadata?.name ?? "";
    const note = (event: string, detail?: string) =>
      trace.notes.push(detail === undefined ? { event } : { event, detail });

    const clusterName = mp.spec?.clusterName ?? "";
    const cluster = clusterName
      ? await cache.get(ClusterResource, { namespace, name: clusterName })
      : undefined;
    if (!cluster) {
      throw new Error(
        `failed to get cluster "${clusterName}" for machinepool "${name}" in namespace "${namespace}": clusters.cluster.x-k8s.io "${clusterName}" not found`,
      );
    }

    if (!isDeleting(mp) && !(mp.metadata?.finalizers ?? []).includes(Finalizers.MachinePool)) {
      const helper = PatchHelper.snapshot(mp, { resource: MachinePoolResource });
      mp.metadata ??= {};
      mp.metadata.finalizers = [...(mp.metadata.finalizers ?? []), Finalizers.MachinePool];
      note("FinalizerAdded");
      await helper.apply(
        writer.transport(MachinePoolResource, {
          reason: "add finalizer machinepool.cluster.x-k8s.io",
          machinePool: key,
        }),
        mp,
      );
      return undefined;
    }

    const helper = PatchHelper.snapshot(mp, { resource: MachinePoolResource });
    const paused = await ensurePausedCondition(
      writer.transport(MachinePoolResource, { reason: "Paused condition", machinePool: key }),
      cluster,
      mp,
      { resource: MachinePoolResource },
    );
    if (paused.isPaused || paused.requeue) {
      note(paused.isPaused ? "Paused" : "PausedConditionChanged");
      return undefined;
    }

    const scope: Scope = { cluster, mp, trace, key };
    let result: ReconcileResult = {};
    const errors: Error[] = [];
    let panic: CorePanicError | undefined;
    try {
      const phases: [Phase, string][] = [
        [(s) => this.setOwnerAndLabels(s), "failed to set MachinePool owner and labels"],
      ];
      if (isDeleting(mp)) {
        phases.push([(s) => this.reconcileDelete(s), "failed to reconcile delete"]);
      } else {
        phases.push(
          [(s) => this.reconcileBootstrap(s), "failed to reconcile bootstrap config"],
          [(s) => this.reconcileInfrastructure(s), "failed to reconcile infrastructure"],
          [(s) => this.getMachinesForMachinePool(s), "failed to get Machines for MachinePool"],
          [(s) => this.reconcileNodeRefs(s), "failed to reconcile nodeRefs"],
          [(s) => this.setMachinesUpToDate(s), "failed to set machines up to date"],
        );
      }
      for (const [phase, message] of phases) {
        try {
          const phaseResult = await phase(scope);
          if (errors.length === 0) result = lowestNonZero(result, phaseResult);
        } catch (error) {
          if (error instanceof CorePanicError) throw error;
          errors.push(wrap(error, message));
        }
      }
    } catch (error) {
      if (!(error instanceof CorePanicError)) throw error;
      // A Go panic still runs the deferred status patch, with the named error still nil.
      panic = error;
      note("Panic", error.message);
    }

    // The deferred part of core's Reconcile. A Go panic unwinds with the named error still nil: the
    // errors of the phases before it are lost and observedGeneration is bumped all the same.
    if (panic) errors.length = 0;
    try {
      this.updateStatus(scope);
    } catch (error) {
      errors.push(asError(error));
    }
    this.reconcilePhase(mp);
    setV1Beta1Summary(mp);
    const finalizerRemoved =
      isDeleting(mp) && !(mp.metadata?.finalizers ?? []).includes(Finalizers.MachinePool);
    try {
      await helper.apply(
        writer.transport(MachinePoolResource, {
          reason: finalizerRemoved
            ? "remove finalizer machinepool.cluster.x-k8s.io"
            : "MachinePool reconcile",
          machinePool: key,
        }),
        mp,
        {
          ownedConditions: OWNED_CONDITIONS,
          statusObservedGeneration: errors.length === 0,
        },
      );
    } catch (error) {
      // Once the finalizer is gone the object may vanish before its status patch: nothing left to do.
      const gone = finalizerRemoved && /404|NotFound|not found/.test(asError(error).message);
      if (!gone) errors.push(asError(error));
    }
    if (panic) throw panic;
    if (errors.length > 0) throw new AggregateReconcileError(errors);
    return result.requeueAfter ? result : undefined;
  }

  private async setOwnerAndLabels(scope: Scope): Promise<undefined> {
    const { mp, cluster } = scope;
    mp.metadata ??= {};
    mp.metadata.labels = {
      ...mp.metadata.labels,
      [Labels.ClusterName]: mp.spec?.clusterName ?? "",
    };
    const ref: V1OwnerReference = {
      apiVersion: `${CLUSTER_API_GROUP}/v1beta2`,
      kind: "Cluster",
      name: cluster.metadata?.name ?? "",
      uid: cluster.metadata?.uid ?? "",
    };
    const refs = [...(mp.metadata.ownerReferences ?? [])];
    const index = refs.findIndex((existing) => sameObjectRef(existing, ref));
    if (index < 0) refs.push(ref);
    else refs[index] = ref;
    mp.metadata.ownerReferences = refs;
    return undefined;
  }

  /**
   * `reconcileExternal`: read the referenced object at its contract version, ensure the watch, set the
   * MachinePool as controller owner and the cluster-name label (metadata-only patch), then the
   * failure fields (which panic in core).
   */
  private async reconcileExternal(scope: Scope, ref: VersionedRef): Promise<ExternalObject> {
    const { mp, key } = scope;
    const namespace = mp.metadata?.namespace ?? "";
    const resolved = await this.deps.resolver.resolve(ref);
    await this.deps.watchExternal(resolved);
    const cached = await this.deps.cache.get(resolved.resource, { namespace, name: ref.name });
    if (!cached) {
      throw new ExternalNotFoundError(
        `could not find ${ref.kind} ${namespace}/${ref.name} for MachinePool ${describeKey(mp)}, requeuing: failed to retrieve ${ref.kind} ${namespace}/${ref.name}: ${resolved.resource.plural}.${ref.apiGroup} "${ref.name}" not found`,
      );
    }
    const obj = jsonCopy(cached);
    const helper = PatchHelper.snapshot(obj, { resource: resolved.resource });
    setControllerReference(mp, obj);
    obj.metadata ??= {};
    obj.metadata.labels = {
      ...obj.metadata.labels,
      [Labels.ClusterName]: mp.spec?.clusterName ?? "",
    };
    const patched = await helper.apply(
      this.deps.writer.transport(resolved.resource, {
        reason: "set controller reference to the MachinePool and the cluster-name label",
        machinePool: key,
      }),
      obj,
    );
    if (patched.requests > 0)
      scope.trace.notes.push({
        event: "ExternalAdopted",
        detail: `${ref.kind} ${namespace}/${ref.name}`,
      });
    const failureReason = nestedString(obj, ["status", "failureReason"], poolAccessorError);
    const failureMessage = nestedString(obj, ["status", "failureMessage"], poolAccessorError);
    if (failureReason || failureMessage) {
      // Core's inverted nil guards: an existing status.deprecated is replaced by an empty one (its
      // v1beta1 conditions and counters dropped, and the deferred patch writes that), then the
      // assignment through the nil v1beta1 pointer panics. With no status.deprecated it panics at once.
      if (mp.status?.deprecated !== undefined && mp.status.deprecated !== null) {
        mp.status.deprecated = {};
      }
      const failure: { reason?: string; message?: string } = {};
      if (failureReason) failure.reason = failureReason;
      if (failureMessage) failure.message = failureMessage;
      throw new CorePanicError(`${ref.kind} ${namespace}/${ref.name}`, failure);
    }
    return obj;
  }

  private async reconcileBootstrap(scope: Scope): Promise<undefined> {
    const { mp } = scope;
    const bootstrap = mp.spec?.template?.spec?.bootstrap;
    const configRef = bootstrap?.configRef;
    mp.status ??= {};
    if (isDefinedRef(configRef)) {
      const config = await this.reconcileExternal(scope, configRef);
      if (isDeleting(config)) return undefined;
      const { contractVersion } = await this.deps.resolver.resolve(configRef);
      const created =
        nestedBool(
          config,
          contractVersion === "v1beta1"
            ? ["status", "ready"]
            : ["status", "initialization", "dataSecretCreated"],
          poolAccessorError,
        ) ?? false;
      setV1Beta1MirrorCondition(mp, "BootstrapReady", config, {
        value: created,
        reason: "WaitingForDataSecret",
        severity: "Info",
      });
      if (!created) {
        scope.trace.notes.push({ event: "WaitingForBootstrapData" });
        mp.status.initialization = {
          ...mp.status.initialization,
          bootstrapDataSecretCreated: false,
        };
        return undefined;
      }
      const secretName = nestedString(config, ["status", "dataSecretName"], poolAccessorError);
      if (!secretName) {
        throw new Error(
          `retrieved empty dataSecretName from bootstrap provider for MachinePool "${mp.metadata?.name}" in namespace "${mp.metadata?.namespace}"`,
        );
      }
      mp.spec.template.spec.bootstrap = {
        ...mp.spec.template.spec.bootstrap,
        dataSecretName: secretName,
      };
      mp.status.initialization = { ...mp.status.initialization, bootstrapDataSecretCreated: true };
      return undefined;
    }
    if (bootstrap?.dataSecretName !== undefined) {
      mp.status.initialization = { ...mp.status.initialization, bootstrapDataSecretCreated: true };
      setV1Beta1Condition(mp, { type: "BootstrapReady", status: "True" });
      return undefined;
    }
    if (this.options.bootstrapStandInServesPools) {
      // The webhook rejects such a pool in a real cluster; here the stand-in is about to fill it in.
      scope.trace.notes.push({ event: "WaitingForBootstrapStandIn" });
      return undefined;
    }
    throw new Error(
      `neither .spec.bootstrap.configRef nor .spec.bootstrap.dataSecretName are set for MachinePool "${mp.metadata?.name}" in namespace "${mp.metadata?.namespace}"`,
    );
  }

  private readProvisioned(imp: ExternalObject, contractVersion: string): boolean {
    if (this.options.provisionedFrom === "ready" || contractVersion === "v1beta1") {
      return nestedBool(imp, ["status", "ready"], poolAccessorError) ?? false;
    }
    const primary = nestedBool(imp, ["status", "initialization", "provisioned"], poolAccessorError);
    if (primary !== undefined) return primary;
    return nestedBool(imp, ["status", "ready"], poolAccessorError) ?? false;
  }

  private async reconcileInfrastructure(scope: Scope): Promise<undefined> {
    const { mp } = scope;
    const ref = mp.spec?.template?.spec?.infrastructureRef;
    const note = (event: string, detail?: string) =>
      scope.trace.notes.push(detail === undefined ? { event } : { event, detail });
    mp.status ??= {};
    if (!isDefinedRef(ref)) {
      throw new Error(
        "cannot get object - object reference not set (spec.template.spec.infrastructureRef)",
      );
    }
    let imp: ExternalObject;
    try {
      imp = await this.reconcileExternal(scope, ref);
    } catch (error) {
      if (error instanceof ExternalNotFoundError) {
        if (mp.status.initialization?.infrastructureProvisioned === true) {
          note("InfrastructureDeletedAfterReady");
          mp.status.deprecated ??= {};
          mp.status.deprecated.v1beta1 ??= {};
          mp.status.deprecated.v1beta1.failureReason = "InvalidConfiguration";
          mp.status.deprecated.v1beta1.failureMessage = `MachinePool infrastructure resource ${ref.kind} ${mp.metadata?.namespace}/${ref.name} has been deleted after being ready`;
        }
        setV1Beta1Condition(mp, {
          type: "InfrastructureReady",
          status: "False",
          reason: "IncorrectExternalRef",
          severity: "Error",
          message: `could not find infra reference of kind ${ref.kind} with name ${ref.name}`,
        });
      }
      throw error;
    }
    scope.imp = imp;
    if (isDeleting(imp)) return undefined;

    const { contractVersion } = await this.deps.resolver.resolve(ref);
    const provisioned = this.readProvisioned(imp, contractVersion);
    const wasProvisioned = mp.status.initialization?.infrastructureProvisioned === true;
    // HEAD re-computes the field every reconcile (G3); PR #14030 makes it sticky.
    const infrastructureProvisioned =
      this.options.provisionedFrom === "initialization"
        ? provisioned || wasProvisioned
        : provisioned;
    note(
      "InfrastructureRead",
      `resourceVersion=${imp.metadata?.resourceVersion ?? ""} provisioned=${provisioned} infrastructureProvisioned=${infrastructureProvisioned}`,
    );
    if (infrastructureProvisioned !== wasProvisioned) {
      note(
        infrastructureProvisioned
          ? "InfrastructureProvisioned"
          : "InfrastructureProvisionedReverted",
      );
    }
    mp.status.initialization = { ...mp.status.initialization, infrastructureProvisioned };
    setV1Beta1MirrorCondition(mp, "InfrastructureReady", imp, {
      value: provisioned,
      reason: "WaitingForInfrastructure",
      severity: "Info",
    });

    // Only through the workload cluster's connection, which core's ClusterCache opens from the
    // kubeconfig Secret once the Cluster's infrastructure is provisioned.
    const connection = this.deps.clusterCache.getClient(clusterKey(scope.cluster));
    let nodeRefsError: Error | undefined;
    try {
      scope.nodeRefMap = await this.nodeRefMap(connection);
    } catch (error) {
      nodeRefsError = asError(error);
    }
    let machinesError: Error | undefined;
    try {
      await this.reconcileMachines(scope, imp);
    } catch (error) {
      machinesError = asError(error);
    }
    if (machinesError || nodeRefsError) {
      const errors: Error[] = [];
      if (machinesError)
        errors.push(
          wrap(machinesError, `failed to reconcile Machines for MachinePool ${describeKey(mp)}`),
        );
      if (nodeRefsError)
        errors.push(
          wrap(nodeRefsError, `failed to get nodeRefs for MachinePool ${describeKey(mp)}`),
        );
      throw new AggregateReconcileError(errors);
    }

    if (!infrastructureProvisioned) {
      note("InfrastructureNotProvisioned");
      return undefined;
    }

    const rawList = imp.spec?.providerIDList;
    let providerIDList: string[] | undefined;
    if (rawList !== undefined && rawList !== null) {
      if (!Array.isArray(rawList) || rawList.some((id) => typeof id !== "string")) {
        throw new Error(
          `failed to retrieve data from infrastructure provider for MachinePool "${mp.metadata?.name}" in namespace "${mp.metadata?.namespace}": spec.providerIDList is not a list of strings`,
        );
      }
      providerIDList = rawList as string[];
    }
    const rawReplicas = imp.status?.replicas;
    if (rawReplicas !== undefined && rawReplicas !== null) {
      if (typeof rawReplicas !== "number" || !Number.isInteger(rawReplicas)) {
        throw new Error(
          `failed to retrieve replicas from infrastructure provider for MachinePool "${mp.metadata?.name}" in namespace "${mp.metadata?.namespace}": status.replicas is ${JSON.stringify(rawReplicas)}, not an integer`,
        );
      }
      mp.status.replicas = rawReplicas;
    }

    if ((providerIDList ?? []).length === 0 && (mp.status.replicas ?? 0) !== 0) {
      note("EmptyProviderIDListIgnored", `status.replicas=${mp.status.replicas}`);
      return undefined;
    }

    if (!sameStringList(mp.spec?.providerIDList, providerIDList)) {
      note(
        "ProviderIDListCopied",
        `${JSON.stringify(mp.spec?.providerIDList ?? null)} -> ${JSON.stringify(providerIDList ?? null)}`,
      );
      note("DeprecatedCountersReset");
      if (providerIDList === undefined) delete mp.spec.providerIDList;
      else mp.spec.providerIDList = [...providerIDList];
      setDeprecatedCounter(mp, "readyReplicas", 0);
      setDeprecatedCounter(mp, "availableReplicas", 0);
      setDeprecatedCounter(mp, "unavailableReplicas", mp.status.replicas ?? 0);
    }
    return undefined;
  }

  private async nodeRefMap(connection: WorkloadConnection): Promise<Map<string, V1Node>> {
    const nodes = await connection.cache.list(NodeResource);
    const map = new Map<string, V1Node>();
    for (const node of nodes) {
      const id = node.spec?.providerID;
      if (id) map.set(id, node);
    }
    return map;
  }

  /** `watchClusterNodes`: only once the control plane is initialized, and only while connected. */
  private watchClusterNodes(cluster: ClusterObject): void {
    const initialized = (cluster.status?.conditions ?? []).some(
      (c) => c.type === "ControlPlaneInitialized" && c.status === "True",
    );
    if (!initialized) return;
    const handler = this.deps.nodeHandler();
    if (!handler) return;
    this.deps.clusterCache.watchNodes(clusterKey(cluster), "machinepool-watchNodes", handler);
  }

  private async reconcileNodeRefs(scope: Scope): Promise<ReconcileResult | undefined> {
    const { mp } = scope;
    this.watchClusterNodes(scope.cluster);
    if (isDeleting(mp)) return undefined;
    mp.status ??= {};
    const readyReplicas = mp.status.deprecated?.v1beta1?.readyReplicas ?? 0;
    const nodeRefs = mp.status.nodeRefs ?? [];
    if ((mp.status.replicas ?? 0) === readyReplicas && nodeRefs.length === readyReplicas) {
      if (scope.nodeRefMap) {
        const byName = new Map(
          [...scope.nodeRefMap.values()].map((node) => [node.metadata?.name, node]),
        );
        const valid = nodeRefs.every((ref) => {
          const node = byName.get(ref.name);
          return node !== undefined && node.metadata?.uid === ref.uid;
        });
        if (valid) {
          setV1Beta1Condition(mp, { type: "ReplicasReady", status: "True" });
          return undefined;
        }
      }
    }
    if ((mp.spec?.providerIDList ?? []).length === 0 && mp.spec?.replicas !== 0) {
      scope.trace.notes.push({ event: "WaitingForProviderIDs" });
      return undefined;
    }
    const connection = this.deps.clusterCache.getClient(clusterKey(scope.cluster));
    await this.deleteRetiredNodes(scope, connection, nodeRefs, mp.spec?.providerIDList ?? []);
    if (!scope.nodeRefMap) throw new Error("failed to get Node references");

    const minReadySeconds = mp.spec?.template?.spec?.minReadySeconds ?? 0;
    const now = Date.now();
    let ready = 0;
    let available = 0;
    const references: { apiVersion: string; kind: string; name: string; uid: string }[] = [];
    for (const providerID of mp.spec?.providerIDList ?? []) {
      if (!providerID) continue;
      const node = scope.nodeRefMap.get(providerID);
      if (!node) continue;
      if (isNodeReady(node)) {
        ready++;
        if (isNodeAvailable(node, minReadySeconds, now)) available++;
      }
      references.push({
        apiVersion: "v1",
        kind: "Node",
        name: node.metadata?.name ?? "",
        uid: node.metadata?.uid ?? "",
      });
    }
    if (references.length === 0 && (mp.spec?.providerIDList ?? []).length !== 0) {
      scope.trace.notes.push({ event: "NoMatchingNodes" });
      return undefined;
    }
    setDeprecatedCounter(mp, "readyReplicas", ready);
    setDeprecatedCounter(mp, "availableReplicas", available);
    setDeprecatedCounter(mp, "unavailableReplicas", (mp.status.replicas ?? 0) - available);
    if (references.length > 0) mp.status.nodeRefs = references;
    else delete mp.status.nodeRefs;
    await this.patchNodes(scope, connection, references);
    if ((mp.status.replicas ?? 0) !== ready || references.length !== ready) {
      setV1Beta1Condition(mp, {
        type: "ReplicasReady",
        status: "False",
        reason: "WaitingForReplicasReady",
        severity: "Info",
      });
      return { requeueAfter: this.options.nodeRefRequeueMs };
    }
    setV1Beta1Condition(mp, { type: "ReplicasReady", status: "True" });
    return undefined;
  }

  /** `deleteRetiredNodes`: Nodes in `nodeRefs` whose providerID is not in the list are deleted. */
  private async deleteRetiredNodes(
    scope: Scope,
    connection: WorkloadConnection,
    nodeRefs: NonNullable<NonNullable<MachinePoolObject["status"]>["nodeRefs"]>,
    providerIDList: string[],
  ): Promise<void> {
    const byProviderID = new Map<string, V1Node>();
    for (const ref of nodeRefs) {
      if (!ref.name) continue;
      const node = await connection.cache.get(NodeResource, { name: ref.name });
      const id = node?.spec?.providerID;
      if (!node || !id) continue;
      byProviderID.set(id, node);
    }
    for (const id of providerIDList) if (id) byProviderID.delete(id);
    for (const [providerID, node] of byProviderID) {
      scope.trace.notes.push({
        event: "RetiredNodeDeleted",
        detail: `${node.metadata?.name} (${providerID})`,
      });
      try {
        await this.deps.writer.delete(
          NodeResource,
          { name: node.metadata?.name ?? "" },
          {
            reason: `providerID ${providerID} is no longer in spec.providerIDList`,
            machinePool: scope.key,
          },
          connection.client,
        );
      } catch (error) {
        if (!isNotFound(error)) throw wrap(error, "failed to delete Node");
      }
    }
  }

  /** `patchNodes`: owner annotations and removal of the uninitialized taint. */
  private async patchNodes(
    scope: Scope,
    connection: WorkloadConnection,
    references: { name: string }[],
  ): Promise<void> {
    const { mp } = scope;
    const desired: Record<string, string> = {
      "cluster.x-k8s.io/cluster-name": mp.spec?.clusterName ?? "",
      "cluster.x-k8s.io/cluster-namespace": mp.metadata?.namespace ?? "",
      "cluster.x-k8s.io/owner-kind": "MachinePool",
      "cluster.x-k8s.io/owner-name": mp.metadata?.name ?? "",
    };
    for (const ref of references) {
      const node = await connection.cache.get(NodeResource, { name: ref.name });
      if (!node) continue;
      const annotations = node.metadata?.annotations ?? {};
      const changed: Record<string, string> = {};
      for (const [k, v] of Object.entries(desired)) if (annotations[k] !== v) changed[k] = v;
      const taints = node.spec?.taints ?? [];
      const kept = taints.filter(
        (t: V1Taint) =>
          !(t.key === NodeUninitializedTaint.key && t.effect === NodeUninitializedTaint.effect),
      );
      const patch: Record<string, unknown> = {};
      if (Object.keys(changed).length > 0) patch.metadata = { annotations: changed };
      if (kept.length !== taints.length) patch.spec = { taints: kept.length > 0 ? kept : null };
      if (Object.keys(patch).length === 0) continue;
      await this.deps.writer.mergePatch(
        NodeResource,
        { name: ref.name },
        patch,
        {
          reason:
            kept.length !== taints.length
              ? "set owner annotations and remove the node.cluster.x-k8s.io/uninitialized taint"
              : "set owner annotations",
          machinePool: scope.key,
        },
        undefined,
        connection.client,
      );
    }
  }

  private async reconcileDelete(scope: Scope): Promise<undefined> {
    const { mp } = scope;
    let done: boolean;
    try {
      done = await this.reconcileDeleteExternal(scope);
    } catch (error) {
      throw new Error(`failed deleting external references: ${asError(error).message}`);
    }
    if (!done) {
      scope.trace.notes.push({ event: "WaitingForExternalDeletion" });
      return undefined;
    }
    if (!this.nodeDeleteTimeoutPassed(mp)) {
      const nodeRefs = mp.status?.nodeRefs ?? [];
      if (nodeRefs.length > 0) {
        try {
          const connection = this.deps.clusterCache.getClient(clusterKey(scope.cluster));
          await this.deleteRetiredNodes(scope, connection, nodeRefs, mp.spec?.providerIDList ?? []);
        } catch (error) {
          throw new Error(`failed deleting nodes: ${asError(error).message}`);
        }
      }
    } else {
      scope.trace.notes.push({ event: "NodeDeleteTimeoutPassed" });
    }
    mp.metadata ??= {};
    mp.metadata.finalizers = (mp.metadata.finalizers ?? []).filter(
      (f) => f !== Finalizers.MachinePool,
    );
    scope.trace.notes.push({ event: "FinalizerRemoved" });
    return undefined;
  }

  private async reconcileDeleteExternal(scope: Scope): Promise<boolean> {
    const { mp } = scope;
    const namespace = mp.metadata?.namespace ?? "";
    const refs = [
      mp.spec?.template?.spec?.bootstrap?.configRef,
      mp.spec?.template?.spec?.infrastructureRef,
    ];
    const found: { resource: ResourceDescriptor; name: string }[] = [];
    for (const ref of refs) {
      if (!isDefinedRef(ref)) continue;
      const resolved = await this.deps.resolver.resolve(ref);
      await this.deps.readExternal(resolved.resource);
      const obj = await this.deps.cache.get(resolved.resource, { namespace, name: ref.name });
      if (obj) found.push({ resource: resolved.resource, name: ref.name });
    }
    for (const { resource, name } of found) {
      await this.deps.writer.delete(
        resource,
        { namespace, name },
        {
          reason: "MachinePool is being deleted: delete its referenced object",
          machinePool: scope.key,
        },
      );
    }
    return found.length === 0;
  }

  private nodeDeleteTimeoutPassed(mp: MachinePoolObject): boolean {
    const timeout = mp.spec?.template?.spec?.deletion?.nodeDeletionTimeoutSeconds;
    const deletedAt = mp.metadata?.deletionTimestamp;
    if (!deletedAt || timeout === undefined || timeout === 0) return false;
    return new Date(deletedAt).getTime() + timeout * 1000 < Date.now();
  }

  /**
   * `reconcileMachines`: with `status.infrastructureMachineKind` set, one Machine per InfraMachine
   * labelled for the pool (created or updated by server-side apply), and a watch on that kind.
   */
  private async reconcileMachines(scope: Scope, imp: ExternalObject): Promise<void> {
    const { mp } = scope;
    const rawKind = imp.status?.infrastructureMachineKind;
    if (rawKind === undefined || rawKind === null) return;
    if (typeof rawKind !== "string") {
      throw new Error(
        `failed to retrieve infraMachineKind from infrastructure provider for MachinePool ${describeKey(mp)}: failed to json-decode field "status.infrastructureMachineKind" value from "${imp.apiVersion}, Kind=${imp.kind}": json: cannot unmarshal ${Array.isArray(rawKind) ? "array" : typeof rawKind} into Go value of type string`,
      );
    }
    const namespace = mp.metadata?.namespace ?? "";
    const selector = machineSelector(mp);
    const [group, version] = (imp.apiVersion ?? "").includes("/")
      ? (imp.apiVersion ?? "").split("/")
      : ["", imp.apiVersion ?? ""];
    const crd = await this.deps.cache.get(CrdResource, {
      name: calculateCRDName(group ?? "", rawKind),
    });
    if (!crd?.spec?.versions?.some((v) => v.name === version && v.served !== false)) {
      throw new Error(
        `failed to list infra machines for MachinePool "${mp.metadata?.name}" in namespace "${namespace}": no matches for kind "${rawKind}List" in version "${imp.apiVersion}"`,
      );
    }
    const resource: ResourceDescriptor<ExternalObject> = {
      group: group ?? "",
      version: version ?? "",
      kind: rawKind,
      plural: crd.spec?.names?.plural ?? "",
      scope: crd.spec?.scope === "Cluster" ? "Cluster" : "Namespaced",
      subresources: { status: true },
    };
    await this.deps.watchInfraMachines(resource);
    const infraMachines = await this.deps.cache.list(resource, {
      namespace,
      labelSelector: selector,
    });
    const machines = await this.deps.cache.list(MachineResource, {
      namespace,
      labelSelector: selector,
    });
    await this.createOrUpdateMachines(scope, machines, infraMachines);
  }

  private async createOrUpdateMachines(
    scope: Scope,
    machines: MachineObject[],
    infraMachines: ExternalObject[],
  ): Promise<void> {
    const { mp } = scope;
    const byInfraName = new Map<string, MachineObject>();
    for (const machine of machines) {
      byInfraName.set(machine.spec?.infrastructureRef?.name ?? "", machine);
    }
    const created: MachineObject[] = [];
    const errors: Error[] = [];
    for (const infraMachine of infraMachines) {
      const providerID = infraMachine.spec?.providerID;
      const node = typeof providerID === "string" ? scope.nodeRefMap?.get(providerID) : undefined;
      const existing = byInfraName.get(infraMachine.metadata?.name ?? "");
      const desired = computeDesiredMachine(mp, infraMachine, existing, node);
      if (existing) {
        if (machineUnchanged(existing, desired)) continue;
        try {
          await this.deps.writer.apply(MachineResource, desired, "machinepool-controller", {
            reason: `update the Machine of ${infraMachine.kind} ${infraMachine.metadata?.name}`,
            machinePool: scope.key,
          });
        } catch (error) {
          errors.push(
            wrap(
              error,
              `failed to update Machine "${describeKey(desired)}": failed to apply Machine`,
            ),
          );
        }
        continue;
      }
      try {
        await this.deps.writer.apply(MachineResource, desired, "machinepool-controller", {
          reason: `create a Machine for ${infraMachine.kind} ${infraMachine.metadata?.name}`,
          machinePool: scope.key,
        });
        scope.trace.notes.push({ event: "MachineCreated", detail: desired.metadata?.name ?? "" });
        created.push(desired);
      } catch (error) {
        errors.push(
          wrap(
            error,
            `failed to create new Machine for infraMachine "${infraMachine.metadata?.name}" in namespace "${infraMachine.metadata?.namespace}": failed to apply Machine`,
          ),
        );
      }
    }
    // Core polls its cache (every 100 ms, for up to 10 s) until each new Machine shows up.
    for (const machine of created) {
      const deadline = Date.now() + 10_000;
      const key = {
        namespace: machine.metadata?.namespace ?? "",
        name: machine.metadata?.name ?? "",
      };
      while (!(await this.deps.cache.get(MachineResource, key))) {
        if (Date.now() > deadline) {
          errors.push(
            new Error(
              `failed to wait for machines to be created: failed waiting for machine object ${key.namespace}/${key.name} to be created: context deadline exceeded`,
            ),
          );
          break;
        }
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
    if (errors.length > 0) {
      throw wrap(
        new AggregateReconcileError(errors),
        `failed to create machines for MachinePool "${mp.metadata?.name}" in namespace "${mp.metadata?.namespace}"`,
      );
    }
  }

  /** `getMachinesForMachinePool`: the pool's Machines, minus those another controller owns. */
  private async getMachinesForMachinePool(scope: Scope): Promise<undefined> {
    const { mp } = scope;
    const machines = await this.deps.cache.list(MachineResource, {
      namespace: mp.metadata?.namespace ?? "",
      labelSelector: machineSelector(mp),
    });
    scope.machines = machines.filter((machine) => {
      const controller = (machine.metadata?.ownerReferences ?? []).find((r) => r.controller);
      return !controller || controller.uid === mp.metadata?.uid;
    });
    return undefined;
  }

  /** `setMachinesUptoDate`: every Machine of the pool is UpToDate unless it is being deleted. */
  private async setMachinesUpToDate(scope: Scope): Promise<undefined> {
    const errors: Error[] = [];
    for (const cached of scope.machines ?? []) {
      const machine = jsonCopy(cached);
      const helper = PatchHelper.snapshot(machine, { resource: MachineResource });
      setCondition(
        machine,
        isDeleting(machine)
          ? {
              type: "UpToDate",
              status: "False",
              reason: "NotUpToDate",
              message: "Machine is being deleted",
            }
          : { type: "UpToDate", status: "True", reason: "UpToDate" },
      );
      try {
        await helper.apply(
          this.deps.writer.transport(MachineResource, {
            reason: "UpToDate condition of a MachinePool Machine",
            machinePool: scope.key,
          }),
          machine,
          { ownedConditions: ["UpToDate"] },
        );
      } catch (error) {
        errors.push(asError(error));
      }
    }
    if (errors.length > 0) throw new AggregateReconcileError(errors);
    return undefined;
  }

  /** `updateStatus` / `setReplicas`: from the Nodes, or from the Machines' conditions (R11). */
  private updateStatus(scope: Scope): void {
    const { mp, imp } = scope;
    if (!imp) return;
    mp.status ??= {};
    const machineKind = imp.status?.infrastructureMachineKind;
    if (machineKind !== undefined && machineKind !== null && typeof machineKind !== "string") {
      throw new Error(
        `determining if there are machine pool machines: failed to lookup infrastructureMachineKind: .status.infrastructureMachineKind accessor error: ${JSON.stringify(machineKind)} is of the type ${typeof machineKind}, expected string`,
      );
    }
    if (typeof machineKind === "string" && machineKind !== "") {
      const machines = scope.machines ?? [];
      const count = (type: string) =>
        machines.filter((m) =>
          (m.status?.conditions ?? []).some((c) => c.type === type && c.status === "True"),
        ).length;
      mp.status.readyReplicas = count("Ready");
      mp.status.availableReplicas = count("Available");
      mp.status.upToDateReplicas = count("UpToDate");
      const versions = versionsFromMachines(machines);
      if (versions) mp.status.versions = versions;
      else delete mp.status.versions;
      return;
    }
    const replicas = mp.status.replicas;
    for (const field of ["readyReplicas", "availableReplicas"] as const) {
      if (replicas === undefined) delete mp.status[field];
      else mp.status[field] = replicas;
    }
    if (mp.spec?.replicas === undefined) delete mp.status.upToDateReplicas;
    else mp.status.upToDateReplicas = mp.spec.replicas;
    const versions = this.versionsFromNodeRefs(mp, scope.nodeRefMap);
    if (versions) mp.status.versions = versions;
    else delete mp.status.versions;
  }

  private versionsFromNodeRefs(
    mp: MachinePoolObject,
    nodeRefMap: Map<string, V1Node> | undefined,
  ): { version: string; replicas: number }[] | undefined {
    const nodeRefs = mp.status?.nodeRefs ?? [];
    if (nodeRefs.length === 0 || !nodeRefMap || nodeRefMap.size === 0) return undefined;
    const byName = new Map([...nodeRefMap.values()].map((node) => [node.metadata?.name, node]));
    const counts: { version: string; replicas: number; order: number }[] = [];
    for (const ref of nodeRefs) {
      const version = byName.get(ref.name)?.status?.nodeInfo?.kubeletVersion;
      if (!version) continue;
      const existing = counts.find((entry) => entry.version === version);
      if (existing) existing.replicas++;
      else counts.push({ version, replicas: 1, order: counts.length });
    }
    return sortStatusVersions(counts);
  }

  /** `reconcilePhase`: later rules override earlier ones. */
  private reconcilePhase(mp: MachinePoolObject): void {
    mp.status ??= {};
    const status = mp.status;
    if (!status.phase) status.phase = "Pending";
    const provisioned = status.initialization?.infrastructureProvisioned === true;
    if (status.initialization?.bootstrapDataSecretCreated === true && !provisioned)
      status.phase = "Provisioning";
    if ((status.nodeRefs ?? []).length !== 0) status.phase = "Provisioned";
    const readyReplicas = status.deprecated?.v1beta1?.readyReplicas ?? 0;
    const desired = mp.spec?.replicas;
    const external = replicasManagedByExternalAutoscaler(mp);
    if (provisioned && desired !== undefined && desired === readyReplicas) status.phase = "Running";
    if (provisioned && desired !== undefined && desired > readyReplicas)
      status.phase = external ? "Scaling" : "ScalingUp";
    if (provisioned && desired !== undefined && desired < readyReplicas)
      status.phase = external ? "Scaling" : "ScalingDown";
    if (isDeleting(mp)) status.phase = "Deleting";
  }
}

/**
 * Go `controllerutil.SetControllerReference(mp, obj)`: fails with "already owned" if another
 * controller reference exists; otherwise upserts the MachinePool reference (matched by group, kind,
 * name).
 */
function setControllerReference(mp: MachinePoolObject, obj: ExternalObject): void {
  const ref: V1OwnerReference = {
    apiVersion: `${CLUSTER_API_GROUP}/v1beta2`,
    kind: "MachinePool",
    name: mp.metadata?.name ?? "",
    uid: mp.metadata?.uid ?? "",
    controller: true,
    blockOwnerDeletion: true,
  };
  obj.metadata ??= {};
  const refs = [...(obj.metadata.ownerReferences ?? [])];
  const existing = refs.find((r) => r.controller === true);
  if (existing && !sameObjectRef(existing, ref)) {
    throw new Error(
      `Object ${describeKey(obj)} is already owned by another ${existing.kind} controller ${existing.name} (a provider must not set a controller owner reference on its ${obj.kind}: contract R22)`,
    );
  }
  const index = refs.findIndex((r) => sameObjectRef(r, ref));
  if (index < 0) refs.push(ref);
  else refs[index] = ref;
  obj.metadata.ownerReferences = refs;
}

/** `conditionGroup.mergePriority`: False/Error, False/Warning, False/Info, True, Unknown, else 99. */
function mergePriority(c: DeprecatedCondition): number {
  if (c.status === "False") {
    if (c.severity === "Error") return 0;
    if (c.severity === "Warning") return 1;
    if (c.severity === "Info") return 2;
    return 99;
  }
  if (c.status === "True") return 3;
  if (c.status === "Unknown") return 4;
  return 99;
}

/**
 * Deprecated v1beta1 `SetSummary(Ready ← BootstrapReady, InfrastructureReady, ReplicasReady)` with the
 * default merge strategy: conditions are grouped by status and severity, the group with the best merge
 * priority decides (a False one without a known severity ranks last, after Unknown); its first condition
 * in the listed order gives reason and message. A top group that is False keeps its severity (even
 * none); any other non-True top group gives Unknown.
 */
function setV1Beta1Summary(mp: MachinePoolObject): void {
  const all = (mp.status?.deprecated?.v1beta1?.conditions ?? []) as DeprecatedCondition[];
  const inScope = all.filter((c) => READY_V1BETA1_TYPES.includes(c.type));
  if (inScope.length === 0) return;
  const groups: { status: string; severity: string; conditions: DeprecatedCondition[] }[] = [];
  for (const c of inScope) {
    const severity = c.severity ?? "";
    const group = groups.find((g) => g.status === c.status && g.severity === severity);
    if (group) group.conditions.push(c);
    else groups.push({ status: c.status, severity, conditions: [c] });
  }
  // Go's sort.Sort is an insertion sort at this size: stable.
  const rank = (g: (typeof groups)[number]) =>
    mergePriority({ type: "", status: g.status, severity: g.severity, lastTransitionTime: "" });
  const top = [...groups].sort((a, b) => rank(a) - rank(b))[0] as (typeof groups)[number];
  if (top.status === "True") {
    setV1Beta1Condition(mp, { type: "Ready", status: "True" });
    return;
  }
  const first =
    READY_V1BETA1_TYPES.map((type) => top.conditions.find((c) => c.type === type)).find(
      (c) => c !== undefined,
    ) ?? (top.conditions[0] as DeprecatedCondition);
  const input: V1Beta1ConditionInput = {
    type: "Ready",
    status: top.status === "False" ? "False" : "Unknown",
  };
  if (first.reason) input.reason = first.reason;
  if (first.message) input.message = first.message;
  if (top.status === "False" && top.severity)
    input.severity = top.severity as V1Beta1ConditionInput["severity"];
  setV1Beta1Condition(mp, input);
}
