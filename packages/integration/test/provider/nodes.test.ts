// The kit's `nodes` phase through an API server: the MachinePool's taints and Node labels reach the
// pool's Node, a change of the template follows, and a taint a user removes at rest comes back
// through the Node's own event — the resync is ten minutes, so nothing else could bring it back.
import { NodeResource } from "@capi-ts/sdk/runtime";
import type { V1Node } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type Bed,
  condition,
  converged,
  createPool,
  eventually,
  getPool,
  groupName,
  MachinePools,
  ns,
  sleep,
  startBed,
} from "./support.js";

let bed: Bed;

beforeAll(async () => {
  bed = await startBed({ controller: { readiness: "node", resyncPeriodMs: 600_000 } });
}, 60_000);
afterAll(async () => {
  await bed?.stop();
});

const GPU = { key: "example.com/gpu", value: "a100", effect: "NoSchedule" };

async function nodeOf(name: string): Promise<V1Node> {
  const [providerID] = bed.cloud.inspect.providerIds(groupName(name));
  const nodes = await bed.client.list(NodeResource);
  const node = nodes.items.find((n) => n.spec?.providerID === providerID);
  if (!node) throw new Error(`no Node for ${providerID} yet`);
  return node;
}

const hasGpu = (node: V1Node) =>
  (node.spec?.taints ?? []).some((t) => t.key === GPU.key && t.value === GPU.value);

describe("machinePoolController: taints and labels on the pool's Nodes", {
  timeout: 40_000,
}, () => {
  it("applies them, follows a change, and puts back an Always taint a user removed at rest", async () => {
    const name = await createPool(bed, {
      replicas: 1,
      annotations: { "capi-ts.io/node-taints": JSON.stringify([GPU]) },
    });
    await converged(bed, name, 1);
    await eventually(async () => {
      const node = await nodeOf(name);
      expect(hasGpu(node)).toBe(true);
      expect(node.metadata?.annotations?.["capi-ts.io/taints-from-pool"]).toBe(
        "example.com/gpu:NoSchedule",
      );
      expect(condition(await getPool(bed, name), "NodeMetadata")).toMatchObject({
        status: "True",
        reason: "NodeMetadataSynced",
      });
    });

    await bed.client.mergePatch(
      MachinePools,
      { namespace: ns, name },
      { spec: { template: { metadata: { labels: { "node-role.kubernetes.io/gpu": "" } } } } },
    );
    await eventually(async () => {
      const node = await nodeOf(name);
      expect(node.metadata?.labels?.["node-role.kubernetes.io/gpu"]).toBe("");
      expect(node.metadata?.annotations?.["capi-ts.io/labels-from-pool"]).toBe(
        "node-role.kubernetes.io/gpu",
      );
    });

    // At rest now: Ready=True, next look in ten minutes. A user takes the taint away.
    await sleep(500);
    const node = await nodeOf(name);
    await bed.client.mergePatch(
      NodeResource,
      { name: node.metadata?.name ?? "" },
      {
        metadata: { resourceVersion: node.metadata?.resourceVersion },
        spec: { taints: (node.spec?.taints ?? []).filter((t) => t.key !== GPU.key) },
      },
    );
    await eventually(async () => expect(hasGpu(await nodeOf(name))).toBe(true), 5_000);

    // Dropped from the MachinePool: gone from the Node, and the record with it.
    await bed.client.mergePatch(
      MachinePools,
      { namespace: ns, name },
      {
        metadata: { annotations: { "capi-ts.io/node-taints": null } },
        spec: { template: { metadata: { labels: { "node-role.kubernetes.io/gpu": null } } } },
      },
    );
    await eventually(async () => {
      const after = await nodeOf(name);
      expect(hasGpu(after)).toBe(false);
      expect(after.metadata?.labels?.["node-role.kubernetes.io/gpu"]).toBeUndefined();
      expect(after.metadata?.annotations?.["capi-ts.io/taints-from-pool"]).toBe("");
      expect(condition(await getPool(bed, name), "NodeMetadata")).toBeUndefined();
    });
  });
});
