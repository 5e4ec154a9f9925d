import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { createLogger } from "./logging.js";
import { REDACTED, registerSecret } from "./redact.js";

function capture(format: "json" | "text"): {
  lines: string[];
  log: ReturnType<typeof createLogger>;
} {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk, _encoding, done) {
      lines.push(String(chunk));
      done();
    },
  });
  return { lines, log: createLogger({ format, destination }) };
}

describe("an error from the other side in a log line", () => {
  // A cloud's error message is the cloud's text: it may be huge, carry terminal escapes and bidi
  // overrides, and quote a credential. What reaches a log line is one bounded line without any.
  const secret = "tenant-token-Qm8v2LxR";
  registerSecret(secret);
  const hostile = `denied\u001b[2J\u202eevil\nforged line ${"x".repeat(4_034)}${secret}${"y".repeat(100_000)}`;

  it.each(["json", "text"] as const)("is cleaned, cut and redacted in the %s format", (format) => {
    const { lines, log } = capture(format);
    log.error(
      { err: new Error(hostile, { cause: new Error(`inner ${secret}`) }) },
      "cloud call failed",
    );
    const text = lines.join("");
    expect(text).not.toContain(secret);
    expect(text).not.toContain("Qm8v2LxR");
    expect(text).not.toContain("tenant-tok");
    for (const unsafe of ["\u001b", "\u202e", "\\u001b", "\\u202e"]) {
      expect(text).not.toContain(unsafe);
    }
    expect(text.length).toBeLessThan(40_000);
    if (format === "json") {
      const line = JSON.parse(text) as { err: { message: string; cause: { message: string } } };
      expect(line.err.message).toMatch(/^denied\[2Jevil forged line x+/);
      expect(line.err.message).toMatch(/… \(\d+ more characters\)$/);
      expect([...line.err.message].length).toBeLessThanOrEqual(4096);
      expect(line.err.cause.message).toBe(`inner ${REDACTED}`);
    }
  });
});
