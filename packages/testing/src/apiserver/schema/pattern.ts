/**
 * Compiles a schema `pattern` (Go RE2 syntax) for JavaScript. The common subset is identical; the
 * differences handled here: a leading `(?i)`/`(?s)`/`(?m)` flag group becomes a RegExp flag, `\A` and `\z`
 * become anchors, and POSIX classes such as `[[:alpha:]]` are expanded. Unicode mode is used when the
 * pattern allows it, so `.` matches a rune as in Go.
 *
 * @throws Error naming the pattern when it compiles in neither mode.
 */
export function compilePattern(pattern: string): RegExp {
  let source = pattern;
  let flags = "";
  const leading = /^\(\?([imsU]+)\)/.exec(source);
  if (leading?.[1] !== undefined) {
    source = source.slice(leading[0].length);
    for (const flag of leading[1]) {
      if (flag === "i" || flag === "m" || flag === "s") flags += flag;
    }
  }
  source = source
    .replace(/\\A/g, "^")
    .replace(/\\z/g, "$(?![\\s\\S])")
    .replace(
      /\[:(alnum|alpha|digit|lower|upper|space|xdigit|word|punct):\]/g,
      (_, name: string) => {
        const classes: Record<string, string> = {
          alnum: "0-9A-Za-z",
          alpha: "A-Za-z",
          digit: "0-9",
          lower: "a-z",
          upper: "A-Z",
          space: "\\t\\n\\v\\f\\r ",
          xdigit: "0-9A-Fa-f",
          word: "0-9A-Za-z_",
          punct: "!-\\/:-@\\[-`{-~",
        };
        return classes[name] ?? "";
      },
    );
  try {
    return new RegExp(source, `${flags}u`);
  } catch {
    try {
      return new RegExp(source, flags);
    } catch (error) {
      throw new Error(
        `pattern ${JSON.stringify(pattern)} does not compile: ${(error as Error).message}`,
      );
    }
  }
}
