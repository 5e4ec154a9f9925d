// ./dev conformance [--core emulator|real] [--capi-release vX.Y.Z] [--rate-limit-ms N] [--test-beds N]
// [vitest args]:
// runs the example provider's conformance suite with the chosen CAPI core as the judge and ends with
// "conformance: N/N scenarios passed" (exit 1 otherwise). Real core needs `./dev controlplane --capi`
// (and `--capi-release vX.Y.Z` for a release other than the target, which --capi-release picks here).
// --rate-limit-ms sets the emulator's per-object reconcile interval (core's 1000 by default; 0
// measures the provider alone). --test-beds spreads the scenarios over N environments side by side
// (default 4 on the emulator, 1 with real core; 1 runs them in a row).
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import { join, resolve } from "node:path";
import {
  capiCoreMissingReason,
  capiRelease,
  findCapiCoreBinary,
  findControlPlaneBinaries,
} from "../packages/testing/src/index.js";

const root = resolve(import.meta.dirname, "..");
const args = process.argv.slice(2);
let core = "emulator";
const coreAt = args.findIndex((arg) => arg === "--core" || arg.startsWith("--core="));
if (coreAt >= 0) {
  const arg = args[coreAt] as string;
  core = arg.includes("=") ? arg.slice("--core=".length) : (args[coreAt + 1] ?? "");
  args.splice(coreAt, arg.includes("=") ? 1 : 2);
}
let release = capiRelease();
const releaseAt = args.findIndex(
  (arg) => arg === "--capi-release" || arg.startsWith("--capi-release="),
);
if (releaseAt >= 0) {
  const arg = args[releaseAt] as string;
  release = arg.includes("=") ? arg.slice("--capi-release=".length) : (args[releaseAt + 1] ?? "");
  args.splice(releaseAt, arg.includes("=") ? 1 : 2);
  if (!/^v\d+\.\d+\.\d+$/.test(release)) {
    console.error(
      `conformance: --capi-release takes a CAPI release such as v1.13.6, not ${JSON.stringify(release)}`,
    );
    process.exit(2);
  }
}
let rateLimitMs: string | undefined;
const rateAt = args.findIndex(
  (arg) => arg === "--rate-limit-ms" || arg.startsWith("--rate-limit-ms="),
);
if (rateAt >= 0) {
  const arg = args[rateAt] as string;
  rateLimitMs = arg.includes("=") ? arg.slice("--rate-limit-ms=".length) : (args[rateAt + 1] ?? "");
  args.splice(rateAt, arg.includes("=") ? 1 : 2);
  if (!/^\d+$/.test(rateLimitMs)) {
    console.error(
      `conformance: --rate-limit-ms takes a whole number of ms (1000 is core's, 0 measures the provider alone), not ${JSON.stringify(rateLimitMs)}`,
    );
    process.exit(2);
  }
}
let testBeds: string | undefined;
const bedsAt = args.findIndex((arg) => arg === "--test-beds" || arg.startsWith("--test-beds="));
if (bedsAt >= 0) {
  const arg = args[bedsAt] as string;
  testBeds = arg.includes("=") ? arg.slice("--test-beds=".length) : (args[bedsAt + 1] ?? "");
  args.splice(bedsAt, arg.includes("=") ? 1 : 2);
  if (!/^[1-9]\d*$/.test(testBeds)) {
    console.error(
      `conformance: --test-beds takes a whole number ≥ 1 (1 runs every scenario in a row on one bed), not ${JSON.stringify(testBeds)}`,
    );
    process.exit(2);
  }
}
if (core !== "emulator" && core !== "real") {
  console.error(`conformance: --core takes "emulator" or "real", not ${JSON.stringify(core)}`);
  process.exit(2);
}
if (core === "real" && rateLimitMs !== undefined) {
  console.error(
    "conformance: --rate-limit-ms sets the emulator's pace; real core keeps its own (one reconcile per object per second). Drop it, or run with --core emulator.",
  );
  process.exit(2);
}
if (core !== "real" && release !== capiRelease()) {
  console.error(
    `conformance: --capi-release picks the release real core runs; the emulator follows ${capiRelease()} only. Add --core real.`,
  );
  process.exit(2);
}
if (core === "real") {
  const binaries = findControlPlaneBinaries();
  if (!binaries || !findCapiCoreBinary(binaries, undefined, release)) {
    const flag = release === capiRelease() ? "--capi" : `--capi-release ${release}`;
    console.error(
      `conformance: real CAPI core ${release} is not here (${binaries ? capiCoreMissingReason(binaries, release) : "no kube-apiserver/etcd"}); run \`./dev controlplane ${flag}\` once (needs Go; the first build takes several minutes), then run this again.`,
    );
    process.exit(1);
  }
}

const file =
  core === "real"
    ? "packages/integration/test/conformance/example-real.test.ts"
    : "packages/integration/test/conformance/example.test.ts";
const reportDir = join(root, ".tmp");
mkdirSync(reportDir, { recursive: true });
const report = join(reportDir, `conformance-${core}${core === "real" ? `-${release}` : ""}.json`);
rmSync(report, { force: true });
console.log(
  `conformance: FakeCloudMachinePool judged by ${core === "real" ? `real CAPI core ${release} (CAPI's manager)` : `the CAPI core emulator (${capiRelease()} semantics)`}`,
);
const started = Date.now();
const run = spawnSync(
  "vitest",
  ["run", file, "--reporter=default", "--reporter=json", `--outputFile.json=${report}`, ...args],
  {
    stdio: "inherit",
    cwd: root,
    env: {
      ...process.env,
      CAPI_TS_CONFORMANCE_CORE: core,
      ...(core === "real" ? { CAPI_TS_CAPI_RELEASE: release } : {}),
      ...(rateLimitMs === undefined ? {} : { CAPI_TS_CONFORMANCE_RATE_LIMIT_MS: rateLimitMs }),
      ...(testBeds === undefined ? {} : { CAPI_TS_CONFORMANCE_TEST_BEDS: testBeds }),
    },
  },
);

interface Assertion {
  title: string;
  status: string;
}
const results: Assertion[] = existsSync(report)
  ? (
      JSON.parse(readFileSync(report, "utf8")) as {
        testResults: { assertionResults: Assertion[] }[];
      }
    ).testResults.flatMap((file) => file.assertionResults)
  : [];
const ran = results.filter((r) => r.status === "passed" || r.status === "failed");
const passed = ran.filter((r) => r.status === "passed").length;
const skipped = results.filter((r) => r.status !== "passed" && r.status !== "failed");
if (skipped.length > 0) {
  console.log(`skipped: ${skipped.map((r) => r.title.split(":")[0]).join(", ")}`);
}
const seconds = Math.round((Date.now() - started) / 1000);
const ok = run.status === 0 && ran.length > 0 && passed === ran.length;
const pace =
  (rateLimitMs === undefined ? "" : `, rate limit ${rateLimitMs} ms`) +
  (testBeds === undefined ? "" : `, ${testBeds} test bed${testBeds === "1" ? "" : "s"}`);
console.log(
  `conformance: ${passed}/${ran.length} scenarios passed (${core} core${core === "real" ? ` ${release}` : ""}${pace}, ${seconds} s)`,
);
process.exit(ok ? 0 : 1);
