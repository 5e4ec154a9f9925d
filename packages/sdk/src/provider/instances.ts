/**
 * Which instances count, and in which order they go: membership (not terminating), availability, and
 * the victim order of scale-downs and rollouts.
 *
 * @module
 */
import type { PoolInstance, PoolInstanceState } from "./driver-types.js";
import { shortHash } from "./stamp.js";
import type { DeletePolicy } from "./strategy.js";

const GOING: ReadonlySet<PoolInstanceState> = new Set(["terminating", "terminated"]);

/** Instances that count as members: everything but `terminating` and `terminated`. */
export function liveInstances(instances: readonly PoolInstance[]): PoolInstance[] {
  return instances.filter((instance) => !GOING.has(instance.state));
}

/** Running and not failing its health check. */
export function isInstanceAvailable(instance: PoolInstance): boolean {
  return instance.state === "running" && instance.healthy !== false;
}

function isUnhealthy(instance: PoolInstance): boolean {
  return (
    instance.healthy === false ||
    instance.state === "stopping" ||
    instance.state === "stopped" ||
    instance.state === "failed"
  );
}

/**
 * Instances in the order the kit deletes them: those `deleteFirst` names (MachinePool Machines
 * annotated `cluster.x-k8s.io/delete-machine`) first, then unhealthy (failing health check, stopping, stopped,
 * failed), then outdated, then not yet running, then by the delete policy; ties by ID.
 *
 * @example
 * ```ts
 * const [victim] = victimOrder(live, (i) => current.has(i.templateVersion), "Oldest");
 * ```
 */
export function victimOrder(
  instances: readonly PoolInstance[],
  isUpToDate: (instance: PoolInstance) => boolean,
  policy: DeletePolicy,
  deleteFirst?: (instance: PoolInstance) => boolean,
): PoolInstance[] {
  const rank = (instance: PoolInstance): number[] => [
    deleteFirst?.(instance) ? 0 : 1,
    isUnhealthy(instance) ? 0 : 1,
    isUpToDate(instance) ? 1 : 0,
    instance.state === "running" ? 1 : 0,
  ];
  const randomKey = new Map(
    instances.map((instance) => [instance.id, shortHash(`victim:${instance.id}`)]),
  );
  return [...instances].sort((a, b) => {
    const ra = rank(a);
    const rb = rank(b);
    for (let i = 0; i < ra.length; i++) {
      const d = (ra[i] as number) - (rb[i] as number);
      if (d !== 0) return d;
    }
    if (policy === "Oldest" && a.createdAt !== b.createdAt) return a.createdAt - b.createdAt;
    if (policy === "Newest" && a.createdAt !== b.createdAt) return b.createdAt - a.createdAt;
    if (policy === "Random") {
      const ka = randomKey.get(a.id) as string;
      const kb = randomKey.get(b.id) as string;
      if (ka !== kb) return ka < kb ? -1 : 1;
    }
    return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
  });
}
