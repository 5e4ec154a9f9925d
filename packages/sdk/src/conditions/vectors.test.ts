// Vectors ported as facts from CAPI util/conditions sort_test.go and mirror_test.go.
import { describe, expect, it } from "vitest";
import { type ConditionLike, compareConditionsDefault, mirrorCondition } from "./index.js";

describe("default sort (sort_test.go)", () => {
  it("Available, Ready, then others by name, then Paused, Deleting", () => {
    const types = ["Deleting", "B", "Available", "A", "Paused", "Ready", "C!"];
    const sorted = types
      .map((type): ConditionLike => ({ type, status: "True" }))
      .sort(compareConditionsDefault);
    expect(sorted.map((c) => c.type)).toEqual([
      "Available",
      "Ready",
      "A",
      "B",
      "C!",
      "Paused",
      "Deleting",
    ]);
  });
});

describe("NewMirrorCondition (mirror_test.go)", () => {
  const now = "2026-02-03T04:05:06Z";
  const source = (conditions: object[]) => ({
    kind: "Phase3Obj",
    metadata: { name: "SourceObject" },
    status: { conditions },
  });
  const ready = (message: string) => ({
    type: "Ready",
    status: "True",
    reason: "AllGood!",
    message,
    observedGeneration: 10,
    lastTransitionTime: now,
  });

  it.each([
    [
      "Mirror a condition",
      [ready("We are good!")],
      {},
      {
        type: "Ready",
        status: "True",
        reason: "AllGood!",
        message: "We are good!",
        lastTransitionTime: now,
      },
    ],
    [
      "Mirror a condition with target type",
      [ready("We are good!")],
      { targetConditionType: "SomethingReady" },
      {
        type: "SomethingReady",
        status: "True",
        reason: "AllGood!",
        message: "We are good!",
        lastTransitionTime: now,
      },
    ],
    [
      "Mirror a condition with empty message",
      [ready("")],
      {},
      { type: "Ready", status: "True", reason: "AllGood!", message: "", lastTransitionTime: now },
    ],
    [
      "Mirror a condition not yet reported",
      [],
      {},
      {
        type: "Ready",
        status: "Unknown",
        reason: "NotYetReported",
        message: "Condition Ready not yet reported",
      },
    ],
    [
      "Mirror a condition not yet reported with target type",
      [],
      { targetConditionType: "SomethingReady" },
      {
        type: "SomethingReady",
        status: "Unknown",
        reason: "NotYetReported",
        message: "Condition Ready not yet reported",
      },
    ],
    [
      "Mirror a condition not yet reported with a fallback condition",
      [],
      { fallback: { status: "True" as const, reason: "SomeReason", message: "Foo" } },
      { type: "Ready", status: "True", reason: "SomeReason", message: "Foo" },
    ],
  ])("%s", (_name, conditions, options, want) => {
    expect(mirrorCondition(source(conditions), "Ready", options)).toEqual(want);
  });
});
