// Finding 11: bad input to the status writer and the patch helper gets a clear error, never a silent
// change of meaning or a raw RangeError.
import { describe, expect, it } from "vitest";
import { NotJsonError, PatchHelper } from "../patch/index.js";
import { ContractViolationError } from "./errors.js";
import { canonicalProviderIDs, setPoolStatus, setProviderIDs } from "./status.js";

const pool = () => ({ metadata: { name: "p", namespace: "default" }, spec: {}, status: {} });

describe("setProviderIDs input", () => {
  it.each([" ", "\t", "\u0000", "a\nb", "aws:///zone/i-1 "])("refuses %j", (id) => {
    const obj = pool();
    expect(() => setProviderIDs(obj, [id])).toThrow(/whitespace or control characters/);
    expect(obj.spec).toEqual({});
  });

  it("refuses a string instead of a list (it would become its characters)", () => {
    const obj = pool();
    expect(() => setProviderIDs(obj, "aws:///zone/i-1" as unknown as string[])).toThrow(
      /must be a list of strings, got the string "aws:\/\/\/zone\/i-1"; wrap a single ID in an array/,
    );
    expect(obj.spec).toEqual({});
  });

  it("counts characters as Kubernetes does: 300 emoji (600 UTF-16 units) are accepted, 513 refused", () => {
    const emoji = "😀".repeat(300);
    expect(canonicalProviderIDs([emoji])).toEqual([emoji]);
    expect(() => canonicalProviderIDs(["😀".repeat(513)])).toThrow(/513 characters long/);
  });

  it("stops reading an endless iterable and says why", () => {
    function* endless() {
      for (let i = 0; ; i++) yield `fake:///zone/i-${i}`;
    }
    function* endlessSame() {
      for (;;) yield "fake:///zone/i-1";
    }
    expect(() => canonicalProviderIDs(endless())).toThrow(ContractViolationError);
    expect(() => canonicalProviderIDs(endlessSame())).toThrow(/more than 10000 distinct entries/);
  });

  it("setPoolStatus refuses replicas that disagree with the IDs, before writing anything", () => {
    const obj = pool();
    expect(() => setPoolStatus(obj, { replicas: 3, providerIDs: ["a"] })).toThrow(
      /status.replicas is 3 but providerIDList has 1 distinct IDs/,
    );
    expect(obj).toEqual(pool());
    expect(setPoolStatus(obj, { replicas: 1, providerIDs: ["a", "a"] })).toBe(true);
  });
});

describe("patch helper input", () => {
  it("a circular value: a NotJsonError naming the path", () => {
    const obj: Record<string, unknown> & { spec: Record<string, unknown> } = {
      ...pool(),
      spec: { template: {} },
    };
    (obj.spec.template as Record<string, unknown>).self = obj.spec;
    expect(() => PatchHelper.snapshot(obj as never)).toThrow(NotJsonError);
    expect(() => PatchHelper.snapshot(obj as never)).toThrow(
      /circular reference at spec\.template\.self; a Kubernetes object must be a tree/,
    );
    const helper = PatchHelper.snapshot(pool());
    expect(() => helper.changes(obj as never)).toThrow(/circular reference at spec.template.self/);
  });

  it("a value 10,000 levels deep: a NotJsonError, not a RangeError", () => {
    const obj: Record<string, unknown> = pool();
    let cursor: Record<string, unknown> = obj.spec as Record<string, unknown>;
    for (let i = 0; i < 10_000; i++) {
      const next = {};
      cursor.x = next;
      cursor = next;
    }
    expect(() => PatchHelper.snapshot(obj as never)).toThrow(
      /nested deeper than 512 levels at spec\.x\.x/,
    );
  });

  it("shared (non-circular) references are fine", () => {
    const shared = { a: 1 };
    const obj = { ...pool(), spec: { one: shared, two: shared } };
    expect(PatchHelper.snapshot(obj).before).toMatchObject({
      spec: { one: { a: 1 }, two: { a: 1 } },
    });
  });
});
