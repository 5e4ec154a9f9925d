import { describe, expect, it } from "vitest";
import { z } from "zod";
import { defineInfraMachinePool } from "../crd/define.js";
import { kitPermissions } from "./permissions.js";

describe("kitPermissions with MachinePool Machines", () => {
  it("widens the kit's role by the InfraMachine kind and Machine deletion, only when the kind has one", () => {
    const definition = (machinePoolMachines: boolean) =>
      defineInfraMachinePool({
        group: "infrastructure.foo.com",
        kind: "FooMachinePool",
        versions: ["v1beta2"],
        spec: z.object({}),
        machinePoolMachines,
      });
    const without = JSON.stringify(kitPermissions(definition(false)));
    expect(without).not.toContain('"machines"');
    expect(without).not.toContain("foomachinepoolmachines");
    const withMachines = kitPermissions(definition(true));
    expect(withMachines).toContainEqual({
      apiGroups: ["cluster.x-k8s.io"],
      resources: ["machines"],
      verbs: ["delete", "get", "list", "watch"],
    });
    expect(withMachines).toContainEqual({
      apiGroups: ["cluster.x-k8s.io"],
      resources: ["machines/status"],
      verbs: ["get", "patch"],
    });
    expect(withMachines).toContainEqual({
      apiGroups: ["infrastructure.foo.com"],
      resources: ["foomachinepoolmachines"],
      verbs: ["create", "delete", "get", "list", "patch", "update", "watch"],
    });
  });
});

describe("kitPermissions for the preflight checks", () => {
  const definition = defineInfraMachinePool({
    group: "infrastructure.foo.com",
    kind: "FooMachinePool",
    versions: ["v1beta2"],
    spec: z.object({ size: z.string() }),
  });

  it("reads CRDs and the control plane kinds of controlplane.cluster.x-k8s.io, get only", () => {
    const rules = kitPermissions(definition);
    expect(rules).toContainEqual({
      apiGroups: ["apiextensions.k8s.io"],
      resources: ["customresourcedefinitions"],
      verbs: ["get"],
    });
    expect(rules).toContainEqual({
      apiGroups: ["controlplane.cluster.x-k8s.io"],
      resources: ["*"],
      verbs: ["get"],
    });
  });

  it("reads the control plane groups it is given instead", () => {
    const rules = kitPermissions(definition, {
      controlPlaneGroups: ["infrastructure.cluster.x-k8s.io"],
    });
    expect(rules.filter((r) => r.resources.includes("*")).map((r) => r.apiGroups)).toEqual([
      ["infrastructure.cluster.x-k8s.io"],
    ]);
  });
});
