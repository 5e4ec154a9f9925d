// The template phase (the version new instances launch from, and which instances are up to date)
// on a fake scope and the fake cloud: no API server, no timers.
import { describe, expect, it } from "vitest";
import type {
  GroupModelPoolDriver,
  NewTemplateVersion,
  PoolDriver,
  PoolGroup,
  TemplateStamp,
  TemplateVersion,
} from "../driver.js";
import { PoolMemory } from "../memory.js";
import type { BootstrapSection, PoolSections } from "../phase.js";
import { stableStringify, targetStamp } from "../stamp.js";
import { modelVersionName } from "../steps/driver-shape.js";
import {
  type FakeCloud,
  type FakeSettings,
  type FakeSpec,
  fakeCloud,
  fakeInstance,
  fakeScope,
} from "../testing.js";
import { templatePhase } from "./template.js";

const BOOTSTRAP: BootstrapSection = {
  userData: "#cloud-config\ntoken-1\n",
  format: "cloud-config",
  secretRef: "default/pool-1-bootstrap",
};

/** The stamp of image `image` with `bootstrap` (default: token-1 from the usual Secret). */
function stampOf(image: string, bootstrap: Partial<BootstrapSection> = {}): TemplateStamp {
  const b = { ...BOOTSTRAP, ...bootstrap };
  return targetStamp({ image }, b.userData, b.secretRef);
}

const TARGET = stampOf("img-1");

/**
 * The fake cloud's driver, recording what `createTemplateVersion` is given, numbering new versions
 * after the highest one it ever listed (a pruned version's number is not reused).
 */
function recording(cloud: FakeCloud) {
  const created: NewTemplateVersion[] = [];
  let highest = 0;
  const driver: PoolDriver<FakeSpec, FakeSettings> = {
    ...cloud.driver,
    async createTemplateVersion(ctx, input) {
      created.push(input);
      highest = Math.max(highest, ...cloud.versions.map((v) => Number(v.version)));
      const made = await cloud.driver.createTemplateVersion(ctx, input);
      const version = { ...made, version: String(++highest) };
      cloud.versions = [...cloud.versions.slice(0, -1), version];
      return version;
    },
  };
  return { driver, created };
}

function group(templateVersion: string, instanceVersions: string[] = []): PoolGroup<FakeSettings> {
  return {
    id: "group-1",
    status: "active",
    desiredReplicas: instanceVersions.length,
    templateVersion,
    settings: { maxSize: 10 },
    instances: instanceVersions.map((v, i) => fakeInstance({ id: `i-${i}`, templateVersion: v })),
  };
}

/** A scope after observe and desiredState read `versions` and `g`, with `target` desired. */
function templateScope(
  driver: FakeCloud["driver"] | GroupModelPoolDriver<FakeSpec, FakeSettings>,
  options: {
    versions?: readonly TemplateVersion[];
    group?: PoolGroup<FakeSettings> | null;
    target?: TemplateStamp;
    bootstrap?: BootstrapSection;
    memory?: PoolMemory;
  } = {},
) {
  const sections: Partial<PoolSections<FakeSpec, FakeSettings>> = {
    observed: { versions: options.versions ?? [], group: options.group ?? null },
    desired: { stamp: options.target ?? TARGET, settings: { maxSize: 10 } },
    bootstrap: options.bootstrap ?? BOOTSTRAP,
  };
  return fakeScope({ driver, memory: options.memory ?? new PoolMemory(), sections });
}

describe("template", () => {
  it("uses the newest version as is when it carries exactly the target stamp", async () => {
    const cloud = fakeCloud();
    cloud.versions = [
      { version: "1", stamp: stampOf("img-0") },
      { version: "2", stamp: TARGET },
    ];
    const memory = new PoolMemory();
    memory.templateCreates = { target: stableStringify(TARGET), versions: ["2"] };
    const test = templateScope(cloud.driver, { versions: cloud.versions, memory });
    expect(await test.run(templatePhase)).toBeUndefined();
    expect(cloud.calls).toEqual([]);
    expect(test.events).toEqual([]);
    expect(test.section("template")?.version).toEqual({ version: "2", stamp: TARGET });
    expect(test.section("template")?.versions).toEqual(cloud.versions);
    // Listed with its stamp: nothing left to confirm.
    expect(memory.templateCreates).toBeUndefined();
  });

  it("creates the first version with the target stamp and the bootstrap data", async () => {
    const cloud = fakeCloud();
    const { driver, created } = recording(cloud);
    const memory = new PoolMemory();
    const test = templateScope(driver, { memory, bootstrap: { ...BOOTSTRAP, format: "ignition" } });
    expect(await test.run(templatePhase)).toBeUndefined();
    expect(created).toEqual([
      {
        userData: BOOTSTRAP.userData,
        userDataBase64: Buffer.from(BOOTSTRAP.userData).toString("base64"),
        format: "ignition",
        stamp: TARGET,
      },
    ]);
    expect(cloud.mutating().map((c) => c.op)).toEqual(["createTemplateVersion"]);
    expect(test.events).toEqual([
      {
        type: "Normal",
        reason: "TemplateVersionCreated",
        message: "template version 1: initial template",
      },
    ]);
    expect(test.section("template")?.version).toEqual({ version: "1", stamp: TARGET });
    expect(test.section("template")?.versions).toEqual([{ version: "1", stamp: TARGET }]);
    expect(memory.templateCreates).toEqual({
      target: stableStringify(TARGET),
      versions: ["1"],
      releases: 0,
    });
  });

  it("says why it rolls: inputs, secret, both, or no stamp", async () => {
    const cases: [TemplateStamp | undefined, string][] = [
      [stampOf("img-0"), "template inputs changed: rolling out"],
      [stampOf("img-1", { secretRef: "default/other" }), "bootstrap secret changed: rolling out"],
      [
        stampOf("img-0", { secretRef: "default/other" }),
        "template inputs changed and bootstrap secret changed: rolling out",
      ],
      [undefined, "the previous version has no stamp: rolling out"],
    ];
    for (const [previous, why] of cases) {
      const cloud = fakeCloud();
      cloud.versions = [{ version: "1", stamp: previous }];
      const test = templateScope(cloud.driver, { versions: cloud.versions, group: group("1") });
      await test.run(templatePhase);
      expect(test.events.map((e) => e.message)).toEqual([`template version 2: ${why}`]);
      const section = test.section("template");
      expect(section?.isUpToDate(fakeInstance({ templateVersion: "1" }))).toBe(false);
      expect(section?.isUpToDate(fakeInstance({ templateVersion: "2" }))).toBe(true);
    }
  });

  it("keeps instances on a token-only rotation, and says so", async () => {
    const cloud = fakeCloud();
    cloud.versions = [
      { version: "1", stamp: stampOf("img-1", { userData: "#cloud-config\nold\n" }) },
    ];
    const test = templateScope(cloud.driver, {
      versions: cloud.versions,
      group: group("1", ["1"]),
    });
    await test.run(templatePhase);
    expect(cloud.calls.map((c) => c.args)).toEqual([[TARGET]]);
    expect(test.events.map((e) => e.message)).toEqual([
      "template version 2: bootstrap data changed (token rotation): instances are kept",
    ]);
    const section = test.section("template");
    expect(section?.version.version).toBe("2");
    expect(section?.isUpToDate(fakeInstance({ templateVersion: "1" }))).toBe(true);
  });

  it("prunes unused versions before it creates one (a version limit cannot block the create)", async () => {
    const cloud = fakeCloud();
    cloud.versions = [
      { version: "1", stamp: stampOf("img-a") },
      { version: "2", stamp: stampOf("img-b") },
      { version: "3", stamp: stampOf("img-c") },
    ];
    const { driver } = recording(cloud);
    const test = templateScope(driver, { versions: cloud.versions, group: group("3", ["2"]) });
    await test.run(templatePhase);
    expect(cloud.mutating()).toEqual([
      { op: "deleteTemplate", args: [["1"]] },
      { op: "createTemplateVersion", args: [TARGET] },
    ]);
    expect(test.events.map((e) => e.reason)).toEqual([
      "TemplateVersionsPruned",
      "TemplateVersionCreated",
    ]);
    expect(test.section("template")?.version).toEqual({ version: "4", stamp: TARGET });
  });

  it("neither prunes nor creates when the newest version is exact", async () => {
    const cloud = fakeCloud();
    cloud.versions = [
      { version: "1", stamp: stampOf("img-a") },
      { version: "2", stamp: TARGET },
    ];
    const test = templateScope(cloud.driver, { versions: cloud.versions, group: group("2") });
    await test.run(templatePhase);
    expect(cloud.mutating()).toEqual([]);
  });

  it("stops with TemplateStampNotStored when a version it created is listed without its stamp", async () => {
    const cloud = fakeCloud();
    const memory = new PoolMemory();
    memory.templateCreates = { target: stableStringify(TARGET), versions: ["2"] };
    cloud.versions = [
      { version: "1", stamp: stampOf("img-0") },
      { version: "2", stamp: undefined },
    ];
    const test = templateScope(cloud.driver, { versions: cloud.versions, memory });
    const result = await test.run(templatePhase);
    expect(result?.ready.reason).toBe("TemplateStampNotStored");
    expect(result?.ready.message).toBe(
      "template version 2, created with a stamp, is listed without it; store the stamp with the version (templateStampToTags) and return it from getTemplate, oldest version first; the kit makes no cloud change to this pool until this is fixed",
    );
    expect(test.events).toMatchObject([{ type: "Warning", reason: "TemplateStampNotStored" }]);
    expect(memory.stopped?.reason).toBe("TemplateStampNotStored");
    expect(cloud.calls).toEqual([]);
    expect(test.section("template")).toBeUndefined();
  });

  it("says when the version it created is listed with another stamp, and not last", async () => {
    const cloud = fakeCloud();
    const memory = new PoolMemory();
    memory.templateCreates = { target: stableStringify(TARGET), versions: ["1"] };
    cloud.versions = [
      { version: "1", stamp: stampOf("img-other") },
      { version: "2", stamp: stampOf("img-0") },
    ];
    const test = templateScope(cloud.driver, { versions: cloud.versions, memory });
    const result = await test.run(templatePhase);
    expect(result?.ready.message).toMatch(
      /^template version 1, created with a stamp, is listed with a different stamp and is not the newest; /,
    );
    expect(cloud.mutating()).toEqual([]);
  });

  it("stops with TemplateStampNotStored when versions it created are never listed", async () => {
    const cloud = fakeCloud();
    const forgetful = { ...cloud.driver, getTemplate: async () => [] };
    const memory = new PoolMemory();
    // Two creates for the same target that the cloud never lists: the second is still allowed.
    const first = templateScope(forgetful, { memory });
    await first.run(templatePhase);
    const second = templateScope(forgetful, { memory });
    expect(await second.run(templatePhase)).toBeUndefined();
    expect(memory.templateCreates?.versions).toEqual(["1", "2"]);
    const third = templateScope(forgetful, { memory });
    const result = await third.run(templatePhase);
    expect(result?.ready.reason).toBe("TemplateStampNotStored");
    expect(result?.ready.message).toMatch(
      /^template versions 1, 2 were created but getTemplate never lists them; /,
    );
    expect(cloud.calls.filter((c) => c.op === "createTemplateVersion")).toHaveLength(2);
  });

  it("counts creates per target: a new target starts again", async () => {
    const cloud = fakeCloud();
    const memory = new PoolMemory();
    memory.templateCreates = { target: stableStringify(stampOf("img-0")), versions: ["1", "2"] };
    const test = templateScope(cloud.driver, { memory });
    expect(await test.run(templatePhase)).toBeUndefined();
    expect(memory.templateCreates).toEqual({
      target: stableStringify(TARGET),
      versions: ["1"],
      releases: 0,
    });
  });

  it("counts an instance up to date when its version runs the target's spec and secret", async () => {
    const cloud = fakeCloud();
    cloud.versions = [
      { version: "1", stamp: stampOf("img-0") },
      { version: "2", stamp: undefined },
      { version: "3", stamp: stampOf("img-1", { userData: "#cloud-config\nold-token\n" }) },
      { version: "4", stamp: TARGET },
    ];
    const test = templateScope(cloud.driver, { versions: cloud.versions });
    await test.run(templatePhase);
    const isUpToDate = test.section("template")?.isUpToDate;
    const on = (templateVersion: string | undefined) =>
      isUpToDate?.(fakeInstance({ templateVersion }));
    expect(on("4")).toBe(true);
    expect(on("3")).toBe(true); // token-only difference
    expect(on("2")).toBe(false); // no stamp
    expect(on("1")).toBe(false); // another spec
    expect(on("9")).toBe(false); // a version the cloud does not list
    expect(on(undefined)).toBe(false);
  });

  describe("with a group-model driver", () => {
    function groupModel(cloud: FakeCloud): GroupModelPoolDriver<FakeSpec, FakeSettings> {
      const {
        getTemplate: _g,
        createTemplateVersion: _c,
        deleteTemplate: _d,
        ...rest
      } = cloud.driver;
      return { ...rest, model: "group" };
    }

    it("names the model after the target without a group, calling nothing", async () => {
      const cloud = fakeCloud();
      const test = templateScope(groupModel(cloud));
      expect(await test.run(templatePhase)).toBeUndefined();
      const section = test.section("template");
      expect(section?.version).toEqual({ version: modelVersionName(TARGET), stamp: TARGET });
      expect(section?.versions).toEqual([]);
      expect(section?.isUpToDate(fakeInstance({ latestModel: false }))).toBe(true);
      expect(cloud.calls).toEqual([]);
    });

    it("updates the group's model when its stamp differs, and counts no instance current", async () => {
      const cloud = fakeCloud();
      cloud.group = {
        ...group("model-x"),
        modelStamp: stampOf("img-0"),
        instances: [fakeInstance({ id: "vm-1", latestModel: true })],
      };
      const test = templateScope(groupModel(cloud), { group: cloud.group });
      expect(await test.run(templatePhase)).toBeUndefined();
      expect(cloud.mutating()).toEqual([
        {
          op: "updateGroup",
          args: [
            {
              model: {
                userData: BOOTSTRAP.userData,
                userDataBase64: Buffer.from(BOOTSTRAP.userData).toString("base64"),
                format: "cloud-config",
                stamp: TARGET,
              },
            },
          ],
        },
      ]);
      expect(test.events.map((e) => e.reason)).toEqual(["GroupModelUpdated"]);
      const section = test.section("template");
      expect(section?.version.version).toBe(modelVersionName(TARGET));
      expect(section?.isUpToDate(fakeInstance({ id: "vm-1", latestModel: true }))).toBe(false);
    });

    it("leaves an exact model alone and trusts latestModel", async () => {
      const cloud = fakeCloud();
      cloud.group = { ...group("model-x"), modelStamp: TARGET };
      const test = templateScope(groupModel(cloud), { group: cloud.group });
      await test.run(templatePhase);
      expect(cloud.calls).toEqual([]);
      const section = test.section("template");
      expect(section?.isUpToDate(fakeInstance({ latestModel: true }))).toBe(true);
      expect(section?.isUpToDate(fakeInstance({ latestModel: false }))).toBe(false);
    });
  });
});

describe("template: what it pruned and what it says", () => {
  it("leaves the versions it pruned out of its section (prune must not delete them again)", async () => {
    const cloud = fakeCloud();
    cloud.versions = [
      { version: "1", stamp: stampOf("img-a") },
      { version: "2", stamp: stampOf("img-b") },
      { version: "3", stamp: stampOf("img-c") },
    ];
    const { driver } = recording(cloud);
    const test = templateScope(driver, { versions: cloud.versions, group: group("3", ["2"]) });
    await test.run(templatePhase);
    expect(test.section("template")?.versions.map((v) => v.version)).toEqual(["2", "3", "4"]);
  });

  it("states the order, not the stamp, when the version it created is listed exact but not last", async () => {
    const cloud = fakeCloud();
    const memory = new PoolMemory();
    memory.templateCreates = { target: stableStringify(TARGET), versions: ["2"] };
    cloud.versions = [
      { version: "2", stamp: TARGET },
      { version: "1", stamp: stampOf("img-0") },
    ];
    const test = templateScope(cloud.driver, { versions: cloud.versions, memory });
    const result = await test.run(templatePhase);
    expect(result?.ready.reason).toBe("TemplateStampNotStored");
    expect(result?.ready.message).toContain(
      "template version 2, created with the target stamp, is listed with it but not as the newest",
    );
  });
});
