import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // The conformance suite starts an API server and the CAPI core emulator per run.
    hookTimeout: 180_000,
    testTimeout: 120_000,
  },
});
