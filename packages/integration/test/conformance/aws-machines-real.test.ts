// The AWS reference provider with MachinePool Machines on passes the conformance suite against moto
// with real CAPI core as the judge: its MachinePool controller makes a Machine per
// ASGMachinePoolMachine, its Machine controller drains the Node before the provider terminates the
// instance, its MachineHealthCheck judges them. Skipped, loudly, without moto (`./dev moto
// --install`) or without core (`./dev controlplane --capi`).
import { asgConformance, findMoto, MOTO_INSTALL_COMMAND } from "@capi-ts/examples";
import { findCapiCoreBinary, findControlPlaneBinaries } from "@capi-ts/testing";
import { runMachinePoolConformance } from "@capi-ts/testing/vitest";

const binaries = findControlPlaneBinaries();
const missing = [
  ...(findMoto()?.installed ? [] : [`no moto server; run \`${MOTO_INSTALL_COMMAND}\``]),
  ...(binaries && findCapiCoreBinary(binaries)
    ? []
    : ["no kube-apiserver/etcd or no CAPI manager; run `./dev controlplane --capi`"]),
];
if (missing.length === 0) {
  runMachinePoolConformance(
    asgConformance({
      machinePoolMachines: true,
      suite: { core: "real", timeouts: { steadyStateMs: 800, settleMs: 250, scenarioMs: 120_000 } },
    }),
  );
} else {
  console.warn(
    `\n!!! SKIPPED BACKEND: the AWS reference provider's MachinePool Machines conformance suite on real CAPI core is NOT run (${missing.join("; ")}).\n`,
  );
  const { describe, it } = await import("vitest");
  describe("ASGMachinePool with MachinePool Machines conformance on moto and real CAPI core", () => {
    it.skip(missing.join("; "), () => undefined);
  });
}
