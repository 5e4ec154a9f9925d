/**
 * An informer's cache: objects by key, with indexes kept in step on every put and remove. The
 * informer is its one writer.
 *
 * @module
 */
import type { IndexFunc } from "./informer-types.js";

interface Index<T> {
  fn: IndexFunc<T>;
  values: Map<string, Set<string>>;
}

/** Objects by key, and the indexes over them. */
export class IndexedStore<T> {
  readonly #objects = new Map<string, T>();
  readonly #indexes = new Map<string, Index<T>>();
  /** Names the informer in errors. */
  readonly #owner: string;

  constructor(owner: string) {
    this.#owner = owner;
  }

  get size(): number {
    return this.#objects.size;
  }

  get(key: string): T | undefined {
    return this.#objects.get(key);
  }

  values(): IterableIterator<T> {
    return this.#objects.values();
  }

  /** A copy of the entries: safe to iterate while removing. */
  entries(): [string, T][] {
    return [...this.#objects];
  }

  /**
   * Adds an index; existing objects are indexed at once. Adding the same function under the same
   * name again does nothing (several controllers may ask for one index); another function under a
   * taken name throws.
   */
  addIndexer(name: string, fn: IndexFunc<T>): void {
    const existing = this.#indexes.get(name);
    if (existing?.fn === fn) return;
    if (existing) {
      throw new Error(
        `informer for ${this.#owner}: an index named "${name}" already exists with another function; give the new index another name, or share one exported index function`,
      );
    }
    const index: Index<T> = { fn, values: new Map() };
    this.#indexes.set(name, index);
    for (const [key, obj] of this.#objects) indexAdd(index, key, obj);
  }

  /** Objects whose index `name` contains `value`. */
  byIndex(name: string, value: string): T[] {
    const index = this.#indexes.get(name);
    if (!index) {
      throw new Error(
        `informer for ${this.#owner}: no index named "${name}"; add it with addIndexer(name, fn) first`,
      );
    }
    const keys = index.values.get(value);
    if (!keys) return [];
    const result: T[] = [];
    for (const key of keys) {
      const obj = this.#objects.get(key);
      if (obj) result.push(obj);
    }
    return result;
  }

  put(key: string, obj: T): void {
    const old = this.#objects.get(key);
    if (old !== undefined) for (const index of this.#indexes.values()) indexRemove(index, key, old);
    this.#objects.set(key, obj);
    for (const index of this.#indexes.values()) indexAdd(index, key, obj);
  }

  remove(key: string): void {
    const old = this.#objects.get(key);
    if (old === undefined) return;
    for (const index of this.#indexes.values()) indexRemove(index, key, old);
    this.#objects.delete(key);
  }
}

function indexAdd<T>(index: Index<T>, key: string, obj: T): void {
  for (const value of index.fn(obj)) {
    let keys = index.values.get(value);
    if (!keys) {
      keys = new Set();
      index.values.set(value, keys);
    }
    keys.add(key);
  }
}

function indexRemove<T>(index: Index<T>, key: string, obj: T): void {
  for (const value of index.fn(obj)) {
    const keys = index.values.get(value);
    keys?.delete(key);
    if (keys?.size === 0) index.values.delete(value);
  }
}
