// The AWS reference provider (ASGMachinePool on the AWS SDK v3) passes the conformance suite against
// moto's server, with the in-memory API server and the core emulator as the judge. Skipped, loudly,
// when moto is not installed (`./dev moto --install`, which needs Python).
import { asgConformance, findMoto, MOTO_INSTALL_COMMAND } from "@capi-ts/examples";
import { runMachinePoolConformance } from "@capi-ts/testing/vitest";

if (findMoto()?.installed) {
  runMachinePoolConformance(asgConformance());
} else {
  console.warn(
    `\n!!! SKIPPED BACKEND: the AWS reference provider's conformance suite is NOT run (no moto server; run \`${MOTO_INSTALL_COMMAND}\`, which needs Python 3.9+).\n`,
  );
  const { describe, it } = await import("vitest");
  describe("ASGMachinePool conformance on moto", () => {
    it.skip(`needs \`${MOTO_INSTALL_COMMAND}\``, () => undefined);
  });
}
