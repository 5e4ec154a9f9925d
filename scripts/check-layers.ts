// ./dev layers: fails when an import runs against the layers of docs/architecture.md. The layers are
// data (LAYERS below): a folder may import only from itself and the folders it lists, and a package
// only from the packages it lists, so the picture in the docs cannot drift from the code unnoticed.
// Tests follow the package rule too (a relative import may reach into a package the test's package
// may import, nowhere else), and every listed package must be a dependency in package.json: those
// are the edges turbo orders and hashes tasks by, so a typecheck is never replayed from a stale cache.
// Inside a folder the order is free, but not circular: a cycle leaves a reader no file to start from.
// And a phase of the kit's pipeline stands alone, so the pipeline's list is the only place phases meet.
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import {
  importCycles,
  importGraph,
  importsOf,
  PHASE_RULE,
  phaseImports,
} from "../packages/integration/test/layers/import-graph.js";

const root = resolve(import.meta.dirname, "..");

/**
 * The SDK's folders, bottom to top, with what each may import. The client (runtime) sits below the
 * patch helper, as controller-runtime's client sits below CAPI's util/patch. The runtime is generic:
 * CAPI's watch filter, paused predicate and cluster-name index sit in contract, on the runtime's seams,
 * and the ClusterCache (workload clusters through `<cluster>-kubeconfig`) sits above contract, as
 * CAPI's sits above controller-runtime.
 */
export const SDK_LAYERS: Record<string, readonly string[]> = {
  api: [],
  runtime: ["api"],
  conditions: ["api", "runtime"],
  patch: ["api", "runtime", "conditions"],
  contract: ["api", "runtime", "conditions", "patch"],
  clustercache: ["api", "runtime", "conditions", "patch", "contract"],
  crd: ["api", "runtime", "conditions", "patch", "contract"],
  provider: ["api", "runtime", "conditions", "patch", "contract", "clustercache", "crd"],
  webhook: ["api", "runtime", "conditions", "patch", "contract", "clustercache", "crd"],
  manifests: [
    "api",
    "runtime",
    "conditions",
    "patch",
    "contract",
    "clustercache",
    "crd",
    "webhook",
  ],
};

/**
 * The workspace packages and the workspace packages their sources and tests may import. `integration`
 * (private, tests only) holds the tests that run the example provider.
 */
export const PACKAGE_LAYERS: Record<string, readonly string[]> = {
  codegen: [],
  sdk: ["codegen"],
  testing: ["sdk"],
  examples: ["sdk", "testing"],
  integration: ["sdk", "testing", "examples"],
  "create-capi-provider": [],
};

const PACKAGE_NAMES: Record<string, string> = {
  "@capi-ts/codegen": "codegen",
  "@capi-ts/sdk": "sdk",
  "@capi-ts/testing": "testing",
  "@capi-ts/examples": "examples",
  "@capi-ts/integration": "integration",
};

const TEST_FILE = /\.test\.ts$|\.test-support\.ts$/;

interface Violation {
  file: string;
  line: number;
  specifier: string;
  rule: string;
}

function sourceFiles(folder: string): string[] {
  const out: string[] = [];
  if (!existsSync(folder)) return out;
  for (const entry of readdirSync(folder)) {
    const path = join(folder, entry);
    // A folder with its own package.json is another project (the previous release's scaffold that
    // `./dev e2e` type-checks against the tarballs), not part of the package.
    if (statSync(path).isDirectory()) {
      if (!existsSync(join(path, "package.json"))) out.push(...sourceFiles(path));
    } else if (/\.(ts|mts)$/.test(entry) && !entry.endsWith(".d.ts")) out.push(path);
  }
  return out;
}

/** The SDK folder (layer) a file of packages/sdk/src belongs to, or undefined for the root index. */
function sdkLayerOf(file: string): string | undefined {
  const parts = relative(join(root, "packages", "sdk", "src"), file).split(sep);
  return parts.length > 1 ? parts[0] : undefined;
}

/** The workspace packages `pkg`'s package.json depends on (any kind of dependency). */
function workspaceDependencies(pkg: string): Set<string> {
  const manifest = JSON.parse(
    readFileSync(join(root, "packages", pkg, "package.json"), "utf8"),
  ) as {
    dependencies?: Record<string, string>;
    devDependencies?: Record<string, string>;
    peerDependencies?: Record<string, string>;
  };
  const names = Object.keys({
    ...manifest.dependencies,
    ...manifest.devDependencies,
    ...manifest.peerDependencies,
  });
  return new Set(names.flatMap((name) => PACKAGE_NAMES[name] ?? []));
}

/**
 * Tests of every package: a workspace package they import must be one their package may import, and
 * a relative import may leave the package only into such a package (a test helper of `testing`,
 * say), never into one turbo does not order before it.
 */
function checkTests(violations: Violation[]): void {
  for (const [pkg, allowed] of Object.entries(PACKAGE_LAYERS)) {
    const base = join(root, "packages", pkg);
    const files = [
      ...sourceFiles(join(base, "src")).filter((file) => TEST_FILE.test(file)),
      ...sourceFiles(join(base, "test")),
    ];
    const rule = `tests of packages/${pkg} may import ${[pkg, ...allowed].map((p) => `@capi-ts/${p}`).join(", ")} (by name or by a relative path into them)`;
    for (const file of files) {
      const rel = relative(root, file);
      for (const { specifier, line } of importsOf(readFileSync(file, "utf8"))) {
        let target: string | undefined;
        if (specifier.startsWith(".")) {
          const parts = relative(join(root, "packages"), resolve(dirname(file), specifier)).split(
            sep,
          );
          target = parts[0] === ".." ? "(outside packages/)" : parts[0];
        } else {
          target = PACKAGE_NAMES[specifier.split("/").slice(0, 2).join("/")];
        }
        if (target && target !== pkg && !allowed.includes(target)) {
          violations.push({ file: rel, line, specifier, rule });
        }
      }
    }
  }
}

export function checkLayers(): Violation[] {
  const violations: Violation[] = [];
  for (const [pkg, allowed] of Object.entries(PACKAGE_LAYERS)) {
    const dependencies = workspaceDependencies(pkg);
    for (const target of allowed) {
      if (!dependencies.has(target)) {
        violations.push({
          file: `packages/${pkg}/package.json`,
          line: 1,
          specifier: `@capi-ts/${target}`,
          rule: `PACKAGE_LAYERS lets packages/${pkg} import @capi-ts/${target}, so it must be a dependency (workspace:) for turbo to order and hash them`,
        });
      }
    }
    const src = join(root, "packages", pkg, "src");
    for (const file of sourceFiles(src)) {
      // Tests are checked by checkTests.
      if (TEST_FILE.test(file)) continue;
      const text = readFileSync(file, "utf8");
      const rel = relative(root, file);
      if (pkg === "sdk") {
        const inSdk = relative(src, file).split(sep).join("/");
        for (const { specifier, line } of phaseImports(inSdk, text)) {
          violations.push({ file: rel, line, specifier, rule: PHASE_RULE });
        }
      }
      for (const { specifier, line } of importsOf(text)) {
        const target = PACKAGE_NAMES[specifier.split("/").slice(0, 2).join("/")];
        if (target && target !== pkg && !allowed.includes(target)) {
          violations.push({
            file: rel,
            line,
            specifier,
            rule: `packages/${pkg} may import ${allowed.length ? allowed.map((p) => `@capi-ts/${p}`).join(", ") : "no other workspace package"}`,
          });
        }
        if (!specifier.startsWith(".")) continue;
        const resolved = resolve(dirname(file), specifier);
        if (!resolved.startsWith(src + sep)) {
          violations.push({
            file: rel,
            line,
            specifier,
            rule: `a relative import must stay inside packages/${pkg}/src; import the package instead`,
          });
          continue;
        }
        if (pkg !== "sdk") continue;
        const from = sdkLayerOf(file);
        const to = sdkLayerOf(resolved);
        if (from === undefined || to === undefined || from === to) continue;
        const may = SDK_LAYERS[from];
        if (!may) {
          violations.push({
            file: rel,
            line,
            specifier,
            rule: `sdk/src/${from} is not a known layer; add it to SDK_LAYERS in scripts/check-layers.ts and to docs/architecture.md`,
          });
        } else if (!may.includes(to)) {
          violations.push({
            file: rel,
            line,
            specifier,
            rule: `sdk/src/${from} may import ${may.length ? may.map((l) => `sdk/src/${l}`).join(", ") : "no other layer"}, not sdk/src/${to}`,
          });
        }
      }
    }
  }
  checkTests(violations);
  return violations;
}

/**
 * The packages each folder of whose src must be free of import cycles, its subfolders included (a
 * cycle through `provider/phases` is a cycle of `provider`). Tests count too, and so do type-only
 * imports: the graph is the one a reader follows, not the one left after compilation.
 */
const ACYCLIC_PACKAGES = ["sdk", "testing"] as const;

/** One line per cycle, e.g. `import cycle in packages/sdk/src/crd: define.ts -> machine.ts -> define.ts`. */
export function checkCycles(): string[] {
  const found: string[] = [];
  for (const pkg of ACYCLIC_PACKAGES) {
    const src = join(root, "packages", pkg, "src");
    for (const entry of readdirSync(src).sort()) {
      const folder = join(src, entry);
      if (!statSync(folder).isDirectory()) continue;
      const files = new Map(
        sourceFiles(folder).map((file) => [
          relative(folder, file).split(sep).join("/"),
          readFileSync(file, "utf8"),
        ]),
      );
      for (const cycle of importCycles(importGraph(files))) {
        found.push(`import cycle in ${relative(root, folder)}: ${cycle.join(" -> ")}`);
      }
    }
  }
  return found;
}

if (import.meta.main ?? process.argv[1] === import.meta.filename) {
  const violations = checkLayers();
  const cycles = checkCycles();
  if (violations.length > 0) {
    console.error(`layers: ${violations.length} import(s) against docs/architecture.md:`);
    for (const v of violations)
      console.error(`  ${v.file}:${v.line} imports "${v.specifier}": ${v.rule}`);
  }
  if (cycles.length > 0) {
    console.error(`layers: ${cycles.length} import cycle(s) inside a folder:`);
    for (const cycle of cycles) console.error(`  ${cycle}`);
  }
  if (violations.length > 0 || cycles.length > 0) process.exit(1);
  console.log("layers: every import follows docs/architecture.md");
}
