/**
 * The deepest JSON a server of the manager parses: a review's envelope, an object and its managed
 * fields together stay far below it (CAPI objects nest fewer than 32 levels), while `JSON.stringify`,
 * `structuredClone` and schema checks, all recursive, overflow the stack somewhere past a few
 * thousand levels.
 */
export const MAX_JSON_DEPTH = 100;

const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACE = 0x7d;
const CLOSE_BRACKET = 0x5d;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/**
 * Whether the JSON text `text` nests arrays and objects deeper than `max` levels. One linear pass
 * over the characters (strings skipped, so a `[` inside one does not count), run before `JSON.parse`
 * so that nothing recursive ever sees a deeper value. Text that is not JSON is judged by its brackets
 * alone; the parse that follows refuses it.
 *
 * @example
 * ```ts
 * jsonDeeperThan('{"a":[1]}', 1); // true
 * jsonDeeperThan('{"a":"[[["}', 1); // false
 * ```
 */
export function jsonDeeperThan(text: string, max: number): boolean {
  let depth = 0;
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index);
    if (code === QUOTE) index = stringEnd(text, index);
    else if (code === OPEN_BRACE || code === OPEN_BRACKET) {
      if (++depth > max) return true;
    } else if (code === CLOSE_BRACE || code === CLOSE_BRACKET) depth--;
  }
  return false;
}

/** The index of the quote closing the string opened at `open` (the text's length when none does). */
function stringEnd(text: string, open: number): number {
  // indexOf runs natively: most of a review's bytes are inside strings.
  let quote = text.indexOf('"', open + 1);
  while (quote !== -1) {
    let backslashes = 0;
    while (text.charCodeAt(quote - 1 - backslashes) === BACKSLASH) backslashes++;
    if (backslashes % 2 === 0) return quote;
    quote = text.indexOf('"', quote + 1);
  }
  return text.length;
}
