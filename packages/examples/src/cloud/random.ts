/**
 * A small seeded pseudo-random generator (mulberry32). The fake cloud draws every "random" choice from
 * one of these — IDs, list order, injected faults — so a run is reproducible from its seed.
 *
 * @module
 */

/** Deterministic random numbers from a 32-bit seed. */
export class SeededRandom {
  #state: number;

  /** @param seed - any integer; the same seed yields the same sequence */
  constructor(seed: number) {
    if (!Number.isInteger(seed)) {
      throw new TypeError(`SeededRandom: seed must be an integer, got ${seed}`);
    }
    this.#state = seed >>> 0;
  }

  /** A float in [0, 1). */
  next(): number {
    this.#state = (this.#state + 0x6d2b79f5) >>> 0;
    let t = this.#state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** An integer in [0, n). */
  int(n: number): number {
    return Math.floor(this.next() * n);
  }

  /** `length` lowercase hex digits. */
  hex(length: number): string {
    let out = "";
    while (out.length < length) out += this.int(16).toString(16);
    return out;
  }

  /** A shuffled copy of `items` (Fisher–Yates). */
  shuffle<T>(items: readonly T[]): T[] {
    const copy = [...items];
    for (let i = copy.length - 1; i > 0; i--) {
      const j = this.int(i + 1);
      const a = copy[i] as T;
      copy[i] = copy[j] as T;
      copy[j] = a;
    }
    return copy;
  }
}
