/**
 * Template stamps: what the kit stores with each template version (or a group's model) so it can tell
 * later what it was built from. Stable hashes of the driver's template inputs and the bootstrap data,
 * the comparisons that decide refresh vs. rollout, the tag codec a driver stores a stamp with, and
 * which template versions may be pruned.
 *
 * @module
 */
import { createHash } from "node:crypto";
import type { PoolInstance, TemplateStamp, TemplateVersion } from "./driver-types.js";

// ── stamp helpers ───────────────────────────────────────────────────────────────────────────────

/** Tag keys {@link templateStampToTags} uses, after the prefix. */
export const TEMPLATE_STAMP_TAG_KEYS = {
  specHash: "spec-hash",
  bootstrapHash: "bootstrap-hash",
  bootstrapRef: "bootstrap-ref",
} as const satisfies Record<keyof TemplateStamp, string>;

/**
 * The tags to store a {@link TemplateStamp} under. The default prefix `capi-ts.io/` suits AWS and
 * Azure tags; for GCE labels (no `/` or `.` in keys) pass e.g. `capi-ts-`, but note that the
 * bootstrap reference (`namespace/name`) is no valid label value: on GCE keep the stamp in the
 * instance template's description instead (docs/guides/provider/clouds.md has a table per cloud).
 *
 * @example
 * ```ts
 * templateStampToTags(stamp)
 * // { "capi-ts.io/spec-hash": "…", "capi-ts.io/bootstrap-hash": "…", "capi-ts.io/bootstrap-ref": "…" }
 * ```
 */
export function templateStampToTags(
  stamp: TemplateStamp,
  prefix = "capi-ts.io/",
): Record<string, string> {
  return {
    [`${prefix}${TEMPLATE_STAMP_TAG_KEYS.specHash}`]: stamp.specHash,
    [`${prefix}${TEMPLATE_STAMP_TAG_KEYS.bootstrapHash}`]: stamp.bootstrapHash,
    [`${prefix}${TEMPLATE_STAMP_TAG_KEYS.bootstrapRef}`]: stamp.bootstrapRef,
  };
}

/**
 * Reads a {@link TemplateStamp} back from tags written by {@link templateStampToTags}; `undefined`
 * when any part is missing (a version the kit did not create).
 *
 * @example
 * ```ts
 * const stamp = templateStampFromTags(version.tags);
 * ```
 */
export function templateStampFromTags(
  tags: Readonly<Record<string, string>> | undefined,
  prefix = "capi-ts.io/",
): TemplateStamp | undefined {
  const specHash = tags?.[`${prefix}${TEMPLATE_STAMP_TAG_KEYS.specHash}`];
  const bootstrapHash = tags?.[`${prefix}${TEMPLATE_STAMP_TAG_KEYS.bootstrapHash}`];
  const bootstrapRef = tags?.[`${prefix}${TEMPLATE_STAMP_TAG_KEYS.bootstrapRef}`];
  if (specHash === undefined || bootstrapHash === undefined || bootstrapRef === undefined) {
    return undefined;
  }
  return { specHash, bootstrapHash, bootstrapRef };
}

// ── stamps and hashes ───────────────────────────────────────────────────────────────────────────

/** JSON with object keys sorted and `undefined` members dropped: equal values, equal text. */
export function stableStringify(value: unknown): string {
  if (value === undefined) return "null";
  if (value === null || typeof value !== "object") {
    if (typeof value === "number" && !Number.isFinite(value)) {
      throw new TypeError(`cannot hash a non-finite number (${value}) in template inputs`);
    }
    if (typeof value === "bigint" || typeof value === "function" || typeof value === "symbol") {
      throw new TypeError(`template inputs must be JSON; got a ${typeof value}`);
    }
    return JSON.stringify(value);
  }
  if (Array.isArray(value)) return `[${value.map(stableStringify).join(",")}]`;
  if (value instanceof Date) return JSON.stringify(value.toISOString());
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${stableStringify(v)}`).join(",")}}`;
}

/** 40 lowercase hex characters of SHA-256: short enough for any cloud's tag or label value. */
export function shortHash(data: string | Uint8Array): string {
  return createHash("sha256").update(data).digest("hex").slice(0, 40);
}

/**
 * The stamp the pool's template should carry: `specHash` from the driver's template inputs,
 * `bootstrapHash` from the bootstrap payload, `bootstrapRef` from the secret's namespace/name.
 *
 * @example
 * ```ts
 * targetStamp({ image: "ami-1" }, Buffer.from(userData), "default/pool-a-bootstrap-1");
 * ```
 */
export function targetStamp(
  templateInputs: unknown,
  bootstrapData: string | Uint8Array,
  bootstrapRef: string,
): TemplateStamp {
  return {
    specHash: shortHash(stableStringify(templateInputs)),
    bootstrapHash: shortHash(bootstrapData),
    bootstrapRef: shortHash(bootstrapRef),
  };
}

/** Whether instances launched from `stamp` run what `target` describes (token-only changes don't count). */
export function stampIsCurrent(stamp: TemplateStamp | undefined, target: TemplateStamp): boolean {
  return (
    stamp !== undefined &&
    stamp.specHash === target.specHash &&
    stamp.bootstrapRef === target.bootstrapRef
  );
}

/** Whether a template version can be used as is (same spec, same bootstrap data). */
export function stampIsExact(stamp: TemplateStamp | undefined, target: TemplateStamp): boolean {
  return stampIsCurrent(stamp, target) && stamp?.bootstrapHash === target.bootstrapHash;
}

/**
 * Template versions that may be deleted: not the newest (last in the driver's order), not the
 * group's, not the launch version of any instance that is not terminated, and not one the driver
 * marks `deletable: false`.
 *
 * @example
 * ```ts
 * prunableVersions(versions, group.templateVersion, group.instances); // ["1", "2"]
 * ```
 */
export function prunableVersions(
  versions: readonly TemplateVersion[],
  groupVersion: string | undefined,
  instances: readonly PoolInstance[],
): string[] {
  const inUse = new Set<string>();
  if (groupVersion !== undefined) inUse.add(groupVersion);
  for (const instance of instances) {
    if (instance.state !== "terminated" && instance.templateVersion !== undefined) {
      inUse.add(instance.templateVersion);
    }
  }
  const newest = versions[versions.length - 1]?.version;
  return versions
    .filter((v) => v.deletable !== false)
    .map((v) => v.version)
    .filter((v) => v !== newest && !inUse.has(v));
}
