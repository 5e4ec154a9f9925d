// The scaleFromZero scenario against the example provider with one capacity bug each, the way such
// bugs ship: a driver without the hook, and one that answers the first instance type forever. Each
// must fail with the check it breaks; a provider that offers no capacityChange is skipped, saying why.
// And a correct provider whose template update after the spec change is throttled passes: it
// publishes the new capacity at once and retries the update later, in the steady-state window.

import { setTimeout as sleep } from "node:timers/promises";
import {
  type FakeCloudConformanceOptions,
  type FakeScalingCloud,
  fakeCloudCapacity,
  fakeCloudConformance,
} from "@capi-ts/examples";
import { MachinePoolConformance, scaled } from "@capi-ts/testing";
import { describe, expect, it } from "vitest";

async function failureOf(broken: FakeCloudConformanceOptions): Promise<Error> {
  const suite = new MachinePoolConformance(
    fakeCloudConformance({
      ...broken,
      suite: { timeouts: { convergeMs: 6_000, steadyStateMs: 800, settleMs: 200 } },
    }),
  );
  await suite.start();
  try {
    await suite.run("scaleFromZero");
  } catch (error) {
    return error as Error;
  } finally {
    await suite.stop();
  }
  throw new Error("the broken provider passed the scaleFromZero scenario");
}

describe("scaleFromZero", { timeout: scaled(120_000) }, () => {
  it("is skipped, with the reason, for a provider that gives no capacityChange", () => {
    const suite = new MachinePoolConformance({
      ...fakeCloudConformance(),
      capacityChange: undefined,
    });
    expect(suite.scenarios().find((s) => s.id === "scaleFromZero")?.skipReason).toMatch(
      /^no capacityChange option: the provider publishes no status.capacity for the cluster-autoscaler \(PoolDriver.capacity\)$/,
    );
    expect(
      new MachinePoolConformance(fakeCloudConformance())
        .scenarios()
        .find((s) => s.id === "scaleFromZero")?.skipReason,
    ).toBeUndefined();
  });

  it("passes a provider whose retry of a throttled template update lands in the steady-state window", async () => {
    let cloud: FakeScalingCloud | undefined;
    let versions = 0;
    const suite = new MachinePoolConformance(
      fakeCloudConformance({
        wrapDriver: (driver, fake) => {
          cloud = fake;
          return {
            ...driver,
            async createTemplateVersion(ctx, input) {
              versions += 1;
              if (versions === 2) {
                // The spec change's version is refused: the reconcile still publishes the new
                // capacity, and Ready stays True through the throttle.
                fake.faults.inject({
                  kind: "throttle",
                  operations: ["createLaunchTemplateVersion"],
                  times: 1,
                });
              } else if (versions === 3) {
                // The retry is slow, so its writes come after the suite's quiet wait of 1 s.
                await sleep(1_500);
              }
              return driver.createTemplateVersion(ctx, input);
            },
          };
        },
        suite: { timeouts: { convergeMs: 6_000, steadyStateMs: 800, settleMs: 200 } },
      }),
    );
    await suite.start();
    try {
      await suite.run("scaleFromZero");
    } finally {
      await suite.stop();
    }
    expect(versions).toBe(3);
    // Every refused call (the first version's NotFound is how the driver learns to create the template).
    expect(
      cloud?.calls({ outcome: "error" }).map((call) => `${call.operation} ${call.outcome}`),
    ).toEqual(["createLaunchTemplateVersion NotFound", "createLaunchTemplateVersion Throttling"]);
  });

  it("fails a driver without the capacity hook: nothing for the autoscaler at 0 replicas", async () => {
    const failure = await failureOf({
      wrapDriver: (driver) => {
        const { capacity: _none, ...rest } = driver;
        return rest;
      },
    });
    expect(failure.message).toMatch(
      /^\[autoscaler.canScaleFromZero\] timed out .*the pool has no status.capacity at 0 replicas/,
    );
  });

  it("fails a capacity that does not follow the spec", async () => {
    const failure = await failureOf({
      wrapDriver: (driver) => ({ ...driver, capacity: () => fakeCloudCapacity("small") }),
    });
    expect(failure.message).toMatch(
      /^\[autoscaler.capacityFollowsSpec\] timed out .*status.capacity is still .*"cpu":"2"/,
    );
  });
});
