import { describe, expect, it } from "vitest";
import {
  desiredInfraMachine,
  infraMachineName,
  infraMachineStatus,
  instanceReadyState,
} from "./machines.js";
import { fakeInstance } from "./testing.js";
import { fakeMachineKind } from "./testing-machines.js";

const owner = {
  pool: {
    apiVersion: "infrastructure.foo.com/v1beta2",
    kind: "FooMachinePool",
    name: "pool-a",
    namespace: "default",
    uid: "uid-a",
  },
  machinePoolName: "a".repeat(70),
  clusterName: "c1",
  watchFilter: "team-a",
};

describe("InfraMachines of MachinePool Machines", () => {
  it("are named <pool>-<instance ID> when that is a lossless DNS label, else shortened with a hash", () => {
    expect(infraMachineName("pool-a", "i-0abc")).toBe("pool-a-i-0abc");
    const azure = infraMachineName("pool-a", "/subscriptions/s/vmss/3");
    expect(azure).toMatch(/^pool-a-subscriptions-s-vmss-3-[0-9a-f]{8}$/);
    const long = infraMachineName("p".repeat(60), "i-0123456789abcdef");
    expect(long.length).toBeLessThanOrEqual(63);
    // IDs that differ only by case or punctuation never share a name.
    expect(infraMachineName("pool-a", "VM_1")).not.toBe(infraMachineName("pool-a", "vm-1"));
  });

  it("carry core's labels (formatted pool name), a non-controller owner, the finalizer and the providerID", () => {
    const im = desiredInfraMachine(fakeMachineKind, owner, fakeInstance({ id: "i-1" }));
    expect(im.metadata?.labels?.["cluster.x-k8s.io/cluster-name"]).toBe("c1");
    // A MachinePool name longer than a label value is hashed, as core's selector does.
    expect(im.metadata?.labels?.["cluster.x-k8s.io/pool-name"]).toMatch(/^hash_/);
    expect(im.metadata?.labels?.["cluster.x-k8s.io/watch-filter"]).toBe("team-a");
    expect(im.metadata?.ownerReferences).toEqual([
      {
        apiVersion: "infrastructure.foo.com/v1beta2",
        kind: "FooMachinePool",
        name: "pool-a",
        uid: "uid-a",
      },
    ]);
    expect(im.metadata?.finalizers).toEqual([fakeMachineKind.finalizer]);
    expect(im.spec).toEqual({ providerID: "fake:///zone-a/i-1", instanceID: "i-1" });
  });

  it("are never made for an instance without a providerID", () => {
    expect(() =>
      desiredInfraMachine(fakeMachineKind, owner, fakeInstance({ id: "i-2", providerID: "" })),
    ).toThrow(/has no providerID yet/);
  });

  it("say interruptible only for an instance the driver reports on reclaimable capacity", () => {
    const spot = { ...fakeInstance({ id: "i-4" }), interruptible: true };
    expect(infraMachineStatus(spot, true, undefined).interruptible).toBe(true);
    expect(infraMachineStatus(fakeInstance({ id: "i-5" }), true, undefined)).not.toHaveProperty(
      "interruptible",
    );
  });

  it("stay provisioned once the instance ran, and say why they are not Ready", () => {
    const stopped = fakeInstance({ id: "i-3", state: "stopped" });
    expect(infraMachineStatus(stopped, true, undefined).initialization).toEqual({
      provisioned: false,
    });
    expect(
      infraMachineStatus(stopped, true, { initialization: { provisioned: true } }).initialization,
    ).toEqual({ provisioned: true });
    expect(instanceReadyState(stopped)).toMatchObject({
      status: "False",
      reason: "InstanceStopped",
    });
    expect(instanceReadyState(fakeInstance({ healthy: false }))).toMatchObject({
      reason: "InstanceUnhealthy",
    });
    const addressed = fakeInstance({
      zone: "zone-a",
      addresses: [{ type: "InternalIP", address: "10.0.0.7" }],
    });
    expect(infraMachineStatus(addressed, false, undefined)).toMatchObject({
      failureDomain: "zone-a",
      addresses: [{ type: "InternalIP", address: "10.0.0.7" }],
      upToDate: false,
      instanceState: "running",
    });
  });
});
