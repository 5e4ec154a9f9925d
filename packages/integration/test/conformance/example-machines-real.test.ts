// The example provider with MachinePool Machines on passes the conformance suite with real CAPI core
// as the judge: its MachinePool controller makes a Machine per InfraMachine, its Machine controller
// cordons and drains the Node in the workload cluster (a second kube-apiserver) and deletes the
// InfraMachine before the provider deletes the instance. Skipped, loudly, when core is not built.
import { fakeCloudConformance } from "@capi-ts/examples";
import { findCapiCoreBinary, findControlPlaneBinaries } from "@capi-ts/testing";
import { runMachinePoolConformance } from "@capi-ts/testing/vitest";

const binaries = findControlPlaneBinaries();
if (binaries && findCapiCoreBinary(binaries)) {
  runMachinePoolConformance(
    fakeCloudConformance({
      machinePoolMachines: true,
      suite: { core: "real", timeouts: { steadyStateMs: 800, settleMs: 250, scenarioMs: 120_000 } },
    }),
  );
} else {
  console.warn(
    "\n!!! SKIPPED BACKEND: the MachinePool Machines conformance suite on real CAPI core is NOT run (no kube-apiserver/etcd or no CAPI manager; run `./dev controlplane --capi`).\n",
  );
  const { describe, it } = await import("vitest");
  describe("InfraMachinePool conformance with MachinePool Machines on real CAPI core", () => {
    it.skip("needs `./dev controlplane --capi`", () => undefined);
  });
}
