import { defineInfraMachinePool } from "@capi-ts/sdk/crd";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { crdVersionProblem } from "./crd-versions.js";

const spec = z.object({ size: z.number().int() });
const single = defineInfraMachinePool({
  group: "infrastructure.versions.capi-ts.dev",
  kind: "VerMachinePool",
  versions: ["v1beta1", "v1beta2"],
  spec,
});
const converted = defineInfraMachinePool({
  group: "infrastructure.versions.capi-ts.dev",
  kind: "VerMachinePool",
  versions: ["v1beta1", "v1beta2"],
  spec,
  spokes: {
    v1beta1: {
      spec: z.object({ count: z.number().int() }),
      toHub: (spoke: { spec: { count: number } }) => ({ spec: { size: spoke.spec.count } }),
      fromHub: (hub) => ({ spec: { count: hub.spec.size } }),
    },
  },
});

describe("crdVersionProblem", () => {
  it("passes one schema without conversion, and several with a webhook conversion", () => {
    expect(crdVersionProblem(single.crd)).toBeUndefined();
    expect(crdVersionProblem(converted.crd)).toBeUndefined();
    expect(crdVersionProblem(converted.templateCrd)).toBeUndefined();
  });

  it("fails several schemas without conversion, and two storage versions", () => {
    const unconverted = structuredClone(converted.crd) as unknown as {
      spec: Record<string, unknown>;
    };
    delete unconverted.spec.conversion;
    expect(crdVersionProblem(unconverted)?.check).toBe("crd.conversion");
    const twoStored = structuredClone(single.crd) as unknown as {
      spec: { versions: Array<{ storage: boolean }> };
    };
    for (const version of twoStored.spec.versions) version.storage = true;
    expect(crdVersionProblem(twoStored)).toMatchObject({
      check: "crd.storageVersion",
      message: expect.stringContaining("2 have storage: true"),
    });
  });
});
