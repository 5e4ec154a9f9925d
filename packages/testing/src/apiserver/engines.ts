import type { PatchEngines } from "./core-types.js";
import type { SchemaCompiler } from "./crd.js";
import { ApiError } from "./errors.js";
import {
  builtinMergeSchema,
  JsonPatchError,
  jsonPatch,
  type MergeSchema,
  StrategicMergePatchError,
  serverSideApply,
  strategicMergePatch,
  trackUpdate,
} from "./merge/index.js";
import { compileStructuralSchema, type StructuralSchema } from "./schema/index.js";
import type { KubeObject, ValidationStrategy } from "./types.js";

/** Wraps a compiled structural schema as the core's validation strategy. */
function schemaStrategy(schema: StructuralSchema): ValidationStrategy {
  return {
    // Server-side apply reads list types and map keys from the schema's nodes.
    schema: schema.root,
    prune: (obj) => {
      schema.prune(obj);
    },
    applyDefaults: (obj) => schema.applyDefaults(obj),
    validate: (obj, old) => schema.validate(obj, old),
  };
}

function asMergeSchema(schema: unknown): MergeSchema | undefined {
  return schema as MergeSchema | undefined;
}

/**
 * The schema and merge engines an in-memory API server delegates to. Each one left out turns its
 * feature off as a server without it would: no `compileSchema` serves CRDs without pruning,
 * defaulting or validation; no `jsonPatch`, `strategicMergePatch` or `serverSideApply` answers that
 * patch type with 415 Unsupported Media Type; no `trackUpdate` keeps no `managedFields` for updates.
 */
export interface Engines extends PatchEngines {
  /** Compiles a CRD version's `openAPIV3Schema` into its pruning, defaulting and validation. */
  compileSchema?: SchemaCompiler;
}

/**
 * Builds the full set of engines (structural schemas with CEL, JSON patch, strategic merge patch,
 * server-side apply, field tracking) with caches of their own: compiled schemas are keyed by the
 * schema's JSON, as CRDs are re-read on every write.
 */
export function createEngines(): Engines {
  const compiled = new Map<string, ValidationStrategy>();
  const builtinSchemas = new Map<string, MergeSchema | undefined>();
  return {
    compileSchema: (openAPIV3Schema) => {
      const key = JSON.stringify(openAPIV3Schema);
      let strategy = compiled.get(key);
      if (!strategy) {
        strategy = schemaStrategy(compileStructuralSchema(openAPIV3Schema));
        if (compiled.size > 500) compiled.clear();
        compiled.set(key, strategy);
      }
      return strategy;
    },
    jsonPatch: (obj, ops) => {
      try {
        return jsonPatch(obj, ops);
      } catch (e) {
        if (e instanceof JsonPatchError) throw new ApiError(e.status, e.reason, e.message);
        throw e;
      }
    },
    strategicMergePatch: (kindKey, obj, patch) => {
      try {
        return strategicMergePatch(kindKey, obj, patch);
      } catch (e) {
        if (e instanceof StrategicMergePatchError)
          throw new ApiError(e.status, e.reason, e.message);
        throw e;
      }
    },
    serverSideApply: (args) => {
      const result = serverSideApply({ ...args, schema: asMergeSchema(args.schema) });
      if ("conflicts" in result) return result;
      return { object: result.object as KubeObject, changed: result.changed };
    },
    trackUpdate: (args) =>
      trackUpdate({
        ...args,
        operation: "Update",
        schema: asMergeSchema(args.schema),
      }) as KubeObject,
    builtinSchema: (kind) => {
      if (!builtinSchemas.has(kind)) builtinSchemas.set(kind, builtinMergeSchema(kind));
      return builtinSchemas.get(kind);
    },
  };
}

let shared: Engines | undefined;

/**
 * The full set of engines every server shares unless given its own ({@link createEngines}): a CRD
 * schema compiled by one server is not compiled again by the next one a test suite starts.
 */
export function defaultEngines(): Engines {
  shared ??= createEngines();
  return shared;
}
