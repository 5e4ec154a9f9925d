// Benchmarked processes run as a provider ships them: bundled with tsup, the SDK (and any other
// @capi-ts package) from its sources, every npm dependency left external and loaded from node_modules,
// on plain Node. The bundle is written under packages/sdk/.tmp so that it resolves the SDK's
// dependencies (those of the example and of the peers are a subset of them).
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { build } from "tsup";

const sdkRoot = join(import.meta.dirname, "..", "..", "sdk");

/**
 * Bundles `entries` (output name → source file) into packages/sdk/.tmp/`folder` and returns that
 * directory; each entry becomes `<name>.js` in it.
 */
export async function bundleAsShipped(
  folder: string,
  entries: Record<string, string>,
): Promise<string> {
  const manifest = JSON.parse(readFileSync(join(sdkRoot, "package.json"), "utf8"));
  const outDir = join(sdkRoot, ".tmp", folder);
  await build({
    entry: entries,
    outDir,
    format: ["esm"],
    platform: "node",
    target: "node22",
    splitting: false,
    dts: false,
    silent: true,
    config: false,
    noExternal: [/^@capi-ts\//],
    external: Object.keys(manifest.dependencies ?? {}),
    esbuildOptions(options) {
      options.conditions = ["capi-ts-source"];
    },
  });
  return outDir;
}
