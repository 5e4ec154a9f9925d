// The conformance suite's `move` scenario for the example provider: the real clusterctl of the target
// release moves a live pool from the suite's management cluster (real kube-apiserver, real CAPI core)
// to a second one with core of its own, where a second manager of the example, on the same fake cloud,
// takes it over. Skipped, loudly, when the control plane, core or clusterctl is not built.
import { fakeCloudConformance } from "@capi-ts/examples";
import {
  findCapiCoreBinary,
  findClusterctlBinary,
  findControlPlaneBinaries,
} from "@capi-ts/testing";
import { runMachinePoolConformance } from "@capi-ts/testing/vitest";

const binaries = findControlPlaneBinaries();
if (binaries && findCapiCoreBinary(binaries) && findClusterctlBinary(binaries)) {
  runMachinePoolConformance(
    fakeCloudConformance({
      suite: {
        core: "real",
        scenarios: ["move", "cleanup"],
        timeouts: { steadyStateMs: 800, settleMs: 250, scenarioMs: 180_000 },
      },
    }),
  );
} else {
  console.warn(
    "\n!!! SKIPPED BACKEND: the conformance move scenario of the example provider is NOT run (no kube-apiserver/etcd, no CAPI manager or no clusterctl; run `./dev controlplane --capi`).\n",
  );
  const { describe, it } = await import("vitest");
  describe("conformance move scenario of the example provider on real CAPI core", () => {
    it.skip("needs `./dev controlplane --capi`", () => undefined);
  });
}
