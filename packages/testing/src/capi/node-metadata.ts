/**
 * What core's Machine controller keeps on a Machine's Node: the managed labels and annotations it
 * copies from the Machine (and the tracking annotations that let it remove them later), and the taints
 * it takes off. Pure: it computes the Node patch, the reconciler sends it.
 *
 * @module
 */
import { Annotations, NodeUninitializedTaint } from "@capi-ts/sdk/contract";
import type { V1Node, V1Taint } from "@kubernetes/client-node";
import { controllerOf } from "./controller-helpers.js";
import type { MachineObject } from "./types.js";

/** Annotations and labels of core's Machine controller (`api/core/v1beta2`, v1.14.2). */
const MachineAnnotation = "cluster.x-k8s.io/machine";
const LabelsFromMachineAnnotation = "cluster.x-k8s.io/labels-from-machine";
const AnnotationsFromMachineAnnotation = "cluster.x-k8s.io/annotations-from-machine";
/** Set on the Node of a Machine whose InfraMachine reports `status.interruptible` (spot instances). */
export const InterruptibleLabel = "cluster.x-k8s.io/interruptible";
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

function domainOf(key: string): string {
  return key.split("/")[0] ?? "";
}

function inDomain(key: string, domain: string): boolean {
  const d = domainOf(key);
  return d === domain || d.endsWith(`.${domain}`);
}

/** `labels.GetManagedLabels`: the Machine labels core syncs to its Node. */
export function managedLabels(machine: MachineObject): Record<string, string> {
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
export function managedAnnotations(machine: MachineObject): Record<string, string> {
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

/** The merge patch that brings a Node's metadata and taints where core wants them. */
export interface NodeSyncPatch {
  patch: Record<string, unknown>;
  /** The patch removes the uninitialized or outdated-revision taint. */
  taintsChanged: boolean;
}

/**
 * `patchNode`'s patch: the Machine's managed labels and annotations (tracked in `labels-from-machine` /
 * `annotations-from-machine`), the uninitialized and outdated-revision taints removed, with the Node's
 * resourceVersion (core's optimistic lock). Undefined when nothing changed.
 */
export function nodeSyncPatch(
  node: V1Node,
  newLabels: Record<string, string>,
  newAnnotations: Record<string, string>,
): NodeSyncPatch | undefined {
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
  if (!changed && !taintsChanged) return undefined;
  const patch: Record<string, unknown> = {
    metadata: {
      resourceVersion: node.metadata?.resourceVersion,
      ...(Object.keys(annotationPatch).length > 0 ? { annotations: annotationPatch } : {}),
      ...(Object.keys(labelPatch).length > 0 ? { labels: labelPatch } : {}),
    },
  };
  if (taintsChanged) patch.spec = { taints: kept.length > 0 ? kept : null };
  return { patch, taintsChanged };
}
