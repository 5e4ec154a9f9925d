// ./dev api [--check] — the public surface of every published entry point, as API Extractor reports
// it from the built declarations (`dist/**.d.ts`), committed under packages/<package>/api/.
//
//   ./dev api           build (turbo: a no-op when nothing changed), then write the reports
//   ./dev api --check   build, then fail naming each entry point whose report differs from the
//                       committed one (CI runs it after the build)
//
// A report lists every exported name with its full declaration, so a reviewer sees a changed public
// type in the diff and the changelog can say what broke. The generated CAPI types
// (`@capi-ts/sdk/api`, `/api/<group>/<version>`) have no report: they follow the pinned CAPI release's
// CRDs, and `./dev generate --check` keeps them fresh (their change is a CAPI release bump, which the
// changelog names). API Extractor could not review them anyway: it renders `/api`'s
// `export * as clusterv1beta2` namespaces as lists of names only (140 KiB, with a malformed
// `export export type` line), and the 15 version entries would triple the reports for text no one
// edits by hand.
//
// Deterministic: the report depends only on the declarations (API Extractor sorts its members, and
// its findings, which name the bundler's hashed chunk files, stay out of it); one TypeScript program
// per package serves all its entry points. A type an entry names but another subpath exports (the
// kit's options name `@capi-ts/sdk/api`'s Cluster) shows in that subpath's report, not in this one's.
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import { join, resolve } from "node:path";
import {
  CompilerState,
  Extractor,
  ExtractorConfig,
  ExtractorLogLevel,
  type IConfigFile,
} from "@microsoft/api-extractor";

const root = resolve(import.meta.dirname, "..");
const args = process.argv.slice(2);
const check = args.includes("--check");
if (args.some((arg) => arg !== "--check")) {
  console.error("usage: ./dev api [--check]");
  process.exit(2);
}
const published = ["sdk", "testing", "codegen", "create-capi-provider"];
const started = Date.now();

interface Entry {
  /** The import specifier, e.g. `@capi-ts/sdk/provider/testing`. */
  readonly specifier: string;
  /** The report's base name: the subpath with `/` as `-`, `index` for the package root. */
  readonly report: string;
  /** The entry's built declarations, absolute. */
  readonly dts: string;
}

function entriesOf(folder: string): Entry[] {
  const manifest = JSON.parse(readFileSync(join(folder, "package.json"), "utf8")) as {
    name: string;
    exports: Record<string, string | { types?: string }>;
  };
  return Object.entries(manifest.exports).flatMap(([key, target]) => {
    if (typeof target === "string" || !target.types) return [];
    if (key.includes("*") || key === "./api") return []; // generated, see above
    const subpath = key.slice(2);
    return [
      {
        specifier: subpath === "" ? manifest.name : `${manifest.name}/${subpath}`,
        report: subpath === "" ? "index" : subpath.replaceAll("/", "-"),
        dts: join(folder, target.types),
      },
    ];
  });
}

const build = spawnSync("turbo", ["run", "build", "--output-logs=errors-only"], {
  cwd: root,
  stdio: ["ignore", "inherit", "inherit"],
});
if (build.status !== 0) {
  console.error("api: the build failed (see above)");
  process.exit(1);
}

const changed: string[] = [];
const failed: string[] = [];
let entries = 0;
const temp = join(root, ".tmp", "api");
rmSync(temp, { recursive: true, force: true });
for (const name of published) {
  const folder = join(root, "packages", name);
  const reports = join(folder, "api");
  mkdirSync(reports, { recursive: true });
  let compilerState: CompilerState | undefined;
  const all = entriesOf(folder);
  for (const entry of all) {
    entries++;
    if (!existsSync(entry.dts)) {
      failed.push(`${entry.specifier}: ${entry.dts} was not built`);
      continue;
    }
    const configObject: IConfigFile = {
      projectFolder: folder,
      mainEntryPointFilePath: entry.dts,
      compiler: {
        overrideTsconfig: {
          compilerOptions: {
            target: "ES2023",
            module: "NodeNext",
            moduleResolution: "NodeNext",
            strict: true,
            skipLibCheck: true,
            types: ["node"],
          },
          files: [entry.dts],
        },
      },
      apiReport: {
        enabled: true,
        reportFileName: entry.report,
        reportFolder: reports,
        reportTempFolder: join(temp, name),
      },
      docModel: { enabled: false },
      dtsRollup: { enabled: false },
      tsdocMetadata: { enabled: false },
      newlineKind: "lf",
      messages: {
        // The sources' doc comments are TypeDoc's (`./dev docs` validates them), not strict TSDoc.
        tsdocMessageReporting: { default: { logLevel: ExtractorLogLevel.None } },
        compilerMessageReporting: { default: { logLevel: ExtractorLogLevel.Error } },
        extractorMessageReporting: {
          // Its findings name the bundler's chunk files (`options-<hash>.d.ts:73:5`), which change with
          // any source: in the report they would make it differ for no change of the surface. What
          // they find, `./dev docs` finds too (an undocumented member, a name no entry exports).
          default: { logLevel: ExtractorLogLevel.None, addToApiReportFile: false },
          // No release tags (@public, @beta): every exported name is public.
          "ae-missing-release-tag": { logLevel: ExtractorLogLevel.None, addToApiReportFile: false },
        },
      },
    };
    const config = ExtractorConfig.prepare({
      configObject,
      configObjectFullPath: join(folder, "api-extractor.json"),
      packageJsonFullPath: join(folder, "package.json"),
    });
    compilerState ??= CompilerState.create(config, {
      additionalEntryPoints: all.map((other) => other.dts).filter(existsSync),
    });
    const errors: string[] = [];
    const result = Extractor.invoke(config, {
      localBuild: !check,
      compilerState,
      messageCallback: (message) => {
        if (message.logLevel === ExtractorLogLevel.Error) errors.push(message.text);
        message.handled = true;
      },
    });
    if (errors.length > 0 || (!result.succeeded && !result.apiReportChanged)) {
      failed.push(`${entry.specifier}: ${errors.join("; ") || "API Extractor failed"}`);
    } else if (result.apiReportChanged) {
      changed.push(`${entry.specifier} (${name}/api/${entry.report}.api.md)`);
    }
  }
}
rmSync(temp, { recursive: true, force: true });

const took = `${((Date.now() - started) / 1000).toFixed(1)} s`;
if (failed.length > 0) {
  console.error(`api: API Extractor could not read: ${failed.join("; ")}`);
  process.exit(1);
}
if (check && changed.length > 0) {
  console.error(
    `api: the public surface changed in ${changed.length} entry point(s):\n${changed.map((line) => `  ${line}`).join("\n")}\nrun ./dev api and commit the reports (and add a changeset: ./dev changeset)`,
  );
  process.exit(1);
}
console.log(
  check
    ? `api: ${entries} entry points match their reports (${took})`
    : `api: ${entries} reports written, ${changed.length} changed${changed.length > 0 ? `: ${changed.join(", ")}` : ""} (${took})`,
);
