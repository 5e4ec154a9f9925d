import { describe, expect, it } from "vitest";
import { parseGoDuration } from "./duration.js";
import { parseManagerFlags } from "./flags.js";

describe("parseGoDuration: Go's time.ParseDuration grammar, in milliseconds", () => {
  it.each([
    ["0", 0],
    ["-0", 0],
    ["+0", 0],
    ["300ms", 300],
    ["1.5s", 1500],
    ["1h30m", 5_400_000],
    ["10m0s", 600_000],
    ["1h2m3s", 3_723_000],
    ["1.5h", 5_400_000],
    [".5m", 30_000],
    ["1.s", 1000],
    ["+5s", 5000],
    ["-1s", -1000],
    ["-1h30m", -5_400_000],
    ["1500ns", 0.0015],
    ["2us", 0.002],
    ["2\u00b5s", 0.002],
    ["2\u03bcs", 0.002],
    ["1m1ms1us", 60_001.001],
    ["3s3s", 6000],
  ])("%s is %d ms", (text, ms) => {
    expect(parseGoDuration(text)).toBeCloseTo(ms, 9);
  });

  it.each([
    ["", /it is empty/],
    ["-", /it is empty/],
    ["15", /has no unit/],
    ["1h30", /has no unit/],
    ["10 minutes", /unknown unit " minutes"/],
    [" 1s", /expected a number/],
    ["1s ", /unknown unit "s "/],
    ["1d", /unknown unit "d"/],
    ["1H", /unknown unit "H"/],
    [".s", /expected a number/],
    ["s", /expected a number/],
    ["--1s", /expected a number/],
    ["1e3s", /unknown unit "e"/],
    ["3000000h", /beyond Go's range/],
  ])("rejects %j", (text, reason) => {
    expect(() => parseGoDuration(text)).toThrow(reason);
    expect(() => parseGoDuration(text)).toThrow(/write it like e\.g\. "300ms"/);
  });

  it("is what the manager's duration flags use, without negatives", () => {
    expect(parseManagerFlags(["--sync-period", "1h30m"]).syncPeriodMs).toBe(5_400_000);
    expect(
      parseManagerFlags(["--sync-period", "90s", "--leader-elect-retry-period", "1.5s"]),
    ).toMatchObject({ syncPeriodMs: 90_000, retryPeriodMs: 1500 });
    expect(() => parseManagerFlags(["--sync-period", "-1s"])).toThrow(/"-1s" is negative/);
    expect(() => parseManagerFlags(["--sync-period", "10"])).toThrow(
      /--sync-period.*invalid Go duration "10": the number 10\.0? has no unit|invalid Go duration "10"/,
    );
  });
});
