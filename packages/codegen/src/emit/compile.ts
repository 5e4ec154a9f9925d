import { ts } from "ts-morph";

/** A TypeScript module split into what a compiler would emit for it. */
export interface CompiledModule {
  /** The JavaScript, types erased, comments dropped (the declarations carry the docs). */
  readonly js: string;
  /** The declarations, with their doc comments. */
  readonly dts: string;
}

const JS_OPTIONS: ts.CompilerOptions = {
  target: ts.ScriptTarget.ES2022,
  module: ts.ModuleKind.ESNext,
  verbatimModuleSyntax: true,
  removeComments: true,
  newLine: ts.NewLineKind.LineFeed,
};

const DTS_OPTIONS: ts.CompilerOptions = {
  target: ts.ScriptTarget.ES2022,
  module: ts.ModuleKind.ESNext,
  verbatimModuleSyntax: true,
  isolatedDeclarations: true,
  newLine: ts.NewLineKind.LineFeed,
};

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
  const js = ts.transpileModule(source, {
    fileName,
    compilerOptions: JS_OPTIONS,
    reportDiagnostics: true,
  });
  const dts = ts.transpileDeclaration(source, {
    fileName,
    compilerOptions: DTS_OPTIONS,
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
