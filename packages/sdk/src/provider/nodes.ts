/**
 * The pool's Nodes as the kit keeps them: the taints and labels the MachinePool asks for, which core's
 * Machine controller applies to the Nodes of Machines and core's MachinePool controller applies to no
 * pool's Nodes, and when a Ready Node counts as available (`minReadySeconds`). This module holds the
 * pure parts — what the MachinePool asks for, what it may not own (by the rules of
 * `node-metadata-rules.ts`), and the patch one Node needs; the `nodes` phase reads and patches the
 * Nodes through {@link PoolNodesApi}.
 *
 * What the kit applied is written down on each Node ({@link NodeMetadataAnnotations}), as CAPI's
 * Machine controller does with `cluster.x-k8s.io/labels-from-machine` and
 * `cluster.x-k8s.io/taints-from-machine`, under annotations of the kit's own domain: core's Machine
 * controller removes what its own annotations list and a Machine no longer has, so sharing them would
 * let the two undo each other's work on a pool with MachinePool Machines.
 *
 * @module
 */

import type { MachinePool } from "../api/cluster.x-k8s.io/v1beta2.js";
import type { WorkloadNode } from "../clustercache/workload-node.js";
import { NodeUninitializedTaint } from "../contract/constants.js";
import {
  isSyncedNodeLabel,
  keyProblem,
  nodeLabelRefusal,
  nodeTaintRefusal,
  taintId,
} from "./node-metadata-rules.js";

/** The annotations of the kit's Node management: one on the MachinePool, two on each Node. */
export const NodeMetadataAnnotations = {
  /**
   * On the MachinePool: taints for its Nodes, a JSON list in the shape of
   * `spec.template.spec.taints` (`[{"key":"gpu","value":"true","effect":"NoSchedule","propagation":"Always"}]`,
   * `propagation` defaulting to `Always`). Core v1.14's MachinePool webhook refuses
   * `spec.template.spec.taints` ("taints feature for MachinePools is not yet implemented"), so this
   * is how a pool gets taints until it admits them; where both name a key and effect, the field wins.
   */
  NodeTaints: "capi-ts.io/node-taints",
  /** On each Node: the label keys the kit applied, sorted and comma-separated. */
  LabelsFromPool: "capi-ts.io/labels-from-pool",
  /**
   * On each Node: `key:effect` of the `Always` taints the kit owns, sorted and comma-separated. Its
   * presence (empty or not) says the pool's `OnInitialization` taints were applied once.
   */
  TaintsFromPool: "capi-ts.io/taints-from-pool",
} as const;

/** The effect of a taint. */
export type TaintEffect = "NoSchedule" | "PreferNoSchedule" | "NoExecute";

/** A taint as a Node carries it. */
export interface NodeTaint {
  /** The key. */
  readonly key: string;
  /** The value (absent: none). */
  readonly value?: string;
  /** The effect. */
  readonly effect: TaintEffect;
}

/** A taint the MachinePool asks for, with how it is kept (`spec.template.spec.taints[].propagation`). */
export interface PoolNodeTaint extends NodeTaint {
  /**
   * `Always`: kept on the Node (added again if removed, removed when the pool no longer has it);
   * `OnInitialization`: added once, when the kit first applies the pool's taints to the Node.
   */
  readonly propagation: "Always" | "OnInitialization";
}

/**
 * The Node of one instance, as the kit reads it from the workload cluster's Node cache: a small copy,
 * never the cached object, with only the labels of the domains the kit may sync and its own two
 * annotations.
 */
export interface PoolNode {
  /** The Node's name. */
  readonly name: string;
  /** Its `spec.providerID`. */
  readonly providerID: string;
  /** Its `metadata.resourceVersion` (the lock of a taint patch). */
  readonly resourceVersion: string;
  /** Its labels of the domains core syncs from a Machine to its Node (`node-role.kubernetes.io`, …). */
  readonly labels: Readonly<Record<string, string>>;
  /** Its {@link NodeMetadataAnnotations} (the two on a Node), when present. */
  readonly annotations: Readonly<Record<string, string>>;
  /** Its taints, all of them. */
  readonly taints: readonly NodeTaint[];
  /** When its `Ready` condition turned `True` (ms since the epoch); `undefined` when it is not Ready. */
  readonly readySince: number | undefined;
}

/** What the kit changes on one Node. */
export interface NodeMetadataPatch {
  /** Labels to set (a string) or remove (`null`). */
  readonly labels?: Readonly<Record<string, string | null>>;
  /** Annotations to set or remove. */
  readonly annotations?: Readonly<Record<string, string | null>>;
  /**
   * The Node's whole taint list (a Node's taints are one atomic field): sent with the Node's
   * `resourceVersion`, so a list someone changed in between is refused (409), never overwritten.
   */
  readonly taints?: readonly NodeTaint[];
}

/**
 * The workload cluster's Nodes of a pool, through the `ClusterCache` (a fake in unit tests). Both
 * throw `WorkloadClusterUnavailableError` when the workload cluster cannot be reached.
 */
export interface PoolNodesApi {
  /** The Nodes of `providerIDs` (one index lookup each), by providerID; IDs without a Node are left out. */
  get(providerIDs: Iterable<string>): Promise<ReadonlyMap<string, PoolNode>>;
  /** Patches one Node with the kit's field manager (a JSON merge patch). */
  patch(node: PoolNode, patch: NodeMetadataPatch): Promise<void>;
}

/** What a MachinePool asks of its Nodes. */
export interface NodeMetadataIntent {
  /** The labels the kit applies (empty when core applies them: MachinePool Machines). */
  readonly labels: ReadonlyMap<string, string>;
  /** The taints the kit applies, one per key and effect. */
  readonly taints: readonly PoolNodeTaint[];
  /** What it asks for and may not have, each named (`label kubernetes.io/hostname: …`); bounded. */
  readonly refused: readonly string[];
  /** Whether it asks for any taint or Node label at all (refused ones included). */
  readonly requested: boolean;
}

/** At most this many taints, as `spec.template.spec.taints` allows. */
const MAX_TAINTS = 64;
/** The taint annotation's size limit: 64 taints in JSON fit in far less. */
const MAX_TAINTS_ANNOTATION = 16 * 1024;
/** Refusals named in a condition; the rest are counted. */
const MAX_NAMED = 5;

/** A bounded rendering of a key someone else wrote, for a message. */
function shown(key: string): string {
  return key.length > 80 ? `${key.slice(0, 80)}…` : key;
}

type RawTaint = { key: string; value?: string; effect: string; propagation: string };

/** The taints of the annotation, or why it cannot be read. */
function annotationTaints(raw: string): { taints: RawTaint[] } | { problem: string } {
  if (raw.length > MAX_TAINTS_ANNOTATION) {
    return { problem: `longer than ${MAX_TAINTS_ANNOTATION} characters` };
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    return { problem: "not JSON (a list of {key, value, effect, propagation})" };
  }
  if (!Array.isArray(parsed)) return { problem: "not a JSON list" };
  const taints: RawTaint[] = [];
  for (const item of parsed) {
    const entry = item as Record<string, unknown> | null;
    if (
      typeof entry !== "object" ||
      entry === null ||
      typeof entry.key !== "string" ||
      typeof entry.effect !== "string" ||
      (entry.value !== undefined && typeof entry.value !== "string") ||
      (entry.propagation !== undefined && typeof entry.propagation !== "string")
    ) {
      return { problem: "an entry is not {key, value?, effect, propagation?} with string values" };
    }
    taints.push({
      key: entry.key,
      ...(typeof entry.value === "string" && entry.value !== "" ? { value: entry.value } : {}),
      effect: entry.effect,
      propagation: typeof entry.propagation === "string" ? entry.propagation : "Always",
    });
  }
  return { taints };
}

/**
 * What `machinePool` asks of its Nodes: the synced labels of `spec.template.metadata.labels` (only
 * when `labels` is true: with MachinePool Machines core's Machine controller syncs them from each
 * Machine) and the taints of `spec.template.spec.taints` and the {@link NodeMetadataAnnotations}
 * `NodeTaints` annotation, each refused one named instead.
 *
 * @example
 * ```ts
 * const intent = readNodeMetadata(machinePool, { labels: true });
 * intent.refused; // ["label kubernetes.io/hostname: the domain belongs to the kubelet …"]
 * ```
 */
export function readNodeMetadata(
  machinePool: MachinePool,
  options: { readonly labels: boolean },
): NodeMetadataIntent {
  const refused: string[] = [];
  const labels = new Map<string, string>();
  let requested = false;
  const template = (machinePool.spec as { template?: unknown } | undefined)?.template as
    | { metadata?: { labels?: unknown }; spec?: { taints?: unknown } }
    | undefined;
  const templateLabels = template?.metadata?.labels;
  if (typeof templateLabels === "object" && templateLabels !== null) {
    for (const [key, value] of Object.entries(templateLabels as Record<string, unknown>).sort()) {
      if (typeof value !== "string") continue;
      const refusal = nodeLabelRefusal(key, value);
      if (refusal) {
        requested = true;
        refused.push(`label ${shown(key)}: ${refusal}`);
      } else if (isSyncedNodeLabel(key)) {
        requested = true;
        if (options.labels) labels.set(key, value);
      }
    }
  }
  const byId = new Map<string, PoolNodeTaint>();
  const consider = (raw: RawTaint, from: string) => {
    requested = true;
    const refusal = nodeTaintRefusal(raw);
    const propagation = raw.propagation;
    if (refusal === undefined && propagation !== "Always" && propagation !== "OnInitialization") {
      refused.push(
        `taint ${shown(taintId(raw))} (${from}): propagation must be Always or OnInitialization`,
      );
      return;
    }
    if (refusal) {
      refused.push(`taint ${shown(taintId(raw))} (${from}): ${refusal}`);
      return;
    }
    // The field comes last and wins over the annotation for the same key and effect.
    byId.set(taintId(raw), {
      key: raw.key,
      ...(raw.value !== undefined && raw.value !== "" ? { value: raw.value } : {}),
      effect: raw.effect as TaintEffect,
      propagation: propagation as PoolNodeTaint["propagation"],
    });
  };
  const annotation = machinePool.metadata?.annotations?.[NodeMetadataAnnotations.NodeTaints];
  if (annotation !== undefined && annotation.trim() !== "") {
    const read = annotationTaints(annotation);
    if ("problem" in read) {
      requested = true;
      refused.push(`annotation ${NodeMetadataAnnotations.NodeTaints}: ${read.problem}`);
    } else {
      for (const taint of read.taints)
        consider(taint, `annotation ${NodeMetadataAnnotations.NodeTaints}`);
    }
  }
  const fieldTaints = template?.spec?.taints;
  if (Array.isArray(fieldTaints)) {
    for (const item of fieldTaints as Partial<RawTaint>[]) {
      if (typeof item?.key !== "string" || typeof item.effect !== "string") continue;
      consider(
        {
          key: item.key,
          ...(typeof item.value === "string" ? { value: item.value } : {}),
          effect: item.effect,
          propagation: typeof item.propagation === "string" ? item.propagation : "Always",
        },
        "spec.template.spec.taints",
      );
    }
  }
  const taints = [...byId.values()].sort((a, b) => (taintId(a) < taintId(b) ? -1 : 1));
  if (taints.length > MAX_TAINTS) {
    for (const extra of taints.splice(MAX_TAINTS)) {
      refused.push(`taint ${shown(taintId(extra))}: more than ${MAX_TAINTS} taints`);
    }
  }
  return { labels, taints, refused, requested };
}

/** The refusals in a condition message: the first few named, the rest counted. */
export function describeRefusals(refused: readonly string[]): string {
  const named = refused.slice(0, MAX_NAMED).join("; ");
  const more = refused.length - MAX_NAMED;
  return more > 0 ? `${named}; and ${more} more` : named;
}

/** The keys an annotation of the kit lists, each checked: `valid` drops what the kit never writes. */
function listed(value: string | undefined, valid: (entry: string) => boolean): Set<string> {
  if (value === undefined || value === "") return new Set();
  return new Set(value.split(",").filter((entry) => entry !== "" && valid(entry)));
}

/** A tracked `key:effect` the kit may have written: a valid key and effect it may own. */
function isOwnableTaintId(entry: string): boolean {
  const colon = entry.lastIndexOf(":");
  if (colon <= 0) return false;
  return (
    nodeTaintRefusal({ key: entry.slice(0, colon), effect: entry.slice(colon + 1) }) === undefined
  );
}

/** What one Node needs, or that it must wait. */
export interface NodeMetadataPlan {
  /** The patch that brings the Node to what the pool asks; `undefined` when it already is. */
  readonly patch: NodeMetadataPatch | undefined;
  /**
   * The taints wait: core's `node.cluster.x-k8s.io/uninitialized` is still on the Node, and core drops
   * it with a merge patch that replaces the Node's whole taint list from its own copy, which would
   * erase a taint added a moment before. Labels are keyed one by one and go at once.
   */
  readonly waiting: boolean;
}

/**
 * The patch that brings `node` to `intent`, touching only what the kit applied
 * ({@link NodeMetadataAnnotations}): a label or taint of someone else is left as it is, unless the
 * pool asks for the same key (then the pool's value wins, and from then on the kit owns it).
 *
 * - Labels (when `manageLabels`): set what differs; remove those the kit applied that the pool no
 *   longer has; record the keys.
 * - Taints, once core's uninitialized taint is gone: `Always` ones set (value corrected); the
 *   `OnInitialization` ones only if the Node was never initialized by the kit; the `Always` ones the
 *   kit owned and the pool no longer has removed (an `OnInitialization` one is let go, not removed);
 *   the owned `Always` taints recorded, which also marks the Node initialized.
 *
 * @example
 * ```ts
 * const { patch } = planNodeMetadata(node, readNodeMetadata(mp, { labels: true }), { manageLabels: true });
 * if (patch) await api.nodes.patch(node, patch);
 * ```
 */
export function planNodeMetadata(
  node: PoolNode,
  intent: NodeMetadataIntent,
  options: { readonly manageLabels: boolean },
): NodeMetadataPlan {
  const labels: Record<string, string | null> = {};
  const annotations: Record<string, string | null> = {};
  if (options.manageLabels) {
    const previous = listed(
      node.annotations[NodeMetadataAnnotations.LabelsFromPool],
      (key) => isSyncedNodeLabel(key) && keyProblem(key) === undefined,
    );
    for (const [key, value] of intent.labels) {
      if (node.labels[key] !== value) labels[key] = value;
    }
    for (const key of previous) {
      if (!intent.labels.has(key) && key in node.labels) labels[key] = null;
    }
    const recorded = [...intent.labels.keys()].sort().join(",");
    const current = node.annotations[NodeMetadataAnnotations.LabelsFromPool];
    if (recorded === "") {
      if (current !== undefined) annotations[NodeMetadataAnnotations.LabelsFromPool] = null;
    } else if (current !== recorded) {
      annotations[NodeMetadataAnnotations.LabelsFromPool] = recorded;
    }
  }
  const trackedTaints = node.annotations[NodeMetadataAnnotations.TaintsFromPool];
  const uninitialized = node.taints.some(
    (t) => t.key === NodeUninitializedTaint.key && t.effect === NodeUninitializedTaint.effect,
  );
  let taints: NodeTaint[] | undefined;
  if (!uninitialized) {
    const initialized = trackedTaints !== undefined;
    const owned = listed(trackedTaints, isOwnableTaintId);
    const always = new Set(intent.taints.filter((t) => t.propagation === "Always").map(taintId));
    const onInit = new Set(
      intent.taints.filter((t) => t.propagation === "OnInitialization").map(taintId),
    );
    const list = node.taints.map((t) => ({ ...t }));
    let changed = false;
    for (const wanted of intent.taints) {
      if (wanted.propagation === "OnInitialization" && initialized) continue;
      const desired: NodeTaint = {
        key: wanted.key,
        ...(wanted.value !== undefined ? { value: wanted.value } : {}),
        effect: wanted.effect,
      };
      const at = list.findIndex((t) => t.key === wanted.key && t.effect === wanted.effect);
      if (at < 0) {
        list.push(desired);
        changed = true;
      } else if ((list[at]?.value ?? "") !== (wanted.value ?? "")) {
        list[at] = desired;
        changed = true;
      }
    }
    for (const id of owned) {
      if (always.has(id) || onInit.has(id)) continue;
      const at = list.findIndex((t) => taintId(t) === id);
      if (at >= 0) {
        list.splice(at, 1);
        changed = true;
      }
    }
    if (changed) taints = list;
    const recorded = [...always].sort().join(",");
    if (!initialized || recorded !== trackedTaints) {
      annotations[NodeMetadataAnnotations.TaintsFromPool] = recorded;
    }
  }
  const waiting = uninitialized && (intent.taints.length > 0 || trackedTaints !== undefined);
  const hasLabels = Object.keys(labels).length > 0;
  const hasAnnotations = Object.keys(annotations).length > 0;
  if (!hasLabels && !hasAnnotations && taints === undefined) return { patch: undefined, waiting };
  return {
    patch: {
      ...(hasLabels ? { labels } : {}),
      ...(hasAnnotations ? { annotations } : {}),
      ...(taints !== undefined ? { taints } : {}),
    },
    waiting,
  };
}

/**
 * How long a Ready Node still waits before it counts as available (0: it does), with
 * `minReadySeconds` as core reads it (`spec.template.spec.minReadySeconds`): Ready for that long since
 * its `Ready` condition's `lastTransitionTime`. A transition time ahead of `now` (clock skew) waits
 * the whole `minReadySeconds`, never longer. `undefined` when the Node is not Ready.
 *
 * @example
 * ```ts
 * availableInMs(node.readySince, 30_000, clock.now()); // 0 once it has been Ready for 30 s
 * ```
 */
export function availableInMs(
  readySince: number | undefined,
  minReadyMs: number,
  now: number,
): number | undefined {
  if (readySince === undefined) return undefined;
  if (minReadyMs <= 0) return 0;
  const elapsed = Math.max(0, now - readySince);
  return Math.max(0, minReadyMs - elapsed);
}

/** A time of a condition as the API sends it (an RFC 3339 string) or as a typed client holds it. */
function timeOf(value: unknown): number {
  if (value instanceof Date) return value.getTime();
  if (typeof value === "string") return Date.parse(value);
  return Number.NaN;
}

/**
 * The {@link PoolNode} of a cached Node: a copy of what the kit reads, so that nothing of the cache's
 * object is kept or changed. A `Ready` condition without a readable transition time counts as Ready
 * long ago, as core's `IsNodeAvailable` reads a zero time.
 *
 * @example
 * ```ts
 * const view = poolNodeOf(nodes.byIndex(NODE_PROVIDER_ID_INDEX, providerID)[0]);
 * ```
 */
export function poolNodeOf(node: WorkloadNode): PoolNode {
  const labels: Record<string, string> = {};
  for (const [key, value] of Object.entries(node.metadata?.labels ?? {})) {
    if (isSyncedNodeLabel(key)) labels[key] = value;
  }
  const annotations: Record<string, string> = {};
  const all = node.metadata?.annotations ?? {};
  for (const key of [
    NodeMetadataAnnotations.LabelsFromPool,
    NodeMetadataAnnotations.TaintsFromPool,
  ]) {
    const value = all[key];
    if (value !== undefined) annotations[key] = value;
  }
  const ready = node.status?.conditions?.find((c) => c.type === "Ready");
  let readySince: number | undefined;
  if (ready?.status === "True") {
    const at = timeOf(ready.lastTransitionTime);
    readySince = Number.isFinite(at) ? at : 0;
  }
  return {
    name: node.metadata?.name ?? "",
    providerID: node.spec?.providerID ?? "",
    resourceVersion: node.metadata?.resourceVersion ?? "",
    labels,
    annotations,
    taints: (node.spec?.taints ?? []).map((t) => ({
      key: t.key,
      ...(t.value !== undefined && t.value !== "" ? { value: t.value } : {}),
      effect: t.effect as TaintEffect,
    })),
    readySince,
  };
}
