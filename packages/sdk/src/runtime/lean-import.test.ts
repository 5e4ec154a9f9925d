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

// A client sends one request to a local server that answers every path with an empty list.
const SEND = `
import { createServer } from "node:http";
import { registerHooks } from "node:module";
const loaded = [];
registerHooks({ load(url, context, next) { loaded.push(url); return next(url, context); } });
const server = createServer((_, res) => res.end('{"kind":"List","items":[]}'));
await new Promise((r) => server.listen(0, "127.0.0.1", r));
const { mkdtempSync, rmSync, writeFileSync } = await import("node:fs");
const { join } = await import("node:path");
const { tmpdir } = await import("node:os");
const folder = mkdtempSync(join(tmpdir(), "lean-"));
const file = join(folder, "kubeconfig");
writeFileSync(file, JSON.stringify({
  apiVersion: "v1", kind: "Config", "current-context": "x",
  clusters: [{ name: "c", cluster: { server: "http://127.0.0.1:" + server.address().port } }],
  users: [{ name: "u", user: {} }], contexts: [{ name: "x", context: { cluster: "c", user: "u" } }],
}));
const { KubeClient, kubeconfigFromFiles } = await import("@capi-ts/sdk/runtime");
const kubeConfig = kubeconfigFromFiles([file]);
const client = new KubeClient(kubeConfig);
await client.request({ method: "GET", path: "/api/v1/namespaces" });
client.close();
server.close();
rmSync(folder, { recursive: true, force: true });
// CommonJS modules required through createRequire reach the cache, not every load hook.
const { createRequire } = await import("node:module");
const required = Object.keys(createRequire(import.meta.url).cache).map((path) => "file://" + path);
process.stdout.write(JSON.stringify([...loaded, ...required]));
`;

function modulesLoadedBy(specifiers: readonly string[], script = PROBE): string[] {
  const result = spawnSync(
    process.execPath,
    ["--conditions=capi-ts-source", "--import", "tsx", "--input-type=module", "-e", script],
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

  it("sends a request through undici's Agent and request API, without undici's index", () => {
    const loaded = modulesLoadedBy([], SEND);
    const undici = loaded.filter((url) => url.includes("/undici/"));
    expect(undici.some((url) => url.endsWith("/undici/lib/dispatcher/agent.js"))).toBe(true);
    expect(undici.some((url) => url.endsWith("/undici/lib/api/api-request.js"))).toBe(true);
    // The index loads fetch, WebSocket and the mock agents too.
    expect(undici.filter((url) => url.endsWith("/undici/index.js"))).toEqual([]);
    expect(undici.filter((url) => url.includes("/lib/web/"))).toEqual([]);
  }, 60_000);
});
