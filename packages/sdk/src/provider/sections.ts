/**
 * The sections of one reconcile as the kit keeps them: {@link SectionStore} holds what each phase
 * wrote and who wrote it, {@link phaseView} hands a phase only the sections it declared, and
 * {@link checkPhaseOrder} refuses a phase list that cannot work before any pool is reconciled.
 *
 * @module
 */
import type { PhaseResult, PhaseScope, PoolPhase, PoolSectionName, PoolSections } from "./phase.js";
import type { PoolScope, ReadyState } from "./scope.js";

/** Who writes a section that a scope was given up front (tests that start mid-pipeline). */
export const PRELOADED = "(preloaded)";

/** The sections written so far in one reconcile, and the provider conditions its phases set. */
export class SectionStore<Spec, Settings> {
  readonly #values = new Map<PoolSectionName, unknown>();
  readonly #writers = new Map<PoolSectionName, string>();
  #conditions: ReadonlyMap<string, ReadyState> = new Map();

  /** Whether a section was written. */
  has(section: PoolSectionName): boolean {
    return this.#writers.has(section);
  }

  /** A section, or `undefined` when no phase wrote it (yet). */
  peek<K extends PoolSectionName>(section: K): PoolSections<Spec, Settings>[K] | undefined {
    return this.#values.get(section) as PoolSections<Spec, Settings>[K] | undefined;
  }

  /** Writes a section on behalf of `writer`; a second write of the same section is a kit bug. */
  write<K extends PoolSectionName>(
    section: K,
    value: PoolSections<Spec, Settings>[K],
    writer: string,
  ): void {
    const previous = this.#writers.get(section);
    if (previous !== undefined) {
      throw new Error(
        `phase "${writer}" writes the ${section} section, which "${previous}" already wrote in this reconcile: a section is written once, by one phase`,
      );
    }
    this.#values.set(section, value);
    this.#writers.set(section, writer);
  }

  /** The provider conditions set so far (`scope.conditions.set`), by type. */
  get conditions(): ReadonlyMap<string, ReadyState> {
    return this.#conditions;
  }

  /** Records one provider condition (the scope's condition writer is its only caller). */
  setCondition(type: string, condition: ReadyState): void {
    this.#conditions = new Map(this.#conditions).set(type, condition);
  }
}

const stores = new WeakMap<object, SectionStore<unknown, unknown>>();

/** Ties a store to the scope it belongs to (the scope builder is the only caller). */
export function attachSections<Spec, Settings>(
  scope: PoolScope<Spec, Settings>,
  store: SectionStore<Spec, Settings>,
): void {
  stores.set(scope, store as SectionStore<unknown, unknown>);
}

/** The sections of a scope built by the kit's scope builder. */
export function sectionsOf<Spec, Settings>(
  scope: PoolScope<Spec, Settings>,
): SectionStore<Spec, Settings> {
  const store = stores.get(scope);
  if (!store) {
    throw new TypeError(
      "this scope was not built by the kit: build it with createTestScope (@capi-ts/sdk/provider/testing)",
    );
  }
  return store as SectionStore<Spec, Settings>;
}

/**
 * The scope as `phase` sees it: reads limited to `phase.reads`, writes to `phase.writes`, each
 * refused with the phase's name and the section otherwise.
 */
export function phaseView<Spec, Settings>(
  scope: PoolScope<Spec, Settings>,
  phase: PoolPhase<Spec, Settings>,
): PhaseScope<Spec, Settings, PoolSectionName, PoolSectionName> {
  const store = sectionsOf(scope);
  const reads = new Set<PoolSectionName>(phase.reads);
  const writes = new Set<PoolSectionName>(phase.writes);
  const view: PhaseScope<Spec, Settings, PoolSectionName, PoolSectionName> = {
    ...scope,
    read(section) {
      if (!reads.has(section)) {
        throw new TypeError(
          `phase "${phase.name}" reads the ${section} section without declaring it: add "${section}" to its reads`,
        );
      }
      if (!store.has(section)) {
        throw new Error(
          `phase "${phase.name}" reads the ${section} section, which no phase has written in this reconcile`,
        );
      }
      return store.peek(section) as PoolSections<Spec, Settings>[typeof section];
    },
    write(section, value) {
      if (!writes.has(section)) {
        throw new TypeError(
          `phase "${phase.name}" writes the ${section} section without declaring it: add "${section}" to its writes`,
        );
      }
      store.write(section, value, phase.name);
    },
  };
  attachSections(view, store);
  return view;
}

/**
 * Runs one phase on its view of the scope. A phase that goes on (returns nothing) must have written
 * every section it declared: the phases after it rely on them.
 */
export async function runPhase<Spec, Settings>(
  phase: PoolPhase<Spec, Settings>,
  scope: PoolScope<Spec, Settings>,
): Promise<PhaseResult | undefined> {
  const result = await phase.run(phaseView(scope, phase));
  if (result) return result;
  const store = sectionsOf(scope);
  const missing = phase.writes.filter((section) => !store.has(section));
  if (missing.length > 0) {
    throw new Error(
      `phase "${phase.name}" went on without writing ${missing.map((s) => `the ${s} section`).join(" and ")}: write it before returning, or return a result to end the reconcile`,
    );
  }
  return undefined;
}

/**
 * Refuses a phase list that cannot work: a name used twice, a section written by two phases, or a
 * phase that reads a section no earlier phase writes (`available`: sections there before the first
 * phase). Says which phase, which section, and who writes it.
 *
 * @example
 * ```ts
 * checkPhaseOrder(defaultPoolPhases()); // passes
 * ```
 */
export function checkPhaseOrder<Spec, Settings>(
  phases: readonly PoolPhase<Spec, Settings>[],
  available: Iterable<PoolSectionName> = [],
): void {
  const names = new Set<string>();
  const writerOf = new Map<PoolSectionName, string>();
  for (const phase of phases) {
    if (!phase || typeof phase.name !== "string" || typeof phase.run !== "function") {
      throw new TypeError(
        `phases: every phase needs a name and a run function, got ${JSON.stringify(phase?.name ?? phase)}`,
      );
    }
    if (!Array.isArray(phase.reads) || !Array.isArray(phase.writes)) {
      throw new TypeError(
        `phases: phase "${phase.name}" must declare reads and writes (arrays of section names; [] for none)`,
      );
    }
    if (names.has(phase.name)) {
      throw new TypeError(`phases: two phases are named "${phase.name}"`);
    }
    names.add(phase.name);
    for (const section of phase.writes) {
      const other = writerOf.get(section);
      if (other !== undefined) {
        throw new TypeError(
          `phases: "${phase.name}" and "${other}" both write the ${section} section; a section has one writer (replace "${other}" instead)`,
        );
      }
      writerOf.set(section, phase.name);
    }
  }
  const written = new Set<PoolSectionName>(available);
  for (const phase of phases) {
    for (const section of phase.reads) {
      if (written.has(section)) continue;
      const writer = writerOf.get(section);
      throw new TypeError(
        writer === undefined
          ? `phases: "${phase.name}" reads the ${section} section, which no phase of the list writes`
          : `phases: "${phase.name}" reads the ${section} section, which "${writer}" writes after it; move "${phase.name}" after "${writer}"`,
      );
    }
    for (const section of phase.writes) written.add(section);
  }
}
