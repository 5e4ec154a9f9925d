import { defineProject } from "vitest/config";

export default defineProject({
  resolve: { conditions: ["capi-ts-source"] },
  ssr: { resolve: { conditions: ["capi-ts-source"] } },
  test: {
    name: "integration",
    environment: "node",
    include: ["test/**/*.test.ts"],
  },
});
