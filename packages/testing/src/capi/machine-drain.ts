/**
 * Drain and volume detach of a deleting Machine's Node, as core's emulated Machine controller does
 * them: cordon, evict the Pods kubectl drain would, requeue until they are gone, then wait for the
 * Node's volumes to be detached; each unless excluded by annotation or out of time.
 *
 * @module
 */
import { setV1Beta1Condition } from "@capi-ts/sdk/conditions";
import {
  ApiError,
  isNotFound,
  NodeResource,
  type ReconcileResult,
  type ResourceDescriptor,
} from "@capi-ts/sdk/runtime";
import type { V1Pod } from "@kubernetes/client-node";
import type { WorkloadConnection } from "./clustercache.js";
import { asError, clusterKey, controllerOf, wrap } from "./controller-helpers.js";
import {
  drainCompleted,
  drainConditionMessage,
  type EvictionResult,
  podKey,
} from "./drain-report.js";
import type { MachineReconcilerDeps, MachineScope } from "./machine-scope.js";
import { isNodeUnreachable } from "./node-health.js";
import { isDeleting, type MachineObject, PodResource } from "./types.js";

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

/** Annotations and labels core's drain reads (`api/core/v1beta2`, v1.14.2). */
const ExcludeNodeDrainingAnnotation = "machine.cluster.x-k8s.io/exclude-node-draining";
const ExcludeWaitForNodeVolumeDetachAnnotation =
  "machine.cluster.x-k8s.io/exclude-wait-for-node-volume-detach";
const PodDrainLabel = "cluster.x-k8s.io/drain";
const MirrorPodAnnotation = "kubernetes.io/config.mirror";

function drainTimeoutExceeded(machine: MachineObject): boolean {
  const timeout = machine.spec?.deletion?.nodeDrainTimeoutSeconds;
  const started = machine.status?.deletion?.nodeDrainStartTime;
  if (!machine.status?.deletion || timeout === undefined || timeout <= 0 || !started) return false;
  return (Date.now() - new Date(started).getTime()) / 1000 >= timeout;
}

function volumeDetachTimeoutExceeded(machine: MachineObject): boolean {
  const timeout = machine.spec?.deletion?.nodeVolumeDetachTimeoutSeconds;
  const started = machine.status?.deletion?.waitForNodeVolumeDetachStartTime;
  if (!machine.status?.deletion || timeout === undefined || timeout <= 0 || !started) return false;
  return (Date.now() - new Date(started).getTime()) / 1000 >= timeout;
}

/** `isNodeDrainAllowed`: no exclusion annotation, no pre-terminate wait, the InfraMachine alive, time left. */
export function isNodeDrainAllowed(s: MachineScope): boolean {
  const { machine } = s;
  if (ExcludeNodeDrainingAnnotation in (machine.metadata?.annotations ?? {})) return false;
  if (machine.status?.deletion?.waitForPreTerminateHookStartTime) return false;
  if (!s.infraMachine || isDeleting(s.infraMachine)) return false;
  return !drainTimeoutExceeded(machine);
}

/** `isNodeVolumeDetachingAllowed`: as the drain, with its own annotation and timeout. */
export function isNodeVolumeDetachingAllowed(s: MachineScope): boolean {
  const { machine } = s;
  if (ExcludeWaitForNodeVolumeDetachAnnotation in (machine.metadata?.annotations ?? {}))
    return false;
  if (machine.status?.deletion?.waitForPreTerminateHookStartTime) return false;
  if (!s.infraMachine || isDeleting(s.infraMachine)) return false;
  return !volumeDetachTimeoutExceeded(machine);
}

/** `drainNode`: cordon, then evict what must go; requeue while Pods remain. */
export async function drainNode(
  deps: MachineReconcilerDeps,
  s: MachineScope,
): Promise<ReconcileResult | undefined> {
  const { machine, trace } = s;
  const nodeName = machine.status?.nodeRef?.name ?? "";
  let connection: WorkloadConnection;
  try {
    connection = deps.clusterCache.getClient(clusterKey(s.cluster));
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
      await deps.writer.mergePatch(
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
  const pods = await podsForEviction(connection, nodeName, unreachable);
  if (pods.evict.length === 0 && pods.waitCompleted.length === 0 && pods.terminating.length === 0) {
    trace.notes.push({ event: "DrainCompleted", detail: nodeName });
    return undefined;
  }
  result.deletionTimestampSet.push(...pods.terminating);
  result.waitCompleted.push(...pods.waitCompleted);
  for (const pod of pods.evict) {
    try {
      await deps.writer.evict(
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
  const interval = deps.options.drainRetryIntervalMs;
  deps.deferNext(s.key, interval);
  const message = drainConditionMessage(result, machine.status?.deletion?.nodeDrainStartTime ?? "");
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
async function podsForEviction(
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
export async function waitForNodeVolumes(
  deps: MachineReconcilerDeps,
  s: MachineScope,
): Promise<ReconcileResult | undefined> {
  const nodeName = s.machine.status?.nodeRef?.name ?? "";
  const connection = deps.clusterCache.getClient(clusterKey(s.cluster));
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
  const interval = deps.options.drainRetryIntervalMs;
  deps.deferNext(s.key, interval);
  s.trace.notes.push({ event: "WaitingForVolumeDetach", detail: `${attached} attached` });
  return { requeueAfter: interval };
}
