/**
 * What the parts of the emulated MachinePool controller share: its dependencies and options, the scope
 * of one reconcile, and how core words its errors.
 *
 * @module
 */
import type { RuntimeLogger } from "@capi-ts/sdk";
import type { InformerCache, InformerHandler, ResourceDescriptor } from "@capi-ts/sdk/runtime";
import type { V1Node } from "@kubernetes/client-node";
import type { WorkloadClusterCache } from "./clustercache.js";
import type { ContractResolver, ResolvedKind } from "./contract-version.js";
import type { ReconcileTrace } from "./controller-helpers.js";
import type { ClusterObject, ExternalObject, MachineObject, MachinePoolObject } from "./types.js";
import type { RecordingWriter } from "./writes.js";

/** The readiness rule core applies to the InfraMachinePool. */
export type ProvisionedFrom = "ready" | "initialization";

export interface MachinePoolReconcilerOptions {
  provisionedFrom: ProvisionedFrom;
  nodeRefRequeueMs: number;
  defaulting: boolean;
  /** Refuse pools core's validating webhook would have rejected. */
  validation: boolean;
  /** The bootstrap stand-in fills in `dataSecretName` of pools that have no bootstrap at all. */
  bootstrapStandInServesPools: boolean;
}

/** One reconcile of a MachinePool: what it read, and what the status at its end is computed from. */
export interface MachinePoolScope {
  cluster: ClusterObject;
  mp: MachinePoolObject;
  imp?: ExternalObject;
  nodeRefMap?: Map<string, V1Node>;
  /** Machines of the pool (`getMachinesForMachinePool`), set for every normal reconcile. */
  machines?: MachineObject[];
  trace: ReconcileTrace;
  key: string;
}

export interface ReconcilerDeps {
  cache: InformerCache;
  writer: RecordingWriter;
  resolver: ContractResolver;
  /** Ensures the dynamic watch on a referenced kind (core's external ObjectTracker). */
  watchExternal: (kind: ResolvedKind) => Promise<void>;
  /**
   * Ensures the informer of a kind without adding a watch: core's cached client starts one on the
   * first read (the delete path reads but never watches).
   */
  readExternal: (resource: ResourceDescriptor) => Promise<void>;
  /** Ensures the watch of InfraMachines, mapped to their MachinePool by label. */
  watchInfraMachines: (resource: ResourceDescriptor) => Promise<void>;
  /** Core's ClusterCache: the only way to the workload cluster's Nodes. */
  clusterCache: WorkloadClusterCache;
  /** The handler the Node watch of a workload cluster feeds (`nodeToMachinePool`). */
  nodeHandler: () => InformerHandler<V1Node> | undefined;
  options: MachinePoolReconcilerOptions;
  log: RuntimeLogger;
}

/** A deprecated v1beta1 replica counter of the pool's status. */
export function setDeprecatedCounter(
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

/** How core's MachinePool controller words a field of the wrong type (readiness, then the rest). */
export const poolAccessorError = (
  obj: ExternalObject,
  path: readonly string[],
  value: unknown,
  expected: string,
) =>
  expected === "bool"
    ? `failed to determine ${obj.kind} "${obj.metadata?.name}" readiness: .${path.join(".")} accessor error: ${JSON.stringify(value)} is of the type ${typeof value}, expected bool`
    : `failed to determine .${path.join(".")} on ${obj.apiVersion}, Kind=${obj.kind} "${obj.metadata?.name}": ${JSON.stringify(value)} is of the type ${typeof value}, expected ${expected}`;
