// ./dev layers: fails when an import runs against the layers of docs/architecture.md. The layers are
// data (LAYERS below): a folder may import only from itself and the folders it lists, and a package
// only from the packages it lists, so the picture in the docs cannot drift from the code unnoticed.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";

const root = resolve(import.meta.dirname, "..");

/**
 * The SDK's folders, bottom to top, with what each may import. The client (runtime) sits below the
 * patch helper, as controller-runtime's client sits below CAPI's util/patch. The runtime is generic:
 * CAPI's watch filter, paused predicate and cluster-name index sit in contract, on the runtime's seams.
 */
export const SDK_LAYERS: Record<string, readonly string[]> = {
  api: [],
  runtime: ["api"],
  conditions: ["api", "runtime"],
  patch: ["api", "runtime", "conditions"],
  contract: ["api", "runtime", "conditions", "patch"],
  crd: ["api", "runtime", "conditions", "patch", "contract"],
  provider: ["api", "runtime", "conditions", "patch", "contract", "crd"],
  webhook: ["api", "runtime", "conditions", "patch", "contract", "crd"],
  manifests: ["api", "runtime", "conditions", "patch", "contract", "crd", "webhook"],
};

/** The workspace packages and the workspace packages their sources may import. */
export const PACKAGE_LAYERS: Record<string, readonly string[]> = {
  codegen: [],
  sdk: ["codegen"],
  testing: ["sdk"],
  examples: ["sdk", "testing"],
  "create-capi-provider": [],
};

const PACKAGE_NAMES: Record<string, string> = {
  "@capi-ts/codegen": "codegen",
  "@capi-ts/sdk": "sdk",
  "@capi-ts/testing": "testing",
  "@capi-ts/examples": "examples",
};

interface Violation {
  file: string;
  line: number;
  specifier: string;
  rule: string;
}

function sourceFiles(folder: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(folder)) {
    const path = join(folder, entry);
    if (statSync(path).isDirectory()) out.push(...sourceFiles(path));
    else if (/\.(ts|mts)$/.test(entry) && !entry.endsWith(".d.ts")) out.push(path);
  }
  return out;
}

/** Every module specifier a file imports or re-exports, statically or with `import()`, with its line. */
function importsOf(text: string): { specifier: string; line: number }[] {
  const found: { specifier: string; line: number }[] = [];
  const pattern =
    /(?:^|[\s;])(?:import|export)\s[^'"`;]*?from\s*["']([^"']+)["']|(?:^|[\s;])import\s*["']([^"']+)["']|\bimport\(\s*["']([^"']+)["']\s*\)/gm;
  for (const match of text.matchAll(pattern)) {
    const specifier = match[1] ?? match[2] ?? match[3];
    if (!specifier) continue;
    const line = text.slice(0, match.index).split("\n").length;
    found.push({ specifier, line });
  }
  return found;
}

/** The SDK folder (layer) a file of packages/sdk/src belongs to, or undefined for the root index. */
function sdkLayerOf(file: string): string | undefined {
  const parts = relative(join(root, "packages", "sdk", "src"), file).split(sep);
  return parts.length > 1 ? parts[0] : undefined;
}

export function checkLayers(): Violation[] {
  const violations: Violation[] = [];
  for (const [pkg, allowed] of Object.entries(PACKAGE_LAYERS)) {
    const src = join(root, "packages", pkg, "src");
    for (const file of sourceFiles(src)) {
      // Tests may reach across (an integration test of the SDK runs the example provider).
      if (/\.test\.ts$|\.test-support\.ts$/.test(file)) continue;
      const text = readFileSync(file, "utf8");
      for (const { specifier, line } of importsOf(text)) {
        const rel = relative(root, file);
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
  return violations;
}

if (import.meta.main ?? process.argv[1] === import.meta.filename) {
  const violations = checkLayers();
  if (violations.length > 0) {
    console.error(`layers: ${violations.length} import(s) against docs/architecture.md:`);
    for (const v of violations)
      console.error(`  ${v.file}:${v.line} imports "${v.specifier}": ${v.rule}`);
    process.exit(1);
  }
  console.log("layers: every import follows docs/architecture.md");
}
