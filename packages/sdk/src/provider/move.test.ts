// The pure rules behind the kit's clusterctl move support: whose block-move mark it may clear, what
// clusterctl's delete-for-move says, and when a missing group must not be created.
import { describe, expect, it } from "vitest";
import { deletedForMove, hasKitBlockMove, lostGroupRecord, MoveAnnotations } from "./move.js";

describe("move rules", () => {
  it("clears only a block-move mark the kit set", () => {
    const key = "clusterctl.cluster.x-k8s.io/block-move";
    expect(hasKitBlockMove({ [key]: "capi-ts: createGroup" })).toBe(true);
    expect(hasKitBlockMove({ [key]: "" })).toBe(false);
    expect(hasKitBlockMove({ [key]: "backup-operator" })).toBe(false);
    expect(hasKitBlockMove(undefined)).toBe(false);
  });

  it("reads clusterctl's delete-for-move mark by presence", () => {
    expect(deletedForMove({ "clusterctl.cluster.x-k8s.io/delete-for-move": "" })).toBe(true);
    expect(deletedForMove({})).toBe(false);
    expect(deletedForMove(undefined)).toBe(false);
  });

  it("holds a missing group only when the record is there and the status is not", () => {
    const record = { annotations: { [MoveAnnotations.GroupCreated]: "g-1" } };
    expect(lostGroupRecord({ metadata: record })).toBe("g-1");
    expect(lostGroupRecord({ metadata: record, status: { ready: false } })).toBe("g-1");
    expect(lostGroupRecord({ metadata: record, status: { ready: true } })).toBeUndefined();
    expect(
      lostGroupRecord({ metadata: record, status: { initialization: { provisioned: true } } }),
    ).toBeUndefined();
    expect(lostGroupRecord({ metadata: {} })).toBeUndefined();
  });
});
