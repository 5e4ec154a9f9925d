// ./dev quick [--base REV]: the inner loop, in under 3 minutes on 2 cores. Biome on the files changed
// since REV (default HEAD, so the uncommitted work; untracked files count), the type check of the
// packages they are in and of the packages that depend on them, then the tests vitest relates to the
// changed files through their imports, in the unit projects of the changed packages. The integration
// suites, the real control plane and the gates of `.ci/run` are left to `./dev test` and CI.
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";

const root = resolve(import.meta.dirname, "..");
/** Packages whose vitest project runs without a control plane (integration's suites take minutes). */
const UNIT_PROJECTS = new Set(["sdk", "codegen", "testing", "examples", "create-capi-provider"]);
const LINTED = /\.(ts|mts|cts|js|mjs|cjs|json|jsonc)$/;
const BUDGET_S = 180;

function usage(problem?: string): never {
  if (problem) console.error(`quick: ${problem}`);
  console.error("usage: ./dev quick [--base REV]   (REV: a commit, branch or tag; default HEAD)");
  process.exit(2);
}

function parseBase(args: string[]): string {
  if (args.length === 0) return "HEAD";
  if (args.length === 2 && args[0] === "--base" && args[1]) return args[1];
  const value = args.find((a) => a.startsWith("--base="))?.slice("--base=".length);
  if (args.length === 1 && value) return value;
  return usage(`unexpected arguments ${JSON.stringify(args)}`);
}

function git(...args: string[]): string {
  return execFileSync("git", args, { cwd: root, encoding: "utf8" }).trim();
}

function changedFiles(base: string): string[] {
  try {
    git("rev-parse", "--verify", "--quiet", `${base}^{commit}`);
  } catch {
    usage(`${JSON.stringify(base)} is not a commit of this repository`);
  }
  const tracked = git("diff", "--name-only", "--diff-filter=d", base).split("\n");
  const untracked = git("ls-files", "--others", "--exclude-standard").split("\n");
  return [...new Set([...tracked, ...untracked])].filter(
    (f) => f !== "" && existsSync(join(root, f)),
  );
}

/** Runs one step; returns whether it passed. */
function step(name: string, command: string, args: string[]): boolean {
  const started = performance.now();
  console.log(`::: ${name}`);
  const run = spawnSync(command, args, { cwd: root, stdio: "inherit" });
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  const ok = run.status === 0;
  console.log(`::: ${name}: ${ok ? "ok" : "FAILED"} (${seconds} s)`);
  return ok;
}

const base = parseBase(process.argv.slice(2));
const started = performance.now();
const files = changedFiles(base);
if (files.length === 0) {
  console.log(`quick: nothing changed since ${base}`);
  process.exit(0);
}
const packageDirs = [
  ...new Set(files.map((f) => /^packages\/([^/]+)\//.exec(f)?.[1]).filter((d) => d !== undefined)),
].filter((dir) => existsSync(join(root, "packages", dir, "package.json")));
const packageName = (dir: string): string =>
  (
    JSON.parse(readFileSync(join(root, "packages", dir, "package.json"), "utf8")) as {
      name: string;
    }
  ).name;
console.log(
  `quick: ${files.length} file(s) changed since ${base}${packageDirs.length > 0 ? ` in ${packageDirs.join(", ")}` : ""}`,
);

const failed: string[] = [];
const linted = files.filter((f) => LINTED.test(f));
if (linted.length > 0) {
  const ok = step("lint (biome, changed files)", "biome", [
    "ci",
    "--no-errors-on-unmatched",
    "--files-ignore-unknown=true",
    ...linted,
  ]);
  if (!ok) failed.push("lint");
}
if (packageDirs.length > 0) {
  // `...pkg` is the package and every package that depends on it: a changed export type-checks its users.
  const filters = packageDirs.map((dir) => `--filter=...${packageName(dir)}`);
  const ok = step("typecheck (changed packages and their dependents)", "turbo", [
    "run",
    "typecheck",
    "--output-logs=errors-only",
    ...filters,
  ]);
  if (!ok) failed.push("typecheck");
}
if (files.some((f) => f.startsWith("scripts/") || f === "tsconfig.scripts.json")) {
  if (!step("typecheck (scripts)", "tsc", ["-p", "tsconfig.scripts.json"])) failed.push("scripts");
}
const projects = packageDirs.filter((dir) => UNIT_PROJECTS.has(dir));
if (projects.length > 0) {
  const ok = step(`tests related to the change (${projects.join(", ")})`, "node", [
    join(root, "scripts", "test.mjs"),
    base === "HEAD" ? "--changed" : `--changed=${base}`,
    "--passWithNoTests",
    ...projects.flatMap((project) => ["--project", project]),
  ]);
  if (!ok) failed.push("tests");
}
const seconds = Math.round((performance.now() - started) / 1000);
const over = seconds > BUDGET_S ? ` (over the ${BUDGET_S} s budget: say so in an issue)` : "";
console.log(
  failed.length > 0
    ? `quick: FAILED ${failed.join(", ")} in ${seconds} s${over}`
    : `quick: ok in ${seconds} s${over}`,
);
process.exit(failed.length > 0 ? 1 : 0);
