/**
 * Deletion of a Machine by core's emulated Machine controller (`reconcileDelete`), in core's order:
 * pre-drain hooks, drain and volume detach, pre-terminate hooks, the InfraMachine deleted and waited
 * for, the Node deleted, the finalizer removed; and the reasons the Deleting condition gives meanwhile.
 *
 * @module
 */
import { getV1Beta1Conditions, setV1Beta1Condition } from "@capi-ts/sdk/conditions";
import { Finalizers, Labels } from "@capi-ts/sdk/contract";
import { PatchHelper } from "@capi-ts/sdk/patch";
import { isNotFound, NodeResource, type ReconcileResult } from "@capi-ts/sdk/runtime";
import { ClusterNotConnectedError, type WorkloadConnection } from "./clustercache.js";
import {
  asError,
  clusterKey,
  nestedString,
  noteTo,
  readField,
  wrap,
} from "./controller-helpers.js";
import {
  drainNode,
  isNodeDrainAllowed,
  isNodeVolumeDetachingAllowed,
  waitForNodeVolumes,
} from "./machine-drain.js";
import { getNode } from "./machine-node.js";
import {
  type MachineReconcilerDeps,
  type MachineScope,
  machineAccessorError,
  nowRfc3339,
} from "./machine-scope.js";
import { patchMachine } from "./machine-status.js";
import {
  isDefinedRef,
  isDeleting,
  type MachineObject,
  MachineResource,
  type VersionedRef,
} from "./types.js";
import { DEFAULT_NODE_DELETION_TIMEOUT_SECONDS } from "./webhook.js";

const PreDrainDeleteHookPrefix = "pre-drain.delete.hook.machine.cluster.x-k8s.io";
const PreTerminateDeleteHookPrefix = "pre-terminate.delete.hook.machine.cluster.x-k8s.io";

/** The Machine's annotations of a lifecycle hook, sorted: each one holds the deletion at its stage. */
function hasAnnotationWithPrefix(machine: MachineObject, prefix: string): string[] {
  return Object.keys(machine.metadata?.annotations ?? {})
    .filter((key) => key.startsWith(prefix))
    .sort();
}

/**
 * `isDeleteNodeAllowed`: undefined when core may drain and delete the Node, else why not. Core skips
 * both while the Cluster is being deleted, without a nodeRef, while the control plane object is being
 * deleted, and when the Cluster has no control plane Machine left, unless its control plane is
 * externally managed (`status.externalManagedControlPlane`).
 */
async function isDeleteNodeAllowed(
  deps: MachineReconcilerDeps,
  s: MachineScope,
): Promise<string | undefined> {
  const { cluster, machine } = s;
  if (isDeleting(cluster)) return "cluster is being deleted";
  machine.status ??= {};
  const status = machine.status;
  let providerID = machine.spec?.providerID ?? "";
  if (!providerID && s.infraMachine) {
    try {
      providerID = nestedString(s.infraMachine, ["spec", "providerID"], machineAccessorError) ?? "";
    } catch {
      providerID = "";
    }
  }
  if (!status.nodeRef?.name && providerID) {
    // Best effort, as core: errors are only logged.
    try {
      const connection = deps.clusterCache.getClient(clusterKey(cluster));
      const node = await getNode(connection, providerID);
      if (node) status.nodeRef = { name: node.metadata?.name ?? "" };
    } catch {
      // logged by core, not returned
    }
  }
  if (!status.nodeRef?.name) return "noderef is nil";
  const cpRef = cluster.spec?.controlPlaneRef;
  if (isDefinedRef(cpRef)) {
    const resolved = await deps.resolver.resolve(cpRef);
    await deps.readExternal(resolved.resource);
    const cp = await deps.cache.get(resolved.resource, {
      namespace: cluster.metadata?.namespace ?? "",
      name: cpRef.name,
    });
    // A control plane object that does not exist is logged and the check goes on with the Machines.
    if (cp) {
      if (isDeleting(cp)) return "control plane is being deleted";
      if (readField(cp, ["status", "externalManagedControlPlane"]) === true) return undefined;
    }
  }
  const machines = await deps.cache.list(MachineResource, {
    namespace: cluster.metadata?.namespace ?? "",
    labelSelector: `${Labels.ClusterName}=${cluster.metadata?.name ?? ""}`,
  });
  const controlPlane = machines.filter(
    (m) => !isDeleting(m) && m.metadata?.labels?.[Labels.MachineControlPlane] !== undefined,
  );
  if (controlPlane.length === 0) return "no control plane members";
  return undefined;
}

/** `reconcileDelete`: drain, volumes, InfraMachine, Node, finalizer — in core's order. */
export async function reconcileDelete(
  deps: MachineReconcilerDeps,
  s: MachineScope,
): Promise<ReconcileResult | undefined> {
  const { machine, trace } = s;
  const note = noteTo(trace);
  s.deletingReason = "Deleting";
  s.deletingMessage = "Deletion started";
  let notAllowed: string | undefined;
  try {
    notAllowed = await isDeleteNodeAllowed(deps, s);
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

    if (isNodeDrainAllowed(s)) {
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
        await patchMachine(
          deps,
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
        drained = await drainNode(deps, s);
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

    if (isNodeVolumeDetachingAllowed(s)) {
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
        waiting = await waitForNodeVolumes(deps, s);
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
    infraDeleted = await reconcileDeleteInfrastructure(deps, s);
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
    const deleteError = await deleteNodeWithRetries(deps, s, nodeName);
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
        machine.spec?.deletion?.nodeDeletionTimeoutSeconds ?? DEFAULT_NODE_DELETION_TIMEOUT_SECONDS;
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

/**
 * `reconcileDeleteInfrastructure`: delete the InfraMachine once and report false until it is gone (the
 * InfraMachine's watch brings the Machine back when it goes).
 */
async function reconcileDeleteInfrastructure(
  deps: MachineReconcilerDeps,
  s: MachineScope,
): Promise<boolean> {
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
    const resolved = await deps.resolver.resolve(ref);
    try {
      await deps.writer.delete(
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
async function deleteNodeWithRetries(
  deps: MachineReconcilerDeps,
  s: MachineScope,
  name: string,
): Promise<Error | undefined> {
  const deadline = Date.now() + deps.options.nodeDeletionRetryTimeoutMs;
  let lastError: Error | undefined;
  for (;;) {
    try {
      let connection: WorkloadConnection;
      try {
        connection = deps.clusterCache.getClient(clusterKey(s.cluster));
      } catch (error) {
        throw wrap(
          error,
          "failed deleting Node because connection to the workload cluster is down",
        );
      }
      const deleted = await deps.writer.delete(
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
