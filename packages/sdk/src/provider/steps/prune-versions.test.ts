// Pruning template versions (a step of `template` and `prune`) on a fake scope and the fake cloud:
// what is deleted, what never is, and which failures wait for a later pass.
import { describe, expect, it } from "vitest";
import {
  DriverError,
  type GroupModelPoolDriver,
  type PoolGroup,
  type PoolInstanceState,
} from "../driver.js";
import { StepFailure } from "../errors.js";
import {
  type FakeCloud,
  type FakeSettings,
  type FakeSpec,
  fakeCloud,
  fakeInstance,
  fakeScope,
} from "../testing.js";
import { pruneVersions } from "./prune-versions.js";

/** Versions "1" to `n`, oldest first (their stamps do not matter to pruning). */
function versions(n: number) {
  return Array.from({ length: n }, (_, i) => ({ version: String(i + 1), stamp: undefined }));
}

function group(
  templateVersion: string | undefined,
  instanceVersions: [string, PoolInstanceState?][] = [],
) {
  const g: PoolGroup<FakeSettings> = {
    id: "group-1",
    status: "active",
    desiredReplicas: instanceVersions.length,
    templateVersion,
    settings: { maxSize: 10 },
    instances: instanceVersions.map(([version, state], i) =>
      fakeInstance({
        id: `i-${i}`,
        templateVersion: version,
        ...(state ? { state } : {}),
      }),
    ),
  };
  return g;
}

function setup(n: number) {
  const cloud = fakeCloud();
  cloud.versions = versions(n);
  const test = fakeScope({ driver: cloud.driver });
  return { cloud, test };
}

const deletes = (cloud: FakeCloud) => cloud.calls.filter((c) => c.op === "deleteTemplate");

describe("pruneVersions", () => {
  it("deletes the versions neither the group nor a live instance uses, in one call", async () => {
    const { cloud, test } = setup(5);
    const left = await pruneVersions(
      test.scope,
      cloud.versions,
      group("4", [["2"], ["3", "terminated"]]),
    );
    // What it deleted is not in what it returns: the caller's list stays true.
    expect(left.map((v) => v.version)).toEqual(["2", "4", "5"]);
    expect(cloud.mutating()).toEqual([{ op: "deleteTemplate", args: [["1", "3"]] }]);
    expect(cloud.versions.map((v) => v.version)).toEqual(["2", "4", "5"]);
    expect(test.events).toEqual([
      {
        type: "Normal",
        reason: "TemplateVersionsPruned",
        message: "deleted unused template versions 1, 3",
      },
    ]);
  });

  it("then prunes the bootstrap store down to what the remaining versions' stamps name", async () => {
    const cloud = fakeCloud();
    const stamp = (hash: string) => ({ specHash: "s", bootstrapHash: hash, bootstrapRef: "r" });
    cloud.versions = [
      { version: "1", stamp: stamp("b-1") },
      { version: "2", stamp: stamp("b-2") },
      { version: "3", stamp: stamp("b-3") },
    ];
    const kept: string[][] = [];
    const test = fakeScope({
      driver: {
        ...cloud.driver,
        userData: {
          store: {
            put: async () => "stub",
            prune: async (_ctx, keep) => {
              kept.push([...keep]);
            },
          },
        },
      },
    });
    await pruneVersions(test.scope, cloud.versions, group("2", [["2"]]));
    expect(kept).toEqual([["b-2", "b-3"]]);
    await pruneVersions(test.scope, cloud.versions, group("2", [["2"]]));
    expect(kept).toHaveLength(1);
  });

  it("never deletes the newest version, even unused and without a group", async () => {
    const { cloud, test } = setup(3);
    await pruneVersions(test.scope, cloud.versions, null);
    expect(deletes(cloud).map((c) => c.args)).toEqual([[["1", "2"]]]);
    const single = setup(1);
    await pruneVersions(single.test.scope, single.cloud.versions, null);
    expect(single.cloud.calls).toEqual([]);
  });

  it("calls nothing and records nothing when every version is in use", async () => {
    const { cloud, test } = setup(3);
    await pruneVersions(test.scope, cloud.versions, group("2", [["1", "terminating"]]));
    expect(cloud.calls).toEqual([]);
    expect(test.events).toEqual([]);
  });

  it("swallows a waiting failure (the cloud still uses the version): a later pass prunes it", async () => {
    const { cloud, test } = setup(2);
    cloud.faults.deleteTemplate = () => DriverError.waiting("VersionInUse", "in use", 1000);
    const listed = cloud.versions;
    await expect(pruneVersions(test.scope, listed, null)).resolves.toBe(listed);
    expect(deletes(cloud)).toHaveLength(1);
    expect(test.events).toEqual([]);
  });

  it("throws any other failure to the error policy, with no Event", async () => {
    for (const fault of [
      () => DriverError.terminal("AccessDenied", "no"),
      () => DriverError.notFound("NoSuchVersion", "gone"),
      () => new Error("socket hang up"),
    ]) {
      const { cloud, test } = setup(2);
      cloud.faults.deleteTemplate = fault;
      const error = await pruneVersions(test.scope, cloud.versions, null).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(StepFailure);
      expect((error as StepFailure).step).toBe("deleteTemplate");
      expect(test.events).toEqual([]);
    }
  });

  it('does nothing for a driver with model "group"', async () => {
    const cloud = fakeCloud();
    const {
      getTemplate: _g,
      createTemplateVersion: _c,
      deleteTemplate: _d,
      ...rest
    } = cloud.driver;
    const driver: GroupModelPoolDriver<FakeSpec, FakeSettings> = { ...rest, model: "group" };
    const test = fakeScope({ driver });
    await pruneVersions(test.scope, versions(3), null);
    expect(cloud.calls).toEqual([]);
    expect(test.events).toEqual([]);
  });
});
