import { describe, expect, it } from "vitest";
import { jsonDeeperThan, MAX_JSON_DEPTH } from "./json-depth.js";

describe("jsonDeeperThan", () => {
  it("counts arrays and objects, not brackets inside strings", () => {
    expect(jsonDeeperThan("1", 0)).toBe(false);
    expect(jsonDeeperThan("[]", 0)).toBe(true);
    expect(jsonDeeperThan('{"a":[1]}', 2)).toBe(false);
    expect(jsonDeeperThan('{"a":[1]}', 1)).toBe(true);
    expect(jsonDeeperThan('{"a":"[[[{{{"}', 1)).toBe(false);
    // An escaped quote does not end the string.
    expect(jsonDeeperThan('{"a":"\\"[[["}', 1)).toBe(false);
    expect(jsonDeeperThan('["\\\\",[[]]]', 2)).toBe(true);
    expect(jsonDeeperThan('["\\\\\\"[[[",1]', 1)).toBe(false);
    // An unterminated string ends the scan (the parse that follows refuses the text).
    expect(jsonDeeperThan('["[[[', 1)).toBe(false);
  });

  it("measures depth, not the number of siblings", () => {
    const wide = `[${Array.from({ length: 10_000 }, () => "[1]").join(",")}]`;
    expect(jsonDeeperThan(wide, 2)).toBe(false);
    const deep = `${"[".repeat(MAX_JSON_DEPTH + 1)}${"]".repeat(MAX_JSON_DEPTH + 1)}`;
    expect(jsonDeeperThan(deep, MAX_JSON_DEPTH)).toBe(true);
    expect(jsonDeeperThan(deep.slice(1, -1), MAX_JSON_DEPTH)).toBe(false);
  });
});
