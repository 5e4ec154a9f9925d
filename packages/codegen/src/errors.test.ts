import { mkdir, readdir, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, describe, expect, test } from "vitest";
import { compileModule } from "./emit/compile.js";
import { CodegenError } from "./errors.js";
import { generate } from "./generate.js";
import { tempDir } from "./test-helpers.js";

const dirs: string[] = [];
afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

const goodCrd = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  names: { kind: Widget, plural: widgets }
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              properties:
                size: { type: integer }
`;

async function failure(text: string, source = "crds.yaml"): Promise<CodegenError> {
  try {
    await generate({ inputs: [{ source, text }] });
  } catch (error) {
    if (error instanceof CodegenError) return error;
    throw error;
  }
  throw new Error("expected a CodegenError");
}

describe("bad input is reported with file, document, version and JSON path", () => {
  test("broken YAML names the document and line", async () => {
    const error = await failure(`${goodCrd}---\napiVersion: v1\nkind: [unclosed\n`);
    expect(error.location).toMatchObject({ source: "crds.yaml", document: 1 });
    expect(error.message).toMatch(
      /^crds\.yaml \(document 1\): broken YAML at line 2\d, column \d+: .*fix the document/,
    );
  });

  test("a document that is not a CRD", async () => {
    const error = await failure(
      `${goodCrd}---\napiVersion: v1\nkind: ConfigMap\nmetadata: { name: x }\n`,
    );
    expect(error.message).toBe(
      'crds.yaml (document 1): not a CustomResourceDefinition (apiVersion "v1", kind "ConfigMap"); pass only CRD documents',
    );
  });

  test("a version without a schema", async () => {
    const error = await failure(goodCrd.replace(/ {6}schema:[\s\S]*$/, "      subresources: {}\n"));
    expect(error.location).toEqual({
      source: "crds.yaml",
      document: 0,
      version: "v1",
      path: "spec.versions[0].schema.openAPIV3Schema",
    });
    expect(error.problem).toMatch(
      /the version has no schema; add spec\.versions\[\]\.schema\.openAPIV3Schema/,
    );
  });

  test("a construct that cannot be mapped", async () => {
    const error = await failure(
      goodCrd.replace("size: { type: integer }", "size: { $ref: '#/definitions/Size' }"),
    );
    expect(error.message).toBe(
      'crds.yaml (document 0, version v1, at spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.size.$ref): the schema keyword "$ref" cannot be mapped (it is not allowed in a structural CRD schema); remove it or express it with supported keywords',
    );
  });

  test("an array without items and a node without a type", async () => {
    const noItems = await failure(
      goodCrd.replace("size: { type: integer }", "size: { type: array }"),
    );
    expect(noItems.location.path).toBe(
      "spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.size.items",
    );
    const noType = await failure(
      goodCrd.replace("size: { type: integer }", "size: { description: untyped }"),
    );
    expect(noType.problem).toMatch(/the schema has no type/);
  });

  test("an item of a List wrapper is located by its index", async () => {
    const list = {
      apiVersion: "v1",
      kind: "List",
      items: [{ apiVersion: "v1", kind: "Secret" }],
    };
    const error = await generate({ inputs: [{ source: "list.json", object: list }] }).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(CodegenError);
    expect((error as CodegenError).location).toMatchObject({
      source: "list.json",
      path: "items[0]",
    });
  });

  test("two different definitions of one kind", async () => {
    const other = goodCrd.replace("size: { type: integer }", "size: { type: string }");
    const error = await generate({
      inputs: [
        { source: "a.yaml", text: goodCrd },
        { source: "b.yaml", text: other },
      ],
    }).catch((e: unknown) => e);
    expect((error as Error).message).toMatch(
      /^b\.yaml \(document 0\): example\.com\/Widget is also defined, differently, in a\.yaml/,
    );
    // The same CRD twice (a folder and a file in it) is fine.
    const twice = await generate({
      inputs: [
        { source: "a.yaml", text: goodCrd },
        { source: "b.yaml", text: goodCrd },
      ],
    });
    expect(twice.groupVersions).toHaveLength(1);
  });

  test("a missing path and an empty folder", async () => {
    await expect(generate({ inputs: ["does/not/exist.yaml"] })).rejects.toThrow(
      "does/not/exist.yaml: no such file or folder; pass CRD YAML files or folders",
    );
    const dir = await tempDir("empty");
    dirs.push(dir);
    await expect(generate({ inputs: [dir] })).rejects.toThrow(
      "the folder contains no .yaml, .yml or .json file",
    );
  });

  test("v1beta1 CRDs are refused with what to do", async () => {
    const error = await failure(
      goodCrd.replace("apiextensions.k8s.io/v1", "apiextensions.k8s.io/v1beta1"),
    );
    expect(error.problem).toBe(
      "apiextensions.k8s.io/v1beta1 CRDs are not supported; convert the CRD to apiextensions.k8s.io/v1",
    );
  });
});

describe("inputs", () => {
  test("folders are searched recursively, multi-document streams and List wrappers are read", async () => {
    const dir = await tempDir("inputs");
    dirs.push(dir);
    await mkdir(join(dir, "nested"), { recursive: true });
    const gadget = goodCrd.replaceAll("Widget", "Gadget").replaceAll("widgets", "gadgets");
    await writeFile(
      join(dir, "nested", "two.yaml"),
      `${goodCrd}---\n# comment only\n---\n${gadget}`,
    );
    const thing = JSON.parse(
      JSON.stringify({
        apiVersion: "v1",
        kind: "List",
        items: [
          {
            apiVersion: "apiextensions.k8s.io/v1",
            kind: "CustomResourceDefinition",
            metadata: { name: "things.example.com" },
            spec: {
              group: "example.com",
              names: { kind: "Thing", plural: "things" },
              scope: "Cluster",
              versions: [
                {
                  name: "v1",
                  served: true,
                  storage: true,
                  schema: { openAPIV3Schema: { type: "object" } },
                },
              ],
            },
          },
        ],
      }),
    );
    await writeFile(join(dir, "list.json"), JSON.stringify(thing));
    await writeFile(join(dir, "README.md"), "not yaml");
    const result = await generate({ inputs: [dir] });
    expect(result.groupVersions).toEqual([
      {
        group: "example.com",
        version: "v1",
        alias: "examplev1",
        path: "example.com/v1.ts",
        kinds: ["Gadget", "Thing", "Widget"],
      },
    ]);
    expect(await readdir(dir)).not.toContain("example.com");
  });

  test("standard input", async () => {
    const result = await generate({ inputs: ["-"], readStdin: async () => goodCrd });
    expect(result.groupVersions.map((gv) => gv.kinds)).toEqual([["Widget"]]);
  });

  test("--group filters, and says so when nothing is left", async () => {
    const result = await generate({
      inputs: [{ source: "a.yaml", text: goodCrd }],
      groups: ["example.com"],
    });
    expect(result.groupVersions).toHaveLength(1);
    await expect(
      generate({ inputs: [{ source: "a.yaml", text: goodCrd }], groups: ["other.io"] }),
    ).rejects.toThrow("no CRDs of the groups other.io found in the input");
  });

  test("an unknown runtime form is refused", async () => {
    await expect(
      // @ts-expect-error not a runtime form
      generate({ inputs: [{ source: "a.yaml", text: goodCrd }], runtime: "javascript" }),
    ).rejects.toThrow('runtime must be "compiled" or "source", not "javascript"');
  });

  test("a module the compiler cannot turn into declarations is reported as a generator bug", () => {
    // An export without a type annotation: declarations would need inference.
    expect(() =>
      compileModule("x.runtime.ts", "export const x = [1].map((n) => n + 1);\n"),
    ).toThrow(
      /produced a module it cannot compile \(x\.runtime\.ts:1: .*\); this is a bug in the generator/,
    );
    expect(compileModule("y.runtime.ts", "export const y: number = 1;\n")).toEqual({
      js: "export const y = 1;\n",
      dts: "export declare const y: number;\n",
    });
  });
});
