// ./dev pack [--into <folder>] — build and pack the publishable packages into a folder (default
// .tmp/packages), for a provider project that uses a checkout instead of the registry:
//
//   npm exec --yes --package <folder>/create-capi-provider-<version>.tgz -- \
//     create-capi-provider my-provider --packages <folder>
//
// Prints the folder and that command.
import { spawnSync } from "node:child_process";
import { mkdirSync, readdirSync, rmSync } from "node:fs";
import { join, resolve } from "node:path";

const root = resolve(import.meta.dirname, "..");
const args = process.argv.slice(2);
const intoAt = args.indexOf("--into");
if (args.length > 0 && (intoAt !== 0 || args.length !== 2)) {
  console.error("usage: ./dev pack [--into <folder>]");
  process.exit(2);
}
const into = resolve(intoAt === 0 ? (args[1] as string) : join(root, ".tmp", "packages"));
const published = ["sdk", "testing", "codegen", "create-capi-provider"];

function run(command: string, commandArgs: string[], cwd: string): void {
  const result = spawnSync(command, commandArgs, { cwd, stdio: ["ignore", "inherit", "inherit"] });
  if (result.status !== 0) {
    console.error(
      `pack: ${command} ${commandArgs.join(" ")} exited ${result.status ?? result.signal}`,
    );
    process.exit(1);
  }
}

mkdirSync(into, { recursive: true });
// Old tarballs of these packages would leave two versions for the scaffolder to choose from.
for (const file of readdirSync(into)) {
  if (/^(capi-ts-(sdk|testing|codegen)|create-capi-provider)-.*\.tgz$/.test(file)) {
    rmSync(join(into, file));
  }
}
run("turbo", ["run", "build", "--output-logs=errors-only"], root);
for (const name of published) {
  run("pnpm", ["pack", "--pack-destination", into], join(root, "packages", name));
}
const scaffolder = readdirSync(into).find((file) => file.startsWith("create-capi-provider-"));
console.log(`\npacked into ${into}
scaffold a provider on these packages:
  npm exec --yes --package ${join(into, scaffolder ?? "create-capi-provider-<version>.tgz")} -- \\
    create-capi-provider my-provider --packages ${into}`);
