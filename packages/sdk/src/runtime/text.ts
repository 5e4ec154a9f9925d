/**
 * Text that came from the other side (a cloud, a tenant) made safe to show: control and format
 * characters removed, and cut to a length the API server accepts. The one place condition messages,
 * Event messages and the kit's log lines are bounded, so no caller can forget a limit.
 *
 * @module
 */

/**
 * Characters that change how text around them is displayed or read rather than being text: C0/C1
 * controls (ANSI escapes, newlines) and format characters (bidi overrides and isolates, zero-width
 * characters, the byte order mark). The bidi and zero-width ranges are named besides `\p{Cf}` so the
 * rule does not depend on the Unicode version of the engine.
 */
const UNSAFE = /[\p{Cc}\p{Cf}\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]/u;
const UNSAFE_ALL = new RegExp(UNSAFE.source, "gu");

/** Whether `text` holds a control or format character (see {@link cleanText}). */
export function hasUnsafeCharacters(text: string): boolean {
  return UNSAFE.test(text);
}

/**
 * `text` without control or format characters: a line feed or tab becomes a space, any other is
 * dropped, so an ANSI escape or a bidi override cannot rewrite what a reader sees.
 *
 * @example
 * ```ts
 * cleanText("i-1\u001b[2J\u202eevil\nnext"); // "i-1[2Jevil next"
 * ```
 */
export function cleanText(text: string): string {
  if (!UNSAFE.test(text)) return text;
  return text.replace(UNSAFE_ALL, (c) => (c === "\n" || c === "\t" || c === "\r" ? " " : ""));
}

/** Characters (code points, as Kubernetes counts `maxLength`) of `text`. */
export function characterCount(text: string): number {
  let count = 0;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    // A high surrogate followed by a low one is one character.
    if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) i++;
    }
    count++;
  }
  return count;
}

/**
 * `text` cut to at most `max` characters (code points, never half of a surrogate pair), ending with
 * `… (N more characters)` when something was cut, the marker counted in `max`.
 *
 * @example
 * ```ts
 * cutText("x".repeat(50_000), 10_240); // 10,240 characters, ending "… (39786 more characters)"
 * ```
 */
export function cutText(text: string, max: number): string {
  // Fewer UTF-16 units than `max` means fewer characters: the common case costs nothing.
  if (text.length <= max) return text;
  const total = characterCount(text);
  if (total <= max) return text;
  // The marker's own length depends on N; the digits of `total` bound it from above. A bound too
  // small for the count (a quoted name) ends with the ellipsis alone.
  const counted = ` (${total} more characters)`.length + 1;
  const markerLength = counted * 2 <= max ? counted : 1;
  const keep = Math.max(0, max - markerLength);
  let end = 0;
  for (let kept = 0; kept < keep && end < text.length; kept++) {
    const unit = text.charCodeAt(end);
    end += unit >= 0xd800 && unit <= 0xdbff && end + 1 < text.length ? 2 : 1;
  }
  const head = text.slice(0, end);
  return markerLength === 1 ? `${head}…` : `${head}… (${total - keep} more characters)`;
}

/**
 * `text` as a message may show it: cleaned ({@link cleanText}) and cut to `max` characters
 * ({@link cutText}).
 *
 * @example
 * ```ts
 * safeText(error.message, 1024);
 * ```
 */
export function safeText(text: string, max: number): string {
  return cutText(cleanText(text), max);
}

/**
 * A value from the other side quoted for a message: at most `max` characters, control and format
 * characters shown as `\u{…}` escapes (so a reader sees that they are there, and they do nothing).
 *
 * @example
 * ```ts
 * quoteText("aws:///i-1\u202e"); // "\"aws:///i-1\\u{202e}\""
 * ```
 */
export function quoteText(text: string, max = 80): string {
  const short = cutText(text, max);
  const escaped = short.replace(
    UNSAFE_ALL,
    (c) => `\\u{${(c.codePointAt(0) ?? 0).toString(16).padStart(4, "0")}}`,
  );
  return `"${escaped}"`;
}
