// Runs every vitest project once, then prints the closing line CI reads ("N passed, N failed"),
// taken from vitest's JSON report rather than its human summary.
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import { availableParallelism } from "node:os";
import { join } from "node:path";

const reportDir = join(import.meta.dirname, "..", ".tmp");
mkdirSync(reportDir, { recursive: true });
const report = join(reportDir, "vitest-report.json");
rmSync(report, { force: true });

// Most of the suite waits, not computes: a conformance file spends minutes on CAPI core's one-reconcile-
// per-second pace and on real control planes, with the CPU idle. vitest's default of one worker per core
// less one runs every file in a row on 2 cores (about 32 min); two files per core keep the CPU busy.
// Each project resolves its own maxWorkers from its own config, so the root config's would not reach
// them; the command line does. CAPI_TS_TEST_WORKERS overrides it (1 runs the files in a row).
function testWorkers() {
  const configured = process.env.CAPI_TS_TEST_WORKERS;
  if (configured === undefined || configured === "") return Math.max(2, availableParallelism() * 2);
  const workers = Number(configured);
  if (!Number.isInteger(workers) || workers < 1) {
    console.error(
      `CAPI_TS_TEST_WORKERS=${JSON.stringify(configured)} is not a whole number ≥ 1; unset it for two per core`,
    );
    process.exit(2);
  }
  return workers;
}

const args = process.argv.slice(2);
const workerArgs = args.some((arg) => arg.startsWith("--maxWorkers"))
  ? []
  : [`--maxWorkers=${testWorkers()}`];
const run = spawnSync(
  "vitest",
  [
    "run",
    "--reporter=default",
    "--reporter=json",
    `--outputFile.json=${report}`,
    ...workerArgs,
    ...args,
  ],
  { stdio: "inherit" },
);

let passed = 0;
let failed = 0;
let skipped = 0;
if (!existsSync(report)) {
  console.error("vitest wrote no JSON report: the run did not complete");
} else {
  const result = JSON.parse(readFileSync(report, "utf8"));
  passed = result.numPassedTests;
  failed = result.numFailedTests;
  skipped = result.numPendingTests + result.numTodoTests;
  // A file that fails outside its tests (import error, failing beforeAll) reports no failed test,
  // its tests show as skipped, yet the run failed: count each such file as one failure.
  const brokenFiles = result.testResults.filter(
    (file) =>
      file.status === "failed" &&
      !file.assertionResults.some((assertion) => assertion.status === "failed"),
  );
  for (const file of brokenFiles) console.error(`failed outside its tests: ${file.name}`);
  failed += brokenFiles.length;
}
if (run.status !== 0 && failed === 0) {
  // vitest failed without a failing test (e.g. a crash or an unhandled error): never report green.
  failed = 1;
}
console.log(`${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ""}`);
process.exit(run.status === 0 && failed === 0 ? 0 : 1);
