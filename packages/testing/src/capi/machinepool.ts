/**
 * Core's MachinePool controller, emulated: the reconciler with the emulated admission webhooks, the
 * phases in core's order (owner and labels, bootstrap, infrastructure, Machines, Node references,
 * deletion) and the deferred status patch; Machines, Nodes and status live in the `machinepool-*`
 * modules beside it.
 *
 * @module
 */
import { setV1Beta1Condition, setV1Beta1MirrorCondition } from "@capi-ts/sdk/conditions";
import { CLUSTER_API_GROUP, Finalizers, Labels } from "@capi-ts/sdk/contract";
import { PatchHelper } from "@capi-ts/sdk/patch";
import type { ReconcileRequest, ReconcileResult, ResourceDescriptor } from "@capi-ts/sdk/runtime";
import type { V1OwnerReference } from "@kubernetes/client-node";
import {
  asError,
  CorePanicError,
  clusterKey,
  controllerReferenceTo,
  ExternalNotFoundError,
  groupOf,
  initializationFlag,
  lowestNonZero,
  nestedBool,
  nestedString,
  noteTo,
  type ReconcileTrace,
  stopsForPause,
  wrap,
} from "./controller-helpers.js";
import {
  getMachinesForMachinePool,
  reconcileMachines,
  setMachinesUpToDate,
} from "./machinepool-machines.js";
import { deleteRetiredNodes, nodeRefMap, reconcileNodeRefs } from "./machinepool-nodes.js";
import {
  AggregateReconcileError,
  type MachinePoolReconcilerOptions,
  type MachinePoolScope,
  poolAccessorError,
  type ReconcilerDeps,
  setDeprecatedCounter,
} from "./machinepool-scope.js";
import {
  OWNED_CONDITIONS,
  reconcilePhase,
  setV1Beta1Summary,
  updateStatus,
} from "./machinepool-status.js";
import {
  ClusterResource,
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

export type { ReconcileNote, ReconcileTrace } from "./controller-helpers.js";
export {
  AggregateReconcileError,
  type MachinePoolReconcilerOptions,
  type ProvisionedFrom,
  type ReconcilerDeps,
} from "./machinepool-scope.js";

type Phase = (scope: MachinePoolScope) => Promise<ReconcileResult | undefined>;

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
    const note = noteTo(trace);

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
    const note = noteTo(trace);

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
    const transport = writer.transport(MachinePoolResource, {
      reason: "Paused condition",
      machinePool: key,
    });
    if (await stopsForPause(transport, cluster, mp, MachinePoolResource, trace)) return undefined;

    const scope: MachinePoolScope = { cluster, mp, trace, key };
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
          [
            (s) => getMachinesForMachinePool(this.deps, s),
            "failed to get Machines for MachinePool",
          ],
          [(s) => reconcileNodeRefs(this.deps, s), "failed to reconcile nodeRefs"],
          [(s) => setMachinesUpToDate(this.deps, s), "failed to set machines up to date"],
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
      updateStatus(scope);
    } catch (error) {
      errors.push(asError(error));
    }
    reconcilePhase(mp);
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

  private async setOwnerAndLabels(scope: MachinePoolScope): Promise<undefined> {
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
  private async reconcileExternal(
    scope: MachinePoolScope,
    ref: VersionedRef,
  ): Promise<ExternalObject> {
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

  private async reconcileBootstrap(scope: MachinePoolScope): Promise<undefined> {
    const { mp } = scope;
    const bootstrap = mp.spec?.template?.spec?.bootstrap;
    const configRef = bootstrap?.configRef;
    mp.status ??= {};
    if (isDefinedRef(configRef)) {
      const config = await this.reconcileExternal(scope, configRef);
      if (isDeleting(config)) return undefined;
      const { contractVersion } = await this.deps.resolver.resolve(configRef);
      const created = initializationFlag(
        config,
        contractVersion,
        "dataSecretCreated",
        poolAccessorError,
      );
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

  private async reconcileInfrastructure(scope: MachinePoolScope): Promise<undefined> {
    const { mp } = scope;
    const ref = mp.spec?.template?.spec?.infrastructureRef;
    const note = noteTo(scope.trace);
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
      scope.nodeRefMap = await nodeRefMap(connection);
    } catch (error) {
      nodeRefsError = asError(error);
    }
    let machinesError: Error | undefined;
    try {
      await reconcileMachines(this.deps, scope, imp);
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

  private async reconcileDelete(scope: MachinePoolScope): Promise<undefined> {
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
          await deleteRetiredNodes(
            this.deps,
            scope,
            connection,
            nodeRefs,
            mp.spec?.providerIDList ?? [],
          );
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

  private async reconcileDeleteExternal(scope: MachinePoolScope): Promise<boolean> {
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
}

/**
 * Go `controllerutil.SetControllerReference(mp, obj)`: fails with "already owned" if another
 * controller reference exists; otherwise upserts the MachinePool reference (matched by group, kind,
 * name).
 */
function setControllerReference(mp: MachinePoolObject, obj: ExternalObject): void {
  const ref = controllerReferenceTo("MachinePool", mp);
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
