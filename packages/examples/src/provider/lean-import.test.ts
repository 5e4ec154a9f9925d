import { spawnSync } from "node:child_process";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";

// What the example provider's manager imports (its kind, its drivers, the cloud client and clock)
// must not load the test bed: neither @capi-ts/testing nor @kubernetes/client-node, which the
// cloud's kubelet uses to register Nodes. The scale benchmark measures this manager's memory, so a
// stray index import would be counted as the provider's. A child process records every module
// loaded through a load hook while it imports them.
const MANAGER_MODULES = [
  "./src/provider/kind.ts",
  "./src/provider/driver.ts",
  "./src/provider/scaleset-driver.ts",
  "./src/cloud/cloud.ts",
  "./src/cloud/clock.ts",
];

const RECORD_LOADS = `
import { registerHooks } from "node:module";
import { pathToFileURL } from "node:url";
const urls = [];
registerHooks({ load(url, context, next) { urls.push(url); return next(url, context); } });
for (const file of JSON.parse(process.env.MODULES)) await import(pathToFileURL(file).href);
process.stdout.write(JSON.stringify(urls));
`;

describe("the example provider's manager modules", () => {
  it("load the SDK and the cloud, not the test bed", () => {
    const packageRoot = resolve(import.meta.dirname, "..", "..");
    const child = spawnSync(
      process.execPath,
      ["--conditions=capi-ts-source", "--import", "tsx", "--input-type=module", "-e", RECORD_LOADS],
      {
        cwd: packageRoot,
        env: {
          ...process.env,
          MODULES: JSON.stringify(MANAGER_MODULES.map((m) => resolve(packageRoot, m))),
        },
        encoding: "utf8",
      },
    );
    if (child.status !== 0) throw new Error(`the probe failed: ${child.stderr}`);
    const urls = JSON.parse(child.stdout) as string[];
    // The probe sees the modules it imported and the SDK's kit, so an empty list fails.
    expect(urls.some((url) => url.endsWith("/provider/driver.ts"))).toBe(true);
    expect(urls.some((url) => url.endsWith("/sdk/src/provider/controller.ts"))).toBe(true);
    expect(
      urls.filter(
        (url) => url.includes("@kubernetes/client-node") || url.includes("/testing/src/"),
      ),
    ).toEqual([]);
  }, 60_000);
});
