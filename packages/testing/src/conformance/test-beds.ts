import { availableParallelism } from "node:os";
import { MachinePoolConformance } from "./harness.js";
import type { ConformanceScenarioDefinition } from "./scenario-registry.js";
import type { ConformanceCore, MachinePoolConformanceOptions } from "./types.js";

/**
 * Seconds each built-in scenario took for the example provider on the emulator at core's pace (one
 * reconcile per object per second), the weights the beds are balanced by. Only the balance depends
 * on them: a wrong weight makes one bed finish later, never changes what a scenario checks.
 */
const SCENARIO_SECONDS: Readonly<Record<string, number>> = {
  scale: 16,
  minReadySeconds: 15,
  onDelete: 13,
  apiServerFaults: 13,
  autoscaler: 12,
  cloudThrottling: 12,
  autoscalerBounds: 12,
  drainBeforeTerminate: 11,
  pause: 11,
  rolloutAfter: 10,
  workloadUnreachable: 10,
  scaleFromZero: 10,
  nodesJoinLate: 10,
  spotInterruption: 9,
  preflightHoldsScaleUp: 9,
  outOfBandDeletion: 9,
  templateRollout: 9,
  autoscalerDeleteTainted: 9,
  tokenRotation: 8,
  kubeconfigRotation: 8,
  nodeTaintsAndLabels: 7,
  watchFilter: 5,
  deletionInFlight: 4,
  crd: 0,
};
/** A scenario not in the table (a provider's own, the MachinePool Machines ones): a typical one. */
const UNKNOWN_SCENARIO_SECONDS = 10;
/**
 * At most this many beds by default. A bed mostly waits on core's pace (the example provider's
 * suite used 34 s of CPU in 241 s on one bed), so four beds keep about half of one core busy: room
 * for a second test file on a 2-core machine, and no bed's steady-state window stretched by a
 * starved event loop.
 */
const MAX_DEFAULT_TEST_BEDS = 4;

/**
 * How many test beds a run uses: the option, else `CAPI_TS_CONFORMANCE_TEST_BEDS`, else up to four on
 * the emulator (two per core) and one with real core, whose bed is a pair of kube-apiservers, etcd
 * and CAPI's manager.
 */
export function chosenTestBeds(option: number | undefined, core: ConformanceCore): number {
  const raw = process.env.CAPI_TS_CONFORMANCE_TEST_BEDS;
  if (option === undefined && (raw === undefined || raw === "")) {
    return core === "real" ? 1 : Math.min(MAX_DEFAULT_TEST_BEDS, availableParallelism() * 2);
  }
  const value = option ?? Number(raw);
  if (!Number.isInteger(value) || value < 1) {
    throw new Error(
      `conformance: the number of test beds must be a whole number ≥ 1 (1 runs every scenario in a row on one bed), got ${JSON.stringify(option ?? raw)} (option testBeds or CAPI_TS_CONFORMANCE_TEST_BEDS)`,
    );
  }
  return value;
}

/** One test bed of a parallel run: its own suite (API servers, core, provider, cloud) and its scenarios. */
export interface ConformanceTestBed {
  /** 1-based, for the report: `test bed 2 of 4`. */
  readonly number: number;
  /** The bed's environment; start it before its scenarios, stop it after the cleanup. */
  readonly suite: MachinePoolConformance;
  /** The scenarios that run on this bed, one after another in the suite's order. */
  readonly scenarios: readonly ConformanceScenarioDefinition[];
}

/** The scenarios of a run spread over test beds, and the cleanup that ends them all. */
export interface ConformanceTestBedPlan {
  /** The beds, each with at least one scenario. */
  readonly beds: readonly ConformanceTestBed[];
  /**
   * `cleanup` on every bed (every pool of every bed deleted leaves nothing behind), once every bed's
   * scenarios ended; undefined when `scenarios` leaves it out.
   */
  readonly cleanup: ConformanceScenarioDefinition | undefined;
  /** Stops every bed (whatever was started). */
  stop(): Promise<void>;
}

/**
 * Spreads the suite's scenarios over test beds that run side by side. Each bed is a whole
 * environment of its own (API servers, core, provider and its cloud), and runs its scenarios one after
 * another, so every check that accounts for the whole API server (zero writes at steady state, the
 * write log while paused) sees exactly one scenario, as on a single bed. The beds are balanced by each
 * scenario's usual duration, longest first onto the least loaded bed; within a bed the suite's order
 * holds. `cleanup` runs last, on every bed.
 *
 * @param options - the provider under test (each bed calls `startProvider` once)
 * @param count - how many beds at most (default {@link chosenTestBeds})
 *
 * @example
 * ```ts
 * const plan = planConformanceTestBeds(options);
 * try {
 *   await Promise.all(plan.beds.map(async (bed) => {
 *     await bed.suite.start();
 *     for (const scenario of bed.scenarios) if (!scenario.skipReason) await scenario.run();
 *   }));
 *   await plan.cleanup?.run();
 * } finally {
 *   await plan.stop();
 * }
 * ```
 */
export function planConformanceTestBeds(
  options: MachinePoolConformanceOptions,
  count?: number,
): ConformanceTestBedPlan {
  const first = new MachinePoolConformance(options);
  const wanted = chosenTestBeds(count ?? options.testBeds, first.core);
  const ids = first
    .scenarios()
    .map((s) => s.id)
    .filter((id) => id !== "cleanup");
  const hasCleanup = first.scenarios().some((s) => s.id === "cleanup");
  const lanes = assignScenarios(ids, Math.max(1, Math.min(wanted, ids.length)));
  const suites = lanes.map((_, i) => (i === 0 ? first : new MachinePoolConformance(options)));
  const beds = lanes.map((lane, i): ConformanceTestBed => {
    const suite = suites[i] as MachinePoolConformance;
    const byId = new Map(suite.scenarios().map((s) => [s.id, s]));
    return {
      number: i + 1,
      suite,
      scenarios: lane.map((id) => byId.get(id) as ConformanceScenarioDefinition),
    };
  });
  const cleanups = suites.map((suite) => suite.scenarios().find((s) => s.id === "cleanup"));
  const cleanup: ConformanceScenarioDefinition | undefined = hasCleanup
    ? {
        id: "cleanup",
        title: cleanups[0]?.title ?? "cleanup",
        skipReason: undefined,
        run: async () => {
          const results = await Promise.allSettled(cleanups.map((c) => c?.run()));
          const failed = results.findIndex((r) => r.status === "rejected");
          if (failed >= 0) {
            const reason = (results[failed] as PromiseRejectedResult).reason;
            if (reason instanceof Error && suites.length > 1) {
              reason.message = `test bed ${failed + 1} of ${suites.length}: ${reason.message}`;
            }
            throw reason;
          }
        },
      }
    : undefined;
  return {
    beds,
    cleanup,
    stop: async () => {
      await Promise.all(suites.map((suite) => suite.stop()));
    },
  };
}

/**
 * Longest processing time first: each scenario, heaviest first, onto the lane with the least work so
 * far (ties to the lower lane, so the plan is the same on every run); each lane keeps the suite's order.
 */
export function assignScenarios(ids: readonly string[], lanes: number): string[][] {
  const load = Array.from({ length: lanes }, () => 0);
  const laneOf = new Map<string, number>();
  for (const id of heaviestFirst(ids)) {
    let lightest = 0;
    for (let lane = 1; lane < lanes; lane++) {
      if ((load[lane] as number) < (load[lightest] as number)) lightest = lane;
    }
    load[lightest] = (load[lightest] as number) + scenarioSeconds(id);
    laneOf.set(id, lightest);
  }
  return Array.from({ length: lanes }, (_, lane) => ids.filter((id) => laneOf.get(id) === lane));
}

/** The scenario ids, heaviest first by their measured seconds (ties keep the given order). */
export function heaviestFirst(ids: readonly string[]): string[] {
  return ids
    .map((id, order) => ({ id, order }))
    .sort((a, b) => scenarioSeconds(b.id) - scenarioSeconds(a.id) || a.order - b.order)
    .map(({ id }) => id);
}

function scenarioSeconds(id: string): number {
  return SCENARIO_SECONDS[id] ?? UNKNOWN_SCENARIO_SECONDS;
}

/**
 * Hands out started test beds, one scenario at a time each, first come first served: a bed that
 * finishes a scenario takes the next waiting one, so the beds stay busy whatever the provider skips
 * (a skip is known only once a bed has started its provider, after the plan is made).
 */
export class TestBedPool {
  private readonly free: ConformanceTestBed[];
  private readonly waiting: Array<{
    resolve: (bed: ConformanceTestBed) => void;
    reject: (error: Error) => void;
  }> = [];
  private usable: number;

  /** A pool of `beds`, all free. */
  constructor(beds: readonly ConformanceTestBed[]) {
    this.free = [...beds];
    this.usable = beds.length;
  }

  /** The next free bed, once there is one. */
  take(): Promise<ConformanceTestBed> {
    const bed = this.free.shift();
    if (bed) return Promise.resolve(bed);
    if (this.usable === 0) return Promise.reject(this.exhausted());
    return new Promise((resolve, reject) => this.waiting.push({ resolve, reject }));
  }

  /** Gives a bed back after its scenario ended. */
  give(bed: ConformanceTestBed): void {
    const next = this.waiting.shift();
    if (next) next.resolve(bed);
    else this.free.push(bed);
  }

  /**
   * Takes a bed out for good: its scenario overran and may still be acting on it. When none is left,
   * every waiting scenario fails at once instead of waiting for its test timeout.
   */
  retire(): void {
    this.usable--;
    if (this.usable > 0) return;
    for (const waiter of this.waiting.splice(0)) waiter.reject(this.exhausted());
  }

  private exhausted(): Error {
    return new Error(
      "conformance: every test bed is still running a scenario that overran its deadline; see the failures above",
    );
  }
}
