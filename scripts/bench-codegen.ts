// ./dev bench codegen: capi-ts-codegen against the CRD → TypeScript generators people use, on every
// CRD of the reference set (the target CAPI release and AWS's provider):
// @kubernetes-models/crd-generate (a devDependency of the codegen package), `cdk8s import` (cdk8s-cli) and json-schema-to-typescript. The last two, with what their
// output needs to compile, are installed with npm into a folder under the OS temp dir (outside the
// repository, reused across runs). Per tool: generation wall and CPU time and peak RSS (a fresh
// process per run, as a user runs it), output size, `tsc --noEmit` time of the output, and whether
// the output validates objects at run time. Runs are interleaved (every tool once per round) so a
// busy shared machine weighs on all tools alike; medians are reported.
// `--capi-ts-only` measures capi-ts alone (default output and --runtime-source), for iteration.
// `--baseline=<folder>` adds a column for the capi-ts CLI built from another copy of the codegen
// package's sources (for example `git archive` of an older commit under packages/codegen/.tmp, so it
// resolves the same dependencies): before and after in one interleaved run.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { availableParallelism, cpus, loadavg, tmpdir } from "node:os";
import { basename, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import {
  PRECOMPILED_RUNTIME_FILE,
  precompileCommonRuntime,
} from "../packages/codegen/src/runtime-files.js";

const RUNS = 3;
// tsc takes about a second, so more runs are cheap and steady the median on a shared machine.
const TSC_RUNS = 5;
const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
// The target CAPI release's CRDs and the AWS reference set, both taken by `./dev crds`.
const crdFolders = [
  join(root, "packages", "testing", "crds", "capi"),
  join(root, "reference", "aws", "crds"),
];
const codegenDir = join(root, "packages", "codegen");
// Inside the codegen package so generated code resolves zod, client-node and @kubernetes-models.
const work = join(codegenDir, ".tmp", `bench-${process.pid}`);
const tsc = join(root, "node_modules", "typescript", "bin", "tsc");
// The peers installed by npm, pinned to the versions of the reference baseline.
const PEERS = [
  "cdk8s-cli@2.207.60",
  "json-schema-to-typescript@16.0.0",
  "yaml@2.9.1",
  // what cdk8s output imports, for tsc
  "cdk8s@2.70.106",
  "constructs@10.8.1",
];
const peersDir = join(tmpdir(), "capi-ts-bench-codegen-peers");
const peerWork = join(peersDir, `bench-${process.pid}`);
const GNU_TIME = "/usr/bin/time";

async function crdFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile() && /\.ya?ml$/.test(entry.name)) out.push(join(entry.parentPath, entry.name));
  }
  return out.sort();
}

interface RunResult {
  readonly ms: number;
  readonly cpuMs: number;
  /** Peak resident set size in MiB (GNU time's %M); NaN without GNU time. */
  readonly rssMiB: number;
  readonly status: number | null;
  readonly output: string;
}

function run(
  command: string,
  args: readonly string[],
  cwd: string,
  env: NodeJS.ProcessEnv = process.env,
): RunResult {
  // GNU time gives wall, CPU (user + sys, which a busy shared machine distorts far less than wall
  // time) and peak RSS; bash's `time` stands in without the RSS when GNU time is missing.
  const gnu = existsSync(GNU_TIME);
  const result = gnu
    ? spawnSync(GNU_TIME, ["-f", "@@time %e %U %S %M", command, ...args], {
        cwd,
        env,
        encoding: "utf8",
        maxBuffer: 64 * 1024 * 1024,
      })
    : spawnSync(
        "bash",
        ["-c", 'TIMEFORMAT="@@time %R %U %S 0"; time "$@"', "bash", command, ...args],
        { cwd, env, encoding: "utf8", maxBuffer: 64 * 1024 * 1024 },
      );
  const match = /@@time ([\d.]+) ([\d.]+) ([\d.]+) (\d+)\s*$/.exec(result.stderr);
  const [wall = Number.NaN, user = Number.NaN, sys = Number.NaN, rssKiB = Number.NaN] = (
    match?.slice(1) ?? []
  ).map(Number);
  return {
    ms: wall * 1000,
    cpuMs: (user + sys) * 1000,
    rssMiB: gnu ? rssKiB / 1024 : Number.NaN,
    status: result.status,
    output: `${result.stdout}${result.stderr.replace(/(Command exited with non-zero status \d+\s*)?@@time .*\s*$/, "")}`,
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
    if (!entry.isFile() || entry.name === "tsconfig.json" || entry.name === "package.json")
      continue;
    const file = join(entry.parentPath, entry.name);
    const text = await readFile(file, "utf8");
    files++;
    if (entry.name.endsWith(".ts")) tsFiles++;
    bytes += (await stat(file)).size;
    lines += text.split("\n").length - (text.endsWith("\n") ? 1 : 0);
  }
  return { files, tsFiles, bytes, lines };
}

/** One generator under test: how to run it, and how its output compiles. */
interface Tool {
  readonly name: string;
  /** Where its output folders go (output must resolve the packages it imports from there). */
  readonly base: string;
  readonly generate: (out: string) => { command: string; args: string[]; cwd: string };
  readonly env?: NodeJS.ProcessEnv;
  readonly tsconfig: object;
  /** Written next to the output's tsconfig.json, when the module mode needs it. */
  readonly packageJson?: object;
  readonly tscMode: string;
  /** Whether the output validates objects at run time (against the CRD's schema). */
  readonly validates: string;
}

interface Measured {
  readonly tool: Tool;
  readonly gen: RunResult[];
  readonly tsc: RunResult[];
  stats?: Awaited<ReturnType<typeof outputStats>>;
  tscErrors: number;
}

const base = {
  strict: true,
  skipLibCheck: true,
  noEmit: true,
  target: "ES2022",
  lib: ["ES2023"],
  types: [],
};
const nodeNext = { ...base, module: "NodeNext", moduleResolution: "NodeNext" };

/** Installs the npm peers into the temp folder once; later runs reuse it. */
function installPeers(): void {
  const marker = join(peersDir, "installed.json");
  const wanted = JSON.stringify(PEERS);
  if (existsSync(marker) && spawnSync("cat", [marker], { encoding: "utf8" }).stdout === wanted)
    return;
  process.stderr.write(`installing ${PEERS.join(" ")} into ${peersDir}\n`);
  spawnSync("mkdir", ["-p", peersDir]);
  spawnSync("bash", ["-c", `echo '{"private":true}' > package.json`], { cwd: peersDir });
  const result = spawnSync(
    "npm",
    ["install", "--no-audit", "--no-fund", "--loglevel=error", "-E", ...PEERS],
    { cwd: peersDir, encoding: "utf8" },
  );
  if (result.status !== 0)
    throw new Error(
      `npm install of the peers failed (exit ${result.status}); they are needed for the comparison (or pass --capi-ts-only):\n${result.stderr}`,
    );
  spawnSync("bash", ["-c", `printf '%s' '${wanted}' > installed.json`], { cwd: peersDir });
}

// json-schema-to-typescript has no CLI for CRDs: compile() per served CRD version, as its users do.
const JSTS_DRIVER = `
const { compile } = require("json-schema-to-typescript");
const YAML = require("yaml");
const { mkdirSync, readFileSync, writeFileSync } = require("node:fs");
const { join } = require("node:path");
const [out, ...files] = process.argv.slice(2);
(async () => {
  for (const file of files) {
    for (const doc of YAML.parseAllDocuments(readFileSync(file, "utf8"))) {
      const crd = doc.toJS();
      if (crd?.kind !== "CustomResourceDefinition") continue;
      for (const version of crd.spec.versions) {
        if (version.served === false || !version.schema?.openAPIV3Schema) continue;
        const dir = join(out, crd.spec.group, version.name);
        mkdirSync(dir, { recursive: true });
        const ts = await compile(version.schema.openAPIV3Schema, crd.spec.names.kind, { format: true });
        writeFileSync(join(dir, crd.spec.names.kind + ".ts"), ts);
      }
    }
  }
})().catch((error) => { console.error(error); process.exit(1); });
`;

async function main(): Promise<void> {
  const inputs = (await Promise.all(crdFolders.map((folder) => crdFiles(folder)))).flat();
  if (inputs.length === 0)
    throw new Error(`no CRDs under ${crdFolders.join(" and ")}; run ./dev crds`);
  const capiOnly = process.argv.includes("--capi-ts-only");
  await rm(work, { recursive: true, force: true });
  await mkdir(work, { recursive: true });

  // Bundle the CLI like the published package (tsup, ESM, with the precompiled common runtime the
  // package's build writes next to the bundle), so every tool runs as compiled JavaScript.
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
  await writeFile(
    join(work, "dist", PRECOMPILED_RUNTIME_FILE),
    precompileCommonRuntime(
      await readFile(join(codegenDir, "src", "runtime", "common.ts"), "utf8"),
    ),
  );

  const baseline = process.argv.find((a) => a.startsWith("--baseline="))?.slice(11);
  if (baseline !== undefined) {
    const built = run(
      process.execPath,
      [
        join(root, "node_modules", "tsup", "dist", "cli-default.js"),
        join(resolve(baseline), "cli.ts"),
        "--no-config",
        "--format",
        "esm",
        "--platform",
        "node",
        "--target",
        "node22",
        "-d",
        join(work, "baseline-dist"),
      ],
      codegenDir,
    );
    if (built.status !== 0) throw new Error(`building the baseline CLI failed:\n${built.output}`);
  }

  const capiTs = (name: string, flags: readonly string[], dist = "dist"): Tool => ({
    name,
    base: join(work, name),
    generate: (out) => ({
      command: process.execPath,
      args: [join(work, dist, "cli.js"), "generate", ...inputs, "-o", out, ...flags],
      cwd: codegenDir,
    }),
    // capi-ts output is ESM with .js specifiers: it compiles as a NodeNext project.
    tsconfig: {
      compilerOptions: { ...nodeNext, verbatimModuleSyntax: true, noUncheckedIndexedAccess: true },
      include: ["**/*.ts"],
    },
    tscMode: "NodeNext (ESM, verbatimModuleSyntax)",
    validates: "yes (zod, RE2 patterns, CEL not)",
  });
  const tools: Tool[] = [capiTs("capi-ts", [])];
  if (baseline !== undefined) tools.push(capiTs("capi-ts (baseline)", [], "baseline-dist"));
  // The same output with the runtime as TypeScript: what tsc pays when it also checks every schema
  // against its interface, as our own tests do.
  const sourceVariant = capiTs("capi-ts-runtime-source", ["--runtime-source"]);
  if (capiOnly) tools.push(sourceVariant);
  else {
    installPeers();
    await mkdir(peerWork, { recursive: true });
    const cdk8sProject = join(peerWork, "cdk8s-project");
    await mkdir(cdk8sProject, { recursive: true });
    await writeFile(
      join(cdk8sProject, "cdk8s.yaml"),
      `language: typescript\nimports:\n${inputs.map((f) => `  - ${basename(f).replace(/\.ya?ml$/, "")}:=${f}\n`).join("")}`,
    );
    await writeFile(join(peerWork, "gen-jsts.cjs"), JSTS_DRIVER);
    tools.push(
      {
        name: "crd-generate",
        base: join(work, "crd-generate"),
        generate: (out) => ({
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
          cwd: codegenDir,
        }),
        tsconfig: {
          compilerOptions: { ...base, module: "ESNext", moduleResolution: "Bundler" },
          include: ["**/*.ts"],
        },
        tscMode: "Bundler (its output needs it)",
        validates: "yes (AJV)",
      },
      {
        name: "cdk8s",
        base: join(peerWork, "cdk8s"),
        generate: (out) => ({
          command: process.execPath,
          args: [
            join(peersDir, "node_modules", "cdk8s-cli", "bin", "cdk8s"),
            "import",
            "--output",
            out,
            "--no-check-upgrade",
            "--no-save",
          ],
          cwd: cdk8sProject,
        }),
        tsconfig: { compilerOptions: nodeNext, include: ["**/*.ts"] },
        packageJson: { type: "commonjs" },
        tscMode: "NodeNext (CJS)",
        validates: "no",
      },
      {
        name: "json-schema-to-typescript",
        base: join(peerWork, "jsts"),
        generate: (out) => ({
          command: process.execPath,
          args: [join(peerWork, "gen-jsts.cjs"), out, ...inputs],
          cwd: peersDir,
        }),
        tsconfig: { compilerOptions: nodeNext, include: ["**/*.ts"] },
        packageJson: { type: "commonjs" },
        tscMode: "NodeNext (CJS)",
        validates: "no",
      },
    );
  }
  process.stderr.write(
    `bench codegen: ${inputs.length} CRD files, ${tools.length} tools, ${RUNS} interleaved generation and ${TSC_RUNS} tsc rounds\n`,
  );

  const measured: Measured[] = tools.map((tool) => ({ tool, gen: [], tsc: [], tscErrors: 0 }));
  // Interleaved: every round runs each tool once, the order rotating so no tool always goes first.
  for (let round = 1; round <= RUNS; round++) {
    for (let k = 0; k < measured.length; k++) {
      const m = measured[(k + round - 1) % measured.length] as Measured;
      const out = join(m.tool.base, `run${round}`);
      const { command, args, cwd } = m.tool.generate(out);
      const result = run(command, args, cwd, m.tool.env);
      if (result.status !== 0)
        throw new Error(
          `${m.tool.name} generation failed (exit ${result.status}):\n${result.output.slice(0, 2000)}`,
        );
      m.gen.push(result);
      process.stderr.write(
        `  round ${round} ${m.tool.name} generation: ${(result.ms / 1000).toFixed(2)} s wall, ${(result.cpuMs / 1000).toFixed(2)} s CPU, ${result.rssMiB.toFixed(0)} MiB\n`,
      );
    }
  }
  for (const m of measured) {
    const first = join(m.tool.base, "run1");
    m.stats = await outputStats(first);
    await writeFile(join(first, "tsconfig.json"), JSON.stringify(m.tool.tsconfig, null, 2));
    if (m.tool.packageJson !== undefined)
      await writeFile(join(first, "package.json"), JSON.stringify(m.tool.packageJson));
  }
  for (let round = 1; round <= TSC_RUNS; round++) {
    for (let k = 0; k < measured.length; k++) {
      const m = measured[(k + round - 1) % measured.length] as Measured;
      const first = join(m.tool.base, "run1");
      const result = run(process.execPath, [tsc, "-p", join(first, "tsconfig.json")], first);
      m.tsc.push(result);
      m.tscErrors = (result.output.match(/error TS\d+/g) ?? []).length;
      process.stderr.write(
        `  round ${round} ${m.tool.name} tsc: ${(result.ms / 1000).toFixed(2)} s wall, ${(result.cpuMs / 1000).toFixed(2)} s CPU, ${m.tscErrors} errors\n`,
      );
      if (round === 1 && m.tscErrors > 0)
        process.stderr.write(`${result.output.split("\n").slice(0, 5).join("\n")}\n`);
    }
  }

  const s = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
  const pick = (runs: readonly RunResult[], f: (r: RunResult) => number) => median(runs.map(f));
  const header = ["", ...measured.map((m) => m.tool.name)];
  const rows: string[][] = [
    header,
    [`generation, wall (median of ${RUNS})`, ...measured.map((m) => s(pick(m.gen, (r) => r.ms)))],
    [
      `generation, CPU user+sys (median of ${RUNS})`,
      ...measured.map((m) => s(pick(m.gen, (r) => r.cpuMs))),
    ],
    [
      `generation, peak RSS (median of ${RUNS})`,
      ...measured.map((m) => `${pick(m.gen, (r) => r.rssMiB).toFixed(0)} MiB`),
    ],
    ["output files (.ts)", ...measured.map((m) => `${m.stats?.files} (${m.stats?.tsFiles})`)],
    ["output bytes", ...measured.map((m) => (m.stats?.bytes ?? 0).toLocaleString("en-US"))],
    ["output lines", ...measured.map((m) => (m.stats?.lines ?? 0).toLocaleString("en-US"))],
    [
      `tsc --noEmit of the output, wall (median of ${TSC_RUNS})`,
      ...measured.map((m) => s(pick(m.tsc, (r) => r.ms))),
    ],
    [
      `tsc --noEmit of the output, CPU (median of ${TSC_RUNS})`,
      ...measured.map((m) => s(pick(m.tsc, (r) => r.cpuMs))),
    ],
    ["tsc errors", ...measured.map((m) => String(m.tscErrors))],
    ["tsc module mode", ...measured.map((m) => m.tool.tscMode)],
    ["validates objects at run time", ...measured.map((m) => m.tool.validates)],
  ];
  const columns = header.length;
  const widths = Array.from({ length: columns }, (_, c) =>
    Math.max(...rows.map((r) => r[c]?.length ?? 0)),
  );
  const cpu = cpus()[0]?.model ?? "unknown CPU";
  console.log(
    `\ncodegen benchmark: ${inputs.length} CRD files (CAPI and AWS reference), Node ${process.version}, ${availableParallelism()} x ${cpu}, load average ${loadavg()
      .map((l) => l.toFixed(1))
      .join(" ")}`,
  );
  for (const row of rows)
    console.log(`| ${row.map((cell, c) => cell.padEnd(widths[c] ?? 0)).join(" | ")} |`);
  console.log("\nruns (wall):");
  for (const m of measured)
    console.log(
      `  ${m.tool.name}: generation ${m.gen.map((r) => (r.ms / 1000).toFixed(2)).join("/")} s, tsc ${m.tsc.map((r) => (r.ms / 1000).toFixed(2)).join("/")} s`,
    );
  if (!capiOnly) {
    // The --runtime-source variant on its own, after the interleaved comparison.
    const variant = { tool: sourceVariant, gen: [] as RunResult[] };
    for (let round = 1; round <= RUNS; round++) {
      const { command, args, cwd } = sourceVariant.generate(
        join(sourceVariant.base, `run${round}`),
      );
      variant.gen.push(run(command, args, cwd, sourceVariant.env));
    }
    const first = join(sourceVariant.base, "run1");
    await writeFile(join(first, "tsconfig.json"), JSON.stringify(sourceVariant.tsconfig));
    const tscRun = run(process.execPath, [tsc, "-p", join(first, "tsconfig.json")], first);
    console.log(
      `capi-ts with --runtime-source (runtime as TypeScript, checked by tsc): generation ${s(pick(variant.gen, (r) => r.ms))} wall / ` +
        `${pick(variant.gen, (r) => r.rssMiB).toFixed(0)} MiB, tsc --noEmit ${s(tscRun.ms)} wall (one run), ${(tscRun.output.match(/error TS\d+/g) ?? []).length} errors`,
    );
  }
  await rm(work, { recursive: true, force: true });
  await rm(peerWork, { recursive: true, force: true });
}

await main();
