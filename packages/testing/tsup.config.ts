import { defineConfig } from "tsup";

export default defineConfig({
  entry: ["src/index.ts", "src/vitest.ts"],
  // vitest stays an import of dist/vitest.js only: the root entry must load without it.
  external: ["vitest"],
  format: ["esm"],
  dts: true,
  sourcemap: true,
  clean: true,
  target: "node22",
  platform: "node",
});
