/**
 * A reference-counted set of secret values that finds where they occur in a text. Adding or
 * removing a value is O(1); finding them costs one map lookup per character of the text (plus one
 * per distinct length of the values sharing a prefix), whatever the number of values, so the
 * redaction layer stays cheap on every log line with thousands of values registered.
 *
 * @module
 */

/** One stretch of a text to hide, `[start, end)`. */
export interface TextRange {
  readonly start: number;
  readonly end: number;
}

// Under this many values a plain `indexOf` per value beats a scan of every position.
const LINEAR_SCAN_LIMIT = 16;

/**
 * Values indexed by their first `minLength` characters. Values shorter than `wordBoundedBelow` match
 * only as a whole word (not preceded or followed by a letter or digit), so that a short value does
 * not hide parts of ordinary words.
 */
export class SecretIndex {
  readonly #counts = new Map<string, number>();
  // prefix -> length of the values with that prefix -> how many such values
  readonly #buckets = new Map<string, Map<number, number>>();
  readonly #minLength: number;
  readonly #wordBoundedBelow: number;

  constructor(options: { readonly minLength: number; readonly wordBoundedBelow?: number }) {
    this.#minLength = options.minLength;
    this.#wordBoundedBelow = options.wordBoundedBelow ?? 0;
  }

  /** How many distinct values are held. */
  get size(): number {
    return this.#counts.size;
  }

  /** Whether the value is long enough to be held here. */
  accepts(value: string): boolean {
    return value.length >= this.#minLength;
  }

  /** Holds one more reference to `value` (ignored when it is too short). */
  add(value: string): void {
    if (!this.accepts(value)) return;
    const count = this.#counts.get(value) ?? 0;
    this.#counts.set(value, count + 1);
    if (count > 0) return;
    const prefix = value.slice(0, this.#minLength);
    let lengths = this.#buckets.get(prefix);
    if (!lengths) {
      lengths = new Map();
      this.#buckets.set(prefix, lengths);
    }
    lengths.set(value.length, (lengths.get(value.length) ?? 0) + 1);
  }

  /** Drops one reference to `value`; the value is forgotten with its last reference. */
  remove(value: string): void {
    const count = this.#counts.get(value);
    if (count === undefined) return;
    if (count > 1) {
      this.#counts.set(value, count - 1);
      return;
    }
    this.#counts.delete(value);
    const prefix = value.slice(0, this.#minLength);
    const lengths = this.#buckets.get(prefix);
    if (!lengths) return;
    const same = (lengths.get(value.length) ?? 1) - 1;
    if (same > 0) lengths.set(value.length, same);
    else lengths.delete(value.length);
    if (lengths.size === 0) this.#buckets.delete(prefix);
  }

  /** Whether `value` is held. */
  has(value: string): boolean {
    return this.#counts.has(value);
  }

  /** Appends to `out` the ranges of `text` where a held value occurs (unsorted, may overlap). */
  find(text: string, out: TextRange[]): void {
    if (this.#counts.size === 0 || text.length < this.#minLength) return;
    if (this.#counts.size <= LINEAR_SCAN_LIMIT) {
      for (const value of this.#counts.keys()) {
        for (let at = text.indexOf(value); at !== -1; at = text.indexOf(value, at + 1)) {
          if (this.#bounded(text, at, value.length))
            out.push({ start: at, end: at + value.length });
        }
      }
      return;
    }
    const last = text.length - this.#minLength;
    for (let at = 0; at <= last; at++) {
      const lengths = this.#buckets.get(text.slice(at, at + this.#minLength));
      if (!lengths) continue;
      let longest = 0;
      for (const length of lengths.keys()) {
        if (length <= longest || at + length > text.length) continue;
        if (this.#counts.has(text.slice(at, at + length)) && this.#bounded(text, at, length)) {
          longest = length;
        }
      }
      if (longest > 0) out.push({ start: at, end: at + longest });
    }
  }

  #bounded(text: string, at: number, length: number): boolean {
    if (length >= this.#wordBoundedBelow) return true;
    return !isWordChar(text.charCodeAt(at - 1)) && !isWordChar(text.charCodeAt(at + length));
  }
}

function isWordChar(code: number): boolean {
  return (
    (code >= 48 && code <= 57) || // 0-9
    (code >= 65 && code <= 90) || // A-Z
    (code >= 97 && code <= 122) // a-z
  );
}

/** `text` with every range replaced by `replacement` (overlapping and touching ranges merged). */
export function replaceRanges(text: string, ranges: TextRange[], replacement: string): string {
  if (ranges.length === 0) return text;
  ranges.sort((a, b) => a.start - b.start);
  let out = "";
  let copied = 0;
  let start = -1;
  let end = -1;
  for (const range of ranges) {
    if (start >= 0 && range.start <= end) {
      end = Math.max(end, range.end);
      continue;
    }
    if (start >= 0) {
      out += text.slice(copied, start) + replacement;
      copied = end;
    }
    start = range.start;
    end = range.end;
  }
  return out + text.slice(copied, start) + replacement + text.slice(end);
}
