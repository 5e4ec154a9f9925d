/**
 * `generateInfraMachinePoolTypes`: a defined kind's TypeScript types, generated from its own CRDs.
 *
 * @module
 */
import type * as z from "zod";
import type { InfraMachinePoolDefinition } from "./definition.js";

/**
 * Generates the TypeScript types (interfaces, zod schemas, Model classes, resource metadata) of a
 * defined kind and its template **from the CRDs themselves**, through `@capi-ts/codegen`'s `generate()` —
 * one source of truth. Returns the files in memory; write them with codegen's `writeGenerated`. Needs
 * `@capi-ts/codegen` installed (a build-time dependency).
 *
 * With the default `runtime: "compiled"`, the runtime modules are written as `.js` + `.d.ts`: a plain
 * `tsc` build copies those `.js` files to its output only with `"allowJs": true` in tsconfig (without it
 * the built code fails with `ERR_MODULE_NOT_FOUND …/api/common.js`). Pass `runtime: "source"` to get
 * TypeScript only, which any build compiles.
 *
 * @param definition - the defined kind (its CRD and template CRD are read)
 * @param options - `runtime: "source"` writes the runtime modules as TypeScript instead of compiled
 *   JavaScript with declarations (see codegen's `GenerateOptions.runtime`)
 * @returns the generated files, paths relative to the output folder
 * @example
 * ```ts
 * const files = await generateInfraMachinePoolTypes(FooMachinePool);
 * await writeGenerated(files, "src/api");
 * ```
 */
export async function generateInfraMachinePoolTypes(
  definition: Pick<InfraMachinePoolDefinition<z.ZodObject, z.ZodObject>, "crd" | "templateCrd">,
  options: { readonly runtime?: "compiled" | "source" } = {},
): Promise<ReadonlyArray<{ readonly path: string; readonly content: string }>> {
  let codegen: typeof import("@capi-ts/codegen");
  try {
    // A computed specifier keeps bundlers from inlining the code generator into the SDK build.
    const specifier = "@capi-ts/codegen";
    codegen = (await import(specifier)) as typeof import("@capi-ts/codegen");
  } catch (error) {
    throw new Error(
      `generating types needs @capi-ts/codegen; add it as a dev dependency (${error instanceof Error ? error.message : String(error)})`,
    );
  }
  const result = await codegen.generate({
    inputs: [
      {
        source: `${definition.crd.metadata.name} (defineInfraMachinePool)`,
        object: structuredClone(definition.crd),
      },
      {
        source: `${definition.templateCrd.metadata.name} (defineInfraMachinePool)`,
        object: structuredClone(definition.templateCrd),
      },
    ],
    runtime: options.runtime,
  });
  return result.files;
}
