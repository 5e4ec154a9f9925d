/**
 * The scale phase: plans one reconcile's cloud changes from the group's snapshot ({@link planPool}:
 * scale, roll, remediate failed instances) and executes them. NotFound on an instance delete means
 * the instance is gone: done. Without MachinePool Machines, an instance whose Node the
 * cluster-autoscaler tainted `ToBeDeletedByClusterAutoscaler` goes first when one must go: for such a
 * pool the autoscaler only lowers the replicas (its `DeleteNodes`), and the taint is the only sign of
 * the Node it drained. Without MachinePool Machines the kit also drains each Node before its instance
 * is terminated (`steps/drain.ts`); with them core's Machine controller does.
 *
 * @module
 */
import { WorkloadClusterUnavailableError } from "../../clustercache/unavailable.js";
import { ClusterAutoscalerTaint } from "../../contract/autoscaler.js";
import type { PoolInstance } from "../driver.js";
import { isFailureOf } from "../errors.js";
import { isInstanceAvailable, liveInstances } from "../instances.js";
import {
  isDeleting,
  type MachinesState,
  OwnerRemediatedReasons,
  RemediationConditions,
} from "../machines.js";
import type { PoolPhase } from "../phase.js";
import { type PlanAction, planPool, type RemediationWait } from "../plan.js";
import { PoolReasons } from "../reasons.js";
import type { PoolScope } from "../scope.js";
import { DrainRound } from "../steps/drain.js";
import { nodeAvailability } from "../steps/node-availability.js";
import { preflightHold } from "../steps/preflight.js";
import { predatesRollout, type ResolvedStrategy, resolveStrategy } from "../strategy.js";

/**
 * Running and healthy; with `readiness: "node"` also a Ready Node with the instance's providerID in
 * the workload cluster, Ready for `minReadySeconds` if the MachinePool sets it (`nextInMs`: when the
 * next one waiting will be). Without `available` when the workload cluster cannot be read (with the
 * reason): availability is unknown then.
 */
async function availability<Spec, Settings>(
  scope: PoolScope<Spec, Settings>,
  instances: readonly PoolInstance[],
): Promise<
  | {
      available: (instance: PoolInstance) => boolean;
      unavailable?: undefined;
      nextInMs?: number | undefined;
    }
  | { available?: undefined; unavailable: WorkloadClusterUnavailableError; nextInMs?: undefined }
> {
  if (scope.options.readiness !== "node") return { available: isInstanceAvailable };
  try {
    const nodes = await nodeAvailability(
      scope,
      instances.map((i) => i.providerID),
    );
    return {
      available: (instance) =>
        isInstanceAvailable(instance) && nodes.available.has(instance.providerID),
      nextInMs: nodes.nextInMs,
    };
  } catch (error) {
    if (!(error instanceof WorkloadClusterUnavailableError)) throw error;
    return { unavailable: error };
  }
}

/**
 * Without MachinePool Machines: the providerIDs of instances whose Node carries the
 * cluster-autoscaler's `ToBeDeletedByClusterAutoscaler` taint, looked up by providerID only when the
 * pool has more members than it wants. Unknown (the kit sees no Nodes, or cannot read them now):
 * `undefined`, and the usual victim order decides.
 */
async function autoscalerMarked<Spec, Settings>(
  scope: PoolScope<Spec, Settings>,
  instances: readonly PoolInstance[],
  desired: number,
  external: boolean,
): Promise<ReadonlySet<string> | undefined> {
  const lookup = scope.api.taintedNodeProviderIDs;
  const live = liveInstances(instances);
  if (!lookup || external || live.length <= desired) return undefined;
  try {
    const ids = live.map((i) => i.providerID).filter((id) => id !== "");
    return await lookup(ids, ClusterAutoscalerTaint.key);
  } catch (error) {
    if (!(error instanceof WorkloadClusterUnavailableError)) throw error;
    scope.log.debug(
      { reason: error.reason },
      "cannot read the Nodes for the cluster-autoscaler's taint; the delete policy picks",
    );
    return undefined;
  }
}

const EVENT_OF_DELETE = {
  Rollout: "InstanceReplaced",
  ScaleDown: "InstanceDeleted",
  Remediation: "InstanceRemediated",
} as const;

/** What an action is executed against: the pool's size and strategy, its MachinePool Machines. */
interface ActionContext {
  readonly desired: number;
  readonly strategy: ResolvedStrategy;
  readonly machines: MachinesState | null;
  /** ProviderIDs whose Node the cluster-autoscaler marked for deletion (no MachinePool Machines). */
  readonly marked: ReadonlySet<string> | undefined;
  /** The drains of this reconcile (no MachinePool Machines): an instance goes once its Node is drained. */
  readonly drain: DrainRound<unknown, unknown>;
  /** The group's desired size as the cloud reports it. */
  readonly groupDesired: number;
}

/** Executes one planned action. */
async function executeAction<Spec, Settings>(
  scope: PoolScope<Spec, Settings>,
  action: PlanAction,
  { desired, strategy, machines, marked, drain, groupDesired }: ActionContext,
): Promise<void> {
  if (action.kind === "setReplicas") {
    // The plan sees the group without the instances being drained that will shrink it when they go;
    // they still run, so they count against the surge: the group never exceeds desired + maxSurge.
    const ceiling = Math.max(action.replicas, desired + strategy.maxSurge);
    // Likewise instances whose Node is still being drained: lowering the size under them would let
    // the cloud pick what to terminate, undrained.
    const replicas = Math.min(
      action.replicas + (machines?.pendingShrink ?? 0) + drain.heldShrinks,
      ceiling,
    );
    if (machines && replicas === machines.groupSize) return;
    if (drain.heldShrinks > 0 && replicas >= groupDesired) return;
    await scope.call("updateGroup", (ctx) => scope.driver.updateGroup(ctx, { replicas }));
    const verb =
      action.reason === "Surge"
        ? `surging to ${replicas} replicas for the rollout`
        : action.reason === "ScaleUp"
          ? `scaling up to ${replicas} replicas`
          : `scaling down to ${replicas} replicas`;
    scope.events.normal(action.reason === "ScaleDown" ? "ScalingDown" : "ScalingUp", verb, {
      replicas,
    });
    return;
  }
  const { instance } = action;
  const why =
    action.reason === "Rollout"
      ? `replacing outdated instance ${instance.id} (template version ${instance.templateVersion ?? "unknown"})`
      : action.reason === "Remediation"
        ? action.remediationOf === "healthCheck"
          ? `replacing instance ${instance.id}: a MachineHealthCheck found its Machine unhealthy`
          : `replacing instance ${instance.id}: the cloud reports it failed`
        : `removing instance ${instance.id} to scale down${marked?.has(instance.providerID) ? `: the cluster-autoscaler marked its Node ${ClusterAutoscalerTaint.key}` : ""}`;
  const machine = machines?.machineOf.get(instance.id);
  if (machine) {
    // MachinePool Machines: through the Machine, so core cordons and drains the Node first; the kit
    // deletes the instance once core deletes its InfraMachine.
    if (!isDeleting(machine)) {
      scope.fence();
      const api = machinesApiOf(scope);
      if (action.remediationOf === "healthCheck") {
        // Marked before the delete, as core's MachineSet does: a delete that does not go through
        // is retried, and the mark counts the remediation in flight until the Machine is gone.
        await api.writeOwnerRemediated(machine, {
          reason: OwnerRemediatedReasons.MachineDeleting,
          message: "Machine is deleting",
        });
      }
      await api.deleteMachine(machine);
      scope.events.normal(
        EVENT_OF_DELETE[action.reason],
        `${why}: deleting Machine ${machine.metadata?.name} (core drains its Node, then the instance goes)`,
        { instance: instance.id, machine: machine.metadata?.name },
      );
    }
    return;
  }
  // Without MachinePool Machines the kit drains the Node itself; the instance waits until it is.
  if (!(await drain.mayDelete(instance, action.mode))) return;
  try {
    await scope.call("deleteInstance", (ctx) =>
      scope.driver.deleteInstance(ctx, instance, action.mode),
    );
  } catch (error) {
    if (!isFailureOf(error, "notFound")) throw error;
    // Already gone: what the delete wanted. The next read shows the pool without it.
    scope.log.debug({ instance: instance.id }, "instance to delete is already gone");
  }
  scope.memory.markDeparted(instance.providerID, scope.clock.now());
  drain.deleted(instance);
  scope.events.normal(EVENT_OF_DELETE[action.reason], `${why} (${action.mode})`, {
    instance: instance.id,
    mode: action.mode,
  });
}

/** Why a marked Machine waits, in the words core's MachineSet uses for `RemediationDeferred`. */
function deferralMessage(
  why: RemediationWait["why"],
  desired: number,
  strategy: ResolvedStrategy,
): string {
  if (why === "availability") {
    return `Waiting because remediating now would leave fewer than ${Math.max(0, desired - strategy.maxUnavailable)} available instances (replicas − maxUnavailable)`;
  }
  if (why === "budget") {
    return `Waiting because there are already ${Math.max(1, strategy.maxSurge + strategy.maxUnavailable)} replacements in progress (maxSurge + maxUnavailable)`;
  }
  return "Waiting because the workload cluster's Nodes cannot be read, so availability is unknown";
}

/** Tells each marked Machine that waits why, once (an unchanged reason and message is not rewritten). */
async function markDeferredRemediations<Spec, Settings>(
  scope: PoolScope<Spec, Settings>,
  waiting: readonly RemediationWait[],
  machines: MachinesState,
  desired: number,
  strategy: ResolvedStrategy,
): Promise<void> {
  for (const { instance, why } of waiting) {
    const machine = machines.machineOf.get(instance.id);
    if (!machine) continue;
    const message = deferralMessage(why, desired, strategy);
    const current = machine.status?.conditions?.find(
      (c) => c.type === RemediationConditions.OwnerRemediated,
    );
    if (
      current?.reason === OwnerRemediatedReasons.RemediationDeferred &&
      current.message === message
    ) {
      continue;
    }
    scope.fence();
    await machinesApiOf(scope).writeOwnerRemediated(machine, {
      reason: OwnerRemediatedReasons.RemediationDeferred,
      message,
    });
  }
}

function machinesApiOf<Spec, Settings>(scope: PoolScope<Spec, Settings>) {
  const api = scope.api.machines;
  if (!api) throw new Error("MachinePool Machines need scope.api.machines");
  return api;
}

/** What a launch of `actions` is, in the words of core's preflight message. */
function launchAction(actions: readonly PlanAction[]): string {
  const first = actions.find(
    (a) =>
      (a.kind === "setReplicas" && a.reason !== "ScaleDown") ||
      (a.kind === "deleteInstance" && a.mode === "replace"),
  );
  if (first?.kind === "setReplicas") return first.reason === "ScaleUp" ? "Scale up" : "Rollout";
  return first?.reason === "Remediation" ? "Remediation" : "Rollout";
}

/** Plans and executes scaling, rolling and remediation. */
export const scalePhase: PoolPhase<
  unknown,
  unknown,
  "spec" | "group" | "template" | "machines",
  "scale"
> = {
  name: "scale",
  reads: ["spec", "group", "template", "machines"],
  writes: ["scale"],
  async run(scope) {
    const { group, desired, external } = scope.read("group");
    const { isUpToDate } = scope.read("template");
    const machines = scope.read("machines");
    const options = scope.options;
    let strategy: ResolvedStrategy;
    try {
      strategy = resolveStrategy(
        desired,
        external,
        options.strategy,
        options.strategyOf(scope.read("spec").spec),
      );
    } catch (error) {
      if (!(error instanceof RangeError)) throw error;
      // The controller's option is checked when it is built: what is left is the pool's own.
      return {
        ready: { status: "False", reason: PoolReasons.InvalidSpec, message: error.message },
        requeueAfterMs: scope.options.resyncMs,
      };
    }
    const native = options.useNativeRollout ? scope.driver.nativeRollout : undefined;
    const { available, unavailable, nextInMs } = await availability(scope, group.instances);
    const instances = machines
      ? group.instances.filter((i) => !machines.leaving.has(i.id))
      : group.instances;
    const marked = machines
      ? undefined
      : await autoscalerMarked(scope, instances, desired, external);
    const now = scope.clock.now();
    const onDelete = strategy.type === "OnDelete";
    const expired = (i: PoolInstance) => predatesRollout(i, strategy, now);
    const current = (i: PoolInstance) => isUpToDate(i) && !expired(i);
    const live = liveInstances(instances);
    // A native rollout replaces what runs an old template; instances only rolloutAfter dates are
    // on the current one, which the cloud's rollout does not touch: the kit replaces those itself.
    const nativeExpired = native !== undefined && !onDelete && live.some(expired);
    const drain = new DrainRound<unknown, unknown>(scope, machines === null);
    const draining = await drain.firstToGo(
      live,
      live.length > desired || (!onDelete && live.some((i) => !current(i))),
    );
    const planInput = {
      desired,
      groupDesired: (machines?.groupSize ?? group.desiredReplicas) - (machines?.pendingShrink ?? 0),
      instances,
      ...(machines
        ? {
            deleteFirst: (i: PoolInstance) => machines.deletePriority.has(i.id),
            remediate: (i: PoolInstance) => machines.remediate.has(i.id),
            remediationsInFlight: machines.remediationsInFlight,
          }
        : (marked && marked.size > 0) || draining.size > 0
          ? {
              // A Node half drained is finished before another one is started.
              deleteFirst: (i: PoolInstance) =>
                marked?.has(i.providerID) === true || draining.has(i.providerID),
            }
          : {}),
      isUpToDate: nativeExpired ? (i: PoolInstance) => !expired(i) : current,
      // Unknown availability: scale and provision on instance state (no deadlock on a cluster whose
      // Nodes core has not initialized yet), but roll nothing.
      isAvailable: available ?? isInstanceAvailable,
      holdRollout: available === undefined,
      strategy,
      externallyManaged: external,
      // OnDelete: out-of-date instances are still the first to go on a scale-down, never replaced.
      skipReplacement: onDelete || (native !== undefined && !nativeExpired),
    };
    let plan = planPool(planInput);
    // The control plane is read only when the plan launches something: never at steady state.
    const hold = plan.creates ? await preflightHold(scope, launchAction(plan.actions)) : undefined;
    if (hold) plan = planPool({ ...planInput, holdCreates: true });
    const groupDesired = machines?.groupSize ?? group.desiredReplicas;
    for (const action of plan.actions) {
      await executeAction(scope, action, {
        desired,
        strategy,
        machines,
        marked,
        drain,
        groupDesired,
      });
    }
    const drainState = await drain.finish(live);
    if (machines)
      await markDeferredRemediations(scope, plan.remediationWaiting, machines, desired, strategy);
    scope.write("scale", {
      strategy,
      plan,
      outdated: onDelete ? 0 : live.filter((i) => !isUpToDate(i)).length,
      ...(strategy.rolloutAfter !== undefined && !onDelete
        ? { expired: live.filter((i) => isUpToDate(i) && expired(i)).length }
        : {}),
      ...(onDelete ? { onDelete: live.filter((i) => !current(i)).length } : {}),
      ...(hold ? { preflight: hold.ready } : {}),
      // Provisioned counts instances, never Nodes: core links Nodes only once the pool is provisioned.
      provisioned:
        live.filter(isInstanceAvailable).length >= desired && group.status !== "creating",
      workloadUnavailable: unavailable,
      nodesAvailableInMs: nextInMs,
      draining: drainState,
    });
    return undefined;
  },
};
