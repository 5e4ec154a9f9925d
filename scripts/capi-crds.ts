// Takes the Cluster API CRDs from the Go modules of the one CAPI release capi-ts targets (named by
// tools/controlplane/capi/go.mod, the module real core is built from) into packages/testing/crds/capi,
// labelled as CAPI's kustomizations label them; and the reference CRDs of another provider (AWS's, at the
// pinned CAPA release below) that the codegen and schema tests and the codegen benchmark read, into
// reference/aws/crds; and clusterctl's inventory CRD of the same release into
// packages/testing/crds/clusterctl. With --check it writes nothing and exits 1 when a committed folder differs from what
// its release holds. With --release R --out DIR it renders only the CRDs of another CAPI release R into
// DIR (what `./dev controlplane --capi-release R` runs that release's manager with).
//
//   ./dev crds           refresh both folders (then ./dev generate for the SDK types)
//   ./dev crds --check   exit 1 and list the stale files
//   ./dev crds --release v1.13.6 --out tools/controlplane/bin/capi/v1.13.6/crds
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
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
/** The value of `--name value` or `--name=value`, if given. */
function argument(name: string): string | undefined {
  const args = process.argv.slice(2);
  const at = args.findIndex((arg) => arg === name || arg.startsWith(`${name}=`));
  if (at < 0) return undefined;
  const arg = args[at] as string;
  return arg.includes("=") ? arg.slice(name.length + 1) : args[at + 1];
}
const otherRelease = argument("--release");
const otherOut = argument("--out");

/** A folder of CRD bases in a module, with the kustomization that says which to take and their labels. */
interface Source {
  module: string;
  crdDir: string;
  /** Only the bases whose file name passes; the docker test provider also ships its older Docker* kinds. */
  keep?: (file: string) => boolean;
}

const SOURCES: readonly Source[] = [
  // Core's CRDs moved from config/crd to core/config/crd in v1.14; the older place is taken when the
  // newer one is missing.
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

/**
 * Downloads (or finds in the module cache) each module at its version and returns its folder; with
 * `lenient`, a module the proxy does not serve at that version is left out of the answer instead.
 */
function moduleDirs(
  modules: readonly string[],
  version: string,
  lenient = false,
): Map<string, string> {
  const scratch = mkdtempSync(join(tmpdir(), "capi-ts-crds-"));
  try {
    const dirs = new Map<string, string>();
    for (const module of modules) {
      let output: string;
      try {
        output = execFileSync("go", ["mod", "download", "-json", `${module}@${version}`], {
          cwd: scratch,
          encoding: "utf8",
          stdio: ["ignore", "pipe", "pipe"],
        });
      } catch (error) {
        if ((error as { code?: string }).code === "ENOENT")
          fail(
            "Go is not on PATH; the CRDs come from CAPI's Go module (install Go 1.26 or newer).",
          );
        // `go mod download -json` prints the module's JSON, with its Error, on stdout when it fails.
        output = String((error as { stdout?: string }).stdout ?? "");
      }
      let info: { Dir?: string; Error?: string } = {};
      try {
        info = JSON.parse(output) as typeof info;
      } catch {
        info = { Error: output.trim() || "no answer from go mod download" };
      }
      if (info.Error || !info.Dir) {
        if (lenient) continue;
        fail(`cannot download ${module}@${version}: ${info.Error}`);
      }
      dirs.set(module, info.Dir);
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

/**
 * The CRD files of the release, as CAPI's kustomizations would render their labels. `fallback` is the
 * release whose test module gives the Dev* infrastructure kinds when the proxy does not serve the test
 * module at `release` (those kinds are CAPD's, a test provider's, not core's).
 */
function render(release: string, fallback?: string): Map<string, string> {
  const modules = [...new Set(SOURCES.map((source) => source.module))];
  const dirs = moduleDirs(modules, release, fallback !== undefined);
  const versions = new Map(modules.map((module) => [module, release]));
  for (const module of modules) {
    if (dirs.has(module) || fallback === undefined) continue;
    if (module === "sigs.k8s.io/cluster-api") fail(`cannot download ${module}@${release}`);
    dirs.set(module, moduleDirs([module], fallback).get(module) as string);
    versions.set(module, fallback);
  }
  const files = new Map<string, string>();
  for (const source of SOURCES) {
    const moduleDir = dirs.get(source.module) as string;
    let base = join(moduleDir, source.crdDir);
    if (source.crdDir === "core/config/crd" && !existsSync(base))
      base = join(moduleDir, "config", "crd");
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
        modules: modules.map((module) => `${module}@${versions.get(module)}`),
        note: "Generated by ./dev crds from the Go modules of this release; do not edit.",
        files: names.map((name) => name.replace(/^capi\//, "")),
      },
      null,
      2,
    )}\n`,
  );
  return files;
}

/**
 * The reference CRDs of AWS's provider: a second, independent set of real-world schemas (deep nesting,
 * CEL rules, int-or-string, served: false versions) for the codegen and schema tests and the codegen
 * benchmark. Not shipped. Taken as the release's bases are, since they carry no labels the tests read.
 */
const AWS_MODULE = "sigs.k8s.io/cluster-api-provider-aws/v2";
const AWS_RELEASE = "v2.13.0";
const AWS_FILES = [
  "infrastructure.cluster.x-k8s.io_awsclusters.yaml",
  "infrastructure.cluster.x-k8s.io_awsmachinepools.yaml",
  "infrastructure.cluster.x-k8s.io_awsmachines.yaml",
  "infrastructure.cluster.x-k8s.io_awsmachinetemplates.yaml",
  "infrastructure.cluster.x-k8s.io_awsmanagedmachinepools.yaml",
  "infrastructure.cluster.x-k8s.io_rosamachinepools.yaml",
];

function renderAws(): Map<string, string> {
  const dir = moduleDirs([AWS_MODULE], AWS_RELEASE).get(AWS_MODULE) as string;
  const files = new Map<string, string>();
  for (const file of AWS_FILES)
    files.set(`crds/${file}`, readFileSync(join(dir, "config", "crd", "bases", file), "utf8"));
  files.set(
    "release.json",
    `${JSON.stringify(
      {
        release: AWS_RELEASE,
        modules: [`${AWS_MODULE}@${AWS_RELEASE}`],
        note: "Generated by ./dev crds from config/crd/bases of this module; do not edit.",
        files: AWS_FILES,
      },
      null,
      2,
    )}\n`,
  );
  return files;
}

/**
 * clusterctl's inventory CRD (`providers.clusterctl.cluster.x-k8s.io`, which `clusterctl init` installs
 * and `clusterctl move` reads on both clusters), as the release's clusterctl embeds it, into
 * packages/testing/crds/clusterctl: the test beds that run the real clusterctl install it with the
 * Provider objects `clusterctl init` would have written.
 */
function renderClusterctl(release: string): Map<string, string> {
  const module = "sigs.k8s.io/cluster-api";
  const dir = moduleDirs([module], release).get(module) as string;
  const file = "clusterctl.cluster.x-k8s.io_providers.yaml";
  return new Map([
    [
      `clusterctl/${file}`,
      readFileSync(
        join(dir, "cmd", "clusterctl", "config", "manifest", "clusterctl-api.yaml"),
        "utf8",
      ),
    ],
  ]);
}

/**
 * The files the script writes under `dir`: each of `wanted`, and nothing else in the `owned` folders
 * (relative to `dir`; "" is `dir` itself). Files beside them, such as the hand-written cert-manager
 * stand-in next to capi/, are not the script's.
 */
interface Output {
  label: string;
  dir: string;
  owned: readonly string[];
  wanted: Map<string, string>;
}

function readPresent(output: Output): Map<string, string> {
  const present = new Map<string, string>();
  const read = (name: string) => {
    try {
      present.set(name, readFileSync(join(output.dir, name), "utf8"));
    } catch {
      // Not there yet.
    }
  };
  for (const folder of output.owned) {
    let entries: string[] = [];
    try {
      entries = readdirSync(join(output.dir, folder), { withFileTypes: true })
        .filter((entry) => entry.isFile())
        .map((entry) => entry.name);
    } catch {
      // No folder yet: every file is new.
    }
    for (const entry of entries) read(folder === "" ? entry : `${folder}/${entry}`);
  }
  for (const name of output.wanted.keys()) if (!present.has(name)) read(name);
  return present;
}

const release = capiRelease();
if (otherRelease !== undefined || otherOut !== undefined) {
  if (!otherRelease || !/^v\d+\.\d+\.\d+$/.test(otherRelease) || !otherOut)
    fail(
      `--release takes a CAPI release such as v1.13.6 and needs --out DIR (got --release ${JSON.stringify(otherRelease)} --out ${JSON.stringify(otherOut)})`,
    );
  const out = resolve(otherOut);
  rmSync(out, { recursive: true, force: true });
  await mkdir(out, { recursive: true });
  const files = render(otherRelease, release);
  for (const [name, text] of files) writeFileSync(join(out, name.replace(/^capi\//, "")), text);
  console.log(`CAPI ${otherRelease}: ${files.size - 1} CRDs in ${out}`);
  process.exit(0);
}
const outputs: Output[] = [
  {
    label: `packages/testing/crds (CAPI ${release})`,
    dir: outDir,
    owned: ["capi"],
    wanted: render(release),
  },
  {
    label: `packages/testing/crds/clusterctl (clusterctl ${release})`,
    dir: outDir,
    owned: ["clusterctl"],
    wanted: renderClusterctl(release),
  },
  {
    label: `reference/aws (CAPA ${AWS_RELEASE})`,
    dir: join(root, "reference", "aws"),
    owned: ["crds"],
    wanted: renderAws(),
  },
];
let staleTotal = 0;
for (const output of outputs) {
  const present = readPresent(output);
  const { wanted } = output;
  const stale = [
    ...[...wanted]
      .filter(([name, text]) => present.get(name) !== text)
      .map(([name]) => (present.has(name) ? `changed  ${name}` : `missing  ${name}`)),
    ...[...present.keys()].filter((name) => !wanted.has(name)).map((name) => `extra    ${name}`),
  ];
  staleTotal += stale.length;
  if (check) {
    if (stale.length > 0) {
      console.error(`${output.label} is stale (${stale.length} files):`);
      for (const line of stale) console.error(`  ${line}`);
    } else console.log(`${output.label} is fresh (${wanted.size} files)`);
    continue;
  }
  for (const name of present.keys()) if (!wanted.has(name)) rmSync(join(output.dir, name));
  for (const [name, text] of wanted) {
    if (present.get(name) === text) continue;
    await mkdir(dirname(join(output.dir, name)), { recursive: true });
    writeFileSync(join(output.dir, name), text);
  }
  console.log(`${output.label}: ${wanted.size} files, ${stale.length} updated`);
}
if (check && staleTotal > 0) {
  console.error("run ./dev crds and ./dev generate, then commit");
  process.exit(1);
}
