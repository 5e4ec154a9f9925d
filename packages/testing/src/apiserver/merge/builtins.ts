import { type MergeSchema, OBJECT_META_SCHEMA, schemaNode } from "./typed.js";

/** How a field of a built-in kind merges (its Go struct tags: `patchStrategy`, `patchMergeKey`, `listType`). */
export interface PatchField {
  /** Top-level struct fields the Go type always has (see `MergeSchema.zeroStructs`). */
  zeroStructs?: string[];
  /** `patchStrategy`: `merge` (lists merge instead of being replaced), `retainKeys`, or both. */
  strategy?: "merge" | "retainKeys" | "merge,retainKeys";
  /** `patchMergeKey` of a list of objects. */
  mergeKey?: string;
  /** Fields of an object (or of the items of a list of objects). */
  fields?: Record<string, PatchField>;
  /** Server-side apply list type. */
  listType?: "atomic" | "set" | "map";
  /** Server-side apply list-map keys. */
  listMapKeys?: string[];
  /** Items are atomic for server-side apply. */
  atomicItems?: boolean;
}

const CONDITIONS: PatchField = {
  strategy: "merge",
  mergeKey: "type",
  listType: "map",
  listMapKeys: ["type"],
};

const META: PatchField = {
  fields: {
    finalizers: { strategy: "merge", listType: "set" },
    ownerReferences: {
      strategy: "merge",
      mergeKey: "uid",
      listType: "map",
      listMapKeys: ["uid"],
      atomicItems: true,
    },
  },
};

/** The merge metadata of the built-in kinds the in-memory server serves. */
const KINDS: Record<string, PatchField> = {
  Namespace: {
    zeroStructs: ["spec", "status"],
    fields: { metadata: META, status: { fields: { conditions: CONDITIONS } } },
  },
  Secret: { fields: { metadata: META } },
  ConfigMap: { fields: { metadata: META } },
  Event: { zeroStructs: ["involvedObject", "source"], fields: { metadata: META } },
  Lease: { zeroStructs: ["spec"], fields: { metadata: META } },
  Node: {
    zeroStructs: ["spec", "status"],
    fields: {
      metadata: META,
      spec: {
        fields: {
          podCIDRs: { strategy: "merge", listType: "set" },
          taints: { listType: "atomic" },
        },
      },
      status: {
        fields: {
          conditions: CONDITIONS,
          addresses: {
            strategy: "merge",
            mergeKey: "type",
            listType: "map",
            listMapKeys: ["type"],
          },
        },
      },
    },
  },
  CustomResourceDefinition: {
    fields: {
      metadata: META,
      status: {
        fields: { conditions: { listType: "map", listMapKeys: ["type"] } },
      },
    },
  },
};

/** The patch metadata of a built-in kind (`Node`, `Namespace`, `Secret`, …), or undefined if unknown. */
export function builtinPatchMeta(kind: string): PatchField | undefined {
  return KINDS[kind.split(".")[0] ?? kind];
}

function toMergeSchema(field: PatchField | undefined, isObject: boolean): MergeSchema | undefined {
  if (field === undefined) return undefined;
  if (field.listType !== undefined) {
    const items = field.atomicItems
      ? schemaNode({ type: "object", mapType: "atomic" })
      : toMergeSchema(
          { ...field, listType: undefined, listMapKeys: undefined } as PatchField,
          true,
        );
    return schemaNode({
      type: "array",
      listType: field.listType,
      ...(field.listMapKeys !== undefined ? { listMapKeys: field.listMapKeys } : {}),
      ...(items !== undefined ? { items } : {}),
    });
  }
  if (field.fields === undefined) return isObject ? { structFields: true } : undefined;
  const properties: Record<string, MergeSchema> = {};
  for (const [name, sub] of Object.entries(field.fields)) {
    const s = name === "metadata" ? OBJECT_META_SCHEMA : toMergeSchema(sub, true);
    if (s !== undefined) properties[name] = s;
  }
  // Fields not listed here are struct fields of the Go type: granular maps, atomic lists.
  const out: MergeSchema = { ...schemaNode({ type: "object", properties }), structFields: true };
  return field.zeroStructs !== undefined ? { ...out, zeroStructs: field.zeroStructs } : out;
}

/**
 * The server-side-apply schema of a built-in kind: its keyed lists (Node `status.conditions` and
 * `status.addresses` by `type`, `metadata.ownerReferences` by `uid`, `metadata.finalizers` as a set, …);
 * other fields merge as maps, and other lists are atomic.
 *
 * @param kind - `Node`, `Namespace`, `Secret`, `ConfigMap`, `Event`, `Lease`, `CustomResourceDefinition`.
 */
export function builtinMergeSchema(kind: string): MergeSchema | undefined {
  const meta = builtinPatchMeta(kind);
  return meta === undefined ? undefined : toMergeSchema(meta, true);
}
