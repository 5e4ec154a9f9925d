import { FieldSet, pathToString } from "./fieldset.js";
import {
  appliedConfigProblems,
  cloneJSON,
  compareValues,
  deepEqual,
  isObject,
  type MergeSchema,
  mergeValues,
  removePaths,
  toFieldSet,
} from "./typed.js";

/**
 * An applied configuration the server cannot turn into a typed object (a map-list item without its
 * keys, or duplicate keys). kube-apiserver answers these with a 500 whose Status carries no reason and
 * this message.
 */
export class ApplyConfigError extends Error {
  /** HTTP status the server answers with. */
  readonly status = 500;

  constructor(config: Record<string, unknown>, problems: readonly string[]) {
    const meta = isObject(config.metadata) ? config.metadata : {};
    const name = `${typeof meta.namespace === "string" ? `${meta.namespace}/` : ""}${String(meta.name ?? "")}`;
    const apiVersion = String(config.apiVersion ?? "");
    super(
      `failed to create typed patch object (${name}; ${apiVersion}, Kind=${String(config.kind ?? "")}): ${problems[0] ?? ""}`,
    );
    this.name = "ApplyConfigError";
  }
}

/** One `metadata.managedFields` entry. */
export interface ManagedFieldsEntry {
  /** Who owns the fields: the request's `fieldManager` (e.g. `kubectl`, `capi-ts`). */
  manager: string;
  /** `Apply` or `Update`. */
  operation: "Apply" | "Update";
  /** The API version the fields were written in. */
  apiVersion: string;
  /** When the entry last changed (RFC 3339, seconds). */
  time: string;
  /** Always `FieldsV1`. */
  fieldsType: "FieldsV1";
  /** The owned fields. */
  fieldsV1: Record<string, unknown>;
  /** The subresource written through (`status`), if any. */
  subresource?: string;
}

/** Arguments of {@link serverSideApply}. */
export interface ApplyArgs {
  /** The stored object, or `undefined` when the apply creates it. */
  live: object | undefined;
  /** The applied configuration (the request body). */
  applied: object;
  /** `fieldManager`. */
  manager: string;
  /** `force=true`: take ownership of conflicting fields instead of failing. */
  force: boolean;
  /** The kind's schema (a compiled CRD schema or {@link builtinMergeSchema}); lists are atomic without one. */
  schema?: MergeSchema | undefined;
  /** The timestamp to record (RFC 3339). */
  now: string;
  /** Always `Apply`. */
  operation?: "Apply";
  /** The API version of the request (defaults to the applied object's `apiVersion`). */
  apiVersion?: string;
  /** The subresource applied through (`status`), if any. */
  subresource?: string;
  /** Top-level fields this endpoint resets and that are therefore not owned (e.g. `[["status"]]`). */
  ignoredFields?: readonly (readonly string[])[];
}

/** A field another manager owns with a different value. */
export interface ApplyConflict {
  /** The other manager as the server prints it: `"name"`, or `"name" using v1 at <time>` for updaters. */
  manager: string;
  /** The field, e.g. `.spec.replicas` or `.status.conditions[type="Ready"].status`. */
  field: string;
  /** The `Status.details.causes[].message`: `conflict with "name"…`. */
  message: string;
}

/** Outcome of {@link serverSideApply}. */
export type ApplyResult =
  | {
      /** The object to store, with `metadata.managedFields` updated. */
      object: Record<string, unknown>;
      /** Whether anything (fields or ownership) changed; when false the server stores nothing. */
      changed: boolean;
    }
  | {
      /** The conflicts (the server answers 409 `Conflict` with these as `FieldManagerConflict` causes). */
      conflicts: ApplyConflict[];
      /** The `Status.message`, e.g. `Apply failed with 1 conflict: conflict with "a": .spec.replicas`. */
      message: string;
    };

/** Arguments of {@link trackUpdate}. */
export interface TrackUpdateArgs {
  /** The stored object, or `undefined` on create. */
  live: object | undefined;
  /** The object being written. */
  updated: object;
  /** `fieldManager` (the server derives one from the user agent when absent). */
  manager: string;
  /** Always `Update` (create, update and non-apply patches). */
  operation: "Update";
  /** The timestamp to record (RFC 3339). */
  now: string;
  /** The subresource written through (`status`), if any. */
  subresource?: string;
  /** The kind's schema, as for {@link serverSideApply}. */
  schema?: MergeSchema | undefined;
  /** The API version of the request (defaults to the object's `apiVersion`). */
  apiVersion?: string;
  /** Top-level fields this endpoint resets and that are therefore not owned. */
  ignoredFields?: readonly (readonly string[])[];
}

interface Manager {
  manager: string;
  operation: "Apply" | "Update";
  apiVersion: string;
  subresource: string;
  time: string;
  set: FieldSet;
  /** The stored `fieldsV1` of `set`, reused while the set is unchanged (encoding is the costly part). */
  encoded?: Record<string, unknown>;
}

/** Fields the server never records as owned. */
const STRIPPED = (() => {
  const set = new FieldSet();
  for (const p of [
    ["f:apiVersion"],
    ["f:kind"],
    ["f:metadata"],
    ["f:metadata", "f:name"],
    ["f:metadata", "f:namespace"],
    ["f:metadata", "f:creationTimestamp"],
    ["f:metadata", "f:selfLink"],
    ["f:metadata", "f:uid"],
    ["f:metadata", "f:clusterName"],
    ["f:metadata", "f:generation"],
    ["f:metadata", "f:managedFields"],
    ["f:metadata", "f:resourceVersion"],
  ]) {
    set.insert(p);
  }
  return set;
})();

function strip(set: FieldSet, ignored: readonly (readonly string[])[] | undefined): FieldSet {
  let out = set.difference(STRIPPED);
  for (const path of ignored ?? []) {
    const elements = path.map((p) => `f:${p}`);
    const prefix = elements.slice(0, -1);
    const last = elements[elements.length - 1];
    const parent = out.at(prefix);
    if (parent !== undefined && last !== undefined) parent.children.delete(last);
    out = out.clone();
  }
  return out;
}

function identity(
  m: Pick<Manager, "manager" | "operation" | "apiVersion" | "subresource">,
): string {
  // Apply managers are one per name+subresource; Update managers also per API version.
  return m.operation === "Apply"
    ? `${m.manager}\u0000Apply\u0000\u0000${m.subresource}`
    : `${m.manager}\u0000Update\u0000${m.apiVersion}\u0000${m.subresource}`;
}

function readManagers(obj: unknown): Manager[] {
  if (!isObject(obj) || !isObject(obj.metadata)) return [];
  const entries = obj.metadata.managedFields;
  if (!Array.isArray(entries)) return [];
  const out: Manager[] = [];
  for (const e of entries) {
    if (!isObject(e) || typeof e.manager !== "string") continue;
    out.push({
      manager: e.manager,
      operation: e.operation === "Apply" ? "Apply" : "Update",
      apiVersion: typeof e.apiVersion === "string" ? e.apiVersion : "",
      subresource: typeof e.subresource === "string" ? e.subresource : "",
      time: typeof e.time === "string" ? e.time : "",
      set: FieldSet.fromFieldsV1(e.fieldsV1),
      ...(isObject(e.fieldsV1) ? { encoded: e.fieldsV1 } : {}),
    });
  }
  return out;
}

function encodeManagers(managers: Manager[]): ManagedFieldsEntry[] {
  const sorted = managers
    .filter((m) => !m.set.isEmpty())
    .sort(
      (p, q) =>
        compare(p.operation, q.operation) ||
        compare(p.time, q.time) ||
        compare(p.manager, q.manager) ||
        compare(p.apiVersion, q.apiVersion) ||
        compare(p.subresource, q.subresource),
    );
  return sorted.map((m) => {
    const entry: ManagedFieldsEntry = {
      manager: m.manager,
      operation: m.operation,
      apiVersion: m.apiVersion,
      time: m.time,
      fieldsType: "FieldsV1",
      fieldsV1: m.encoded ?? m.set.toFieldsV1(),
    };
    if (m.subresource.length > 0) entry.subresource = m.subresource;
    return entry;
  });
}

/** The manager without the given fields; the same object (and stored encoding) when it owns none. */
function without(m: Manager, changed: FieldSet, removed: FieldSet): Manager {
  if (m.set.intersection(changed).isEmpty() && m.set.intersection(removed).isEmpty()) return m;
  const { encoded: _stale, ...rest } = m;
  return { ...rest, set: m.set.difference(changed).difference(removed) };
}

/** What a create is compared against: an empty object, with a built-in kind's struct fields. */
function zeroObject(schema: MergeSchema | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const field of schema?.zeroStructs ?? []) out[field] = {};
  return out;
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function withoutManagedFields(obj: unknown): Record<string, unknown> {
  const copy = isObject(obj) ? (cloneJSON(obj) as Record<string, unknown>) : {};
  if (isObject(copy.metadata)) delete copy.metadata.managedFields;
  return copy;
}

function setManagedFields(obj: Record<string, unknown>, managers: Manager[]): void {
  const entries = encodeManagers(managers);
  if (!isObject(obj.metadata)) obj.metadata = {};
  const meta = obj.metadata as Record<string, unknown>;
  if (entries.length > 0) meta.managedFields = entries;
  else delete meta.managedFields;
}

function printManager(m: Manager): string {
  let out = JSON.stringify(m.manager);
  if (m.subresource.length > 0) out += ` with subresource ${JSON.stringify(m.subresource)}`;
  // Conflicts name managers by identity (name, operation, API version), without a time.
  if (m.operation === "Update") out += ` using ${m.apiVersion}`;
  return out;
}

function conflictMessage(conflicts: { m: Manager; path: string }[]): string {
  const first = conflicts[0];
  if (conflicts.length === 1 && first !== undefined) {
    return `Apply failed with 1 conflict: conflict with ${printManager(first.m)}: ${first.path}`;
  }
  const byManager = new Map<string, string[]>();
  for (const c of conflicts) {
    const key = c.m.manager;
    const list = byManager.get(key) ?? [];
    list.push(c.path);
    byManager.set(key, list);
  }
  const lines: string[] = [];
  for (const key of [...byManager.keys()].sort()) {
    const m = conflicts.find((c) => c.m.manager === key)?.m;
    if (m === undefined) continue;
    lines.push(`conflicts with ${printManager(m)}:`);
    for (const p of byManager.get(key) ?? []) lines.push(`- ${p}`);
  }
  return `Apply failed with ${conflicts.length} conflicts: ${lines.join("\n")}`;
}

function apiVersionOf(obj: unknown, fallback: string | undefined): string {
  if (fallback !== undefined) return fallback;
  return isObject(obj) && typeof obj.apiVersion === "string" ? obj.apiVersion : "";
}

/**
 * Server-side apply (`application/apply-patch+yaml`): merges the applied configuration into the live
 * object, records the manager's ownership in `metadata.managedFields` (FieldsV1), removes fields the
 * manager applied before but no longer applies (unless another manager owns them), and reports
 * conflicts with other managers' fields whose values would change — or, with `force`, takes them over.
 *
 * @throws ApplyConfigError when the applied configuration has map-list items without keys or with
 * duplicate keys (the server answers 500).
 * @example
 * ```ts
 * const result = serverSideApply({ live, applied, manager: "capi-ts", force: false, schema, now });
 * if ("conflicts" in result) respond409(result.message, result.conflicts);
 * else if (result.changed) store(result.object);
 * ```
 */
export function serverSideApply(args: ApplyArgs): ApplyResult {
  const { schema } = args;
  const live = args.live === undefined ? {} : withoutManagedFields(args.live);
  const config = withoutManagedFields(args.applied);
  const problems = appliedConfigProblems(schema, config);
  if (problems.length > 0) throw new ApplyConfigError(config, problems);
  const apiVersion = apiVersionOf(args.applied, args.apiVersion);
  const subresource = args.subresource ?? "";
  const managers = readManagers(args.live);
  if (args.live !== undefined && managers.length === 0) {
    // Objects that predate field tracking: the existing fields belong to "before-first-apply".
    const set = strip(toFieldSet(schema, live), args.ignoredFields);
    if (!set.isEmpty()) {
      managers.push({
        manager: "before-first-apply",
        operation: "Update",
        apiVersion,
        subresource: "",
        time: args.now,
        set,
      });
    }
  }
  const me = { manager: args.manager, operation: "Apply" as const, apiVersion, subresource };
  const myId = identity(me);
  const previous = managers.find((m) => identity(m) === myId);
  const newSet = strip(toFieldSet(schema, config), args.ignoredFields);
  const merged = mergeValues(schema, live, config, true) as Record<string, unknown>;

  const others = managers.filter((m) => identity(m) !== myId);
  // Pruning only matters when the manager stopped applying something it applied before.
  if (previous !== undefined && !previous.set.difference(newSet).isEmpty()) {
    let keep = newSet.withPrefixes();
    for (const m of others) keep = keep.union(m.set.withPrefixes());
    const dropped = previous.set.withPrefixes().difference(keep).difference(STRIPPED);
    removePaths(schema, merged, topMembers(dropped));
  }

  const cmp = compareValues(schema, live, merged);
  const changedPaths = cmp.modified.union(cmp.added);
  const conflicts: { m: Manager; path: string; set: FieldSet }[] = [];
  for (const m of others) {
    const overlap = m.set.intersection(changedPaths);
    for (const path of overlap.paths()) {
      conflicts.push({ m, path: pathToString(path), set: overlap });
    }
  }
  if (conflicts.length > 0 && !args.force) {
    return {
      conflicts: conflicts.map((c) => ({
        manager: printManager(c.m),
        field: c.path,
        message: `conflict with ${printManager(c.m)}`,
      })),
      message: conflictMessage(conflicts),
    };
  }
  const next: Manager[] = [];
  for (const m of others) {
    next.push(without(m, changedPaths, cmp.removed));
  }
  const ownershipChanged = previous === undefined || !previous.set.equals(newSet);
  const objectChanged = !deepEqual(live, merged);
  // The server stamps the applier's entry whenever the apply changed the object.
  next.push({
    ...me,
    time: objectChanged || previous === undefined ? args.now : previous.time,
    set: newSet,
    ...(!ownershipChanged && previous?.encoded !== undefined ? { encoded: previous.encoded } : {}),
  });
  const ownershipMoved =
    ownershipChanged || next.length !== managers.length || others.some((m, i) => next[i] !== m);
  const changed = args.live === undefined || objectChanged || ownershipMoved;
  if (changed) setManagedFields(merged, next);
  if (!changed && args.live !== undefined) {
    return { object: cloneJSON(args.live) as Record<string, unknown>, changed: false };
  }
  return { object: merged, changed };
}

/** The highest member paths of a set (removing a member removes its subtree). */
function topMembers(set: FieldSet): FieldSet {
  const out = new FieldSet();
  const walk = (node: FieldSet, path: string[]) => {
    for (const [element, child] of node.children) {
      const p = [...path, element];
      if (child.member) out.insert(p);
      else walk(child, p);
    }
  };
  walk(set, []);
  return out;
}

/**
 * Records a non-apply write (create, update, JSON/merge/strategic patch) in `metadata.managedFields`:
 * the writer takes ownership of every field it added or changed (other managers lose those fields, so a
 * later apply by them conflicts), and removed fields leave every manager. A `managedFields` list in the
 * request that differs from the stored one replaces it, as on the server (`[{}]` clears it).
 *
 * @returns A copy of `updated` with `metadata.managedFields` set.
 * @example
 * ```ts
 * const toStore = trackUpdate({ live, updated: body, manager: "kubectl-edit", operation: "Update", now });
 * ```
 */
export function trackUpdate(args: TrackUpdateArgs): Record<string, unknown> {
  const { schema } = args;
  const live = args.live === undefined ? zeroObject(schema) : withoutManagedFields(args.live);
  const updated = withoutManagedFields(args.updated);
  const apiVersion = apiVersionOf(args.updated, args.apiVersion);
  const subresource = args.subresource ?? "";
  const requested =
    isObject(args.updated) && isObject((args.updated as Record<string, unknown>).metadata)
      ? ((args.updated as { metadata: Record<string, unknown> }).metadata.managedFields as unknown)
      : undefined;
  const stored =
    isObject(args.live) && isObject((args.live as Record<string, unknown>).metadata)
      ? ((args.live as { metadata: Record<string, unknown> }).metadata.managedFields as unknown)
      : undefined;
  const resetByRequest =
    Array.isArray(requested) && requested.length > 0 && !deepEqual(requested, stored);
  const managers = readManagers(resetByRequest ? args.updated : args.live);
  if (resetByRequest) {
    setManagedFields(updated, managers);
    return updated;
  }

  const cmp = compareValues(schema, live, updated);
  const changed = strip(cmp.modified.union(cmp.added), args.ignoredFields);
  const removed = strip(cmp.removed, args.ignoredFields);
  const me = { manager: args.manager, operation: "Update" as const, apiVersion, subresource };
  const myId = identity(me);
  const previous = managers.find((m) => identity(m) === myId);
  const next: Manager[] = [];
  for (const m of managers) {
    if (identity(m) === myId) continue;
    next.push(without(m, changed, removed));
  }
  if (previous !== undefined && changed.isEmpty()) {
    // The write took no field: the entry stays as it was (time included), minus removed fields.
    next.push(without(previous, changed, removed));
  } else {
    // The server stamps the writer's entry when the write took any field (added or changed one).
    next.push({
      ...me,
      time: args.now,
      set: (previous?.set ?? new FieldSet()).union(changed).difference(removed),
    });
  }
  setManagedFields(updated, next);
  return updated;
}
