import { describe, expect, it } from "vitest";
import { importCycles, importGraph, importsOf, phaseImports } from "./import-graph.js";

const cyclesOf = (files: Record<string, string>) =>
  importCycles(importGraph(new Map(Object.entries(files))));

describe("importsOf", () => {
  it("reads type-only imports and re-exports as imports, each on its keyword's line", () => {
    const text = [
      'import type { A } from "./a.js";',
      'import { type B } from "./b.js";',
      "",
      'export type * from "./c.js";',
      'export { d } from "./d.js";',
      'const e = await import("./e.js");',
    ].join("\n");
    expect(importsOf(text)).toEqual([
      { specifier: "./a.js", line: 1 },
      { specifier: "./b.js", line: 2 },
      { specifier: "./c.js", line: 4 },
      { specifier: "./d.js", line: 5 },
      { specifier: "./e.js", line: 6 },
    ]);
  });
});

describe("phaseImports", () => {
  it("refuses a phase importing another phase or the pipeline", () => {
    const scale = [
      'import { need } from "../state.js";',
      'import { publishInstances } from "./publish.js";',
      'import type { PoolPhase } from "../pipeline.js";',
    ].join("\n");
    expect(phaseImports("provider/phases/scale.ts", scale)).toEqual([
      { specifier: "./publish.js", line: 2 },
      { specifier: "../pipeline.js", line: 3 },
    ]);
  });

  it("lets a phase import the rest of the kit, and the pipeline import the phases", () => {
    const scale = 'import { need } from "../state.js";\nimport { z } from "zod";';
    expect(phaseImports("provider/phases/scale.ts", scale)).toEqual([]);
    const pipeline = 'import { scalePhase } from "./phases/scale.js";';
    expect(phaseImports("provider/pipeline.ts", pipeline)).toEqual([]);
  });
});

describe("importCycles", () => {
  it("reports a cycle inside a folder once, from its first file, type-only edges included", () => {
    expect(
      cyclesOf({
        "machine.ts": 'import type { Manifest } from "./define.js";',
        "define.ts": 'import { infraMachineDefinition } from "./machine.js";',
        "index.ts": 'export { defineInfraMachinePool } from "./define.js";',
      }),
    ).toEqual([["define.ts", "machine.ts", "define.ts"]]);
  });

  it("reports nothing for a graph without a cycle", () => {
    expect(
      cyclesOf({
        "define.ts":
          'import { infraMachineDefinition } from "./machine.js";\nimport type { Manifest } from "./manifest.js";',
        "machine.ts": 'import type { Manifest } from "./manifest.js";',
        "manifest.ts": "export interface Manifest { kind: string }",
        "index.ts": 'export * from "./define.js";\nexport * from "./machine.js";',
      }),
    ).toEqual([]);
  });

  it("follows imports into and out of subfolders, which belong to the folder's graph", () => {
    expect(
      cyclesOf({
        "pipeline.ts": 'import { scalePhase } from "./phases/scale.js";',
        "phases/scale.ts": 'import type { PoolPhase } from "../pipeline.js";',
      }),
    ).toEqual([["phases/scale.ts", "pipeline.ts", "phases/scale.ts"]]);
  });

  it("names every file of a tangle, each cycle once", () => {
    expect(
      cyclesOf({
        "types.ts":
          'import type { M } from "./machines.js";\nimport type { W } from "./workload.js";',
        "machines.ts": 'import type { Options } from "./types.js";',
        "workload.ts": 'import type { Options } from "./types.js";',
        "harness.ts": 'import "./machines.js";\nimport "./workload.js";',
      }),
    ).toEqual([
      ["machines.ts", "types.ts", "machines.ts"],
      ["types.ts", "workload.ts", "types.ts"],
    ]);
  });

  it("reports a file that imports itself", () => {
    expect(cyclesOf({ "a.ts": 'import "./a.js";' })).toEqual([["a.ts", "a.ts"]]);
  });
});
