import { describe, expect, it } from "vitest";
import {
  isQuantity,
  parseQuantity,
  QUANTITY_PATTERN,
  UNSIGNED_QUANTITY_PATTERN,
} from "./quantity.js";

describe("parseQuantity: apimachinery's quantity grammar, in base units", () => {
  it.each([
    ["0", 0],
    ["4", 4],
    ["1.5", 1.5],
    [".5", 0.5],
    ["5.", 5],
    ["+2", 2],
    ["-1", -1],
    ["500m", 0.5],
    ["250u", 0.00025],
    ["3n", 3e-9],
    ["1.5k", 1500],
    ["2M", 2e6],
    ["1G", 1e9],
    ["1T", 1e12],
    ["1P", 1e15],
    ["1E", 1e18],
    ["1Ki", 1024],
    ["16Gi", 16 * 2 ** 30],
    ["1.5Mi", 1.5 * 2 ** 20],
    ["1Ti", 2 ** 40],
    ["1Pi", 2 ** 50],
    ["1Ei", 2 ** 60],
    ["2e3", 2000],
    ["2E3", 2000],
    ["5e-1", 0.5],
    ["1e+2", 100],
  ])("%s is %d", (text, value) => {
    expect(parseQuantity(text)).toBeCloseTo(value, 12);
    expect(isQuantity(text)).toBe(true);
  });

  it.each([
    "",
    "lots",
    " 1",
    "1 ",
    "1K",
    "1ki",
    "1KiB",
    "1Gb",
    "Gi",
    "1e",
    "1e1.5",
    "1..2",
    "1.2.3",
    "--1",
    "+-1",
    "0x10",
    "1_000",
    "NaN",
    "Infinity",
    "1\n",
  ])("refuses %j, saying what a quantity is", (text) => {
    expect(isQuantity(text)).toBe(false);
    expect(() => parseQuantity(text)).toThrow(/is not a Kubernetes quantity: write a number/);
  });

  it("names at most 40 characters of what it was given", () => {
    const long = `1${"x".repeat(5000)}`;
    let message = "";
    try {
      parseQuantity(long);
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toContain(`"1${"x".repeat(39)}…"`);
    expect(message.length).toBeLessThan(200);
  });

  it("refuses what is not a string, and a value beyond a number", () => {
    expect(() => parseQuantity(4 as unknown as string)).toThrow(
      /a Kubernetes quantity is a string .*, got number/,
    );
    expect(isQuantity(4)).toBe(false);
    expect(isQuantity(null)).toBe(false);
    expect(() => parseQuantity("1e400")).toThrow(/too large/);
  });

  it("offers the grammar as CRD patterns, the unsigned one without a sign", () => {
    const signed = new RegExp(QUANTITY_PATTERN);
    const unsigned = new RegExp(UNSIGNED_QUANTITY_PATTERN);
    expect(["-1", "+1", "1Gi"].map((q) => signed.test(q))).toEqual([true, true, true]);
    expect(["-1", "+1", "1Gi", "lots"].map((q) => unsigned.test(q))).toEqual([
      false,
      false,
      true,
      false,
    ]);
  });
});
