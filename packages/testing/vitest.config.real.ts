// The `testing@real` project: the API server behaviour suite (test/apiserver), the CRD manifest
// suite (test/crd) and the SDK's writes (the patch helper, test/patch, and the contract helpers,
// test/contract) again, on a real kube-apiserver + etcd (see test/support/real-project.ts). The
// provider kit's suites, which run the example provider, are `integration@real`
// (packages/integration/vitest.config.real.ts).
import { realBackendProject } from "./test/support/real-project.js";

export default realBackendProject({
  name: "testing@real",
  suites: "the API server, CRD, patch and contract suites",
  include: [
    "test/apiserver/**/*.test.ts",
    "test/crd/**/*.test.ts",
    "test/patch/**/*.test.ts",
    "test/contract/**/*.test.ts",
  ],
  // Fault injection and the request log exist only in the in-memory server.
  exclude: ["test/apiserver/faults.test.ts"],
  notOnReal: [
    {
      test: "Background: deletes dependents after the owner",
      why: "divergence D9 (no garbage collector)",
    },
    {
      test: "Orphan: removes the owner reference from dependents",
      why: "divergence D9 (no garbage collector)",
    },
    {
      test: "Foreground: the owner waits (foregroundDeletion)",
      why: "divergence D9 (no garbage collector)",
    },
    {
      test: "terminate: phase Terminating, no new content (403)",
      why: "divergence D10 (no namespace controller)",
    },
    {
      test: "applies operations (client-node's default for typed patch calls)",
      why: "in-memory only: reads the request log",
    },
    {
      test: "answers a too-old resourceVersion with an ERROR event carrying a 410 Status",
      why: "in-memory only: expireWatchWindow()",
    },
    {
      test: "sends periodic BOOKMARK events when allowed",
      why: "in-memory only: bookmarkIntervalMs (the real server sends one a minute)",
    },
    {
      test: "survives a forced 410, a cut stream and a restart",
      why: "in-memory only: faults and restart",
    },
    // test/patch: each has a twin that runs on both backends, where a concurrent writer makes the
    // server itself answer 409.
    {
      test: "re-reads and re-applies on injected 409s, up to 5 attempts",
      why: "in-memory only: faults",
    },
    {
      test: "its errors (numeric code) still drive the retries on injected 409s",
      why: "in-memory only: faults",
    },
  ],
});
