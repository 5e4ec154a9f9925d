import { compareBytewise } from "../conditions/sort.js";
import { hasUnsafeCharacters, quoteText } from "../runtime/text.js";
import { MAX_PROVIDER_ID_LENGTH, MAX_PROVIDER_IDS } from "./constants.js";
import { ContractViolationError } from "./errors.js";

/**
 * The contract fields of an InfraMachinePool the status writer touches. Generated CAPI kinds
 * (`DevMachinePool`) and a provider's own kinds (from `defineInfraMachinePool`) satisfy it structurally.
 */
export interface InfraMachinePoolContractFields {
  /** Name and namespace (used in messages) and `generation`. */
  metadata?: { name?: string; namespace?: string; generation?: number };
  /** Spec with the provider ID list. */
  spec?: { providerIDList?: string[]; providerID?: string };
  /** Status with the contract fields. */
  status?: {
    ready?: boolean;
    initialization?: { provisioned?: boolean };
    replicas?: number;
    infrastructureMachineKind?: string;
  };
}

/**
 * What the status writer accepts: typed contract fields, or an object whose spec/status are plain JSON
 * records (as read from the API server untyped).
 */
export type InfraMachinePoolLike =
  | InfraMachinePoolContractFields
  | { metadata?: object; spec?: Record<string, unknown>; status?: Record<string, unknown> };

/**
 * Validates and canonicalises a provider ID list (R8): empty strings are dropped, duplicates removed and
 * the list sorted byte-wise (order churn makes core reset its counters). Refused, with the entry's
 * index: a string passed instead of a list, a non-string entry, an entry with whitespace or control
 * characters (`" "`, `"a\nb"`, `"\u0000"`: no cloud spells an ID so, and a Node would never match it), an
 * entry longer than 512 characters (counted as Kubernetes counts them, in Unicode characters), and more
 * than 10,000 distinct entries (an endless iterable is read no further than that).
 *
 * @example
 * ```ts
 * canonicalProviderIDs(["aws:///b", "aws:///a", "aws:///a"]); // ["aws:///a", "aws:///b"]
 * ```
 */
export function canonicalProviderIDs(ids: Iterable<string>): string[] {
  if (typeof ids === "string" || ids === null || typeof ids !== "object") {
    if (typeof (ids as { [Symbol.iterator]?: unknown } | null)?.[Symbol.iterator] !== "function") {
      throw new ContractViolationError(
        "R8",
        `providerIDList must be a list of strings, got ${ids === null ? "null" : typeof ids}`,
      );
    }
    if (typeof ids === "string") {
      throw new ContractViolationError(
        "R8",
        `providerIDList must be a list of strings, got the string ${JSON.stringify((ids as string).slice(0, 40))}; wrap a single ID in an array`,
      );
    }
  }
  const unique = new Set<string>();
  let index = 0;
  for (const id of ids) {
    if (typeof id !== "string") {
      throw new ContractViolationError(
        "R8",
        `providerIDList[${index}] is ${id === null ? "null" : typeof id}, expected a string`,
      );
    }
    if (/\s/u.test(id) || hasUnsafeCharacters(id)) {
      throw new ContractViolationError(
        "R8",
        `providerIDList[${index}] is ${quoteText(id, 60)}: a provider ID has no whitespace or control characters, nor format characters (bidi overrides, zero-width characters); pass the ID exactly as the Node's spec.providerID spells it`,
      );
    }
    const characters = id.length > MAX_PROVIDER_ID_LENGTH ? [...id].length : id.length;
    if (characters > MAX_PROVIDER_ID_LENGTH) {
      throw new ContractViolationError(
        "R8",
        `providerIDList[${index}] is ${characters} characters long (${JSON.stringify(`${id.slice(0, 40)}…`)}); ` +
          `the MachinePool CRD allows at most ${MAX_PROVIDER_ID_LENGTH}, so core could not copy the list — use the cloud's short instance ID`,
      );
    }
    if (id !== "") unique.add(id);
    index++;
    if (unique.size > MAX_PROVIDER_IDS || index > MAX_PROVIDER_IDS * 10) break;
  }
  if (unique.size > MAX_PROVIDER_IDS || index > MAX_PROVIDER_IDS * 10) {
    throw new ContractViolationError(
      "R8",
      `providerIDList has more than ${MAX_PROVIDER_IDS} distinct entries (or more than ${MAX_PROVIDER_IDS * 10} in all); the MachinePool CRD allows at most ${MAX_PROVIDER_IDS}`,
    );
  }
  const list = [...unique];
  // Without surrogates, UTF-16 code unit order (the default sort) is UTF-8 byte order (Go's sort.Strings).
  return list.some((id) => /[\ud800-\udfff]/.test(id)) ? list.sort(compareBytewise) : list.sort();
}

function arraysEqual(a: readonly string[] | undefined, b: readonly string[]): boolean {
  const left = a ?? [];
  return left.length === b.length && left.every((v, i) => v === b[i]);
}

/**
 * Writes `spec.providerIDList` (R8) in canonical form; an empty result removes the field. Returns whether
 * the object changed.
 *
 * @example
 * ```ts
 * setProviderIDs(pool, instances.map((i) => `aws:///${i.zone}/${i.id}`));
 * ```
 */
export function setProviderIDs(objInput: InfraMachinePoolLike, ids: Iterable<string>): boolean {
  const obj = objInput as InfraMachinePoolContractFields;
  return writeCanonicalProviderIDs(obj, canonicalProviderIDs(ids));
}

function writeCanonicalProviderIDs(
  obj: InfraMachinePoolContractFields,
  canonical: string[],
): boolean {
  if (arraysEqual(obj.spec?.providerIDList, canonical)) return false;
  obj.spec ??= {};
  if (canonical.length === 0) delete obj.spec.providerIDList;
  else obj.spec.providerIDList = canonical;
  return true;
}

/**
 * Writes `status.replicas` (R9): the number of instances observed in the pool (not the desired count), an
 * integer 0…2147483647. Returns whether the object changed.
 *
 * @example
 * ```ts
 * setReplicas(pool, instances.length);
 * ```
 */
export function setReplicas(objInput: InfraMachinePoolLike, replicas: number): boolean {
  const obj = objInput as InfraMachinePoolContractFields;
  if (!Number.isInteger(replicas) || replicas < 0 || replicas > 2_147_483_647) {
    throw new ContractViolationError("R9", `status.replicas must be an int32 ≥ 0, got ${replicas}`);
  }
  if (obj.status?.replicas === replicas) return false;
  obj.status ??= {};
  obj.status.replicas = replicas;
  return true;
}

/**
 * Marks the pool provisioned (R10): writes `status.initialization.provisioned = true` **and**
 * `status.ready = true`, because core at HEAD reads only `status.ready` (contract G1) and after PR #14030
 * reads `initialization.provisioned` first (G2). Sticky: `setReady(pool, false)` never turns a provisioned
 * pool back (G3 — report trouble with conditions instead); on a pool never provisioned it leaves the
 * fields absent. Returns whether the object changed.
 *
 * @example
 * ```ts
 * setReady(pool, instances.length === desired);
 * ```
 */
export function setReady(objInput: InfraMachinePoolLike, ready = true): boolean {
  const obj = objInput as InfraMachinePoolContractFields;
  const wasReady = obj.status?.ready === true || obj.status?.initialization?.provisioned === true;
  if (!ready && !wasReady) return false;
  // Once provisioned, always provisioned: both fields stay true and equal.
  if (obj.status?.ready === true && obj.status.initialization?.provisioned === true) return false;
  obj.status ??= {};
  obj.status.ready = true;
  obj.status.initialization = { ...(obj.status.initialization ?? {}), provisioned: true };
  return true;
}

/** True once the pool reported provisioned in either field. */
export function isProvisioned(objInput: InfraMachinePoolLike): boolean {
  const obj = objInput as InfraMachinePoolContractFields;
  return obj.status?.ready === true || obj.status?.initialization?.provisioned === true;
}

/** What {@link setPoolStatus} writes in one call. */
export interface PoolStatusUpdate {
  /** Provider IDs of the live instances (validated, deduplicated, sorted). */
  providerIDs: Iterable<string>;
  /** Observed number of instances. */
  replicas: number;
  /** Mark provisioned (sticky; `false` never reverts). */
  ready?: boolean;
  /** Pool-level ID (R12), 1–512 characters; `undefined` leaves it unchanged. */
  providerID?: string;
  /**
   * MachinePool Machines opt-in (R11): the InfraMachine kind. An empty string is refused (core would list
   * kind "List"); `undefined` leaves it unchanged.
   */
  infrastructureMachineKind?: string;
}

/**
 * Refuses the fields that make core's MachinePool controller panic (contract G4): `status.failureReason` and
 * `status.failureMessage` must never be set on an InfraMachinePool. Report terminal failures as a condition.
 *
 * @example
 * ```ts
 * assertNoFailureFields(pool); // throws if status.failureReason or failureMessage is present
 * ```
 */
export function assertNoFailureFields(obj: { status?: object }): void {
  const status = (obj.status ?? {}) as Record<string, unknown>;
  for (const field of ["failureReason", "failureMessage"]) {
    if (status[field] !== undefined) {
      throw new ContractViolationError(
        "R17",
        `status.${field} is set; core's MachinePool controller panics on it (G4) — delete it and report the failure with a condition (e.g. Ready=False with a documented reason)`,
      );
    }
  }
}

/**
 * Applies the whole status contract in one call (R8–R12), enforcing the invariant core relies on: a
 * pool with `replicas > 0` must list its provider IDs (core ignores an empty list while replicas ≠ 0, so
 * the MachinePool would never learn about the instances). Validation happens before any field is written.
 * Returns whether the object changed.
 *
 * @example
 * ```ts
 * setPoolStatus(pool, { providerIDs: ids, replicas: ids.length, ready: ids.length >= desired });
 * ```
 */
export function setPoolStatus(objInput: InfraMachinePoolLike, update: PoolStatusUpdate): boolean {
  const obj = objInput as InfraMachinePoolContractFields;
  const canonical = canonicalProviderIDs(update.providerIDs);
  if (update.replicas > 0 && canonical.length === 0) {
    throw new ContractViolationError(
      "R8/R9",
      `status.replicas is ${update.replicas} but providerIDList is empty; list the provider ID of every observed instance, or report replicas 0`,
    );
  }
  if (update.replicas !== canonical.length) {
    throw new ContractViolationError(
      "R8/R9",
      `status.replicas is ${update.replicas} but providerIDList has ${canonical.length} distinct IDs; both count the observed instances, so report replicas: ids.length`,
    );
  }
  if (update.providerID !== undefined) {
    const characters = typeof update.providerID === "string" ? [...update.providerID].length : 0;
    if (
      characters < 1 ||
      characters > MAX_PROVIDER_ID_LENGTH ||
      /\s/u.test(update.providerID) ||
      hasUnsafeCharacters(update.providerID)
    ) {
      throw new ContractViolationError(
        "R12",
        `spec.providerID must be 1–512 characters without whitespace or control characters (format characters included), got ${quoteText(String(update.providerID), 60)} (${characters} characters)`,
      );
    }
  }
  if (update.infrastructureMachineKind !== undefined && update.infrastructureMachineKind === "") {
    throw new ContractViolationError(
      "R11",
      "status.infrastructureMachineKind must not be empty: omit it (undefined) when MachinePool Machines are not supported",
    );
  }
  assertNoFailureFields(obj);
  let changed = writeCanonicalProviderIDs(obj, canonical);
  changed = setReplicas(obj, update.replicas) || changed;
  if (update.providerID !== undefined && obj.spec?.providerID !== update.providerID) {
    obj.spec ??= {};
    obj.spec.providerID = update.providerID;
    changed = true;
  }
  if (
    update.infrastructureMachineKind !== undefined &&
    obj.status?.infrastructureMachineKind !== update.infrastructureMachineKind
  ) {
    obj.status ??= {};
    obj.status.infrastructureMachineKind = update.infrastructureMachineKind;
    changed = true;
  }
  if (update.ready !== undefined) changed = setReady(obj, update.ready) || changed;
  return changed;
}
