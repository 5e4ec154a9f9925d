// The `integration@real` project: the provider kit end to end (test/provider: the MachinePool
// controller with the CAPI core emulator and the fake cloud) again, on a real kube-apiserver + etcd
// (see packages/testing/test/support/real-project.ts; the tests it leaves out are in not-on-real.ts).
// The conformance and webhook suites start a real control plane themselves where they need one.
import { realBackendProject } from "../testing/test/support/real-project.js";

export default realBackendProject({
  name: "integration@real",
  include: ["test/provider/**/*.test.ts"],
});
