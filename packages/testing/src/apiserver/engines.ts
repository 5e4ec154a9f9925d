import { compileStructuralSchema, type StructuralSchema } from "./schema/index.js";
import { useEngines } from "./server.js";
import type { ValidationStrategy } from "./types.js";

/** Wraps a compiled structural schema as the core's validation strategy. */
function schemaStrategy(schema: StructuralSchema): ValidationStrategy {
  return {
    schema,
    prune: (obj) => {
      schema.prune(obj);
    },
    applyDefaults: (obj) => schema.applyDefaults(obj),
    validate: (obj, old) => schema.validate(obj, old),
  };
}

// CRDs are re-read on every write (status included); compile each distinct schema once.
const compiled = new Map<string, ValidationStrategy>();

useEngines({
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
});
