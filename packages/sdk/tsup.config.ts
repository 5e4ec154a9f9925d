import { readdirSync } from "node:fs";
import { defineConfig } from "tsup";

// One entry per public subpath (see package.json `exports`); shared code lands in common chunks.
const subpaths = [
  "runtime",
  "provider",
  "crd",
  "contract",
  "clustercache",
  "patch",
  "conditions",
  "webhook",
  "manifests",
];
const apiVersions = readdirSync("src/api", { withFileTypes: true })
  .filter((entry) => entry.isDirectory())
  .flatMap((group) =>
    readdirSync(`src/api/${group.name}`)
      .filter((file) => /^v[^.]+\.ts$/.test(file))
      .map((file) => `api/${group.name}/${file.replace(/\.ts$/, "")}`),
  );

export default defineConfig({
  entry: {
    index: "src/index.ts",
    ...Object.fromEntries(subpaths.map((name) => [`${name}/index`, `src/${name}/index.ts`])),
    "provider/testing": "src/provider/testing.ts",
    "api/index": "src/api/index.ts",
    ...Object.fromEntries(apiVersions.map((name) => [name, `src/${name}.ts`])),
  },
  format: ["esm"],
  dts: true,
  sourcemap: true,
  clean: true,
  target: "node22",
  platform: "node",
});
