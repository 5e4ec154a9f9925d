/**
 * What a Cluster API controller adds to the generic runtime's watches: the watch filter (R20), the
 * paused predicate and the index of objects by cluster. They are built on the runtime's seams
 * (predicates, `withEventFilter` with a per-source opt-out, `KindCacheOptions.indexers`), so the
 * runtime itself knows no CAPI label.
 *
 * @module
 */
import type { KubernetesObject } from "@kubernetes/client-node";
import type { IndexFunc } from "../runtime/informer-types.js";
import { type Predicate, predicateFor } from "../runtime/predicates.js";
import { objectKeyString } from "../runtime/resource.js";
import { Labels } from "./constants.js";
import { hasPausedAnnotation } from "./pause.js";

/**
 * CAPI's `ResourceHasFilterLabel`: with an empty filter value every object passes; otherwise only
 * objects labelled `cluster.x-k8s.io/watch-filter=<value>`. This is the multi-tenancy contract
 * behind the `--watch-filter` flag (R20); the manager keeps the flag's value in
 * `controllerDefaults.watchFilterValue`.
 *
 * @example
 * ```ts
 * manager
 *   .controller("pools")
 *   .for(PoolResource)
 *   .owns(SecretResource, { eventFilters: false }) // Secrets never carry the label
 *   .withEventFilter(hasWatchFilterLabel(manager.controllerDefaults.watchFilterValue))
 *   .complete(reconcile);
 * ```
 */
export function hasWatchFilterLabel<T extends KubernetesObject>(
  watchFilterValue: string | undefined,
): Predicate<T> {
  if (!watchFilterValue) return {};
  return predicateFor((obj) => obj.metadata?.labels?.[Labels.WatchFilter] === watchFilterValue);
}

/**
 * Drops events of paused objects. By default "paused" means the object carries the
 * `cluster.x-k8s.io/paused` annotation ({@link hasPausedAnnotation}, CAPI's `HasPaused`); pass
 * `isPaused` for another rule, e.g. one that also looks at the owning Cluster's `spec.paused`.
 *
 * Deletes always pass, so a paused object's deletion is still seen.
 *
 * @example
 * ```ts
 * manager.controller("pools").for(PoolResource).withEventFilter(notPaused()).complete(reconcile);
 * ```
 */
export function notPaused<T extends KubernetesObject>(
  isPaused: (obj: T) => boolean = hasPausedAnnotation,
): Predicate<T> {
  return {
    create: (obj) => !isPaused(obj),
    // Judged on the new object: pausing stops events, unpausing lets the next reconcile through.
    update: (_oldObj, newObj) => !isPaused(newObj),
  };
}

/** The name of the {@link indexByClusterName} index, for `cache.byIndex(resource, CLUSTER_NAME_INDEX, "ns/cluster")`. */
export const CLUSTER_NAME_INDEX = "clusterName";

/**
 * Index function: `namespace/cluster-name` from the `cluster.x-k8s.io/cluster-name` label, so "the
 * pools of Cluster X" is a lookup, not a scan. Register it for a kind through the cache options of
 * a watch.
 *
 * @example
 * ```ts
 * builder.for(PoolResource, { cache: { indexers: { [CLUSTER_NAME_INDEX]: indexByClusterName } } });
 * const pools = await manager.cache.byIndex(PoolResource, CLUSTER_NAME_INDEX, "team-a/cluster-1");
 * ```
 */
export const indexByClusterName: IndexFunc<KubernetesObject> = (obj) => {
  const name = obj.metadata?.labels?.[Labels.ClusterName];
  return name ? [objectKeyString({ namespace: obj.metadata?.namespace ?? "", name })] : [];
};
