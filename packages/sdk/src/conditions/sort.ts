import type { ConditionLike } from "./types.js";

// Rank list from CAPI util/conditions/sort.go; "" stands for any type not in the list.
const ORDER: readonly string[] = [
  "Available",
  "Ready",
  "UpToDate",
  "RemoteConnectionProbe",
  "BootstrapConfigReady",
  "InfrastructureReady",
  "ControlPlaneInitialized",
  "ControlPlaneAvailable",
  "WorkersAvailable",
  "CertificatesAvailable",
  "Initialized",
  "EtcdClusterHealthy",
  "ControlPlaneComponentsHealthy",
  "NodeHealthy",
  "NodeReady",
  "NodeKubeadmLabelsAndTaintsSet",
  "EtcdPodHealthy",
  "EtcdMemberHealthy",
  "APIServerPodHealthy",
  "ControllerManagerPodHealthy",
  "SchedulerPodHealthy",
  "HealthCheckSucceeded",
  "OwnerRemediated",
  "TopologyReconciled",
  "Updating",
  "RollingOut",
  "Remediating",
  "ScalingDown",
  "ScalingUp",
  "MachinesReady",
  "ControlPlaneMachinesReady",
  "WorkerMachinesReady",
  "MachinesUpToDate",
  "ControlPlaneMachinesUpToDate",
  "WorkerMachinesUpToDate",
  "",
  "Paused",
  "Deleting",
];

const RANK = new Map(ORDER.map((type, index) => [type, index]));
const OTHER_RANK = RANK.get("") as number;

/** Byte-wise comparison of two strings (Go's `<` on strings), not locale-aware. */
export function compareBytewise(a: string, b: string): number {
  if (a === b) return 0;
  const length = Math.min(a.length, b.length);
  for (let i = 0; i < length; i++) {
    const ca = a.charCodeAt(i);
    const cb = b.charCodeAt(i);
    if (ca === cb) continue;
    // Below the surrogate range UTF-16 code units order like UTF-8 bytes; above it they may not.
    if (ca < 0xd800 && cb < 0xd800) return ca - cb;
    return Buffer.compare(Buffer.from(a, "utf8"), Buffer.from(b, "utf8"));
  }
  return a.length - b.length;
}

/**
 * The default ordering of v1beta2 conditions (CAPI `defaultSortLessFunc`): `Available`, `Ready`, `UpToDate`,
 * … then every other type sorted by name, then `Paused`, then `Deleting`. Returns a negative number when `a`
 * goes first.
 *
 * @example
 * ```ts
 * conditions.sort(compareConditionsDefault);
 * ```
 */
export function compareConditionsDefault(a: ConditionLike, b: ConditionLike): number {
  const ra = RANK.get(a.type) ?? OTHER_RANK;
  const rb = RANK.get(b.type) ?? OTHER_RANK;
  if (ra !== rb) return ra - rb;
  return compareBytewise(a.type, b.type);
}

/**
 * Sorts a list of conditions in place with the default order (stable, like Go's `sort.SliceStable`).
 *
 * @example
 * ```ts
 * sortConditions(pool.status.conditions);
 * ```
 */
export function sortConditions<C extends ConditionLike>(list: C[]): C[] {
  return list.sort(compareConditionsDefault);
}
