import { describe, expect, it } from "vitest";
import { characterCount, cleanText, cutText, quoteText, safeText } from "./text.js";

describe("text from the other side", () => {
  it("drops control and format characters, a newline or tab becoming a space", () => {
    expect(cleanText("a\u001b[31mb\u202ec\u200bd\ufeffe\u2066f\nG\tH\u0085")).toBe(
      "a[31mbcdef G H",
    );
    expect(cleanText("plain")).toBe("plain");
  });

  it("cuts on a character boundary with a marker, counting characters as Kubernetes does", () => {
    const cut = cutText("x".repeat(50_000), 10_240);
    expect(characterCount(cut)).toBeLessThanOrEqual(10_240);
    expect(cut).toMatch(/x… \(\d+ more characters\)$/);
    const [, more] = /\((\d+) more/.exec(cut) ?? [];
    expect(cut.indexOf("…") + Number(more)).toBe(50_000);
    // 😀 is two UTF-16 units and one character: never split, and 600 of them fit in 1,000.
    const emoji = "😀".repeat(600);
    expect(cutText(emoji, 1000)).toBe(emoji);
    const cutEmoji = cutText("😀".repeat(2000), 1000);
    expect(characterCount(cutEmoji)).toBeLessThanOrEqual(1000);
    expect(cutEmoji).not.toMatch(/[\ud800-\udbff](?![\udc00-\udfff])/);
    expect(cutText("short", 10)).toBe("short");
  });

  it("quotes a value with its unsafe characters escaped, and cleans then cuts free text", () => {
    expect(quoteText("aws:///i-1\u202e")).toBe('"aws:///i-1\\u{202e}"');
    expect(quoteText("y".repeat(500), 20).length).toBeLessThanOrEqual(22);
    expect(safeText(`\u001b${"z".repeat(5000)}`, 100)).toMatch(/^z+… \(\d+ more characters\)$/);
  });
});
