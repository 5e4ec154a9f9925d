// The guide's "adding a phase" example (docs/guides/provider/phases.md), as a provider writes it:
// only public names, from the entry points a provider imports.
import { describe, expect, it } from "vitest";
import {
  checkPhases,
  defaultPoolPhases,
  definePhase,
  insertPhase,
  type PoolGroup,
  replacePhase,
} from "./index.js";
import { createTestScope, type FakeSettings, type FakeSpec, fakeCloud } from "./testing.js";

type FooSpec = FakeSpec;
type FooSettings = FakeSettings;

const recordGroupId = definePhase<FooSpec, FooSettings>()({
  name: "recordGroupId",
  reads: ["group"],
  writes: [],
  run(scope) {
    // declared in defineInfraMachinePool({ status })
    scope.status.setProviderStatus({ groupId: scope.read("group").group.id });
  },
});

const someGroup: PoolGroup<FooSettings> = {
  id: "group-7",
  status: "active",
  desiredReplicas: 2,
  templateVersion: "1",
  settings: { maxSize: 10 },
  instances: [],
};

describe("the guide's custom phase", () => {
  it("runs on a test scope and writes the provider's status field", async () => {
    const fooDriver = fakeCloud().driver;
    const test = createTestScope({
      driver: fooDriver,
      spec: { image: "img-1" },
      sections: { group: { group: someGroup, desired: 2, external: false } },
    });
    expect(await test.run(recordGroupId)).toBeUndefined();
    expect(test.scope.pool.status).toMatchObject({ groupId: someGroup.id });
  });

  it("fits before publish, and nowhere a group is not known yet", () => {
    const phases = insertPhase(
      defaultPoolPhases<FooSpec, FooSettings>(),
      { before: "publish" },
      recordGroupId,
    );
    expect(() => checkPhases(phases)).not.toThrow();
    expect(() =>
      insertPhase(defaultPoolPhases<FooSpec, FooSettings>(), { before: "group" }, recordGroupId),
    ).toThrow(
      'insertPhase: "recordGroupId" reads the group section, which "group" writes after it; insert it after "group"',
    );
  });

  it("cannot replace a kit phase whose section later phases read without writing it", () => {
    const quiet = definePhase<FooSpec, FooSettings>()({
      name: "quietScale",
      reads: [],
      writes: [],
      run: () => undefined,
    });
    expect(() => replacePhase(defaultPoolPhases<FooSpec, FooSettings>(), "scale", quiet)).toThrow(
      'replacePhase: "nativeRollout" reads the scale section, which no phase of the list writes',
    );
  });

  it("refuses, on the test scope too, a read it did not declare", async () => {
    const sneaky = definePhase<FooSpec, FooSettings>()({
      name: "sneaky",
      reads: [],
      writes: [],
      run(scope) {
        // A JavaScript caller, or a cast, gets past the types; the view still refuses.
        (scope.read as (section: string) => unknown)("group");
      },
    });
    const test = createTestScope({
      driver: fakeCloud().driver,
      spec: { image: "img-1" },
      sections: { group: { group: someGroup, desired: 2, external: false } },
    });
    await expect(test.run(sneaky)).rejects.toThrow(
      'phase "sneaky" reads the group section without declaring it: add "group" to its reads',
    );
  });
});
