import { describe, expect, test } from "vitest";
import { compileModule } from "./compile.js";
import { compileRuntimeDialect } from "./fast-compile.js";

// What the generator writes in a runtime module, in small. The shared-CRD test runs every real
// module through both compilers; these pin down the edges.
const MODULE = `/** Runtime part. */
import { createTypeMetaGuard, Model, type ModelData, type TypeMetaGuard } from "@kubernetes-models/base";
import type { z } from "zod";
import * as c from "../common.js";
import type * as t from "./v1.js";

const $Widget = c.object<t.Widget>({
  type: c.literals<"a;b" | "c">(["a;b", "c"]),
  note: c.string({ pattern: "^<t.X>(a|b)?$ /* not a comment */" }),
  as: c.boolean(),
}, { required: ["type"] });

/** zod schema of \`Widget\`. */
export const WidgetSchema: z.ZodType<t.Widget> = c.zod($Widget);

const WidgetDefaults: c.DefaultsNode = { properties: { type: { default: "c" } } };

/** Instance type. */
export interface WidgetModel extends t.Widget {}
`;

describe("compileRuntimeDialect", () => {
  test("types go, values stay, strings are never touched; declarations keep their docs", () => {
    const fast = compileRuntimeDialect(MODULE);
    expect(fast).toBeDefined();
    expect(fast?.js).toBe(
      [
        'import { createTypeMetaGuard, Model } from "@kubernetes-models/base";',
        'import * as c from "../common.js";',
        "const $Widget = c.object({",
        '  type: c.literals(["a;b", "c"]),',
        '  note: c.string({ pattern: "^<t.X>(a|b)?$ /* not a comment */" }),',
        "  as: c.boolean(),",
        '}, { required: ["type"] });',
        "export const WidgetSchema = c.zod($Widget);",
        'const WidgetDefaults = { properties: { type: { default: "c" } } };',
        "",
      ].join("\n"),
    );
    // The declarations are TypeScript's own, byte for byte.
    expect(fast?.dts).toBe(compileModule("v1.runtime.ts", MODULE).dts);
  });

  test.each([
    ["an arrow function", "const f = c.object({ a: (x) => x });\n"],
    ["a template literal", "const s = c.string({ pattern: `a` });\n"],
    ["a cast", "const s = c.string() as unknown;\n"],
    ["a regex literal", "const s = c.string({ pattern: /a/ });\n"],
    ["an exported const without a type", "export const s = c.string();\n"],
    ["a function", "export function f(): void {}\n"],
    ["a comparison", "const b = c.integer({ maximum: 1 < 2 });\n"],
  ])(
    "%s is outside the dialect: undefined, with the reason, for TypeScript to compile",
    (_, source) => {
      const reasons: string[] = [];
      expect(compileRuntimeDialect(source, (reason) => reasons.push(reason))).toBeUndefined();
      expect(reasons).toHaveLength(1);
    },
  );
});
