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

useEngines({
  compileSchema: (openAPIV3Schema) => schemaStrategy(compileStructuralSchema(openAPIV3Schema)),
});
