// The example provider (FakeCloudMachinePool) under core's topology controller: a Cluster of the
// ClusterClass flavor the scaffold ships (rendered by the same function for this kind) is created and
// upgraded, on real CAPI core with the ClusterTopology gate on, the kind's admission webhooks served. Only the ClusterClass scenarios (and
// cleanup) run here; example-real.test.ts runs them with the rest. Skipped, loudly, when core is not built.
import { fakeCloudConformance } from "@capi-ts/examples";
import { findCapiCoreBinary, findControlPlaneBinaries } from "@capi-ts/testing";
import { runMachinePoolConformance } from "@capi-ts/testing/vitest";

const binaries = findControlPlaneBinaries();
if (binaries && findCapiCoreBinary(binaries)) {
  runMachinePoolConformance(
    fakeCloudConformance({
      // The kind's webhooks, called by the API server: the topology controller's applies pass them.
      webhooks: true,
      suite: {
        core: "real",
        scenarios: ["topologyCreate", "topologyUpgrade", "cleanup"],
        timeouts: { steadyStateMs: 800, settleMs: 250, scenarioMs: 180_000 },
      },
    }),
  );
} else {
  console.warn(
    "\n!!! SKIPPED BACKEND: the ClusterClass scenarios on real CAPI core are NOT run (no kube-apiserver/etcd or no CAPI manager; run `./dev controlplane --capi`).\n",
  );
  const { describe, it } = await import("vitest");
  describe("ClusterClass conformance on real CAPI core", () => {
    it.skip("needs `./dev controlplane --capi`", () => undefined);
  });
}
