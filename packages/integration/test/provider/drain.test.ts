// The drain before terminate end to end, over HTTP (the bed is its own workload cluster): a
// budget that never allows an eviction holds the instance until nodeDrainTimeoutSeconds, then it
// goes with a Warning naming the budget; an unreachable workload cluster holds the termination until
// it can be reached again, and the drain then finishes.

import {
  EventResource,
  NodeResource,
  type ResourceDescriptor,
  SecretResource,
} from "@capi-ts/sdk/runtime";
import { scaled } from "@capi-ts/testing";
import type { V1Pod } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type Bed,
  condition,
  converged,
  createCluster,
  createPool,
  eventually,
  getPool,
  groupName,
  MachinePools,
  ns,
  type Obj,
  setClusterProvisioned,
  setReplicas,
  sleep,
  startBed,
} from "./support.js";

const Pods: ResourceDescriptor<V1Pod> = {
  group: "",
  version: "v1",
  kind: "Pod",
  plural: "pods",
  scope: "Namespaced",
  subresources: { status: true },
};
const Budgets: ResourceDescriptor<Obj> = {
  group: "policy",
  version: "v1",
  kind: "PodDisruptionBudget",
  plural: "poddisruptionbudgets",
  scope: "Namespaced",
};
/** The Cluster of each pool the tests create outside the bed's own. */
const clusterOf = new Map<string, string>();

let bed: Bed;

beforeAll(async () => {
  bed = await startBed({ controller: { readiness: "node" } });
}, 60_000);
afterAll(async () => {
  await bed?.stop();
});

/** One Pod per Node of the pool, Running and Ready, labelled `app` (no scheduler or kubelet runs). */
async function podsOnEveryNode(pool: string, app: string): Promise<string[]> {
  const ids = bed.cloud.inspect.providerIds(groupName(pool, clusterOf.get(pool)));
  const nodes = await eventually(async () => {
    const list = await bed.client.list(NodeResource);
    const found = list.items.filter((n) => ids.includes(n.spec?.providerID ?? ""));
    if (found.length !== ids.length) throw new Error(`${found.length} of ${ids.length} Nodes`);
    return found;
  });
  const names: string[] = [];
  for (const [i, node] of nodes.entries()) {
    const name = `${app}-${i}`;
    names.push(name);
    await bed.client.create(Pods, {
      apiVersion: "v1",
      kind: "Pod",
      metadata: { namespace: ns, name, labels: { app } },
      spec: {
        nodeName: node.metadata?.name ?? "",
        terminationGracePeriodSeconds: 0,
        containers: [{ name: "app", image: "registry.k8s.io/pause:3.10" }],
      },
    });
    await bed.client.mergePatchStatus(
      Pods,
      { namespace: ns, name },
      { status: { phase: "Running", conditions: [{ type: "Ready", status: "True" }] } },
    );
  }
  return names;
}

async function podNames(app: string): Promise<string[]> {
  const list = await bed.client.list(Pods, { namespace: ns, labelSelector: `app=${app}` });
  return list.items.map((p) => p.metadata?.name ?? "").sort();
}

describe("drain before terminate (no MachinePool Machines)", { timeout: scaled(60_000) }, () => {
  it("terminates at nodeDrainTimeoutSeconds when a budget never allows, and says which", async () => {
    const name = await createPool(bed, { replicas: 2 });
    await converged(bed, name, 2);
    await bed.client.mergePatch(
      MachinePools,
      { namespace: ns, name },
      { spec: { template: { spec: { deletion: { nodeDrainTimeoutSeconds: 3 } } } } },
    );
    const app = `timeout-${name}`;
    const pods = await podsOnEveryNode(name, app);
    await bed.client.create(Budgets, {
      apiVersion: "policy/v1",
      kind: "PodDisruptionBudget",
      metadata: { namespace: ns, name: app },
      spec: { minAvailable: 2, selector: { matchLabels: { app } } },
    } as Obj);
    await setReplicas(bed, name, 1);
    const draining = await eventually(async () => {
      const found = condition(await getPool(bed, name), "Draining");
      if (found?.reason !== "DrainingNode") throw new Error(`Draining: ${JSON.stringify(found)}`);
      return found;
    });
    expect(draining.message).toContain(`PodDisruptionBudget ${ns}/${app} blocks eviction`);
    expect(draining.message).toContain("(nodeDrainTimeoutSeconds 3)");
    await converged(bed, name, 1);
    const events = await bed.client.list(EventResource, { namespace: ns });
    const timedOut = events.items.find(
      (e) => e.involvedObject?.name === name && e.reason === "NodeDrainTimedOut",
    );
    expect(timedOut?.type).toBe("Warning");
    expect(timedOut?.message).toContain(`PodDisruptionBudget ${ns}/${app}`);
    // The budget held every Pod: none was evicted, the timeout let the instance go with its Pod.
    expect(await podNames(app)).toEqual(pods);
    await eventually(async () => {
      expect(condition(await getPool(bed, name), "Draining")).toBeUndefined();
    });
  });

  it("holds the termination while the workload cluster cannot be reached, then drains", async () => {
    const cluster = "c-drain";
    await createCluster(bed.client, cluster, true);
    const name = await createPool(bed, { replicas: 2, clusterName: cluster });
    clusterOf.set(name, cluster);
    await converged(bed, name, 2, cluster);
    const app = `held-${name}`;
    await podsOnEveryNode(name, app);
    // The kubeconfig Secret no longer holds a kubeconfig: the kit cannot reach the workload cluster.
    await bed.client.mergePatch(
      SecretResource,
      { namespace: ns, name: `${cluster}-kubeconfig` },
      { data: { value: Buffer.from("not a kubeconfig").toString("base64") } },
    );
    await setReplicas(bed, name, 1);
    const held = await eventually(async () => {
      const found = condition(await getPool(bed, name), "Draining");
      if (found?.reason !== "DrainHeld") throw new Error(`Draining: ${JSON.stringify(found)}`);
      return found;
    });
    expect(held.message).toContain("KubeconfigSecretInvalid");
    // Held for a while (a window, not stretched): both instances and every Pod stay.
    await sleep(1_500);
    expect(bed.cloud.inspect.providerIds(groupName(name, cluster))).toHaveLength(2);
    expect(await podNames(app)).toHaveLength(2);

    await setClusterProvisioned(bed.client, cluster);
    await converged(bed, name, 1, cluster);
    // No budget: the drained Node's Pod was evicted before its instance went.
    expect(await podNames(app)).toHaveLength(1);
    await eventually(async () => {
      expect(condition(await getPool(bed, name), "Draining")).toBeUndefined();
    });
  });
});
