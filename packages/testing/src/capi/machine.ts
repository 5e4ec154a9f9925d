/**
 * Core's Machine controller for MachinePool Machines, emulated: the reconciler that runs the phases in
 * core's order (ownership and labels, infrastructure, Node, deletion) and then writes the status; the
 * Node, drain, deletion and status phases live in the `machine-*` modules beside it.
 *
 * @module
 */
import { setV1Beta1MirrorCondition } from "@capi-ts/sdk/conditions";
import { CLUSTER_API_GROUP, Finalizers, Labels } from "@capi-ts/sdk/contract";
import { PatchHelper } from "@capi-ts/sdk/patch";
import { isNotFound, type ReconcileRequest, type ReconcileResult } from "@capi-ts/sdk/runtime";
import type { V1OwnerReference } from "@kubernetes/client-node";
import {
  asError,
  controllerOf,
  controllerReferenceTo,
  ExternalNotFoundError,
  groupOf,
  initializationFlag,
  lowestNonZero,
  nestedString,
  noteTo,
  type ReconcileTrace,
  readField,
  stopsForPause,
} from "./controller-helpers.js";
import { reconcileDelete } from "./machine-deletion.js";
import { reconcileNode } from "./machine-node.js";
import {
  isMachinePoolMachine,
  type MachineReconcilerDeps,
  type MachineScope,
  machineAccessorError,
} from "./machine-scope.js";
import { patchMachine, updateStatus } from "./machine-status.js";
import {
  ClusterResource,
  describeKey,
  type ExternalObject,
  isDefinedRef,
  isDeleting,
  jsonCopy,
  type MachineObject,
  MachineResource,
  type VersionedRef,
} from "./types.js";
import type { WriteContext } from "./writes.js";

export {
  isMachinePoolMachine,
  type MachineReconcilerDeps,
  type MachineReconcilerOptions,
} from "./machine-scope.js";
export { type MachineObject, MachineResource } from "./types.js";

type Phase = (scope: MachineScope) => Promise<ReconcileResult | undefined>;

/** Go `kerrors.NewAggregate` text. */
function aggregate(errors: Error[]): Error {
  if (errors.length === 1) return errors[0] as Error;
  return new Error(`[${errors.map((e) => e.message).join(", ")}]`);
}

/** Go's `%v` of a GroupVersionKind, e.g. `infrastructure.cluster.x-k8s.io/v1beta2, Kind=DevMachine`. */
function gvkString(obj: ExternalObject): string {
  return `${obj.apiVersion ?? ""}, Kind=${obj.kind ?? ""}`;
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
    const note = noteTo(trace);
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
    const transport = writer.transport(MachineResource, ctx("Paused condition"));
    if (await stopsForPause(transport, cluster, machine, MachineResource, trace)) return undefined;

    const scope: MachineScope = {
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
      (s) => reconcileNode(this.deps, s),
    ];
    if (isDeleting(machine)) phases.push((s) => reconcileDelete(this.deps, s));
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
    result = lowestNonZero(result, updateStatus(this.deps, scope));
    const finalizerRemoved =
      isDeleting(machine) && !(machine.metadata?.finalizers ?? []).includes(Finalizers.Machine);
    try {
      await patchMachine(
        this.deps,
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

  /** `reconcileMachineOwnerAndLabels`: a controlled Machine is never adopted; the cluster-name label. */
  private async reconcileOwnerAndLabels(s: MachineScope): Promise<undefined> {
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
  private async reconcileExternal(s: MachineScope, ref: VersionedRef): Promise<ExternalObject> {
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
    const desired = controllerReferenceTo("Machine", machine);
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
    const index = kept.findIndex(
      (r) =>
        groupOf(r.apiVersion) === CLUSTER_API_GROUP &&
        r.kind === "Machine" &&
        r.name === desired.name,
    );
    if (index < 0) kept.push(desired);
    else kept[index] = desired;
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
  private readFailures(s: MachineScope, obj: ExternalObject): void {
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
  private async reconcileInfrastructure(s: MachineScope): Promise<ReconcileResult | undefined> {
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
    const provisioned = initializationFlag(
      obj,
      contractVersion,
      "provisioned",
      machineAccessorError,
    );
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
}
