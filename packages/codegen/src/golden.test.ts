// Golden tests: one small inline CRD per tricky construct. The emitted module is compared with a
// committed golden file (test/golden/*.golden; update with `./dev test -u`), then loaded and run.
import { rm } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { z } from "zod";
import { generate } from "./generate.js";
import { generateInto, importModule, typecheck, writeText } from "./test-helpers.js";

type Schema = Record<string, unknown>;
type Module = Record<string, unknown>;

const GROUP = "probes.example.com";

function crd(
  kind: string,
  spec: Schema,
  extra: { versions?: Schema[]; status?: Schema } = {},
): Schema {
  const schema: Schema = {
    type: "object",
    description: `${kind} exercises one schema construct.`,
    properties: {
      apiVersion: { type: "string" },
      kind: { type: "string" },
      metadata: { type: "object" },
      spec,
      ...(extra.status === undefined ? {} : { status: extra.status }),
    },
  };
  return {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: {
      name: `${kind.toLowerCase()}s.${GROUP}`,
      labels: { "cluster.x-k8s.io/v1beta2": "v1" },
    },
    spec: {
      group: GROUP,
      names: {
        kind,
        listKind: `${kind}List`,
        plural: `${kind.toLowerCase()}s`,
        singular: kind.toLowerCase(),
      },
      scope: "Namespaced",
      versions: extra.versions ?? [
        {
          name: "v1",
          served: true,
          storage: true,
          schema: { openAPIV3Schema: schema },
          subresources: { status: {} },
        },
      ],
    },
  };
}

const obj = (properties: Schema, more: Schema = {}): Schema => ({
  type: "object",
  properties,
  ...more,
});

const PROBES: Record<string, Schema> = {
  "int-or-string": crd(
    "IntOrStringProbe",
    obj({
      maxSurge: {
        anyOf: [{ type: "integer" }, { type: "string" }],
        "x-kubernetes-int-or-string": true,
      },
      bare: { "x-kubernetes-int-or-string": true, description: "Only the extension, no anyOf." },
      nullableSurge: { "x-kubernetes-int-or-string": true, nullable: true },
    }),
  ),
  "preserve-unknown-fields": crd(
    "FreeFormProbe",
    obj({
      value: { "x-kubernetes-preserve-unknown-fields": true, description: "Any JSON value." },
      config: { type: "object", "x-kubernetes-preserve-unknown-fields": true },
      typed: obj({ known: { type: "string" } }, { "x-kubernetes-preserve-unknown-fields": true }),
      labels: { type: "object", additionalProperties: { type: "string" }, maxProperties: 2 },
      empty: { type: "object" },
    }),
  ),
  "embedded-resource": crd(
    "EmbeddedProbe",
    obj({
      template: {
        type: "object",
        "x-kubernetes-embedded-resource": true,
        "x-kubernetes-preserve-unknown-fields": true,
      },
      typedTemplate: obj(
        { spec: obj({ size: { type: "integer" } }) },
        { "x-kubernetes-embedded-resource": true },
      ),
    }),
  ),
  "list-types": crd(
    "ListProbe",
    obj({
      tags: {
        type: "array",
        items: { type: "string" },
        "x-kubernetes-list-type": "set",
        maxItems: 3,
      },
      ports: {
        type: "array",
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["name", "protocol"],
        minItems: 1,
        items: obj(
          {
            name: { type: "string" },
            protocol: { type: "string" },
            port: { type: "integer", format: "int32" },
          },
          { required: ["name", "protocol"] },
        ),
      },
      atomic: { type: "array", items: { type: "string" }, "x-kubernetes-list-type": "atomic" },
      selector: obj(
        { matchLabels: { type: "object", additionalProperties: { type: "string" } } },
        { "x-kubernetes-map-type": "atomic" },
      ),
    }),
  ),
  defaults: crd(
    "DefaultsProbe",
    obj({
      replicas: { type: "integer", default: 1 },
      strategy: obj(
        {
          type: { type: "string", default: "RollingUpdate" },
          rollingUpdate: obj({ maxSurge: { "x-kubernetes-int-or-string": true, default: "25%" } }),
        },
        { default: {} },
      ),
      optionalBlock: obj({ enabled: { type: "boolean", default: true } }),
      containers: {
        type: "array",
        items: obj({
          name: { type: "string" },
          pullPolicy: { type: "string", default: "IfNotPresent" },
        }),
      },
      volumes: {
        type: "object",
        additionalProperties: obj({ sizeGi: { type: "integer", default: 10 } }),
      },
      nullableMode: { type: "string", nullable: true, default: "auto" },
      mode: { type: "string", default: "fast" },
    }),
  ),
  validation: crd(
    "ValidationProbe",
    obj(
      {
        name: { type: "string", minLength: 1, maxLength: 8, pattern: "^[a-z]+$" },
        phase: { type: "string", enum: ["Pending", "Running", ""] },
        count: {
          type: "integer",
          format: "int32",
          minimum: 0,
          maximum: 10,
          exclusiveMaximum: true,
        },
        big: { type: "integer", format: "int64" },
        ratio: { type: "number", multipleOf: 0.5 },
        when: { type: "string", format: "date-time" },
        blob: { type: "string", format: "byte" },
        timeout: { type: "string", format: "duration" },
        note: { type: "string", nullable: true },
        capacity: { type: "string", allOf: [{ enum: ["a", "b", "c"] }, { enum: ["b", "c", "d"] }] },
        items: { type: "array", items: { type: "string" }, minItems: 1, maxItems: 2 },
        either: obj(
          { a: { type: "string" }, b: { type: "string" } },
          { anyOf: [{ required: ["a"] }, { required: ["b"] }] },
        ),
        exactlyOne: obj(
          { a: { type: "string" }, b: { type: "string" } },
          { oneOf: [{ required: ["a"] }, { required: ["b"] }] },
        ),
        notEmpty: { type: "string", not: { enum: [""] } },
        props: { type: "object", additionalProperties: { type: "integer" }, minProperties: 1 },
        rules: obj(
          { min: { type: "integer" }, max: { type: "integer" } },
          {
            "x-kubernetes-validations": [
              { rule: "self.min <= self.max", message: "min must not exceed max" },
              {
                rule: "!has(oldSelf.min) || self.min == oldSelf.min",
                message: "min is immutable",
                reason: "FieldValueForbidden",
              },
            ],
          },
        ),
      },
      {
        required: ["name"],
        "x-kubernetes-validations": [
          { rule: "self.name != 'forbidden'", message: "name is reserved" },
        ],
      },
    ),
  ),
  versions: crd("VersionsProbe", obj({}), {
    versions: [
      {
        name: "v1alpha1",
        served: true,
        storage: false,
        deprecated: true,
        deprecationWarning: "probes.example.com/v1alpha1 VersionsProbe is deprecated; use v1",
        schema: { openAPIV3Schema: obj({ spec: obj({ old: { type: "string" } }) }) },
      },
      {
        name: "v1beta1",
        served: false,
        storage: false,
        schema: { openAPIV3Schema: obj({ spec: obj({ gone: { type: "string" } }) }) },
      },
      {
        name: "v1",
        served: true,
        storage: true,
        schema: { openAPIV3Schema: obj({ spec: obj({ current: { type: "string" } }) }) },
        subresources: {
          status: {},
          scale: { specReplicasPath: ".spec.replicas", statusReplicasPath: ".status.replicas" },
        },
      },
    ],
  }),
  docs: crd(
    "DocsProbe",
    obj({
      tricky: {
        type: "string",
        description:
          "Ends a comment */ early, mentions @deprecated and {@link Foo}, keeps `code */ @x` and <html>.",
      },
      old: {
        type: "string",
        description: "old is kept for compatibility.\n\nDeprecated: use new instead.",
      },
      "x-dashed": { type: "string" },
      "0start": { type: "boolean" },
    }),
  ),
  "shared-types": crd(
    "SharedProbe",
    obj({
      primaryRef: obj(
        { name: { type: "string" }, kind: { type: "string" } },
        { description: "The primary reference.", required: ["name"] },
      ),
      secondaryRef: obj(
        { name: { type: "string" }, kind: { type: "string" } },
        { description: "The secondary reference.", required: ["name"] },
      ),
      conditions: {
        type: "array",
        items: obj({ type: { type: "string" }, status: { type: "string" } }),
      },
    }),
    {
      status: obj({
        conditions: {
          type: "array",
          items: obj({ type: { type: "string" }, status: { type: "string" } }),
        },
      }),
    },
  ),
};

let dir = "";
let modules: Record<string, Module> = {};
let common: Module = {};

beforeAll(async () => {
  ({ dir } = await generateInto(
    {
      inputs: Object.entries(PROBES).map(([name, object]) => ({ source: `${name}.yaml`, object })),
    },
    "golden",
  ));
  modules = {
    v1: await importModule<Module>(join(dir, GROUP, "v1.ts")),
    v1alpha1: await importModule<Module>(join(dir, GROUP, "v1alpha1.ts")),
  };
  common = await importModule<Module>(join(dir, "common.js"));
}, 60_000);

afterAll(async () => {
  if (dir !== "") await rm(dir, { recursive: true, force: true });
});

describe("golden output", () => {
  test.each(Object.keys(PROBES))("%s", async (name) => {
    // The runtime as TypeScript: the readable form, which the default output is compiled from.
    const { files } = await generate({
      inputs: [{ source: `${name}.yaml`, object: PROBES[name] }],
      runtime: "source",
    });
    const module = files.filter((f) => f.path.startsWith(`${GROUP}/`));
    await expect(module.map((f) => `// ${f.path}\n${f.content}`).join("\n")).toMatchFileSnapshot(
      `../test/golden/${name}.golden`,
    );
  });
});

function parse(kind: string, spec: unknown, version = "v1"): string[] {
  const schema = modules[version]?.[`${kind}Schema`] as z.ZodType;
  const result = schema.safeParse({ apiVersion: `${GROUP}/${version}`, kind, spec });
  if (result.success) return [];
  const format = common.formatFieldPath as (path: readonly PropertyKey[]) => string;
  return result.error.issues.map((issue) => `${format(issue.path)}: ${issue.message}`);
}

describe("behaviour of the generated schemas", () => {
  test("int-or-string accepts integers and strings only", () => {
    expect(parse("IntOrStringProbe", { maxSurge: 3, bare: "25%", nullableSurge: null })).toEqual(
      [],
    );
    expect(parse("IntOrStringProbe", { maxSurge: true })).toHaveLength(1);
    expect(parse("IntOrStringProbe", { bare: 1.5 })).toHaveLength(1);
    expect(parse("IntOrStringProbe", { maxSurge: null })).toHaveLength(1);
  });

  test("preserve-unknown-fields keeps any JSON; maps check values and counts", () => {
    expect(
      parse("FreeFormProbe", {
        value: [1, "a", { b: null }],
        config: { x: { y: 1 } },
        typed: { known: "k", extra: 1 },
      }),
    ).toEqual([]);
    expect(parse("FreeFormProbe", { value: 1 })).toEqual([]);
    expect(parse("FreeFormProbe", { typed: { known: 1 } })).toEqual([
      "spec.typed.known: Invalid input: expected string, received number",
    ]);
    expect(parse("FreeFormProbe", { labels: { a: 1 } })).toHaveLength(1);
    expect(parse("FreeFormProbe", { labels: { a: "1", b: "2", c: "3" } })).toEqual([
      "spec.labels: must have at most 2 properties",
    ]);
    expect(parse("FreeFormProbe", { empty: {} })).toEqual([]);
    expect(parse("FreeFormProbe", { empty: { x: 1 } })).toHaveLength(1);
  });

  test("embedded resources need apiVersion and kind and get typed metadata", () => {
    const pod = {
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: "p", labels: { a: "b" } },
      spec: { anything: true },
    };
    expect(
      parse("EmbeddedProbe", {
        template: pod,
        typedTemplate: { apiVersion: "v1", kind: "X", spec: { size: 1 } },
      }),
    ).toEqual([]);
    expect(
      parse("EmbeddedProbe", { template: { metadata: {} } }).map((i) => i.split(":")[0]),
    ).toEqual(["spec.template.apiVersion", "spec.template.kind"]);
    expect(parse("EmbeddedProbe", { template: { ...pod, metadata: { name: 3 } } })).toHaveLength(1);
  });

  test("list types: set items unique, map items unique by their keys, bounds checked", () => {
    expect(
      parse("ListProbe", {
        tags: ["a", "b"],
        ports: [
          { name: "http", protocol: "TCP" },
          { name: "http", protocol: "UDP" },
        ],
      }),
    ).toEqual([]);
    expect(parse("ListProbe", { tags: ["a", "a"] })).toEqual([
      'spec.tags[1]: Duplicate value: "a"',
    ]);
    expect(
      parse("ListProbe", {
        ports: [
          { name: "h", protocol: "TCP", port: 1 },
          { name: "h", protocol: "TCP", port: 2 },
        ],
      }),
    ).toEqual(['spec.ports[1]: Duplicate value: map keys name, protocol = ["h","TCP"]']);
    expect(
      parse("ListProbe", { tags: ["a", "b", "c", "d"], ports: [] }).map((i) => i.split(":")[0]),
    ).toEqual(["spec.tags", "spec.ports"]);
    expect(parse("ListProbe", { atomic: ["a", "a"] })).toEqual([]);
  });

  test("list-type, map-type and CEL rules are kept as metadata on the schemas", () => {
    const v1 = modules.v1 ?? {};
    const registry = z.globalRegistry;
    expect(registry.get(v1.ValidationProbeSpecRulesSchema as z.ZodType)).toMatchObject({
      "x-kubernetes-validations": [
        { rule: "self.min <= self.max", message: "min must not exceed max" },
        {
          rule: "!has(oldSelf.min) || self.min == oldSelf.min",
          message: "min is immutable",
          reason: "FieldValueForbidden",
        },
      ],
    });
    expect(registry.get(v1.ValidationProbeSpecSchema as z.ZodType)).toMatchObject({
      "x-kubernetes-validations": [{ rule: "self.name != 'forbidden'" }],
    });
    expect(registry.get(v1.ListProbeSpecSelectorSchema as z.ZodType)).toMatchObject({
      "x-kubernetes-map-type": "atomic",
    });
  });

  test("applyDefaults mirrors API-server defaulting", () => {
    const applyDefaults = common.applyDefaults as <T>(r: unknown, o: T) => T;
    const resource = modules.v1?.DefaultsProbeResource;
    const object = {
      spec: {
        containers: [{ name: "a" }, { name: "b", pullPolicy: "Always" }],
        volumes: { data: {}, logs: { sizeGi: 1 } },
        nullableMode: null,
        mode: null,
      },
    };
    applyDefaults(resource, object);
    expect(object.spec).toEqual({
      replicas: 1,
      // the defaulted object gets its own defaults; rollingUpdate is absent, so its maxSurge default is not applied
      strategy: { type: "RollingUpdate" },
      // optionalBlock is absent: its field default does not create it
      containers: [
        { name: "a", pullPolicy: "IfNotPresent" },
        { name: "b", pullPolicy: "Always" },
      ],
      volumes: { data: { sizeGi: 10 }, logs: { sizeGi: 1 } },
      // null is kept for a nullable field and replaced for a non-nullable one
      nullableMode: null,
      mode: "fast",
    });
    const withBlocks = { spec: { optionalBlock: {}, strategy: { rollingUpdate: {} } } };
    applyDefaults(resource, withBlocks);
    expect(withBlocks.spec.optionalBlock).toEqual({ enabled: true });
    expect(withBlocks.spec.strategy).toEqual({
      type: "RollingUpdate",
      rollingUpdate: { maxSurge: "25%" },
    });
    // defaults are copies, not shared references
    const a = applyDefaults(resource, { spec: {} }) as { spec: { strategy: object } };
    const b = applyDefaults(resource, { spec: {} }) as { spec: { strategy: object } };
    expect(a.spec.strategy).not.toBe(b.spec.strategy);
    expect(applyDefaults(resource, {})).toEqual({});
  });

  test("OpenAPI value validations", () => {
    const ok = {
      name: "abc",
      phase: "",
      count: 9,
      big: 2 ** 40,
      ratio: 1.5,
      when: "2026-01-01T00:00:00Z",
      blob: "aGVsbG8=",
      timeout: "1h30m",
      note: null,
      capacity: "c",
    };
    expect(parse("ValidationProbe", ok)).toEqual([]);
    const paths = (spec: Record<string, unknown>) =>
      parse("ValidationProbe", { name: "abc", ...spec }).map((i) => i.split(":")[0]);
    expect(paths({ name: "ABC" })).toEqual(["spec.name"]);
    expect(paths({ name: "abcdefghi" })).toEqual(["spec.name"]);
    expect(paths({ phase: "Done" })).toEqual(["spec.phase"]);
    expect(paths({ count: 10 })).toEqual(["spec.count"]);
    expect(paths({ count: -1 })).toEqual(["spec.count"]);
    expect(paths({ count: 2 ** 31 })).toEqual(["spec.count", "spec.count"]);
    expect(paths({ big: 2 ** 60 })).toEqual(["spec.big"]);
    expect(paths({ ratio: 1.2 })).toEqual(["spec.ratio"]);
    expect(paths({ when: "2026-01-01" })).toEqual(["spec.when"]);
    expect(paths({ blob: "not base64!" })).toEqual(["spec.blob"]);
    expect(paths({ timeout: "soon" })).toEqual(["spec.timeout"]);
    expect(paths({ capacity: "a" })).toEqual(["spec.capacity"]);
    expect(paths({ items: [] })).toEqual(["spec.items"]);
    expect(paths({ items: ["a", "b", "c"] })).toEqual(["spec.items"]);
    expect(paths({ either: {} })).toEqual(["spec.either"]);
    expect(paths({ either: { b: "x" } })).toEqual([]);
    expect(paths({ exactlyOne: { a: "x", b: "y" } })).toEqual(["spec.exactlyOne"]);
    expect(paths({ notEmpty: "" })).toEqual(["spec.notEmpty"]);
    expect(paths({ props: {} })).toEqual(["spec.props"]);
    expect(parse("ValidationProbe", {}).map((i) => i.split(":")[0])).toEqual(["spec.name"]);
  });

  test("every served version is emitted; unserved ones are not; deprecation is recorded", () => {
    expect(modules.v1alpha1?.VersionsProbeResource).toMatchObject({
      deprecated: true,
      deprecationWarning: "probes.example.com/v1alpha1 VersionsProbe is deprecated; use v1",
      servedVersions: ["v1alpha1", "v1"],
      storageVersion: "v1",
      labels: { "cluster.x-k8s.io/v1beta2": "v1" },
    });
    expect(modules.v1?.VersionsProbeResource).toMatchObject({
      deprecated: false,
      subresources: {
        status: true,
        scale: { specReplicasPath: ".spec.replicas", statusReplicasPath: ".status.replicas" },
      },
    });
  });

  test("structurally equal nested objects share one named type", () => {
    const v1 = modules.v1 ?? {};
    expect(v1.SharedProbeSpecPrimaryRefSchema).toBeDefined();
    expect(v1.SharedProbeSpecSecondaryRefSchema).toBeUndefined();
    expect(v1.SharedProbeSpecConditionSchema).toBeDefined();
    expect(v1.SharedProbeStatusConditionSchema).toBeUndefined();
  });

  test("everything type-checks, and the types accept and reject the right values", async () => {
    await writeText(
      join(dir, "consumer.ts"),
      `import type * as v1 from "./${GROUP}/v1.js";
import { applyDefaults } from "./index.js";
export const a: v1.IntOrStringProbeSpec = { maxSurge: "25%", bare: 3, nullableSurge: null };
// @ts-expect-error int-or-string is not boolean
export const b: v1.IntOrStringProbeSpec = { maxSurge: true };
export const c: v1.FreeFormProbeSpec = { value: { a: [1, "x", null] }, config: { k: 1 }, typed: { known: "k", extra: [1] }, labels: { a: "b" }, empty: {} };
// @ts-expect-error not JSON
export const d: v1.FreeFormProbeSpec = { value: new Map() };
// @ts-expect-error typed field of a preserving object keeps its type
export const e: v1.FreeFormProbeSpec = { typed: { known: 1 } };
export const f: v1.EmbeddedProbeSpec = { template: { apiVersion: "v1", kind: "Pod", metadata: { name: "p" }, spec: {} } };
// @ts-expect-error an embedded resource needs kind
export const g: v1.EmbeddedProbeSpec = { template: { apiVersion: "v1" } };
export const h: v1.ValidationProbeSpec = { name: "n", phase: "", note: null, capacity: "b" };
// @ts-expect-error allOf enums intersect to b | c
export const i: v1.ValidationProbeSpec = { name: "n", capacity: "a" };
export const j: v1.DocsProbeSpec = { "x-dashed": "x", "0start": true };
export const k = applyDefaults({ defaults: undefined }, { x: 1 });
`,
    );
    expect(await typecheck(dir)).toEqual([]);
  }, 240_000);
});
