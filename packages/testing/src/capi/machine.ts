import { clusterv1beta2 } from "@capi-ts/sdk/api";
import {
  type ConditionLike,
  type ConditionStatus,
  getCondition,
  getV1Beta1Conditions,
  type MergePriority,
  mirrorCondition,
  setCondition,
  setV1Beta1Condition,
  setV1Beta1MirrorCondition,
  summaryCondition,
  type V1Beta1ConditionInput,
  type V1Beta1ConditionSeverity,
} from "@capi-ts/sdk/conditions";
import {
  Annotations,
  CLUSTER_API_GROUP,
  ensurePausedCondition,
  Finalizers,
  Labels,
  NodeUninitializedTaint,
} from "@capi-ts/sdk/contract";
import { PatchHelper } from "@capi-ts/sdk/patch";
import {
  ApiError,
  type InformerCache,
  type InformerHandler,
  isNotFound,
  NodeResource,
  type ReconcileRequest,
  type ReconcileResult,
  type ResourceDescriptor,
} from "@capi-ts/sdk/runtime";
import type { V1Node, V1OwnerReference, V1Pod, V1Taint } from "@kubernetes/client-node";
import {
  ClusterNotConnectedError,
  type WorkloadClusterCache,
  type WorkloadConnection,
} from "./clustercache.js";
import type { ContractResolver, ResolvedKind } from "./contract-version.js";
import {
  asError,
  clusterKey,
  groupOf,
  lowestNonZero,
  nestedBool,
  nestedString,
  readField,
  wrap,
} from "./controller-helpers.js";
import type { ReconcileTrace } from "./machinepool.js";
import {
  type ClusterObject,
  ClusterResource,
  describeKey,
  type ExternalObject,
  isDefinedRef,
  isDeleting,
  jsonCopy,
  type VersionedRef,
} from "./types.js";
import { DEFAULT_NODE_DELETION_TIMEOUT_SECONDS } from "./webhook.js";
import type { RecordingWriter, WriteContext } from "./writes.js";

/** A `cluster.x-k8s.io/v1beta2` Machine (generated type). */
export type MachineObject = clusterv1beta2.Machine;
export const MachineResource: ResourceDescriptor<MachineObject> = clusterv1beta2.MachineResource;

const PodResource: ResourceDescriptor<V1Pod> = {
  group: "",
  version: "v1",
  kind: "Pod",
  plural: "pods",
  scope: "Namespaced",
  subresources: { status: true },
};

interface VolumeAttachmentObject {
  apiVersion?: string;
  kind?: string;
  metadata?: { name?: string };
  spec?: { nodeName?: string; source?: { persistentVolumeName?: string } };
  status?: { attached?: boolean };
}

const VolumeAttachmentResource: ResourceDescriptor<VolumeAttachmentObject> = {
  group: "storage.k8s.io",
  version: "v1",
  kind: "VolumeAttachment",
  plural: "volumeattachments",
  scope: "Cluster",
};

const DaemonSetResource: ResourceDescriptor = {
  group: "apps",
  version: "v1",
  kind: "DaemonSet",
  plural: "daemonsets",
  scope: "Namespaced",
};

/** Annotations and labels of core's Machine controller (`api/core/v1beta2`, v1.14.2). */
const MachineAnnotation = "cluster.x-k8s.io/machine";
const LabelsFromMachineAnnotation = "cluster.x-k8s.io/labels-from-machine";
const AnnotationsFromMachineAnnotation = "cluster.x-k8s.io/annotations-from-machine";
const InterruptibleLabel = "cluster.x-k8s.io/interruptible";
const ExcludeNodeDrainingAnnotation = "machine.cluster.x-k8s.io/exclude-node-draining";
const ExcludeWaitForNodeVolumeDetachAnnotation =
  "machine.cluster.x-k8s.io/exclude-wait-for-node-volume-detach";
const PreDrainDeleteHookPrefix = "pre-drain.delete.hook.machine.cluster.x-k8s.io";
const PreTerminateDeleteHookPrefix = "pre-terminate.delete.hook.machine.cluster.x-k8s.io";
const PodDrainLabel = "cluster.x-k8s.io/drain";
const MirrorPodAnnotation = "kubernetes.io/config.mirror";
const NodeOutdatedRevisionTaint = {
  key: "node.cluster.x-k8s.io/outdated-revision",
  effect: "PreferNoSchedule",
};
const COMMON_NODE_ANNOTATIONS = [
  Annotations.ClusterName,
  Annotations.ClusterNamespace,
  MachineAnnotation,
  Annotations.OwnerKind,
  Annotations.OwnerName,
];
const NODE_INFO_FIELDS = [
  "architecture",
  "bootID",
  "containerRuntimeVersion",
  "kernelVersion",
  "kubeProxyVersion",
  "kubeletVersion",
  "machineID",
  "operatingSystem",
  "osImage",
  "systemUUID",
] as const;

/**
 * The conditions core's Machine controller owns (`patchMachine`): v1beta2 `WithOwnedConditions`, then
 * the deprecated v1beta1 `WithOwnedV1Beta1Conditions` (the SDK's patch helper takes both by type).
 */
const OWNED_CONDITIONS = [
  "BootstrapReady",
  "DrainingSucceeded",
  "Paused",
  "Available",
  "Ready",
  "BootstrapConfigReady",
  "InfrastructureReady",
  "NodeReady",
  "NodeHealthy",
  "Deleting",
  "Updating",
];

/** Timings of the emulated Machine controller (core's values in brackets). */
export interface MachineReconcilerOptions {
  /**
   * How long the NodeReady/NodeHealthy conditions keep the last known state after the workload cluster's
   * last successful health probe, ms [`--remote-conditions-grace-period`, 5 min].
   */
  remoteConditionsGracePeriodMs: number;
  /** Wait before looking at a Node's Pods again while a drain is not complete, ms [20,000]. */
  drainRetryIntervalMs: number;
  /** How long one reconcile keeps retrying the Node's deletion, ms [10,000, every 2,000]. */
  nodeDeletionRetryTimeoutMs: number;
}

export interface MachineReconcilerDeps {
  cache: InformerCache;
  writer: RecordingWriter;
  resolver: ContractResolver;
  /** Ensures the watch of a kind a Machine references (`EnqueueRequestForOwner(Machine)`). */
  watchExternal: (kind: ResolvedKind) => Promise<void>;
  /** Ensures the informer of a kind without a watch (the Cluster's control plane object). */
  readExternal: (resource: ResourceDescriptor) => Promise<void>;
  clusterCache: WorkloadClusterCache;
  /** The handler the Node watch of a workload cluster feeds (`nodeToMachine`). */
  nodeHandler: () => InformerHandler<V1Node> | undefined;
  /** Core's `DeferNextReconcileForObject`: no reconcile of this Machine before `ms` from now. */
  deferNext: (key: string, ms: number) => void;
  options: MachineReconcilerOptions;
}

/** The referenced object does not exist (core wraps the NotFound). */
class ExternalNotFoundError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ExternalNotFoundError";
  }
}

interface Scope {
  cluster: ClusterObject;
  machine: MachineObject;
  key: string;
  context: WriteContext;
  trace: ReconcileTrace;
  infraMachine?: ExternalObject;
  infraMachineIsNotFound: boolean;
  node?: V1Node;
  nodeGetError?: Error;
  deletingReason?: string;
  deletingMessage?: string;
}

type Phase = (scope: Scope) => Promise<ReconcileResult | undefined>;

/** How core's Machine controller words a field of the wrong type (`contract.*.Get`). */
const machineAccessorError = (
  obj: ExternalObject,
  path: readonly string[],
  value: unknown,
  expected: string,
) =>
  `failed to get ${path.join(".")} from ${obj.kind} ${describeKey(obj)}: .${path.join(".")} accessor error: ${JSON.stringify(value)} is of the type ${typeof value}, expected ${expected}`;

/** Go `kerrors.NewAggregate` text. */
function aggregate(errors: Error[]): Error {
  if (errors.length === 1) return errors[0] as Error;
  return new Error(`[${errors.map((e) => e.message).join(", ")}]`);
}

/** `metav1.Now()` as it is serialised: RFC 3339, whole seconds. */
function nowRfc3339(): string {
  return new Date(Math.floor(Date.now() / 1000) * 1000).toISOString().replace(".000Z", "Z");
}

function controllerOf(obj: { metadata?: { ownerReferences?: V1OwnerReference[] } }) {
  return (obj.metadata?.ownerReferences ?? []).find((ref) => ref.controller === true);
}

/** True for a Machine a MachinePool controls (MachinePool Machines, contract R11). */
export function isMachinePoolMachine(machine: MachineObject): boolean {
  const owner = controllerOf(machine);
  return owner?.kind === "MachinePool" && groupOf(owner.apiVersion) === CLUSTER_API_GROUP;
}

function conditionIsTrue(obj: { status?: unknown }, type: string): boolean {
  const list = readField(obj, ["status", "conditions"]);
  return (
    Array.isArray(list) &&
    list.some((c: { type?: string; status?: string }) => c?.type === type && c?.status === "True")
  );
}

function nodeCondition(node: V1Node, type: string) {
  return node.status?.conditions?.find((c) => c.type === type);
}

/** `noderefutil.IsNodeUnreachable`: the Node's Ready condition is Unknown. */
function isNodeUnreachable(node: V1Node): boolean {
  return nodeCondition(node, "Ready")?.status === "Unknown";
}

function hasAnnotationWithPrefix(machine: MachineObject, prefix: string): string[] {
  return Object.keys(machine.metadata?.annotations ?? {})
    .filter((key) => key.startsWith(prefix))
    .sort();
}

function domainOf(key: string): string {
  return key.split("/")[0] ?? "";
}

function inDomain(key: string, domain: string): boolean {
  const d = domainOf(key);
  return d === domain || d.endsWith(`.${domain}`);
}

/** `labels.GetManagedLabels`: the Machine labels core syncs to its Node. */
function managedLabels(machine: MachineObject): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(machine.metadata?.labels ?? {})) {
    if (
      domainOf(key) === "node-role.kubernetes.io" ||
      inDomain(key, "node-restriction.kubernetes.io") ||
      inDomain(key, "node.cluster.x-k8s.io")
    ) {
      out[key] = value;
    }
  }
  return out;
}

/** `annotations.GetManagedAnnotations`: core's bookkeeping plus the Machine's node-domain annotations. */
function managedAnnotations(machine: MachineObject): Record<string, string> {
  const out: Record<string, string> = {
    [Annotations.ClusterName]: machine.spec?.clusterName ?? "",
    [Annotations.ClusterNamespace]: machine.metadata?.namespace ?? "",
    [MachineAnnotation]: machine.metadata?.name ?? "",
  };
  const owner = controllerOf(machine);
  if (owner) {
    out[Annotations.OwnerKind] = owner.kind;
    out[Annotations.OwnerName] = owner.name;
  }
  for (const [key, value] of Object.entries(machine.metadata?.annotations ?? {})) {
    if (inDomain(key, "node.cluster.x-k8s.io")) out[key] = value;
  }
  return out;
}

/** `summarizeNodeV1beta1Conditions` (the deprecated NodeHealthy condition). */
function summarizeNodeV1Beta1(node: V1Node): { status: ConditionStatus; message: string } {
  let falseCount = 0;
  let unknownCount = 0;
  let message = "";
  for (const c of node.status?.conditions ?? []) {
    const pressure = ["MemoryPressure", "DiskPressure", "PIDPressure"].includes(c.type);
    const bad = pressure ? c.status !== "False" : c.type === "Ready" && c.status !== "True";
    if (!bad) continue;
    message += `Node condition ${c.type} is ${c.status}. `;
    if (c.status === "Unknown") unknownCount++;
    else falseCount++;
  }
  message = message.endsWith(". ") ? message.slice(0, -2) : message;
  if (falseCount > 0) return { status: "False", message };
  if (falseCount + unknownCount < 4) return { status: "True", message };
  return { status: "Unknown", message };
}

/** `summarizeNodeConditions` (the v1beta2 NodeHealthy condition). */
function summarizeNode(node: V1Node): { status: ConditionStatus; reason: string; message: string } {
  let falseCount = 0;
  let unknownCount = 0;
  let count = 0;
  const distinct = new Set<string>();
  let messages: string[] = [];
  for (const type of ["Ready", "MemoryPressure", "DiskPressure", "PIDPressure"]) {
    const condition = [...(node.status?.conditions ?? [])].reverse().find((c) => c.type === type);
    if (!condition) {
      messages.push(`* Node.${type}: Condition not yet reported`);
      unknownCount++;
      continue;
    }
    const bad = type === "Ready" ? condition.status !== "True" : condition.status !== "False";
    if (!bad) continue;
    const m = condition.message || `Condition is ${condition.status}`;
    count++;
    distinct.add(m);
    messages.push(`* Node.${type}: ${m}`);
    if (condition.status === "Unknown") unknownCount++;
    else falseCount++;
  }
  if (count > 1 && distinct.size === 1) messages = [`* Node.AllConditions: ${[...distinct][0]}`];
  const message = messages.join("\n");
  if (falseCount > 0) return { status: "False", reason: "NodeNotHealthy", message };
  if (unknownCount > 0) return { status: "Unknown", reason: "NodeHealthyUnknown", message };
  return { status: "True", reason: "NodeHealthy", message: "" };
}

/** `transformControlPlaneAndEtcdConditions`: one line for control plane components with one message. */
function transformControlPlaneLines(lines: string[]): string[] {
  const isControlPlane = (c: string) =>
    c.startsWith("* APIServer") ||
    c.startsWith("* ControllerManager") ||
    c.startsWith("* Scheduler") ||
    c === "* EtcdPodHealthy";
  const out: string[] = [];
  let count = 0;
  let first = "";
  for (const line of lines) {
    const sep = line.indexOf(":");
    if (sep < 0) {
      out.push(line);
      continue;
    }
    const c = line.slice(0, sep);
    const msg = line.slice(sep + 1);
    if (!isControlPlane(c)) {
      out.push(line);
      continue;
    }
    if (first === "") {
      first = msg;
      out.push(`* Control plane components:${msg}`);
      count++;
      continue;
    }
    if (first !== msg) return lines;
    count++;
  }
  return count === 1 ? lines : out;
}

const V1BETA1_SUMMARY_TYPES = [
  "InfrastructureReady",
  "BootstrapReady",
  "MachineHealthCheckSucceeded",
  "OwnerRemediated",
  "DrainingSucceeded",
];

/** v1beta1 `mergePriority`: False/Error, False/Warning, False/Info, True, Unknown, else 99. */
function v1beta1Priority(status: string, severity: string): number {
  if (status === "False") {
    if (severity === "Error") return 0;
    if (severity === "Warning") return 1;
    if (severity === "Info") return 2;
    return 99;
  }
  if (status === "True") return 3;
  if (status === "Unknown") return 4;
  return 99;
}

/**
 * `patchMachine`'s deprecated `v1beta1conditions.SetSummary(Ready)` over InfrastructureReady,
 * BootstrapReady, MachineHealthCheckSucceeded, OwnerRemediated and DrainingSucceeded, with the step
 * counter ("N of 2 completed") while the Machine is not deleting, has no providerID, and only
 * BootstrapReady/InfrastructureReady are in scope.
 */
function setV1Beta1ReadySummary(machine: MachineObject): void {
  const inScope = getV1Beta1Conditions(machine).filter((c) =>
    V1BETA1_SUMMARY_TYPES.includes(c.type),
  );
  if (inScope.length === 0) return;
  let stepCounter = !isDeleting(machine) && !machine.spec?.providerID;
  if (inScope.some((c) => c.type !== "BootstrapReady" && c.type !== "InfrastructureReady"))
    stepCounter = false;
  const groups: { status: string; severity: string; conditions: typeof inScope }[] = [];
  for (const c of inScope) {
    const severity = c.severity ?? "";
    const group = groups.find((g) => g.status === c.status && g.severity === severity);
    if (group) group.conditions.push(c);
    else groups.push({ status: c.status, severity, conditions: [c] });
  }
  const top = [...groups].sort(
    (a, b) => v1beta1Priority(a.status, a.severity) - v1beta1Priority(b.status, b.severity),
  )[0] as (typeof groups)[number];
  if (top.status === "True") {
    setV1Beta1Condition(machine, { type: "Ready", status: "True" });
    return;
  }
  const sorted = [...top.conditions].sort((a, b) => (a.type < b.type ? -1 : 1));
  const first =
    sorted.length === 1
      ? sorted[0]
      : (V1BETA1_SUMMARY_TYPES.map((t) => sorted.find((c) => c.type === t)).find(Boolean) ??
        sorted[0]);
  const trueCount = groups.find((g) => g.status === "True" && g.severity === "")?.conditions.length;
  const input: V1Beta1ConditionInput = {
    type: "Ready",
    status: top.status === "False" ? "False" : "Unknown",
  };
  if (first?.reason) input.reason = first.reason;
  const message = stepCounter ? `${trueCount ?? 0} of 2 completed` : (first?.message ?? "");
  if (message) input.message = message;
  if (top.status === "False" && top.severity)
    input.severity = top.severity as V1Beta1ConditionSeverity;
  setV1Beta1Condition(machine, input);
}

/** Go's `%v` of a GroupVersionKind, e.g. `infrastructure.cluster.x-k8s.io/v1beta2, Kind=DevMachine`. */
function gvkString(obj: ExternalObject): string {
  return `${obj.apiVersion ?? ""}, Kind=${obj.kind ?? ""}`;
}

function podKey(pod: V1Pod): string {
  return `${pod.metadata?.namespace ?? ""}/${pod.metadata?.name ?? ""}`;
}

/** `clog.ListToString` of Pods: the first `n`, then `... (k more)`. */
function podList(pods: V1Pod[], n: number): string {
  const names = pods.slice(0, n).map(podKey);
  if (pods.length > n) names.push(`... (${pods.length - n} more)`);
  return names.join(", ");
}

interface EvictionResult {
  deletionTimestampSet: V1Pod[];
  failed: Map<string, V1Pod[]>;
  waitCompleted: V1Pod[];
}

function drainCompleted(r: EvictionResult): boolean {
  return r.deletionTimestampSet.length === 0 && r.failed.size === 0 && r.waitCompleted.length === 0;
}

/** `EvictionResult.ConditionMessage` (without the MachineDrainRule ordering, not ported). */
function drainConditionMessage(r: EvictionResult, startedAt: string): string {
  let message = `Drain not completed yet (started at ${startedAt}):`;
  const kind = (pods: V1Pod[]) => (pods.length > 1 ? "Pods" : "Pod");
  if (r.deletionTimestampSet.length > 0) {
    message += `\n* ${kind(r.deletionTimestampSet)} ${podList(r.deletionTimestampSet, 3)}: deletionTimestamp set, but still not removed from the Node`;
  }
  const failures = [...r.failed.keys()].sort();
  for (const failure of failures.slice(0, 5)) {
    const pods = r.failed.get(failure) ?? [];
    let text = failure.replaceAll(
      "Cannot evict pod as it would violate the pod's disruption budget.",
      "cannot evict pod as it would violate the pod's disruption budget.",
    );
    if (!text.startsWith("cannot evict pod as it would violate the pod's disruption budget."))
      text = `failed to evict Pod, ${text}`;
    message += `\n* ${kind(pods)} ${podList(pods, 3)}: ${text}`;
  }
  const skipped = failures.slice(5).reduce((n, f) => n + (r.failed.get(f)?.length ?? 0), 0);
  if (skipped === 1) message += "\n* 1 Pod with other issues";
  else if (skipped > 1) message += `\n* ${skipped} Pods with other issues`;
  if (r.waitCompleted.length > 0) {
    message += `\n* ${kind(r.waitCompleted)} ${podList(r.waitCompleted, 3)}: waiting for completion`;
  }
  return message;
}

/**
 * Core's Machine controller (`core/reconcilers/machine`, v1.14.2) for the Machines a MachinePool
 * controls (MachinePool Machines, contract R11): the `machine.cluster.x-k8s.io` finalizer, ownership of
 * the InfraMachine, `spec.providerID`, `status.nodeRef` and `nodeInfo` from the workload cluster's Node,
 * the Node's labels/annotations/taints, the v1beta2 and deprecated v1beta1 conditions, the phase, and
 * deletion: drain (cordon, evict), wait for volumes, delete the InfraMachine and wait until it is gone,
 * delete the Node, remove the finalizer. Machines of other owners are left alone.
 */
export class MachineReconciler {
  private readonly deps: MachineReconcilerDeps;

  constructor(deps: MachineReconcilerDeps) {
    this.deps = deps;
  }

  /** The key of the MachinePool that controls a Machine, for the write log (`namespace/name`). */
  static poolKeyOf(machine: MachineObject): string | undefined {
    const owner = controllerOf(machine);
    if (!owner || !isMachinePoolMachine(machine)) return undefined;
    return `${machine.metadata?.namespace ?? ""}/${owner.name}`;
  }

  async reconcile(
    request: ReconcileRequest,
    trace: ReconcileTrace,
  ): Promise<ReconcileResult | undefined> {
    const { cache, writer } = this.deps;
    const key = `${request.namespace ?? ""}/${request.name}`;
    const note = (event: string, detail?: string) =>
      trace.notes.push(detail === undefined ? { event } : { event, detail });
    const cached = await cache.get(MachineResource, request);
    if (!cached) return undefined;
    const machine = jsonCopy(cached);
    if (!isMachinePoolMachine(machine)) {
      note("NotAMachinePoolMachine");
      return undefined;
    }
    const context: WriteContext = { reason: "", machine: key };
    const poolKey = MachineReconciler.poolKeyOf(machine);
    if (poolKey) context.machinePool = poolKey;
    const ctx = (reason: string): WriteContext => ({ ...context, reason });
    const namespace = machine.metadata?.namespace ?? "";
    const clusterName = machine.spec?.clusterName ?? "";
    const cluster = await cache.get(ClusterResource, { namespace, name: clusterName });
    if (!cluster) {
      throw new Error(
        `failed to get Cluster/${clusterName}: clusters.cluster.x-k8s.io "${clusterName}" not found`,
      );
    }

    // EnsureFinalizer: a patch of its own, then the next reconcile does the rest.
    if (
      !isDeleting(machine) &&
      !(machine.metadata?.finalizers ?? []).includes(Finalizers.Machine)
    ) {
      const helper = PatchHelper.snapshot(machine, { resource: MachineResource });
      machine.metadata ??= {};
      machine.metadata.finalizers = [...(machine.metadata.finalizers ?? []), Finalizers.Machine];
      await helper.apply(
        writer.transport(MachineResource, ctx("add finalizer machine.cluster.x-k8s.io")),
        machine,
      );
      note("FinalizerAdded");
      return undefined;
    }

    const helper = PatchHelper.snapshot(machine, { resource: MachineResource });
    const paused = await ensurePausedCondition(
      writer.transport(MachineResource, ctx("Paused condition")),
      cluster,
      machine,
      { resource: MachineResource },
    );
    if (paused.isPaused || paused.requeue) {
      note(paused.isPaused ? "Paused" : "PausedConditionChanged");
      return undefined;
    }

    const scope: Scope = {
      cluster,
      machine,
      key,
      context,
      trace,
      infraMachineIsNotFound: false,
    };
    const phases: Phase[] = [
      (s) => this.reconcileOwnerAndLabels(s),
      (s) => this.reconcileInfrastructure(s),
      (s) => this.reconcileNode(s),
    ];
    if (isDeleting(machine)) phases.push((s) => this.reconcileDelete(s));
    let result: ReconcileResult = {};
    const errors: Error[] = [];
    for (const phase of phases) {
      try {
        const phaseResult = await phase(scope);
        if (errors.length === 0) result = lowestNonZero(result, phaseResult);
      } catch (error) {
        errors.push(asError(error));
      }
    }

    // The deferred part of core's Reconcile: status, then one patch of the whole object.
    result = lowestNonZero(result, this.updateStatus(scope));
    const finalizerRemoved =
      isDeleting(machine) && !(machine.metadata?.finalizers ?? []).includes(Finalizers.Machine);
    try {
      await this.patchMachine(
        helper,
        machine,
        ctx(finalizerRemoved ? "remove finalizer machine.cluster.x-k8s.io" : "Machine reconcile"),
        errors.length === 0,
      );
    } catch (error) {
      // Once the finalizer is gone the object may vanish before its status patch: nothing left to do.
      const gone =
        finalizerRemoved && (isNotFound(error) || /not found/i.test(asError(error).message));
      if (!gone) errors.push(asError(error));
    }
    if (finalizerRemoved) note("FinalizerRemoved");
    if (errors.length > 0) throw aggregate(errors);
    return result.requeueAfter ? result : undefined;
  }

  /** `patchMachine`: the deprecated Ready summary, then the patch with core's owned conditions. */
  private async patchMachine(
    helper: PatchHelper<MachineObject>,
    machine: MachineObject,
    context: WriteContext,
    observedGeneration: boolean,
  ): Promise<void> {
    setV1Beta1ReadySummary(machine);
    await helper.apply(this.deps.writer.transport(MachineResource, context), machine, {
      ownedConditions: OWNED_CONDITIONS,
      statusObservedGeneration: observedGeneration,
    });
  }

  /** `reconcileMachineOwnerAndLabels`: a controlled Machine is never adopted; the cluster-name label. */
  private async reconcileOwnerAndLabels(s: Scope): Promise<undefined> {
    s.machine.metadata ??= {};
    s.machine.metadata.labels = {
      ...s.machine.metadata.labels,
      [Labels.ClusterName]: s.machine.spec?.clusterName ?? "",
    };
    return undefined;
  }

  /**
   * `reconcileExternal` / `ensureExternalOwnershipAndWatch`: read the object at its contract version,
   * watch its kind (mapped to the owning Machine), make the Machine its controller (keeping the other
   * owner references, e.g. the InfraMachinePool's) and set the cluster-name label, with one merge patch
   * only when something is missing; then copy `status.failureReason`/`failureMessage`.
   */
  private async reconcileExternal(s: Scope, ref: VersionedRef): Promise<ExternalObject> {
    const { machine } = s;
    const namespace = machine.metadata?.namespace ?? "";
    const resolved = await this.deps.resolver.resolve(ref);
    await this.deps.watchExternal(resolved);
    const cached = await this.deps.cache.get(resolved.resource, { namespace, name: ref.name });
    if (!cached) {
      throw new ExternalNotFoundError(
        `failed to retrieve ${ref.kind} ${namespace}/${ref.name}: ${resolved.resource.plural}.${ref.apiGroup} "${ref.name}" not found`,
      );
    }
    const obj = jsonCopy(cached);
    const desired: V1OwnerReference = {
      apiVersion: `${CLUSTER_API_GROUP}/v1beta2`,
      kind: "Machine",
      name: machine.metadata?.name ?? "",
      uid: machine.metadata?.uid ?? "",
      controller: true,
    };
    const refs = obj.metadata?.ownerReferences ?? [];
    const isMachineSet = (r: V1OwnerReference) =>
      r.kind === "MachineSet" && groupOf(r.apiVersion) === CLUSTER_API_GROUP;
    const exact = refs.some(
      (r) =>
        r.apiVersion === desired.apiVersion &&
        r.kind === desired.kind &&
        r.name === desired.name &&
        r.uid === desired.uid &&
        (r.controller ?? false),
    );
    const clusterName = machine.spec?.clusterName ?? "";
    if (
      !refs.some(isMachineSet) &&
      exact &&
      obj.metadata?.labels?.[Labels.ClusterName] === clusterName
    ) {
      this.readFailures(s, obj);
      return obj;
    }
    const helper = PatchHelper.snapshot(obj, { resource: resolved.resource });
    obj.metadata ??= {};
    const kept = refs.filter((r) => !isMachineSet(r));
    // controllerutil.SetControllerReference: another controller is an error, the same one is updated.
    const other = kept.find(
      (r) =>
        r.controller === true &&
        !(
          groupOf(r.apiVersion) === CLUSTER_API_GROUP &&
          r.kind === "Machine" &&
          r.name === desired.name
        ),
    );
    if (other) {
      throw new Error(
        `Object ${namespace}/${ref.name} is already owned by another ${other.kind} controller ${other.name} (a provider must not set a controller owner reference on its ${ref.kind}: contract R22)`,
      );
    }
    const controllerRef: V1OwnerReference = { ...desired, blockOwnerDeletion: true };
    const index = kept.findIndex(
      (r) =>
        groupOf(r.apiVersion) === CLUSTER_API_GROUP &&
        r.kind === "Machine" &&
        r.name === desired.name,
    );
    if (index < 0) kept.push(controllerRef);
    else kept[index] = controllerRef;
    obj.metadata.ownerReferences = kept;
    obj.metadata.labels = { ...obj.metadata.labels, [Labels.ClusterName]: clusterName };
    const patched = await helper.apply(
      this.deps.writer.transport(resolved.resource, {
        ...s.context,
        reason: "set controller reference to the Machine and the cluster-name label",
      }),
      obj,
    );
    if (patched.requests > 0)
      s.trace.notes.push({
        event: "InfraMachineAdopted",
        detail: `${ref.kind} ${namespace}/${ref.name}`,
      });
    this.readFailures(s, obj);
    return obj;
  }

  /** `external.FailuresFrom`: the referenced object's failure fields, copied to the deprecated status. */
  private readFailures(s: Scope, obj: ExternalObject): void {
    const reason = nestedString(obj, ["status", "failureReason"], machineAccessorError);
    const message = nestedString(obj, ["status", "failureMessage"], machineAccessorError);
    if (!reason && !message) return;
    s.machine.status ??= {};
    const status = s.machine.status;
    status.deprecated ??= {};
    status.deprecated.v1beta1 ??= {};
    if (reason) status.deprecated.v1beta1.failureReason = reason;
    if (message) {
      status.deprecated.v1beta1.failureMessage = `Failure detected from referenced resource ${gvkString(obj)} with name "${obj.metadata?.name ?? ""}": ${message}`;
    }
  }

  /** `reconcileInfrastructure`. */
  private async reconcileInfrastructure(s: Scope): Promise<ReconcileResult | undefined> {
    const { machine } = s;
    const ref = machine.spec?.infrastructureRef;
    const namespace = machine.metadata?.namespace ?? "";
    if (!isDefinedRef(ref)) throw new Error("cannot get object - object reference not set");
    let obj: ExternalObject;
    try {
      obj = await this.reconcileExternal(s, ref);
    } catch (error) {
      if (!(error instanceof ExternalNotFoundError)) throw error;
      s.infraMachineIsNotFound = true;
      if (isDeleting(machine)) return undefined;
      if (machine.status?.initialization?.infrastructureProvisioned === true) {
        machine.status ??= {};
        const status = machine.status;
        status.deprecated ??= {};
        status.deprecated.v1beta1 ??= {};
        status.deprecated.v1beta1.failureReason = "InvalidConfiguration";
        status.deprecated.v1beta1.failureMessage = `Machine infrastructure resource ${ref.kind} ${namespace}/${ref.name} has been deleted after provisioning was completed`;
        throw new Error(
          `could not find ${ref.kind} ${namespace}/${ref.name} for Machine ${describeKey(machine)}`,
        );
      }
      s.trace.notes.push({
        event: "InfraMachineNotFound",
        detail: `${ref.kind} ${namespace}/${ref.name}`,
      });
      return { requeueAfter: 30_000 };
    }
    s.infraMachine = obj;
    const { contractVersion } = await this.deps.resolver.resolve(ref);
    const provisioned =
      nestedBool(
        obj,
        contractVersion === "v1beta1"
          ? ["status", "ready"]
          : ["status", "initialization", "provisioned"],
        machineAccessorError,
      ) ?? false;
    setV1Beta1MirrorCondition(machine, "InfrastructureReady", obj, {
      value: provisioned,
      reason: isDeleting(machine) ? "Deleting" : "WaitingForInfrastructure",
      severity: "Info",
    });
    if (isDeleting(obj)) return undefined;
    machine.status ??= {};
    const status = machine.status;
    if (!provisioned && status.initialization?.infrastructureProvisioned !== true) {
      s.trace.notes.push({ event: "WaitingForInfrastructure" });
      return undefined;
    }
    const providerID = nestedString(obj, ["spec", "providerID"], machineAccessorError);
    if (!providerID) {
      s.trace.notes.push({ event: "WaitingForProviderID" });
      // Core slows down: provisioning takes time, and a change of the InfraMachine triggers a reconcile.
      this.deps.deferNext(s.key, 5_000);
      return undefined;
    }
    const addresses = readField(obj, ["status", "addresses"]);
    if (addresses !== undefined) {
      if (!Array.isArray(addresses)) {
        throw new Error(
          `failed to read addresses from ${obj.kind} ${describeKey(obj)}: not a list`,
        );
      }
      status.addresses = addresses as NonNullable<typeof status.addresses>;
    }
    const deprecatedFailureDomain = nestedString(
      obj,
      ["spec", "failureDomain"],
      machineAccessorError,
    );
    if (deprecatedFailureDomain !== undefined) machine.spec.failureDomain = deprecatedFailureDomain;
    const failureDomain = nestedString(obj, ["status", "failureDomain"], machineAccessorError);
    if (failureDomain !== undefined) status.failureDomain = failureDomain;
    if (machine.spec.providerID !== providerID)
      s.trace.notes.push({ event: "ProviderIDCopied", detail: providerID });
    machine.spec.providerID = providerID;
    status.initialization = { ...status.initialization, infrastructureProvisioned: true };
    return undefined;
  }

  /** `watchClusterNodes`: only once the control plane is initialized (errors while disconnected). */
  private watchClusterNodes(cluster: ClusterObject): void {
    if (!conditionIsTrue(cluster, "ControlPlaneInitialized")) return;
    const handler = this.deps.nodeHandler();
    if (!handler) return;
    this.deps.clusterCache.watchNodes(clusterKey(cluster), "machine-watchNodes", handler);
  }

  /** `getNode`: the Node with this providerID, from the connection's Node cache. */
  private async getNode(
    connection: WorkloadConnection,
    providerID: string,
  ): Promise<V1Node | undefined> {
    const nodes = (await connection.cache.list(NodeResource)).filter(
      (node) => node.spec?.providerID === providerID,
    );
    if (nodes.length > 1) {
      throw new Error(
        `unexpectedly found more than one Node matching the providerID ${providerID}`,
      );
    }
    return nodes[0];
  }

  /** `reconcileNode`. */
  private async reconcileNode(s: Scope): Promise<undefined> {
    const { machine } = s;
    try {
      this.watchClusterNodes(s.cluster);
    } catch (error) {
      s.nodeGetError = asError(error);
      throw error;
    }
    const providerID = machine.spec?.providerID ?? "";
    if (!providerID) {
      setV1Beta1Condition(machine, {
        type: "NodeHealthy",
        status: "False",
        reason: "WaitingForNodeRef",
        severity: "Info",
      });
      return undefined;
    }
    let connection: WorkloadConnection;
    try {
      connection = this.deps.clusterCache.getClient(clusterKey(s.cluster));
    } catch (error) {
      s.nodeGetError = asError(error);
      throw error;
    }
    let node: V1Node | undefined;
    try {
      node = await this.getNode(connection, providerID);
    } catch (error) {
      s.nodeGetError = asError(error);
      setV1Beta1Condition(machine, {
        type: "NodeHealthy",
        status: "Unknown",
        reason: "NodeInspectionFailed",
        message: "Failed to get the Node for this Machine by ProviderID",
      });
      throw error;
    }
    machine.status ??= {};
    const status = machine.status;
    if (!node) {
      if (isDeleting(machine)) return undefined;
      if (status.nodeRef?.name) {
        setV1Beta1Condition(machine, {
          type: "NodeHealthy",
          status: "False",
          reason: "NodeNotFound",
          severity: "Error",
        });
        throw new Error(
          `no matching Node for Machine "${machine.metadata?.name}" in namespace "${machine.metadata?.namespace}": cannot find node with matching ProviderID`,
        );
      }
      setV1Beta1Condition(machine, {
        type: "NodeHealthy",
        status: "False",
        reason: "NodeProvisioning",
        severity: "Warning",
        message: "Waiting for a node with matching ProviderID to exist",
      });
      s.trace.notes.push({ event: "WaitingForNode", detail: providerID });
      return undefined;
    }
    s.node = node;
    if (!status.nodeRef?.name) {
      status.nodeRef = { name: node.metadata?.name ?? "" };
      s.trace.notes.push({ event: "NodeRefSet", detail: node.metadata?.name ?? "" });
    }
    const info: Record<string, unknown> = { ...(node.status?.nodeInfo ?? {}) };
    for (const field of NODE_INFO_FIELDS) info[field] ??= "";
    status.nodeInfo = info as unknown as NonNullable<typeof status.nodeInfo>;

    const labels = managedLabels(machine);
    if (s.infraMachine) {
      const interruptible = nestedBool(
        s.infraMachine,
        ["status", "interruptible"],
        machineAccessorError,
      );
      if (interruptible) labels[InterruptibleLabel] = "";
    }
    try {
      await this.patchNode(s, connection, node, labels, managedAnnotations(machine));
    } catch (error) {
      throw wrap(error, `failed to reconcile Node /${node.metadata?.name ?? ""}`);
    }
    if (!s.infraMachine || isDeleting(s.infraMachine)) {
      setV1Beta1Condition(machine, {
        type: "NodeHealthy",
        status: "False",
        reason: "Deleting",
        severity: "Info",
      });
      return undefined;
    }
    const health = summarizeNodeV1Beta1(node);
    if (health.status === "False") {
      setV1Beta1Condition(machine, {
        type: "NodeHealthy",
        status: "False",
        reason: "NodeConditionsFailed",
        severity: "Warning",
        message: health.message,
      });
    } else if (health.status === "Unknown") {
      setV1Beta1Condition(machine, {
        type: "NodeHealthy",
        status: "Unknown",
        reason: "NodeConditionsFailed",
        message: health.message,
      });
    } else {
      setV1Beta1Condition(machine, { type: "NodeHealthy", status: "True" });
    }
    return undefined;
  }

  /**
   * `patchNode`: the Machine's managed labels and annotations (tracked in `labels-from-machine` /
   * `annotations-from-machine`), the uninitialized and outdated-revision taints removed; one merge patch
   * with the Node's resourceVersion (core's optimistic lock), only when something changed.
   */
  private async patchNode(
    s: Scope,
    connection: WorkloadConnection,
    node: V1Node,
    newLabels: Record<string, string>,
    newAnnotations: Record<string, string>,
  ): Promise<void> {
    const annotations = { ...(node.metadata?.annotations ?? {}) };
    const nodeLabels = { ...(node.metadata?.labels ?? {}) };
    const annotationPatch: Record<string, string | null> = {};
    const labelPatch: Record<string, string | null> = {};
    let changed = false;
    const previousAnnotations = (annotations[AnnotationsFromMachineAnnotation] ?? "")
      .split(",")
      .filter((k) => k !== "");
    for (const [k, v] of Object.entries(newAnnotations)) {
      if (annotations[k] !== v) {
        annotationPatch[k] = v;
        changed = true;
      }
    }
    for (const k of [...previousAnnotations, ...COMMON_NODE_ANNOTATIONS]) {
      if (k === AnnotationsFromMachineAnnotation) continue;
      if (!(k in newAnnotations)) {
        if (k in annotations) annotationPatch[k] = null;
        changed = true;
      }
    }
    const previousLabels = (annotations[LabelsFromMachineAnnotation] ?? "")
      .split(",")
      .filter((k) => k !== "");
    for (const [k, v] of Object.entries(newLabels)) {
      if (nodeLabels[k] !== v) {
        labelPatch[k] = v;
        changed = true;
      }
    }
    for (const k of previousLabels) {
      if (!(k in newLabels)) {
        if (k in nodeLabels) labelPatch[k] = null;
        changed = true;
      }
    }
    // The tracking annotations are written along, but alone they do not make a patch (as in core).
    const trackedAnnotations = Object.keys(newAnnotations)
      .filter((k) => !COMMON_NODE_ANNOTATIONS.includes(k))
      .sort()
      .join(",");
    const trackedLabels = Object.keys(newLabels).sort().join(",");
    if (annotations[LabelsFromMachineAnnotation] !== trackedLabels)
      annotationPatch[LabelsFromMachineAnnotation] = trackedLabels;
    if (annotations[AnnotationsFromMachineAnnotation] !== trackedAnnotations)
      annotationPatch[AnnotationsFromMachineAnnotation] = trackedAnnotations;
    const taints = node.spec?.taints ?? [];
    const matches = (t: V1Taint, want: { key: string; effect: string }) =>
      t.key === want.key && t.effect === want.effect;
    const kept = taints.filter(
      (t) => !matches(t, NodeUninitializedTaint) && !matches(t, NodeOutdatedRevisionTaint),
    );
    const taintsChanged = kept.length !== taints.length;
    if (!changed && !taintsChanged) return;
    const patch: Record<string, unknown> = {
      metadata: {
        resourceVersion: node.metadata?.resourceVersion,
        ...(Object.keys(annotationPatch).length > 0 ? { annotations: annotationPatch } : {}),
        ...(Object.keys(labelPatch).length > 0 ? { labels: labelPatch } : {}),
      },
    };
    if (taintsChanged) patch.spec = { taints: kept.length > 0 ? kept : null };
    await this.deps.writer.mergePatch(
      NodeResource,
      { name: node.metadata?.name ?? "" },
      patch,
      {
        ...s.context,
        reason: taintsChanged
          ? "sync the Machine's labels and annotations to its Node and remove the node.cluster.x-k8s.io/uninitialized taint"
          : "sync the Machine's labels and annotations to its Node",
      },
      undefined,
      connection.client,
    );
  }

  /**
   * `isDeleteNodeAllowed`: undefined when core may drain and delete the Node, else why not. Core skips
   * both while the Cluster is being deleted, without a nodeRef, while the control plane object is being
   * deleted, and when the Cluster has no control plane Machine left, unless its control plane is
   * externally managed (`status.externalManagedControlPlane`).
   */
  private async isDeleteNodeAllowed(s: Scope): Promise<string | undefined> {
    const { cluster, machine } = s;
    if (isDeleting(cluster)) return "cluster is being deleted";
    machine.status ??= {};
    const status = machine.status;
    let providerID = machine.spec?.providerID ?? "";
    if (!providerID && s.infraMachine) {
      try {
        providerID =
          nestedString(s.infraMachine, ["spec", "providerID"], machineAccessorError) ?? "";
      } catch {
        providerID = "";
      }
    }
    if (!status.nodeRef?.name && providerID) {
      // Best effort, as core: errors are only logged.
      try {
        const connection = this.deps.clusterCache.getClient(clusterKey(cluster));
        const node = await this.getNode(connection, providerID);
        if (node) status.nodeRef = { name: node.metadata?.name ?? "" };
      } catch {
        // logged by core, not returned
      }
    }
    if (!status.nodeRef?.name) return "noderef is nil";
    const cpRef = cluster.spec?.controlPlaneRef;
    if (isDefinedRef(cpRef)) {
      const resolved = await this.deps.resolver.resolve(cpRef);
      await this.deps.readExternal(resolved.resource);
      const cp = await this.deps.cache.get(resolved.resource, {
        namespace: cluster.metadata?.namespace ?? "",
        name: cpRef.name,
      });
      // A control plane object that does not exist is logged and the check goes on with the Machines.
      if (cp) {
        if (isDeleting(cp)) return "control plane is being deleted";
        if (readField(cp, ["status", "externalManagedControlPlane"]) === true) return undefined;
      }
    }
    const machines = await this.deps.cache.list(MachineResource, {
      namespace: cluster.metadata?.namespace ?? "",
      labelSelector: `${Labels.ClusterName}=${cluster.metadata?.name ?? ""}`,
    });
    const controlPlane = machines.filter(
      (m) => !isDeleting(m) && m.metadata?.labels?.[Labels.MachineControlPlane] !== undefined,
    );
    if (controlPlane.length === 0) return "no control plane members";
    return undefined;
  }

  private drainTimeoutExceeded(machine: MachineObject): boolean {
    const timeout = machine.spec?.deletion?.nodeDrainTimeoutSeconds;
    const started = machine.status?.deletion?.nodeDrainStartTime;
    if (!machine.status?.deletion || timeout === undefined || timeout <= 0 || !started)
      return false;
    return (Date.now() - new Date(started).getTime()) / 1000 >= timeout;
  }

  private volumeDetachTimeoutExceeded(machine: MachineObject): boolean {
    const timeout = machine.spec?.deletion?.nodeVolumeDetachTimeoutSeconds;
    const started = machine.status?.deletion?.waitForNodeVolumeDetachStartTime;
    if (!machine.status?.deletion || timeout === undefined || timeout <= 0 || !started)
      return false;
    return (Date.now() - new Date(started).getTime()) / 1000 >= timeout;
  }

  private isNodeDrainAllowed(s: Scope): boolean {
    const { machine } = s;
    if (ExcludeNodeDrainingAnnotation in (machine.metadata?.annotations ?? {})) return false;
    if (machine.status?.deletion?.waitForPreTerminateHookStartTime) return false;
    if (!s.infraMachine || isDeleting(s.infraMachine)) return false;
    return !this.drainTimeoutExceeded(machine);
  }

  private isNodeVolumeDetachingAllowed(s: Scope): boolean {
    const { machine } = s;
    if (ExcludeWaitForNodeVolumeDetachAnnotation in (machine.metadata?.annotations ?? {}))
      return false;
    if (machine.status?.deletion?.waitForPreTerminateHookStartTime) return false;
    if (!s.infraMachine || isDeleting(s.infraMachine)) return false;
    return !this.volumeDetachTimeoutExceeded(machine);
  }

  /** `reconcileDelete`: drain, volumes, InfraMachine, Node, finalizer — in core's order. */
  private async reconcileDelete(s: Scope): Promise<ReconcileResult | undefined> {
    const { machine, trace } = s;
    const note = (event: string, detail?: string) =>
      trace.notes.push(detail === undefined ? { event } : { event, detail });
    s.deletingReason = "Deleting";
    s.deletingMessage = "Deletion started";
    let notAllowed: string | undefined;
    try {
      notAllowed = await this.isDeleteNodeAllowed(s);
    } catch (error) {
      s.deletingReason = "InternalError";
      s.deletingMessage = "Please check controller logs for errors";
      throw wrap(error, "failed to check if Kubernetes Node deletion is allowed");
    }
    if (notAllowed) note("NodeDeletionNotAllowed", notAllowed);
    const deleteNodeAllowed = notAllowed === undefined;
    machine.status ??= {};
    const status = machine.status;

    if (deleteNodeAllowed) {
      const preDrain = hasAnnotationWithPrefix(machine, PreDrainDeleteHookPrefix);
      if (preDrain.length > 0) {
        status.deletion ??= {};
        status.deletion.waitForPreDrainHookStartTime ??= nowRfc3339();
        setV1Beta1Condition(machine, {
          type: "PreDrainDeleteHookSucceeded",
          status: "False",
          reason: "WaitingExternalHook",
          severity: "Info",
        });
        s.deletingReason = "WaitingForPreDrainHook";
        s.deletingMessage = `Waiting for pre-drain hooks to succeed (hooks: ${preDrain.join(",")})`;
        note("WaitingForPreDrainHooks", preDrain.join(","));
        return undefined;
      }
      setV1Beta1Condition(machine, { type: "PreDrainDeleteHookSucceeded", status: "True" });

      if (this.isNodeDrainAllowed(s)) {
        // Core patches the Machine before it drains, so the drain start is visible.
        const helper = PatchHelper.snapshot(machine, { resource: MachineResource });
        status.deletion ??= {};
        status.deletion.nodeDrainStartTime ??= nowRfc3339();
        if (!getV1Beta1Conditions(machine).some((c) => c.type === "DrainingSucceeded")) {
          setV1Beta1Condition(machine, {
            type: "DrainingSucceeded",
            status: "False",
            reason: "Draining",
            severity: "Info",
            message: "Draining the node before deletion",
          });
        }
        s.deletingReason = "DrainingNode";
        s.deletingMessage = `Drain not completed yet (started at ${status.deletion.nodeDrainStartTime}):`;
        try {
          await this.patchMachine(
            helper,
            machine,
            { ...s.context, reason: "the drain started (status.deletion.nodeDrainStartTime)" },
            false,
          );
        } catch (error) {
          s.deletingReason = "InternalError";
          s.deletingMessage = "Please check controller logs for errors";
          throw error;
        }
        let drained: ReconcileResult | undefined;
        try {
          drained = await this.drainNode(s);
        } catch (error) {
          setV1Beta1Condition(machine, {
            type: "DrainingSucceeded",
            status: "False",
            reason: "DrainingFailed",
            severity: "Warning",
            message: asError(error).message,
          });
          s.deletingReason = "DrainingNode";
          s.deletingMessage = "Error draining Node, please check controller logs for errors";
          throw error;
        }
        if (drained?.requeueAfter) return drained;
        setV1Beta1Condition(machine, { type: "DrainingSucceeded", status: "True" });
      }

      if (this.isNodeVolumeDetachingAllowed(s)) {
        status.deletion ??= {};
        status.deletion.waitForNodeVolumeDetachStartTime ??= nowRfc3339();
        if (!getV1Beta1Conditions(machine).some((c) => c.type === "VolumeDetachSucceeded")) {
          setV1Beta1Condition(machine, {
            type: "VolumeDetachSucceeded",
            status: "False",
            reason: "WaitingForVolumeDetach",
            severity: "Info",
            message: "Waiting for node volumes to be detached",
          });
        }
        s.deletingReason = "WaitingForVolumeDetach";
        s.deletingMessage = `Waiting for Node volumes to be detached (started at ${status.deletion.waitForNodeVolumeDetachStartTime})`;
        let waiting: ReconcileResult | undefined;
        try {
          waiting = await this.waitForNodeVolumes(s);
        } catch (error) {
          s.deletingMessage =
            "Error waiting for volumes to be detached from Node, please check controller logs for errors";
          throw error;
        }
        if (waiting?.requeueAfter) return waiting;
        setV1Beta1Condition(machine, { type: "VolumeDetachSucceeded", status: "True" });
      }
    }

    const preTerminate = hasAnnotationWithPrefix(machine, PreTerminateDeleteHookPrefix);
    if (preTerminate.length > 0) {
      status.deletion ??= {};
      status.deletion.waitForPreTerminateHookStartTime ??= nowRfc3339();
      setV1Beta1Condition(machine, {
        type: "PreTerminateDeleteHookSucceeded",
        status: "False",
        reason: "WaitingExternalHook",
        severity: "Info",
      });
      s.deletingReason = "WaitingForPreTerminateHook";
      s.deletingMessage = `Waiting for pre-terminate hooks to succeed (hooks: ${preTerminate.join(",")})`;
      note("WaitingForPreTerminateHooks", preTerminate.join(","));
      return undefined;
    }
    setV1Beta1Condition(machine, { type: "PreTerminateDeleteHookSucceeded", status: "True" });

    const kind = machine.spec?.infrastructureRef?.kind ?? "";
    let infraDeleted: boolean;
    try {
      infraDeleted = await this.reconcileDeleteInfrastructure(s);
    } catch (error) {
      s.deletingReason = "InternalError";
      s.deletingMessage = `Failed to delete ${kind}, please check controller logs for errors`;
      throw error;
    }
    if (!infraDeleted) {
      s.deletingReason = "WaitingForInfrastructureDeletion";
      s.deletingMessage = `Waiting for ${kind} to be deleted`;
      note(
        "WaitingForInfrastructureDeletion",
        `${kind} ${machine.spec?.infrastructureRef?.name ?? ""}`,
      );
      return undefined;
    }

    // Core deletes the Node only once the infrastructure is gone (cluster-api#2565).
    if (deleteNodeAllowed) {
      const nodeName = status.nodeRef?.name ?? "";
      const deleteError = await this.deleteNodeWithRetries(s, nodeName);
      if (deleteError) {
        setV1Beta1Condition(machine, {
          type: "NodeHealthy",
          status: "False",
          reason: "DeletionFailed",
          severity: "Warning",
        });
        // The Machine defaulting webhook sets nodeDeletionTimeoutSeconds (10); the emulator, which has no
        // admission webhooks (E1), reads an absent value as that default.
        const timeout =
          machine.spec?.deletion?.nodeDeletionTimeoutSeconds ??
          DEFAULT_NODE_DELETION_TIMEOUT_SECONDS;
        const deletedAt = new Date(String(machine.metadata?.deletionTimestamp)).getTime();
        if (timeout === 0 || deletedAt + timeout * 1000 > Date.now()) {
          s.deletingReason = "DeletingNode";
          s.deletingMessage = "Error deleting Node, please check controller logs for errors";
          throw deleteError;
        }
        note("NodeDeletionTimeoutExpired", nodeName);
      }
    }

    s.deletingReason = "DeletionCompleted";
    s.deletingMessage = "Deletion completed";
    machine.metadata ??= {};
    machine.metadata.finalizers = (machine.metadata.finalizers ?? []).filter(
      (f) => f !== Finalizers.Machine,
    );
    return undefined;
  }

  /** `drainNode`: cordon, then evict what must go; requeue while Pods remain. */
  private async drainNode(s: Scope): Promise<ReconcileResult | undefined> {
    const { machine, trace } = s;
    const nodeName = machine.status?.nodeRef?.name ?? "";
    let connection: WorkloadConnection;
    try {
      connection = this.deps.clusterCache.getClient(clusterKey(s.cluster));
    } catch (error) {
      throw wrap(error, `failed to drain Node ${nodeName}`);
    }
    const node = await connection.cache.get(NodeResource, { name: nodeName });
    if (!node) {
      trace.notes.push({ event: "DrainSkippedNodeNotFound", detail: nodeName });
      return undefined;
    }
    const unreachable = isNodeUnreachable(node);
    if (node.spec?.unschedulable !== true) {
      try {
        await this.deps.writer.mergePatch(
          NodeResource,
          { name: nodeName },
          { spec: { unschedulable: true } },
          { ...s.context, reason: "cordon the Node before draining it" },
          undefined,
          connection.client,
        );
      } catch (error) {
        throw wrap(error, `failed to cordon Node ${nodeName}: failed to cordon Node`);
      }
      trace.notes.push({ event: "NodeCordoned", detail: nodeName });
    }
    const result: EvictionResult = {
      deletionTimestampSet: [],
      failed: new Map(),
      waitCompleted: [],
    };
    const pods = await this.podsForEviction(connection, nodeName, unreachable);
    if (
      pods.evict.length === 0 &&
      pods.waitCompleted.length === 0 &&
      pods.terminating.length === 0
    ) {
      trace.notes.push({ event: "DrainCompleted", detail: nodeName });
      return undefined;
    }
    result.deletionTimestampSet.push(...pods.terminating);
    result.waitCompleted.push(...pods.waitCompleted);
    for (const pod of pods.evict) {
      try {
        await this.deps.writer.evict(
          pod,
          unreachable ? 1 : undefined,
          { ...s.context, reason: `evict a Pod of Node ${nodeName}` },
          connection.client,
        );
        result.deletionTimestampSet.push(pod);
      } catch (error) {
        if (isNotFound(error)) continue;
        const message =
          error instanceof ApiError && error.code === 429
            ? (error.status.message ?? asError(error).message)
            : asError(error).message;
        result.failed.set(message, [...(result.failed.get(message) ?? []), pod]);
      }
    }
    if (drainCompleted(result)) {
      trace.notes.push({ event: "DrainCompleted", detail: nodeName });
      return undefined;
    }
    const interval = this.deps.options.drainRetryIntervalMs;
    this.deps.deferNext(s.key, interval);
    const message = drainConditionMessage(
      result,
      machine.status?.deletion?.nodeDrainStartTime ?? "",
    );
    setV1Beta1Condition(machine, {
      type: "DrainingSucceeded",
      status: "False",
      reason: "Draining",
      severity: "Info",
      message,
    });
    s.deletingReason = "DrainingNode";
    s.deletingMessage = message;
    trace.notes.push({
      event: "DrainNotCompleted",
      detail: `${nodeName}: ${pods.evict.length} evicted`,
    });
    return { requeueAfter: interval };
  }

  /**
   * `GetPodsForEviction` with kubectl drain's filters (deleted Pods of an unreachable Node, DaemonSet
   * Pods whose DaemonSet exists, static Pods, the `cluster.x-k8s.io/drain` label); MachineDrainRules are
   * not ported. An API server that serves no Pods (the in-memory one) has none to drain.
   */
  private async podsForEviction(
    connection: WorkloadConnection,
    nodeName: string,
    unreachable: boolean,
  ): Promise<{ evict: V1Pod[]; terminating: V1Pod[]; waitCompleted: V1Pod[] }> {
    const out = { evict: [] as V1Pod[], terminating: [] as V1Pod[], waitCompleted: [] as V1Pod[] };
    let pods: V1Pod[];
    try {
      pods = (
        await connection.client.list(PodResource, { fieldSelector: `spec.nodeName=${nodeName}` })
      ).items;
    } catch (error) {
      if (isNotFound(error)) return out;
      throw wrap(error, "failed to get Pods for eviction");
    }
    pods.sort((a, b) => (podKey(a) < podKey(b) ? -1 : 1));
    for (const pod of pods) {
      const deletedAt = pod.metadata?.deletionTimestamp;
      if (unreachable && deletedAt && Date.now() - new Date(String(deletedAt)).getTime() > 1_000)
        continue;
      const finished = pod.status?.phase === "Succeeded" || pod.status?.phase === "Failed";
      const controller = controllerOf(pod);
      if (controller?.kind === "DaemonSet" && !finished) {
        try {
          await connection.client.get(DaemonSetResource, {
            namespace: pod.metadata?.namespace ?? "",
            name: controller.name,
          });
          continue; // a DaemonSet Pod is left alone while its DaemonSet exists
        } catch (error) {
          if (!isNotFound(error)) throw wrap(error, "failed to get Pods for eviction");
        }
      }
      if (MirrorPodAnnotation in (pod.metadata?.annotations ?? {})) continue;
      const label = pod.metadata?.labels?.[PodDrainLabel];
      if (label !== undefined) {
        if (label.toLowerCase() === "skip") continue;
        if (label.replace("-", "").toLowerCase() === "waitcompleted") {
          if (!finished) out.waitCompleted.push(pod);
          continue;
        }
      }
      if (deletedAt) out.terminating.push(pod);
      else out.evict.push(pod);
    }
    return out;
  }

  /**
   * `shouldWaitForNodeVolumes`: wait while the Node reports attached volumes or a VolumeAttachment is
   * attached to it (the PersistentVolumeClaims of Pods the drain skipped are not subtracted). An API
   * server that serves no VolumeAttachments has none.
   */
  private async waitForNodeVolumes(s: Scope): Promise<ReconcileResult | undefined> {
    const nodeName = s.machine.status?.nodeRef?.name ?? "";
    const connection = this.deps.clusterCache.getClient(clusterKey(s.cluster));
    const node = await connection.cache.get(NodeResource, { name: nodeName });
    if (!node || isNodeUnreachable(node)) return undefined;
    let attached = (node.status?.volumesAttached ?? []).length;
    try {
      const list = await connection.client.list(VolumeAttachmentResource);
      attached += list.items.filter(
        (va) => va.status?.attached === true && va.spec?.nodeName === nodeName,
      ).length;
    } catch (error) {
      if (!isNotFound(error)) throw wrap(error, "failed to list VolumeAttachments");
    }
    if (attached === 0) return undefined;
    const interval = this.deps.options.drainRetryIntervalMs;
    this.deps.deferNext(s.key, interval);
    s.trace.notes.push({ event: "WaitingForVolumeDetach", detail: `${attached} attached` });
    return { requeueAfter: interval };
  }

  /**
   * `reconcileDeleteInfrastructure`: delete the InfraMachine once and report false until it is gone (the
   * InfraMachine's watch brings the Machine back when it goes).
   */
  private async reconcileDeleteInfrastructure(s: Scope): Promise<boolean> {
    const { machine } = s;
    if (!s.infraMachine && s.infraMachineIsNotFound) {
      setV1Beta1Condition(machine, {
        type: "InfrastructureReady",
        status: "False",
        reason: "Deleted",
        severity: "Info",
      });
      return true;
    }
    const im = s.infraMachine;
    if (im && !isDeleting(im)) {
      const ref = machine.spec?.infrastructureRef as VersionedRef;
      const resolved = await this.deps.resolver.resolve(ref);
      try {
        await this.deps.writer.delete(
          resolved.resource,
          { namespace: im.metadata?.namespace ?? "", name: im.metadata?.name ?? "" },
          { ...s.context, reason: "Machine is being deleted: delete its InfraMachine" },
        );
      } catch (error) {
        if (!isNotFound(error)) {
          throw wrap(
            error,
            `failed to delete ${im.kind} "${im.metadata?.name}" for Machine "${machine.metadata?.name}" in namespace "${machine.metadata?.namespace}"`,
          );
        }
      }
      s.trace.notes.push({
        event: "InfraMachineDeleted",
        detail: `${im.kind} ${im.metadata?.name}`,
      });
    }
    return false;
  }

  /** Core's `wait.PollUntilContextTimeout(2s, 10s)` around `deleteNode`; NotFound counts as deleted. */
  private async deleteNodeWithRetries(s: Scope, name: string): Promise<Error | undefined> {
    const deadline = Date.now() + this.deps.options.nodeDeletionRetryTimeoutMs;
    let lastError: Error | undefined;
    for (;;) {
      try {
        let connection: WorkloadConnection;
        try {
          connection = this.deps.clusterCache.getClient(clusterKey(s.cluster));
        } catch (error) {
          throw wrap(
            error,
            "failed deleting Node because connection to the workload cluster is down",
          );
        }
        const deleted = await this.deps.writer.delete(
          NodeResource,
          { name },
          { ...s.context, reason: "the InfraMachine is gone: delete the Machine's Node" },
          connection.client,
        );
        s.trace.notes.push({ event: deleted ? "NodeDeleted" : "NodeAlreadyGone", detail: name });
        return undefined;
      } catch (error) {
        if (isNotFound(error)) return undefined;
        lastError =
          error instanceof ClusterNotConnectedError ||
          /connection to the workload/.test(asError(error).message)
            ? asError(error)
            : wrap(error, `error deleting node ${name}`);
      }
      if (Date.now() + 2_000 > deadline) return lastError;
      await new Promise((resolve) => setTimeout(resolve, 2_000));
    }
  }

  /** `updateStatus`: the conditions core computes at the end of every reconcile, then the phase. */
  private updateStatus(s: Scope): ReconcileResult | undefined {
    const { machine } = s;
    // No bootstrap configRef (a MachinePool Machine's dataSecretName is ""): the data is provided.
    setCondition(machine, {
      type: "BootstrapConfigReady",
      status: "True",
      reason: "DataSecretProvided",
    });
    this.setInfrastructureReadyCondition(s);
    this.setNodeConditions(s);
    if (isDeleting(machine)) {
      setCondition(machine, {
        type: "Deleting",
        status: "True",
        reason: s.deletingReason ?? "",
        message: s.deletingMessage ?? "",
      });
    } else {
      setCondition(machine, { type: "Deleting", status: "False", reason: "NotDeleting" });
    }
    setCondition(machine, { type: "Updating", status: "False", reason: "NotUpdating" });
    this.setReadyCondition(machine);
    this.setPhase(machine);
    return this.setAvailableCondition(machine);
  }

  private setInfrastructureReadyCondition(s: Scope): void {
    const { machine } = s;
    const kind = machine.spec?.infrastructureRef?.kind ?? "";
    const provisioned = machine.status?.initialization?.infrastructureProvisioned === true;
    if (s.infraMachine) {
      try {
        const ready = mirrorCondition(s.infraMachine, "Ready", {
          targetConditionType: "InfrastructureReady",
          fallback: {
            status: provisioned ? "True" : "False",
            reason: provisioned ? "Ready" : "NotReady",
            message: provisioned ? "" : `${kind} status.initialization.provisioned is false`,
          },
        });
        if (ready.reason === "NoReasonReported" && ready.status === "True") ready.reason = "Ready";
        setCondition(machine, ready);
      } catch (error) {
        setCondition(machine, {
          type: "InfrastructureReady",
          status: "Unknown",
          reason: "InvalidConditionReported",
          message: asError(error).message,
        });
      }
      return;
    }
    if (!s.infraMachineIsNotFound) {
      setCondition(machine, {
        type: "InfrastructureReady",
        status: "Unknown",
        reason: "InternalError",
        message: "Please check controller logs for errors",
      });
      return;
    }
    if (isDeleting(machine)) {
      setCondition(machine, {
        type: "InfrastructureReady",
        status: "False",
        reason: provisioned ? "ObjectDeleted" : "ObjectDoesNotExist",
        message: provisioned ? `${kind} has been deleted` : `${kind} does not exist`,
      });
      return;
    }
    setCondition(machine, {
      type: "InfrastructureReady",
      status: "False",
      reason: provisioned ? "ObjectDeleted" : "ObjectDoesNotExist",
      message: provisioned
        ? `${kind} has been deleted while the Machine still exists`
        : `${kind} does not exist`,
    });
  }

  /** `setNodeHealthyAndReadyConditions`. */
  private setNodeConditions(s: Scope): void {
    const { cluster, machine } = s;
    const both = (status: ConditionStatus, reason: string, message: string) => {
      for (const type of ["NodeReady", "NodeHealthy"])
        setCondition(machine, { type, status, reason, message });
    };
    const has = (type: string) => getCondition(machine, type) !== undefined;
    if (cluster.status?.initialization?.infrastructureProvisioned !== true) {
      both(
        "Unknown",
        "InspectionFailed",
        "Waiting for Cluster status.initialization.infrastructureProvisioned to be true",
      );
      return;
    }
    const initialized = (cluster.status?.conditions ?? []).find(
      (c) => c.type === "ControlPlaneInitialized",
    );
    if (initialized?.status !== "True") {
      both("Unknown", "InspectionFailed", "Waiting for Cluster control plane to be initialized");
      return;
    }
    const health = this.deps.clusterCache.healthCheckingState(clusterKey(cluster));
    if (health.lastProbeSuccessTime === undefined && health.consecutiveFailures < 5) {
      if (!has("NodeReady") || !has("NodeHealthy"))
        both("Unknown", "ConnectionDown", "Remote connection not established yet");
      return;
    }
    const lastSuccess = health.lastProbeSuccessTime ?? 0;
    const since = Math.max(
      lastSuccess,
      new Date(String(initialized.lastTransitionTime ?? 0)).getTime(),
    );
    const lastProbeMessage =
      health.lastProbeSuccessTime === undefined
        ? ""
        : `Last successful probe at ${new Date(Math.floor(lastSuccess / 1000) * 1000).toISOString().replace(".000Z", "Z")}`;
    if (Date.now() - since > this.deps.options.remoteConditionsGracePeriodMs) {
      both("Unknown", "ConnectionDown", lastProbeMessage);
      return;
    }
    if (s.nodeGetError) {
      if (s.nodeGetError instanceof ClusterNotConnectedError) {
        if (!has("NodeReady") || !has("NodeHealthy"))
          both("Unknown", "ConnectionDown", lastProbeMessage);
        return;
      }
      both("Unknown", "InternalError", "Please check controller logs for errors");
      return;
    }
    const node = s.node;
    if (node) {
      const ready = nodeCondition(node, "Ready");
      if (ready) {
        const status = ready.status as ConditionStatus;
        const input = {
          type: "NodeReady",
          status,
          reason:
            status === "True"
              ? "NodeReady"
              : status === "False"
                ? "NodeNotReady"
                : "NodeReadyUnknown",
          message: status !== "True" && ready.message ? `* Node.Ready: ${ready.message}` : "",
          ...(ready.lastTransitionTime
            ? { lastTransitionTime: String(ready.lastTransitionTime) }
            : {}),
        };
        setCondition(machine, input);
      } else {
        setCondition(machine, {
          type: "NodeReady",
          status: "Unknown",
          reason: "NodeReadyUnknown",
          message: "* Node.Ready: Condition not yet reported",
        });
      }
      const summary = summarizeNode(node);
      setCondition(machine, { type: "NodeHealthy", ...summary });
      return;
    }
    const nodeRef = machine.status?.nodeRef?.name;
    if (isDeleting(machine)) {
      if (nodeRef) both("False", "NodeDeleted", `Node ${nodeRef} has been deleted`);
      else both("Unknown", "NodeDoesNotExist", "Node does not exist");
      return;
    }
    if (nodeRef) {
      both(
        "False",
        "NodeDeleted",
        `Node ${nodeRef} has been deleted while the Machine still exists`,
      );
      return;
    }
    if (machine.spec?.providerID) {
      both(
        "Unknown",
        "InspectionFailed",
        `Waiting for a Node with spec.providerID ${machine.spec.providerID} to exist`,
      );
      return;
    }
    both(
      "Unknown",
      "InspectionFailed",
      `Waiting for ${machine.spec?.infrastructureRef?.kind ?? ""} to report spec.providerID`,
    );
  }

  /** `setReadyCondition`: the summary with core's custom merge strategy and the Deleting override. */
  private setReadyCondition(machine: MachineObject): void {
    const gates = machine.spec?.readinessGates ?? [];
    const negative = [
      "Deleting",
      "Updating",
      ...gates.filter((g) => g.polarity === "Negative").map((g) => g.conditionType),
    ];
    const deleting = isDeleting(machine);
    const defaultPriority = (c: ConditionLike): MergePriority => {
      const neg = negative.includes(c.type);
      if (c.status === "True") return neg ? "issue" : "info";
      if (c.status === "False") return neg ? "info" : "issue";
      return "unknown";
    };
    const priority = (c: ConditionLike): MergePriority => {
      if (deleting) {
        if (
          (c.type === "BootstrapConfigReady" || c.type === "InfrastructureReady") &&
          (c.reason === "ObjectDeleted" || c.reason === "ObjectDoesNotExist")
        )
          return "info";
        if (
          c.type === "NodeHealthy" &&
          (c.reason === "NodeDeleted" || c.reason === "NodeDoesNotExist")
        )
          return "info";
      }
      return defaultPriority(c);
    };
    const overrides: ConditionLike[] = [];
    if (deleting) {
      const current = getCondition(machine, "Deleting");
      let message = "Machine deletion in progress";
      if (current) {
        message = `Machine deletion in progress, stage: ${current.reason}`;
        const since = Date.now() - new Date(String(machine.metadata?.deletionTimestamp)).getTime();
        if (since > 15 * 60_000) {
          message = `Machine deletion in progress since more than 15m, stage: ${current.reason}`;
          const drainStart = machine.status?.deletion?.nodeDrainStartTime;
          if (
            current.reason === "DrainingNode" &&
            drainStart &&
            Date.now() - new Date(drainStart).getTime() > 5 * 60_000
          ) {
            const delays: string[] = [];
            const m = current.message ?? "";
            if (m.includes("cannot evict pod as it would violate the pod's disruption budget."))
              delays.push("PodDisruptionBudgets");
            if (m.includes("deletionTimestamp set, but still not removed from the Node"))
              delays.push("Pods not terminating");
            if (m.includes("failed to evict Pod")) delays.push("Pod eviction errors");
            if (m.includes("waiting for completion")) delays.push("Pods not completed yet");
            if (delays.length > 0) message += `, delay likely due to ${delays.join(", ")}`;
          }
        }
      }
      overrides.push({ type: "Deleting", status: "True", reason: "Deleting", message });
    }
    let ready: ConditionLike & { status: ConditionStatus; reason: string };
    try {
      ready = summaryCondition(machine, "Ready", {
        forConditionTypes: [
          "Deleting",
          "Updating",
          "BootstrapConfigReady",
          "InfrastructureReady",
          "NodeHealthy",
          "HealthCheckSucceeded",
          ...gates.map((g) => g.conditionType),
        ],
        ignoreTypesIfMissing: ["HealthCheckSucceeded"],
        priority,
        summaryMessageTransform: transformControlPlaneLines,
        reasons: { issue: "NotReady", unknown: "ReadyUnknown", info: "Ready" },
        overrideConditions: overrides,
      });
    } catch {
      ready = {
        type: "Ready",
        status: "Unknown",
        reason: "InternalError",
        message: "Please check controller logs for errors",
      };
    }
    setCondition(machine, ready);
  }

  /** `setAvailableCondition`: Ready for at least `minReadySeconds`. */
  private setAvailableCondition(machine: MachineObject): ReconcileResult | undefined {
    const ready = getCondition(machine, "Ready");
    if (ready?.status !== "True") {
      setCondition(machine, { type: "Available", status: "False", reason: "NotReady" });
      return undefined;
    }
    const minReadyMs = (machine.spec?.minReadySeconds ?? 0) * 1000;
    const remaining = new Date(ready.lastTransitionTime).getTime() + minReadyMs - Date.now();
    if (remaining <= 0) {
      setCondition(machine, { type: "Available", status: "True", reason: "Available" });
      return undefined;
    }
    setCondition(machine, {
      type: "Available",
      status: "False",
      reason: "WaitingForMinReadySeconds",
    });
    return { requeueAfter: Math.ceil(remaining) };
  }

  /** `setMachinePhaseAndLastUpdated`: later rules override earlier ones. */
  private setPhase(machine: MachineObject): void {
    machine.status ??= {};
    const status = machine.status;
    const original = status.phase;
    if (!status.phase) status.phase = "Pending";
    const provisioned = status.initialization?.infrastructureProvisioned === true;
    if (status.initialization?.bootstrapDataSecretCreated === true && !provisioned)
      status.phase = "Provisioning";
    if (machine.spec?.providerID) status.phase = "Provisioned";
    if (status.nodeRef?.name && provisioned) status.phase = "Running";
    if (getCondition(machine, "Updating")?.status === "True") status.phase = "Updating";
    if (isDeleting(machine)) status.phase = "Deleting";
    if (status.phase !== original) status.lastUpdated = nowRfc3339();
  }
}
