// The `testing@real` project: the API server behaviour suite (test/apiserver), the CRD manifest
// suite (test/crd) and the SDK's writes (the patch helper, test/patch, and the contract helpers,
// test/contract) again, on a real kube-apiserver + etcd (see test/support/real-project.ts: loading
// this file prints and throws nothing). The provider kit's suites, which run the example provider, are
// `integration@real` (packages/integration/vitest.config.real.ts).
import { realBackendProject } from "./test/support/real-project.js";

export default realBackendProject({
  name: "testing@real",
  include: [
    "test/apiserver/**/*.test.ts",
    "test/crd/**/*.test.ts",
    "test/patch/**/*.test.ts",
    "test/contract/**/*.test.ts",
  ],
  // Fault injection and the request log exist only in the in-memory server.
  exclude: ["test/apiserver/faults.test.ts"],
});
