import { readdirSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import { loadAll } from "js-yaml";
import { describe, expect, it } from "vitest";
import { compileRule, normalizeRuleFieldPath, toCelValue } from "./cel.js";
import { crdFolders } from "./crd-fixtures.test-support.js";
import type { SchemaNode } from "./types.js";

/** Every distinct `x-kubernetes-validations` rule in the CAPI and AWS provider CRDs. */
function allRules(): Set<string> {
  const rules = new Set<string>();
  const walk = (node: unknown): void => {
    if (Array.isArray(node)) {
      for (const item of node) walk(item);
      return;
    }
    if (node === null || typeof node !== "object") return;
    const record = node as Record<string, unknown>;
    const validations = record["x-kubernetes-validations"];
    if (Array.isArray(validations)) {
      for (const v of validations) rules.add(String((v as { rule: unknown }).rule));
    }
    for (const value of Object.values(record)) walk(value);
  };
  for (const dir of Object.values(crdFolders)) {
    for (const file of readdirSync(dir).filter((f) => f.endsWith(".yaml"))) {
      for (const doc of loadAll(readFileSync(resolve(dir, file), "utf8"))) {
        walk((doc as { spec: unknown }).spec);
      }
    }
  }
  return rules;
}

function rule(source: string) {
  const compiled = compileRule({ rule: source }, "test");
  if ("error" in compiled) throw new Error(`${source}: ${compiled.error.error}`);
  return compiled.rule;
}

const STRING: SchemaNode = {
  type: "string",
  preserveUnknownFields: false,
  embeddedResource: false,
  intOrString: false,
  nullable: false,
  hasDefault: false,
};

describe("CEL rules of CAPI's and the AWS provider's CRDs", () => {
  it("all compile", () => {
    const rules = allRules();
    expect(rules.size).toBeGreaterThanOrEqual(10);
    for (const source of rules) {
      const compiled = compileRule({ rule: source }, "test");
      expect("error" in compiled ? compiled.error.error : "ok", source).toBe("ok");
    }
  });

  // Each distinct rule, with a value it accepts and one it rejects.
  const cases: [string, unknown, unknown][] = [
    [
      "self.all(x, self.exists_one(y, x.name == y.name))",
      [{ name: "a" }, { name: "b" }],
      [{ name: "a" }, { name: "a" }],
    ],
    ["self.all(x, self.exists_one(y, x == y))", ["m1", "m2"], ["m1", "m1"]],
    [
      "!(self in ['Ready','Available','HealthCheckSucceeded','OwnerRemediated','ExternallyRemediated'])",
      "NodeHealthy",
      "Ready",
    ],
    [
      "self.matches('^(Linux|LinuxSwap|LinuxRAID|LVM|Fat32|NTFS|LinuxExtended|[0-9A-Fa-f]{8}(-[0-9A-Fa-f]{4}){3}-[0-9A-Fa-f]{12})$')",
      "0FC63DAF-8483-4772-8E79-3D69D8477DE4",
      "ext4",
    ],
    [
      "[has(self.layout),has(self.diskLayout)].filter(x,x==true).size() == 1",
      { layout: true },
      { layout: true, diskLayout: [] },
    ],
    ["self.startsWith('cagw-')", "cagw-123", "igw-123"],
    ["self in ['none','amazon-pool']", "amazon-pool", "byoip"],
    [
      "!has(self.capacityReservationId) || !has(self.marketType) || self.marketType != 'Spot'",
      { capacityReservationId: "cr-1", marketType: "OnDemand" },
      { capacityReservationId: "cr-1", marketType: "Spot" },
    ],
    [
      "!has(self.capacityReservationId) || !has(self.spotMarketOptions)",
      { spotMarketOptions: {} },
      { capacityReservationId: "cr-1", spotMarketOptions: {} },
    ],
  ];
  for (const [source, good, bad] of cases) {
    it(`evaluates ${source.slice(0, 60)}`, () => {
      const compiled = rule(source);
      expect(compiled.evaluate(toCelValue(undefined, good), null, false)).toBe(true);
      expect(compiled.evaluate(toCelValue(undefined, bad), null, false)).toBe(false);
    });
  }

  it("treats self == oldSelf as a transition rule", () => {
    const compiled = rule("self == oldSelf");
    expect(compiled.usesOldSelf).toBe(true);
    expect(compiled.evaluate("a", "a", true)).toBe(true);
    expect(compiled.evaluate("b", "a", true)).toBe(false);
    expect(rule("self.oldSelfish == 1").usesOldSelf).toBe(false);
    expect(rule("'oldSelf' == self").usesOldSelf).toBe(false);
  });

  it("gives integer fields CEL ints and number fields doubles", () => {
    const integer: SchemaNode = { ...STRING, type: "integer" };
    const number: SchemaNode = { ...STRING, type: "number" };
    expect(toCelValue(integer, 3)).toBe(3n);
    expect(toCelValue(number, 3)).toBe(3);
    expect(rule("self + 1 == 4").evaluate(toCelValue(integer, 3), null, false)).toBe(true);
  });

  it("supports optionalOldSelf", () => {
    const compiled = compileRule(
      { rule: "!oldSelf.hasValue() || self >= oldSelf.value()", optionalOldSelf: true },
      "test",
    );
    if ("error" in compiled) throw new Error(compiled.error.error);
    expect(compiled.rule.evaluate(1n, null, false)).toBe(true);
    expect(compiled.rule.evaluate(1n, 2n, true)).toBe(false);
  });

  it("normalises fieldPath like the server", () => {
    expect(normalizeRuleFieldPath(".spec.foo")).toBe("spec.foo");
    expect(normalizeRuleFieldPath(".labels['a.b/c']")).toBe("labels.a.b/c");
    expect(normalizeRuleFieldPath(".list[2].name")).toBe("list[2].name");
    expect(() => normalizeRuleFieldPath("spec")).toThrowError(/invalid fieldPath/);
  });
});
