/**
 * How writes reach the field-management engines: who the manager is, which schema and fields apply,
 * recording non-apply writes in `managedFields`, and the errors server-side apply answers with.
 *
 * @module
 */
import { strategyOf } from "./admission.js";
import type { PatchEngines, WriteOptions } from "./core-types.js";
import { ApiError } from "./errors.js";
import type { ResolvedResource } from "./registry.js";
import { servedView } from "./rendering.js";
import type { KubeObject } from "./types.js";

/** Marks a write whose managedFields server-side apply already computed. */
export const APPLIED = "\u0000applied";

/** The merge schema field management uses for this resource. */
export function mergeSchema(engines: PatchEngines, res: ResolvedResource): unknown {
  if (res.rt.builtin) return engines.builtinSchema?.(res.rt.kind);
  return strategyOf(res)?.schema;
}

/** Top-level fields an endpoint resets: status on the main resource, the rest on /status. */
export function ignoredFields(
  res: ResolvedResource,
  subresource: string | undefined,
  obj: KubeObject,
): string[][] {
  if (subresource === "status") {
    return Object.keys(obj)
      .filter((k) => !["apiVersion", "kind", "metadata", "status"].includes(k))
      .map((k) => [k]);
  }
  return res.rt.statusSubresource ? [["status"]] : [];
}

/** The field manager of a request: `fieldManager`, else the User-Agent's product name. */
function managerOf(opts: WriteOptions): string {
  if (opts.fieldManager) return opts.fieldManager;
  const product = opts.userAgent?.split("/")[0]?.trim();
  return product || "unknown";
}

/** Records a non-apply write in managedFields, when the engine is present. */
export function trackWrite(
  engines: PatchEngines,
  res: ResolvedResource,
  live: KubeObject | undefined,
  updated: KubeObject,
  opts: WriteOptions,
  now: () => string,
): KubeObject {
  if (!engines.trackUpdate || opts.fieldManager === APPLIED) return updated;
  // Like kube-apiserver's skip-non-applied manager: an object without managedFields (they were
  // cleared) is not tracked again by updates, only by an apply.
  if (live !== undefined && (live.metadata.managedFields ?? []).length === 0) return updated;
  const viewLive = live ? servedView(res, live) : undefined;
  const viewUpdated = servedView(res, updated);
  const tracked = engines.trackUpdate({
    live: viewLive,
    updated: viewUpdated,
    manager: managerOf(opts),
    now: now(),
    subresource: opts.subresource,
    schema: mergeSchema(engines, res),
    apiVersion: res.apiVersion,
    ignoredFields: ignoredFields(res, opts.subresource, updated),
  });
  return {
    ...updated,
    metadata: { ...updated.metadata, managedFields: tracked.metadata.managedFields },
  };
}

/** The 422 of an apply without a field manager. */
export function fieldManagerRequired(): ApiError {
  return new ApiError(
    422,
    "Invalid",
    'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch',
    {
      group: "meta.k8s.io",
      kind: "PatchOptions",
      causes: [
        {
          reason: "FieldValueRequired",
          message: "Required value: is required for apply patch",
          field: "fieldManager",
        },
      ],
    },
  );
}

/** The 409 of an apply that would take fields other managers own. */
export function applyConflict(result: {
  conflicts: { field: string; message: string }[];
  message: string;
}): ApiError {
  return new ApiError(409, "Conflict", result.message, {
    causes: result.conflicts.map((c) => ({
      reason: "FieldManagerConflict",
      message: c.message,
      field: c.field,
    })),
  });
}
