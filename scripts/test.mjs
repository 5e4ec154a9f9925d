// Runs every vitest project once, then prints the closing line CI reads ("N passed, N failed"),
// taken from vitest's JSON report rather than its human summary.
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";

const reportDir = join(import.meta.dirname, "..", ".tmp");
mkdirSync(reportDir, { recursive: true });
const report = join(reportDir, "vitest-report.json");
rmSync(report, { force: true });

const run = spawnSync(
  "vitest",
  [
    "run",
    "--reporter=default",
    "--reporter=json",
    `--outputFile.json=${report}`,
    ...process.argv.slice(2),
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
