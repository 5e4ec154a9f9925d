/**
 * Checks of a driver's instance list before the kit acts on it, each in linear time whatever the
 * cloud answers: duplicate providerIDs and providerIDs a Node could not carry or a reader could be
 * fooled by. Messages name a few instances and count the rest; every name is cleaned and cut.
 *
 * @module
 */
import { hasUnsafeCharacters, quoteText } from "../runtime/text.js";
import type { PoolInstance } from "./driver-types.js";

/** How many instances or IDs a message names before it only counts. */
export const NAMED_IN_MESSAGE = 3;
/** How many characters of one instance ID or providerID a message shows. */
const SHOWN_ID_CHARACTERS = 80;

/** One instance ID or providerID as a message shows it (quoted, escaped, at most 80 characters). */
export function showId(id: string): string {
  return quoteText(id, SHOWN_ID_CHARACTERS);
}

function nameFew(ids: readonly string[], total: number): string {
  const named = ids.slice(0, NAMED_IN_MESSAGE).map(showId).join(", ");
  return total > NAMED_IN_MESSAGE ? `${named} and ${total - NAMED_IN_MESSAGE} more` : named;
}

/**
 * The message for live instances that share a providerID, or `undefined` when each has its own.
 * One pass with a Map: 100,000 instances cost milliseconds, never seconds.
 */
export function duplicateProviderIDs(instances: readonly PoolInstance[]): string | undefined {
  const byId = new Map<string, { count: number; first: string[] }>();
  let duplicated = 0;
  for (const instance of instances) {
    if (instance.providerID === "") continue;
    const entry = byId.get(instance.providerID);
    if (!entry) {
      byId.set(instance.providerID, { count: 1, first: [instance.id] });
      continue;
    }
    entry.count++;
    if (entry.count === 2) duplicated++;
    if (entry.first.length < NAMED_IN_MESSAGE) entry.first.push(instance.id);
  }
  if (duplicated === 0) return undefined;
  for (const [id, entry] of byId) {
    if (entry.count < 2) continue;
    const more = duplicated > 1 ? ` (and ${duplicated - 1} more duplicated providerIDs)` : "";
    return `${entry.count} instances report the same providerID ${showId(id)} (${nameFew(entry.first, entry.count)})${more}; each instance needs its own, byte for byte as on its Node`;
  }
  return undefined;
}

/**
 * The message for live instances whose providerID no Node can carry as it is (whitespace, control or
 * format characters: bidi overrides, zero-width characters), or `undefined` when all are plain.
 */
export function invalidProviderIDs(instances: readonly PoolInstance[]): string | undefined {
  const bad: PoolInstance[] = [];
  let count = 0;
  for (const instance of instances) {
    const id = instance.providerID;
    if (id === "" || !(/\s/u.test(id) || hasUnsafeCharacters(id))) continue;
    count++;
    if (bad.length < NAMED_IN_MESSAGE) bad.push(instance);
  }
  if (count === 0) return undefined;
  const named = bad.map((i) => `${showId(i.id)} reports ${showId(i.providerID)}`).join(", ");
  const more = count > bad.length ? ` and ${count - bad.length} more` : "";
  return `instance ${named}${more}: a providerID has no whitespace, control or format characters (bidi overrides, zero-width characters); report it exactly as the Node's spec.providerID spells it`;
}
