#!/usr/bin/env node
// npm create capi-provider [folder] [--name n] [--group g] [--machine-pool-machines] [--force]
import { Command } from "commander";
import { nodeVersionProblem, scaffold } from "./index.js";

// The project it writes runs on Node >= 22.19; saying so now beats a scaffold that cannot start.
const nodeProblem = nodeVersionProblem(process.versions.node);
if (nodeProblem) {
  console.error(`create-capi-provider: ${nodeProblem}`);
  process.exit(2);
}

interface ScaffoldFlags {
  name?: string;
  packages?: string;
  group?: string;
  machinePoolMachines: boolean;
  force: boolean;
}

const program = new Command("create-capi-provider")
  .description("Write a Cluster API MachinePool provider project built on capi-ts")
  .argument("[folder]", "where to write it", "foo-provider")
  .option("--name <name>", "provider name for clusterctl (default: from the folder name)")
  .option("--group <group>", "API group (default infrastructure.<name>.example.com)")
  .option(
    "--machine-pool-machines",
    "an InfraMachine per instance, so core makes a Machine for each (CAPI's MachinePool Machines)",
    false,
  )
  .option(
    "--packages <folder>",
    "depend on the capi-ts tarballs in this folder (./dev pack in a checkout) instead of the registry",
  )
  .option("--force", "write into a non-empty folder", false)
  .action(async (folder: string, options: ScaffoldFlags) => {
    try {
      const result = await scaffold({ directory: folder, ...options });
      console.log(`wrote ${result.files.length} files for ${result.kind} into ${result.directory}

next:
  cd ${folder}
  npm install
  npm test
  then fill in src/cloud.ts (see README.md)`);
    } catch (error) {
      console.error(
        `create-capi-provider: ${error instanceof Error ? error.message : String(error)}`,
      );
      process.exitCode = 2;
    }
  });

await program.parseAsync();
