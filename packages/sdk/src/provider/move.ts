/**
 * What the kit does for `clusterctl move` (the clusterctl provider contract): the pool carries
 * `clusterctl.cluster.x-k8s.io/block-move` while a cloud call that must not be interrupted is in
 * flight, and a record that the kit created the pool's group (`capi-ts.io/group-created`), which
 * survives a move (clusterctl copies metadata and spec, never status) and tells a moved pool whose
 * group cannot be found from a new one. A leaf: the scope and the phases import it.
 *
 * @module
 */
import { Annotations } from "../contract/constants.js";

/** The kit's own annotations on an InfraMachinePool. */
export const MoveAnnotations = {
  /**
   * The group the kit created (or found) for this pool, by the id the driver reports. Written by the
   * `group` phase; read, after a move, to tell a pool whose group is missing from a new pool.
   */
  GroupCreated: "capi-ts.io/group-created",
} as const;

/**
 * The prefix of the kit's `block-move` values (`capi-ts: <call>`), so a reconcile can tell a mark
 * the kit left behind (a process that died mid-call) from one someone else set, and clear only its own.
 */
export const BLOCK_MOVE_VALUE_PREFIX = "capi-ts: ";

/**
 * The driver calls that hold a move while in flight by default: those that launch, terminate or
 * re-point instances, or create what instances are launched from. A move in the middle of one would
 * copy a pool that does not yet say what the call did. Reads and the deletion path do not block
 * (deletion never runs during a move: the Cluster is paused).
 */
export const DEFAULT_MOVE_BLOCKING_CALLS: readonly string[] = Object.freeze([
  "createGroup",
  "updateGroup",
  "deleteInstance",
  "createTemplateVersion",
  "nativeRollout.start",
  "nativeRollout.cancel",
  "userData.store.put",
]);

/** Whether `annotations` carry a `block-move` mark the kit set (and may clear). */
export function hasKitBlockMove(
  annotations: Readonly<Record<string, string>> | undefined,
): boolean {
  return annotations?.[Annotations.BlockMove]?.startsWith(BLOCK_MOVE_VALUE_PREFIX) ?? false;
}

/** Whether clusterctl is deleting this copy of the pool because it now lives in another cluster. */
export function deletedForMove(annotations: Readonly<Record<string, string>> | undefined): boolean {
  return annotations !== undefined && Annotations.DeleteForMove in annotations;
}

/**
 * Whether a pool without a group in the cloud must not get one: the kit's record says it created
 * a group, but the pool's status does not say it was ever provisioned here, so its status was lost —
 * a `clusterctl move`, a restore from a backup — and the group is not where the driver looks. A pool
 * whose group was deleted out of band on this management cluster still has its status, and gets a
 * new group; a new pool has no record, and gets its first.
 */
export function lostGroupRecord(pool: {
  readonly metadata?: { readonly annotations?: Readonly<Record<string, string>> } | undefined;
  readonly status?: unknown;
}): string | undefined {
  const record = pool.metadata?.annotations?.[MoveAnnotations.GroupCreated];
  if (record === undefined) return undefined;
  const status = (pool.status ?? {}) as {
    ready?: unknown;
    initialization?: { provisioned?: unknown };
  };
  const provisioned = status.ready === true || status.initialization?.provisioned === true;
  return provisioned ? undefined : record;
}
