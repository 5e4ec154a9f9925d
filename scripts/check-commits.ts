// ./dev commits: every commit after BASE has a subject of at most 72 characters and one parent. A
// short subject reads whole in `git log --oneline`, a shortlog and a GitHub list; a linear history
// keeps `git bisect` and the changelog's story simple. The rule starts at BASE because the history
// before it has hundreds of long subjects that rewriting would only break every clone for.
import { execFileSync } from "node:child_process";
import { resolve } from "node:path";

/** The commit the rule starts from (its own subject is not checked, only those after it). */
const BASE = "79c8e42659547516e513766968a2596a5dd31f61";
const MAX_SUBJECT = 72;

const root = resolve(import.meta.dirname, "..");

function git(...args: string[]): string {
  return execFileSync("git", args, { cwd: root, encoding: "utf8" }).trim();
}

function succeeds(...args: string[]): boolean {
  try {
    execFileSync("git", args, { cwd: root, stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

function fail(message: string): never {
  console.error(`commits: ${message}`);
  process.exit(1);
}

const base = BASE.slice(0, 12);
if (git("rev-parse", "--is-shallow-repository") === "true") {
  fail(
    `this clone is shallow, so the commits after the rule's base ${base} cannot all be read; ` +
      "fetch the whole history (git fetch --unshallow, or clone without --depth) and run again",
  );
}
if (!succeeds("cat-file", "-e", `${BASE}^{commit}`)) {
  fail(
    `the rule's base ${base} (BASE in scripts/check-commits.ts) is not in this clone; fetch the ` +
      "branch it was recorded on, or correct BASE",
  );
}
if (!succeeds("merge-base", "--is-ancestor", BASE, "HEAD")) {
  fail(
    `the rule's base ${base} is not an ancestor of HEAD: this branch does not contain it (it was ` +
      "rebased past it, or started before it); rebase onto the main branch, or correct BASE",
  );
}

// One record per commit: hash, parents, subject; the unit separator cannot occur in a subject line.
const records = git("log", "--format=%H%x1f%P%x1f%s", `${BASE}..HEAD`)
  .split("\n")
  .filter((line) => line !== "");
const problems: string[] = [];
for (const record of records) {
  const [hash = "", parents = "", subject = ""] = record.split("\x1f");
  const short = hash.slice(0, 12);
  if (parents.split(" ").length > 1) {
    problems.push(`${short} is a merge commit ("${subject}")`);
  }
  // Characters as a reader counts them, not UTF-16 units: an "é" is one, not two.
  const length = [...subject].length;
  if (length > MAX_SUBJECT) {
    problems.push(
      `${short} has a subject of ${length} characters (> ${MAX_SUBJECT}): "${subject}"`,
    );
  }
}

if (problems.length > 0) {
  console.error(
    `commits: ${problems.length} problem(s) in the ${records.length} commit(s) after ${base}:`,
  );
  for (const problem of problems) console.error(`  - ${problem}`);
  console.error(
    "  fix: `git rebase -i " +
      base +
      "` and mark a long subject `reword` (keep it short, put the story in the body); " +
      "replace a merge by rebasing the branch (`git rebase main`) instead of merging main into it",
  );
  process.exit(1);
}
console.log(
  `commits: ${records.length} commit(s) after ${base}, every subject <= ${MAX_SUBJECT} characters, no merge commits`,
);
