/**
 * Which pool owns a cloud resource: the tags a driver puts on what it creates (group, template), and
 * the check it makes before adopting or deleting something that carries the pool's name. Name and
 * namespace, never the UID: the UID changes with `clusterctl move`, the tags must not.
 *
 * @module
 */
import { DriverError } from "./driver-error.js";
import type { PoolIdentity } from "./driver-types.js";

/** The default prefix of the ownership tags (AWS and Azure tag keys; GCE labels need e.g. `capi-ts-`). */
export const OWNER_TAG_PREFIX = "capi-ts.io/";

/**
 * The tags that say a resource belongs to `pool`: `<prefix>pool` = `<namespace>/<name>` and
 * `<prefix>cluster` = the Cluster's name.
 *
 * @example
 * ```ts
 * poolOwnerTags(ctx.pool); // { "capi-ts.io/pool": "default/pool-a", "capi-ts.io/cluster": "demo" }
 * await cloud.createGroup(name, { …, tags: poolOwnerTags(ctx.pool) });
 * ```
 */
export function poolOwnerTags(
  pool: Pick<PoolIdentity, "namespace" | "name" | "clusterName">,
  prefix = OWNER_TAG_PREFIX,
): Record<string, string> {
  return {
    [`${prefix}pool`]: `${pool.namespace}/${pool.name}`,
    [`${prefix}cluster`]: pool.clusterName,
  };
}

/**
 * Throws a terminal `ResourceNotOwned` {@link DriverError} when `resource` does not carry `pool`'s
 * ownership tag: a group or template of that name made by someone else (another pool, a person, a
 * different tool). The kit reports it on the pool's `Ready` condition and touches nothing.
 *
 * @example
 * ```ts
 * const group = await cloud.describeGroup(name);
 * if (group) assertPoolOwns({ kind: "group", name, tags: group.tags }, ctx.pool);
 * ```
 */
export function assertPoolOwns(
  resource: {
    readonly kind: string;
    readonly name: string;
    readonly tags: Readonly<Record<string, string>> | undefined;
  },
  pool: Pick<PoolIdentity, "namespace" | "name">,
  prefix = OWNER_TAG_PREFIX,
): void {
  const owner = `${pool.namespace}/${pool.name}`;
  const found = resource.tags?.[`${prefix}pool`];
  if (found === owner) return;
  // The tag's value is cloud data: bounded before it goes into a condition.
  const shown = found === undefined ? "no pool" : found.slice(0, 120).replace(/[^\x20-\x7e]/g, "?");
  throw DriverError.terminal(
    "ResourceNotOwned",
    `${resource.kind} "${resource.name.slice(0, 120)}" exists but belongs to ${shown}, not ${owner}; delete or rename the ${resource.kind}, or use another pool name`,
  );
}
