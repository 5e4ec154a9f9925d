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
});
