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
if (existsSync(report)) {
  const result = JSON.parse(readFileSync(report, "utf8"));
  passed = result.numPassedTests;
  failed = result.numFailedTests;
  skipped = result.numPendingTests + result.numTodoTests;
  // A suite that fails to load has no failed tests but is still a failure.
  const brokenFiles = result.testResults.filter(
    (file) => file.status === "failed" && file.assertionResults.length === 0,
  );
  failed += brokenFiles.length;
} else {
  failed = 1;
}
console.log(`${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ""}`);
process.exit(run.status === 0 && failed === 0 ? 0 : 1);
