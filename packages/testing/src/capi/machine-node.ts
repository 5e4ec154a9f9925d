/**
 * The Node side of core's emulated Machine controller (`reconcileNode`): finding the Machine's Node in
 * the workload cluster by providerID, `status.nodeRef` and `nodeInfo`, the deprecated NodeHealthy
 * condition, and keeping the Node's labels, annotations and taints in sync with the Machine.
 *
 * @module
 */
import { setV1Beta1Condition } from "@capi-ts/sdk/conditions";
import { NodeResource } from "@capi-ts/sdk/runtime";
import type { V1Node } from "@kubernetes/client-node";
import type { WorkloadConnection } from "./clustercache.js";
import { asError, clusterKey, nestedBool, readField, wrap } from "./controller-helpers.js";
import {
  type MachineReconcilerDeps,
  type MachineScope,
  machineAccessorError,
} from "./machine-scope.js";
import { summarizeNodeV1Beta1 } from "./node-health.js";
import {
  InterruptibleLabel,
  managedAnnotations,
  managedLabels,
  nodeSyncPatch,
} from "./node-metadata.js";
import { type ClusterObject, isDeleting } from "./types.js";

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

function conditionIsTrue(obj: { status?: unknown }, type: string): boolean {
  const list = readField(obj, ["status", "conditions"]);
  return (
    Array.isArray(list) &&
    list.some((c: { type?: string; status?: string }) => c?.type === type && c?.status === "True")
  );
}

/** `watchClusterNodes`: only once the control plane is initialized (errors while disconnected). */
function watchClusterNodes(deps: MachineReconcilerDeps, cluster: ClusterObject): void {
  if (!conditionIsTrue(cluster, "ControlPlaneInitialized")) return;
  const handler = deps.nodeHandler();
  if (!handler) return;
  deps.clusterCache.watchNodes(clusterKey(cluster), "machine-watchNodes", handler);
}

/** `getNode`: the Node with this providerID, from the connection's Node cache. */
export async function getNode(
  connection: WorkloadConnection,
  providerID: string,
): Promise<V1Node | undefined> {
  const nodes = (await connection.cache.list(NodeResource)).filter(
    (node) => node.spec?.providerID === providerID,
  );
  if (nodes.length > 1) {
    throw new Error(`unexpectedly found more than one Node matching the providerID ${providerID}`);
  }
  return nodes[0];
}

/** `reconcileNode`. */
export async function reconcileNode(
  deps: MachineReconcilerDeps,
  s: MachineScope,
): Promise<undefined> {
  const { machine } = s;
  try {
    watchClusterNodes(deps, s.cluster);
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
    connection = deps.clusterCache.getClient(clusterKey(s.cluster));
  } catch (error) {
    s.nodeGetError = asError(error);
    throw error;
  }
  let node: V1Node | undefined;
  try {
    node = await getNode(connection, providerID);
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
    await patchNode(deps, s, connection, node, labels, managedAnnotations(machine));
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

/** `patchNode`: one merge patch of the Node's metadata and taints, only when something changed. */
async function patchNode(
  deps: MachineReconcilerDeps,
  s: MachineScope,
  connection: WorkloadConnection,
  node: V1Node,
  newLabels: Record<string, string>,
  newAnnotations: Record<string, string>,
): Promise<void> {
  const sync = nodeSyncPatch(node, newLabels, newAnnotations);
  if (!sync) return;
  await deps.writer.mergePatch(
    NodeResource,
    { name: node.metadata?.name ?? "" },
    sync.patch,
    {
      ...s.context,
      reason: sync.taintsChanged
        ? "sync the Machine's labels and annotations to its Node and remove the node.cluster.x-k8s.io/uninitialized taint"
        : "sync the Machine's labels and annotations to its Node",
    },
    undefined,
    connection.client,
  );
}
