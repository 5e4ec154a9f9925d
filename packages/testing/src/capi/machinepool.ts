import {
  CLUSTER_API_GROUP,
  ensurePausedCondition,
  Finalizers,
  type InformerCache,
  Labels,
  NodeResource,
  NodeUninitializedTaint,
  PatchHelper,
  type ReconcileRequest,
  type ReconcileResult,
  type ResourceDescriptor,
  type RuntimeLogger,
  replicasManagedByExternalAutoscaler,
  setV1Beta1Condition,
  setV1Beta1MirrorCondition,
  type V1Beta1ConditionInput,
} from "@capi-ts/sdk";
import type { V1Node, V1OwnerReference, V1Taint } from "@kubernetes/client-node";
import type { ContractResolver, ResolvedKind } from "./contract-version.js";
import {
  type ClusterObject,
  ClusterResource,
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
import { defaultMachinePool } from "./webhook.js";
import type { RecordingWriter } from "./writes.js";

/**
 * What core's MachinePool controller does when an InfraMachinePool or bootstrap config carries
 * `status.failureReason` / `status.failureMessage`: it dereferences a nil pointer (inverted guards in
 * `reconcileExternal`, contract G4) and controller-runtime turns the panic into a reconcile error
 * that repeats forever. The emulator raises this error instead, after the same writes core makes
 * before and after the panic (the object's owner/label patch, then the deferred MachinePool patch).
 */
export class CorePanicError extends Error {
  /** `Kind namespace/name` of the object that carries the failure fields. */
  readonly object: string;
  /** The failure fields found. */
  readonly failure: { reason?: string; message?: string };

  /** Creates the error. */
  constructor(object: string, failure: { reason?: string; message?: string }) {
    super(
      `core would panic: ${object} has ${[failure.reason !== undefined ? `status.failureReason=${JSON.stringify(failure.reason)}` : "", failure.message !== undefined ? `status.failureMessage=${JSON.stringify(failure.message)}` : ""].filter(Boolean).join(" and ")}; core's MachinePool controller dereferences a nil pointer on these fields (contract G4) and never progresses. Report terminal failures with conditions instead`,
    );
    this.name = "CorePanicError";
    this.object = object;
    this.failure = failure;
  }
}

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

interface Scope {
  cluster: ClusterObject;
  mp: MachinePoolObject;
  imp?: ExternalObject;
  nodeRefMap?: Map<string, V1Node>;
  trace: ReconcileTrace;
  key: string;
}

export interface ReconcilerDeps {
  cache: InformerCache;
  writer: RecordingWriter;
  resolver: ContractResolver;
  /** Ensures the dynamic watch on a referenced kind (core's external ObjectTracker). */
  watchExternal: (kind: ResolvedKind) => Promise<void>;
  options: MachinePoolReconcilerOptions;
  log: RuntimeLogger;
}

const READY_V1BETA1_TYPES = ["BootstrapReady", "InfrastructureReady", "ReplicasReady"];
const OWNED_CONDITIONS = ["Paused", "Ready", ...READY_V1BETA1_TYPES];

function groupOf(apiVersion: string | undefined): string {
  if (!apiVersion) return "";
  const slash = apiVersion.indexOf("/");
  return slash < 0 ? "" : apiVersion.slice(0, slash);
}

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

/** Reads `status.<path>` as a bool like `unstructured.NestedBool`: absent → undefined, wrong type → error. */
function nestedBool(obj: ExternalObject, path: string[]): boolean | undefined {
  let value: unknown = obj;
  for (const key of path) {
    if (value === null || typeof value !== "object") return undefined;
    value = (value as Record<string, unknown>)[key];
  }
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "boolean") {
    throw new Error(
      `failed to determine ${obj.kind} "${obj.metadata?.name}" readiness: .${path.join(".")} accessor error: ${JSON.stringify(value)} is of the type ${typeof value}, expected bool`,
    );
  }
  return value;
}

function nestedString(obj: ExternalObject, path: string[]): string | undefined {
  let value: unknown = obj;
  for (const key of path) {
    if (value === null || typeof value !== "object") return undefined;
    value = (value as Record<string, unknown>)[key];
  }
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "string") {
    throw new Error(
      `failed to determine .${path.join(".")} on ${obj.apiVersion}, Kind=${obj.kind} "${obj.metadata?.name}": ${JSON.stringify(value)} is of the type ${typeof value}, expected string`,
    );
  }
  return value;
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

function compareSemver(a: string, b: string): number {
  const parse = (v: string) => /^v?(\d+)\.(\d+)\.(\d+)/.exec(v)?.slice(1).map(Number);
  const pa = parse(a);
  const pb = parse(b);
  if (!pa || !pb) return 0;
  for (let i = 0; i < 3; i++) {
    const d = (pa[i] as number) - (pb[i] as number);
    if (d !== 0) return d;
  }
  return 0;
}

function lowestNonZero(a: ReconcileResult, b: ReconcileResult | undefined): ReconcileResult {
  if (!b?.requeueAfter) return a;
  if (!a.requeueAfter || b.requeueAfter < a.requeueAfter) return { requeueAfter: b.requeueAfter };
  return a;
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

function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}

function wrap(error: unknown, message: string): Error {
  if (error instanceof CorePanicError) return error;
  const inner = asError(error);
  const wrapped = new Error(`${message}: ${inner.message}`, { cause: inner });
  return wrapped;
}

type Phase = (scope: Scope) => Promise<ReconcileResult | undefined>;

/**
 * Core's MachinePool reconciler (`core/reconcilers/machinepool`) as it treats an InfraMachinePool,
 * ported phase by phase. MachinePool Machines (MPM) are not emulated.
 */
export class MachinePoolReconciler {
  private readonly deps: ReconcilerDeps;
  /** Last `spec.replicas` seen per MachinePool UID: the "old object" the defaulting webhook would see. */
  private readonly seenReplicas = new Map<string, number>();

  constructor(deps: ReconcilerDeps) {
    this.deps = deps;
  }

  private get options(): MachinePoolReconcilerOptions {
    return this.deps.options;
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
        return undefined;
      }
    }

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
          [(s) => this.reconcileNodeRefs(s), "failed to reconcile nodeRefs"],
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

    // The deferred part of core's Reconcile.
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
    const failureReason = nestedString(obj, ["status", "failureReason"]);
    const failureMessage = nestedString(obj, ["status", "failureMessage"]);
    if (failureReason || failureMessage) {
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
      const secretName = nestedString(config, ["status", "dataSecretName"]);
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
      return nestedBool(imp, ["status", "ready"]) ?? false;
    }
    const primary = nestedBool(imp, ["status", "initialization", "provisioned"]);
    if (primary !== undefined) return primary;
    return nestedBool(imp, ["status", "ready"]) ?? false;
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

    scope.nodeRefMap = await this.nodeRefMap();

    if (imp.status?.infrastructureMachineKind !== undefined) {
      throw new Error(
        `${imp.kind} ${describeKey(imp)} sets status.infrastructureMachineKind (MachinePool Machines, R11); the CAPI core emulator does not emulate MachinePool Machines`,
      );
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

  private async nodeRefMap(): Promise<Map<string, V1Node>> {
    const nodes = await this.deps.cache.list(NodeResource);
    const map = new Map<string, V1Node>();
    for (const node of nodes) {
      const id = node.spec?.providerID;
      if (id) map.set(id, node);
    }
    return map;
  }

  private async reconcileNodeRefs(scope: Scope): Promise<ReconcileResult | undefined> {
    const { mp } = scope;
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
    await this.deleteRetiredNodes(scope, nodeRefs, mp.spec?.providerIDList ?? []);
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
    await this.patchNodes(scope, references);
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
    nodeRefs: NonNullable<NonNullable<MachinePoolObject["status"]>["nodeRefs"]>,
    providerIDList: string[],
  ): Promise<void> {
    const byProviderID = new Map<string, V1Node>();
    for (const ref of nodeRefs) {
      if (!ref.name) continue;
      const node = await this.deps.cache.get(NodeResource, { name: ref.name });
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
      await this.deps.writer.delete(
        NodeResource,
        { name: node.metadata?.name ?? "" },
        {
          reason: `providerID ${providerID} is no longer in spec.providerIDList`,
          machinePool: scope.key,
        },
      );
    }
  }

  /** `patchNodes`: owner annotations and removal of the uninitialized taint. */
  private async patchNodes(scope: Scope, references: { name: string }[]): Promise<void> {
    const { mp } = scope;
    const desired: Record<string, string> = {
      "cluster.x-k8s.io/cluster-name": mp.spec?.clusterName ?? "",
      "cluster.x-k8s.io/cluster-namespace": mp.metadata?.namespace ?? "",
      "cluster.x-k8s.io/owner-kind": "MachinePool",
      "cluster.x-k8s.io/owner-name": mp.metadata?.name ?? "",
    };
    for (const ref of references) {
      const node = await this.deps.cache.get(NodeResource, { name: ref.name });
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
      await this.deps.writer.mergePatch(NodeResource, { name: ref.name }, patch, {
        reason:
          kept.length !== taints.length
            ? "set owner annotations and remove the node.cluster.x-k8s.io/uninitialized taint"
            : "set owner annotations",
        machinePool: scope.key,
      });
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
          await this.deleteRetiredNodes(scope, nodeRefs, mp.spec?.providerIDList ?? []);
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
      await this.deps.watchExternal(resolved);
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

  /** `updateStatus` / `setReplicas` for pools without MachinePool Machines. */
  private updateStatus(scope: Scope): void {
    const { mp, imp } = scope;
    if (!imp) return;
    mp.status ??= {};
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
    if (counts.length === 0) return undefined;
    counts.sort(
      (a, b) =>
        compareSemver(a.version, b.version) ||
        (a.version < b.version ? -1 : a.version > b.version ? 1 : a.order - b.order),
    );
    return counts.map(({ version, replicas }) => ({ version, replicas }));
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

const SEVERITY_RANK: Record<string, number> = { Error: 0, Warning: 1, Info: 2 };

/**
 * Deprecated v1beta1 `SetSummary(Ready ← BootstrapReady, InfrastructureReady, ReplicasReady)` with the
 * default merge strategy: the group with the highest priority (False/Error, False/Warning, False/Info,
 * True, Unknown) decides; its first condition gives reason and message.
 */
function setV1Beta1Summary(mp: MachinePoolObject): void {
  const all = (mp.status?.deprecated?.v1beta1?.conditions ?? []) as DeprecatedCondition[];
  const inScope = all.filter((c) => READY_V1BETA1_TYPES.includes(c.type));
  if (inScope.length === 0) return;
  const priority = (c: DeprecatedCondition) =>
    c.status === "False" ? (SEVERITY_RANK[c.severity ?? ""] ?? 2) : c.status === "True" ? 3 : 4;
  const top = Math.min(...inScope.map(priority));
  if (top === 3) {
    setV1Beta1Condition(mp, { type: "Ready", status: "True" });
    return;
  }
  const group = inScope
    .filter((c) => priority(c) === top)
    .sort((a, b) => (a.type < b.type ? -1 : 1));
  const first = group[0] as DeprecatedCondition;
  const input: V1Beta1ConditionInput = {
    type: "Ready",
    status: first.status === "False" ? "False" : "Unknown",
  };
  if (first.reason) input.reason = first.reason;
  if (first.message) input.message = first.message;
  if (first.status === "False" && first.severity)
    input.severity = first.severity as V1Beta1ConditionInput["severity"];
  setV1Beta1Condition(mp, input);
}
