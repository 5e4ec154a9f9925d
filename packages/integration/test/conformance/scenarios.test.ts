// Scenarios are data: the built-in list, a provider's own scenarios before cleanup, and ids checked.

import { fakeCloudConformance } from "@capi-ts/examples";
import { CONFORMANCE_SCENARIOS, MachinePoolConformance } from "@capi-ts/testing";
import { describe, expect, it } from "vitest";

describe("conformance scenarios as data", () => {
  it("lists the built-in scenarios, then the provider's own, then cleanup", () => {
    const suite = new MachinePoolConformance({
      ...fakeCloudConformance(),
      extraScenarios: [{ id: "zoneOutage", title: "a zone outage", run: async () => undefined }],
    });
    const ids = suite.scenarios().map((s) => s.id);
    const builtIn = CONFORMANCE_SCENARIOS.map((s) => s.id).filter((id) => id !== "cleanup");
    expect(ids).toEqual([...builtIn, "zoneOutage", "cleanup"]);
    expect(ids).toContain("watchFilter");
  });

  it("runs a subset, and refuses unknown and taken ids with the known ones listed", () => {
    const subset = new MachinePoolConformance({
      ...fakeCloudConformance(),
      scenarios: ["scale", "cleanup"],
    });
    expect(subset.scenarios().map((s) => s.id)).toEqual(["scale", "cleanup"]);
    const typo = new MachinePoolConformance({ ...fakeCloudConformance(), scenarios: ["scael"] });
    expect(() => typo.scenarios()).toThrow(
      /unknown scenario\(s\) "scael" in scenarios; known: crd, scale/,
    );
    const taken = new MachinePoolConformance({
      ...fakeCloudConformance(),
      extraScenarios: [{ id: "pause", title: "mine", run: async () => undefined }],
    });
    expect(() => taken.scenarios()).toThrow(/extraScenarios has the id "pause", which is taken/);
  });

  it("refuses an emulator rate limit that is not a whole number of ms, naming both ways to set it", () => {
    expect(
      () => new MachinePoolConformance({ ...fakeCloudConformance(), emulatorRateLimitMs: -1 }),
    ).toThrow(
      /rate limit must be a whole number of ms ≥ 0 .* got -1 \(option emulatorRateLimitMs or CAPI_TS_CONFORMANCE_RATE_LIMIT_MS\)/,
    );
    const saved = process.env.CAPI_TS_CONFORMANCE_RATE_LIMIT_MS;
    process.env.CAPI_TS_CONFORMANCE_RATE_LIMIT_MS = "fast";
    try {
      expect(() => new MachinePoolConformance(fakeCloudConformance())).toThrow(/got "fast"/);
      // The option wins over the environment.
      expect(
        () => new MachinePoolConformance({ ...fakeCloudConformance(), emulatorRateLimitMs: 0 }),
      ).not.toThrow();
    } finally {
      if (saved === undefined) delete process.env.CAPI_TS_CONFORMANCE_RATE_LIMIT_MS;
      else process.env.CAPI_TS_CONFORMANCE_RATE_LIMIT_MS = saved;
    }
  });
});
