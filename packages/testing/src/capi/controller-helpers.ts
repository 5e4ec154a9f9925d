/**
 * What core's MachinePool and Machine controllers share in the emulator: the error core panics with,
 * reading typed fields of unstructured objects, and the small helpers of both reconcilers.
 *
 * @module
 */
import { CLUSTER_API_GROUP, ensurePausedCondition } from "@capi-ts/sdk/contract";
import type { ReconcileResult, ResourceDescriptor } from "@capi-ts/sdk/runtime";
import type { V1OwnerReference } from "@kubernetes/client-node";
import type { ClusterObject, ExternalObject } from "./types.js";

export interface ReconcileNote {
  event: string;
  detail?: string;
}

/** What one reconcile did, besides writes. */
export interface ReconcileTrace {
  notes: ReconcileNote[];
}

/** A function that adds a note, with its detail if any, to a reconcile's trace. */
export function noteTo(trace: ReconcileTrace): (event: string, detail?: string) => void {
  return (event, detail) => {
    trace.notes.push(detail === undefined ? { event } : { event, detail });
  };
}

/**
 * Core's `EnsurePausedCondition` step: true when the reconcile ends there, because the Cluster or the
 * object is paused or because the Paused condition had to be written first.
 */
export async function stopsForPause(
  client: Parameters<typeof ensurePausedCondition>[0],
  cluster: ClusterObject,
  obj: Parameters<typeof ensurePausedCondition>[2],
  resource: ResourceDescriptor,
  trace: ReconcileTrace,
): Promise<boolean> {
  const paused = await ensurePausedCondition(client, cluster, obj, { resource });
  if (!paused.isPaused && !paused.requeue) return false;
  noteTo(trace)(paused.isPaused ? "Paused" : "PausedConditionChanged");
  return true;
}

/**
 * What core's MachinePool controller does when an InfraMachinePool or bootstrap config carries
 * `status.failureReason` / `status.failureMessage`: it dereferences a nil pointer (inverted guards in
 * `reconcileExternal`, contract G4) and controller-runtime turns the panic into a reconcile error
 * that repeats forever. The emulator raises this error instead, after the same writes core makes
 * before and after the panic (the object's owner/label patch, then the deferred MachinePool patch).
 */
export class CorePanicError extends Error {
  /** `Kind namespace/name` of the object that carries the failure fields. */
  readonly object: string;
  /** The failure fields found. */
  readonly failure: { reason?: string; message?: string };

  /** Creates the error. */
  constructor(object: string, failure: { reason?: string; message?: string }) {
    super(
      `core would panic: ${object} has ${[failure.reason !== undefined ? `status.failureReason=${JSON.stringify(failure.reason)}` : "", failure.message !== undefined ? `status.failureMessage=${JSON.stringify(failure.message)}` : ""].filter(Boolean).join(" and ")}; core's MachinePool controller dereferences a nil pointer on these fields (contract G4) and never progresses. Report terminal failures with conditions instead`,
    );
    this.name = "CorePanicError";
    this.object = object;
    this.failure = failure;
  }
}

/** The referenced object does not exist (core wraps the NotFound). */
export class ExternalNotFoundError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ExternalNotFoundError";
  }
}

/** A value as an Error. */
export function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}

/** `fmt.Errorf("<message>: %w", err)`; a core panic stays what it is. */
export function wrap(error: unknown, message: string): Error {
  if (error instanceof CorePanicError) return error;
  const inner = asError(error);
  return new Error(`${message}: ${inner.message}`, { cause: inner });
}

/** The sooner of two requeues (`util.LowestNonZeroResult`). */
export function lowestNonZero(a: ReconcileResult, b: ReconcileResult | undefined): ReconcileResult {
  if (!b?.requeueAfter) return a;
  if (!a.requeueAfter || b.requeueAfter < a.requeueAfter) return { requeueAfter: b.requeueAfter };
  return a;
}

/** The group of an apiVersion (`""` for the core group or none). */
export function groupOf(apiVersion: string | undefined): string {
  if (!apiVersion) return "";
  const slash = apiVersion.indexOf("/");
  return slash < 0 ? "" : apiVersion.slice(0, slash);
}

/** The owner reference of an object's controller, if it has one. */
export function controllerOf(obj: { metadata?: { ownerReferences?: V1OwnerReference[] } }) {
  return (obj.metadata?.ownerReferences ?? []).find((ref) => ref.controller === true);
}

/** The reference that makes a Machine or MachinePool the controller of an object it owns. */
export function controllerReferenceTo(
  kind: "Machine" | "MachinePool",
  owner: { metadata?: { name?: string; uid?: string } },
): V1OwnerReference {
  return {
    apiVersion: `${CLUSTER_API_GROUP}/v1beta2`,
    kind,
    name: owner.metadata?.name ?? "",
    uid: owner.metadata?.uid ?? "",
    controller: true,
    blockOwnerDeletion: true,
  };
}

/** A Cluster's namespace and name. */
export function clusterKey(cluster: ClusterObject): { namespace: string; name: string } {
  return { namespace: cluster.metadata?.namespace ?? "", name: cluster.metadata?.name ?? "" };
}

/** A nested field; absent or null on the way → undefined. */
export function readField(obj: unknown, path: readonly string[]): unknown {
  let value: unknown = obj;
  for (const key of path) {
    if (value === null || typeof value !== "object") return undefined;
    value = (value as Record<string, unknown>)[key];
  }
  return value ?? undefined;
}

/** Which core message an accessor error takes: each controller words its own. */
export type AccessorError = (
  obj: ExternalObject,
  path: readonly string[],
  value: unknown,
  expected: "string" | "bool",
) => string;

/** `unstructured.NestedString`: absent → undefined; a value of another type throws `failure`'s text. */
export function nestedString(
  obj: ExternalObject,
  path: readonly string[],
  failure: AccessorError,
): string | undefined {
  const value = readField(obj, path);
  if (value === undefined) return undefined;
  if (typeof value !== "string") throw new Error(failure(obj, path, value, "string"));
  return value;
}

/** `unstructured.NestedBool`: absent → undefined; a value of another type throws `failure`'s text. */
export function nestedBool(
  obj: ExternalObject,
  path: readonly string[],
  failure: AccessorError,
): boolean | undefined {
  const value = readField(obj, path);
  if (value === undefined) return undefined;
  if (typeof value !== "boolean") throw new Error(failure(obj, path, value, "bool"));
  return value;
}

/**
 * A provider object's "done" flag by the contract version of its CRD: `status.ready` under v1beta1,
 * `status.initialization.<field>` under v1beta2; absent → false.
 */
export function initializationFlag(
  obj: ExternalObject,
  contractVersion: string,
  field: "provisioned" | "dataSecretCreated",
  failure: AccessorError,
): boolean {
  return (
    nestedBool(
      obj,
      contractVersion === "v1beta1" ? ["status", "ready"] : ["status", "initialization", field],
      failure,
    ) ?? false
  );
}
