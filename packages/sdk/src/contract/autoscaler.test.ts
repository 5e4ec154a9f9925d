// The cluster-autoscaler's node-group bounds as a MachinePool's annotations give them: read as the
// autoscaler's parseScalingBounds reads them, every value it would refuse named with what to do.
import { describe, expect, it } from "vitest";
import { readAutoscalerBounds } from "./autoscaler.js";

const MIN = "cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size";
const MAX = "cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size";

const pool = (annotations?: Record<string, string>) => ({
  metadata: { name: "mp-1", ...(annotations ? { annotations } : {}) },
});

describe("readAutoscalerBounds", () => {
  it("is absent without either annotation, whatever else the MachinePool carries", () => {
    expect(readAutoscalerBounds(pool())).toEqual({ state: "absent" });
    expect(readAutoscalerBounds(pool({ "cluster.x-k8s.io/replicas-managed-by": "" }))).toEqual({
      state: "absent",
    });
  });

  it("reads both bounds, inclusive, with the signs and zeros Go's Atoi takes", () => {
    expect(readAutoscalerBounds(pool({ [MIN]: "1", [MAX]: "5" }))).toEqual({
      state: "valid",
      min: 1,
      max: 5,
    });
    expect(readAutoscalerBounds(pool({ [MIN]: "+02", [MAX]: "007" }))).toEqual({
      state: "valid",
      min: 2,
      max: 7,
    });
    expect(readAutoscalerBounds(pool({ [MIN]: "3", [MAX]: "3" }))).toMatchObject({
      min: 3,
      max: 3,
    });
  });

  it("reads a missing minimum as 0, as the autoscaler does", () => {
    expect(readAutoscalerBounds(pool({ [MAX]: "4" }))).toEqual({ state: "valid", min: 0, max: 4 });
  });

  it("refuses a minimum without a maximum (read as 0), saying to set the maximum", () => {
    const bounds = readAutoscalerBounds(pool({ [MIN]: "2" }));
    expect(bounds).toEqual({
      state: "invalid",
      problem: `annotation ${MIN} is 2 but ${MAX} is not set, which the autoscaler reads as 0: set ${MAX} to the node group's maximum size (at least 2)`,
    });
  });

  it.each([["two"], [""], ["-1"], ["1.5"], [" 3"], ["1e3"]])(
    "refuses the minimum %j, naming the annotation and an example",
    (text) => {
      const bounds = readAutoscalerBounds(pool({ [MIN]: text, [MAX]: "5" }));
      expect(bounds).toEqual({
        state: "invalid",
        problem: `annotation ${MIN} is ${JSON.stringify(text)}, not a whole number ≥ 0: set it to the node group's minimum size, e.g. "1"`,
      });
    },
  );

  it.each([["2147483648"], [String(2 ** 53 - 1)], ["99999999999999999999"]])(
    "refuses the maximum %s, above int32, naming the bound",
    (text) => {
      expect(readAutoscalerBounds(pool({ [MIN]: "1", [MAX]: text }))).toEqual({
        state: "invalid",
        problem: `annotation ${MAX} is ${JSON.stringify(text)}, above 2147483647 (replicas are an int32 in Cluster API): set it to the node group's maximum size, at most 2147483647`,
      });
    },
  );

  it("accepts 2147483647, and describes a long or unprintable value by its length", () => {
    expect(readAutoscalerBounds(pool({ [MIN]: "0", [MAX]: "2147483647" }))).toEqual({
      state: "valid",
      min: 0,
      max: 2_147_483_647,
    });
    const long = readAutoscalerBounds(pool({ [MIN]: "1", [MAX]: "9".repeat(40_000) }));
    expect(long.state === "invalid" && long.problem).toMatch(
      /is a value of 40000 characters, above/,
    );
    const unprintable = readAutoscalerBounds(pool({ [MIN]: "x\u001b[2J", [MAX]: "5" }));
    expect(unprintable.state === "invalid" && unprintable.problem).toMatch(
      /is a value of 5 characters, not a whole/,
    );
  });

  it("names every bad annotation at once", () => {
    const bounds = readAutoscalerBounds(pool({ [MIN]: "x", [MAX]: "-3" }));
    expect(bounds.state).toBe("invalid");
    expect(bounds.state === "invalid" && bounds.problem.split("; ")).toEqual([
      `annotation ${MIN} is "x", not a whole number ≥ 0: set it to the node group's minimum size, e.g. "1"`,
      `annotation ${MAX} is "-3", not a whole number ≥ 0: set it to the node group's maximum size, e.g. "10"`,
    ]);
  });

  it("refuses a minimum above the maximum", () => {
    expect(readAutoscalerBounds(pool({ [MIN]: "6", [MAX]: "5" }))).toEqual({
      state: "invalid",
      problem: `annotation ${MIN} (6) is greater than ${MAX} (5): lower the minimum or raise the maximum`,
    });
  });
});
