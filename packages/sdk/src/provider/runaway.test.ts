// Runaway detection across reconciles: the whole default pipeline on a fake cloud whose driver does
// not store the template stamp; the kit creates one version, then stops with a named reason.
import { describe, expect, it } from "vitest";
import { PoolMemory } from "./memory.js";
import { defaultPoolPhases, runPhases } from "./pipeline.js";
import { type FakeSettings, type FakeSpec, fakeCloud, fakeScope } from "./testing.js";

const pipeline = defaultPoolPhases<FakeSpec, FakeSettings>();

describe("runaway detection across reconciles", () => {
  it("stops after one template version when the driver does not store the stamp", async () => {
    const cloud = fakeCloud();
    const forgetful = {
      ...cloud.driver,
      async getTemplate() {
        return cloud.versions.map((v) => ({ version: v.version, stamp: undefined }));
      },
    };
    const memory = new PoolMemory();
    const runs = [];
    for (let i = 0; i < 5; i++) {
      const bed = fakeScope({ driver: forgetful, memory });
      runs.push({ ...bed, result: await runPhases(pipeline, bed.scope) });
    }
    expect(cloud.calls.filter((c) => c.op === "createTemplateVersion")).toHaveLength(1);
    expect(runs[4]?.result.ready.reason).toBe("TemplateStampNotStored");
    const warnings = runs.flatMap((r) => r.events).filter((e) => e.type === "Warning");
    expect(warnings.map((w) => w.reason)).toEqual(["TemplateStampNotStored"]);
  });

  it("counts afresh once released: new inputs with the same template get one more version", async () => {
    const cloud = fakeCloud();
    const forgetful = {
      ...cloud.driver,
      async getTemplate() {
        return cloud.versions.map((v) => ({ version: v.version, stamp: undefined }));
      },
    };
    const memory = new PoolMemory();
    const reconcile = (replicas: number) =>
      runPhases(pipeline, fakeScope({ driver: forgetful, memory, replicas }).scope);
    for (let i = 0; i < 3; i++) await reconcile(2);
    expect(memory.stopped?.reason).toBe("TemplateStampNotStored");
    // The replicas are an input of the runaway's fingerprint, not of the template: the stop is
    // released, and the count of unconfirmed versions starts over instead of stopping at once.
    const released = await reconcile(3);
    expect(memory.runawayReleases).toBe(1);
    expect(released.ready.reason).not.toBe("TemplateStampNotStored");
    expect(cloud.calls.filter((c) => c.op === "createTemplateVersion")).toHaveLength(2);
    const again = await reconcile(3);
    expect(again.ready.reason).toBe("TemplateStampNotStored");
    expect(cloud.calls.filter((c) => c.op === "createTemplateVersion")).toHaveLength(2);
  });
});
