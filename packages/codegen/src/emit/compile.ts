import { createRequire } from "node:module";
import type { ts } from "ts-morph";

type TypeScript = typeof ts;

let compiler: TypeScript | undefined;

/**
 * The TypeScript compiler, loaded on first use: it is the largest thing the generator loads (about
 * 9 MB of JavaScript), and `--runtime-source` or a process that only reads CRDs never needs it.
 */
function typescript(): TypeScript {
  compiler ??= (createRequire(import.meta.url)("ts-morph") as typeof import("ts-morph")).ts;
  return compiler;
}

/** A TypeScript module split into what a compiler would emit for it. */
export interface CompiledModule {
  /** The JavaScript, types erased, comments dropped (the declarations carry the docs). */
  readonly js: string;
  /** The declarations, with their doc comments. */
  readonly dts: string;
}

function jsOptions(ts: TypeScript): ts.CompilerOptions {
  return {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.ESNext,
    verbatimModuleSyntax: true,
    removeComments: true,
    newLine: ts.NewLineKind.LineFeed,
  };
}

function dtsOptions(ts: TypeScript): ts.CompilerOptions {
  return {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.ESNext,
    verbatimModuleSyntax: true,
    isolatedDeclarations: true,
    newLine: ts.NewLineKind.LineFeed,
  };
}

/**
 * Compiles one generated module to JavaScript plus declarations, file by file, without a program.
 * The generated runtime modules annotate every export, so declarations need no type inference
 * (`isolatedDeclarations`); a diagnostic here is a bug in the generator, never in the input.
 *
 * @param fileName - the module's name, for diagnostics
 * @param source - the TypeScript source, without the generated-code header
 * @returns the JavaScript and the declarations
 */
export function compileModule(fileName: string, source: string): CompiledModule {
  const ts = typescript();
  const js = ts.transpileModule(source, {
    fileName,
    compilerOptions: jsOptions(ts),
    reportDiagnostics: true,
  });
  const dts = ts.transpileDeclaration(source, {
    fileName,
    compilerOptions: dtsOptions(ts),
    reportDiagnostics: true,
  });
  const diagnostics = [...(js.diagnostics ?? []), ...(dts.diagnostics ?? [])];
  if (diagnostics.length > 0) {
    const first = diagnostics[0];
    const where =
      first?.file !== undefined && first.start !== undefined
        ? `:${first.file.getLineAndCharacterOfPosition(first.start).line + 1}`
        : "";
    throw new Error(
      `capi-ts-codegen produced a module it cannot compile (${fileName}${where}: ${ts.flattenDiagnosticMessageText(first?.messageText ?? "", " ")}); this is a bug in the generator, please report it`,
    );
  }
  return { js: js.outputText, dts: dts.outputText };
}
