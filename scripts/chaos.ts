// ./dev chaos [--short] [--no-real]: the chaos suite (packages/examples/src/chaos). Two example-provider
// replicas as separate OS processes on one shared fake cloud (loopback RPC); faults: SIGSTOP past the
// lease, SIGTERM mid-cloud-call, SIGKILL, API server 5xx/429/latency/dropped connections and restarts
// (in-memory, and on a real kube-apiserver + etcd when the binaries are there). Loopback only; every
// step is bounded (60 s). Prints the table and exits 1 if a row does not hold.

import {
  type ChaosFault,
  formatChaosTable,
  runChaos,
} from "../packages/examples/src/chaos/harness.js";
import { findControlPlaneBinaries } from "../packages/testing/src/index.js";

const args = new Set(process.argv.slice(2));
for (const arg of args) {
  if (!["--short", "--no-real"].includes(arg)) {
    process.stderr.write(`unknown argument ${arg}; usage: ./dev chaos [--short] [--no-real]\n`);
    process.exit(2);
  }
}
const short: ChaosFault[] = ["sigstop-past-lease", "sigkill-leader", "apiserver-5xx"];
const real = !args.has("--no-real") && findControlPlaneBinaries() !== undefined;
if (!args.has("--no-real") && !real) {
  process.stderr.write(
    "chaos: no kube-apiserver binaries (KUBEBUILDER_ASSETS); the real control plane rows are skipped\n",
  );
}
const deadline = setTimeout(() => {
  process.stderr.write("chaos: over the 10 minute bound; aborting\n");
  process.exit(1);
}, 600_000);
deadline.unref();
const started = Date.now();
const rows = await runChaos({
  ...(args.has("--short") ? { faults: short } : {}),
  realControlPlane: real,
  log: (line) => process.stderr.write(`chaos: ${line}\n`),
});
process.stdout.write(`${formatChaosTable(rows)}\n`);
const failed = rows.filter((row) => row.violations.length > 0 || row.leaks > 0);
process.stdout.write(
  `chaos: ${rows.length - failed.length}/${rows.length} rows hold (${((Date.now() - started) / 1000).toFixed(0)} s)\n`,
);
process.exit(failed.length > 0 ? 1 : 0);
