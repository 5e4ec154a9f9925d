import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import ts from "typescript";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { nodeVersionProblem, providerNameProblem, scaffold, version } from "../src/index.js";

let root: string;
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "create-capi-provider-"));
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

describe("scaffold", () => {
  it("derives the name from the folder and writes the project with every placeholder replaced", async () => {
    const result = await scaffold({ directory: join(root, "acme-cloud-provider") });
    expect(result).toMatchObject({ name: "acme-cloud", kind: "AcmeCloudMachinePool" });
    expect(result.files).toEqual(
      expect.arrayContaining([
        ".gitignore",
        ".dockerignore",
        "Dockerfile",
        "README.md",
        "metadata.yaml",
        "package.json",
        "src/kind.ts",
        "src/driver.ts",
        "src/main.ts",
        "src/manifests.ts",
        "templates/cluster-template.yaml",
        "templates/cluster-template-clusterclass.yaml",
        "templates/clusterclass-acme-cloud-default.yaml",
        "test/conformance.test.ts",
        "config/samples/acmecloudmachinepool.yaml",
      ]),
    );
    const kind = await readFile(join(result.directory, "src/kind.ts"), "utf8");
    expect(kind).toContain('group: "infrastructure.acme-cloud.example.com"');
    expect(kind).toContain('kind: "AcmeCloudMachinePool"');
    const pkg = JSON.parse(await readFile(join(result.directory, "package.json"), "utf8"));
    expect(pkg.name).toBe("acme-cloud-provider");
    // The capi-ts packages of this very release: the four are versioned together.
    const own = JSON.parse(await readFile(join(import.meta.dirname, "..", "package.json"), "utf8"));
    expect(version).toBe(own.version);
    expect(pkg.dependencies["@capi-ts/sdk"]).toBe(`^${own.version}`);
    expect(pkg.devDependencies["@capi-ts/testing"]).toBe(`^${own.version}`);
    for (const file of result.files) {
      const text = await readFile(join(result.directory, file), "utf8");
      expect(text, file).not.toMatch(/foo|Foo|FOO|__SDK_VERSION__/);
    }
  });

  // Every shape the validator accepts: one word, dashes, digits, a dash before a digit, the longest.
  it.each([
    ["foo", "FooMachinePool", "fooDriver"],
    ["acme-cloud", "AcmeCloudMachinePool", "acmeCloudDriver"],
    ["my-pool", "MyPoolMachinePool", "myPoolDriver"],
    ["k8s2-cloud9", "K8s2Cloud9MachinePool", "k8s2Cloud9Driver"],
    ["edge-2", "Edge2MachinePool", "edge2Driver"],
    [
      "a23456789-b23456789-c234567890",
      "A23456789B23456789C234567890MachinePool",
      "a23456789B23456789C234567890Driver",
    ],
  ])(
    "scaffolds %s into TypeScript that parses, with identifiers of the name",
    async (name, kind, driver) => {
      expect(providerNameProblem(name)).toBeUndefined();
      const result = await scaffold({ directory: join(root, `${name}-provider`), name });
      expect(result.kind).toBe(kind);
      const driverSource = await readFile(join(result.directory, "src/driver.ts"), "utf8");
      expect(driverSource).toContain(`export function ${driver}(`);
      for (const file of result.files.filter((f) => f.endsWith(".ts"))) {
        const text = await readFile(join(result.directory, file), "utf8");
        const diagnostics =
          ts.transpileModule(text, {
            fileName: file,
            reportDiagnostics: true,
            compilerOptions: { module: ts.ModuleKind.NodeNext, target: ts.ScriptTarget.ES2023 },
          }).diagnostics ?? [];
        const problems = diagnostics.map((d) =>
          ts.flattenDiagnosticMessageText(d.messageText, "\n"),
        );
        expect(problems, file).toEqual([]);
      }
      const sample = await readFile(
        join(result.directory, `config/samples/${kind.toLowerCase()}.yaml`),
        "utf8",
      );
      expect(sample).toContain(`kind: ${kind}`);
    },
  );

  it("writes the kind without MachinePool Machines by default and with them when asked", async () => {
    const plain = await scaffold({ directory: join(root, "plain"), name: "acme" });
    const plainKind = await readFile(join(plain.directory, "src/kind.ts"), "utf8");
    expect(plainKind).toContain("machinePoolMachines: false,");
    const machines = await scaffold({
      directory: join(root, "machines"),
      name: "acme",
      machinePoolMachines: true,
    });
    const machinesKind = await readFile(join(machines.directory, "src/kind.ts"), "utf8");
    expect(machinesKind).toContain("machinePoolMachines: true,");
    expect(machinesKind).toContain("AcmeMachinePoolMachine per instance");
  });

  it("refuses a non-empty folder unless forced", async () => {
    await writeFile(join(root, "notes.txt"), "mine");
    await expect(scaffold({ directory: root, name: "acme" })).rejects.toThrow(
      /is not empty \(notes\.txt\); choose a new folder, or pass --force/,
    );
    const forced = await scaffold({ directory: root, name: "acme", force: true });
    expect(forced.files).toContain("src/driver.ts");
    expect(await readFile(join(root, "notes.txt"), "utf8")).toBe("mine");
  });

  it("depends on local tarballs with --packages, by paths relative to the project", async () => {
    const tarballs = join(root, "tarballs");
    await mkdir(tarballs);
    for (const name of ["sdk", "testing"]) {
      await writeFile(join(tarballs, `capi-ts-${name}-${version}.tgz`), "");
    }
    const result = await scaffold({ directory: join(root, "acme-provider"), packages: tarballs });
    const pkg = JSON.parse(await readFile(join(result.directory, "package.json"), "utf8"));
    expect(pkg.dependencies["@capi-ts/sdk"]).toBe(`file:../tarballs/capi-ts-sdk-${version}.tgz`);
    expect(pkg.devDependencies["@capi-ts/testing"]).toBe(
      `file:../tarballs/capi-ts-testing-${version}.tgz`,
    );
    expect(pkg.overrides).toEqual({ "@capi-ts/sdk": "$@capi-ts/sdk" });
    expect(pkg.dependencies.zod).toBeDefined();
  });

  it("says what --packages lacks, and what to do with a checkout", async () => {
    const tarballs = join(root, "some");
    await mkdir(tarballs);
    await writeFile(join(tarballs, `capi-ts-sdk-${version}.tgz`), "");
    await expect(
      scaffold({ directory: join(root, "a-provider"), packages: tarballs }),
    ).rejects.toThrow(`lacks capi-ts-testing-${version}.tgz (it has capi-ts-sdk-${version}.tgz)`);
    const checkout = join(root, "capi-ts");
    await mkdir(join(checkout, "packages", "sdk"), { recursive: true });
    await writeFile(join(checkout, "packages", "sdk", "package.json"), "{}");
    await expect(
      scaffold({ directory: join(root, "b-provider"), packages: checkout }),
    ).rejects.toThrow(/is a capi-ts checkout, not a folder of tarballs: run `\.\/dev pack` in it/);
    await expect(
      scaffold({ directory: join(root, "c-provider"), packages: join(root, "nowhere") }),
    ).rejects.toThrow(/no such folder/);
  });

  it("refuses a Node older than the project's engines, saying what to install", () => {
    expect(nodeVersionProblem("20.19.5")).toMatch(
      /^Node 20\.19\.5 is too old: capi-ts needs Node >= 22\.19\.0 .*Install it/,
    );
    expect(nodeVersionProblem("22.18.0")).toMatch(/too old/);
    expect(nodeVersionProblem("22.19.0")).toBeUndefined();
    expect(nodeVersionProblem("24.11.1")).toBeUndefined();
  });

  it("says what a provider name may be", async () => {
    await expect(scaffold({ directory: join(root, "x"), name: "Acme_Cloud" })).rejects.toThrow(
      'provider name "Acme_Cloud" is not allowed: use 1 to 30 lower-case letters, digits and dashes',
    );
    expect(providerNameProblem("acme-")).toMatch(/not ending with a dash/);
    expect(providerNameProblem("acme")).toBeUndefined();
    await expect(
      scaffold({ directory: join(root, "y"), name: "acme", group: "acme" }),
    ).rejects.toThrow(/API group "acme" is not allowed/);
  });
});
