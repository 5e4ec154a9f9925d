// Vectors ported as facts from CAPI util/conditions/aggregate_test.go (objects of kind Phase3Obj named obj0…).
import { describe, expect, it } from "vitest";
import { type AggregateOptions, aggregateCondition, type ConditionStatus } from "./index.js";

type C = { type: string; status: ConditionStatus; reason?: string; message?: string };

function objects(conditions: C[]) {
  return conditions.map((c, i) => ({
    kind: "Phase3Obj",
    metadata: { name: `obj${i}` },
    status: {
      conditions: [{ reason: "", message: "", lastTransitionTime: "", ...c }],
    },
  }));
}

const cases: Array<
  [
    string,
    C[],
    string,
    AggregateOptions,
    { type: string; status: string; reason: string; message: string },
  ]
> = [
  [
    "One issue",
    [
      { type: "Available", status: "False", reason: "Reason-1", message: "Message-1" },
      { type: "Available", status: "True", reason: "Reason-99", message: "Message-99" },
    ],
    "Available",
    {},
    {
      type: "Available",
      status: "False",
      reason: "IssuesReported",
      message: "* Phase3Obj obj0: Message-1",
    },
  ],
  [
    "One issue with negative polarity",
    [
      { type: "ScalingUp", status: "True", reason: "Reason-1", message: "Message-1" },
      { type: "ScalingUp", status: "False", reason: "Reason-99", message: "Message-99" },
    ],
    "ScalingUp",
    { negativePolarityConditionTypes: ["ScalingUp"] },
    {
      type: "ScalingUp",
      status: "True",
      reason: "IssuesReported",
      message: "* Phase3Obj obj0: Message-1",
    },
  ],
  [
    "One issue with custom merge strategy",
    [
      { type: "ScalingUp", status: "True", reason: "Reason-1", message: "Message-1" },
      { type: "ScalingUp", status: "False", reason: "Reason-99", message: "Message-99" },
    ],
    "ScalingUp",
    {
      negativePolarityConditionTypes: ["ScalingUp"],
      targetConditionHasPositivePolarity: true,
      reasons: { issue: "bad", unknown: "unknown", info: "good" },
    },
    { type: "ScalingUp", status: "False", reason: "bad", message: "* Phase3Obj obj0: Message-1" },
  ],
  [
    "One issue with custom merge strategy (negative polarity)",
    [
      { type: "ScalingUp", status: "True", reason: "Reason-1", message: "Message-1" },
      { type: "ScalingUp", status: "False", reason: "Reason-99", message: "Message-99" },
    ],
    "ScalingUp",
    {
      negativePolarityConditionTypes: ["ScalingUp"],
      targetConditionHasPositivePolarity: false,
      reasons: { issue: "good", unknown: "unknown", info: "bad" },
    },
    { type: "ScalingUp", status: "True", reason: "good", message: "* Phase3Obj obj0: Message-1" },
  ],
  [
    "One issue with target type",
    [
      { type: "Available", status: "False", reason: "Reason-1", message: "Message-1" },
      { type: "Available", status: "True", reason: "Reason-99", message: "Message-99" },
    ],
    "Available",
    { targetConditionType: "SomethingAvailable" },
    {
      type: "SomethingAvailable",
      status: "False",
      reason: "IssuesReported",
      message: "* Phase3Obj obj0: Message-1",
    },
  ],
  [
    "Same issue from up to three objects",
    [
      { type: "Available", status: "False", reason: "Reason-1", message: "Message-1" },
      { type: "Available", status: "False", reason: "Reason-1", message: "Message-1" },
      { type: "Available", status: "False", reason: "Reason-1", message: "Message-1" },
      { type: "Available", status: "True", reason: "Reason-99", message: "Message-99" },
    ],
    "Available",
    {},
    {
      type: "Available",
      status: "False",
      reason: "IssuesReported",
      message: "* Phase3Objs obj0, obj1, obj2: Message-1",
    },
  ],
  [
    "Same issue from more than three objects",
    [
      { type: "Available", status: "False", reason: "Reason-1", message: "Message-1" },
      { type: "Available", status: "False", reason: "Reason-1", message: "Message-1" },
      { type: "Available", status: "False", reason: "Reason-1", message: "Message-1" },
      { type: "Available", status: "False", reason: "Reason-1", message: "Message-1" },
      { type: "Available", status: "False", reason: "Reason-B", message: "Message-1" },
      { type: "Available", status: "True", message: "Message-99" },
    ],
    "Available",
    {},
    {
      type: "Available",
      status: "False",
      reason: "IssuesReported",
      message: "* Phase3Objs obj0, obj1, obj2, ... (2 more): Message-1",
    },
  ],
];

describe("aggregateCondition vectors (CAPI aggregate_test.go)", () => {
  it.each(cases)("%s", (_name, conditions, type, options, want) => {
    expect(aggregateCondition(objects(conditions), type, options)).toEqual(want);
  });

  it("Error if negative polarity conditions are misconfigured", () => {
    expect(() =>
      aggregateCondition(
        objects([{ type: "ScalingUp", status: "True", reason: "Reason-1" }]),
        "ScalingUp",
        {
          negativePolarityConditionTypes: ["foo"],
        },
      ),
    ).toThrow();
  });
});
