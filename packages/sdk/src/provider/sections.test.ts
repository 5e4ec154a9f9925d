// The sections of one reconcile: the store (one write per section), the view a phase gets (only
// what it declared), runPhase (a phase that goes on must have written its sections) and the order
// check of a phase list.
import { describe, expect, it } from "vitest";
import type { PhaseResult, PoolPhase, PoolSectionName, PoolSections } from "./phase.js";
import type { PoolScope } from "./scope.js";
import {
  checkPhaseOrder,
  PRELOADED,
  phaseView,
  runPhase,
  SectionStore,
  sectionsOf,
} from "./sections.js";
import { fakeScope } from "./testing.js";

type Phase = PoolPhase<unknown, unknown>;

/** A phase that declares `reads` and `writes`; `run` does nothing unless given. */
function phase(
  name: string,
  reads: readonly PoolSectionName[],
  writes: readonly PoolSectionName[],
  run: Phase["run"] = () => undefined,
): Phase {
  return { name, reads, writes, run };
}

const ROLLOUT: PoolSections<unknown, unknown>["rollout"] = { note: "a note" };
const TEARDOWN: PoolSections<unknown, unknown>["teardown"] = { deleted: true };
const DONE: PhaseResult = { ready: { status: "False", reason: "Stopped", message: "here" } };

const scopeOf = () => fakeScope().scope as PoolScope<unknown, unknown>;

describe("SectionStore", () => {
  it("keeps what a phase wrote, and knows which sections were written", () => {
    const store = new SectionStore<unknown, unknown>();
    expect(store.has("rollout")).toBe(false);
    expect(store.peek("rollout")).toBeUndefined();
    store.write("rollout", ROLLOUT, "nativeRollout");
    expect(store.has("rollout")).toBe(true);
    expect(store.peek("rollout")).toBe(ROLLOUT);
    expect(store.has("teardown")).toBe(false);
  });

  it("counts a section written as null (machines of a kind without them) as written", () => {
    const store = new SectionStore<unknown, unknown>();
    store.write("machines", null, "machines");
    expect(store.has("machines")).toBe(true);
    expect(store.peek("machines")).toBeNull();
  });

  it("refuses a second write of a section, naming both writers", () => {
    const store = new SectionStore<unknown, unknown>();
    store.write("rollout", ROLLOUT, "nativeRollout");
    expect(() => store.write("rollout", { note: undefined }, "myRollout")).toThrow(
      'phase "myRollout" writes the rollout section, which "nativeRollout" already wrote in this reconcile: a section is written once, by one phase',
    );
    expect(store.peek("rollout")).toBe(ROLLOUT);
  });

  it("records provider conditions by type, without changing a map handed out before", () => {
    const store = new SectionStore<unknown, unknown>();
    const before = store.conditions;
    store.setCondition("Quota", { status: "False", reason: "Exhausted", message: "m" });
    store.setCondition("Quota", { status: "True", reason: "Ok", message: "" });
    store.setCondition("Network", { status: "True", reason: "Ok", message: "" });
    expect(before.size).toBe(0);
    expect([...store.conditions]).toEqual([
      ["Quota", { status: "True", reason: "Ok", message: "" }],
      ["Network", { status: "True", reason: "Ok", message: "" }],
    ]);
  });
});

describe("sectionsOf", () => {
  it("finds the store of a scope the kit built", () => {
    const scope = scopeOf();
    sectionsOf(scope).write("teardown", TEARDOWN, "teardown");
    expect(sectionsOf(scope).peek("teardown")).toBe(TEARDOWN);
  });

  it("refuses a scope built by hand, pointing at the test kit", () => {
    const scope = { ...scopeOf() };
    expect(() => sectionsOf(scope)).toThrow(TypeError);
    expect(() => sectionsOf(scope)).toThrow(/build it with createTestScope/);
  });
});

describe("phaseView", () => {
  it("is the scope, with the same store behind it", () => {
    const scope = scopeOf();
    const view = phaseView(scope, phase("p", [], ["rollout"]));
    expect(view.pool).toBe(scope.pool);
    expect(view.driver).toBe(scope.driver);
    expect(view.memory).toBe(scope.memory);
    view.write("rollout", ROLLOUT);
    expect(sectionsOf(scope).peek("rollout")).toBe(ROLLOUT);
    expect(sectionsOf(view)).toBe(sectionsOf(scope));
  });

  it("reads a declared section an earlier phase wrote", () => {
    const scope = scopeOf();
    sectionsOf(scope).write("rollout", ROLLOUT, "nativeRollout");
    expect(phaseView(scope, phase("p", ["rollout"], [])).read("rollout")).toBe(ROLLOUT);
  });

  it("refuses a read the phase did not declare, even of a written section", () => {
    const scope = scopeOf();
    sectionsOf(scope).write("rollout", ROLLOUT, "nativeRollout");
    const view = phaseView(scope, phase("sneaky", ["group"], ["teardown"]));
    expect(() => view.read("rollout")).toThrow(TypeError);
    expect(() => view.read("rollout")).toThrow(
      'phase "sneaky" reads the rollout section without declaring it: add "rollout" to its reads',
    );
  });

  it("refuses a read of a declared section nobody wrote yet", () => {
    const view = phaseView(scopeOf(), phase("early", ["group"], []));
    expect(() => view.read("group")).toThrow(
      'phase "early" reads the group section, which no phase has written in this reconcile',
    );
  });

  it("refuses a write the phase did not declare, and stores nothing", () => {
    const scope = scopeOf();
    const view = phaseView(scope, phase("sneaky", ["rollout"], ["teardown"]));
    expect(() => view.write("rollout", ROLLOUT)).toThrow(TypeError);
    expect(() => view.write("rollout", ROLLOUT)).toThrow(
      'phase "sneaky" writes the rollout section without declaring it: add "rollout" to its writes',
    );
    expect(sectionsOf(scope).has("rollout")).toBe(false);
  });

  it("refuses a section written twice, naming the phase that wrote it first", () => {
    const scope = scopeOf();
    phaseView(scope, phase("first", [], ["rollout"])).write("rollout", ROLLOUT);
    const second = phaseView(scope, phase("second", [], ["rollout"]));
    expect(() => second.write("rollout", { note: undefined })).toThrow(
      /phase "second" writes the rollout section, which "first" already wrote/,
    );
  });

  it("names a preloaded section's writer as such", () => {
    const { scope } = fakeScope({ sections: { rollout: ROLLOUT } });
    const view = phaseView(scope as PoolScope<unknown, unknown>, phase("p", [], ["rollout"]));
    expect(() => view.write("rollout", ROLLOUT)).toThrow(`which "${PRELOADED}" already wrote`);
  });
});

describe("runPhase", () => {
  it("runs the phase on its view and goes on once it wrote what it declared", async () => {
    const scope = scopeOf();
    let seen: unknown;
    const p = phase("p", [], ["rollout", "teardown"], (view) => {
      seen = view.pool;
      view.write("rollout", ROLLOUT);
      view.write("teardown", TEARDOWN);
    });
    expect(await runPhase(p, scope)).toBeUndefined();
    expect(seen).toBe(scope.pool);
    expect(sectionsOf(scope).peek("teardown")).toBe(TEARDOWN);
  });

  it("awaits an async phase", async () => {
    const scope = scopeOf();
    const p = phase("p", [], ["rollout"], async (view) => {
      await Promise.resolve();
      view.write("rollout", ROLLOUT);
    });
    expect(await runPhase(p, scope)).toBeUndefined();
    expect(sectionsOf(scope).has("rollout")).toBe(true);
  });

  it("refuses a phase that goes on without writing its declared sections, naming each", async () => {
    const scope = scopeOf();
    const lazy = phase("lazy", [], ["rollout", "teardown"]);
    await expect(runPhase(lazy, scope)).rejects.toThrow(
      'phase "lazy" went on without writing the rollout section and the teardown section: write it before returning, or return a result to end the reconcile',
    );
  });

  it("names only the sections it left unwritten", async () => {
    const scope = scopeOf();
    const half = phase("half", [], ["rollout", "teardown"], (view) => {
      view.write("rollout", ROLLOUT);
    });
    await expect(runPhase(half, scope)).rejects.toThrow(
      'phase "half" went on without writing the teardown section:',
    );
  });

  it("lets a phase that ends the reconcile leave its sections unwritten", async () => {
    const scope = scopeOf();
    const stop = phase("stop", [], ["rollout"], () => DONE);
    expect(await runPhase(stop, scope)).toBe(DONE);
    expect(sectionsOf(scope).has("rollout")).toBe(false);
  });

  it("keeps the provider conditions a phase sets through its view in the reconcile's store", async () => {
    const { scope } = fakeScope({ options: { conditionTypes: ["Quota"] } });
    const quota = phase("quota", [], [], (view) => {
      view.conditions.set({ type: "Quota", status: "False", reason: "Exhausted", message: "m" });
    });
    await runPhase(quota, scope as PoolScope<unknown, unknown>);
    expect(sectionsOf(scope).conditions.get("Quota")).toEqual({
      status: "False",
      reason: "Exhausted",
      message: "m",
    });
  });

  it("passes what the phase throws through", async () => {
    const boom = phase("boom", ["group"], [], (view) => {
      view.read("group");
    });
    await expect(runPhase(boom, scopeOf())).rejects.toThrow(/no phase has written/);
  });
});

describe("checkPhaseOrder", () => {
  const writer = phase("writer", [], ["rollout"]);
  const reader = phase("reader", ["rollout"], []);

  it("passes a list in which every read comes after its writer", () => {
    expect(() => checkPhaseOrder([writer, reader])).not.toThrow();
    expect(() => checkPhaseOrder([])).not.toThrow();
  });

  it("passes a read of a section that is there before the first phase", () => {
    expect(() => checkPhaseOrder([reader], ["rollout"])).not.toThrow();
  });

  it("refuses a read before the write, naming both phases and the fix", () => {
    expect(() => checkPhaseOrder([reader, writer])).toThrow(TypeError);
    expect(() => checkPhaseOrder([reader, writer])).toThrow(
      'phases: "reader" reads the rollout section, which "writer" writes after it; move "reader" after "writer"',
    );
  });

  it("refuses a read of a section no phase writes", () => {
    expect(() => checkPhaseOrder([reader])).toThrow(
      'phases: "reader" reads the rollout section, which no phase of the list writes',
    );
  });

  it("checks every read of a phase, not only the first", () => {
    const both = phase("both", ["rollout", "teardown"], []);
    expect(() => checkPhaseOrder([writer, both])).toThrow(
      'phases: "both" reads the teardown section, which no phase of the list writes',
    );
    expect(() => checkPhaseOrder([writer, both], ["teardown"])).not.toThrow();
  });

  it("refuses a phase that reads what it writes itself", () => {
    const self = phase("self", ["rollout"], ["rollout"]);
    expect(() => checkPhaseOrder([self])).toThrow(/"self" reads the rollout section/);
  });

  it("refuses two writers of one section, naming both", () => {
    const other = phase("other", [], ["teardown", "rollout"]);
    expect(() => checkPhaseOrder([writer, other])).toThrow(
      'phases: "other" and "writer" both write the rollout section; a section has one writer (replace "writer" instead)',
    );
  });

  it("refuses two writers even when nothing reads the section", () => {
    expect(() => checkPhaseOrder([writer, reader, phase("late", [], ["rollout"])])).toThrow(
      /"late" and "writer" both write the rollout section/,
    );
  });

  it("refuses a name used twice", () => {
    expect(() => checkPhaseOrder([writer, phase("writer", [], [])])).toThrow(
      'phases: two phases are named "writer"',
    );
  });

  const run = (): undefined => undefined;

  it.each([
    ["reads", { name: "old", writes: [], run }],
    ["writes", { name: "old", reads: [], run }],
    ["a reads list", { name: "old", reads: "rollout", writes: [], run }],
  ])("refuses a phase without %s", (_what, bad) => {
    expect(() => checkPhaseOrder([bad as unknown as Phase])).toThrow(
      'phases: phase "old" must declare reads and writes (arrays of section names; [] for none)',
    );
  });

  it.each([
    ["a name", { reads: [], writes: [], run: () => undefined }, '{"reads":[],"writes":[]}'],
    ["a run function", { name: "norun", reads: [], writes: [] }, '"norun"'],
    ["an object at all", undefined, "undefined"],
  ])("refuses a phase without %s", (_what, bad, shown) => {
    expect(() => checkPhaseOrder([writer, bad as unknown as Phase])).toThrow(
      `phases: every phase needs a name and a run function, got ${shown}`,
    );
  });

  it("checks names and writers before reads", () => {
    // Both problems: the duplicate name is what it reports.
    expect(() => checkPhaseOrder([reader, phase("reader", [], [])])).toThrow(/two phases/);
  });
});
