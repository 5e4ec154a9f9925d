/** What one workload cluster's table holds at most: strings, characters, and one string's length. */
const INTERN_MAX_STRINGS = 4096;
const INTERN_MAX_CHARACTERS = 128 * 1024;
const INTERN_MAX_LENGTH = 512;

/**
 * A table that hands back one copy of each string it has seen. The strings are the workload
 * cluster's, so it is bounded (at most {@link INTERN_MAX_STRINGS} strings and
 * {@link INTERN_MAX_CHARACTERS} characters; a string longer than {@link INTERN_MAX_LENGTH} is
 * returned as it came), and it starts over when full: strings that never repeat (hostnames,
 * transition times) cannot pin it, and the ones that do come back on their next use. Starting over
 * frees only the table's own references; Nodes already projected keep theirs.
 */
export class StringTable {
  private table = new Map<string, string>();
  private held = 0;

  /** The table's copy of `value` (`value` itself the first time it is seen). */
  readonly intern = (value: string): string => {
    if (value.length > INTERN_MAX_LENGTH) return value;
    const known = this.table.get(value);
    if (known !== undefined) return known;
    if (this.table.size >= INTERN_MAX_STRINGS || this.held + value.length > INTERN_MAX_CHARACTERS) {
      this.table = new Map();
      this.held = 0;
    }
    this.table.set(value, value);
    this.held += value.length;
    return value;
  };

  /** Strings and characters the table holds now. */
  get size(): { strings: number; characters: number } {
    return { strings: this.table.size, characters: this.held };
  }
}
