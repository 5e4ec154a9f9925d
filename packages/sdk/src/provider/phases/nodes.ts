/**
 * The `nodes` phase: brings every Node of the pool (the Nodes whose `spec.providerID` is one of its
 * live instances) to the taints and labels its MachinePool asks for ({@link readNodeMetadata}), as
 * CAPI's Machine controller does for a Machine's Node: as soon as the Node registers, again whenever
 * the MachinePool changes, removing only what the kit applied ({@link planNodeMetadata}). A Node that
 * already matches is not written. With MachinePool Machines core's Machine controller syncs the labels
 * (each Machine carries the template's labels), so the kit applies only the taints.
 *
 * Nothing here holds the reconcile: an unreachable workload cluster or a refused patch is reported on
 * the `NodeMetadata` condition and retried, and the pool scales and rolls as usual.
 *
 * @module
 */
import { WorkloadClusterUnavailableError } from "../../clustercache/unavailable.js";
import { ApiError, isConflict, isNotFound } from "../../runtime/errors.js";
import { describeRefusals, planNodeMetadata, readNodeMetadata } from "../nodes.js";
import type { NodesSection, PoolPhase } from "../phase.js";
import { PoolReasons } from "../reasons.js";
import type { ReadyState } from "../scope.js";

/** Retry after a lost race: the Node's cache catches up within moments. */
const CONFLICT_RETRY_MS = 1_000;
/** Retry a patch the workload cluster refused after this many poll intervals. */
const REFUSED_RETRY_POLLS = 6;

/** An HTTP failure in words of our own: the code and a well-known reason, never the server's text. */
function describePatchFailure(error: unknown): string {
  if (error instanceof ApiError) {
    const reason = error.status.reason;
    return `HTTP ${error.code}${reason && /^[A-Za-z]{1,40}$/.test(reason) ? ` (${reason})` : ""}`;
  }
  return "the request failed";
}

function plural(n: number, one: string, many: string): string {
  return `${n} ${n === 1 ? one : many}`;
}

/** Applies the MachinePool's taints and labels to the pool's Nodes. */
export const nodesPhase: PoolPhase<unknown, unknown, "group" | "machines", "nodes"> = {
  name: "nodes",
  reads: ["group", "machines"],
  writes: ["nodes"],
  async run(scope) {
    const api = scope.api.nodes;
    const machinePool = scope.machinePool;
    if (!api || !machinePool) {
      scope.write("nodes", { condition: undefined, retryAfterMs: undefined });
      return undefined;
    }
    const machines = scope.read("machines");
    const manageLabels = machines === null;
    const intent = readNodeMetadata(machinePool, { labels: manageLabels });
    const { group } = scope.read("group");
    const ids = group.instances
      .filter(
        (i) =>
          i.providerID !== "" &&
          i.state !== "terminating" &&
          i.state !== "terminated" &&
          !machines?.leaving.has(i.id),
      )
      .map((i) => i.providerID);
    let nodes: Awaited<ReturnType<typeof api.get>>;
    try {
      nodes = await api.get(ids);
    } catch (error) {
      if (!(error instanceof WorkloadClusterUnavailableError)) throw error;
      const section: NodesSection = {
        condition: intent.requested
          ? {
              status: "Unknown",
              reason: PoolReasons.WorkloadClusterUnreachable,
              message: `${error.reason}: the pool's Nodes cannot be read, so their taints and labels are not checked`,
            }
          : undefined,
        // Nothing asked, nothing to retry for: the connection's own event brings the pool back.
        retryAfterMs: intent.requested
          ? Math.max(scope.options.pollMs, error.retryAfterMs)
          : undefined,
      };
      scope.write("nodes", section);
      return undefined;
    }
    let patched = 0;
    let waiting = 0;
    let conflicts = 0;
    const failures: string[] = [];
    for (const node of [...nodes.values()].sort((a, b) => (a.name < b.name ? -1 : 1))) {
      const plan = planNodeMetadata(node, intent, { manageLabels });
      if (plan.waiting) waiting++;
      if (!plan.patch) continue;
      scope.fence();
      try {
        await api.patch(node, plan.patch);
        patched++;
      } catch (error) {
        if (error instanceof WorkloadClusterUnavailableError || isConflict(error)) {
          conflicts++;
          continue;
        }
        // Deleted since the cache saw it: nothing left to label.
        if (isNotFound(error)) continue;
        failures.push(`Node ${node.name}: ${describePatchFailure(error)}`);
      }
    }
    if (patched > 0) {
      scope.log.info(
        { nodes: patched, taints: intent.taints.length, labels: intent.labels.size },
        "applied the MachinePool's taints and labels to the pool's Nodes",
      );
    }
    let condition: ReadyState | undefined;
    if (intent.requested) {
      if (intent.refused.length > 0) {
        condition = {
          status: "False",
          reason: PoolReasons.NodeMetadataRefused,
          message: `not applied to the pool's Nodes: ${describeRefusals(intent.refused)}`,
        };
      } else if (failures.length > 0) {
        condition = {
          status: "False",
          reason: PoolReasons.NodeMetadataNotApplied,
          message: `the workload cluster refused ${plural(failures.length, "Node patch", "Node patches")}: ${failures.slice(0, 3).join("; ")}${failures.length > 3 ? `; and ${failures.length - 3} more` : ""} (the kubeconfig's user needs get, list, watch and patch on Nodes)`,
        };
      } else if (waiting > 0 || conflicts > 0) {
        condition = {
          status: "False",
          reason: PoolReasons.NodeMetadataPending,
          message:
            waiting > 0
              ? `${plural(waiting, "Node waits", "Nodes wait")} for core to remove node.cluster.x-k8s.io/uninitialized before the pool's taints are added`
              : `${plural(conflicts, "Node", "Nodes")} changed while being patched; trying again`,
        };
      } else {
        condition = {
          status: "True",
          reason: PoolReasons.NodeMetadataSynced,
          message: "",
        };
      }
    }
    const { pollMs } = scope.options;
    scope.write("nodes", {
      condition,
      // A refused patch (RBAC) holds until someone fixes it: look again now and then, not every poll.
      retryAfterMs:
        failures.length > 0
          ? REFUSED_RETRY_POLLS * pollMs
          : conflicts > 0
            ? Math.min(CONFLICT_RETRY_MS, Math.max(pollMs, 100))
            : undefined,
    });
    return undefined;
  },
};
