#!/usr/bin/env node
// capi-ts-codegen: the command-line front end of generate() / writeGenerated() / checkGenerated().
import { relative } from "node:path";
import { Command, CommanderError } from "commander";
import { CodegenError } from "./errors.js";
import { checkGenerated, generate, writeGenerated } from "./generate.js";
import { version } from "./index.js";

interface GenerateFlags {
  readonly output: string;
  readonly check?: boolean;
  readonly fromCluster?: boolean;
  readonly kubeconfig?: string;
  readonly context?: string;
  readonly requestTimeout?: string;
  readonly group?: string[];
  readonly runtimeSource?: boolean;
}

/**
 * Runs the CLI.
 *
 * @param argv - process.argv
 * @returns the exit code: 0 done, 1 stale output (with --check), 2 bad input, usage, or an
 *   output folder that cannot take the files (nothing is written then)
 */
export async function main(argv: readonly string[]): Promise<number> {
  let exitCode = 0;
  const program = new Command()
    .name("capi-ts-codegen")
    .description(
      "Generate TypeScript (interfaces, zod schemas, Model classes, resource metadata) from Kubernetes CRDs",
    )
    .version(version)
    .exitOverride();
  program
    .command("generate")
    .description("generate one module per API group/version into the output folder")
    .argument(
      "[inputs...]",
      'CRD YAML/JSON files, folders (searched recursively), or "-" for standard input',
    )
    .requiredOption("-o, --output <dir>", "output folder")
    .option("--check", "write nothing; exit 1 and list the files that would change")
    .option("--from-cluster", "also read the CRDs of the cluster in the kubeconfig")
    .option(
      "--kubeconfig <file>",
      "kubeconfig for --from-cluster (default: $KUBECONFIG or ~/.kube/config)",
    )
    .option("--context <name>", "kubeconfig context for --from-cluster")
    .option(
      "--request-timeout <seconds>",
      "how long --from-cluster waits for the API server's answer (default: 30)",
    )
    .option("--group <group...>", "only generate these API groups (repeatable)")
    .option(
      "--runtime-source",
      "write the runtime modules (schemas, Model classes, resource metadata) as TypeScript your compiler checks against the interfaces, instead of compiled JavaScript with declarations",
    )
    .action(async (inputs: string[], flags: GenerateFlags) => {
      if (inputs.length === 0 && flags.fromCluster !== true) {
        throw new CodegenError(
          { source: "command line" },
          "no input; pass CRD files or folders, '-' for stdin, or --from-cluster",
        );
      }
      let timeoutMs: number | undefined;
      if (flags.requestTimeout !== undefined) {
        const seconds = Number(flags.requestTimeout);
        if (flags.requestTimeout.trim() === "" || !Number.isFinite(seconds) || seconds <= 0) {
          throw new CodegenError(
            { source: "command line" },
            `--request-timeout must be a positive number of seconds, not ${JSON.stringify(flags.requestTimeout)}`,
          );
        }
        timeoutMs = Math.ceil(seconds * 1000);
      }
      const started = performance.now();
      const result = await generate({
        inputs,
        fromCluster:
          flags.fromCluster === true
            ? { kubeconfig: flags.kubeconfig, context: flags.context, timeoutMs }
            : undefined,
        groups: flags.group,
        runtime: flags.runtimeSource === true ? "source" : "compiled",
      });
      const out = flags.output;
      if (flags.check === true) {
        const report = await checkGenerated(result.files, out);
        const stale = [
          ...report.changed.map((p) => `changed  ${p}`),
          ...report.missing.map((p) => `missing  ${p}`),
          ...report.extra.map((p) => `extra    ${p}`),
        ];
        if (stale.length > 0) {
          process.stderr.write(
            `${stale.length} generated files in ${out} are stale; run without --check to update:\n`,
          );
          for (const line of stale) process.stderr.write(`  ${line}\n`);
          exitCode = 1;
          return;
        }
        process.stdout.write(`${out} is up to date (${result.files.length} files)\n`);
        return;
      }
      const report = await writeGenerated(result.files, out);
      const ms = Math.round(performance.now() - started);
      process.stdout.write(
        `generated ${result.groupVersions.length} group/versions (${result.files.length} files) into ${relative(process.cwd(), out) || "."} in ${ms} ms: ` +
          `${report.changed.length} changed, ${report.missing.length} new, ${report.extra.length} deleted\n`,
      );
    });
  try {
    await program.parseAsync([...argv]);
  } catch (error) {
    if (error instanceof CommanderError) {
      return error.exitCode === 0 ? 0 : 2;
    }
    if (error instanceof CodegenError) {
      process.stderr.write(`capi-ts-codegen: ${error.message}\n`);
      return 2;
    }
    // A filesystem or network error that escaped the checks is still about the input or the
    // machine, not a bug: say it in one line, as for bad input.
    if (error instanceof Error && typeof (error as NodeJS.ErrnoException).code === "string") {
      process.stderr.write(`capi-ts-codegen: ${error.message}\n`);
      return 2;
    }
    throw error;
  }
  return exitCode;
}

process.exitCode = await main(process.argv);
