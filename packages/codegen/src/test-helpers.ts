// Helpers shared by the codegen tests (not part of the package's API).
import { mkdir, mkdtemp, readdir, writeFile } from "node:fs/promises";
import { dirname, join, resolve, sep } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import ts from "typescript";
import { type GenerateOptions, type GenerateResult, generate, writeGenerated } from "./generate.js";

/** The codegen package folder. */
export const packageDir = resolve(dirname(fileURLToPath(import.meta.url)), "..");
/** The repository root. */
export const repoRoot = resolve(packageDir, "..", "..");
/**
 * The CAPI CRDs of the release the SDK targets (taken by `./dev crds`; the SDK's types are generated
 * from them).
 */
export const capiCrdsDir = resolve(repoRoot, "packages", "testing", "crds", "capi");

/**
 * The reference CRDs of AWS's provider at a pinned release (taken by `./dev crds`): real-world schemas
 * beside CAPI's for the tests.
 */
export const awsCrdsDir = resolve(repoRoot, "reference", "aws", "crds");

/**
 * A fresh folder inside the package (so generated code resolves zod, client-node and base).
 *
 * @param prefix - folder name prefix
 * @returns the folder
 */
export async function tempDir(prefix: string): Promise<string> {
  const base = join(packageDir, ".tmp");
  await mkdir(base, { recursive: true });
  return mkdtemp(join(base, `${prefix}-`));
}

/**
 * Generates into a fresh temporary folder.
 *
 * @param options - generate() options
 * @param prefix - folder name prefix
 * @returns the folder and the result
 */
export async function generateInto(
  options: GenerateOptions,
  prefix: string,
): Promise<{ dir: string; result: GenerateResult }> {
  const dir = await tempDir(prefix);
  const result = await generate(options);
  await writeGenerated(result.files, dir);
  // Generated modules are ESM; the folder needs no package.json because the package's is "module".
  return { dir, result };
}

async function tsFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile() && entry.name.endsWith(".ts")) out.push(join(entry.parentPath, entry.name));
  }
  return out.sort();
}

/**
 * Type-checks every .ts file of a folder with the repository's strict settings (NodeNext,
 * verbatimModuleSyntax, noUncheckedIndexedAccess) and no @types/node. The folder's own declaration
 * files (the compiled runtime's `.d.ts`) are checked too; those of dependencies are not.
 *
 * @param dir - the folder
 * @returns the diagnostics, formatted; empty when it type-checks
 */
export async function typecheck(dir: string): Promise<string[]> {
  const options: ts.CompilerOptions = {
    target: ts.ScriptTarget.ES2023,
    lib: ["lib.es2023.d.ts"],
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    strict: true,
    noUncheckedIndexedAccess: true,
    noImplicitOverride: true,
    noUnusedLocals: true,
    noUnusedParameters: true,
    verbatimModuleSyntax: true,
    isolatedModules: true,
    skipLibCheck: false,
    noEmit: true,
    types: [],
  };
  const program = ts.createProgram(await tsFiles(dir), options);
  const prefix = dir.split(sep).join("/");
  const ours = program.getSourceFiles().filter((file) => file.fileName.startsWith(`${prefix}/`));
  const diagnostics = [
    ...program.getOptionsDiagnostics(),
    ...program.getGlobalDiagnostics(),
    ...ours.flatMap((file) => [
      ...program.getSyntacticDiagnostics(file),
      ...program.getSemanticDiagnostics(file),
    ]),
  ];
  return diagnostics.map((d) => {
    const text = ts.flattenDiagnosticMessageText(d.messageText, "\n");
    if (d.file === undefined || d.start === undefined) return text;
    const { line, character } = d.file.getLineAndCharacterOfPosition(d.start);
    return `${d.file.fileName}:${line + 1}:${character + 1} ${text}`;
  });
}

/**
 * Imports a generated module.
 *
 * @param file - absolute path of the .ts file
 * @returns the module
 */
export async function importModule<T>(file: string): Promise<T> {
  return (await import(pathToFileURL(file).href)) as T;
}

/**
 * Writes a file, creating its folder.
 *
 * @param file - the path
 * @param content - the content
 */
export async function writeText(file: string, content: string): Promise<void> {
  await mkdir(dirname(file), { recursive: true });
  await writeFile(file, content);
}
