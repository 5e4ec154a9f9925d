/**
 * `npm create capi-provider <folder>`: writes a Cluster API MachinePool provider project built on
 * capi-ts — the kind, a driver skeleton over a `CloudClient` with TODOs, an in-memory cloud, driver
 * and conformance tests, a production `main`, a Dockerfile, manifests rendering, `metadata.yaml`, a
 * cluster template and a README. Asks nothing: every choice has a default (override with flags).
 *
 * @example
 * ```ts
 * import { scaffold } from "create-capi-provider";
 *
 * const written = await scaffold({ directory: "foo-provider", name: "foo" });
 * await scaffold({ directory: "bar-provider", machinePoolMachines: true }); // with MachinePool Machines
 * ```
 *
 * @packageDocumentation
 */
import { existsSync } from "node:fs";
import { mkdir, readdir, readFile, writeFile } from "node:fs/promises";
import { basename, dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** The package version; the scaffold depends on `@capi-ts/sdk` and `@capi-ts/testing` of this version. */
export const version = "0.2.1";

/** Options of {@link scaffold}. */
export interface ScaffoldOptions {
  /** Where to write the project (created if missing). */
  directory: string;
  /**
   * The provider name (`clusterctl init --infrastructure <name>`): lower-case letters and digits,
   * dashes inside, starting with a letter, at most 30 characters. Default: the folder's name without a
   * `-provider` / `cluster-api-provider-` affix.
   */
  name?: string;
  /** The API group (default `infrastructure.<name>.example.com`). */
  group?: string;
  /** Write into a non-empty folder (files of the scaffold are overwritten). Default false. */
  force?: boolean;
  /** The version range of the capi-ts packages (default `^<this version>`). */
  sdkVersion?: string;
  /**
   * A folder holding the capi-ts package tarballs (`capi-ts-sdk-<version>.tgz` and
   * `capi-ts-testing-<version>.tgz`, as `./dev pack` in a capi-ts checkout, `pnpm pack` or `npm pack`
   * write them): the project depends on those files (a path relative to the project) instead of the
   * registry, with an `overrides` entry so that every package uses the same SDK. For a checkout, run
   * `./dev pack` in it and pass the folder it prints. Default: the registry.
   */
  packages?: string;
  /**
   * Define the kind with MachinePool Machines (`machinePoolMachines: true` in `src/kind.ts`): an
   * InfraMachine per instance, so core makes a Machine for each and drains its Node before the
   * instance goes. Default false; the line is in `src/kind.ts` either way.
   */
  machinePoolMachines?: boolean;
}

/** What {@link scaffold} wrote. */
export interface ScaffoldResult {
  /** The project folder, absolute. */
  readonly directory: string;
  /** The provider name used. */
  readonly name: string;
  /** The kind, e.g. `FooMachinePool`. */
  readonly kind: string;
  /** Files written, relative to the folder. */
  readonly files: readonly string[];
}

/** The oldest Node the scaffolded project runs on (its `engines.node`). */
export const MINIMUM_NODE = "22.19.0";

/**
 * Checks a Node version (`process.versions.node`) against {@link MINIMUM_NODE}; returns the problem and
 * what to do, or `undefined` when it is new enough.
 *
 * @example
 * ```ts
 * nodeVersionProblem("20.19.5"); // "Node 20.19.5 is too old: …"
 * nodeVersionProblem("24.11.0"); // undefined
 * ```
 */
export function nodeVersionProblem(nodeVersion: string): string | undefined {
  const [major = 0, minor = 0] = nodeVersion.split(".").map(Number);
  const [needMajor = 0, needMinor = 0] = MINIMUM_NODE.split(".").map(Number);
  if (major > needMajor || (major === needMajor && minor >= needMinor)) return undefined;
  return `Node ${nodeVersion} is too old: capi-ts needs Node >= ${MINIMUM_NODE} (24 LTS recommended). Install it (from nodejs.org, or \`nvm install 24\` / \`fnm install 24\`) and run this again.`;
}

const NAME = /^[a-z]([a-z0-9-]{0,28}[a-z0-9])?$/;
const GROUP = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)+$/;
// npm drops dotfiles named like these from tarballs, so the template keeps them without the dot.
const RENAMED: Record<string, string> = { gitignore: ".gitignore", dockerignore: ".dockerignore" };

/**
 * Checks a provider name; returns the problem, or `undefined` when it is fine.
 *
 * @example
 * ```ts
 * providerNameProblem("Foo_Cloud"); // 'provider name "Foo_Cloud" is not allowed: use …'
 * ```
 */
export function providerNameProblem(name: string): string | undefined {
  if (NAME.test(name)) return undefined;
  return `provider name "${name}" is not allowed: use 1 to 30 lower-case letters, digits and dashes, starting with a letter and not ending with a dash (e.g. "foo" or "acme-cloud"); it becomes infrastructure-<name> for clusterctl`;
}

function defaultName(directory: string): string {
  return basename(resolve(directory))
    .toLowerCase()
    .replace(/^cluster-api-provider-/, "")
    .replace(/-provider$/, "");
}

// A provider name may hold dashes; TypeScript identifiers may not. The template marks an identifier by
// case: `Foo…` becomes PascalCase (`acme-cloud` → `AcmeCloudMachinePool`), `foo` followed by an upper-case
// letter becomes camelCase (`acmeCloudDriver`), and every other `foo` (strings, URLs, YAML) the name as is.
function pascal(name: string): string {
  return name
    .split("-")
    .map((part) => part.charAt(0).toUpperCase() + part.slice(1))
    .join("");
}

function camel(name: string): string {
  const pascalName = pascal(name);
  return pascalName.charAt(0).toLowerCase() + pascalName.slice(1);
}

async function listTemplate(root: string, folder = root): Promise<string[]> {
  const entries = await readdir(folder, { withFileTypes: true });
  const files: string[] = [];
  for (const entry of entries) {
    const path = join(folder, entry.name);
    if (entry.isDirectory()) files.push(...(await listTemplate(root, path)));
    else files.push(relative(root, path));
  }
  return files.sort();
}

const TARBALLS = { sdk: "@capi-ts/sdk", testing: "@capi-ts/testing" } as const;

/** The tarball of each capi-ts package in `folder`, or an error that says what is there instead. */
async function localTarballs(folder: string): Promise<Record<keyof typeof TARBALLS, string>> {
  const absolute = resolve(folder);
  if (!existsSync(absolute)) {
    throw new Error(
      `--packages ${folder}: no such folder; pass the folder that \`./dev pack\` printed in a capi-ts checkout`,
    );
  }
  const present = (await readdir(absolute)).filter((file) => file.endsWith(".tgz")).sort();
  const found: Partial<Record<keyof typeof TARBALLS, string>> = {};
  for (const key of Object.keys(TARBALLS) as Array<keyof typeof TARBALLS>) {
    const file = `capi-ts-${key}-${version}.tgz`;
    if (present.includes(file)) found[key] = join(absolute, file);
  }
  if (found.sdk && found.testing) return { sdk: found.sdk, testing: found.testing };
  const checkout = existsSync(join(absolute, "packages", "sdk", "package.json"));
  const missing = (Object.keys(TARBALLS) as Array<keyof typeof TARBALLS>)
    .filter((key) => !found[key])
    .map((key) => `capi-ts-${key}-${version}.tgz`);
  throw new Error(
    checkout
      ? `--packages ${folder} is a capi-ts checkout, not a folder of tarballs: run \`./dev pack\` in it and pass the folder it prints`
      : `--packages ${folder} lacks ${missing.join(" and ")} (it has ${present.length > 0 ? present.slice(0, 5).join(", ") : "no .tgz file"}); pack capi-ts ${version} into it (\`./dev pack\` in a checkout)`,
  );
}

/** The scaffold's package.json pointed at local tarballs, by paths relative to the project. */
function withLocalPackages(
  manifestText: string,
  directory: string,
  tarballs: Record<keyof typeof TARBALLS, string>,
): string {
  const manifest = JSON.parse(manifestText) as {
    dependencies: Record<string, string>;
    devDependencies: Record<string, string>;
    overrides?: Record<string, string>;
  };
  const spec = (tarball: string) => {
    const path = relative(directory, tarball).split("\\").join("/");
    return `file:${path.startsWith(".") ? path : `./${path}`}`;
  };
  manifest.dependencies[TARBALLS.sdk] = spec(tarballs.sdk);
  manifest.devDependencies[TARBALLS.testing] = spec(tarballs.testing);
  // @capi-ts/testing depends on @capi-ts/sdk by version range: without the override npm would fetch
  // that from the registry (where it may not exist) beside the local one.
  manifest.overrides = { ...manifest.overrides, [TARBALLS.sdk]: `$${TARBALLS.sdk}` };
  return `${JSON.stringify(manifest, null, 2)}\n`;
}

/**
 * Writes the provider project. Refuses a non-empty folder unless `force`, and an invalid name or group
 * with what is allowed.
 *
 * @example
 * ```ts
 * await scaffold({ directory: "acme-provider" }); // name "acme", kind AcmeMachinePool
 * ```
 */
export async function scaffold(options: ScaffoldOptions): Promise<ScaffoldResult> {
  const directory = resolve(options.directory);
  const name = options.name ?? defaultName(directory);
  const nameProblem = providerNameProblem(name);
  if (nameProblem) throw new Error(`${nameProblem}; pass --name <name>`);
  const group = options.group ?? `infrastructure.${name}.example.com`;
  if (!GROUP.test(group) || group.length > 253) {
    throw new Error(
      `API group "${group}" is not allowed: use a lower-case DNS name with at least one dot (e.g. "infrastructure.acme.com")`,
    );
  }
  if (existsSync(directory)) {
    const present = await readdir(directory);
    if (present.length > 0 && !options.force) {
      throw new Error(
        `${directory} is not empty (${present.slice(0, 3).join(", ")}${present.length > 3 ? ", …" : ""}); choose a new folder, or pass --force to write the scaffold's files over it`,
      );
    }
  }
  const tarballs =
    options.packages === undefined ? undefined : await localTarballs(options.packages);
  const Name = pascal(name);
  const kind = `${Name}MachinePool`;
  const replacements: Array<[RegExp, string]> = [
    [/__SDK_VERSION__/g, (options.sdkVersion ?? `^${version}`).replace(/^\^/, "")],
    [
      /machinePoolMachines: false,/g,
      `machinePoolMachines: ${options.machinePoolMachines === true},`,
    ],
    [/infrastructure\.foo\.example\.com/g, group],
    [/Foo/g, Name],
    [/FOO/g, name.toUpperCase().replaceAll("-", "_")],
    [/foo(?=[A-Z])/g, camel(name)],
    [/foo/g, name],
  ];
  const templateRoot = fileURLToPath(new URL("../template", import.meta.url));
  const written: string[] = [];
  for (const file of await listTemplate(templateRoot)) {
    let text = await readFile(join(templateRoot, file), "utf8");
    for (const [pattern, value] of replacements) text = text.replace(pattern, value);
    if (file === "package.json" && tarballs) text = withLocalPackages(text, directory, tarballs);
    const target = file
      .split("/")
      // A file named for the kind (config/samples/foomachinepool.yaml) takes the kind's lower case.
      .map(
        (part) =>
          RENAMED[part] ??
          part.replace(/foo(?=machinepool)/g, Name.toLowerCase()).replace(/foo/g, name),
      )
      .join("/");
    await mkdir(dirname(join(directory, target)), { recursive: true });
    await writeFile(join(directory, target), text);
    written.push(target);
  }
  return { directory, name, kind, files: written };
}
