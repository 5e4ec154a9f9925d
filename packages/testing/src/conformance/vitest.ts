import { afterAll, beforeAll, describe, test } from "vitest";
import {
  type ConformanceTestBed,
  type ConformanceTestBedPlan,
  heaviestFirst,
  planConformanceTestBeds,
  TestBedPool,
} from "./test-beds.js";
import { scaled } from "./time-scale.js";
import type { MachinePoolConformanceOptions } from "./types.js";

/**
 * Registers the InfraMachinePool conformance suite as vitest tests: one `describe` per provider, one
 * test per scenario (scale, token rotation, template rollout, autoscaler hand-off, pause, deletion,
 * out-of-band deletion, spot interruption, cloud throttling, API server faults, cleanup). Every stored
 * version of every pool is checked against the contract's invariants while the scenarios run; a
 * failure names the broken invariant, e.g. `[status.providerIDList] providerIDList must be sorted: got …`.
 * Scenarios whose cloud actor the provider does not offer are reported as skipped. The scenarios are
 * spread over test beds that run side by side (`testBeds`, see {@link planConformanceTestBeds}): the
 * heaviest first, each on the next bed that is free, one scenario at a time per bed; `cleanup` runs
 * last, over every bed.
 *
 * @example
 * ```ts
 * // foo.conformance.test.ts
 * runMachinePoolConformance({
 *   name: "FooMachinePool",
 *   kind: FooMachinePool,                      // defineInfraMachinePool(...)
 *   poolSpec: { instanceType: "small", minSize: 0, maxSize: 10 },
 *   templateChange: (spec) => ({ ...spec, instanceType: "large" }),
 *   startProvider: async ({ kubeConfig }) => startFooProvider(kubeConfig), // → { identity, cloud, stop }
 * });
 * ```
 */
export function runMachinePoolConformance(options: MachinePoolConformanceOptions): void {
  const plan = planConformanceTestBeds(options);
  // A scenario's waits stretch on a busy machine (see timeScale), so its test timeout does too.
  const scenarioMs = scaled(options.timeouts?.scenarioMs ?? 60_000) * 2;
  const registerBed = (bed: ConformanceTestBed) => {
    // Real core starts a kube-apiserver, etcd and CAPI core with its webhooks first.
    beforeAll(() => bed.suite.start(), scaled(bed.suite.core === "real" ? 180_000 : 60_000));
    for (const scenario of bed.scenarios) {
      test(scenario.title, { concurrent: false, timeout: scenarioMs }, async (context) => {
        const skip = scenario.skipReason;
        if (skip) {
          context.skip(skip);
          return;
        }
        await scenario.run();
      });
    }
  };
  describe(`InfraMachinePool conformance: ${options.name}`, () => {
    afterAll(() => plan.stop(), scaled(30_000));
    const [only] = plan.beds;
    if (plan.beds.length === 1 && only) registerBed(only);
    else registerSharedBeds(plan, scenarioMs);
    // Not concurrent, so vitest runs it once every bed's suite has ended.
    const cleanup = plan.cleanup;
    if (cleanup) test(cleanup.title, { timeout: scenarioMs }, () => cleanup.run());
  });
}

/**
 * Every scenario a concurrent test that runs on the next free bed: the beds' suites run side by
 * side, each bed runs one scenario at a time (its steady-state checks count its own writes only).
 */
function registerSharedBeds(plan: ConformanceTestBedPlan, scenarioMs: number): void {
  const beds = plan.beds;
  const pool = new TestBedPool(beds);
  const first = beds[0] as ConformanceTestBed;
  const ids = heaviestFirst(
    first.suite
      .scenarios()
      .map((s) => s.id)
      .filter((id) => id !== "cleanup"),
  );
  const onBed = (bed: ConformanceTestBed, id: string) =>
    bed.suite.scenarios().find((s) => s.id === id) as (typeof bed.scenarios)[number];
  beforeAll(
    () => Promise.all(beds.map((bed) => bed.suite.start())).then(() => undefined),
    scaled(first.suite.core === "real" ? 180_000 : 60_000),
  );
  // A test waits for a free bed before its scenario's own deadline starts: its timeout allows for
  // the scenarios ahead of it.
  const waves = Math.ceil(ids.length / beds.length) + 1;
  describe(`on ${beds.length} test beds`, { concurrent: true }, () => {
    for (const id of ids) {
      test(onBed(first, id).title, { timeout: scenarioMs * waves }, async (context) => {
        // The skip depends on the provider, the same on every bed.
        const skip = onBed(first, id).skipReason;
        if (skip) {
          context.skip(skip);
          return;
        }
        const bed = await pool.take();
        const where = `test bed ${bed.number} of ${beds.length}`;
        let timer: NodeJS.Timeout | undefined;
        const overran = new Promise<"overran">((resolve) => {
          timer = setTimeout(() => resolve("overran"), scenarioMs);
        });
        const run = onBed(bed, id)
          .run()
          .then(
            () => ({ failure: undefined }),
            (failure: unknown) => ({ failure: failure ?? new Error("the scenario failed") }),
          );
        const ended = await Promise.race([run, overran]).finally(() => clearTimeout(timer));
        if (ended === "overran") {
          // It may still be acting on its bed: no other scenario goes there.
          pool.retire();
          throw new Error(
            `${where}: the scenario did not end within ${scenarioMs} ms; the bed is left out of the rest of the run`,
          );
        }
        // Ended, passed or failed: the bed takes the next scenario (each starts from its own pools).
        pool.give(bed);
        if (ended.failure instanceof Error) {
          ended.failure.message = `${where}: ${ended.failure.message}`;
        }
        if (ended.failure !== undefined) throw ended.failure;
      });
    }
  });
}
