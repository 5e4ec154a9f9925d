import { describe, expect, it } from "vitest";
import { JsonPatchError, jsonPatch } from "./index.js";

const doc = () => ({
  metadata: { name: "a", labels: { x: "1" }, finalizers: ["f1", "f2"] },
  spec: { replicas: 1, list: [1, 2, 3] },
});

function patchError(fn: () => unknown): JsonPatchError {
  try {
    fn();
  } catch (error) {
    if (error instanceof JsonPatchError) return error;
    throw error;
  }
  throw new Error("expected a JsonPatchError");
}

describe("jsonPatch", () => {
  it("applies add, remove, replace, move, copy and test in order without touching the input", () => {
    const input = doc();
    const out = jsonPatch(input, [
      { op: "test", path: "/spec/replicas", value: 1 },
      { op: "replace", path: "/spec/replicas", value: 3 },
      { op: "add", path: "/metadata/labels/y", value: "2" },
      { op: "add", path: "/spec/list/-", value: 4 },
      { op: "add", path: "/spec/list/0", value: 0 },
      { op: "remove", path: "/metadata/finalizers/0" },
      { op: "copy", from: "/metadata/labels", path: "/metadata/annotations" },
      { op: "move", from: "/metadata/labels/x", path: "/metadata/labels/z" },
    ]);
    expect(out).toEqual({
      metadata: {
        name: "a",
        labels: { y: "2", z: "1" },
        annotations: { x: "1", y: "2" },
        finalizers: ["f2"],
      },
      spec: { replicas: 3, list: [0, 1, 2, 3, 4] },
    });
    expect(input).toEqual(doc());
  });

  it("escapes ~0 and ~1 in pointers", () => {
    const out = jsonPatch({ metadata: { labels: {} } }, [
      { op: "add", path: "/metadata/labels/example.com~1role", value: "a" },
      { op: "add", path: "/metadata/labels/til~0de", value: "b" },
    ]);
    expect(out).toEqual({ metadata: { labels: { "example.com/role": "a", "til~de": "b" } } });
  });

  it("accepts negative indices as the server's library does", () => {
    expect(jsonPatch({ l: [1, 2, 3] }, [{ op: "remove", path: "/l/-1" }])).toEqual({ l: [1, 2] });
  });

  it("answers 422 with the server's generic message when a test fails", () => {
    const error = patchError(() =>
      jsonPatch(doc(), [{ op: "test", path: "/spec/replicas", value: 2 }]),
    );
    expect(error.status).toBe(422);
    expect(error.reason).toBe("Invalid");
    expect(error.message).toBe("the server rejected our request due to an error in our request");
    expect(error.detail).toBe("testing value /spec/replicas failed: test failed");
  });

  it("answers 422 for paths that do not exist", () => {
    expect(patchError(() => jsonPatch(doc(), [{ op: "remove", path: "/spec/nope" }])).status).toBe(
      422,
    );
    expect(
      patchError(() => jsonPatch(doc(), [{ op: "remove", path: "/metadata/nope" }])).detail,
    ).toBe("remove operation does not apply: doc is missing key: /metadata/nope: missing value");
    expect(
      patchError(() => jsonPatch(doc(), [{ op: "add", path: "/nope/deeper", value: 1 }])).detail,
    ).toContain("doc is missing path");
    expect(
      patchError(() => jsonPatch(doc(), [{ op: "add", path: "/spec/list/9", value: 1 }])).status,
    ).toBe(422);
    expect(patchError(() => jsonPatch(doc(), [{ op: "frobnicate", path: "/a" }])).detail).toBe(
      "Unexpected kind: frobnicate",
    );
  });

  it("lets replace set a missing key of an existing object, as the server's library does", () => {
    expect(jsonPatch({ spec: {} }, [{ op: "replace", path: "/spec/x", value: 1 }])).toEqual({
      spec: { x: 1 },
    });
  });

  it("answers 400 for a patch that is not a list of operations", () => {
    const error = patchError(() => jsonPatch(doc(), { op: "add" }));
    expect(error.status).toBe(400);
    expect(error.reason).toBe("BadRequest");
    expect(error.message).toBe(
      "error decoding patch: json: cannot unmarshal object into Go value of type []handlers.jsonPatchOp",
    );
    expect(patchError(() => jsonPatch(doc(), ["add"])).status).toBe(400);
  });

  it("answers 413 above 10,000 operations", () => {
    const ops = Array.from({ length: 10_001 }, () => ({
      op: "test",
      path: "/spec/replicas",
      value: 1,
    }));
    expect(patchError(() => jsonPatch(doc(), ops)).status).toBe(413);
  });
});
