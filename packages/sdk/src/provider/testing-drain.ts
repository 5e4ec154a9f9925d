/**
 * A fake workload cluster for unit tests of the drain before terminate ({@link fakeWorkloadDrain}):
 * Nodes by providerID, Pods by Node, PodDisruptionBudgets that refuse evictions, and a switch that
 * makes it unreachable. Part of `@capi-ts/sdk/provider/testing`.
 *
 * @module
 */
import type { V1Pod } from "@kubernetes/client-node";
import { WorkloadClusterUnavailableError } from "../clustercache/unavailable.js";
import type { EvictionOutcome, NodeDrainApi } from "./node-drain.js";

/** A fake workload cluster and what the drain did to it. */
export interface FakeWorkloadDrain {
  /** The API to give the scope (`createTestScope({ drainApi })`). */
  readonly api: NodeDrainApi;
  /** Registers a Node for a providerID. */
  addNode(providerID: string, name: string): void;
  /** Binds a Pod to a Node (a Pod object; `spec.nodeName` is set to `node`). */
  addPod(node: string, pod: V1Pod): void;
  /** Makes the PodDisruptionBudget `budget` refuse evictions of Pods with this name, or stops it. */
  block(podName: string, budget: string | undefined): void;
  /** While true, every call throws `WorkloadClusterUnavailableError`. */
  unreachable: boolean;
  /** Whether a Node is cordoned. */
  cordoned(name: string): boolean;
  /** The Pods still on a Node. */
  podsOn(name: string): readonly V1Pod[];
  /** Requests that changed something or tried to: cordons, uncordons, evictions (refused ones too). */
  readonly writes: { readonly verb: "cordon" | "uncordon" | "evict"; readonly name: string }[];
}

/**
 * A fake workload cluster. An accepted eviction deletes the Pod at once (a Pod with no grace
 * period); a blocked one answers as a PodDisruptionBudget at zero allowed disruptions does.
 *
 * @example
 * ```ts
 * const workload = fakeWorkloadDrain();
 * workload.addNode("fake:///i-1", "node-1");
 * workload.addPod("node-1", { metadata: { namespace: "default", name: "web-1" } });
 * workload.block("web-1", "web");
 * const test = createTestScope({ driver, spec, drainApi: workload.api });
 * ```
 */
export function fakeWorkloadDrain(): FakeWorkloadDrain {
  const nodes = new Map<string, { name: string; unschedulable: boolean }>();
  const pods = new Map<string, V1Pod[]>();
  const blocked = new Map<string, string>();
  const writes: { verb: "cordon" | "uncordon" | "evict"; name: string }[] = [];
  const state = { unreachable: false };
  const reachable = () => {
    if (state.unreachable) {
      throw new WorkloadClusterUnavailableError(
        { namespace: "default", name: "c1" },
        "WorkloadClusterUnreachable",
        "the fake workload cluster is unreachable",
        1_000,
      );
    }
  };
  const nodeNamed = (name: string) => [...nodes.values()].find((n) => n.name === name);
  const api: NodeDrainApi = {
    async nodeOf(providerID) {
      reachable();
      const node = nodes.get(providerID);
      return node ? { ...node } : undefined;
    },
    async cordon(name) {
      reachable();
      writes.push({ verb: "cordon", name });
      const node = nodeNamed(name);
      if (node) node.unschedulable = true;
    },
    async uncordon(name) {
      reachable();
      writes.push({ verb: "uncordon", name });
      const node = nodeNamed(name);
      if (node) node.unschedulable = false;
    },
    async podsOn(name) {
      reachable();
      return structuredClone(pods.get(name) ?? []);
    },
    async evict({ namespace, name }): Promise<EvictionOutcome> {
      reachable();
      writes.push({ verb: "evict", name });
      for (const [node, list] of pods) {
        const index = list.findIndex(
          (p) => p.metadata?.namespace === namespace && p.metadata?.name === name,
        );
        if (index < 0) continue;
        const budget = blocked.get(name);
        if (budget !== undefined) return { kind: "blocked", budget };
        list.splice(index, 1);
        pods.set(node, list);
        return { kind: "evicted" };
      }
      return { kind: "gone" };
    },
  };
  return {
    api,
    addNode(providerID, name) {
      nodes.set(providerID, { name, unschedulable: false });
    },
    addPod(node, pod) {
      const list = pods.get(node) ?? [];
      list.push({ ...pod, spec: { containers: [], ...pod.spec, nodeName: node } });
      pods.set(node, list);
    },
    block(podName, budget) {
      if (budget === undefined) blocked.delete(podName);
      else blocked.set(podName, budget);
    },
    get unreachable() {
      return state.unreachable;
    },
    set unreachable(value: boolean) {
      state.unreachable = value;
    },
    cordoned: (name) => nodeNamed(name)?.unschedulable === true,
    podsOn: (name) => pods.get(name) ?? [],
    writes,
  };
}
