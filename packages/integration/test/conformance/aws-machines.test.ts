// The AWS reference provider with MachinePool Machines on (one ASGMachinePoolMachine per instance,
// deletions through core's Machines) passes the conformance suite, its MachinePool Machines
// scenarios included, against moto on the core emulator. Skipped, loudly, without moto.
import { asgConformance, findMoto, MOTO_INSTALL_COMMAND } from "@capi-ts/examples";
import { runMachinePoolConformance } from "@capi-ts/testing/vitest";

if (findMoto()?.installed) {
  runMachinePoolConformance(asgConformance({ machinePoolMachines: true }));
} else {
  console.warn(
    `\n!!! SKIPPED BACKEND: the AWS reference provider's MachinePool Machines conformance suite is NOT run (no moto server; run \`${MOTO_INSTALL_COMMAND}\`, which needs Python 3.9+).\n`,
  );
  const { describe, it } = await import("vitest");
  describe("ASGMachinePool with MachinePool Machines conformance on moto", () => {
    it.skip(`needs \`${MOTO_INSTALL_COMMAND}\``, () => undefined);
  });
}
