/**
 * The `capacity` phase: publishes what one instance of the pool offers — the driver's `capacity`
 * hook — as `status.capacity` and `status.nodeInfo`, which the cluster-autoscaler reads to scale an
 * empty pool (scale from zero).
 *
 * It runs right after the spec is validated and before the cloud is read: the capacity is a function
 * of the spec, so it follows a new instance type in the same reconcile, at 0 replicas as at any
 * other count, whatever the cloud says afterwards (a throttled cloud, a group still creating). A
 * hook that throws or returns something unpublishable changes nothing on the pool and stops
 * nothing: the last published capacity stays, and `publish` names the problem on `Ready`.
 *
 * @module
 */
import { checkPoolCapacity, setPoolCapacity } from "../../contract/capacity.js";
import { redactText } from "../../runtime/redact.js";
import type { PoolCapacity } from "../driver.js";
import { StepFailure } from "../errors.js";
import type { CapacitySection, PoolPhase } from "../phase.js";
import { PoolReasons } from "../reasons.js";

/** At most this much of what a driver said goes into a condition message. */
const MAX_DETAIL_LENGTH = 300;

const KEEPS = "the pool keeps the capacity it last published";

/** A driver's text as a condition shows it: redacted, on one line, bounded. */
function bounded(text: string): string {
  const line = redactText(text).replace(/[\p{Cc}]+/gu, " ");
  return line.length > MAX_DETAIL_LENGTH ? `${line.slice(0, MAX_DETAIL_LENGTH)}…` : line;
}

/** Publishes the driver's capacity; a driver without the hook leaves both fields alone. */
export const capacityPhase: PoolPhase<unknown, unknown, "spec", "capacity"> = {
  name: "capacity",
  reads: ["spec"],
  writes: ["capacity"],
  async run(scope) {
    const driver = scope.driver;
    if (typeof driver.capacity !== "function") {
      scope.write("capacity", { capacity: undefined, problem: undefined });
      return undefined;
    }
    let answer: PoolCapacity | undefined;
    try {
      answer = await scope.call("capacity", async (ctx) => driver.capacity?.(ctx));
    } catch (error) {
      // A fenced reconcile stops here; only the driver's own failure is the pool's problem.
      if (!(error instanceof StepFailure)) throw error;
      const { failure } = error;
      const retryAfterMs =
        failure.kind === "terminal"
          ? scope.options.resyncMs
          : "retryAfterMs" in failure && failure.retryAfterMs !== undefined
            ? Math.max(failure.retryAfterMs, 1)
            : scope.options.pollMs;
      const problem: CapacitySection["problem"] = {
        status: "False",
        reason: PoolReasons.CapacityUnavailable,
        message: `capacity failed (${failure.reason}: ${bounded(failure.message)}); ${KEEPS} and asks again in ${Math.ceil(retryAfterMs / 1000)}s`,
        retryAfterMs,
      };
      scope.log.warn({ reason: problem.reason, step: "capacity" }, problem.message);
      scope.write("capacity", { capacity: undefined, problem });
      return undefined;
    }
    let checked: PoolCapacity | undefined;
    try {
      checked = answer === undefined ? undefined : checkPoolCapacity(answer);
    } catch (error) {
      // InvalidCapacityError, or whatever a hostile value (a throwing getter) threw while read.
      const why = error instanceof Error ? error.message : String(error);
      const problem: CapacitySection["problem"] = {
        status: "False",
        reason: PoolReasons.InvalidCapacity,
        message: `capacity returned what cannot be published: ${bounded(why)}; fix the driver's capacity method (${KEEPS})`,
        retryAfterMs: scope.options.resyncMs,
      };
      scope.log.warn({ reason: problem.reason, step: "capacity" }, problem.message);
      scope.write("capacity", { capacity: undefined, problem });
      return undefined;
    }
    setPoolCapacity(scope.pool, checked);
    scope.write("capacity", { capacity: checked, problem: undefined });
    return undefined;
  },
};
