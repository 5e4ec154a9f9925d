import { describe, expect, it } from "vitest";
import { z } from "zod";
import { defineInfraMachinePool } from "./index.js";

const base = {
  group: "infrastructure.foo.com",
  kind: "FooMachinePool",
  versions: ["v1beta1", "v1beta2"],
  spec: z.object({ instanceType: z.string() }),
} as const;

type Crd = {
  metadata: { name: string; labels: Record<string, string> };
  spec: {
    group: string;
    scope: string;
    names: { kind: string; listKind: string; plural: string; categories: string[] };
    versions: Array<{
      name: string;
      storage: boolean;
      subresources?: { status?: object };
      schema: { openAPIV3Schema: { properties: Record<string, { required?: string[] }> } };
    }>;
  };
};

describe("the InfraMachine kind of MachinePool Machines (R11)", () => {
  it("is defined next to the pool, in its group and versions, with the contract label", () => {
    const Foo = defineInfraMachinePool({ ...base, machinePoolMachines: true });
    const machine = Foo.machine;
    expect(machine).toBeDefined();
    if (!machine) return;
    expect(machine.kind).toBe("FooMachinePoolMachine");
    expect(machine.listKind).toBe("FooMachinePoolMachineList");
    expect(machine.apiVersion).toBe("infrastructure.foo.com/v1beta2");
    expect(machine.finalizer).toBe("foomachinepoolmachine.infrastructure.foo.com");
    const crd = machine.crd as unknown as Crd;
    expect(crd.metadata.name).toBe("foomachinepoolmachines.infrastructure.foo.com");
    // Core lists InfraMachines at the pool's apiVersion: the same versions, the same label value.
    expect(crd.metadata.labels).toEqual({ "cluster.x-k8s.io/v1beta2": "v1beta1_v1beta2" });
    expect(crd.spec.scope).toBe("Namespaced");
    expect(crd.spec.versions.map((v) => [v.name, v.storage])).toEqual([
      ["v1beta1", false],
      ["v1beta2", true],
    ]);
    expect(crd.spec.versions[1]?.subresources).toEqual({ status: {} });
    expect(crd.spec.versions[1]?.schema.openAPIV3Schema.properties.spec?.required).toEqual([
      "providerID",
    ]);
    expect(Foo.manifests().map((m) => m.metadata.name)).toContain(machine.crdName);
    expect(Foo.crd.spec).toBeDefined();
    const status = (
      Foo.crd as unknown as {
        spec: {
          versions: Array<{
            schema: {
              openAPIV3Schema: { properties: { status: { properties: Record<string, unknown> } } };
            };
          }>;
        };
      }
    ).spec.versions[0]?.schema.openAPIV3Schema.properties.status.properties;
    expect(status).toHaveProperty("infrastructureMachineKind");
  });

  it("takes a kind of the provider's choice and refuses one that collides", () => {
    const Foo = defineInfraMachinePool({ ...base, machinePoolMachines: { kind: "FooMachine" } });
    expect(Foo.machine?.kind).toBe("FooMachine");
    expect(() =>
      defineInfraMachinePool({ ...base, machinePoolMachines: { kind: "FooMachinePool" } }),
    ).toThrow(/must be CamelCase, differ from the pool kind/);
    expect(() =>
      defineInfraMachinePool({ ...base, machinePoolMachines: { kind: "FooMachinePoolTemplate" } }),
    ).toThrow(/the pool's template kind/);
    expect(() => defineInfraMachinePool({ ...base, machinePoolMachines: { kind: "foo" } })).toThrow(
      /must be CamelCase/,
    );
  });

  it("is absent without machinePoolMachines, and the pool CRD has no infrastructureMachineKind", () => {
    const Foo = defineInfraMachinePool(base);
    expect(Foo.machine).toBeUndefined();
    expect(JSON.stringify(Foo.crd)).not.toContain("infrastructureMachineKind");
    expect(Foo.manifests()).toHaveLength(3);
  });

  it("validates objects: a providerID is required and never empty", () => {
    const machine = defineInfraMachinePool({ ...base, machinePoolMachines: true }).machine;
    const ok = machine?.schema.safeParse({
      metadata: { name: "pool-a-i-1" },
      spec: { providerID: "aws:///us-east-1a/i-1", instanceID: "i-1" },
      status: { ready: true, initialization: { provisioned: true } },
    });
    expect(ok?.success).toBe(true);
    expect(machine?.schema.safeParse({ metadata: {}, spec: { providerID: "" } }).success).toBe(
      false,
    );
  });
});
