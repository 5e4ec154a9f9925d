// ./dev bench codegen: capi-ts-codegen against @kubernetes-models/crd-generate on every CRD of the
// shared reference set. For each tool: generation wall time (a fresh process per run, as a user runs
// it), output size, and `tsc --noEmit` wall time of the output; 3 runs each, median reported. capi-ts
// is measured twice: its default output (runtime compiled to .js + .d.ts) and --runtime-source.
// `--capi-ts-only` measures capi-ts alone.
import { spawnSync } from "node:child_process";
import { mkdir, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { availableParallelism, cpus, loadavg } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const RUNS = 3;
// tsc takes about a second, so more runs are cheap and steady the median on a shared machine.
const TSC_RUNS = 7;
const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const shared = process.env.CAPI_TS_SHARED ?? resolve(root, "..", "shared");
const codegenDir = join(root, "packages", "codegen");
// Inside the codegen package so generated code resolves zod, client-node and @kubernetes-models.
const work = join(codegenDir, ".tmp", `bench-${process.pid}`);
const tsc = join(root, "node_modules", "typescript", "bin", "tsc");

async function crdFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile() && /\.ya?ml$/.test(entry.name)) out.push(join(entry.parentPath, entry.name));
  }
  return out.sort();
}

function run(
  command: string,
  args: readonly string[],
  cwd: string,
): { ms: number; cpuMs: number; status: number | null; output: string } {
  // bash's `time` also gives CPU time (user + sys of the process and its children), which a busy
  // shared machine distorts far less than wall time.
  const script = 'TIMEFORMAT="@@time %R %U %S"; time "$@"';
  const result = spawnSync("bash", ["-c", script, "bash", command, ...args], {
    cwd,
    encoding: "utf8",
    maxBuffer: 64 * 1024 * 1024,
  });
  const match = /@@time ([\d.]+) ([\d.]+) ([\d.]+)\s*$/.exec(result.stderr);
  const [wall = Number.NaN, user = Number.NaN, sys = Number.NaN] = (match?.slice(1) ?? []).map(
    Number,
  );
  return {
    ms: wall * 1000,
    cpuMs: (user + sys) * 1000,
    status: result.status,
    output: `${result.stdout}${result.stderr.replace(/@@time .*\s*$/, "")}`,
  };
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}

async function outputStats(
  dir: string,
): Promise<{ files: number; tsFiles: number; bytes: number; lines: number }> {
  let files = 0;
  let tsFiles = 0;
  let bytes = 0;
  let lines = 0;
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile() || entry.name === "tsconfig.json") continue;
    const file = join(entry.parentPath, entry.name);
    const text = await readFile(file, "utf8");
    files++;
    if (entry.name.endsWith(".ts")) tsFiles++;
    bytes += (await stat(file)).size;
    lines += text.split("\n").length - (text.endsWith("\n") ? 1 : 0);
  }
  return { files, tsFiles, bytes, lines };
}

interface ToolResult {
  readonly name: string;
  readonly genMs: number[];
  readonly genCpuMs: number[];
  readonly stats: Awaited<ReturnType<typeof outputStats>>;
  readonly tscMs: number[];
  readonly tscCpuMs: number[];
  readonly tscErrors: number;
  readonly tscMode: string;
}

async function benchTool(
  name: string,
  generateArgs: (out: string) => { command: string; args: string[] },
  tsconfig: object,
  tscMode: string,
): Promise<ToolResult> {
  const genMs: number[] = [];
  const genCpuMs: number[] = [];
  let first = "";
  for (let i = 1; i <= RUNS; i++) {
    const out = join(work, name, `run${i}`);
    const { command, args } = generateArgs(out);
    const result = run(command, args, codegenDir);
    if (result.status !== 0)
      throw new Error(
        `${name} generation failed (exit ${result.status}):\n${result.output.slice(0, 2000)}`,
      );
    genMs.push(result.ms);
    genCpuMs.push(result.cpuMs);
    if (i === 1) first = out;
    process.stderr.write(
      `  ${name} generation run ${i}: ${(result.ms / 1000).toFixed(2)} s wall, ${(result.cpuMs / 1000).toFixed(2)} s CPU\n`,
    );
  }
  const stats = await outputStats(first);
  await writeFile(join(first, "tsconfig.json"), JSON.stringify(tsconfig, null, 2));
  const tscMs: number[] = [];
  const tscCpuMs: number[] = [];
  let tscErrors = 0;
  for (let i = 1; i <= TSC_RUNS; i++) {
    const result = run(process.execPath, [tsc, "-p", join(first, "tsconfig.json")], first);
    tscMs.push(result.ms);
    tscCpuMs.push(result.cpuMs);
    tscErrors = (result.output.match(/error TS\d+/g) ?? []).length;
    process.stderr.write(
      `  ${name} tsc run ${i}: ${(result.ms / 1000).toFixed(2)} s wall, ${(result.cpuMs / 1000).toFixed(2)} s CPU, ${tscErrors} errors\n`,
    );
    if (i === 1 && tscErrors > 0)
      process.stderr.write(`${result.output.split("\n").slice(0, 5).join("\n")}\n`);
  }
  return { name, genMs, genCpuMs, stats, tscMs, tscCpuMs, tscErrors, tscMode };
}

const base = {
  strict: true,
  skipLibCheck: true,
  noEmit: true,
  target: "ES2022",
  lib: ["ES2023"],
  types: [],
};

async function main(): Promise<void> {
  const inputs = await crdFiles(join(shared, "crds"));
  if (inputs.length === 0)
    throw new Error(`no CRDs under ${join(shared, "crds")}; set CAPI_TS_SHARED`);
  await rm(work, { recursive: true, force: true });
  await mkdir(work, { recursive: true });
  process.stderr.write(
    `bench codegen: ${inputs.length} CRD files, ${RUNS} generation and ${TSC_RUNS} tsc runs each\n`,
  );

  // Bundle the CLI like the published package (tsup, ESM), so both tools run as compiled JavaScript.
  const build = run(
    process.execPath,
    [
      join(root, "node_modules", "tsup", "dist", "cli-default.js"),
      "src/cli.ts",
      "--no-config",
      "--format",
      "esm",
      "--platform",
      "node",
      "--target",
      "node22",
      "-d",
      join(work, "dist"),
    ],
    codegenDir,
  );
  if (build.status !== 0) throw new Error(`building the CLI failed:\n${build.output}`);

  // capi-ts output is ESM with .js specifiers: it compiles as a NodeNext project.
  const benchCapiTs = (name: string, flags: readonly string[]) =>
    benchTool(
      name,
      (out) => ({
        command: process.execPath,
        args: [join(work, "dist", "cli.js"), "generate", ...inputs, "-o", out, ...flags],
      }),
      {
        compilerOptions: {
          ...base,
          module: "NodeNext",
          moduleResolution: "NodeNext",
          verbatimModuleSyntax: true,
          noUncheckedIndexedAccess: true,
        },
        include: ["**/*.ts"],
      },
      "NodeNext (ESM, verbatimModuleSyntax)",
    );
  const capi = await benchCapiTs("capi-ts", []);
  // The same output with the runtime as TypeScript (--runtime-source): what tsc pays when it also
  // checks every schema against its interface, as our own tests do.
  const capiSource = await benchCapiTs("capi-ts-runtime-source", ["--runtime-source"]);
  const sourceLine = () =>
    `capi-ts with --runtime-source (runtime as TypeScript, checked by tsc): generation ${(median(capiSource.genMs) / 1000).toFixed(2)} s wall, ` +
    `output ${capiSource.stats.bytes.toLocaleString("en-US")} bytes, tsc --noEmit ${(median(capiSource.tscMs) / 1000).toFixed(2)} s wall / ` +
    `${(median(capiSource.tscCpuMs) / 1000).toFixed(2)} s CPU, ${capiSource.tscErrors} errors`;
  if (process.argv.includes("--capi-ts-only")) {
    // Quick iteration on the generator: skip crd-generate (minutes per run on a small machine).
    const m = (ms: readonly number[]) => `${(median(ms) / 1000).toFixed(2)} s`;
    console.log(
      `\ncapi-ts-codegen on ${inputs.length} CRD files (load average ${loadavg()
        .map((l) => l.toFixed(1))
        .join(" ")}): generation ${m(capi.genMs)} wall / ${m(capi.genCpuMs)} CPU; ` +
        `output ${capi.stats.files} files, ${capi.stats.bytes.toLocaleString("en-US")} bytes, ${capi.stats.lines.toLocaleString("en-US")} lines; ` +
        `tsc --noEmit ${m(capi.tscMs)} wall / ${m(capi.tscCpuMs)} CPU, ${capi.tscErrors} errors`,
    );
    console.log(sourceLine());
    await rm(work, { recursive: true, force: true });
    return;
  }
  const km = await benchTool(
    "crd-generate",
    (out) => ({
      command: process.execPath,
      args: [
        join(
          codegenDir,
          "node_modules",
          "@kubernetes-models",
          "crd-generate",
          "bin",
          "crd-generate.js",
        ),
        ...inputs.flatMap((file) => ["--input", file]),
        "--output",
        out,
      ],
    }),
    {
      compilerOptions: {
        ...base,
        module: "ESNext",
        moduleResolution: "Bundler",
        isolatedModules: true,
      },
      include: ["**/*.ts"],
    },
    "Bundler (its output needs it)",
  );

  const s = (ms: readonly number[]) => `${(median(ms) / 1000).toFixed(2)} s`;
  const ratio = (a: number, b: number) => `${(a / b).toFixed(1)}x`;
  const rows: Array<[string, string, string, string]> = [
    ["", "capi-ts-codegen", "@kubernetes-models/crd-generate 5.1.0", "crd-generate / capi-ts"],
    [
      "generation, wall (median of 3)",
      s(capi.genMs),
      s(km.genMs),
      ratio(median(km.genMs), median(capi.genMs)),
    ],
    [
      "generation, CPU user+sys (median of 3)",
      s(capi.genCpuMs),
      s(km.genCpuMs),
      ratio(median(km.genCpuMs), median(capi.genCpuMs)),
    ],
    [
      "output files (.ts)",
      `${capi.stats.files} (${capi.stats.tsFiles})`,
      `${km.stats.files} (${km.stats.tsFiles})`,
      ratio(km.stats.files, capi.stats.files),
    ],
    [
      "output bytes",
      capi.stats.bytes.toLocaleString("en-US"),
      km.stats.bytes.toLocaleString("en-US"),
      ratio(km.stats.bytes, capi.stats.bytes),
    ],
    [
      "output lines",
      capi.stats.lines.toLocaleString("en-US"),
      km.stats.lines.toLocaleString("en-US"),
      ratio(km.stats.lines, capi.stats.lines),
    ],
    [
      "tsc --noEmit of the output, wall (median of 7)",
      s(capi.tscMs),
      s(km.tscMs),
      ratio(median(km.tscMs), median(capi.tscMs)),
    ],
    [
      "tsc --noEmit of the output, CPU (median of 7)",
      s(capi.tscCpuMs),
      s(km.tscCpuMs),
      ratio(median(km.tscCpuMs), median(capi.tscCpuMs)),
    ],
    ["tsc errors", String(capi.tscErrors), String(km.tscErrors), ""],
    ["tsc module mode", capi.tscMode, km.tscMode, ""],
  ];
  const widths = [0, 1, 2, 3].map((c) => Math.max(...rows.map((r) => r[c]?.length ?? 0)));
  const cpu = cpus()[0]?.model ?? "unknown CPU";
  console.log(
    `\ncodegen benchmark: ${inputs.length} CRD files under shared/crds, Node ${process.version}, ${availableParallelism()} x ${cpu}, load average ${loadavg()
      .map((l) => l.toFixed(1))
      .join(" ")}`,
  );
  for (const row of rows)
    console.log(row.map((cell, c) => cell.padEnd(widths[c] ?? 0)).join("  |  "));
  console.log(
    `\nruns: capi-ts gen ${capi.genMs.map((m) => (m / 1000).toFixed(2)).join("/")} s, tsc ${capi.tscMs.map((m) => (m / 1000).toFixed(2)).join("/")} s; ` +
      `crd-generate gen ${km.genMs.map((m) => (m / 1000).toFixed(2)).join("/")} s, tsc ${km.tscMs.map((m) => (m / 1000).toFixed(2)).join("/")} s`,
  );
  console.log(sourceLine());
  console.log(
    "baseline (reference/codegen-baseline.md, idle machine): cdk8s 1.96 s / tsc 2.87 s; crd-generate 10.16 s / tsc 1.10 s; json-schema-to-typescript 2.80 s / tsc 0.97 s",
  );
  await rm(work, { recursive: true, force: true });
}

await main();
