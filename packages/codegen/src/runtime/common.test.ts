// Unit tests of the shared runtime that every generated folder carries. The golden and shared-CRD
// tests exercise it through generated code; these pin its own logic down directly.
import { describe, expect, test } from "vitest";
import * as c from "./common.js";

describe("applyDefaults", () => {
  const defaults: c.DefaultsNode = {
    properties: {
      spec: {
        properties: {
          replicas: { default: 1 },
          strategy: { default: { type: "RollingUpdate" }, properties: { type: {} } },
          paused: { default: false, nullable: true },
          template: { properties: { image: { default: "nginx" } } },
          items: { items: { properties: { weight: { default: 10 } } } },
          labels: { additionalProperties: { properties: { level: { default: "info" } } } },
        },
      },
    },
  };

  test("fills absent fields of objects that exist, recursively, and never creates a parent", () => {
    const object = {
      spec: {
        replicas: undefined,
        paused: null,
        items: [{}, { weight: 3 }],
        labels: { a: {}, b: { level: "debug" } },
      },
    };
    c.applyDefaults({ defaults }, object);
    expect(object).toEqual({
      spec: {
        replicas: 1,
        strategy: { type: "RollingUpdate" },
        // nullable: an explicit null stays
        paused: null,
        items: [{ weight: 10 }, { weight: 3 }],
        labels: { a: { level: "info" }, b: { level: "debug" } },
      },
    });
    // template was absent: its defaults do not create it
    expect(Object.hasOwn(object.spec, "template")).toBe(false);
  });

  test("a null non-nullable field takes the default; each object gets its own copy", () => {
    type Defaulted = { spec: { strategy: { type: string } } };
    const a = c.applyDefaults({ defaults }, { spec: { strategy: null } }) as unknown as Defaulted;
    const b = c.applyDefaults({ defaults }, { spec: {} }) as unknown as Defaulted;
    expect(a.spec.strategy).toEqual({ type: "RollingUpdate" });
    a.spec.strategy.type = "Recreate";
    expect(b.spec.strategy.type).toBe("RollingUpdate");
  });

  test('a field named "__proto__" is added as a field, not as the prototype', () => {
    // JSON.parse makes "__proto__" an own key, as a CRD's schema does; a literal would not.
    const proto = JSON.parse('{"properties":{"spec":{"properties":{"__proto__":{"default":7}}}}}');
    const object = { spec: {} } as { spec: object };
    c.applyDefaults({ defaults: proto as c.DefaultsNode }, object);
    expect(Object.getPrototypeOf(object.spec)).toBe(Object.prototype);
    expect(Object.getOwnPropertyDescriptor(object.spec, "__proto__")?.value).toBe(7);
  });

  test("no defaults: the object is returned untouched", () => {
    const object = { spec: {} };
    expect(c.applyDefaults({ defaults: undefined }, object)).toBe(object);
    expect(object).toEqual({ spec: {} });
  });
});

describe("formatFieldPath", () => {
  test("dots for names, brackets for indexes and for keys that are not identifiers", () => {
    expect(c.formatFieldPath([])).toBe("");
    expect(c.formatFieldPath(["spec", "taints", 0, "effect"])).toBe("spec.taints[0].effect");
    expect(c.formatFieldPath(["metadata", "labels", "app.kubernetes.io/name"])).toBe(
      'metadata.labels["app.kubernetes.io/name"]',
    );
  });
});

describe("validateOrThrow", () => {
  const Pool = c.zod(
    c.object<{ name: string; replicas?: number; zones?: string[] }>(
      {
        name: c.string({ minLength: 1, maxLength: 8, pattern: "^[a-z]+$" }),
        replicas: c.integer({ format: "int32", minimum: 0 }),
        zones: c.array(c.string(), { listType: "set", maxItems: 3 }),
      },
      { required: ["name"] },
    ),
  );

  test("returns the value when it matches", () => {
    expect(c.validateOrThrow(Pool, { name: "pool", replicas: 2 }, "Pool")).toEqual({
      name: "pool",
      replicas: 2,
    });
  });

  test("lists every problem with its Kubernetes field path", () => {
    let error: unknown;
    try {
      c.validateOrThrow(Pool, { name: "Pool-1", replicas: -1, zones: ["a", "a"] }, "Pool x");
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(c.SchemaValidationError);
    const issues = (error as c.SchemaValidationError).issues;
    expect(issues.map((issue) => issue.path)).toEqual(["name", "replicas", "zones[1]"]);
    expect((error as Error).message).toMatch(
      /^Pool x is invalid: name: must match \^\[a-z\]\+\$; /,
    );
    expect((error as Error).message).toContain('zones[1]: Duplicate value: "a"');
  });

  test("RE2 patterns run in linear time where a RegExp would backtrack for ever", () => {
    const schema = c.zod(c.string({ pattern: "^(a+)+$" }));
    const started = performance.now();
    expect(schema.safeParse(`${"a".repeat(5000)}!`).success).toBe(false);
    expect(performance.now() - started).toBeLessThan(1000);
  });

  test("map lists are unique by their key fields", () => {
    const list = c.zod(
      c.array(c.object<{ name: string; value?: string }>({ name: c.string(), value: c.string() }), {
        listType: "map",
        listMapKeys: ["name"],
      }),
    );
    expect(list.safeParse([{ name: "a" }, { name: "b" }]).success).toBe(true);
    const result = list.safeParse([
      { name: "a", value: "1" },
      { name: "a", value: "2" },
    ]);
    expect(result.error?.issues[0]?.message).toBe('Duplicate value: map keys name = ["a"]');
  });

  test("minProperties and maxProperties count the fields that are set", () => {
    const schema = c.zod(
      c.object<{ a?: string; b?: string }>(
        { a: c.string(), b: c.string() },
        { minProperties: 1, maxProperties: 1 },
      ),
    );
    expect(schema.safeParse({ a: "x" }).success).toBe(true);
    expect(schema.safeParse({ a: undefined }).error?.issues[0]?.message).toBe(
      "must have at least 1 properties",
    );
    expect(schema.safeParse({ a: "x", b: "y" }).error?.issues[0]?.message).toBe(
      "must have at most 1 properties",
    );
  });
});

describe("matchesValueValidation", () => {
  test("oneOf needs exactly one branch; not, enum and required as in a structural schema", () => {
    const rule: c.ValueValidation = {
      oneOf: [{ required: ["a"] }, { required: ["b"] }],
    };
    expect(c.matchesValueValidation(rule, { a: 1 })).toBe(true);
    expect(c.matchesValueValidation(rule, { a: 1, b: 2 })).toBe(false);
    expect(c.matchesValueValidation(rule, {})).toBe(false);
    expect(c.matchesValueValidation({ not: { enum: ["x"] } }, "x")).toBe(false);
    expect(c.matchesValueValidation({ enum: [{ a: 1, b: 2 }] }, { b: 2, a: 1 })).toBe(true);
    expect(
      c.matchesValueValidation({ properties: { n: { minimum: 1, maximum: 3 } } }, { n: 4 }),
    ).toBe(false);
    expect(c.matchesValueValidation({ items: { maxLength: 2 } }, ["ab", "abc"])).toBe(false);
  });

  test("withRules reports the branches a value misses", () => {
    const schema = c.zod(
      c.withRules(c.object<{ a?: number; b?: number }>({ a: c.integer(), b: c.integer() }), {
        anyOf: [{ required: ["a"] }, { required: ["b"] }],
      }),
    );
    expect(schema.safeParse({ b: 1 }).success).toBe(true);
    expect(schema.safeParse({}).error?.issues[0]?.message).toBe("must satisfy anyOf");
  });
});

describe("string formats", () => {
  test("date-time, byte and duration are checked", () => {
    expect(c.zod(c.string({ format: "date-time" })).safeParse("2026-12-01T10:00:00Z").success).toBe(
      true,
    );
    expect(c.zod(c.string({ format: "date-time" })).safeParse("yesterday").success).toBe(false);
    expect(c.zod(c.string({ format: "byte" })).safeParse("aGVsbG8=").success).toBe(true);
    expect(c.zod(c.string({ format: "duration" })).safeParse("1h30m").success).toBe(true);
    expect(
      c.zod(c.string({ format: "duration" })).safeParse("90 minutes").error?.issues[0]?.message,
    ).toBe("must be a duration such as 1h30m");
  });
});
