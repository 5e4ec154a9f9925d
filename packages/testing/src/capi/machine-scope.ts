/**
 * What the parts of the emulated Machine controller share: its dependencies and timings, the scope of
 * one reconcile, and the few facts about a Machine each part asks.
 *
 * @module
 */
import { CLUSTER_API_GROUP } from "@capi-ts/sdk/contract";
import type { InformerCache, InformerHandler, ResourceDescriptor } from "@capi-ts/sdk/runtime";
import type { V1Node } from "@kubernetes/client-node";
import type { WorkloadClusterCache } from "./clustercache.js";
import type { ContractResolver, ResolvedKind } from "./contract-version.js";
import { controllerOf, groupOf, type ReconcileTrace } from "./controller-helpers.js";
import {
  type ClusterObject,
  describeKey,
  type ExternalObject,
  type MachineObject,
} from "./types.js";
import type { RecordingWriter, WriteContext } from "./writes.js";

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

/** One reconcile of a Machine: what it read, and what the status at its end is computed from. */
export interface MachineScope {
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

/** How core's Machine controller words a field of the wrong type (`contract.*.Get`). */
export const machineAccessorError = (
  obj: ExternalObject,
  path: readonly string[],
  value: unknown,
  expected: string,
) =>
  `failed to get ${path.join(".")} from ${obj.kind} ${describeKey(obj)}: .${path.join(".")} accessor error: ${JSON.stringify(value)} is of the type ${typeof value}, expected ${expected}`;

/** `metav1.Now()` as it is serialised: RFC 3339, whole seconds. */
export function nowRfc3339(): string {
  return new Date(Math.floor(Date.now() / 1000) * 1000).toISOString().replace(".000Z", "Z");
}

/** True for a Machine a MachinePool controls (MachinePool Machines, contract R11). */
export function isMachinePoolMachine(machine: MachineObject): boolean {
  const owner = controllerOf(machine);
  return owner?.kind === "MachinePool" && groupOf(owner.apiVersion) === CLUSTER_API_GROUP;
}
