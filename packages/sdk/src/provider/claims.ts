/**
 * Which providerIDs other pools already list: a driver's query that matches too much (another
 * pool's instances in the same account) must not make this pool publish them, put its taints on
 * their Nodes or delete them. Read from the manager's caches: the pools of the kit's kind and the
 * MachinePools in the pool's namespace, whose `spec.providerIDList` is what each pool published.
 *
 * @module
 */
import { quoteText } from "../runtime/text.js";
import type { PoolInstance } from "./driver-types.js";
import { NAMED_IN_MESSAGE, showId } from "./instance-checks.js";

/** An object that lists providerIDs, as the caches hold it. */
export interface ListingObject {
  readonly kind?: string;
  readonly metadata?: { readonly name?: string; readonly namespace?: string };
  readonly spec?: unknown;
}

/** What one object lists; anything but a list of strings lists nothing. */
function listed(obj: ListingObject): readonly unknown[] {
  const list = (obj.spec as { providerIDList?: unknown } | undefined)?.providerIDList;
  return Array.isArray(list) ? list : [];
}

/**
 * Every providerID the given objects list, with the object that lists it (`Kind namespace/name`;
 * the first one wins, so pass the pools of the kit's kind before the MachinePools). Linear in the
 * IDs listed.
 */
export function providerIDClaims(
  others: readonly { readonly kind: string; readonly objects: readonly ListingObject[] }[],
): Map<string, string> {
  const claims = new Map<string, string>();
  for (const { kind, objects } of others) {
    for (const obj of objects) {
      const owner = `${kind} ${obj.metadata?.namespace ?? ""}/${obj.metadata?.name ?? ""}`;
      for (const id of listed(obj)) {
        if (typeof id === "string" && id !== "" && !claims.has(id)) claims.set(id, owner);
      }
    }
  }
  return claims;
}

/**
 * The message for live instances whose providerID another pool lists, or `undefined` when none
 * does. Names this pool, up to three instances with the pool that lists each, and counts the rest.
 */
export function claimedElsewhere(
  pool: string,
  instances: readonly PoolInstance[],
  claims: ReadonlyMap<string, string>,
): string | undefined {
  if (claims.size === 0) return undefined;
  const named: string[] = [];
  let count = 0;
  for (const instance of instances) {
    const owner = instance.providerID === "" ? undefined : claims.get(instance.providerID);
    if (owner === undefined) continue;
    count++;
    if (named.length < NAMED_IN_MESSAGE) {
      named.push(
        `instance ${showId(instance.id)} (${showId(instance.providerID)}) is listed by ${quoteText(owner, 320)}`,
      );
    }
  }
  if (count === 0) return undefined;
  const more = count > named.length ? ` and ${count - named.length} more` : "";
  return `the driver reports for ${pool} instances of other pools: ${named.join("; ")}${more}. ${pool} publishes none of its instances and touches no Node until the driver reports only this pool's instances (a cloud query that matches too much?)`;
}
