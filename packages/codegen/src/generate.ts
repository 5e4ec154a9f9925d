import { type ClusterOptions, loadClusterCrds } from "./cluster.js";
import { type CompiledModule, compileModule } from "./emit/compile.js";
import { escapeDocText, renderDoc } from "./emit/docs.js";
import { compileRuntimeDialect } from "./emit/fast-compile.js";
import { emitGroupVersion, type KindVersion } from "./emit/group-version.js";
import { groupAliases } from "./emit/names.js";
import { CodegenError } from "./errors.js";
import { type CrdDefinition, type CrdInput, loadDocuments, readCrds } from "./load.js";
import { GENERATED_HEADER, type GeneratedFile } from "./output.js";
import { commonRuntimeSource, compiledCommonRuntime } from "./runtime-files.js";

export {
  checkGenerated,
  GENERATED_HEADER,
  type GeneratedFile,
  type StaleReport,
  writeGenerated,
} from "./output.js";

/** Options of {@link generate}. */
export interface GenerateOptions {
  /** CRD files, folders, `"-"` (standard input), YAML/JSON texts or parsed objects. */
  readonly inputs?: readonly CrdInput[];
  /** Also read the CRDs of a live cluster. */
  readonly fromCluster?: ClusterOptions | boolean;
  /** Only emit these API groups (all when empty or absent). */
  readonly groups?: readonly string[];
  /** How to read standard input (for the input "-"); defaults to process.stdin. */
  readonly readStdin?: () => Promise<string>;
  /**
   * How the runtime modules (zod schemas, defaults, Model classes, resource metadata, and the
   * shared `common` module) are written:
   * - `"compiled"` (default): `<version>.runtime.js` with `<version>.runtime.d.ts`, compiled from the
   *   TypeScript the generator emits. Projects compiling the output then type-check only the
   *   interfaces and declarations, several times faster than the schema code.
   * - `"source"`: `<version>.runtime.ts` and `common.ts`, the same code as TypeScript, so your
   *   compiler checks every schema, class and resource against its interface (slower to compile).
   */
  readonly runtime?: RuntimeEmit;
}

/** How {@link generate} writes the runtime modules; see {@link GenerateOptions.runtime}. */
export type RuntimeEmit = "compiled" | "source";

/** What one group/version module contains. */
export interface GeneratedGroupVersion {
  /** The API group of every kind in the module, e.g. `cluster.x-k8s.io`. */
  readonly group: string;
  /** The served version, e.g. `v1beta2`; with the group it names the module path. */
  readonly version: string;
  /** Namespace the index exports it under, e.g. "clusterv1beta2". */
  readonly alias: string;
  /** Path of the module, e.g. "cluster.x-k8s.io/v1beta2.ts". */
  readonly path: string;
  /** Kinds defined in the module, sorted by name, e.g. `["Cluster", "Machine", "MachinePool"]`. */
  readonly kinds: readonly string[];
}

/** The result of {@link generate}: the files, in memory, and a summary. */
export interface GenerateResult {
  /** Every file of the output folder, sorted by path. */
  readonly files: readonly GeneratedFile[];
  /** The group/version modules. */
  readonly groupVersions: readonly GeneratedGroupVersion[];
}

/**
 * Generates TypeScript from CRDs, in memory: one module per API group and version
 * (`<group>/<version>.ts`) with the interfaces of every served version, re-exporting its runtime
 * module (`<version>.runtime`: zod schemas, defaults, Model classes and resource metadata); the
 * shared runtime `common`; and `index.ts` (namespaces such as `clusterv1beta2`). Runtime modules
 * are compiled JavaScript with declarations unless {@link GenerateOptions.runtime} is `"source"`.
 * Nothing is written; pass the result to {@link writeGenerated}.
 * The output is deterministic: the same CRDs give byte-identical files, whatever their order.
 *
 * @param options - inputs and filters
 * @returns the files
 * @throws {@link CodegenError} for bad input, naming file, document, version and JSON path
 * @example
 * ```ts
 * const result = await generate({ inputs: ["config/crd/bases"] });
 * await writeGenerated(result.files, "src/api");
 * ```
 */
export async function generate(options: GenerateOptions): Promise<GenerateResult> {
  const documents = await loadDocuments(options.inputs ?? [], options.readStdin);
  if (options.fromCluster !== undefined && options.fromCluster !== false) {
    documents.push(
      ...(await loadClusterCrds(options.fromCluster === true ? {} : options.fromCluster)),
    );
  }
  return generateFromCrds(readCrds(documents), options.groups, options.runtime);
}

/**
 * The synchronous core of {@link generate}, for CRDs that are already loaded.
 *
 * @param crds - checked CRDs
 * @param groups - only emit these groups (all when empty or absent)
 * @param runtime - how to write the runtime modules (see {@link GenerateOptions.runtime})
 * @returns the files
 */
export function generateFromCrds(
  crds: readonly CrdDefinition[],
  groups?: readonly string[],
  runtime: RuntimeEmit = "compiled",
): GenerateResult {
  if (runtime !== "compiled" && runtime !== "source") {
    throw new CodegenError(
      { source: "options" },
      `runtime must be "compiled" or "source", not ${JSON.stringify(runtime)}`,
    );
  }
  const wanted = groups !== undefined && groups.length > 0 ? new Set(groups) : undefined;
  const byName = new Map<string, CrdDefinition>();
  for (const crd of crds) {
    if (wanted !== undefined && !wanted.has(crd.group)) continue;
    const id = `${crd.group}/${crd.kind}`;
    const previous = byName.get(id);
    if (previous !== undefined) {
      if (JSON.stringify(stripLocation(previous)) === JSON.stringify(stripLocation(crd))) continue;
      throw new CodegenError(
        { source: crd.source, document: crd.document, path: crd.pathPrefix },
        `${id} is also defined, differently, in ${previous.source} (document ${previous.document}); pass each CRD once`,
      );
    }
    byName.set(id, crd);
  }
  if (byName.size === 0) {
    throw new CodegenError(
      { source: "input" },
      wanted === undefined
        ? "no CRDs found in the input"
        : `no CRDs of the groups ${[...wanted].join(", ")} found in the input`,
    );
  }
  const gvs = new Map<string, { group: string; version: string; kinds: KindVersion[] }>();
  for (const crd of byName.values()) {
    for (const version of crd.versions) {
      if (!version.served) continue;
      const key = `${crd.group}/${version.name}`;
      let gv = gvs.get(key);
      if (gv === undefined) {
        gv = { group: crd.group, version: version.name, kinds: [] };
        gvs.set(key, gv);
      }
      gv.kinds.push({ crd, version });
    }
  }
  const alias = groupAliases([...gvs.values()].map((gv) => gv.group));
  const sorted = [...gvs.values()].sort(
    (a, b) => compare(a.group, b.group) || compareVersions(a.version, b.version),
  );
  const files: GeneratedFile[] = [];
  const summaries: GeneratedGroupVersion[] = [];
  for (const gv of sorted) {
    gv.kinds.sort((a, b) => compare(a.crd.kind, b.crd.kind));
    const path = `${gv.group}/${gv.version}.ts`;
    const source = emitGroupVersion(gv.group, gv.version, gv.kinds);
    files.push({ path, content: `${GENERATED_HEADER}\n${source.types}` });
    files.push(...runtimeFiles(`${gv.group}/${gv.version}.runtime`, source.runtime, runtime));
    summaries.push({
      group: gv.group,
      version: gv.version,
      alias: alias(gv.group, gv.version),
      path,
      kinds: gv.kinds.map((k) => k.crd.kind),
    });
  }
  files.push(
    ...(runtime === "source"
      ? runtimeFiles("common", commonRuntimeSource(), runtime)
      : compiledFiles("common", compiledCommonRuntime())),
  );
  files.push({ path: "index.ts", content: renderIndex(summaries, [...byName.values()]) });
  files.sort((a, b) => compare(a.path, b.path));
  return { files, groupVersions: summaries };
}

/** The files of one runtime module: its TypeScript, or the JavaScript and declarations compiled from it. */
function runtimeFiles(base: string, source: string, runtime: RuntimeEmit): GeneratedFile[] {
  if (runtime === "source")
    return [{ path: `${base}.ts`, content: `${GENERATED_HEADER}\n${source}` }];
  // The generator's own dialect compiles without TypeScript; anything else goes to the compiler.
  return compiledFiles(base, compileRuntimeDialect(source) ?? compileModule(`${base}.ts`, source));
}

/** The JavaScript and declaration files of one compiled runtime module. */
function compiledFiles(base: string, compiled: CompiledModule): GeneratedFile[] {
  return [
    { path: `${base}.d.ts`, content: `${GENERATED_HEADER}\n${compiled.dts}` },
    { path: `${base}.js`, content: `${GENERATED_HEADER}\n${compiled.js}` },
  ];
}

/** What the generated index re-exports from common.ts (the schema builders stay internal). */
const PUBLIC_RUNTIME = [
  "applyDefaults",
  "type CelRule",
  "type DefaultsNode",
  "FreeFormJsonSchema",
  "type FreeFormJson",
  "FreeFormObjectSchema",
  "type FreeFormObject",
  "formatFieldPath",
  "type KubernetesSchemaMeta",
  "ListMetaSchema",
  "ObjectMetaSchema",
  "OwnerReferenceSchema",
  "type ResourceInfo",
  "type ScaleSubresource",
  "type SchemaIssue",
  "SchemaValidationError",
  "validateOrThrow",
];

function stripLocation(crd: CrdDefinition): unknown {
  const { source: _source, document: _document, pathPrefix: _pathPrefix, versions, ...rest } = crd;
  return { ...rest, versions: versions.map(({ path: _path, ...v }) => v) };
}

function renderIndex(
  gvs: readonly GeneratedGroupVersion[],
  crds: readonly CrdDefinition[],
): string {
  const groups = [...new Set(crds.map((crd) => crd.group))].sort(compare);
  let out = `${GENERATED_HEADER}\n`;
  out += renderDoc(
    [
      `Kubernetes API types generated from ${crds.length} CustomResourceDefinitions of ${escapeDocText(groups.join(", "))}.`,
      "Each API group and version is a namespace (for example `clusterv1beta2`) holding, per kind: the data interface (`MachinePool`), its zod schema (`MachinePoolSchema`), the list type (`MachinePoolList`), the Model class (`MachinePoolModel`, also constructible as `new MachinePool({...})`) and the resource metadata (`MachinePoolResource`).",
      "@packageDocumentation",
    ],
    "",
  );
  out += `export {\n${PUBLIC_RUNTIME.map((name) => `  ${name},\n`).join("")}} from "./common.js";\n`;
  for (const gv of gvs) {
    out += renderDoc(
      [`${escapeDocText(`${gv.group}/${gv.version}`)}: ${gv.kinds.join(", ")}.`],
      "",
    );
    out += `export * as ${gv.alias} from ${JSON.stringify(`./${gv.path.replace(/\.ts$/, ".js")}`)};\n`;
  }
  return out;
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Kubernetes version priority order: v1alpha1 < v1beta1 < v1beta2 < v1 < v2. */
function compareVersions(a: string, b: string): number {
  const parse = (v: string) => {
    const m = /^v(\d+)(?:(alpha|beta)(\d+))?$/.exec(v);
    if (m === null) return [Number.POSITIVE_INFINITY, 0, 0] as const;
    const stage = m[2] === "alpha" ? 0 : m[2] === "beta" ? 1 : 2;
    return [Number(m[1]), stage, Number(m[3] ?? 0)] as const;
  };
  const x = parse(a);
  const y = parse(b);
  return x[0] - y[0] || x[1] - y[1] || x[2] - y[2] || compare(a, b);
}
