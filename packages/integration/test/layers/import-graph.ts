// The pure part of ./dev layers (scripts/check-layers.ts): reading a file's imports, the import graph
// of one folder and its cycles, and the phase rule. It lives here rather than beside the script because
// the scripts have no test project; a private, tests-only package can hold it and its test without
// shipping either. Paths are relative and `/`-separated, so a test needs no files on disk.
import { posix } from "node:path";

/** One module specifier a file imports or re-exports, with the line it sits on. */
export interface ImportRef {
  specifier: string;
  line: number;
}

/**
 * Every module specifier a file imports or re-exports, statically or with `import()`, with its line.
 * `import type` and `export type … from` count like any other import: they are edges a reader follows.
 * The separator before the keyword is looked behind, not matched, so the line is the keyword's own.
 */
export function importsOf(text: string): ImportRef[] {
  const found: ImportRef[] = [];
  const pattern =
    /(?<=^|[\s;])(?:import|export)\s[^'"`;]*?from\s*["']([^"']+)["']|(?<=^|[\s;])import\s*["']([^"']+)["']|\bimport\(\s*["']([^"']+)["']\s*\)/gm;
  for (const match of text.matchAll(pattern)) {
    const specifier = match[1] ?? match[2] ?? match[3];
    if (!specifier) continue;
    const line = text.slice(0, match.index).split("\n").length;
    found.push({ specifier, line });
  }
  return found;
}

/**
 * The file of `files` a relative specifier of `from` names, or undefined (a package, a generated `.js`
 * runtime, a path outside the set). Sources import each other as `./x.js`, so `.js` is tried as `.ts`.
 */
function resolveIn(
  files: ReadonlySet<string>,
  from: string,
  specifier: string,
): string | undefined {
  if (!specifier.startsWith(".")) return undefined;
  const path = posix.join(posix.dirname(from), specifier);
  const candidates = [
    path.replace(/\.js$/, ".ts").replace(/\.mjs$/, ".mts"),
    path,
    `${path}.ts`,
    `${path}/index.ts`,
  ];
  return candidates.find((candidate) => files.has(candidate));
}

/**
 * The import graph of one folder: for each of its files (path relative to the folder, text), the files
 * of the same folder it imports, sorted so that what is reported does not depend on the order of a
 * directory listing. Imports that leave the folder are the layers' business, not the graph's.
 */
export function importGraph(files: ReadonlyMap<string, string>): Map<string, string[]> {
  const names = new Set(files.keys());
  const graph = new Map<string, string[]>();
  for (const [file, text] of [...files].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    const targets = new Set<string>();
    for (const { specifier } of importsOf(text)) {
      const target = resolveIn(names, file, specifier);
      if (target !== undefined) targets.add(target);
    }
    graph.set(file, [...targets].sort());
  }
  return graph;
}

/** The strongly connected components of `graph` (Tarjan), each sorted. */
function components(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const found: string[][] = [];
  const visit = (node: string): void => {
    index.set(node, index.size);
    low.set(node, index.get(node) as number);
    stack.push(node);
    onStack.add(node);
    for (const next of graph.get(node) ?? []) {
      if (!index.has(next)) {
        visit(next);
        low.set(node, Math.min(low.get(node) as number, low.get(next) as number));
      } else if (onStack.has(next)) {
        low.set(node, Math.min(low.get(node) as number, index.get(next) as number));
      }
    }
    if (low.get(node) !== index.get(node)) return;
    const component: string[] = [];
    let member: string | undefined;
    do {
      member = stack.pop() as string;
      onStack.delete(member);
      component.push(member);
    } while (member !== node);
    found.push(component.sort());
  };
  for (const node of graph.keys()) if (!index.has(node)) visit(node);
  return found;
}

/** The shortest path of imports from `from` back to itself within `members` (breadth first). */
function shortestCycle(
  graph: ReadonlyMap<string, readonly string[]>,
  members: ReadonlySet<string>,
  from: string,
): string[] {
  const cameFrom = new Map<string, string>();
  const queue = [from];
  for (let i = 0; i < queue.length; i++) {
    const file = queue[i] as string;
    for (const target of graph.get(file) ?? []) {
      if (!members.has(target)) continue;
      if (target === from) {
        const path = [file];
        while (path[0] !== from) path.unshift(cameFrom.get(path[0] as string) as string);
        return [...path, from];
      }
      if (cameFrom.has(target)) continue;
      cameFrom.set(target, file);
      queue.push(target);
    }
  }
  return [];
}

/**
 * Import cycles of `graph`, each as the files in import order from its first file (in sort order) back
 * to that file, each once. Within a strongly connected component (Tarjan) there may be hundreds of
 * elementary cycles (every phase importing the pipeline that imports every phase), and listing them
 * all buries the few edges to cut; so each file of a component is shown in its shortest cycle, and a
 * cycle already shown for another file is not repeated. Once those are cut, the next run shows what
 * is left, if anything.
 */
export function importCycles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  const cycles: string[][] = [];
  for (const component of components(graph)) {
    const members = new Set(component);
    const shown = new Set<string>();
    const covered = new Set<string>();
    for (const file of component) {
      if (covered.has(file)) continue;
      const cycle = shortestCycle(graph, members, file);
      if (cycle.length === 0) continue;
      const ring = cycle.slice(0, -1);
      const first = ring.indexOf([...ring].sort()[0] as string);
      const rotated = [...ring.slice(first), ...ring.slice(0, first), ring[first] as string];
      for (const member of ring) covered.add(member);
      const key = rotated.join("\n");
      if (shown.has(key)) continue;
      shown.add(key);
      cycles.push(rotated);
    }
  }
  return cycles.sort((a, b) => {
    const [x, y] = [a.join("\n"), b.join("\n")];
    return x < y ? -1 : x > y ? 1 : 0;
  });
}

/** Why {@link phaseImports} refuses an import. */
export const PHASE_RULE =
  "a phase never imports another phase or the pipeline; move the shared step out of phases/";

/**
 * The imports of `file` (relative to packages/sdk/src; a source, not a test: the caller leaves tests
 * out) that break the phase rule. A phase is one step the pipeline lists; a phase that reaches into
 * another, or into the pipeline for its types, ties the order of the list to the import graph, so
 * reordering or dropping a phase would ripple through the others.
 */
export function phaseImports(file: string, text: string): ImportRef[] {
  if (!file.startsWith("provider/phases/")) return [];
  return importsOf(text).filter(({ specifier }) => {
    if (!specifier.startsWith(".")) return false;
    const target = posix.join(posix.dirname(file), specifier);
    return (
      target.startsWith("provider/phases/") ||
      target.replace(/\.(js|ts)$/, "") === "provider/pipeline"
    );
  });
}
