// The attack corpus: small hostile CRDs (test/attacks/*.yaml) and the generator's answer to each.
// Every input here is bad or dangerous; the generator must refuse it with a CodegenError (exit 2
// on the command line) naming the file, document and JSON path, write nothing, and stay within a
// small, fixed amount of memory and time.
import { spawn } from "node:child_process";
import { access, mkdir, readdir, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:net";
import { join } from "node:path";
import { afterAll, describe, expect, test } from "vitest";
import { CodegenError } from "../src/errors.js";
import { GENERATED_HEADER, generate, writeGenerated } from "../src/generate.js";
import { importModule, packageDir, tempDir } from "../src/test-helpers.js";

const attacks = join(packageDir, "test", "attacks");
const attack = (name: string) => join(attacks, name);

const dirs: string[] = [];
afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

async function scratch(prefix: string): Promise<string> {
  const dir = await tempDir(prefix);
  dirs.push(dir);
  return dir;
}

async function failure(promise: Promise<unknown>): Promise<CodegenError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof CodegenError) return error;
    throw error;
  }
  throw new Error("expected a CodegenError");
}

/** Every file under a folder, relative to it, sorted. */
async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries
    .filter((entry) => !entry.isDirectory())
    .map((entry) => join(entry.parentPath, entry.name).slice(dir.length + 1))
    .sort();
}

interface Run {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly ms: number;
}

/**
 * Runs the CLI from source in a child process with a small heap, so an input that makes memory
 * explode kills that process (a non-2 exit) instead of the test runner.
 */
function cli(args: readonly string[], heapMiB = 256): Promise<Run> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(
      process.execPath,
      [
        `--max-old-space-size=${heapMiB}`,
        "--stack-size=984",
        "--conditions=capi-ts-source",
        "--import",
        "tsx",
        join(packageDir, "src", "cli.ts"),
        ...args,
      ],
      { cwd: packageDir, stdio: ["ignore", "pipe", "pipe"] },
    );
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    // A hung child is killed, so the test fails on its assertions rather than on vitest's timeout.
    const timer = setTimeout(() => child.kill("SIGKILL"), 50_000);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr, ms: performance.now() - started });
    });
  });
}

/** The crd's YAML with one nested object per level, `levels` deep, in flow style. */
function nestedCrd(levels: number): string {
  let schema = "{ type: string }";
  for (let i = 0; i < levels; i++) schema = `{ type: object, properties: { n: ${schema} } }`;
  return `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: { name: deeps.example.com }
spec:
  group: example.com
  names: { kind: Deep, plural: deeps }
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema: ${schema}
`;
}

describe("path traversal: names that are paths never leave the output folder", () => {
  test("a group that is a relative path is refused, nothing is written", async () => {
    const base = await scratch("attack-group");
    const out = join(base, "a", "b", "out");
    const run = await cli(["generate", attack("traversal-group.yaml"), "-o", out]);
    expect(run.stderr).toContain("traversal-group.yaml (document 0, at spec.group): invalid value");
    expect(run.stderr).toContain("DNS-1123 subdomain");
    expect(run.code).toBe(2);
    expect(await filesUnder(base)).toEqual([]);
  }, 60_000);

  test("a version that is a relative path does not replace a hand-written file", async () => {
    const base = await scratch("attack-version");
    const victim = join(base, "a", "victim", "main.ts");
    await mkdir(join(base, "a", "victim"), { recursive: true });
    await writeFile(victim, "export const mine = 1;\n");
    const error = await failure(generate({ inputs: [attack("traversal-version.yaml")] }));
    expect(error.location).toEqual({
      source: attack("traversal-version.yaml"),
      document: 0,
      path: "spec.versions[0].name",
    });
    expect(error.problem).toMatch(/^invalid value "\.\.\/\.\.\/\.\.\/victim\/main": .*DNS-1035/);
    expect(await readFile(victim, "utf8")).toBe("export const mine = 1;\n");
  });

  test("writeGenerated refuses paths that leave the folder, whoever built the file list", async () => {
    const base = await scratch("attack-write");
    const out = join(base, "out");
    for (const path of ["../escaped.ts", "a/../../escaped.ts", "/etc/escaped.ts", "a//b.ts"]) {
      const files = [
        { path: "index.ts", content: `${GENERATED_HEADER}\n` },
        { path, content: `${GENERATED_HEADER}\n` },
      ];
      const error = await failure(writeGenerated(files, out));
      expect(error.problem).toContain(`refusing to write ${JSON.stringify(path)}`);
    }
    expect(await filesUnder(base)).toEqual([]);
  });

  test("a symbolic link inside the output folder is not followed", async () => {
    const base = await scratch("attack-symlink");
    const outside = join(base, "outside");
    const out = join(base, "out");
    await mkdir(outside);
    await mkdir(out);
    await symlink(outside, join(out, "example.com"));
    const { files } = await generate({ inputs: [attack("redos-pattern.yaml")] });
    const error = await failure(writeGenerated(files, out));
    expect(error.problem).toMatch(/^example\.com is a symbolic link/);
    expect(await readdir(outside)).toEqual([]);
    expect(await filesUnder(out)).toEqual(["example.com"]);
  });
});

describe("code injection: nothing from a CRD lands in code unescaped", () => {
  test("a group that would close the import specifier in index.ts is refused", async () => {
    const error = await failure(generate({ inputs: [attack("injection-group.yaml")] }));
    expect(error.location.path).toBe("spec.group");
    expect(error.problem).toContain("DNS-1123 subdomain");
    expect((globalThis as { PWNED?: unknown }).PWNED).toBeUndefined();
  });

  test("a listKind that would end the interface declaration is refused", async () => {
    const error = await failure(generate({ inputs: [attack("injection-listkind.yaml")] }));
    expect(error.location.path).toBe("spec.names.listKind");
    expect(error.problem).toContain("may have mixed case, but otherwise must be a DNS-1035 label");
  });

  test("kinds that are reserved words, and names the API server refuses, are refused", async () => {
    const crd = (names: string, group = "example.com") =>
      nestedCrd(0)
        .replace("names: { kind: Deep, plural: deeps }", `names: ${names}`)
        .replace("group: example.com", `group: ${group}`)
        .replace("metadata: { name: deeps.example.com }", "metadata: {}");
    const cases: [string, string, string][] = [
      ["{ kind: delete, plural: deletes }", "spec.names.kind", "reserved word"],
      ["{ kind: My-Kind, plural: mykinds }", "spec.names.kind", "letters and digits only"],
      ["{ kind: Deep, plural: Deeps }", "spec.names.plural", "DNS-1035 label"],
      [
        "{ kind: Deep, plural: deeps, listKind: Deep }",
        "spec.names.listKind",
        "may not be the same",
      ],
      ["{ kind: Deep, plural: deeps, shortNames: [d/x] }", "spec.names.shortNames[0]", "DNS-1035"],
      ["{ kind: Deep, plural: deeps, categories: [All] }", "spec.names.categories[0]", "DNS-1035"],
      ["{ kind: Deep, plural: deeps, singular: '' }", "spec.names.singular", "non-empty"],
    ];
    for (const [names, path, problem] of cases) {
      const error = await failure(generate({ inputs: [{ source: "x.yaml", text: crd(names) }] }));
      expect(error.location.path, names).toBe(path);
      expect(error.problem, names).toContain(problem);
    }
    const dotless = await failure(
      generate({
        inputs: [{ source: "x.yaml", text: crd("{ kind: Deep, plural: deeps }", "local") }],
      }),
    );
    expect(dotless.problem).toContain("must be a domain with at least one dot");
  });
});

describe("__proto__ keys stay keys", () => {
  test("a property and a default key named __proto__ keep their meaning at run time", async () => {
    const out = await scratch("attack-proto");
    await writeGenerated((await generate({ inputs: [attack("proto-key.yaml")] })).files, out);
    const mod = await importModule<{ ProtoResource: unknown }>(join(out, "example.com", "v1.ts"));
    const common = await importModule<{
      applyDefaults(resource: unknown, object: unknown): { spec: object };
    }>(join(out, "index.ts"));
    const object = { apiVersion: "example.com/v1", kind: "Proto", spec: {} };
    const defaulted = common.applyDefaults(mod.ProtoResource, object);
    expect(JSON.stringify(defaulted.spec)).toBe(
      '{"__proto__":7,"extra":{"__proto__":{"polluted":true}}}',
    );
    expect(Object.getPrototypeOf(defaulted.spec)).toBe(Object.prototype);
  });
});

describe("blow-ups: depth, size and aliases are bounded", () => {
  test("a CRD 26 objects deep generates in bounded memory (it needed 1.4 GB)", async () => {
    const out = await scratch("attack-deep");
    const run = await cli(["generate", attack("deep.yaml"), "-o", out], 128);
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    const types = await readFile(join(out, "example.com", "v1.ts"), "utf8");
    expect(types).toContain(`export interface Deep${"N".repeat(25)} {`);
  }, 60_000);

  test("nesting deeper than the limit is refused with the path where it crossed", async () => {
    const error = await failure(
      generate({ inputs: [{ source: "deep.yaml", text: nestedCrd(60) }] }),
    );
    expect(error.location).toEqual({ source: "deep.yaml", document: 0 });
    expect(error.problem).toMatch(/^objects and arrays are nested more than 100 deep at line 13,/);
    // Aliases nest without the parser seeing it: the walk of the parsed value catches that.
    const aliased = `${nestedCrd(40).replace("openAPIV3Schema: {", "openAPIV3Schema: &x {")}      x: ${"[".repeat(40)}*x${"]".repeat(40)}\n`;
    const viaAlias = await failure(generate({ inputs: [{ source: "a.yaml", text: aliased }] }));
    expect(viaAlias.location.path).toMatch(/^spec\.versions\[0\]\.x(\[0\])+(\.properties\.n)+$/);
    expect(viaAlias.problem).toContain("nested more than 100 deep");
    // The same through JSON, which has no parser depth limit of its own.
    const json = `{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "spec": ${"[".repeat(5000)}${"]".repeat(5000)}}`;
    const fromJson = await failure(generate({ inputs: [{ source: "deep.json", text: json }] }));
    expect(fromJson.problem).toContain("nested more than 100 deep");
  });

  test('a "billion laughs" alias file is refused quickly, in bounded memory (it took 2.1 GB)', async () => {
    const out = await scratch("attack-laughs");
    const run = await cli(["generate", attack("aliases.yaml"), "-o", out], 128);
    expect(run.stderr).toMatch(
      /aliases\.yaml \(document 0, at laughs\.[a-z][^)]*\): the document stands for more than 3 MiB of JSON/,
    );
    expect(run.code).toBe(2);
    expect(run.ms).toBeLessThan(20_000);
    expect(await filesUnder(out)).toEqual([]);
  }, 60_000);

  test("an alias inside its own anchor is refused, not a stack overflow", async () => {
    const run = await cli([
      "generate",
      attack("recursive-alias.yaml"),
      "-o",
      await scratch("loop"),
    ]);
    expect(run.stderr).toBe(
      `capi-ts-codegen: ${attack("recursive-alias.yaml")} (document 0, at spec.versions[0].schema.openAPIV3Schema.properties.spec): the value contains itself (a YAML alias inside its own anchor); a CRD must be a finite tree, so write the value out\n`,
    );
    expect(run.code).toBe(2);
  }, 60_000);

  test("a document larger than the API server accepts is refused", async () => {
    const huge = nestedCrd(1).replace(
      "{ type: string }",
      `{ type: string, description: "${"x".repeat(4 * 1024 * 1024)}" }`,
    );
    const error = await failure(generate({ inputs: [{ source: "huge.yaml", text: huge }] }));
    expect(error.location.path).toBe(
      "spec.versions[0].schema.openAPIV3Schema.properties.n.description",
    );
    expect(error.problem).toContain("more than 3 MiB of JSON");
  });
});

describe("patterns are RE2, as on the API server", () => {
  test("a nested-quantifier pattern validates in linear time", async () => {
    const out = await scratch("attack-redos");
    await writeGenerated((await generate({ inputs: [attack("redos-pattern.yaml")] })).files, out);
    const mod = await importModule<{
      RedosSchema: { safeParse(value: unknown): { success: boolean } };
    }>(join(out, "example.com", "v1.ts"));
    const object = (name: string) => ({
      apiVersion: "example.com/v1",
      kind: "Redos",
      spec: { name },
    });
    expect(mod.RedosSchema.safeParse(object("aaaa")).success).toBe(true);
    // As a JavaScript RegExp this took 1.5 s at 28 characters, doubling with each one.
    let started = performance.now();
    expect(mod.RedosSchema.safeParse(object(`${"a".repeat(30)}b`)).success).toBe(false);
    expect(performance.now() - started).toBeLessThan(500);
    started = performance.now();
    expect(mod.RedosSchema.safeParse(object(`${"a".repeat(100_000)}b`)).success).toBe(false);
    expect(performance.now() - started).toBeLessThan(1_000);
  });

  test.each([
    ["lookahead-pattern.yaml", "password", "^(?=.*[0-9]).{8,}$"],
    ["backreference-pattern.yaml", "twin", "^(a+)-\\1$"],
  ])("%s: a pattern RE2 rejects is an error at its path", async (file, field, pattern) => {
    const error = await failure(generate({ inputs: [attack(file)] }));
    expect(error.location).toEqual({
      source: attack(file),
      document: 0,
      version: "v1",
      path: `spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.${field}.pattern`,
    });
    expect(error.problem).toContain(
      `pattern ${JSON.stringify(pattern)} is not an RE2 regular expression`,
    );
  });
});

describe("errors: exit 2, a clear message, nothing written", () => {
  test("a hand-written file in the way is never replaced, and nothing else is written", async () => {
    const out = await scratch("attack-handwritten");
    await writeFile(join(out, "index.ts"), "export const mine = 1;\n");
    const run = await cli(["generate", attack("deep.yaml"), "-o", out]);
    expect(run.stderr).toContain("index.ts exists and was not generated");
    expect(run.code).toBe(2);
    expect(await filesUnder(out)).toEqual(["index.ts"]);
    expect(await readFile(join(out, "index.ts"), "utf8")).toBe("export const mine = 1;\n");
  }, 60_000);

  test("a file where a folder is needed fails before anything is written", async () => {
    const out = await scratch("attack-eexist");
    await writeFile(join(out, "example.com"), "not a folder\n");
    const run = await cli(["generate", attack("deep.yaml"), "-o", out]);
    expect(run.stderr).toBe(
      `capi-ts-codegen: ${out}: example.com is a file where the generator needs a folder; move it\n`,
    );
    expect(run.code).toBe(2);
    expect(await filesUnder(out)).toEqual(["example.com"]);
  }, 60_000);

  test("an output folder that is a file", async () => {
    const base = await scratch("attack-outfile");
    await writeFile(join(base, "out"), "");
    const run = await cli(["generate", attack("deep.yaml"), "-o", join(base, "out")]);
    expect(run.stderr).toContain("the output folder is a file");
    expect(run.code).toBe(2);
  }, 60_000);

  test("a missing kubeconfig is exit 2 with one line, no stack", async () => {
    const base = await scratch("attack-kubeconfig");
    const missing = join(base, "missing-kubeconfig");
    const run = await cli(["generate", "--from-cluster", "--kubeconfig", missing, "-o", base]);
    expect(run.stderr).toMatch(
      new RegExp(`^capi-ts-codegen: ${missing}: cannot load the kubeconfig: .*\\n$`),
    );
    expect(run.code).toBe(2);
  }, 60_000);

  test("--from-cluster gives up on a server that never answers", async () => {
    const base = await scratch("attack-silent");
    // Accepts connections and never says a word.
    const sockets: import("node:net").Socket[] = [];
    const server: Server = createServer((socket) => void sockets.push(socket));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as { port: number };
    const kubeconfig = join(base, "kubeconfig");
    await writeFile(
      kubeconfig,
      `apiVersion: v1
kind: Config
clusters: [{ name: silent, cluster: { server: "http://127.0.0.1:${port}", insecure-skip-tls-verify: true } }]
users: [{ name: nobody, user: {} }]
contexts: [{ name: silent, context: { cluster: silent, user: nobody } }]
current-context: silent
`,
    );
    try {
      const run = await cli([
        "generate",
        "--from-cluster",
        "--kubeconfig",
        kubeconfig,
        "--request-timeout",
        "0.5",
        "-o",
        join(base, "out"),
      ]);
      expect(run.stderr).toBe(
        `capi-ts-codegen: cluster http://127.0.0.1:${port}: the API server did not answer the CRD list within 500 ms; check that the server is up, or allow more time with --request-timeout\n`,
      );
      expect(run.code).toBe(2);
      await expect(access(join(base, "out"))).rejects.toThrow();
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    }
  }, 60_000);
});
