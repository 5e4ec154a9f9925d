// Where the shared runtime of generated code comes from. `runtime/common.ts` is ordinary source of
// this package (linted, type-checked, unit-tested) that the generator copies into every output
// folder. The build (tsup.config.ts) compiles it once and writes source, JavaScript and
// declarations to `dist/common-runtime.json`, which the bundle reads: a published generator never
// compiles the common runtime. Run from source, there is no such file and it is compiled on first
// use. This module sits at the top of `src/` on purpose: relative URLs resolve to `src/` from
// source and to `dist/` from the bundle.
import { existsSync, readFileSync } from "node:fs";
import { type CompiledModule, compileModule } from "./emit/compile.js";

/** The common runtime's TypeScript source with what the compiler makes of it. */
export interface CommonRuntime extends CompiledModule {
  /** The TypeScript source, as `--runtime-source` emits it. */
  readonly source: string;
}

/** The file the build writes next to the bundle, holding a {@link CommonRuntime} as JSON. */
export const PRECOMPILED_RUNTIME_FILE = "common-runtime.json";

const precompiled = new URL(`./${PRECOMPILED_RUNTIME_FILE}`, import.meta.url);
const sourceFile = new URL("./runtime/common.ts", import.meta.url);

let sourceText: string | undefined;
let runtime: CommonRuntime | undefined;

function read(url: URL): string {
  try {
    return readFileSync(url, "utf8");
  } catch (error) {
    throw new Error(
      `capi-ts-codegen cannot read its runtime file ${url.pathname} (${(error as Error).message}); the package is incomplete, reinstall @capi-ts/codegen`,
    );
  }
}

/**
 * The TypeScript source of the common runtime, without compiling it.
 *
 * @returns the text of `runtime/common.ts`
 */
export function commonRuntimeSource(): string {
  if (runtime !== undefined) return runtime.source;
  if (existsSync(precompiled)) return compiledCommonRuntime().source;
  sourceText ??= read(sourceFile);
  return sourceText;
}

/**
 * The common runtime with its JavaScript and declarations: the build's precompiled file when
 * present (a built package), otherwise compiled here, once per process (running from source).
 *
 * @returns source, JavaScript and declarations of `runtime/common.ts`
 */
export function compiledCommonRuntime(): CommonRuntime {
  if (runtime !== undefined) return runtime;
  if (existsSync(precompiled)) {
    runtime = JSON.parse(read(precompiled)) as CommonRuntime;
  } else {
    const source = commonRuntimeSource();
    runtime = { source, ...compileModule("common.ts", source) };
  }
  return runtime;
}

/**
 * Compiles `runtime/common.ts` for the build, which writes the result to
 * {@link PRECOMPILED_RUNTIME_FILE} next to the bundle.
 *
 * @param source - the text of `runtime/common.ts`
 * @returns the JSON text of the file
 */
export function precompileCommonRuntime(source: string): string {
  const compiled: CommonRuntime = { source, ...compileModule("common.ts", source) };
  return `${JSON.stringify(compiled)}\n`;
}
