import { afterAll, beforeAll, describe, test } from "vitest";
import { type ConformanceTestBed, planConformanceTestBeds } from "./test-beds.js";
import { scaled } from "./time-scale.js";
import type { MachinePoolConformanceOptions } from "./types.js";

/**
 * Registers the InfraMachinePool conformance suite as vitest tests: one `describe` per provider, one
 * test per scenario (scale, token rotation, template rollout, autoscaler hand-off, pause, deletion,
 * out-of-band deletion, spot interruption, cloud throttling, API server faults, cleanup). Every stored
 * version of every pool is checked against the contract's invariants while the scenarios run; a
 * failure names the broken invariant, e.g. `[status.providerIDList] providerIDList must be sorted: got …`.
 * Scenarios whose cloud actor the provider does not offer are reported as skipped. The scenarios are
 * spread over test beds that run side by side (`testBeds`, see {@link planConformanceTestBeds}), one
 * `describe` per bed; `cleanup` runs last, over every bed.
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
    else {
      // The beds' suites run side by side (concurrent); the scenarios of one bed one after another.
      for (const bed of plan.beds) {
        describe(`test bed ${bed.number} of ${plan.beds.length}`, { concurrent: true }, () =>
          registerBed(bed),
        );
      }
    }
    // Not concurrent, so vitest runs it once every bed's suite has ended.
    const cleanup = plan.cleanup;
    if (cleanup) test(cleanup.title, { timeout: scenarioMs }, () => cleanup.run());
  });
}
