// The `integration@real` project: the provider kit end to end (test/provider: the MachinePool
// controller with the CAPI core emulator and the fake cloud) again, on a real kube-apiserver + etcd
// (see packages/testing/test/support/real-project.ts). The conformance and webhook suites start a
// real control plane themselves where they need one.
import { realBackendProject } from "../testing/test/support/real-project.js";

export default realBackendProject({
  name: "integration@real",
  suites: "the provider kit's suites",
  include: ["test/provider/**/*.test.ts"],
  notOnReal: [
    // The behaviour under server faults needs fault injection; every other provider test runs on
    // both backends (request-log checks only where the log exists).
    {
      test: "survives API server faults on its writes (retries with backoff) and converges",
      why: "in-memory only: faults",
    },
  ],
});
