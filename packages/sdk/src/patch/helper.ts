import {
  type LayoutOptions,
  readConditionList,
  readPath,
  statusLayoutOf,
  v1beta1ConditionsPath,
  v1beta2ConditionsPath,
  writePath,
} from "../conditions/location.js";
import {
  applyConditionPatch,
  ConditionConflictError,
  type ConditionFlavour,
  type ConditionPatchOperation,
  diffConditions,
} from "../conditions/patch.js";
import { pluralize } from "../conditions/pluralize.js";
import type { ConditionLike } from "../conditions/types.js";
import { type Clock, systemClock } from "../runtime/clock.js";
import {
  createMergePatch,
  deepEqual,
  isPlainObject,
  type JsonValue,
  jsonClone,
  normalizeJson,
  normalizeOmitEmpty,
  omitPaths,
} from "./json.js";
import {
  httpStatusOf,
  type KubeObject,
  MERGE_PATCH,
  type PatchClient,
  type PatchTransport,
  type ResourceRef,
  toTransport,
} from "./transport.js";

/** Options of {@link PatchHelper.apply}. */
export interface PatchOptions extends LayoutOptions {
  /**
   * Condition types this controller owns (e.g. `Ready`, `Paused` and its own): on a concurrent change its
   * value wins instead of failing with a {@link ConditionConflictError}.
   */
  ownedConditions?: readonly string[];
  /** Every condition is owned (CAPI `WithForceOverwriteConditions`). */
  forceOverwriteConditions?: boolean;
  /**
   * Send the snapshot's `metadata.resourceVersion` with the spec and status patches, so that they fail
   * with 409 if anyone wrote the object since it was read (default: last writer wins, like CAPI).
   */
  precondition?: "resourceVersion";
  /** Set `status.observedGeneration` to `metadata.generation` when anything is sent (CAPI `WithStatusObservedGeneration`). */
  statusObservedGeneration?: boolean;
  /** Where the object is served; default: the helper's resource, else derived from apiVersion and kind. */
  resource?: ResourceRef;
  /** Attempts for the conditions patch on 409 (default 5, as CAPI). */
  conditionAttempts?: number;
  /** Base delay between conflict retries in ms, jittered up to 2× (default 100, as CAPI). */
  retryDelayMs?: number;
  /** Time source of the conflict retries' delays (default: the system clock). */
  clock?: Clock;
}

/** What {@link PatchHelper.apply} sent. */
export interface PatchResult {
  /** HTTP requests made (GETs and PATCHes). 0 when nothing changed. */
  requests: number;
  /** Which parts were patched. */
  patched: { conditions: boolean; spec: boolean; status: boolean };
  /** The object as the server last returned it (after the last PATCH), when anything was sent. */
  object?: KubeObject;
}

/** The changes between a snapshot and the current object, as {@link PatchHelper.changes} reports them. */
export interface PatchChanges {
  /** Merge patch of everything but `status` (empty object when unchanged). */
  spec: Record<string, JsonValue>;
  /** Merge patch of `status` without the condition lists (empty object when unchanged). */
  status: Record<string, JsonValue>;
  /** Per-type operations on the v1beta2 condition list. */
  conditions: ConditionPatchOperation[];
  /** Per-type operations on the deprecated v1beta1 condition list. */
  v1beta1Conditions: ConditionPatchOperation[];
}

/** An error from {@link PatchHelper.apply}, aggregating the failures of its parts. */
export class PatchError extends Error {
  /** The individual failures (conditions, spec, status). */
  readonly errors: readonly unknown[];
  /** Creates the error. */
  constructor(what: string, errors: unknown[]) {
    super(
      `patching ${what} failed: ${errors.map((e) => (e instanceof Error ? e.message : String(e))).join("; ")}`,
    );
    this.name = "PatchError";
    this.errors = errors;
  }
}

/** The object shape the helper accepts: anything with Kubernetes metadata. */
export interface PatchableObject {
  /** `group/version`. */
  apiVersion?: string;
  /** The object's kind; the helper addresses the object by its resource, not by this field. */
  kind?: string;
  /** Metadata; `name` is required to address the object. */
  metadata?: {
    name?: string;
    namespace?: string;
    resourceVersion?: string;
    generation?: number;
  };
}

// Server-owned metadata: never part of a patch, whatever the caller did to its copy.
const SERVER_OWNED_METADATA: readonly (readonly string[])[] = [
  ["metadata", "resourceVersion"],
  ["metadata", "managedFields"],
  ["metadata", "generation"],
  ["metadata", "uid"],
  ["metadata", "creationTimestamp"],
  ["metadata", "deletionTimestamp"],
  ["metadata", "deletionGracePeriodSeconds"],
  ["metadata", "selfLink"],
];

const sleep = (ms: number, clock: Clock = systemClock) =>
  new Promise<void>((resolve) => {
    clock.setTimer(resolve, ms);
  });

/** What change detection compares: the object normalised (omitempty), without server-owned metadata. */
function comparable(obj: unknown): Record<string, unknown> {
  const normalized = normalizeJson(obj);
  return omitPaths(isPlainObject(normalized) ? normalized : {}, SERVER_OWNED_METADATA);
}

function describe(obj: PatchableObject): string {
  const ns = obj.metadata?.namespace;
  return `${obj.kind ?? "object"} ${ns ? `${ns}/` : ""}${obj.metadata?.name ?? "<unnamed>"}`;
}

/**
 * Derives where an object is served from its apiVersion and kind: the plural is the lower-case kind
 * pluralised like CAPI's `CalculateCRDName` (which holds for every CRD that follows the contract).
 *
 * @example
 * ```ts
 * resourceOf({ apiVersion: "cluster.x-k8s.io/v1beta2", kind: "MachinePool" });
 * // { group: "cluster.x-k8s.io", version: "v1beta2", plural: "machinepools" }
 * ```
 */
export function resourceOf(obj: PatchableObject): ResourceRef {
  const apiVersion = obj.apiVersion;
  const kind = obj.kind;
  if (!apiVersion || !kind) {
    throw new Error(
      `cannot tell where ${describe(obj)} is served: it has no apiVersion/kind; pass { resource: { group, version, plural } }`,
    );
  }
  const slash = apiVersion.indexOf("/");
  const group = slash < 0 ? "" : apiVersion.slice(0, slash);
  const version = slash < 0 ? apiVersion : apiVersion.slice(slash + 1);
  return { group, version, plural: pluralize(kind.toLowerCase()) };
}

/**
 * Snapshot an object, let the reconcile mutate it, then send only what changed — CAPI's
 * `patch.NewHelper` + `Patch`:
 * - conditions first, per type, onto a fresh read, with "owned conditions win" and up to 5 attempts on
 *   409 (optimistic locking with the latest resourceVersion);
 * - a JSON merge patch of metadata + spec to the resource (last writer wins unless `precondition`);
 * - a JSON merge patch of the rest of `status` to `/status`.
 *
 * Nothing is sent when the object did not change, with Go `omitempty` equivalence (missing, `undefined`,
 * `null`, `[]` and `{}` are the same).
 *
 * @example
 * ```ts
 * const patch = PatchHelper.snapshot(pool);
 * setCondition(pool, { type: "Ready", status: "True", reason: "Ready" });
 * pool.spec.providerIDList = ids;
 * await patch.apply(kubeConfig, pool, { ownedConditions: ["Ready", "Paused"] });
 * ```
 */
export class PatchHelper<T extends PatchableObject = PatchableObject> {
  readonly #before: Record<string, unknown>;
  readonly #resource: ResourceRef | undefined;
  /** {@link comparable} of the snapshot, made on the first comparison and kept (the snapshot never changes). */
  #comparableBefore: Record<string, unknown> | undefined;

  private constructor(before: Record<string, unknown>, resource: ResourceRef | undefined) {
    this.#before = before;
    this.#resource = resource;
  }

  /**
   * Takes a deep copy of the object as read from the API server.
   *
   * @example
   * ```ts
   * const patch = PatchHelper.snapshot(pool, { resource: { group: "infrastructure.example.com", version: "v1beta2", plural: "foomachinepools" } });
   * ```
   */
  static snapshot<T extends PatchableObject>(
    obj: T,
    options?: { resource?: ResourceRef },
  ): PatchHelper<T> {
    if (!obj || typeof obj !== "object") {
      throw new Error("PatchHelper.snapshot needs the object as read from the API server");
    }
    return new PatchHelper<T>(jsonClone(obj) as Record<string, unknown>, options?.resource);
  }

  /** The snapshot (a copy; mutating it has no effect). */
  get before(): T {
    return jsonClone(this.#before) as T;
  }

  /**
   * Computes what {@link PatchHelper.apply} would send, without sending anything.
   *
   * @example
   * ```ts
   * if (patch.hasChanges(pool)) log.debug(patch.changes(pool));
   * ```
   */
  changes(
    obj: T,
    options: LayoutOptions & { statusObservedGeneration?: boolean } = {},
  ): PatchChanges {
    // One normalising copy of the object and none of the snapshot (kept from the first call): a
    // reconcile compares a pool that may carry thousands of providerIDs and instances.
    const before = this.#before;
    const layout = { layout: statusLayoutOf(before as never, options) } as const;
    const v2Path = v1beta2ConditionsPath(before as never, layout);
    const v1Path = v1beta1ConditionsPath(before as never, layout);

    this.#comparableBefore ??= comparable(before);
    const normBefore = this.#comparableBefore;
    const normAfter = comparable(obj);
    if (deepEqual(normBefore, normAfter)) {
      return { spec: {}, status: {}, conditions: [], v1beta1Conditions: [] };
    }
    if (options.statusObservedGeneration) {
      const generation = (obj.metadata as { generation?: number } | undefined)?.generation;
      if (generation !== undefined) {
        const status = isPlainObject(normAfter.status) ? normAfter.status : {};
        normAfter.status = {
          ...status,
          observedGeneration: normalizeJson(generation) as JsonValue,
        };
      }
    }

    const { status: statusBefore, ...restBefore } = normBefore;
    const { status: statusAfter, ...restAfter } = normAfter;
    const spec = createMergePatch(restBefore, restAfter);

    const statusOnly = (s: unknown) =>
      isPlainObject(s) ? omitPaths({ status: s }, [v2Path, v1Path]) : {};
    const status = createMergePatch(statusOnly(statusBefore), statusOnly(statusAfter));

    const conditions = diffConditions(
      readConditionList(normBefore, v2Path),
      readConditionList(normAfter, v2Path),
    );
    const v1beta1Conditions = diffConditions(
      readConditionList(normBefore, v1Path),
      readConditionList(normAfter, v1Path),
    );
    return { spec, status, conditions, v1beta1Conditions };
  }

  /**
   * True when {@link PatchHelper.apply} would send at least one request.
   *
   * @example
   * ```ts
   * patch.hasChanges(pool); // false right after snapshot
   * ```
   */
  hasChanges(obj: T, options: LayoutOptions = {}): boolean {
    const c = this.changes(obj, options);
    return (
      Object.keys(c.spec).length > 0 ||
      Object.keys(c.status).length > 0 ||
      c.conditions.length > 0 ||
      c.v1beta1Conditions.length > 0
    );
  }

  /**
   * Sends the minimal requests that turn the snapshot into `obj` (see the class description), through
   * `client`: the runtime's `KubeClient` (in a reconcile, `ctx.client`), a `KubeConfig` (one `KubeClient`
   * is made per KubeConfig), or a {@link PatchTransport} of your own. Throws a {@link PatchError}
   * aggregating the failed parts (the runtime's typed errors, e.g. `ConflictError`, inside); a
   * {@link ConditionConflictError} among them means another writer changed a condition that is not in
   * `ownedConditions`.
   *
   * @example
   * ```ts
   * const result = await patch.apply(ctx.client, pool, { ownedConditions: ["Ready"] });
   * result.requests; // 0 when nothing changed
   * await PatchHelper.snapshot(secret).apply(kubeConfig, secret); // core kinds too
   * ```
   */
  async apply(client: PatchClient, obj: T, options: PatchOptions = {}): Promise<PatchResult> {
    const result: PatchResult = {
      requests: 0,
      patched: { conditions: false, spec: false, status: false },
    };
    const changes = this.changes(obj, options);
    const hasSpec = Object.keys(changes.spec).length > 0;
    const hasStatus = Object.keys(changes.status).length > 0;
    const hasConditions = changes.conditions.length > 0 || changes.v1beta1Conditions.length > 0;
    if (!hasSpec && !hasStatus && !hasConditions) return result;

    const before = this.#before as PatchableObject;
    if (before.apiVersion !== obj.apiVersion || before.kind !== obj.kind) {
      throw new Error(
        `cannot patch ${describe(before)}: apiVersion/kind changed from ${before.apiVersion}/${before.kind} to ${obj.apiVersion}/${obj.kind}; patch the object that was snapshotted`,
      );
    }
    const name = before.metadata?.name;
    if (!name) throw new Error(`cannot patch ${describe(before)}: metadata.name is empty`);
    const namespace = before.metadata?.namespace;
    const resource = options.resource ??
      this.#resource ?? { ...resourceOf(before), kind: before.kind };
    const transport = toTransport(client);
    const layout = { layout: statusLayoutOf(before as never, options) } as const;
    const errors: unknown[] = [];

    if (hasConditions) {
      try {
        result.object =
          (await this.#patchConditions(
            transport,
            resource,
            namespace,
            name,
            changes,
            layout,
            options,
            result,
          )) ?? result.object;
      } catch (error) {
        errors.push(error);
      }
    }

    const lock =
      options.precondition === "resourceVersion" && before.metadata?.resourceVersion
        ? before.metadata.resourceVersion
        : undefined;
    const withLock = (body: Record<string, JsonValue>) => {
      if (!lock) return body;
      const metadata = isPlainObject(body.metadata) ? body.metadata : {};
      return { ...body, metadata: { ...metadata, resourceVersion: lock } };
    };

    if (hasSpec) {
      try {
        result.requests++;
        result.object = await transport.patch(
          resource,
          namespace,
          name,
          withLock(changes.spec),
          MERGE_PATCH,
        );
        result.patched.spec = true;
      } catch (error) {
        errors.push(error);
      }
    }

    if (hasStatus) {
      try {
        result.requests++;
        result.object = await transport.patch(
          resource,
          namespace,
          name,
          withLock(changes.status),
          MERGE_PATCH,
          "status",
        );
        result.patched.status = true;
      } catch (error) {
        const meta = (obj as unknown as KubeObject).metadata;
        const gone =
          httpStatusOf(error) === 404 &&
          meta?.deletionTimestamp &&
          (meta.finalizers ?? []).length === 0;
        if (!gone) errors.push(error);
      }
    }

    if (errors.length > 0) throw new PatchError(describe(before), errors);
    return result;
  }

  async #patchConditions(
    transport: PatchTransport,
    resource: ResourceRef,
    namespace: string | undefined,
    name: string,
    changes: PatchChanges,
    layout: LayoutOptions,
    options: PatchOptions,
    result: PatchResult,
  ): Promise<KubeObject | undefined> {
    const attempts = options.conditionAttempts ?? 5;
    const baseDelay = options.retryDelayMs ?? 100;
    const lists: Array<{
      ops: ConditionPatchOperation[];
      flavour: ConditionFlavour;
      path: readonly string[];
    }> = [];
    const before = this.#before as never;
    if (changes.conditions.length > 0) {
      lists.push({
        ops: changes.conditions,
        flavour: "v1beta2",
        path: v1beta2ConditionsPath(before, layout),
      });
    }
    if (changes.v1beta1Conditions.length > 0) {
      lists.push({
        ops: changes.v1beta1Conditions,
        flavour: "v1beta1",
        path: v1beta1ConditionsPath(before, layout),
      });
    }
    let lastError: unknown;
    for (let attempt = 1; attempt <= attempts; attempt++) {
      result.requests++;
      const latest = await transport.get(resource, namespace, name);
      const updated = jsonClone(latest) as Record<string, unknown>;
      for (const { ops, flavour, path } of lists) {
        const merged = applyConditionPatch(
          ops,
          readConditionList(latest, path) as ConditionLike[],
          {
            ownedConditions: options.ownedConditions ?? [],
            forceOverwrite: options.forceOverwriteConditions ?? false,
            flavour,
          },
        );
        writePath(updated, path, merged.length > 0 ? merged : undefined);
      }
      const body = createMergePatch(
        (normalizeOmitEmpty(latest) ?? {}) as Record<string, unknown>,
        (normalizeOmitEmpty(updated) ?? {}) as Record<string, unknown>,
      );
      if (Object.keys(body).length === 0) return latest; // the server already has our conditions
      const resourceVersion = readPath(latest, ["metadata", "resourceVersion"]);
      const metadata = isPlainObject(body.metadata) ? body.metadata : {};
      const locked = {
        ...body,
        metadata: { ...metadata, resourceVersion: resourceVersion as JsonValue },
      };
      try {
        result.requests++;
        const response = await transport.patch(
          resource,
          namespace,
          name,
          locked,
          MERGE_PATCH,
          "status",
        );
        result.patched.conditions = true;
        return response;
      } catch (error) {
        if (httpStatusOf(error) !== 409) throw error;
        lastError = error;
        if (attempt < attempts) await sleep(baseDelay * (1 + Math.random()), options.clock);
      }
    }
    throw new Error(
      `conditions of ${name} still conflicted after ${attempts} attempts (HTTP 409 each time): ${
        lastError instanceof Error ? lastError.message : String(lastError)
      }`,
    );
  }
}

export { ConditionConflictError };
