// The example provider upgraded with the real clusterctl: release v0.1.0 (FakeCloudMachinePool at
// v1beta2 only) is installed by `clusterctl init` from a local repository and runs a pool on real CAPI
// core; `clusterctl upgrade apply` moves it to v0.2.0 (v1beta3 added and made the storage version,
// v1beta2 converted through the provider's webhook) and the provider restarts at v0.2.0 on the same
// fake cloud. The scenario holds that no instance was replaced, the pool's status survived, the pool
// reads at both versions, its manager migrated the storage version, and the pool still scales.
// Skipped, loudly, when the control plane, core or clusterctl is not built.
import { fakeCloudConformance, fakeCloudUpgrade } from "@capi-ts/examples";
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
        providerUpgrade: fakeCloudUpgrade(),
        scenarios: ["providerUpgrade", "cleanup"],
        timeouts: { steadyStateMs: 800, settleMs: 250, scenarioMs: 180_000 },
      },
    }),
  );
} else {
  console.warn(
    "\n!!! SKIPPED BACKEND: clusterctl upgrade of the example provider is NOT run (no kube-apiserver/etcd, no CAPI manager or no clusterctl; run `./dev controlplane --capi`).\n",
  );
  const { describe, it } = await import("vitest");
  describe("clusterctl upgrade of the example provider on real CAPI core", () => {
    it.skip("needs `./dev controlplane --capi`", () => undefined);
  });
}
