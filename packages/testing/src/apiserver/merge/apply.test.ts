import { describe, expect, it } from "vitest";
import { crdSchema } from "../schema/crd-fixtures.test-support.js";
import { compileStructuralSchema } from "../schema/index.js";
import {
  type ApplyResult,
  builtinMergeSchema,
  type ManagedFieldsEntry,
  serverSideApply,
  trackUpdate,
} from "./index.js";

const schema = compileStructuralSchema(
  crdSchema("capi/cluster.x-k8s.io_machinepools.yaml", "v1beta2"),
).root;
const T1 = "2026-01-01T00:00:00Z";
const T2 = "2026-01-01T00:01:00Z";
const T3 = "2026-01-01T00:02:00Z";

type Obj = Record<string, unknown>;

function base(spec: Obj = {}, extra: Obj = {}): Obj {
  return {
    apiVersion: "cluster.x-k8s.io/v1beta2",
    kind: "MachinePool",
    metadata: { name: "mp-0", namespace: "default" },
    spec,
    ...extra,
  };
}

function applied(result: ApplyResult): Obj {
  if ("conflicts" in result) throw new Error(`unexpected conflict: ${result.message}`);
  return result.object;
}

function managed(obj: Obj): ManagedFieldsEntry[] {
  return ((obj.metadata as Obj).managedFields ?? []) as ManagedFieldsEntry[];
}

function entry(obj: Obj, manager: string): ManagedFieldsEntry | undefined {
  return managed(obj).find((e) => e.manager === manager);
}

function spec(obj: Obj): Obj {
  return obj.spec as Obj;
}

describe("serverSideApply", () => {
  it("creates the object and records the manager's fields in FieldsV1", () => {
    const obj = applied(
      serverSideApply({
        live: undefined,
        applied: base(
          { clusterName: "c1", replicas: 2 },
          {
            status: {
              conditions: [
                {
                  type: "Ready",
                  status: "True",
                  reason: "Ok",
                  message: "",
                  lastTransitionTime: T1,
                },
              ],
            },
          },
        ),
        manager: "capi",
        force: false,
        schema,
        now: T1,
      }),
    );
    expect(spec(obj)).toEqual({ clusterName: "c1", replicas: 2 });
    expect(managed(obj)).toEqual([
      {
        manager: "capi",
        operation: "Apply",
        apiVersion: "cluster.x-k8s.io/v1beta2",
        time: T1,
        fieldsType: "FieldsV1",
        fieldsV1: {
          "f:spec": { "f:clusterName": {}, "f:replicas": {} },
          "f:status": {
            "f:conditions": {
              'k:{"type":"Ready"}': {
                ".": {},
                "f:lastTransitionTime": {},
                "f:message": {},
                "f:reason": {},
                "f:status": {},
                "f:type": {},
              },
            },
          },
        },
      },
    ]);
  });

  it("reports a conflict when another manager owns a field with a different value", () => {
    const first = applied(
      serverSideApply({
        live: undefined,
        applied: base({ replicas: 2 }),
        manager: "a",
        force: false,
        schema,
        now: T1,
      }),
    );
    const result = serverSideApply({
      live: first,
      applied: base({ replicas: 5 }),
      manager: "b",
      force: false,
      schema,
      now: T2,
    });
    expect(result).toEqual({
      conflicts: [{ manager: '"a"', field: ".spec.replicas", message: 'conflict with "a"' }],
      message: 'Apply failed with 1 conflict: conflict with "a": .spec.replicas',
    });
  });

  it("shares ownership when a second manager applies the same value", () => {
    const first = applied(
      serverSideApply({
        live: undefined,
        applied: base({ replicas: 2 }),
        manager: "a",
        force: false,
        schema,
        now: T1,
      }),
    );
    const second = applied(
      serverSideApply({
        live: first,
        applied: base({ replicas: 2 }),
        manager: "b",
        force: false,
        schema,
        now: T2,
      }),
    );
    expect(entry(second, "a")?.fieldsV1).toEqual({ "f:spec": { "f:replicas": {} } });
    expect(entry(second, "b")?.fieldsV1).toEqual({ "f:spec": { "f:replicas": {} } });
  });

  it("moves ownership with force", () => {
    const first = applied(
      serverSideApply({
        live: undefined,
        applied: base({ replicas: 2, clusterName: "c1" }),
        manager: "a",
        force: false,
        schema,
        now: T1,
      }),
    );
    const forced = applied(
      serverSideApply({
        live: first,
        applied: base({ replicas: 5 }),
        manager: "b",
        force: true,
        schema,
        now: T2,
      }),
    );
    expect(spec(forced)).toEqual({ replicas: 5, clusterName: "c1" });
    expect(entry(forced, "a")?.fieldsV1).toEqual({ "f:spec": { "f:clusterName": {} } });
    expect(entry(forced, "b")?.fieldsV1).toEqual({ "f:spec": { "f:replicas": {} } });
    // "a" applying its old value again now conflicts with "b".
    const back = serverSideApply({
      live: forced,
      applied: base({ replicas: 2, clusterName: "c1" }),
      manager: "a",
      force: false,
      schema,
      now: T3,
    });
    expect("conflicts" in back && back.conflicts.map((c) => c.field)).toEqual([".spec.replicas"]);
  });

  it("removes fields a manager stops applying, unless another manager owns them", () => {
    const first = applied(
      serverSideApply({
        live: undefined,
        applied: base({ replicas: 2, clusterName: "c1", failureDomains: ["a"] }),
        manager: "a",
        force: false,
        schema,
        now: T1,
      }),
    );
    const shared = applied(
      serverSideApply({
        live: first,
        applied: base({ clusterName: "c1" }),
        manager: "b",
        force: false,
        schema,
        now: T2,
      }),
    );
    const dropped = applied(
      serverSideApply({
        live: shared,
        applied: base({ failureDomains: ["a"] }),
        manager: "a",
        force: false,
        schema,
        now: T3,
      }),
    );
    expect(spec(dropped)).toEqual({ clusterName: "c1", failureDomains: ["a"] });
    expect(entry(dropped, "a")?.fieldsV1).toEqual({ "f:spec": { "f:failureDomains": {} } });
  });

  it("merges list-map items by key and removes only the items a manager dropped", () => {
    const condition = (type: string) => ({
      type,
      status: "True",
      reason: "Ok",
      message: "",
      lastTransitionTime: T1,
    });
    const withConditions = (...types: string[]) =>
      base({}, { status: { conditions: types.map(condition) } });
    const a = applied(
      serverSideApply({
        live: undefined,
        applied: withConditions("Ready"),
        manager: "a",
        force: false,
        schema,
        now: T1,
      }),
    );
    const b = applied(
      serverSideApply({
        live: a,
        applied: withConditions("Synced"),
        manager: "b",
        force: false,
        schema,
        now: T2,
      }),
    );
    expect(((b.status as Obj).conditions as Obj[]).map((c) => c.type)).toEqual(["Ready", "Synced"]);
    const aDrops = applied(
      serverSideApply({
        live: b,
        applied: base({}, { status: {} }),
        manager: "a",
        force: false,
        schema,
        now: T3,
      }),
    );
    expect(((aDrops.status as Obj).conditions as Obj[]).map((c) => c.type)).toEqual(["Synced"]);
    const changed = serverSideApply({
      live: b,
      applied: base({}, { status: { conditions: [{ ...condition("Synced"), status: "False" }] } }),
      manager: "a",
      force: false,
      schema,
      now: T3,
    });
    expect("conflicts" in changed && changed.conflicts.map((c) => c.field)).toEqual([
      '.status.conditions[type="Synced"].status',
    ]);
  });

  it("replaces atomic lists whole", () => {
    const a = applied(
      serverSideApply({
        live: undefined,
        applied: base({ providerIDList: ["p1", "p2"] }),
        manager: "a",
        force: false,
        schema,
        now: T1,
      }),
    );
    const b = applied(
      serverSideApply({
        live: a,
        applied: base({ providerIDList: ["p3"] }),
        manager: "b",
        force: true,
        schema,
        now: T2,
      }),
    );
    expect(spec(b).providerIDList).toEqual(["p3"]);
    expect(entry(b, "b")?.fieldsV1).toEqual({ "f:spec": { "f:providerIDList": {} } });
    expect(entry(b, "a")).toBeUndefined();
  });

  it("reports no change for a repeated apply", () => {
    const first = applied(
      serverSideApply({
        live: undefined,
        applied: base({ replicas: 2 }),
        manager: "a",
        force: false,
        schema,
        now: T1,
      }),
    );
    const again = serverSideApply({
      live: first,
      applied: base({ replicas: 2 }),
      manager: "a",
      force: false,
      schema,
      now: T2,
    });
    expect(again).toEqual({ object: first, changed: false });
  });

  it("gives fields of an untracked object to before-first-apply", () => {
    const live = base({ replicas: 1, clusterName: "c1" });
    const result = serverSideApply({
      live,
      applied: base({ replicas: 3 }),
      manager: "a",
      force: false,
      schema,
      now: T1,
    });
    expect("conflicts" in result && result.message).toMatch(
      /^Apply failed with 1 conflict: conflict with "before-first-apply" using cluster\.x-k8s\.io\/v1beta2: \.spec\.replicas$/,
    );
  });

  it("keys Node addresses by type and ownerReferences by uid for built-in kinds", () => {
    const nodeSchema = builtinMergeSchema("Node");
    const obj = applied(
      serverSideApply({
        live: undefined,
        applied: {
          apiVersion: "v1",
          kind: "Node",
          metadata: {
            name: "n1",
            ownerReferences: [{ apiVersion: "v1", kind: "X", name: "x", uid: "u1" }],
          },
          status: { addresses: [{ type: "InternalIP", address: "10.0.0.1" }] },
        },
        manager: "kubelet",
        force: false,
        schema: nodeSchema,
        now: T1,
      }),
    );
    expect(entry(obj, "kubelet")?.fieldsV1).toEqual({
      "f:metadata": { "f:ownerReferences": { 'k:{"uid":"u1"}': {} } },
      "f:status": {
        "f:addresses": { 'k:{"type":"InternalIP"}': { ".": {}, "f:address": {}, "f:type": {} } },
      },
    });
  });
});

describe("trackUpdate", () => {
  it("records a create the way the server does (new maps are members)", () => {
    const obj = trackUpdate({
      live: undefined,
      updated: {
        ...base({ replicas: 1, template: { spec: { clusterName: "c1" } } }),
        metadata: { name: "mp-0", namespace: "default", labels: { a: "1" } },
      },
      manager: "manager",
      operation: "Update",
      schema,
      now: T1,
    });
    expect(managed(obj)).toEqual([
      {
        manager: "manager",
        operation: "Update",
        apiVersion: "cluster.x-k8s.io/v1beta2",
        time: T1,
        fieldsType: "FieldsV1",
        fieldsV1: {
          "f:metadata": { "f:labels": { ".": {}, "f:a": {} } },
          "f:spec": {
            ".": {},
            "f:replicas": {},
            "f:template": { ".": {}, "f:spec": { ".": {}, "f:clusterName": {} } },
          },
        },
      },
    ]);
  });

  it("takes changed fields from their owners so that a later apply conflicts", () => {
    const first = applied(
      serverSideApply({
        live: undefined,
        applied: base({ replicas: 2 }),
        manager: "a",
        force: false,
        schema,
        now: T1,
      }),
    );
    const edited = trackUpdate({
      live: first,
      updated: { ...first, spec: { replicas: 7 } },
      manager: "kubectl-edit",
      operation: "Update",
      schema,
      now: T2,
    });
    expect(entry(edited, "a")).toBeUndefined();
    expect(entry(edited, "kubectl-edit")?.fieldsV1).toEqual({ "f:spec": { "f:replicas": {} } });
    const result = serverSideApply({
      live: edited,
      applied: base({ replicas: 2 }),
      manager: "a",
      force: false,
      schema,
      now: T3,
    });
    expect("conflicts" in result && result.message).toBe(
      'Apply failed with 1 conflict: conflict with "kubectl-edit" using cluster.x-k8s.io/v1beta2: .spec.replicas',
    );
  });

  it("drops removed fields from every manager and records the subresource", () => {
    const first = trackUpdate({
      live: undefined,
      updated: base({ replicas: 1 }, { status: { phase: "Running" } }),
      manager: "m",
      operation: "Update",
      schema,
      now: T1,
      ignoredFields: [["status"]],
    });
    expect(entry(first, "m")?.fieldsV1).toEqual({ "f:spec": { ".": {}, "f:replicas": {} } });
    const status = trackUpdate({
      live: first,
      updated: { ...first, status: { phase: "Failed" } },
      manager: "ctrl",
      operation: "Update",
      subresource: "status",
      schema,
      now: T2,
      ignoredFields: [["spec"]],
    });
    expect(managed(status).find((e) => e.manager === "ctrl")).toMatchObject({
      subresource: "status",
      fieldsV1: { "f:status": { "f:phase": {} } },
    });
    const removed = trackUpdate({
      live: status,
      updated: { ...status, spec: {} },
      manager: "other",
      operation: "Update",
      schema,
      now: T3,
    });
    // The emptied spec map itself stays owned (a member with no children encodes as {}).
    expect(entry(removed, "m")?.fieldsV1).toEqual({ "f:spec": {} });
  });

  it("records a built-in kind's create like kube-apiserver 1.35 (Node: sets, atomic lists, struct fields)", () => {
    const obj = trackUpdate({
      live: undefined,
      updated: {
        apiVersion: "v1",
        kind: "Node",
        metadata: { name: "n1", finalizers: ["example.com/x"] },
        spec: { podCIDRs: ["10.0.0.0/24"], taints: [{ key: "k", effect: "NoSchedule" }] },
      },
      manager: "unknown",
      operation: "Update",
      schema: builtinMergeSchema("Node"),
      now: T1,
    });
    expect(entry(obj, "unknown")?.fieldsV1).toEqual({
      "f:metadata": { "f:finalizers": { ".": {}, 'v:"example.com/x"': {} } },
      "f:spec": { "f:podCIDRs": { ".": {}, 'v:"10.0.0.0/24"': {} }, "f:taints": {} },
    });
  });

  it("stamps the writer's entry only when the write changed something", () => {
    const created = trackUpdate({
      live: undefined,
      updated: base({ replicas: 1 }),
      manager: "m",
      operation: "Update",
      schema,
      now: T1,
    });
    const same = trackUpdate({
      live: created,
      updated: created,
      manager: "m",
      operation: "Update",
      schema,
      now: T2,
    });
    expect(entry(same, "m")?.time).toBe(T1);
    const changed = trackUpdate({
      live: same,
      updated: { ...same, spec: { replicas: 2 } },
      manager: "m",
      operation: "Update",
      schema,
      now: T3,
    });
    expect(entry(changed, "m")?.time).toBe(T3);
    const applied1 = applied(
      serverSideApply({
        live: undefined,
        applied: base({ replicas: 1 }),
        manager: "a",
        force: false,
        schema,
        now: T1,
      }),
    );
    const applied2 = applied(
      serverSideApply({
        live: applied1,
        applied: base({ replicas: 4 }),
        manager: "a",
        force: false,
        schema,
        now: T2,
      }),
    );
    expect(entry(applied2, "a")?.time).toBe(T2);
  });

  it("lets a request reset managedFields with [{}]", () => {
    const first = applied(
      serverSideApply({
        live: undefined,
        applied: base({ replicas: 2 }),
        manager: "a",
        force: false,
        schema,
        now: T1,
      }),
    );
    const reset = trackUpdate({
      live: first,
      updated: { ...first, metadata: { ...(first.metadata as Obj), managedFields: [{}] } },
      manager: "x",
      operation: "Update",
      schema,
      now: T2,
    });
    expect((reset.metadata as Obj).managedFields).toBeUndefined();
  });
});
