import { defineConfig } from "vitest/config";
import { BaseSequencer, type TestSpecification } from "vitest/node";

/**
 * The suite's long poles first. vitest orders files project by project (by name), then by cached
 * duration, else by size; on a clean clone (CI) there is no cache, so the conformance suites on real
 * core (5–8 minutes each) started 5–9 minutes into the run and the short files waited behind them at
 * the end. Files keep vitest's order within each rank.
 */
class LongPolesFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (spec: TestSpecification): number => {
      const path = spec.moduleId.replaceAll("\\", "/");
      if (/\/integration\/test\/conformance\/[^/]*-real\.test\.ts$/.test(path)) return 0;
      if (/\/integration\/test\/conformance\//.test(path)) return 1;
      if (/\/(controlplane|differential)\/|\/demo\.test\.ts$|\/chaos\//.test(path)) return 2;
      return 3;
    };
    return sorted
      .map((spec, index) => ({ spec, index, rank: rank(spec) }))
      .sort((a, b) => a.rank - b.rank || a.index - b.index)
      .map(({ spec }) => spec);
  }
}

export default defineConfig({
  test: {
    projects: [
      "packages/*",
      "packages/testing/vitest.config.real.ts",
      "packages/integration/vitest.config.real.ts",
    ],
    sequence: { sequencer: LongPolesFirst },
  },
});
