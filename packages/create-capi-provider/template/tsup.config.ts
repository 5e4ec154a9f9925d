// The production build: each entry bundled into one file of dist/ with its dependencies, as Node
// services ship for a fast start (one file to load, not hundreds of ES modules resolved one by one;
// unused code of the bundled libraries left out). `tsc` type-checks before it (npm run build).
import { defineConfig } from "tsup";

export default defineConfig({
  entry: ["src/main.ts", "src/manifests.ts", "src/samples.ts"],
  format: ["esm"],
  platform: "node",
  target: "node22",
  // Every dependency goes into the bundle. A few parts of the SDK that are needed late (its logger,
  // its HTTP client) are required at run time from node_modules, which the image keeps.
  noExternal: [/.*/],
  // CommonJS code inside an ES module bundle needs a require of its own.
  banner: {
    js: 'import { createRequire as __createRequire } from "node:module"; const require = __createRequire(import.meta.url);',
  },
  // V8 holds a script's source while it runs, at two bytes a character if one character is outside
  // Latin-1 (a dash in a comment is enough). ASCII output (escapes in strings) without comments keeps
  // it at one: ~1 MiB for a provider instead of ~2.5. Names stay, so stack traces read as the source
  // does; the source map has the lines.
  minifyWhitespace: true,
  esbuildOptions(options) {
    options.charset = "ascii";
  },
  splitting: false,
  sourcemap: true,
  clean: true,
});
