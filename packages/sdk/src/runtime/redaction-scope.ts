/**
 * What the redaction layer hides, and for whom. Two kinds of values:
 *
 * - the process's own, from `registerSecret` (a driver's cloud credentials from its environment):
 *   hidden everywhere; the newest 1,024 are kept, and only these evict one another;
 * - a pool's, held by its {@link RedactionScope} (the Secrets its credentials hook read, its
 *   bootstrap data): hidden everywhere while the scope holds them (reference counted, never evicted
 *   by another pool's), and released when the scope drops them (new credentials, the pool gone).
 *   Short values (4 to 7 characters) of a scope are hidden only in texts written while that scope
 *   runs (the pool's own conditions, Events and logs), and only as whole words: hidden everywhere,
 *   they would hide ordinary words in every tenant's messages.
 *
 * @module
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { SecretIndex, type TextRange } from "./secret-index.js";

/** Values shorter than this are hidden only inside their own scope. */
export const MIN_SHARED_SECRET_LENGTH = 8;
/** Values shorter than this are never treated as secrets (a guessable value protects nothing). */
export const MIN_SCOPED_SECRET_LENGTH = 4;
const MAX_REGISTERED = 1024;
/** Values one scope holds through {@link holdSecret} (bootstrap data…), newest kept. */
const MAX_HELD_PER_SCOPE = 256;

const shared = new SecretIndex({ minLength: MIN_SHARED_SECRET_LENGTH });
// Insertion-ordered: the oldest registration is the first one out.
const registered = new Set<string>();
const current = new AsyncLocalStorage<RedactionScope>();

/** A value and its base64 form, as both show up in texts. */
function formsOf(value: string): string[] {
  return [value, Buffer.from(value, "utf8").toString("base64")];
}

/** The process-wide registration behind `registerSecret`: O(1), newest 1,024 forms kept. */
export function registerProcessSecret(value: string): void {
  if (typeof value !== "string" || value.length < MIN_SHARED_SECRET_LENGTH) return;
  for (const form of formsOf(value)) {
    if (registered.delete(form)) {
      registered.add(form);
      continue;
    }
    registered.add(form);
    shared.add(form);
    if (registered.size > MAX_REGISTERED) {
      const oldest = registered.values().next().value;
      if (oldest === undefined) break;
      registered.delete(oldest);
      shared.remove(oldest);
    }
  }
}

/**
 * The secret values of one owner (a pool): held while it needs them, released all at once. Texts
 * written inside {@link RedactionScope.run} also hide the scope's short values.
 */
export class RedactionScope {
  readonly #slots = new Map<string, readonly string[]>();
  readonly #held = new Set<string>();
  readonly #short = new SecretIndex({
    minLength: MIN_SCOPED_SECRET_LENGTH,
    wordBoundedBelow: MIN_SHARED_SECRET_LENGTH,
  });

  /**
   * Replaces the values of `slot` (e.g. `"credentials"`): the new ones are held before the old ones
   * are released, so a value in both is never unhidden in between.
   */
  set(slot: string, values: readonly string[]): void {
    const forms = values.flatMap(formsOf);
    for (const form of forms) this.#hold(form);
    for (const form of this.#slots.get(slot) ?? []) this.#release(form);
    if (forms.length > 0) this.#slots.set(slot, forms);
    else this.#slots.delete(slot);
  }

  /** Holds one more value (bootstrap data); past 256 such values, the oldest is released. */
  hold(value: string): void {
    if (typeof value !== "string" || value.length < MIN_SCOPED_SECRET_LENGTH) return;
    if (this.#held.delete(value)) {
      this.#held.add(value);
      return;
    }
    this.#held.add(value);
    for (const form of formsOf(value)) this.#hold(form);
    if (this.#held.size > MAX_HELD_PER_SCOPE) {
      const oldest = this.#held.values().next().value;
      if (oldest === undefined) return;
      this.#held.delete(oldest);
      for (const form of formsOf(oldest)) this.#release(form);
    }
  }

  /** Releases every value: the owner is gone. The scope may be used again afterwards. */
  close(): void {
    for (const forms of this.#slots.values()) for (const form of forms) this.#release(form);
    this.#slots.clear();
    for (const value of this.#held) for (const form of formsOf(value)) this.#release(form);
    this.#held.clear();
  }

  /** Runs `fn` with this scope current: every text redacted inside it also hides its short values. */
  run<T>(fn: () => T): T {
    return current.run(this, fn);
  }

  /** Appends where the scope's short values occur in `text`. */
  findShort(text: string, out: TextRange[]): void {
    this.#short.find(text, out);
  }

  #hold(form: string): void {
    if (shared.accepts(form)) shared.add(form);
    else this.#short.add(form);
  }

  #release(form: string): void {
    if (shared.accepts(form)) shared.remove(form);
    else this.#short.remove(form);
  }
}

/**
 * Holds a value for the pool being reconciled (its scope, released with it), or, outside any scope,
 * registers it process-wide as `registerSecret` does.
 */
export function holdSecret(value: string): void {
  const scope = current.getStore();
  if (scope) scope.hold(value);
  else registerProcessSecret(value);
}

/** Where the values to hide occur in `text`: every shared one, and the current scope's short ones. */
export function secretRanges(text: string): TextRange[] {
  const ranges: TextRange[] = [];
  shared.find(text, ranges);
  current.getStore()?.findShort(text, ranges);
  return ranges;
}
