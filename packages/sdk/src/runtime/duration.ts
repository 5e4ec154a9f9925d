/**
 * Go's duration grammar (`time.ParseDuration`), the one parser of the SDK: manager flags
 * (`--sync-period`) and CAPI fields written as Go durations (`nodeDrainTimeout: "10m0s"`) both go
 * through it, so a value that Go accepts is accepted everywhere and nothing else is.
 *
 * @module
 */

/** Nanoseconds per unit, as Go spells them (`µs` is U+00B5, `μs` U+03BC; Go accepts both and `us`). */
const NANOSECONDS: Readonly<Record<string, number>> = {
  ns: 1,
  us: 1e3,
  "\u00b5s": 1e3,
  "\u03bcs": 1e3,
  ms: 1e6,
  s: 1e9,
  m: 60e9,
  h: 3600e9,
};

/** Go's `time.Duration` is an int64 of nanoseconds: 2^63 - 1 ns is about 292 years. */
const MAX_NANOSECONDS = 2 ** 63;

const EXAMPLES = 'e.g. "300ms", "1.5s", "10m0s" or "1h30m"';

/**
 * Parses a Go duration into milliseconds (fractional below a millisecond: `"1500ns"` is `0.0015`).
 *
 * The grammar is Go's: an optional sign, then one or more decimal numbers each with a unit (`ns`,
 * `us`/`µs`, `ms`, `s`, `m`, `h`), e.g. `"1h30m"`, `"1.5s"`, `"-1s"`, `".5m"`. A bare `"0"` (or
 * `"-0"`, `"+0"`) needs no unit; any other number does. No spaces, no other units, nothing beyond
 * Go's range (about ±292 years). Negative values parse; callers that cannot use them say so.
 *
 * @throws Error naming the input, what was wrong with it, and a valid example.
 * @example
 * ```ts
 * parseGoDuration("1h30m"); // 5_400_000
 * parseGoDuration("300ms"); // 300
 * parseGoDuration("-1.5s"); // -1500
 * parseGoDuration("15");    // throws: missing unit
 * ```
 */
export function parseGoDuration(text: string): number {
  const invalid = (why: string) =>
    new Error(`invalid Go duration ${JSON.stringify(text)}: ${why}; write it like ${EXAMPLES}`);
  let rest = text;
  let sign = 1;
  if (rest.startsWith("-") || rest.startsWith("+")) {
    if (rest.startsWith("-")) sign = -1;
    rest = rest.slice(1);
  }
  if (rest === "0") return 0;
  if (rest === "") throw invalid("it is empty");
  let nanoseconds = 0;
  while (rest !== "") {
    const number = /^(\d*)(?:\.(\d*))?/.exec(rest);
    const whole = number?.[1] ?? "";
    const fraction = number?.[2] ?? "";
    if (whole === "" && fraction === "") {
      throw invalid(`expected a number at ${JSON.stringify(rest)}`);
    }
    rest = rest.slice(number?.[0].length ?? 0);
    const unit = /^[^\d.]*/.exec(rest)?.[0] ?? "";
    if (unit === "") throw invalid(`the number ${whole || "0"}.${fraction} has no unit`);
    const scale = NANOSECONDS[unit];
    if (scale === undefined) {
      throw invalid(`unknown unit ${JSON.stringify(unit)} (Go knows ns, us, µs, ms, s, m, h)`);
    }
    rest = rest.slice(unit.length);
    nanoseconds += Number(`${whole || "0"}.${fraction || "0"}`) * scale;
  }
  if (nanoseconds >= MAX_NANOSECONDS) throw invalid("it is beyond Go's range of about 292 years");
  return (sign * nanoseconds) / 1e6;
}
