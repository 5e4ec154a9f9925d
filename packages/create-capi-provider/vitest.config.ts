import { configDefaults, defineProject } from "vitest/config";

export default defineProject({
  resolve: { conditions: ["capi-ts-source"] },
  ssr: { resolve: { conditions: ["capi-ts-source"] } },
  test: {
    name: "create-capi-provider",
    environment: "node",
    include: ["test/**/*.test.ts"],
    // The previous release's scaffold: ./dev e2e runs its driver tests against the tarballs.
    exclude: [...configDefaults.exclude, "test/fixtures/**"],
  },
});
