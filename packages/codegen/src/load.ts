import { readdir, readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { loadAll, YAMLException } from "js-yaml";
import { CodegenError, type InputLocation } from "./errors.js";
import { dns1035LabelProblem, dns1123SubdomainProblem, kindProblem } from "./kube-names.js";
import { checkDocumentBounds, checkInputSize, INPUT_LIMITS } from "./limits.js";

/**
 * One input of the generator: a path (a CRD file, a folder searched recursively for `.yaml`,
 * `.yml` and `.json` files, or `"-"` for standard input), YAML/JSON text, or an already parsed
 * object (a CRD or a `List` of CRDs).
 */
export type CrdInput =
  | string
  | { readonly source: string; readonly text: string }
  | { readonly source: string; readonly object: unknown };

/** A parsed document with where it came from. */
export interface LoadedDocument {
  /** File path as given, "<stdin>", or the source name of a text/object input. */
  readonly source: string;
  /** Zero-based index of the document in its source. */
  readonly document: number;
  /** JSON path prefix inside the document: "" or "items[3]" for an item of a List. */
  readonly pathPrefix: string;
  /** The document as parsed from YAML, before any check of its shape. */
  readonly value: unknown;
}

/** A schema node of an OpenAPI v3 structural schema, as found in a CRD. */
export type SchemaNode = { readonly [key: string]: unknown };

/** One version of a CRD, checked and normalised. */
export interface CrdVersion {
  /** Version name, e.g. "v1beta2". */
  readonly name: string;
  /** Whether the API server serves it. */
  readonly served: boolean;
  /** Whether it is the storage version. */
  readonly storage: boolean;
  /** Whether it is deprecated. */
  readonly deprecated: boolean;
  /** The deprecation warning, if one is set. */
  readonly deprecationWarning: string | undefined;
  /** The openAPIV3Schema. */
  readonly schema: SchemaNode;
  /** Whether the status subresource is enabled. */
  readonly statusSubresource: boolean;
  /** The scale subresource, if enabled. */
  readonly scale:
    | {
        readonly specReplicasPath: string;
        readonly statusReplicasPath: string;
        readonly labelSelectorPath: string | undefined;
      }
    | undefined;
  /** JSON path of the version inside its document, e.g. "spec.versions[1]". */
  readonly path: string;
}

/** A CustomResourceDefinition, checked and normalised. */
export interface CrdDefinition {
  /** Source file (or stream) of the CRD. */
  readonly source: string;
  /** Document index in the source. */
  readonly document: number;
  /** Path prefix inside the document ("" or "items[N]"). */
  readonly pathPrefix: string;
  /** metadata.name of the CRD. */
  readonly name: string;
  /** `spec.group` of the CRD, e.g. `cluster.x-k8s.io`. */
  readonly group: string;
  /** `spec.names.kind`, e.g. `MachinePool`; the name of the generated interface. */
  readonly kind: string;
  /** `spec.names.listKind`, e.g. `MachinePoolList` (defaults to the kind + `List`). */
  readonly listKind: string;
  /** Plural resource name. */
  readonly plural: string;
  /** Singular resource name. */
  readonly singular: string;
  /** `spec.names.shortNames` (kubectl aliases, e.g. `mp`); empty when the CRD has none. */
  readonly shortNames: readonly string[];
  /** `spec.names.categories` (kubectl groups like `cluster-api`); empty when the CRD has none. */
  readonly categories: readonly string[];
  /** Namespaced or Cluster. */
  readonly scope: "Namespaced" | "Cluster";
  /** Labels of the CRD object. */
  readonly labels: Readonly<Record<string, string>>;
  /** Every version, in CRD order. */
  readonly versions: readonly CrdVersion[];
}

const CRD_FILE = /\.(ya?ml|json)$/i;

/**
 * Reads and parses every input into documents, in input order (folders in sorted path order).
 *
 * @param inputs - paths, texts or objects
 * @param readStdin - how to read standard input for the path "-"
 * @returns the parsed documents
 */
export async function loadDocuments(
  inputs: readonly CrdInput[],
  readStdin: () => Promise<string> = readProcessStdin,
): Promise<LoadedDocument[]> {
  const documents: LoadedDocument[] = [];
  for (const input of inputs) {
    if (typeof input === "string") {
      if (input === "-") {
        const text = await readStdin();
        checkInputSize({ source: "<stdin>" }, Buffer.byteLength(text));
        documents.push(...parseText("<stdin>", text));
        continue;
      }
      for (const file of await expandPath(input)) {
        documents.push(...parseText(file, await readInputFile(file)));
      }
    } else if ("text" in input) {
      documents.push(...parseText(input.source, input.text));
    } else {
      documents.push({ source: input.source, document: 0, pathPrefix: "", value: input.object });
    }
  }
  return documents;
}

/** The message of a filesystem error without Node's "ENOENT: ..., open 'path'" decoration. */
function fsProblem(error: unknown): string {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  switch (code) {
    case "ENOENT":
      return "no such file or folder";
    case "EACCES":
    case "EPERM":
      return "permission denied";
    case "EISDIR":
      return "is a folder";
    case "ENOTDIR":
      return "a part of the path is not a folder";
    default:
      return error instanceof Error ? error.message : String(error);
  }
}

async function readInputFile(file: string): Promise<string> {
  try {
    const info = await stat(file);
    checkInputSize({ source: file }, info.size);
    return await readFile(file, "utf8");
  } catch (error) {
    if (error instanceof CodegenError) throw error;
    throw new CodegenError({ source: file }, `cannot read the file: ${fsProblem(error)}`);
  }
}

async function expandPath(path: string): Promise<string[]> {
  let info: Awaited<ReturnType<typeof stat>>;
  try {
    info = await stat(path);
  } catch (error) {
    throw new CodegenError({ source: path }, `${fsProblem(error)}; pass CRD YAML files or folders`);
  }
  if (!info.isDirectory()) return [path];
  const files: string[] = [];
  const walk = async (dir: string): Promise<void> => {
    let entries: import("node:fs").Dirent[];
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch (error) {
      throw new CodegenError({ source: dir }, `cannot read the folder: ${fsProblem(error)}`);
    }
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const entry of entries) {
      const full = join(dir, entry.name);
      if (entry.isDirectory()) await walk(full);
      else if (CRD_FILE.test(entry.name)) files.push(full);
    }
  };
  await walk(path);
  if (files.length === 0) {
    throw new CodegenError({ source: path }, "the folder contains no .yaml, .yml or .json file");
  }
  return files;
}

/**
 * Parses a (multi-document) YAML or JSON text.
 *
 * @param source - name used in errors
 * @param text - the text
 * @returns one entry per non-empty document
 */
export function parseText(source: string, text: string): LoadedDocument[] {
  const trimmed = text.trimStart();
  if (trimmed.startsWith("{")) {
    try {
      return [{ source, document: 0, pathPrefix: "", value: JSON.parse(text) }];
    } catch {
      // Not plain JSON (YAML flow mappings also start with "{"): fall through to the YAML parser.
    }
  }
  checkInputSize({ source }, text.length);
  let values: unknown[];
  try {
    // The parser recurses per level: its own bound keeps deep YAML from overflowing the stack.
    values = loadAll(text, { maxDepth: INPUT_LIMITS.maxDepth });
  } catch (error) {
    if (!(error instanceof YAMLException)) throw error;
    const line = error.mark?.line;
    const where =
      line === undefined ? "" : ` at line ${line + 1}, column ${(error.mark?.column ?? 0) + 1}`;
    const document = line === undefined ? undefined : documentIndexAt(text, line);
    if (/nesting exceeded maxDepth/.test(error.reason)) {
      throw new CodegenError(
        { source, document },
        `objects and arrays are nested more than ${INPUT_LIMITS.maxDepth} deep${where}; the generator reads at most ${INPUT_LIMITS.maxDepth} levels (the deepest CAPI CRD has 31)`,
      );
    }
    throw new CodegenError(
      { source, document },
      `broken YAML${where}: ${error.reason}; fix the document and run again`,
    );
  }
  const out: LoadedDocument[] = [];
  values.forEach((value, index) => {
    if (value !== null && value !== undefined)
      out.push({ source, document: index, pathPrefix: "", value });
  });
  return out;
}

/** Index of the YAML document containing a (zero-based) line: the number of "---" separators before it. */
function documentIndexAt(text: string, line: number): number {
  const lines = text.split("\n", line + 1);
  let index = 0;
  let content = false;
  for (let i = 0; i < lines.length && i <= line; i++) {
    const current = lines[i] ?? "";
    if (/^---(\s|$)/.test(current)) {
      if (content) index++;
      content = true;
    } else if (current.trim() !== "" && !current.startsWith("#")) content = true;
  }
  return index;
}

async function readProcessStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  let bytes = 0;
  for await (const chunk of process.stdin) {
    bytes += (chunk as Buffer).length;
    // Checked while reading: an endless stream must not be buffered whole first.
    checkInputSize({ source: "<stdin>" }, bytes);
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString("utf8");
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function join2(prefix: string, path: string): string {
  if (path === "") return prefix;
  return prefix === "" ? path : `${prefix}.${path}`;
}

/**
 * Checks documents and turns them into CRD definitions, expanding `List` wrappers.
 *
 * @param documents - parsed documents
 * @returns the CRDs, in document order
 */
export function readCrds(documents: readonly LoadedDocument[]): CrdDefinition[] {
  const crds: CrdDefinition[] = [];
  for (const doc of documents) {
    const value = doc.value;
    checkDocumentBounds(value, (path) => ({
      source: doc.source,
      document: doc.document,
      path: join2(doc.pathPrefix, path),
    }));
    if (
      isRecord(value) &&
      typeof value.kind === "string" &&
      value.kind.endsWith("List") &&
      Array.isArray(value.items)
    ) {
      value.items.forEach((item, index) => {
        crds.push(
          readCrd({ ...doc, pathPrefix: join2(doc.pathPrefix, `items[${index}]`), value: item }),
        );
      });
    } else {
      crds.push(readCrd(doc));
    }
  }
  return crds;
}

function readCrd(doc: LoadedDocument): CrdDefinition {
  const at = (path: string, version?: string) => ({
    source: doc.source,
    document: doc.document,
    version,
    path: join2(doc.pathPrefix, path),
  });
  const value = doc.value;
  if (!isRecord(value)) {
    throw new CodegenError(
      at(""),
      "the document is not an object; expected a CustomResourceDefinition",
    );
  }
  if (
    value.kind !== "CustomResourceDefinition" ||
    typeof value.apiVersion !== "string" ||
    !value.apiVersion.startsWith("apiextensions.k8s.io/")
  ) {
    throw new CodegenError(
      at(""),
      `not a CustomResourceDefinition (apiVersion ${JSON.stringify(value.apiVersion)}, kind ${JSON.stringify(value.kind)}); pass only CRD documents`,
    );
  }
  if (value.apiVersion !== "apiextensions.k8s.io/v1") {
    throw new CodegenError(
      at("apiVersion"),
      `${value.apiVersion} CRDs are not supported; convert the CRD to apiextensions.k8s.io/v1`,
    );
  }
  const metadata = isRecord(value.metadata) ? value.metadata : {};
  const spec = value.spec;
  if (!isRecord(spec)) throw new CodegenError(at("spec"), "the CRD has no spec");
  const group = spec.group;
  if (typeof group !== "string" || group === "")
    throw new CodegenError(at("spec.group"), "spec.group must be a non-empty string");
  const groupProblem =
    dns1123SubdomainProblem(group) ??
    (group.includes(".") ? undefined : "must be a domain with at least one dot");
  if (groupProblem !== undefined) invalid(at("spec.group"), group, groupProblem);
  const names = spec.names;
  if (!isRecord(names)) throw new CodegenError(at("spec.names"), "spec.names is missing");
  const kind = names.kind;
  const plural = names.plural;
  if (typeof kind !== "string" || kind === "") {
    throw new CodegenError(at("spec.names.kind"), "spec.names.kind must be a non-empty string");
  }
  checkName(at("spec.names.kind"), kind, kindProblem);
  if (typeof plural !== "string" || plural === "")
    throw new CodegenError(at("spec.names.plural"), "spec.names.plural is missing");
  checkName(at("spec.names.plural"), plural, dns1035LabelProblem);
  const listKind = names.listKind === undefined ? `${kind}List` : names.listKind;
  if (typeof listKind !== "string" || listKind === "") {
    throw new CodegenError(
      at("spec.names.listKind"),
      "spec.names.listKind must be a non-empty string when set",
    );
  }
  checkName(at("spec.names.listKind"), listKind, kindProblem);
  if (listKind === kind) {
    invalid(at("spec.names.listKind"), listKind, "kind and listKind may not be the same");
  }
  const singular = names.singular === undefined ? kind.toLowerCase() : names.singular;
  if (typeof singular !== "string" || singular === "") {
    throw new CodegenError(
      at("spec.names.singular"),
      "spec.names.singular must be a non-empty string when set",
    );
  }
  checkName(at("spec.names.singular"), singular, dns1035LabelProblem);
  const nameList = (key: "shortNames" | "categories"): string[] => {
    const list = names[key];
    if (list === undefined) return [];
    if (!Array.isArray(list)) {
      throw new CodegenError(at(`spec.names.${key}`), `spec.names.${key} must be a list`);
    }
    return list.map((item, index) => {
      if (typeof item !== "string") {
        throw new CodegenError(at(`spec.names.${key}[${index}]`), "must be a string");
      }
      checkName(at(`spec.names.${key}[${index}]`), item, dns1035LabelProblem);
      return item;
    });
  };
  const shortNames = nameList("shortNames");
  const categories = nameList("categories");
  if (metadata.name !== undefined && metadata.name !== `${plural}.${group}`) {
    invalid(at("metadata.name"), metadata.name, `must be spec.names.plural+"."+spec.group`);
  }
  const scope = spec.scope;
  if (scope !== "Namespaced" && scope !== "Cluster") {
    throw new CodegenError(
      at("spec.scope"),
      `spec.scope must be "Namespaced" or "Cluster", got ${JSON.stringify(scope)}`,
    );
  }
  const labels: Record<string, string> = {};
  if (isRecord(metadata.labels)) {
    for (const key of Object.keys(metadata.labels).sort()) {
      const label = metadata.labels[key];
      if (typeof label === "string") labels[key] = label;
    }
  }
  if (!Array.isArray(spec.versions) || spec.versions.length === 0) {
    throw new CodegenError(at("spec.versions"), "the CRD lists no versions");
  }
  const seen = new Set<string>();
  const versions = spec.versions.map((raw, index): CrdVersion => {
    const path = `spec.versions[${index}]`;
    if (!isRecord(raw) || typeof raw.name !== "string" || raw.name === "") {
      throw new CodegenError(at(`${path}.name`), "every version needs a name");
    }
    const name = raw.name;
    checkName(at(`${path}.name`), name, dns1035LabelProblem);
    if (seen.has(name)) {
      invalid(at(`${path}.name`), name, "spec.versions must contain unique version names");
    }
    seen.add(name);
    const schema = isRecord(raw.schema)
      ? raw.schema.openAPIV3Schema
      : isRecord(spec.validation)
        ? spec.validation.openAPIV3Schema
        : undefined;
    if (!isRecord(schema)) {
      throw new CodegenError(
        at(`${path}.schema.openAPIV3Schema`, name),
        "the version has no schema; add spec.versions[].schema.openAPIV3Schema (structural schemas are required by apiextensions.k8s.io/v1)",
      );
    }
    const subresources = isRecord(raw.subresources) ? raw.subresources : {};
    const scale = isRecord(subresources.scale) ? subresources.scale : undefined;
    return {
      name,
      served: raw.served === true,
      storage: raw.storage === true,
      deprecated: raw.deprecated === true,
      deprecationWarning:
        typeof raw.deprecationWarning === "string" ? raw.deprecationWarning : undefined,
      schema,
      statusSubresource: isRecord(subresources.status),
      scale:
        scale === undefined
          ? undefined
          : {
              specReplicasPath: String(scale.specReplicasPath ?? ""),
              statusReplicasPath: String(scale.statusReplicasPath ?? ""),
              labelSelectorPath:
                typeof scale.labelSelectorPath === "string" ? scale.labelSelectorPath : undefined,
            },
      path: join2(doc.pathPrefix, path),
    };
  });
  return {
    source: doc.source,
    document: doc.document,
    pathPrefix: doc.pathPrefix,
    name: `${plural}.${group}`,
    group,
    kind,
    listKind,
    plural,
    singular,
    shortNames,
    categories,
    scope,
    labels,
    versions,
  };
}

/** Throws the API server's kind of "Invalid value" error for a name. */
function invalid(location: InputLocation, value: unknown, problem: string): never {
  throw new CodegenError(
    location,
    `invalid value ${JSON.stringify(value)}: ${problem}; the API server refuses this CRD`,
  );
}

function checkName(
  location: InputLocation,
  value: string,
  rule: (value: string) => string | undefined,
): void {
  const problem = rule(value);
  if (problem !== undefined) invalid(location, value, problem);
}
