// The predicates on a driver's shape: where its model lives, its template methods, the check the
// controller runs when it is built, and what a group-model driver must say of every instance.
import { describe, expect, it } from "vitest";
import type {
  GroupModelPoolDriver,
  PoolDriver,
  PoolGroup,
  PoolInstance,
  TemplateStamp,
} from "../driver.js";
import { type FakeSettings, type FakeSpec, fakeCloud, fakeInstance } from "../testing.js";
import {
  checkDriverModel,
  instanceWithoutModelState,
  modelInGroup,
  modelVersionName,
  templateMethods,
} from "./driver-shape.js";

type Driver = PoolDriver<FakeSpec, FakeSettings>;

function groupModel(): GroupModelPoolDriver<FakeSpec, FakeSettings> {
  const {
    getTemplate: _g,
    createTemplateVersion: _c,
    deleteTemplate: _d,
    ...rest
  } = fakeCloud().driver;
  return { ...rest, model: "group" };
}

function group(instances: PoolInstance[]): PoolGroup<FakeSettings> {
  return {
    id: "group-1",
    status: "active",
    desiredReplicas: instances.length,
    templateVersion: undefined,
    settings: { maxSize: 10 },
    instances,
  };
}

const STAMP: TemplateStamp = { specHash: "s1", bootstrapHash: "b1", bootstrapRef: "r1" };

describe("modelInGroup", () => {
  it('is true only for model "group"', () => {
    expect(modelInGroup(groupModel())).toBe(true);
    expect(modelInGroup(fakeCloud().driver)).toBe(false);
    expect(modelInGroup({ ...fakeCloud().driver, model: "template" })).toBe(false);
  });
});

describe("templateMethods", () => {
  it("returns the driver's three template methods, bound to the driver", async () => {
    // A driver whose methods read `this`: called detached, they work only if bound.
    const driver = {
      ...fakeCloud().driver,
      listed: [{ version: "7", stamp: STAMP }],
      deleted: [] as (readonly string[] | undefined)[],
      async getTemplate() {
        return this.listed;
      },
      async createTemplateVersion() {
        return { version: String(this.listed.length + 7), stamp: STAMP };
      },
      async deleteTemplate(_ctx: unknown, versions?: readonly string[]) {
        this.deleted.push(versions);
      },
    };
    const { getTemplate, createTemplateVersion, deleteTemplate } = templateMethods(driver);
    expect(await getTemplate({} as never)).toEqual([{ version: "7", stamp: STAMP }]);
    expect(await createTemplateVersion({} as never, {} as never)).toEqual({
      version: "8",
      stamp: STAMP,
    });
    await deleteTemplate({} as never, ["1"]);
    expect(driver.deleted).toEqual([["1"]]);
  });

  it("names every missing method, and the way out", () => {
    const { getTemplate: _g, createTemplateVersion: _c, ...onlyDelete } = fakeCloud().driver;
    expect(() => templateMethods(onlyDelete as Driver)).toThrow(
      new TypeError(
        'the driver has model "template" but lacks getTemplate, createTemplateVersion; implement them, or set model: "group" if the model lives in the group',
      ),
    );
    const { deleteTemplate: _d, ...noDelete } = fakeCloud().driver;
    expect(() => templateMethods(noDelete as Driver)).toThrow(/lacks deleteTemplate;/);
    expect(() => templateMethods(groupModel())).toThrow(
      /^the driver has model "group" but lacks getTemplate, createTemplateVersion, deleteTemplate;/,
    );
  });
});

describe("checkDriverModel", () => {
  it("accepts a template driver with its methods and a group driver without them", () => {
    expect(() => checkDriverModel(fakeCloud().driver)).not.toThrow();
    expect(() => checkDriverModel({ ...fakeCloud().driver, model: "template" })).not.toThrow();
    expect(() => checkDriverModel(groupModel())).not.toThrow();
  });

  it("refuses an unknown model and a template driver without its methods", () => {
    expect(() => checkDriverModel({ ...fakeCloud().driver, model: "vmss" } as never)).toThrow(
      new TypeError(
        'machinePoolController: driver.model must be "template" or "group", got "vmss"',
      ),
    );
    const { model: _m, ...withoutModel } = groupModel();
    expect(() => checkDriverModel(withoutModel as never)).toThrow(
      /lacks getTemplate, createTemplateVersion, deleteTemplate/,
    );
  });
});

describe("modelVersionName", () => {
  it("derives a short, stable name from the stamp", () => {
    const name = modelVersionName(STAMP);
    expect(name).toMatch(/^model-[0-9a-f]{12}$/);
    expect(modelVersionName({ ...STAMP })).toBe(name);
    // Key order does not matter: the stamp is hashed as stable JSON.
    expect(modelVersionName({ bootstrapRef: "r1", bootstrapHash: "b1", specHash: "s1" })).toBe(
      name,
    );
  });

  it("changes with any part of the stamp, and names a missing stamp too", () => {
    const names = new Set([
      modelVersionName(STAMP),
      modelVersionName({ ...STAMP, specHash: "s2" }),
      modelVersionName({ ...STAMP, bootstrapHash: "b2" }),
      modelVersionName({ ...STAMP, bootstrapRef: "r2" }),
      modelVersionName(undefined),
    ]);
    expect(names.size).toBe(5);
    expect(modelVersionName(undefined)).toMatch(/^model-[0-9a-f]{12}$/);
  });
});

describe("instanceWithoutModelState", () => {
  it("names the first live instance of a group-model driver without latestModel", () => {
    const g = group([
      fakeInstance({ id: "vm-1", latestModel: true }),
      fakeInstance({ id: "vm-2", latestModel: false }),
      fakeInstance({ id: "vm-3" }),
      fakeInstance({ id: "vm-4" }),
    ]);
    expect(instanceWithoutModelState(groupModel(), g)).toBe("vm-3");
  });

  it("ignores departing instances, and a group where every live one says", () => {
    const g = group([
      fakeInstance({ id: "vm-1", latestModel: false }),
      fakeInstance({ id: "vm-2", state: "terminating" }),
      fakeInstance({ id: "vm-3", state: "terminated" }),
    ]);
    expect(instanceWithoutModelState(groupModel(), g)).toBeUndefined();
    expect(instanceWithoutModelState(groupModel(), group([]))).toBeUndefined();
  });

  it("asks nothing of a template driver's instances", () => {
    const g = group([fakeInstance({ id: "i-1" })]);
    expect(instanceWithoutModelState(fakeCloud().driver, g)).toBeUndefined();
  });
});
