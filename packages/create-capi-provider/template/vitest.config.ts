import { availableParallelism } from "node:os";
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // The conformance suite starts an API server and the CAPI core emulator per run.
    hookTimeout: 180_000,
    testTimeout: 120_000,
    // The conformance suite and the components test mostly wait (on core's pace, on a kube-apiserver
    // starting): run the files side by side even on 2 cores, where vitest's default is one at a time.
    maxWorkers: Math.max(2, availableParallelism()),
  },
});
