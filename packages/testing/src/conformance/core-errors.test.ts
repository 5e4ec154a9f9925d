import { describe, expect, it } from "vitest";
import { isTransientCoreError } from "./core-errors.js";

const applyPrefix =
  'failed to reconcile infrastructure: failed to reconcile Machines for MachinePool default/conf-1: failed to create machines for MachinePool "conf-1" in namespace "default": ';
const goneApply = (name: string) =>
  `failed to update Machine "default/${name}": failed to apply Machine: Operation cannot be fulfilled on machines.cluster.x-k8s.io "${name}": uid mismatch: the provided object specified uid 9adcd500-ccd7-461a-bcd5-96d39211539a, and no existing object was found`;
const gonePatch = (name: string) =>
  `failed to patch Machine default/${name}: failed to patch status conditions: machines.cluster.x-k8s.io "${name}" not found`;

describe("isTransientCoreError", () => {
  it("tolerates a Machine whose deletion finished while core's cache still had it", () => {
    expect(isTransientCoreError(applyPrefix + goneApply("conf-1-i-1"))).toBe(true);
    expect(
      isTransientCoreError(
        `${applyPrefix}[${goneApply("conf-1-i-1")}, ${goneApply("conf-1-i-2")}]`,
      ),
    ).toBe(true);
    expect(
      isTransientCoreError(`failed to set machines up to date: ${gonePatch("conf-1-a")}`),
    ).toBe(true);
    expect(
      isTransientCoreError(
        `failed to set machines up to date: [${gonePatch("conf-1-a")}, ${gonePatch("conf-1-b")}]`,
      ),
    ).toBe(true);
  });

  it("tolerates the topology controller reading a rolled pool's Node that is already gone", () => {
    const upgrading =
      "error computing the desired state of the Cluster topology: failed to check if any MachinePool is upgrading: failed to list upgrading MachinePools: failed to check if MachinePool conf-topology-2-pool-0-f5hb2 is upgrading: failed to get Node i-5d21a9256eda";
    expect(isTransientCoreError(upgrading)).toBe(true);
    // Any other failure of the same computation still fails the suite.
    expect(
      isTransientCoreError(
        "error computing the desired state of the Cluster topology: failed to check if any MachinePool is upgrading: failed to list upgrading MachinePools: failed to list MachinePools",
      ),
    ).toBe(false);
  });

  it("tolerates an aggregate of core's phases when each is transient, not when one is not", () => {
    const both = `[${applyPrefix}${goneApply("conf-1-i-1")}, failed to set machines up to date: [${gonePatch("conf-1-a")}, ${gonePatch("conf-1-b")}]]`;
    expect(isTransientCoreError(both)).toBe(true);
    const broken = `[${applyPrefix}${goneApply("conf-1-i-1")}, failed to set machines up to date: failed to patch Machine default/a: admission webhook denied]`;
    expect(isTransientCoreError(broken)).toBe(false);
  });

  it("tolerates conflicts and a cold cache", () => {
    expect(
      isTransientCoreError('Operation cannot be fulfilled on x "y": the object has been modified'),
    ).toBe(true);
    expect(
      isTransientCoreError("failed to get cluster: connection to the workload cluster is down"),
    ).toBe(true);
  });

  it("fails a Machine that exists under another uid, or any other error in the same aggregate", () => {
    const recreated = goneApply("conf-1-i-1").replace(
      "no existing object was found",
      "the object has uid 5c7a6f0e-cd88-4b32-99f8-f5348b09bd60",
    );
    expect(isTransientCoreError(applyPrefix + recreated)).toBe(false);
    expect(
      isTransientCoreError(
        `${applyPrefix}[${goneApply("conf-1-i-1")}, failed to create new Machine for infraMachine "x" in namespace "default": denied]`,
      ),
    ).toBe(false);
    expect(
      isTransientCoreError(
        `failed to set machines up to date: failed to patch Machine default/a: failed to patch status conditions: admission webhook denied`,
      ),
    ).toBe(false);
    expect(isTransientCoreError("failed to reconcile infrastructure: missing contract label")).toBe(
      false,
    );
  });
});
