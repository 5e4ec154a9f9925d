/**
 * The `publish` phase: publishes `providerIDList`, `replicas` and provisioned, and decides `Ready`
 * from the plan, the rollout, the MachinePool Machines still leaving and, once all of those are
 * done, a capacity the `capacity` phase could not publish.
 *
 * @module
 */
import type { PoolPhase } from "../phase.js";
import type { Plan } from "../plan.js";
import { PoolReasons } from "../reasons.js";
import type { ReadyState } from "../scope.js";
import { publishInstances } from "../steps/publish-instances.js";

function progressState(
  desired: number,
  plan: Plan,
  outdated: number,
  rolloutNote: string | undefined,
): ReadyState {
  if (plan.healthCheckFailed > 0) {
    return {
      status: "False",
      reason: PoolReasons.Remediating,
      message: remediationMessage(plan),
    };
  }
  if (outdated > 0) {
    return {
      status: "False",
      reason: PoolReasons.RollingOut,
      message: `${outdated} of ${plan.live} instances outdated${plan.blockedByAvailability ? "; waiting for new instances to become available" : ""}${rolloutNote ? `; ${rolloutNote}` : ""}`,
    };
  }
  if (plan.failed > 0) {
    return {
      status: "False",
      reason: PoolReasons.Remediating,
      message: `${plan.failed} of ${plan.live} instances failed; replacing them`,
    };
  }
  if (plan.live < desired) {
    return {
      status: "False",
      reason: PoolReasons.ScalingUp,
      message: `${plan.live} of ${desired} instances`,
    };
  }
  if (plan.live > desired) {
    return {
      status: "False",
      reason: PoolReasons.ScalingDown,
      message: `${plan.live} instances, ${desired} desired`,
    };
  }
  return {
    status: "False",
    reason: PoolReasons.InstancesNotReady,
    message: `${plan.available} of ${desired} instances available`,
  };
}

function plural(n: number, one: string, many: string): string {
  return `${n} ${n === 1 ? one : many}`;
}

/** How many Machines a MachineHealthCheck marked wait for remediation, and what holds them. */
function remediationMessage(plan: Plan): string {
  const waiting = plan.remediationWaiting;
  const count = (why: string) => waiting.filter((w) => w.why === why).length;
  const held = [
    count("availability") > 0 &&
      `${count("availability")} would take availability below replicas − maxUnavailable`,
    count("budget") > 0 && `${count("budget")} wait for replacements in flight`,
    count("unknown") > 0 &&
      `${count("unknown")} wait until the workload cluster's Nodes can be read`,
  ].filter(Boolean);
  const started = plan.healthCheckFailed - waiting.length;
  return `${plural(plan.healthCheckFailed, "Machine", "Machines")} found unhealthy by a MachineHealthCheck wait for remediation${started > 0 ? `; replacing ${started}` : ""}${held.length > 0 ? `; ${held.join(", ")}` : ""}`;
}

/** The resync period, or sooner when a `rolloutAfter` still to come falls within it. */
function untilRolloutAfter(rolloutAfter: number | undefined, now: number, resyncMs: number) {
  if (rolloutAfter === undefined || rolloutAfter <= now) return resyncMs;
  return Math.min(resyncMs, rolloutAfter - now + 1);
}

/** Publishes the pool's status and decides `Ready`. */
export const publishPhase: PoolPhase<
  unknown,
  unknown,
  "group" | "scale" | "machines" | "rollout" | "capacity",
  never
> = {
  name: "publish",
  reads: ["group", "scale", "machines", "rollout", "capacity"],
  writes: [],
  run(scope) {
    const { group, desired } = scope.read("group");
    const scale = scope.read("scale");
    const { plan, provisioned, workloadUnavailable: unreachable } = scale;
    // Instances rolloutAfter dates roll like outdated ones.
    const outdated = scale.outdated + (scale.expired ?? 0);
    const lingering = publishInstances(scope, group, provisioned);
    if (group.status === "failed") {
      return {
        ready: {
          status: "False",
          reason: PoolReasons.GroupFailed,
          message: group.message ?? `group ${group.id} reports a failure`,
        },
        requeueAfterMs: scope.options.pollMs,
      };
    }
    if (unreachable) {
      return {
        ready: {
          status: "False",
          reason: PoolReasons.WorkloadClusterUnreachable,
          message: `${unreachable.reason}: ${unreachable.message}; rollouts wait until its Nodes can be read${outdated > 0 ? ` (${outdated} of ${plan.live} instances outdated)` : ""}`,
        },
        requeueAfterMs: Math.max(scope.options.pollMs, unreachable.retryAfterMs),
      };
    }
    const preflight = scale.preflight ?? scope.read("rollout").preflight;
    if (preflight) return { ready: preflight, requeueAfterMs: scope.options.pollMs };
    const leaving = scope.read("machines")?.leaving.size ?? 0;
    if (
      leaving > 0 &&
      plan.converged &&
      outdated === 0 &&
      plan.actions.length === 0 &&
      lingering === 0
    ) {
      return {
        ready: {
          status: "False",
          reason: PoolReasons.ScalingDown,
          message: `waiting for ${leaving} Machine${leaving === 1 ? "" : "s"} to be drained and ${leaving === 1 ? "its instance" : "their instances"} deleted`,
        },
        requeueAfterMs: scope.options.pollMs,
      };
    }
    if (plan.converged && outdated === 0 && plan.actions.length === 0 && lingering === 0) {
      // The pool is where it should be; only what the autoscaler reads of it is not.
      const capacity = scope.read("capacity").problem;
      if (capacity) {
        const { retryAfterMs, ...ready } = capacity;
        return { ready, requeueAfterMs: retryAfterMs };
      }
      const held = scale.onDelete ?? 0;
      return {
        ready: {
          status: "True",
          reason: PoolReasons.Ready,
          message:
            held > 0
              ? `${held} of ${plan.live} instances out of date; strategy OnDelete replaces each once it is deleted`
              : "",
        },
        requeueAfterMs: untilRolloutAfter(
          scale.strategy.rolloutAfter,
          scope.clock.now(),
          scope.options.resyncMs,
        ),
      };
    }
    // minReadySeconds: look again when the next Ready Node counts as available, if that comes sooner.
    const availableInMs = scope.read("scale").nodesAvailableInMs;
    return {
      ready: progressState(desired, plan, outdated, scope.read("rollout").note),
      requeueAfterMs: Math.min(scope.options.pollMs, availableInMs ?? Number.POSITIVE_INFINITY),
    };
  },
};
