// The example provider on the scale-set cloud (model in the group) passes the conformance suite with
// real CAPI core as the judge: a real kube-apiserver + etcd, CAPI core's MachinePool and Machine
// controllers and its webhooks, built from the release the SDK targets (`./dev controlplane --capi`).
// Skipped, loudly, when core is not built; `./dev conformance --core real` runs only this file.
import { fakeCloudConformance } from "@capi-ts/examples";
import { findCapiCoreBinary, findControlPlaneBinaries } from "@capi-ts/testing";
import { runMachinePoolConformance } from "@capi-ts/testing/vitest";

const binaries = findControlPlaneBinaries();
if (binaries && findCapiCoreBinary(binaries)) {
  runMachinePoolConformance(
    fakeCloudConformance({
      shape: "scaleSet",
      suite: { core: "real", timeouts: { steadyStateMs: 800, settleMs: 250, scenarioMs: 120_000 } },
    }),
  );
} else {
  console.warn(
    "\n!!! SKIPPED BACKEND: the conformance suite on real CAPI core is NOT run (no kube-apiserver/etcd or no CAPI manager; run `./dev controlplane --capi`).\n",
  );
  const { describe, it } = await import("vitest");
  describe("InfraMachinePool conformance on real CAPI core", () => {
    it.skip("needs `./dev controlplane --capi`", () => undefined);
  });
}
