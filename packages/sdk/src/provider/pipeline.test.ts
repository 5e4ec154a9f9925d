// The reconcile pipeline: the default lists and their order, inserting and replacing a phase, the
// check of a list, and running one on a fake scope and an in-memory driver.
import { describe, expect, it } from "vitest";
import type { PoolGroup } from "./driver.js";
import { PoolMemory } from "./memory.js";
import { definePhase, POOL_SECTION_NAMES, type PoolPhase, type PoolSectionName } from "./phase.js";
import {
  checkPhases,
  defaultDeletePhases,
  defaultPoolPhases,
  insertPhase,
  replacePhase,
  runPhases,
} from "./pipeline.js";
import { type FakeSettings, type FakeSpec, fakeCloud, fakeInstance, fakeScope } from "./testing.js";

const pipeline = defaultPoolPhases<FakeSpec, FakeSettings>();

type Phase = PoolPhase<FakeSpec, FakeSettings>;

/** A phase that declares `reads` and `writes` and does nothing (or `run`). */
function phase(
  name: string,
  reads: readonly PoolSectionName[],
  writes: readonly PoolSectionName[],
  run: Phase["run"] = () => undefined,
): Phase {
  return { name, reads, writes, run };
}

/** One reconcile with a fresh scope over the same cloud and memory. */
async function reconcile(
  cloud: ReturnType<typeof fakeCloud>,
  memory: PoolMemory,
  extra: Parameters<typeof fakeScope>[0] = {},
  phases: readonly Phase[] = pipeline,
) {
  const bed = fakeScope({ driver: cloud.driver, memory, ...extra });
  const result = await runPhases(phases, bed.scope);
  return { ...bed, result };
}

const names = (phases: readonly { name: string }[]) => phases.map((p) => p.name);

describe("the default pipeline on a fake cloud", () => {
  it("creates template and group, scales up, and is Ready with sorted IDs once instances run", async () => {
    const cloud = fakeCloud();
    const memory = new PoolMemory();
    let run = await reconcile(cloud, memory);
    expect(run.result.ready.reason).toBe("Provisioning");
    expect(cloud.mutating().map((c) => c.op)).toEqual(["createTemplateVersion", "createGroup"]);
    const group = cloud.group as PoolGroup<FakeSettings>;
    cloud.group = {
      ...group,
      instances: [fakeInstance({ id: "i-b" }), fakeInstance({ id: "i-a" })],
    };
    run = await reconcile(cloud, memory);
    expect(run.result.ready).toEqual({ status: "True", reason: "Ready", message: "" });
    expect(run.scope.pool.spec?.providerIDList).toEqual([
      "fake:///zone-a/i-a",
      "fake:///zone-a/i-b",
    ]);
    expect(run.scope.pool.status).toMatchObject({ replicas: 2, ready: true });
  });

  it("lets a provider insert its own phase and write its status field through the scope", async () => {
    const cloud = fakeCloud();
    const recordGroup = definePhase<FakeSpec, FakeSettings>()({
      name: "recordGroup",
      reads: ["group"],
      writes: [],
      run(scope) {
        scope.status.setProviderStatus({ groupId: scope.read("group").group.id });
        scope.status.setProviderID("fake:///group-1");
        scope.status.setInstances([{ instanceName: "i-1", ready: true }]);
      },
    });
    const phases = insertPhase(pipeline, { before: "publish" }, recordGroup);
    expect(phases.map((p) => p.name).slice(-2)).toEqual(["recordGroup", "publish"]);
    const memory = new PoolMemory();
    await reconcile(cloud, memory);
    const bed = fakeScope({ driver: cloud.driver, memory });
    await runPhases(phases, bed.scope);
    expect(bed.scope.pool.status).toMatchObject({
      groupId: "group-1",
      instances: [{ instanceName: "i-1", ready: true }],
    });
    expect(bed.scope.pool.spec?.providerID).toBe("fake:///group-1");
    expect(() => bed.scope.status.setProviderStatus({ ready: false })).toThrow(
      /written by the kit/,
    );
    expect(() => insertPhase(pipeline, { after: "nope" }, recordGroup)).toThrow(/no phase named/);
  });

  it("runs a replaced phase in place of the kit's", async () => {
    const kept: string[][] = [];
    const keepEveryVersion = definePhase<FakeSpec, FakeSettings>()({
      name: "keepEveryVersion",
      reads: ["template"],
      writes: [],
      run(scope) {
        kept.push(scope.read("template").versions.map((v) => v.version));
      },
    });
    /** A pool at steady state on version 1, with an unused older version 0. */
    const steadyPool = async () => {
      const cloud = fakeCloud();
      const memory = new PoolMemory();
      await reconcile(cloud, memory);
      const group = cloud.group as PoolGroup<FakeSettings>;
      cloud.group = { ...group, instances: [fakeInstance(), fakeInstance()] };
      cloud.versions = [{ version: "0", stamp: undefined }, ...cloud.versions];
      cloud.calls.length = 0;
      return { cloud, memory };
    };
    const kit = await steadyPool();
    await reconcile(kit.cloud, kit.memory);
    expect(kit.cloud.mutating()).toEqual([{ op: "deleteTemplate", args: [["0"]] }]);

    const mine = await steadyPool();
    const phases = replacePhase(pipeline, "prune", keepEveryVersion);
    const run = await reconcile(mine.cloud, mine.memory, {}, phases);
    expect(run.result.ready.status).toBe("True");
    expect(mine.cloud.mutating()).toEqual([]);
    expect(kept).toEqual([["0", "1"]]);
  });
});

describe("defaultPoolPhases", () => {
  it("lists the kit's phases in order", () => {
    expect(names(pipeline)).toEqual([
      "clusterInfrastructure",
      "cloudAccess",
      "validateSpec",
      "capacity",
      "bootstrapData",
      "desiredState",
      "observe",
      "template",
      "autoscalerBounds",
      "group",
      "machines",
      "nodes",
      "scale",
      "nativeRollout",
      "prune",
      "publish",
    ]);
  });

  it("passes the check", () => {
    expect(() => checkPhases(defaultPoolPhases())).not.toThrow();
  });

  it("writes every section but teardown, each by one phase, in the order of the sections", () => {
    const written = pipeline.flatMap((p) => p.writes);
    expect(written).toEqual(POOL_SECTION_NAMES.filter((s) => s !== "teardown"));
  });

  it("returns a new list each time, so a provider's change stays its own", () => {
    const mine = defaultPoolPhases<FakeSpec, FakeSettings>();
    mine.splice(0, mine.length);
    expect(defaultPoolPhases()).toHaveLength(pipeline.length);
  });
});

describe("defaultDeletePhases", () => {
  it("resolves cloud access, then tears down, writing the teardown section", () => {
    const phases = defaultDeletePhases();
    expect(names(phases)).toEqual(["cloudAccess", "teardown"]);
    expect(phases[0]?.writes).toEqual(["access"]);
    expect(phases[1]?.writes).toEqual(["teardown"]);
    expect(() => checkPhases(phases)).not.toThrow();
  });
});

describe("insertPhase", () => {
  const reader = phase("readsScale", ["scale"], []);

  it("inserts before or after the named phase, in a copy", () => {
    const before = insertPhase(pipeline, { before: "nativeRollout" }, reader);
    const after = insertPhase(pipeline, { after: "scale" }, reader);
    const at = names(before).indexOf("scale");
    expect(names(before).slice(at, at + 3)).toEqual(["scale", "readsScale", "nativeRollout"]);
    expect(names(after)).toEqual(names(before));
    expect(names(insertPhase(pipeline, { after: "publish" }, reader)).at(-1)).toBe("readsScale");
    expect(pipeline).toHaveLength(16);
    expect(() => checkPhases(before)).not.toThrow();
  });

  it("refuses a phase placed before the writer of what it reads, saying where it goes", () => {
    expect(() => insertPhase(pipeline, { before: "scale" }, reader)).toThrow(TypeError);
    expect(() => insertPhase(pipeline, { before: "scale" }, reader)).toThrow(
      'insertPhase: "readsScale" reads the scale section, which "scale" writes after it; insert it after "scale"',
    );
    expect(() => insertPhase(pipeline, { after: "clusterInfrastructure" }, reader)).toThrow(
      /which "scale" writes after it/,
    );
  });

  it("refuses a phase that reads a section no phase of the list writes", () => {
    const late = phase("late", ["teardown"], []);
    expect(() => insertPhase(pipeline, { before: "publish" }, late)).toThrow(
      'insertPhase: "late" reads the teardown section, which no phase of the list writes',
    );
  });

  it("refuses a phase that writes a section another phase writes", () => {
    const rival = phase("myScale", ["group"], ["scale"]);
    expect(() => insertPhase(pipeline, { after: "group" }, rival)).toThrow(
      'insertPhase: "myScale" writes the scale section, which "scale" writes; a section has one writer',
    );
  });

  it("accepts a writer of a section no other phase writes, and a reader after it", () => {
    const writer = phase("writesTeardown", ["scale"], ["teardown"]);
    const withWriter = insertPhase(pipeline, { after: "scale" }, writer);
    const withReader = insertPhase(withWriter, { before: "publish" }, phase("r", ["teardown"], []));
    expect(names(withReader).slice(names(withReader).indexOf("scale"))).toEqual([
      "scale",
      "writesTeardown",
      "nativeRollout",
      "prune",
      "r",
      "publish",
    ]);
    expect(() => checkPhases(withReader)).not.toThrow();
    expect(() => insertPhase(withWriter, { after: "scale" }, phase("r", ["teardown"], []))).toThrow(
      /"r" reads the teardown section, which "writesTeardown" writes after it/,
    );
  });

  it("refuses an unknown place and a name already taken", () => {
    expect(() => insertPhase(pipeline, { before: "nope" }, reader)).toThrow(
      /^insertPhase: no phase named "nope" \(phases: clusterInfrastructure, cloudAccess, validateSpec, /,
    );
    expect(() => insertPhase(pipeline, { after: "scale" }, phase("publish", [], []))).toThrow(
      'insertPhase: a phase named "publish" is already there',
    );
  });
});

describe("replacePhase", () => {
  it("puts the new phase at the old one's place, in a copy", () => {
    const mine = phase("myPrune", ["scale", "template", "group"], []);
    const phases = replacePhase(pipeline, "prune", mine);
    expect(names(phases)).toEqual(names(pipeline).map((n) => (n === "prune" ? "myPrune" : n)));
    expect(phases[names(pipeline).indexOf("prune")]).toBe(mine);
    expect(names(pipeline)).toContain("prune");
  });

  it("keeps the name when the replacement has it", () => {
    const mine = phase("scale", ["group", "template"], ["scale"]);
    expect(replacePhase(pipeline, "scale", mine)[names(pipeline).indexOf("scale")]).toBe(mine);
  });

  it("refuses an unknown name", () => {
    expect(() => replacePhase(pipeline, "nope", phase("x", [], []))).toThrow(
      /^replacePhase: no phase named "nope" \(phases: /,
    );
  });

  it("refuses a replacement that does not write what later phases read", () => {
    expect(() => replacePhase(pipeline, "scale", phase("myScale", ["group"], []))).toThrow(
      'replacePhase: "nativeRollout" reads the scale section, which no phase of the list writes',
    );
  });

  it("refuses a replacement that reads what only a later phase writes", () => {
    const early = phase("myTemplate", ["observed", "rollout"], ["template"]);
    expect(() => replacePhase(pipeline, "template", early)).toThrow(
      'replacePhase: "myTemplate" reads the rollout section, which "nativeRollout" writes after it; move "myTemplate" after "nativeRollout"',
    );
  });

  it("refuses a replacement that writes another phase's section or takes another's name", () => {
    expect(() => replacePhase(pipeline, "prune", phase("myPrune", ["scale"], ["rollout"]))).toThrow(
      /^replacePhase: "myPrune" and "nativeRollout" both write the rollout section/,
    );
    expect(() => replacePhase(pipeline, "prune", phase("publish", [], []))).toThrow(
      'replacePhase: two phases are named "publish"',
    );
  });
});

describe("checkPhases", () => {
  it("refuses what the controller could not run, with the phase and the section", () => {
    const reorder = [...pipeline];
    const scaleAt = reorder.findIndex((p) => p.name === "scale");
    const [scale] = reorder.splice(scaleAt, 1);
    reorder.push(scale as Phase);
    expect(() => checkPhases(reorder)).toThrow(
      'phases: "nativeRollout" reads the scale section, which "scale" writes after it; move "nativeRollout" after "scale"',
    );
    expect(() => checkPhases([...pipeline, phase("scale", [], [])])).toThrow(
      'phases: two phases are named "scale"',
    );
  });
});

describe("runPhases", () => {
  it("runs the phases in order until one returns a result", async () => {
    const ran: string[] = [];
    const step = (name: string, result?: "stop") =>
      phase(name, [], [], () => {
        ran.push(name);
        return result
          ? { ready: { status: "False", reason: "Stopped", message: name }, requeueAfterMs: 7 }
          : undefined;
      });
    const { scope } = fakeScope();
    const result = await runPhases([step("a"), step("b", "stop"), step("c")], scope);
    expect(ran).toEqual(["a", "b"]);
    expect(result).toEqual({
      ready: { status: "False", reason: "Stopped", message: "b" },
      requeueAfterMs: 7,
    });
  });

  it("ends Ready, back after the resync period, when every phase goes on", async () => {
    const { scope } = fakeScope();
    expect(await runPhases([phase("a", [], [])], scope)).toEqual({
      ready: { status: "True", reason: "Ready", message: "" },
      requeueAfterMs: scope.options.resyncMs,
    });
  });

  it("hands each phase the sections earlier ones wrote", async () => {
    const { scope } = fakeScope();
    let seen: unknown;
    await runPhases(
      [
        phase("w", [], ["rollout"], (view) => {
          view.write("rollout", { note: "from w" });
        }),
        phase("r", ["rollout"], [], (view) => {
          seen = view.read("rollout").note;
        }),
      ],
      scope,
    );
    expect(seen).toBe("from w");
  });

  it("stops a phase that goes on without writing its section, before the next one runs", async () => {
    const { scope } = fakeScope();
    const ran: string[] = [];
    const next = phase("next", ["rollout"], [], () => {
      ran.push("next");
    });
    await expect(runPhases([phase("lazy", [], ["rollout"]), next], scope)).rejects.toThrow(
      'phase "lazy" went on without writing the rollout section',
    );
    expect(ran).toEqual([]);
  });

  it("refuses at run time a section written twice in an unchecked list", async () => {
    const { scope } = fakeScope();
    const write = (name: string) =>
      phase(name, [], ["rollout"], (view) => {
        view.write("rollout", { note: name });
      });
    await expect(runPhases([write("one"), write("two")], scope)).rejects.toThrow(
      'phase "two" writes the rollout section, which "one" already wrote in this reconcile',
    );
  });

  it("refuses at run time a read or a write the phase did not declare", async () => {
    const peek = phase("peek", [], [], (view) => {
      view.read("rollout");
    });
    await expect(runPhases([peek], fakeScope().scope)).rejects.toThrow(
      'phase "peek" reads the rollout section without declaring it',
    );
    const poke = phase("poke", [], [], (view) => {
      view.write("rollout", { note: undefined });
    });
    await expect(runPhases([poke], fakeScope().scope)).rejects.toThrow(
      'phase "poke" writes the rollout section without declaring it',
    );
  });
});
