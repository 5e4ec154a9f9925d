import { describe, expect, it } from "vitest";
import { clusterctlVariables, substituteClusterctlVariables } from "./variables.js";

describe("clusterctl variables", () => {
  it("lists each variable once with its default", () => {
    expect(
      clusterctlVariables(
        "a: ${A_LOG:=info}\nb: ${B64_CREDS}\nc: ${A_LOG:=info}\nd: ${D:-x}\ne: ${E=}\nf: $NOT ${ 1X }",
      ),
    ).toEqual([
      { name: "A_LOG", default: "info" },
      { name: "B64_CREDS", default: undefined },
      { name: "D", default: "x" },
      { name: "E", default: "" },
    ]);
  });

  it("substitutes values and defaults as clusterctl generate does", () => {
    const text = "${A:=info} ${B} ${C:-d} ${D=e} ${E:=f}";
    expect(substituteClusterctlVariables(text, { B: "bee", D: "", E: "" })).toBe("info bee d  f");
  });

  it("inserts values as text, never evaluated again", () => {
    expect(substituteClusterctlVariables("x: ${A}", { A: "${B} $(rm -rf /)" })).toBe(
      "x: ${B} $(rm -rf /)",
    );
  });

  it("names every required variable without a value", () => {
    expect(() => substituteClusterctlVariables("${A} ${B:=1} ${C} ${A}", {})).toThrow(
      "value for variables [A, C] is not set",
    );
  });
});
