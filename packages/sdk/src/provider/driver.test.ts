import { describe, expect, expectTypeOf, it } from "vitest";
import type {
  AnyPoolDriver,
  GroupModelPoolDriver,
  PoolContext,
  PoolDriver,
  PoolGroup,
  TemplateVersion,
} from "./driver.js";
import * as driverModule from "./driver.js";
import * as driverError from "./driver-error.js";
import * as stamp from "./stamp.js";

interface Spec {
  readonly image: string;
}
interface Settings {
  readonly maxSize: number;
}

// A template-shaped driver as providers wrote them before the driver module was split: every name
// it uses comes from the one module, and the object literal type-checks against the interface.
const templateDriver: PoolDriver<Spec, Settings> = {
  templateInputs: (ctx) => ({ image: ctx.spec.image }),
  groupSettings: () => ({ maxSize: 3 }),
  getTemplate: async (): Promise<readonly TemplateVersion[]> => [],
  createTemplateVersion: async (_ctx, input) => ({ version: "1", stamp: input.stamp }),
  deleteTemplate: async () => {},
  getGroup: async (): Promise<PoolGroup<Settings> | undefined> => undefined,
  createGroup: async () => {},
  updateGroup: async () => {},
  deleteGroup: async () => {},
  deleteInstance: async () => {},
  classifyError: (error) =>
    error instanceof RangeError
      ? { kind: "terminal", reason: "BadRange", message: error.message }
      : undefined,
};

const groupDriver: GroupModelPoolDriver<Spec, Settings> = {
  model: "group",
  templateInputs: (ctx) => ({ image: ctx.spec.image }),
  groupSettings: () => ({ maxSize: 3 }),
  getGroup: async () => undefined,
  createGroup: async (_ctx, intent) => {
    expectTypeOf(intent.model?.stamp.specHash).toEqualTypeOf<string | undefined>();
  },
  updateGroup: async () => {},
  deleteGroup: async () => {},
  deleteInstance: async () => {},
};

describe("the driver contract module", () => {
  it("re-exports the error type and the stamp tag codec as the very same bindings", () => {
    expect(driverModule.DriverError).toBe(driverError.DriverError);
    expect(driverModule.classifyDriverError).toBe(driverError.classifyDriverError);
    expect(driverModule.templateStampToTags).toBe(stamp.templateStampToTags);
    expect(driverModule.templateStampFromTags).toBe(stamp.templateStampFromTags);
    expect(driverModule.TEMPLATE_STAMP_TAG_KEYS).toBe(stamp.TEMPLATE_STAMP_TAG_KEYS);
  });

  it("exports no hashing or planning helper: a driver makes no decisions", () => {
    // Tags (stamp, ownership) are what a driver stores and checks, the move names what it may
    // declare; nothing here decides.
    expect(Object.keys(driverModule).sort()).toEqual([
      "BLOCK_MOVE_VALUE_PREFIX",
      "DEFAULT_MOVE_BLOCKING_CALLS",
      "DriverError",
      "MoveAnnotations",
      "OWNER_TAG_PREFIX",
      "TEMPLATE_STAMP_TAG_KEYS",
      "assertPoolOwns",
      "classifyDriverError",
      "poolOwnerTags",
      "templateStampFromTags",
      "templateStampToTags",
    ]);
  });

  it("accepts both driver shapes as AnyPoolDriver and tells them apart by `model`", () => {
    const drivers: AnyPoolDriver<Spec, Settings>[] = [templateDriver, groupDriver];
    const shapes = drivers.map((driver) =>
      driver.model === "group" ? "group" : typeof driver.getTemplate,
    );
    expect(shapes).toEqual(["function", "group"]);
    expectTypeOf<GroupModelPoolDriver<Spec, Settings>>().not.toHaveProperty("getTemplate");
    expectTypeOf<Parameters<PoolDriver<Spec>["getGroup"]>[0]>().toEqualTypeOf<PoolContext<Spec>>();
  });

  it("types ctx.credentials and ctx.infrastructureCluster from one environment parameter", () => {
    interface Env {
      credentials: { readonly token: string };
      infrastructureCluster: { metadata?: { name?: string }; spec?: { region: string } };
    }
    type Ctx = Parameters<PoolDriver<Spec, Settings, Env>["getGroup"]>[0];
    expectTypeOf<Ctx["credentials"]>().toEqualTypeOf<{ readonly token: string }>();
    expectTypeOf<NonNullable<Ctx["infrastructureCluster"]>["spec"]>().toEqualTypeOf<
      { region: string } | undefined
    >();
    // Without a declared type, a context built by hand needs neither.
    const bare: PoolContext<Spec> = {
      pool: { namespace: "ns", name: "p", uid: "u", clusterName: "c" },
      spec: { image: "i" },
      version: undefined,
      failureDomains: [],
      replicas: 1,
      signal: new AbortController().signal,
    };
    expect(bare.credentials).toBeUndefined();
  });

  it("classifies through the driver's classifyError, reached from the driver module", () => {
    const failure = driverModule.classifyDriverError(templateDriver, new RangeError("size 9"));
    expect(failure).toEqual({ kind: "terminal", reason: "BadRange", message: "size 9" });
  });
});
