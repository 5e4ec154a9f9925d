import { describe, expect, it } from "vitest";
import { evaluatePredicate } from "../runtime/predicates.js";
import { Annotations, Labels } from "./constants.js";
import { hasWatchFilterLabel, indexByClusterName, notPaused } from "./watch.js";

describe("CAPI predicates and index on the runtime's seams", () => {
  // One object, labelled and annotated as each case needs.
  const obj = (labels: Record<string, string> = {}, annotations: Record<string, string> = {}) => ({
    metadata: { name: "x", namespace: "ns", labels, annotations },
  });

  it("filters by the watch-filter label, and lets everything through without a value", () => {
    const filtered = hasWatchFilterLabel("team-a");
    expect(evaluatePredicate(filtered, "create", obj({ [Labels.WatchFilter]: "team-a" }))).toBe(
      true,
    );
    expect(evaluatePredicate(filtered, "create", obj({ [Labels.WatchFilter]: "team-b" }))).toBe(
      false,
    );
    expect(evaluatePredicate(filtered, "create", obj())).toBe(false);
    expect(evaluatePredicate(hasWatchFilterLabel(""), "create", obj())).toBe(true);
  });

  it("notPaused skips paused objects but lets the unpause through, and takes a custom rule", () => {
    const paused = obj({}, { [Annotations.Paused]: "" });
    const predicate = notPaused();
    expect(evaluatePredicate(predicate, "create", paused)).toBe(false);
    expect(evaluatePredicate(predicate, "update", paused, obj())).toBe(false);
    expect(evaluatePredicate(predicate, "update", obj(), paused)).toBe(true);
    expect(evaluatePredicate(predicate, "delete", paused)).toBe(true);
    const custom = notPaused(
      (o: { metadata?: { labels?: Record<string, string> } }) => o.metadata?.labels?.stop === "1",
    );
    expect(evaluatePredicate(custom, "create", obj({ stop: "1" }))).toBe(false);
  });

  it("indexes objects by namespace/cluster-name, and nothing without the label", () => {
    expect(indexByClusterName(obj({ [Labels.ClusterName]: "c1" }))).toEqual(["ns/c1"]);
    expect(indexByClusterName(obj())).toEqual([]);
  });
});
