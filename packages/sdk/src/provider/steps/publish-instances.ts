/**
 * Publishing a group's instances: `providerIDList`, `replicas` and provisioned, with the grace for
 * IDs a lagging cloud list leaves out. A step of `publish`, and of the phases that end a reconcile
 * early but must still let departed instances go (`observe` on a group deleted out of band, `group`
 * on a size outside the group's bounds).
 *
 * @module
 */
import { setPoolStatus } from "../../contract/status.js";
import type { PoolGroup } from "../driver.js";
import type { PoolScope } from "../scope.js";

/**
 * Publishes every instance that is not terminated. A published ID missing from the cloud's list
 * altogether is kept for `missingInstanceGraceMs` (a lagging list must not make core delete a live
 * Node) — unless the kit deleted that instance or saw it terminating: then it leaves at once.
 * Returns how many IDs the grace kept.
 */
export function publishInstances<Spec, Settings>(
  scope: PoolScope<Spec, Settings>,
  group: PoolGroup<Settings>,
  provisioned: boolean,
): number {
  const ids = new Set(
    group.instances
      .filter((i) => i.state !== "terminated" && i.providerID !== "")
      .map((i) => i.providerID),
  );
  const listed = new Set(group.instances.map((i) => i.providerID));
  const previous = scope.pool.spec?.providerIDList ?? [];
  const { missingSince, departed } = scope.memory;
  const now = scope.clock.now();
  let kept = 0;
  for (const id of previous) {
    if (listed.has(id) || departed.has(id)) continue;
    const since = missingSince.get(id) ?? now;
    missingSince.set(id, since);
    if (now - since < scope.options.missingGraceMs) {
      ids.add(id);
      kept++;
    }
  }
  for (const id of missingSince.keys()) {
    if (listed.has(id) || !ids.has(id)) missingSince.delete(id);
  }
  // A departed ID is remembered until the cloud stops listing it and it left the published list.
  scope.memory.settleDepartures(listed, ids);
  setPoolStatus(scope.pool, { providerIDs: ids, replicas: ids.size, ready: provisioned });
  return kept;
}
