/**
 * Drain before terminate, for pools without MachinePool Machines: before the kit terminates an
 * instance whose Node registered in the workload cluster (a scale-down victim, an outdated instance,
 * a remediation), it cordons the Node, evicts its Pods through the Eviction API (PodDisruptionBudgets
 * honoured) and waits until none is left, up to the MachinePool's `nodeDrainTimeoutSeconds` (0 or
 * unset: as long as it takes, as core does). With MachinePool Machines core's Machine controller
 * drains and this step is not used.
 *
 * A drain never blocks a reconcile: each reconcile moves it one step ({@link DrainRound.mayDelete}
 * answers whether the instance may go now) and the pool is requeued while Pods are left. What it
 * did is remembered by providerID (`PoolMemory.drains`), so a Node is cordoned once, refused
 * evictions are retried at most twice per poll interval, and an instance being drained is the first
 * victim of the next reconcile (the plan does not switch to another one half way), as is one whose
 * Node is cordoned ({@link DrainRound.firstToGo}: a drain a restart forgot is finished).
 *
 * An unreachable workload cluster holds the termination, whatever the timeout: the kit never
 * terminates a Node it could not drain because it could not reach it.
 *
 * @module
 */
import type { V1Pod } from "@kubernetes/client-node";
import { WorkloadClusterUnavailableError } from "../../clustercache/unavailable.js";
import { ApiError } from "../../runtime/errors.js";
import type { PoolInstance } from "../driver-types.js";
import type { DrainProgress } from "../memory.js";
import { type NodeDrainApi, nodeDrainTimeoutMs, podDrainAction } from "../node-drain.js";
import { PoolReasons } from "../reasons.js";
import type { PoolScope, ReadyState } from "../scope.js";

/** The most Pods one reconcile evicts from one Node; the rest go in the next reconciles. */
const MAX_EVICTIONS_PER_ROUND = 50;
/** The most budgets, and Nodes, a condition message names. */
const MAX_NAMED = 3;
/** The longest message of a failed request the condition repeats. */
const MAX_ERROR_CHARS = 200;

/** Where one drain stands after this reconcile's step. */
interface DrainReport {
  readonly node: string | undefined;
  readonly instance: string;
  readonly podsLeft: number;
  readonly budgets: readonly string[];
  /** Why the drain cannot go on (the workload cluster cannot be reached, or refused a request). */
  readonly held?: string;
  readonly timedOut?: boolean;
}

/**
 * The drains of one reconcile of one pool: ask {@link DrainRound.mayDelete} before terminating an
 * instance, tell {@link DrainRound.deleted} once it is, then {@link DrainRound.finish} for the
 * `Draining` condition.
 *
 * @example
 * ```ts
 * const round = new DrainRound(scope, !machines);
 * if (await round.mayDelete(victim, "shrink")) { await deleteInstance(victim); round.deleted(victim); }
 * const draining = await round.finish(liveInstances);
 * ```
 */
export class DrainRound<Spec, Settings> {
  readonly #scope: PoolScope<Spec, Settings>;
  readonly #api: NodeDrainApi | undefined;
  readonly #reports: DrainReport[] = [];
  readonly #asked = new Set<string>();
  #heldShrinks = 0;

  /**
   * @param scope - the reconcile's scope (its memory keeps the drains between reconciles)
   * @param enabled - whether the kit drains (false with MachinePool Machines: core drains)
   */
  constructor(scope: PoolScope<Spec, Settings>, enabled: boolean) {
    this.#scope = scope;
    this.#api = enabled ? scope.api.drain : undefined;
  }

  /** Instances held by their drain this reconcile that a `shrink` would have removed. */
  get heldShrinks(): number {
    return this.#heldShrinks;
  }

  /**
   * The providerIDs of instances to take first when one must go (`leaving`: the pool has more
   * members than it wants, or outdated ones): those being drained, so a half-drained Node is
   * finished rather than another one started, and those whose Node is cordoned — by a drain a
   * restart interrupted, or by a user who wants it emptied. Nodes are looked up in the cache, and
   * only when one must go; an unreachable workload cluster leaves the drains the kit remembers.
   */
  async firstToGo(live: readonly PoolInstance[], leaving: boolean): Promise<ReadonlySet<string>> {
    const api = this.#api;
    const first = new Set<string>(api ? this.#scope.memory.drains.keys() : []);
    if (!api || !leaving) return first;
    try {
      for (const instance of live) {
        if (instance.providerID === "") continue;
        if ((await api.nodeOf(instance.providerID))?.unschedulable) first.add(instance.providerID);
      }
    } catch (error) {
      if (!(error instanceof WorkloadClusterUnavailableError)) throw error;
    }
    return first;
  }

  /**
   * Moves the drain of `instance` one step and says whether it may be terminated now: its Node is
   * drained, it never had one, or the drain timed out. Never waits for Pods to go.
   */
  async mayDelete(instance: PoolInstance, mode: "shrink" | "replace"): Promise<boolean> {
    const api = this.#api;
    const id = instance.providerID;
    if (!api || id === "") return true;
    this.#asked.add(id);
    const scope = this.#scope;
    const drains = scope.memory.drains;
    const now = scope.clock.now();
    let progress = drains.get(id);
    if (!progress) {
      progress = { instance: instance.id };
      drains.set(id, progress);
    }
    const done = await this.#step(api, progress, id, now);
    if (done) {
      drains.delete(id);
      return true;
    }
    if (mode === "shrink") this.#heldShrinks++;
    return false;
  }

  /** The instance was terminated: its drain is over. */
  deleted(instance: PoolInstance): void {
    this.#scope.memory.drains.delete(instance.providerID);
  }

  /**
   * Ends the round: drains of instances that are no longer leaving (the pool was scaled back up, the
   * instance vanished) are given up, their Nodes uncordoned when the kit cordoned them; returns the
   * `Draining` condition, or `undefined` when no drain runs.
   */
  async finish(live: readonly PoolInstance[]): Promise<ReadyState | undefined> {
    const api = this.#api;
    if (!api) return undefined;
    const scope = this.#scope;
    const liveIDs = new Set(live.map((i) => i.providerID));
    for (const [id, progress] of [...scope.memory.drains]) {
      if (this.#asked.has(id)) continue;
      if (liveIDs.has(id) && progress.cordonedByKit && progress.node) {
        try {
          scope.fence();
          await api.uncordon(progress.node);
          scope.events.normal(
            "NodeUncordoned",
            `uncordoned Node ${progress.node}: instance ${progress.instance} no longer leaves the pool`,
            { node: progress.node, instance: progress.instance },
          );
        } catch (error) {
          if (!(error instanceof WorkloadClusterUnavailableError || error instanceof ApiError)) {
            throw error;
          }
          // Kept: the next reconcile tries again.
          scope.log.debug({ node: progress.node, err: error }, "cannot uncordon the Node yet");
          continue;
        }
      }
      scope.memory.drains.delete(id);
    }
    return drainingCondition(this.#reports, nodeDrainTimeoutMs(scope.machinePool));
  }

  /** One step of a drain; true when the instance may go. */
  async #step(
    api: NodeDrainApi,
    progress: DrainProgress,
    providerID: string,
    now: number,
  ): Promise<boolean> {
    const scope = this.#scope;
    const report = (fields: Partial<DrainReport>) =>
      this.#reports.push({
        node: progress.node,
        instance: progress.instance,
        podsLeft: 0,
        budgets: progress.budgets ?? [],
        ...fields,
      });
    try {
      const node = await api.nodeOf(providerID);
      // Never registered (or gone already): nothing runs there.
      if (!node) return true;
      progress.node = node.name;
      progress.since ??= now;
      if (!node.unschedulable && !progress.cordonedByKit) {
        scope.fence();
        await api.cordon(node.name);
        progress.cordonedByKit = true;
        scope.events.normal(
          "DrainingNode",
          `cordoned Node ${node.name} and draining it before instance ${progress.instance} is terminated`,
          { node: node.name, instance: progress.instance },
        );
      }
      const { evict, left: before } = sortPods(await api.podsOn(node.name), now);
      let left = before;
      if (left === 0) return true;
      const timeoutMs = nodeDrainTimeoutMs(scope.machinePool);
      if (timeoutMs > 0 && now - (progress.since ?? now) >= timeoutMs) {
        const budgets = progress.budgets ?? [];
        scope.events.warning(
          PoolReasons.NodeDrainTimedOut,
          `Node ${node.name} was not drained within nodeDrainTimeoutSeconds (${timeoutMs / 1000}s): terminating instance ${progress.instance} with ${plural(left, "Pod")} left${budgets.length > 0 ? ` (${budgetPhrase(budgets)})` : ""}`,
          { node: node.name, instance: progress.instance, podsLeft: left },
        );
        report({ podsLeft: left, timedOut: true });
        return true;
      }
      const spacing = scope.options.pollMs / 2;
      if (
        evict.length > 0 &&
        (progress.lastEvictionAt === undefined || now - progress.lastEvictionAt >= spacing)
      ) {
        progress.lastEvictionAt = now;
        const budgets = new Set<string>();
        let accepted = 0;
        for (const pod of evict.slice(0, MAX_EVICTIONS_PER_ROUND)) {
          const namespace = pod.metadata?.namespace ?? "";
          const name = pod.metadata?.name ?? "";
          if (namespace === "" || name === "") continue;
          scope.fence();
          const outcome = await api.evict({ namespace, name });
          if (outcome.kind === "blocked") {
            if (outcome.budget !== undefined && budgets.size < MAX_NAMED) {
              budgets.add(`${namespace}/${outcome.budget}`);
            }
          } else {
            accepted++;
          }
        }
        progress.budgets = [...budgets].sort();
        // Pods with no grace period are gone at once: look again, so such a Node is done now.
        if (accepted > 0) left = sortPods(await api.podsOn(node.name), now).left;
        if (left === 0) return true;
      }
      report({ podsLeft: left });
      return false;
    } catch (error) {
      if (error instanceof WorkloadClusterUnavailableError) {
        report({ held: `${error.reason}: ${error.message}` });
        return false;
      }
      if (error instanceof ApiError) {
        report({
          held: `the workload cluster refused ${error.request.method} ${error.request.path} (${error.code} ${error.reason ?? ""}): ${(error.status.message ?? "").slice(0, MAX_ERROR_CHARS)}`,
        });
        return false;
      }
      throw error;
    }
  }
}

function sortPods(pods: readonly V1Pod[], now: number): { evict: V1Pod[]; left: number } {
  const evict: V1Pod[] = [];
  let waiting = 0;
  for (const pod of pods) {
    const action = podDrainAction(pod, now);
    if (action === "evict") evict.push(pod);
    else if (action === "terminating") waiting++;
  }
  return { evict, left: evict.length + waiting };
}

function plural(n: number, one: string): string {
  return `${n} ${one}${n === 1 ? "" : "s"}`;
}

function budgetPhrase(budgets: readonly string[]): string {
  return `${budgets.length === 1 ? "PodDisruptionBudget" : "PodDisruptionBudgets"} ${budgets.join(", ")} ${budgets.length === 1 ? "blocks" : "block"} eviction`;
}

/**
 * The `Draining` condition of a round's reports: held drains first (they need a user), then timed
 * out ones, then those in progress; at most `MAX_NAMED` Nodes named.
 */
function drainingCondition(
  reports: readonly DrainReport[],
  timeoutMs: number,
): ReadyState | undefined {
  if (reports.length === 0) return undefined;
  const ordered = [...reports].sort(
    (a, b) =>
      rank(a) - rank(b) ||
      (a.node ?? a.instance).localeCompare(b.node ?? b.instance) ||
      a.instance.localeCompare(b.instance),
  );
  const first = ordered[0] as DrainReport;
  const shown = ordered.slice(0, MAX_NAMED).map((r) => {
    const what = r.node ? `Node ${r.node} (instance ${r.instance})` : `instance ${r.instance}`;
    if (r.held !== undefined) {
      return `${what}: cannot drain, the instance is not terminated until its Node is drained: ${r.held}`;
    }
    if (r.timedOut) {
      return `${what}: not drained within nodeDrainTimeoutSeconds (${timeoutMs / 1000}s), terminated with ${plural(r.podsLeft, "Pod")} left${r.budgets.length > 0 ? ` (${budgetPhrase(r.budgets)})` : ""}`;
    }
    const timeout =
      timeoutMs > 0 ? `nodeDrainTimeoutSeconds ${timeoutMs / 1000}` : "no nodeDrainTimeoutSeconds";
    return `${what}: ${plural(r.podsLeft, "Pod")} left${r.budgets.length > 0 ? `; ${budgetPhrase(r.budgets)}` : ""} (${timeout})`;
  });
  const more = ordered.length - shown.length;
  return {
    status: "True",
    reason:
      first.held !== undefined
        ? PoolReasons.DrainHeld
        : first.timedOut
          ? PoolReasons.NodeDrainTimedOut
          : PoolReasons.DrainingNode,
    message: `${shown.join("; ")}${more > 0 ? `; and ${more} more` : ""}`,
  };
}

function rank(report: DrainReport): number {
  return report.held !== undefined ? 0 : report.timedOut ? 1 : 2;
}
