import { describe, expect, it } from "vitest";
import {
  aggregateCondition,
  applyConditionPatch,
  type Condition,
  ConditionConflictError,
  type ConditionLike,
  deleteCondition,
  diffConditions,
  getCondition,
  getConditions,
  getV1Beta1Conditions,
  isConditionFalse,
  isConditionTrue,
  isConditionUnknown,
  mirrorCondition,
  mirrorConditions,
  type ObjectWithConditions,
  pluralize,
  setAggregateCondition,
  setCondition,
  setMirrorCondition,
  setSummaryCondition,
  setV1Beta1Condition,
  setV1Beta1MirrorCondition,
  summaryCondition,
  unstructuredGetConditions,
} from "./index.js";
import { aggregateMessages, defaultMergePriority } from "./merge.js";

const at = (iso: string) => ({ now: () => Date.parse(iso) });

/** Test objects with a status shape the assertions can read. */
type Shaped = ObjectWithConditions & {
  status?: {
    conditions?: ConditionLike[];
    v1beta2?: { conditions?: ConditionLike[] };
    deprecated?: { v1beta1?: { conditions?: ConditionLike[] } };
  };
};

function pool(generation = 1): Shaped {
  return {
    apiVersion: "infrastructure.example.com/v1beta2",
    kind: "FooMachinePool",
    metadata: { name: "p", generation },
  };
}

describe("setCondition (CAPI conditions.Set)", () => {
  it("truncates lastTransitionTime to seconds and stamps observedGeneration", () => {
    const obj = pool(7);
    expect(
      setCondition(
        obj,
        { type: "Ready", status: "True", reason: "Ready" },
        { clock: at("2024-01-02T03:04:05.987Z") },
      ),
    ).toBe(true);
    expect(getConditions(obj)).toEqual([
      {
        type: "Ready",
        status: "True",
        reason: "Ready",
        message: "",
        lastTransitionTime: "2024-01-02T03:04:05Z",
        observedGeneration: 7,
      },
    ]);
  });

  it("keeps lastTransitionTime when only reason/message change, even if another time is passed", () => {
    const obj = pool();
    setCondition(
      obj,
      { type: "Ready", status: "False", reason: "A" },
      { clock: at("2024-01-01T00:00:00Z") },
    );
    setCondition(
      obj,
      {
        type: "Ready",
        status: "False",
        reason: "B",
        message: "m",
        lastTransitionTime: "2030-01-01T00:00:00Z",
      },
      { clock: at("2025-01-01T00:00:00Z") },
    );
    expect(getCondition(obj, "Ready")).toMatchObject({
      reason: "B",
      message: "m",
      lastTransitionTime: "2024-01-01T00:00:00Z",
    });
  });

  it("moves lastTransitionTime when status changes", () => {
    const obj = pool();
    setCondition(
      obj,
      { type: "Ready", status: "False", reason: "A" },
      { clock: at("2024-01-01T00:00:00Z") },
    );
    setCondition(
      obj,
      { type: "Ready", status: "True", reason: "A" },
      { clock: at("2024-06-01T00:00:00.5Z") },
    );
    expect(getCondition(obj, "Ready")?.lastTransitionTime).toBe("2024-06-01T00:00:00Z");
  });

  it("always overwrites observedGeneration with the object's generation", () => {
    const obj = pool(1);
    setCondition(
      obj,
      { type: "Ready", status: "True", reason: "Ready" },
      { clock: at("2024-01-01T00:00:00Z") },
    );
    (obj.metadata as { generation: number }).generation = 2;
    const changed = setCondition(
      obj,
      { type: "Ready", status: "True", reason: "Ready" },
      { clock: at("2024-02-01T00:00:00Z") },
    );
    expect(changed).toBe(true);
    expect(getCondition(obj, "Ready")).toMatchObject({
      observedGeneration: 2,
      lastTransitionTime: "2024-01-01T00:00:00Z",
    });
  });

  it("reports no change for an identical condition", () => {
    const obj = pool();
    setCondition(obj, { type: "Ready", status: "True", reason: "Ready" });
    expect(setCondition(obj, { type: "Ready", status: "True", reason: "Ready" })).toBe(false);
  });

  it("orders Ready before custom types before Paused and Deleting, custom types by name", () => {
    const obj = pool();
    for (const type of [
      "Deleting",
      "Paused",
      "ReplicasReady",
      "Available",
      "AAA",
      "Ready",
      "zzz",
      "ScalingUp",
    ]) {
      setCondition(obj, { type, status: "True", reason: "R" });
    }
    expect(getConditions(obj).map((c) => c.type)).toEqual([
      "Available",
      "Ready",
      "ScalingUp",
      "AAA",
      "ReplicasReady",
      "zzz",
      "Paused",
      "Deleting",
    ]);
  });

  it("writes to status.v1beta2.conditions on v1beta1 objects", () => {
    const mp: Shaped = {
      apiVersion: "cluster.x-k8s.io/v1beta1",
      kind: "MachinePool",
      metadata: { name: "mp", generation: 3 },
      status: {
        conditions: [{ type: "Ready", status: "True", lastTransitionTime: "2024-01-01T00:00:00Z" }],
      },
    };
    setCondition(mp, { type: "Paused", status: "False", reason: "NotPaused" });
    expect(mp.status?.v1beta2?.conditions?.map((c) => c.type)).toEqual(["Paused"]);
    expect(mp.status?.conditions).toHaveLength(1);
  });
});

describe("getters", () => {
  it("IsTrue/IsFalse are false when absent, IsUnknown is true when absent", () => {
    const obj = pool();
    expect(isConditionTrue(obj, "Ready")).toBe(false);
    expect(isConditionFalse(obj, "Ready")).toBe(false);
    expect(isConditionUnknown(obj, "Ready")).toBe(true);
    setCondition(obj, { type: "Ready", status: "False", reason: "NotReady" });
    expect(isConditionFalse(obj, "Ready")).toBe(true);
    expect(isConditionUnknown(obj, "Ready")).toBe(false);
  });

  it("delete removes only the given type and drops an empty list", () => {
    const obj = pool();
    setCondition(obj, { type: "Ready", status: "True", reason: "Ready" });
    setCondition(obj, { type: "Paused", status: "False", reason: "NotPaused" });
    expect(deleteCondition(obj, "Ready")).toBe(true);
    expect(getConditions(obj).map((c) => c.type)).toEqual(["Paused"]);
    deleteCondition(obj, "Paused");
    expect(obj.status?.conditions).toBeUndefined();
  });

  it("unstructured reads prefer status.v1beta2.conditions and default the reason", () => {
    const u = {
      status: {
        conditions: [{ type: "Ready", status: "False", severity: "Error" }],
        v1beta2: { conditions: [{ type: "Ready", status: "True" }] },
      },
    };
    expect(unstructuredGetConditions(u)).toEqual([
      { type: "Ready", status: "True", reason: "NoReasonReported", message: "" },
    ]);
    expect(() =>
      unstructuredGetConditions({ status: { conditions: [{ type: "X", status: "yes" }] } }),
    ).toThrow(/expected "True", "False" or "Unknown"/);
  });
});

describe("mirror (CAPI NewMirrorCondition / SetMirrorCondition)", () => {
  const source = {
    status: {
      conditions: [
        {
          type: "Ready",
          status: "False",
          reason: "Boom",
          message: "it broke",
          observedGeneration: 9,
          lastTransitionTime: "2023-03-03T03:03:03Z",
        },
      ],
    },
  };

  it("copies status, reason, message and time but not observedGeneration", () => {
    expect(mirrorCondition(source, "Ready", { targetConditionType: "MachinePoolReady" })).toEqual({
      type: "MachinePoolReady",
      status: "False",
      reason: "Boom",
      message: "it broke",
      lastTransitionTime: "2023-03-03T03:03:03Z",
    });
  });

  it("uses the fallback, else Unknown/NotYetReported", () => {
    expect(
      mirrorCondition({}, "Ready", { fallback: { status: "False", reason: "Waiting" } }),
    ).toEqual({
      type: "Ready",
      status: "False",
      reason: "Waiting",
      message: "",
    });
    expect(mirrorCondition({}, "Ready")).toEqual({
      type: "Ready",
      status: "Unknown",
      reason: "NotYetReported",
      message: "Condition Ready not yet reported",
    });
  });

  it("mirrorConditions sets several types with the target's generation and the source's time", () => {
    const target = pool(4);
    mirrorConditions(source, target, [{ from: "Ready", to: "InfrastructureReady" }, "Paused"], {
      clock: at("2024-01-01T00:00:00Z"),
    });
    expect(getConditions(target)).toEqual([
      {
        type: "InfrastructureReady",
        status: "False",
        reason: "Boom",
        message: "it broke",
        lastTransitionTime: "2023-03-03T03:03:03Z",
        observedGeneration: 4,
      },
      {
        type: "Paused",
        status: "Unknown",
        reason: "NotYetReported",
        message: "Condition Paused not yet reported",
        lastTransitionTime: "2024-01-01T00:00:00Z",
        observedGeneration: 4,
      },
    ]);
  });
});

describe("summary (CAPI NewSummaryCondition, default merge strategy)", () => {
  function withConditions(
    conditions: Array<Partial<Condition> & { type: string; status: Condition["status"] }>,
  ) {
    return {
      ...pool(),
      status: {
        conditions: conditions.map((c) => ({
          reason: "",
          message: "",
          lastTransitionTime: "",
          ...c,
        })),
      },
    };
  }

  it("One issue: False, IssuesReported, only the issue's message", () => {
    const obj = withConditions([
      { type: "B", status: "True", reason: "Reason-B", message: "Message-B" },
      { type: "A", status: "True", reason: "Reason-A", message: "Message-A" },
      { type: "!C", status: "True", reason: "Reason-!C", message: "Message-!C" },
    ]);
    expect(
      summaryCondition(obj, "Available", {
        forConditionTypes: ["A", "B", "!C"],
        negativePolarityConditionTypes: ["!C"],
      }),
    ).toEqual({
      type: "Available",
      status: "False",
      reason: "IssuesReported",
      message: "* !C: Message-!C",
    });
  });

  it("an issue without message shows its reason", () => {
    const obj = withConditions([
      { type: "B", status: "True", reason: "Reason-B" },
      { type: "A", status: "True", reason: "Reason-A" },
      { type: "!C", status: "True", reason: "Reason-!C" },
    ]);
    expect(
      summaryCondition(obj, "Available", {
        forConditionTypes: ["A", "B", "!C"],
        negativePolarityConditionTypes: ["!C"],
      }).message,
    ).toBe("* !C: Reason-!C");
  });

  it("issues and unknowns keep the ForConditionTypes order; multiline messages are nested", () => {
    const obj = withConditions([
      { type: "B", status: "False", reason: "Reason-B", message: "Message-B" },
      { type: "A", status: "Unknown", reason: "Reason-A", message: "Message-A" },
      { type: "!C", status: "True", reason: "Reason-!C", message: "* Message-!C1\n* Message-!C2" },
      { type: "D", status: "False", reason: "Reason-D", message: "Message-D\n* More message-D" },
    ]);
    expect(
      summaryCondition(obj, "Available", {
        forConditionTypes: ["A", "B", "!C", "D"],
        negativePolarityConditionTypes: ["!C"],
      }),
    ).toEqual({
      type: "Available",
      status: "False",
      reason: "IssuesReported",
      message:
        "* A: Message-A\n* B: Message-B\n* !C:\n  * Message-!C1\n  * Message-!C2\n* D:\n  * Message-D\n    * More message-D",
    });
  });

  it("all info: True with non-empty info messages; missing types count as NotYetReported", () => {
    const obj = withConditions([
      { type: "A", status: "True", reason: "Reason-A", message: "Message-A" },
      { type: "B", status: "True", reason: "Reason-B" },
    ]);
    expect(summaryCondition(obj, "Ready", { forConditionTypes: ["A", "B"] })).toEqual({
      type: "Ready",
      status: "True",
      reason: "InfoReported",
      message: "* A: Message-A",
    });
    expect(summaryCondition(obj, "Ready", { forConditionTypes: ["A", "B", "C"] })).toEqual({
      type: "Ready",
      status: "Unknown",
      reason: "UnknownReported",
      message: "* C: Condition not yet reported",
    });
    expect(
      summaryCondition(obj, "Ready", {
        forConditionTypes: ["A", "B", "C"],
        ignoreTypesIfMissing: ["C"],
      }).status,
    ).toBe("True");
  });

  it("custom reasons (as DevMachinePool does) and option errors", () => {
    const obj = withConditions([{ type: "A", status: "False", reason: "X" }]);
    expect(
      summaryCondition(obj, "Ready", {
        forConditionTypes: ["A"],
        reasons: { issue: "NotReady", unknown: "ReadyUnknown", info: "Ready" },
      }).reason,
    ).toBe("NotReady");
    expect(() => summaryCondition(obj, "Ready", { forConditionTypes: [] })).toThrow(/empty/);
    expect(() => summaryCondition(obj, "Ready", { forConditionTypes: ["Ready"] })).toThrow(
      /target/,
    );
    expect(() =>
      summaryCondition(obj, "Ready", {
        forConditionTypes: ["A"],
        overrideConditions: [{ type: "Z", status: "True" }],
      }),
    ).toThrow(/must exist/);
  });
});

describe("aggregate (CAPI NewAggregateCondition)", () => {
  it("groups by kind, at most three messages, counts the others", () => {
    const c = (kind: string, name: string, message: string) => ({
      owner: { kind, name, isControlPlaneMachine: false },
      condition: { type: "A", status: "False", message },
    });
    const budget = { n: 3 };
    const lines = aggregateMessages(
      [
        c("MachineDeployment", "obj02", "Message-1"),
        c("MachineDeployment", "obj01", "Message-1"),
        c("MachineDeployment", "obj04", "* Message-2"),
        c("MachineDeployment", "obj03", "* Message-2"),
        c("MachineDeployment", "obj06", "* Message-3A\n* Message-3B"),
        c("MachineDeployment", "obj05", "Message-1"),
        c("MachineDeployment", "obj08", "Message-1"),
        c("MachineDeployment", "obj07", "Message-4"),
        c("MachineDeployment", "obj09", "Message-1"),
        c("MachineDeployment", "obj10", "Message-5"),
        c("MachineSet", "obj11", "Message-1"),
        c("MachineSet", "obj12", "Message-1"),
      ],
      budget,
      false,
      defaultMergePriority(),
      { issue: "with other issues" },
    );
    expect(budget.n).toBe(0);
    expect(lines).toEqual([
      "* MachineDeployments obj01, obj02, obj05, ... (2 more): Message-1",
      "* MachineDeployments obj03, obj04:\n  * Message-2",
      "* MachineDeployment obj06:\n  * Message-3A\n  * Message-3B",
      "And 2 MachineDeployments with other issues",
      "And 2 MachineSets with other issues",
    ]);
  });

  it("merges one type across objects; missing ones are NotYetReported", () => {
    const m = (name: string, status?: Condition["status"], message = "") => ({
      kind: "Machine",
      metadata: { name },
      status: status
        ? { conditions: [{ type: "Ready", status, reason: "R", message, lastTransitionTime: "" }] }
        : {},
    });
    expect(
      aggregateCondition([m("m1", "True"), m("m2", "False", "down"), m("m3")], "Ready", {
        targetConditionType: "MachinesReady",
      }),
    ).toEqual({
      type: "MachinesReady",
      status: "False",
      reason: "IssuesReported",
      message: "* Machine m2: down\n* Machine m3: Condition Ready not yet reported",
    });
    expect(aggregateCondition([m("m1", "True"), m("m2", "True")], "Ready")).toEqual({
      type: "Ready",
      status: "True",
      reason: "InfoReported",
      message: "",
    });
    expect(() => aggregateCondition([], "Ready")).toThrow(/empty/);
    expect(() =>
      aggregateCondition([m("m1")], "Ready", { negativePolarityConditionTypes: ["Other"] }),
    ).toThrow(/can only be set to \["Ready"\]/);
  });
});

describe("condition patch (CAPI conditions.NewPatch / Apply)", () => {
  const cond = (type: string, status: Condition["status"], reason = "R"): Condition => ({
    type,
    status,
    reason,
    message: "",
    lastTransitionTime: "2024-01-01T00:00:00Z",
  });

  it("a concurrent change to another condition merges", () => {
    const before = [cond("Ready", "False")];
    const after = [cond("Ready", "True")];
    const latest = [cond("Ready", "False"), cond("Other", "True")];
    const merged = applyConditionPatch(diffConditions(before, after), latest);
    expect(merged.map((c) => [c.type, c.status])).toEqual([
      ["Ready", "True"],
      ["Other", "True"],
    ]);
  });

  it("a concurrent change to the same condition conflicts unless owned or already equal", () => {
    const before = [cond("Ready", "False")];
    const after = [cond("Ready", "True")];
    const latest = [cond("Ready", "Unknown")];
    const ops = diffConditions(before, after);
    expect(() => applyConditionPatch(ops, latest)).toThrow(ConditionConflictError);
    expect(applyConditionPatch(ops, latest, { ownedConditions: ["Ready"] })[0]?.status).toBe(
      "True",
    );
    expect(applyConditionPatch(ops, latest, { forceOverwrite: true })[0]?.status).toBe("True");
    expect(applyConditionPatch(ops, [cond("Ready", "True")])[0]?.status).toBe("True");
  });

  it("add conflicts with a different state, remove conflicts when someone changed it", () => {
    expect(() =>
      applyConditionPatch(diffConditions([], [cond("X", "True")]), [cond("X", "False")]),
    ).toThrow(/added with a different state/);
    expect(() =>
      applyConditionPatch(diffConditions([cond("X", "True")], []), [cond("X", "False")]),
    ).toThrow(/modified/);
    expect(
      applyConditionPatch(diffConditions([cond("X", "True")], []), [cond("X", "True")]),
    ).toEqual([]);
  });
});

describe("deprecated v1beta1 conditions", () => {
  it("live in status.deprecated.v1beta1.conditions on v1beta2 objects and sort Ready first", () => {
    const mp: Shaped = {
      apiVersion: "cluster.x-k8s.io/v1beta2",
      kind: "MachinePool",
      metadata: {},
    };
    setV1Beta1Condition(
      mp,
      { type: "InfrastructureReady", status: "True" },
      { clock: at("2024-01-01T00:00:00Z") },
    );
    setV1Beta1Condition(mp, {
      type: "Ready",
      status: "False",
      severity: "Info",
      reason: "WaitingForInfrastructure",
    });
    expect(mp.status?.deprecated?.v1beta1?.conditions?.map((c) => c.type)).toEqual([
      "Ready",
      "InfrastructureReady",
    ]);
  });

  it("a state change (including severity) stamps now; same state keeps the time", () => {
    const mp: ObjectWithConditions = {
      apiVersion: "cluster.x-k8s.io/v1beta1",
      kind: "MachinePool",
      metadata: {},
    };
    setV1Beta1Condition(
      mp,
      { type: "Ready", status: "False", severity: "Info" },
      { clock: at("2024-01-01T00:00:00Z") },
    );
    setV1Beta1Condition(
      mp,
      { type: "Ready", status: "False", severity: "Info" },
      { clock: at("2024-02-01T00:00:00Z") },
    );
    expect(getV1Beta1Conditions(mp)[0]?.lastTransitionTime).toBe("2024-01-01T00:00:00Z");
    setV1Beta1Condition(
      mp,
      { type: "Ready", status: "False", severity: "Warning" },
      { clock: at("2024-03-01T00:00:00Z") },
    );
    expect(getV1Beta1Conditions(mp)[0]).toEqual({
      type: "Ready",
      status: "False",
      severity: "Warning",
      lastTransitionTime: "2024-03-01T00:00:00Z",
    });
  });

  it("SetMirror copies the source Ready (from status.conditions) or applies the fallback", () => {
    const mp: ObjectWithConditions = {
      apiVersion: "cluster.x-k8s.io/v1beta2",
      kind: "MachinePool",
      metadata: {},
    };
    const imp = {
      status: { conditions: [{ type: "Ready", status: "False", reason: "Custom reason" }] },
    };
    setV1Beta1MirrorCondition(mp, "InfrastructureReady", imp);
    expect(getV1Beta1Conditions(mp)[0]).toMatchObject({
      type: "InfrastructureReady",
      status: "False",
      reason: "Custom reason",
    });
    const mp2: ObjectWithConditions = {
      apiVersion: "cluster.x-k8s.io/v1beta2",
      kind: "MachinePool",
      metadata: {},
    };
    setV1Beta1MirrorCondition(
      mp2,
      "InfrastructureReady",
      {},
      { value: false, reason: "WaitingForInfrastructure", severity: "Info" },
    );
    expect(getV1Beta1Conditions(mp2)[0]).toMatchObject({
      status: "False",
      reason: "WaitingForInfrastructure",
      severity: "Info",
    });
    const mp3: ObjectWithConditions = {
      apiVersion: "cluster.x-k8s.io/v1beta2",
      kind: "MachinePool",
      metadata: {},
    };
    setV1Beta1MirrorCondition(mp3, "InfrastructureReady", {});
    expect(getV1Beta1Conditions(mp3)).toEqual([]);
  });

  it("SetMirror reads status.deprecated.v1beta1.conditions first, as CAPI's UnstructuredGetter", () => {
    const target = (): ObjectWithConditions => ({
      apiVersion: "cluster.x-k8s.io/v1beta2",
      kind: "MachinePool",
      metadata: {},
    });
    // A v1beta2 provider object: v1beta2 conditions in status.conditions, v1beta1 ones under deprecated.
    const v1beta2Source = {
      status: {
        conditions: [{ type: "Ready", status: "True", reason: "Ready" }],
        deprecated: {
          v1beta1: {
            conditions: [
              { type: "Ready", status: "False", severity: "Warning", reason: "ScalingUp" },
            ],
          },
        },
      },
    };
    const mp = target();
    setV1Beta1MirrorCondition(mp, "InfrastructureReady", v1beta2Source);
    expect(getV1Beta1Conditions(mp)[0]).toMatchObject({
      type: "InfrastructureReady",
      status: "False",
      severity: "Warning",
      reason: "ScalingUp",
    });
    // Present but without Ready: the fallback applies, status.conditions is not consulted.
    const mp2 = target();
    setV1Beta1MirrorCondition(
      mp2,
      "InfrastructureReady",
      { status: { ...v1beta2Source.status, deprecated: { v1beta1: { conditions: [] } } } },
      { value: false, reason: "WaitingForInfrastructure", severity: "Info" },
    );
    expect(getV1Beta1Conditions(mp2)[0]).toMatchObject({
      status: "False",
      reason: "WaitingForInfrastructure",
    });
    // Undecodable (not a list): Go's unmarshal fails and status.conditions is read instead.
    const mp3 = target();
    setV1Beta1MirrorCondition(mp3, "InfrastructureReady", {
      status: { ...v1beta2Source.status, deprecated: { v1beta1: { conditions: "broken" } } },
    });
    expect(getV1Beta1Conditions(mp3)[0]).toMatchObject({ status: "True", reason: "Ready" });
  });
});

describe("pluralize (flect)", () => {
  it.each([
    ["foomachinepool", "foomachinepools"],
    ["awsmachinepool", "awsmachinepools"],
    ["azuremachinepooltemplate", "azuremachinepooltemplates"],
    ["devmachine", "devmachines"],
    ["policy", "policies"],
    ["gateway", "gateways"],
    ["proxy", "proxies"],
    ["status", "statuses"],
    ["address", "addresses"],
    ["box", "boxes"],
    ["index", "indices"],
    ["matrix", "matrices"],
    ["person", "people"],
    ["series", "series"],
    ["leaf", "leaves"],
    ["machines", "machines"],
    ["MachineDeployment", "MachineDeployments"],
    ["Machine", "Machines"],
    ["ClusterClass", "ClusterClasses"],
    ["", ""],
  ])("%s -> %s", (singular, plural) => {
    expect(pluralize(singular)).toBe(plural);
  });
});

describe("the Set… forms a provider calls (summary, aggregate, mirror onto a target)", () => {
  const fixed = { now: () => Date.parse("2026-02-03T04:05:06Z") };
  const withConditions = (generation: number, conditions: Condition[]) => ({
    metadata: { name: "pool", namespace: "default", generation },
    status: { conditions },
  });

  it("setSummaryCondition writes the summary of the chosen types as Ready, and says when nothing changed", () => {
    const pool = withConditions(3, [
      {
        type: "InstancesReady",
        status: "False",
        reason: "Booting",
        message: "2 of 3 booting",
        lastTransitionTime: "2026-01-01T00:00:00Z",
      },
      {
        type: "GroupReady",
        status: "True",
        reason: "Ready",
        message: "",
        lastTransitionTime: "2026-01-01T00:00:00Z",
      },
    ]);
    const options = { forConditionTypes: ["InstancesReady", "GroupReady"], clock: fixed };
    expect(setSummaryCondition(pool, pool, "Ready", options)).toBe(true);
    const ready = getCondition(pool, "Ready");
    expect(ready).toMatchObject({ status: "False", observedGeneration: 3 });
    expect(ready?.message).toContain("2 of 3 booting");
    expect(ready?.lastTransitionTime).toBe("2026-02-03T04:05:06Z");
    expect(setSummaryCondition(pool, pool, "Ready", options)).toBe(false);
  });

  it("setAggregateCondition folds one condition of many objects into the target", () => {
    const machine = (name: string, status: "True" | "False") => ({
      kind: "Machine",
      metadata: { name, namespace: "default", generation: 1 },
      status: {
        conditions: [
          {
            type: "Ready",
            status,
            reason: status === "True" ? "Ready" : "NotReady",
            message: status === "True" ? "" : `${name} is not ready`,
            lastTransitionTime: "2026-01-01T00:00:00Z",
          },
        ],
      },
    });
    const pool = withConditions(2, []);
    expect(
      setAggregateCondition([machine("m1", "True"), machine("m2", "False")], pool, "Ready", {
        targetConditionType: "MachinesReady",
        clock: fixed,
      }),
    ).toBe(true);
    const aggregated = getCondition(pool, "MachinesReady");
    expect(aggregated).toMatchObject({ status: "False", observedGeneration: 2 });
    expect(aggregated?.message).toContain("m2");
  });

  it("setMirrorCondition copies another object's condition under a new type, keeping its transition time", () => {
    const cluster = withConditions(1, [
      {
        type: "Ready",
        status: "True",
        reason: "Ready",
        message: "",
        lastTransitionTime: "2025-12-24T00:00:00Z",
      },
    ]);
    const pool = withConditions(5, []);
    expect(
      setMirrorCondition(cluster, pool, "Ready", {
        targetConditionType: "ClusterReady",
        clock: fixed,
      }),
    ).toBe(true);
    expect(getCondition(pool, "ClusterReady")).toMatchObject({
      status: "True",
      reason: "Ready",
      observedGeneration: 5,
      lastTransitionTime: "2025-12-24T00:00:00Z",
    });
  });
});
