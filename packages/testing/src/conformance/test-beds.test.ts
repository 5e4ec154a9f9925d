import { afterEach, describe, expect, it } from "vitest";
import { CONFORMANCE_SCENARIOS } from "./scenario-registry.js";
import {
  assignScenarios,
  type ConformanceTestBed,
  chosenTestBeds,
  heaviestFirst,
  TestBedPool,
} from "./test-beds.js";

const ids = CONFORMANCE_SCENARIOS.map((s) => s.id as string).filter((id) => id !== "cleanup");

describe("assignScenarios", () => {
  it("puts every scenario on exactly one bed, in the suite's order within each", () => {
    const lanes = assignScenarios(ids, 4);
    expect(lanes).toHaveLength(4);
    expect(lanes.flat().sort()).toEqual([...ids].sort());
    for (const lane of lanes) {
      expect(lane.length).toBeGreaterThan(0);
      const positions = lane.map((id) => ids.indexOf(id));
      expect(positions).toEqual([...positions].sort((a, b) => a - b));
    }
  });

  it("balances the beds by the scenarios' usual durations", () => {
    // The three heaviest (16, 15 and 13 s) go onto three different beds; the lightest joins the
    // bed with the least work, which runs it in the suite's order (crd before onDelete).
    const lanes = assignScenarios(["scale", "minReadySeconds", "crd", "onDelete"], 3);
    expect(lanes).toEqual([["scale"], ["minReadySeconds"], ["crd", "onDelete"]]);
  });

  it("keeps one bed's order when there is one bed", () => {
    expect(assignScenarios(ids, 1)).toEqual([ids]);
  });
});

describe("chosenTestBeds", () => {
  const saved = process.env.CAPI_TS_CONFORMANCE_TEST_BEDS;
  afterEach(() => {
    if (saved === undefined) delete process.env.CAPI_TS_CONFORMANCE_TEST_BEDS;
    else process.env.CAPI_TS_CONFORMANCE_TEST_BEDS = saved;
  });

  it("takes the option over the environment, one bed for real core by default", () => {
    delete process.env.CAPI_TS_CONFORMANCE_TEST_BEDS;
    expect(chosenTestBeds(undefined, "real")).toBe(1);
    expect(chosenTestBeds(undefined, "emulator")).toBeGreaterThan(1);
    process.env.CAPI_TS_CONFORMANCE_TEST_BEDS = "3";
    expect(chosenTestBeds(undefined, "emulator")).toBe(3);
    expect(chosenTestBeds(2, "emulator")).toBe(2);
  });

  it("refuses a count that is not a whole number ≥ 1, naming where it came from", () => {
    process.env.CAPI_TS_CONFORMANCE_TEST_BEDS = "many";
    expect(() => chosenTestBeds(undefined, "emulator")).toThrow(
      /whole number ≥ 1.*"many".*CAPI_TS_CONFORMANCE_TEST_BEDS/,
    );
    expect(() => chosenTestBeds(0, "emulator")).toThrow(/got 0/);
  });
});

describe("TestBedPool", () => {
  const bed = (number: number) => ({ number }) as unknown as ConformanceTestBed;

  it("hands each bed to one scenario at a time, the waiting ones first come first served", async () => {
    const pool = new TestBedPool([bed(1), bed(2)]);
    const first = await pool.take();
    const second = await pool.take();
    expect([first.number, second.number]).toEqual([1, 2]);
    const order: number[] = [];
    const third = pool.take().then((b) => {
      order.push(3);
      return b;
    });
    const fourth = pool.take().then((b) => {
      order.push(4);
      return b;
    });
    pool.give(second);
    expect((await third).number).toBe(2);
    pool.give(first);
    expect((await fourth).number).toBe(1);
    expect(order).toEqual([3, 4]);
  });

  it("fails the waiting scenarios at once when every bed is retired", async () => {
    const pool = new TestBedPool([bed(1)]);
    await pool.take();
    const waiting = pool.take();
    pool.retire();
    await expect(waiting).rejects.toThrow(/every test bed is still running a scenario/);
    await expect(pool.take()).rejects.toThrow(/overran its deadline/);
  });
});

describe("heaviestFirst", () => {
  it("orders by measured seconds, unknown scenarios at the typical weight, ties in the given order", () => {
    expect(heaviestFirst(["crd", "mine", "scale", "pause", "rolloutAfter"])).toEqual([
      "scale",
      "pause",
      "mine",
      "rolloutAfter",
      "crd",
    ]);
  });
});
