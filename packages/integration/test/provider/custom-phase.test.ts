// A provider's own phase in the kit's pipeline, on the API server of the run with core: it reads the
// kit's group section and sets the provider's own condition, which the kit folds into Ready. A phase
// list that cannot work fails when the controller is built, naming the phase and the section.
import type { FakeCloudGroupSettings, FakeCloudMachinePoolSpec } from "@capi-ts/examples";
import { Manager, machinePoolController } from "@capi-ts/sdk";
import { definePhase, insertPhase } from "@capi-ts/sdk/provider";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type Bed,
  condition,
  converged,
  createPool,
  eventually,
  getPool,
  KitMachinePool,
  startBed,
} from "./support.js";

/** Reports the cloud group's ID in a condition of the provider's own; False while it has no instances. */
const groupRecorded = definePhase<FakeCloudMachinePoolSpec, FakeCloudGroupSettings>()({
  name: "groupRecorded",
  reads: ["group"],
  writes: [],
  run(scope) {
    const { group } = scope.read("group");
    scope.conditions.set({
      type: "GroupRecorded",
      status: group.instances.length > 0 ? "True" : "False",
      reason: group.instances.length > 0 ? "Recorded" : "NoInstances",
      message: `group ${group.id}`,
    });
  },
});

let bed: Bed;

beforeAll(async () => {
  bed = await startBed({
    controller: {
      conditionTypes: ["GroupRecorded"],
      phases: (defaults) => insertPhase(defaults, { before: "publish" }, groupRecorded),
    },
  });
}, 60_000);
afterAll(async () => {
  await bed?.stop();
});

describe("a provider's own phase", () => {
  it("runs in the pipeline on the kit's group section and its condition reaches the pool", async () => {
    const name = await createPool(bed, { replicas: 1 });
    await converged(bed, name, 1);
    const pool = await eventually(async () => {
      const current = await getPool(bed, name);
      expect(condition(current, "GroupRecorded")).toMatchObject({
        status: "True",
        reason: "Recorded",
      });
      return current;
    });
    expect(condition(pool, "GroupRecorded")?.message).toMatch(/^group /);
    expect(condition(pool, "Ready")?.status).toBe("True");
  });

  it("is refused by machinePoolController before the group phase, with the names", () => {
    const manager = new Manager({
      kubeConfig: bed.backend.kubeConfig,
      name: "refused",
      logger: { level: "silent" },
    });
    expect(() =>
      machinePoolController(bed.driver, {
        manager,
        kind: KitMachinePool,
        phases: (defaults) => {
          const misplaced = [...defaults];
          misplaced.splice(0, 0, groupRecorded as (typeof defaults)[number]);
          return misplaced;
        },
      }),
    ).toThrow(
      'machinePoolController: the phases option: "groupRecorded" reads the group section, which "group" writes after it; move "groupRecorded" after "group"',
    );
  });
});
