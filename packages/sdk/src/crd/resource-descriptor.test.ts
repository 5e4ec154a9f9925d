import { describe, expect, expectTypeOf, test } from "vitest";
import { z } from "zod";
import { isNamespaced, type ResourceDescriptor } from "../runtime/index.js";
import { defineInfraMachinePool } from "./index.js";

describe("a defined kind's resource", () => {
  const definition = defineInfraMachinePool({
    group: "infrastructure.example.com",
    kind: "ExampleMachinePool",
    versions: ["v1beta2"],
    spec: z.object({ size: z.string() }),
    status: z.object({}),
  });

  test("is a runtime ResourceDescriptor as is, for the pool and its template", () => {
    expectTypeOf(definition.resource).toExtend<ResourceDescriptor>();
    expectTypeOf(definition.templateResource).toExtend<ResourceDescriptor>();
    expect(definition.resource).toMatchObject({
      kind: "ExampleMachinePool",
      plural: "examplemachinepools",
      subresources: { status: true },
    });
    expect(definition.templateResource).toMatchObject({
      kind: "ExampleMachinePoolTemplate",
      subresources: { status: false },
    });
    expect(isNamespaced(definition.resource)).toBe(true);
  });
});
