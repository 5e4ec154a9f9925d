import { afterAll, beforeAll, describe, test } from "vitest";
import { MachinePoolConformance } from "./harness.js";
import { scaled } from "./time-scale.js";
import type { MachinePoolConformanceOptions } from "./types.js";

/**
 * Registers the InfraMachinePool conformance suite as vitest tests: one `describe` per provider, one
 * test per scenario (scale, token rotation, template rollout, autoscaler hand-off, pause, deletion,
 * out-of-band deletion, spot interruption, cloud throttling, API server faults, cleanup). Every stored
 * version of every pool is checked against the contract's invariants while the scenarios run; a
 * failure names the broken invariant, e.g. `[status.providerIDList] providerIDList must be sorted: got …`.
 * Scenarios whose cloud actor the provider does not offer are reported as skipped.
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
  const suite = new MachinePoolConformance(options);
  // A scenario's waits stretch on a busy machine (see timeScale), so its test timeout does too.
  const scenarioMs = scaled(options.timeouts?.scenarioMs ?? 60_000) * 2;
  describe(`InfraMachinePool conformance: ${options.name}`, () => {
    // Real core starts a kube-apiserver, etcd and CAPI core with its webhooks first.
    beforeAll(() => suite.start(), scaled(suite.core === "real" ? 180_000 : 60_000));
    afterAll(() => suite.stop(), scaled(30_000));
    for (const scenario of suite.scenarios()) {
      test(scenario.title, { timeout: scenarioMs }, async (context) => {
        const skip = scenario.skipReason;
        if (skip) {
          context.skip(skip);
          return;
        }
        await scenario.run();
      });
    }
  });
}
