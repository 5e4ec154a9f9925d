import { defineProject } from "vitest/config";

export default defineProject({
  resolve: { conditions: ["capi-ts-source"] },
  ssr: { resolve: { conditions: ["capi-ts-source"] } },
  test: {
    name: "codegen",
    environment: "node",
    include: ["src/**/*.test.ts", "test/**/*.test.ts"],
    setupFiles: ["test/setup.ts"],
  },
});
