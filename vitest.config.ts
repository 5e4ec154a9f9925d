import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    projects: [
      "packages/*",
      "packages/testing/vitest.config.real.ts",
      "packages/integration/vitest.config.real.ts",
    ],
  },
});
