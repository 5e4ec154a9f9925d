import { readFile, writeFile } from "node:fs/promises";
import { defineConfig } from "tsup";
import { PRECOMPILED_RUNTIME_FILE, precompileCommonRuntime } from "./src/runtime-files.js";

export default defineConfig({
  entry: ["src/index.ts", "src/cli.ts"],
  format: ["esm"],
  dts: true,
  sourcemap: true,
  clean: true,
  target: "node22",
  platform: "node",
  // The common runtime every generated folder carries, compiled here once instead of on every
  // generator run; src/runtime-files.ts reads it from next to the bundle.
  async onSuccess() {
    const source = await readFile(new URL("./src/runtime/common.ts", import.meta.url), "utf8");
    await writeFile(
      new URL(`./dist/${PRECOMPILED_RUNTIME_FILE}`, import.meta.url),
      precompileCommonRuntime(source),
    );
  },
});
