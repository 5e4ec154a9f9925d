import { spawnSync } from "node:child_process";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";

// Importing the provider author's entry points must not load @kubernetes/client-node (its
// KubeConfig pulls the whole generated API into the heap): a child process records every module
// it loads through a load hook, then imports them.
const PROBE = `
import { registerHooks } from "node:module";
const loaded = [];
registerHooks({ load(url, context, next) { loaded.push(url); return next(url, context); } });
for (const specifier of JSON.parse(process.env.LEAN_IMPORTS)) await import(specifier);
process.stdout.write(JSON.stringify(loaded));
`;

function modulesLoadedBy(specifiers: readonly string[]): string[] {
  const result = spawnSync(
    process.execPath,
    ["--conditions=capi-ts-source", "--import", "tsx", "--input-type=module", "-e", PROBE],
    {
      cwd: resolve(import.meta.dirname, "..", ".."),
      env: { ...process.env, LEAN_IMPORTS: JSON.stringify(specifiers) },
      encoding: "utf8",
    },
  );
  if (result.status !== 0) throw new Error(`the probe failed: ${result.stderr}`);
  return JSON.parse(result.stdout) as string[];
}

describe("importing the SDK", () => {
  it("loads the SDK's own modules, and not @kubernetes/client-node", () => {
    const loaded = modulesLoadedBy([
      "@capi-ts/sdk",
      "@capi-ts/sdk/runtime",
      "@capi-ts/sdk/provider",
    ]);
    // The probe sees the SDK itself, so an empty list cannot pass for a clean one.
    expect(loaded.some((url) => url.endsWith("/runtime/client.ts"))).toBe(true);
    expect(loaded.some((url) => url.endsWith("/runtime/kubeconfig-loader.ts"))).toBe(true);
    expect(loaded.filter((url) => url.includes("@kubernetes/client-node"))).toEqual([]);
  }, 60_000);
});
