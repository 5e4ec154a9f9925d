// Takes the Cluster API CRDs from the Go modules of the one CAPI release capi-ts targets (named by
// tools/controlplane/capi/go.mod, the module real core is built from) into packages/testing/crds/capi,
// labelled as CAPI's kustomizations label them. With --check it writes nothing and exits 1 when the
// committed folder differs from what the release holds.
//
//   ./dev crds           refresh packages/testing/crds/capi (then ./dev generate for the SDK types)
//   ./dev crds --check   exit 1 and list the stale files
import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import {
  CORE_SCHEMA,
  type Document,
  eventsToAst,
  jsToAst,
  load,
  type MappingNode,
  type Node,
  parseEvents,
  present as presentYaml,
} from "js-yaml";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const goModDir = join(root, "tools", "controlplane", "capi");
// The CRDs go to crds/capi (a folder of CRDs only, installable as is); the release they come from to
// crds/release.json, which @capi-ts/testing reads to say which release it targets.
const outDir = join(root, "packages", "testing", "crds");
const check = process.argv.includes("--check");

/** A folder of CRD bases in a module, with the kustomization that says which to take and their labels. */
interface Source {
  module: string;
  crdDir: string;
  /** Only the bases whose file name passes; the docker test provider also ships its older Docker* kinds. */
  keep?: (file: string) => boolean;
}

const SOURCES: readonly Source[] = [
  { module: "sigs.k8s.io/cluster-api", crdDir: "core/config/crd" },
  { module: "sigs.k8s.io/cluster-api", crdDir: "bootstrap/kubeadm/config/crd" },
  { module: "sigs.k8s.io/cluster-api", crdDir: "controlplane/kubeadm/config/crd" },
  {
    module: "sigs.k8s.io/cluster-api/test",
    crdDir: "infrastructure/docker/config/crd",
    keep: (file) => file.startsWith("infrastructure.cluster.x-k8s.io_dev"),
  },
];

function fail(message: string): never {
  console.error(`crds: ${message}`);
  process.exit(2);
}

function go(args: string[], cwd: string): string {
  try {
    return execFileSync("go", args, { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  } catch (error) {
    const detail = (error as { stderr?: string; code?: string }).stderr?.trim();
    if ((error as { code?: string }).code === "ENOENT")
      fail("Go is not on PATH; the CRDs come from CAPI's Go module (install Go 1.26 or newer).");
    fail(`go ${args.join(" ")} failed:\n${detail}`);
  }
}

/** The CAPI release: the version of sigs.k8s.io/cluster-api that tools/controlplane/capi requires. */
function capiRelease(): string {
  const version = go(
    ["list", "-m", "-f", "{{.Version}}", "sigs.k8s.io/cluster-api"],
    goModDir,
  ).trim();
  if (!/^v\d+\.\d+\.\d+$/.test(version))
    fail(
      `tools/controlplane/capi/go.mod requires sigs.k8s.io/cluster-api ${version}, not a release`,
    );
  return version;
}

/** Downloads (or finds in the module cache) each module at the release and returns its folder. */
function moduleDirs(release: string): Map<string, string> {
  const modules = [...new Set(SOURCES.map((source) => source.module))];
  const scratch = mkdtempSync(join(tmpdir(), "capi-ts-crds-"));
  try {
    const output = go(
      ["mod", "download", "-json", ...modules.map((m) => `${m}@${release}`)],
      scratch,
    );
    const dirs = new Map<string, string>();
    // `go mod download -json` prints one JSON object per module, back to back.
    for (const chunk of output.split(/\n(?=\{)/)) {
      const info = JSON.parse(chunk) as { Path: string; Dir?: string; Error?: string };
      if (info.Error || !info.Dir) fail(`cannot download ${info.Path}@${release}: ${info.Error}`);
      dirs.set(info.Path, info.Dir);
    }
    return dirs;
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

interface Kustomization {
  resources?: string[];
  labels?: { pairs?: Record<string, string> }[];
}

function astOf(value: unknown): Node {
  const node = jsToAst(value, CORE_SCHEMA)[0]?.contents;
  if (!node) throw new Error(`cannot write ${JSON.stringify(value)} as YAML`);
  return node;
}

/** Sets `path` in the first document's mapping, creating the mappings on the way (as kustomize does). */
function setIn(documents: Document[], path: string[], value: unknown): void {
  const contents = documents[0]?.contents;
  if (contents?.kind !== "mapping") throw new Error("a CRD base must be one YAML mapping");
  let mapping: MappingNode = contents;
  for (const [index, key] of path.entries()) {
    const last = index === path.length - 1;
    let item = mapping.items.find((i) => i.key.kind === "scalar" && i.key.value === key);
    if (!item) {
      item = { key: astOf(key), value: astOf(last ? value : {}) };
      mapping.items.push(item);
    } else if (last) item.value = astOf(value);
    if (last) return;
    if (item.value.kind !== "mapping")
      throw new Error(`${path.slice(0, index + 1).join(".")} is not a mapping`);
    mapping = item.value;
  }
}

/** The CRD files of the release, as CAPI's kustomizations would render their labels. */
function render(release: string): Map<string, string> {
  const dirs = moduleDirs(release);
  const files = new Map<string, string>();
  for (const source of SOURCES) {
    const base = join(dirs.get(source.module) as string, source.crdDir);
    const kustomization = load(
      readFileSync(join(base, "kustomization.yaml"), "utf8"),
    ) as Kustomization;
    const labels = Object.assign({}, ...(kustomization.labels ?? []).map((l) => l.pairs ?? {}));
    for (const resource of kustomization.resources ?? []) {
      const file = resource.replace(/^bases\//, "");
      if (source.keep && !source.keep(file)) continue;
      const text = readFileSync(join(base, resource), "utf8");
      // The syntax tree, not the value: the bases' own scalar styles and key order are kept.
      const documents = eventsToAst(parseEvents(text, {}), { source: text, schema: CORE_SCHEMA });
      for (const [key, value] of Object.entries(labels).sort(([a], [b]) => a.localeCompare(b)))
        setIn(documents, ["metadata", "labels", key], value);
      files.set(`capi/${file}`, presentYaml(documents, { schema: CORE_SCHEMA, lineWidth: -1 }));
    }
  }
  const names = [...files.keys()].sort();
  files.set(
    "release.json",
    `${JSON.stringify(
      {
        release,
        modules: [...new Set(SOURCES.map((source) => source.module))].map(
          (module) => `${module}@${release}`,
        ),
        note: "Generated by ./dev crds from the Go modules of this release; do not edit.",
        files: names.map((name) => name.replace(/^capi\//, "")),
      },
      null,
      2,
    )}\n`,
  );
  return files;
}

const release = capiRelease();
const wanted = render(release);
const present = new Map<string, string>();
try {
  for (const name of readdirSync(join(outDir, "capi")))
    present.set(`capi/${name}`, readFileSync(join(outDir, "capi", name), "utf8"));
  present.set("release.json", readFileSync(join(outDir, "release.json"), "utf8"));
} catch {
  // No folder yet: every file is new.
}
const stale = [
  ...[...wanted]
    .filter(([name, text]) => present.get(name) !== text)
    .map(([name]) => (present.has(name) ? `changed  ${name}` : `missing  ${name}`)),
  ...[...present.keys()].filter((name) => !wanted.has(name)).map((name) => `extra    ${name}`),
];
if (check) {
  if (stale.length > 0) {
    console.error(
      `packages/testing/crds/capi is stale against CAPI ${release} (${stale.length} files); run ./dev crds and ./dev generate, then commit:`,
    );
    for (const line of stale) console.error(`  ${line}`);
    process.exit(1);
  }
  console.log(`packages/testing/crds/capi matches CAPI ${release} (${wanted.size} files)`);
} else {
  await mkdir(join(outDir, "capi"), { recursive: true });
  for (const name of present.keys()) if (!wanted.has(name)) rmSync(join(outDir, name));
  for (const [name, text] of wanted)
    if (present.get(name) !== text) writeFileSync(join(outDir, name), text);
  console.log(
    `packages/testing/crds/capi: CAPI ${release}, ${wanted.size} files, ${stale.length} updated`,
  );
}
