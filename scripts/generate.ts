// Regenerates the CAPI API types committed in packages/sdk/src/api from the CRDs of the CAPI release
// the project targets (packages/testing/crds/capi, refreshed by ./dev crds); with --check it writes
// nothing and exits 1 listing stale files.
import { existsSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { checkGenerated, generate, writeGenerated } from "../packages/codegen/src/index.js";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const input = join(root, "packages", "testing", "crds", "capi");
const outDir = join(root, "packages", "sdk", "src", "api");
const check = process.argv.includes("--check");

if (!existsSync(input)) {
  console.error(
    `generate: CRD folder not found: ${input} (run ./dev crds to take them from the CAPI release)`,
  );
  process.exit(2);
}
const started = performance.now();
const { files, groupVersions } = await generate({ inputs: [input] });
const rel = (path: string) => `packages/sdk/src/api/${path}`;
if (check) {
  const report = await checkGenerated(files, outDir);
  const stale = [
    ...report.changed.map((p) => `changed  ${rel(p)}`),
    ...report.missing.map((p) => `missing  ${rel(p)}`),
    ...report.extra.map((p) => `extra    ${rel(p)}`),
  ];
  if (stale.length > 0) {
    console.error(
      `generated code is stale (${stale.length} files); run ./dev generate and commit:`,
    );
    for (const line of stale) console.error(`  ${line}`);
    process.exit(1);
  }
  console.log(`generated code is up to date (${files.length} files)`);
} else {
  const report = await writeGenerated(files, outDir);
  const touched = report.changed.length + report.missing.length + report.extra.length;
  console.log(
    `generated ${groupVersions.length} group/versions into packages/sdk/src/api in ${Math.round(performance.now() - started)} ms: ` +
      `${touched === 0 ? "no changes" : `${report.changed.length} changed, ${report.missing.length} new, ${report.extra.length} deleted`}`,
  );
}
