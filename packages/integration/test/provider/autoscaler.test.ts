// The kit under the cluster-autoscaler, over the API server: the node-group bounds of a
// MachinePool's annotations widen the cloud group's own, replicas outside them are applied and
// reported, invalid ones are named and ignored, and a scale-down takes the instance whose Node the
// autoscaler tainted. The test acts as the autoscaler's clusterapi provider does: it scales through
// the MachinePool's scale subresource and taints the Node with ToBeDeletedByClusterAutoscaler.

import { type KubeClient, NodeResource, resourcePath } from "@capi-ts/sdk/runtime";
import { scaled } from "@capi-ts/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type Bed,
  condition,
  converged,
  createPool,
  eventReasons,
  eventually,
  getPool,
  groupName,
  MachinePools,
  ns,
  startBed,
} from "./support.js";

const MIN = "cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size";
const MAX = "cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size";
const TAINT = "ToBeDeletedByClusterAutoscaler";

let bed: Bed;

beforeAll(async () => {
  bed = await startBed();
}, 60_000);
afterAll(async () => {
  await bed?.stop();
});

/** As the autoscaler's `SetSize`: a merge patch of the MachinePool's scale subresource. */
async function scaleTo(client: KubeClient, name: string, replicas: number): Promise<void> {
  await client.request({
    method: "PATCH",
    path: resourcePath(MachinePools, { namespace: ns, name }, "scale"),
    body: { spec: { replicas } },
    contentType: "application/merge-patch+json",
  });
}

async function annotate(name: string, annotations: Record<string, string | null>): Promise<void> {
  await bed.client.mergePatch(MachinePools, { namespace: ns, name }, { metadata: { annotations } });
}

const bounds = (name: string) => {
  const group = bed.cloud.inspect.group(groupName(name));
  return group && [group.minSize, group.maxSize];
};

describe("machinePoolController under the cluster-autoscaler", { timeout: scaled(60_000) }, () => {
  it("widens the group's own bounds for the autoscaler's, so a size they refused converges", async () => {
    const name = await createPool(bed, { replicas: 2, spec: { minSize: 1, maxSize: 3 } });
    await converged(bed, name, 2);
    expect(bounds(name)).toEqual([1, 3]);
    await annotate(name, { [MIN]: "0", [MAX]: "6" });
    await eventually(async () => {
      expect(bounds(name)).toEqual([0, 6]);
      expect(condition(await getPool(bed, name), "AutoscalerBounds")).toMatchObject({
        status: "True",
        reason: "WithinAutoscalerBounds",
      });
    });
    await scaleTo(bed.client, name, 5);
    await converged(bed, name, 5);
    expect(await eventReasons(bed, name)).toContain("GroupUpdated");

    // Beyond the autoscaler's maximum: applied as asked, the group widened for it, and reported.
    await scaleTo(bed.client, name, 7);
    const pool = await converged(bed, name, 7);
    expect(bounds(name)).toEqual([0, 7]);
    expect(condition(pool, "Ready")?.status).toBe("True");
    expect(condition(pool, "AutoscalerBounds")).toMatchObject({
      status: "False",
      reason: "ReplicasOutsideAutoscalerBounds",
    });

    // Without the annotations the pool's own bounds are back, narrowed once the group is small.
    await annotate(name, { [MIN]: null, [MAX]: null });
    await scaleTo(bed.client, name, 2);
    await converged(bed, name, 2);
    await eventually(async () => {
      expect(bounds(name)).toEqual([1, 3]);
      expect(condition(await getPool(bed, name), "AutoscalerBounds")).toBeUndefined();
    });
  });

  it("names an invalid annotation, ignores it and writes no bounds from it", async () => {
    const name = await createPool(bed, { replicas: 2 });
    await converged(bed, name, 2);
    const mark = bed.cloud.lastCallSeq();
    await annotate(name, { [MIN]: "two", [MAX]: "50" });
    await eventually(async () => {
      const pool = await getPool(bed, name);
      expect(condition(pool, "AutoscalerBounds")).toMatchObject({
        status: "False",
        reason: "InvalidAutoscalerBounds",
        message: expect.stringContaining(`annotation ${MIN} is "two", not a whole number ≥ 0`),
      });
      expect(condition(pool, "Ready")?.status).toBe("True");
    });
    expect(await eventReasons(bed, name)).toContain("InvalidAutoscalerBounds");
    expect(bounds(name)).toEqual([0, 10]);
    expect(bed.cloud.calls({ afterSeq: mark, mutating: true })).toEqual([]);

    await annotate(name, { [MIN]: "6", [MAX]: "5" });
    await eventually(async () => {
      expect(condition(await getPool(bed, name), "AutoscalerBounds")?.message).toMatch(
        /\(6\) is greater than .*\(5\): lower the minimum or raise the maximum/,
      );
    });
    expect(bed.cloud.calls({ afterSeq: mark, mutating: true })).toEqual([]);
  });

  it("refuses a bound beyond int32 without sending it, and describes a 40,000-digit one by its length", async () => {
    const name = await createPool(bed, { replicas: 2 });
    await converged(bed, name, 2);
    const mark = bed.cloud.lastCallSeq();
    await annotate(name, { [MIN]: "1", [MAX]: String(2 ** 53 - 1) });
    await eventually(async () => {
      expect(condition(await getPool(bed, name), "AutoscalerBounds")).toMatchObject({
        status: "False",
        reason: "InvalidAutoscalerBounds",
        message: expect.stringContaining("above 2147483647 (replicas are an int32"),
      });
    });
    await annotate(name, { [MIN]: "1", [MAX]: "7".repeat(40_000) });
    await eventually(async () => {
      const message = condition(await getPool(bed, name), "AutoscalerBounds")?.message ?? "";
      expect(message).toContain(
        `annotation ${MAX} is a value of 40000 characters, above 2147483647`,
      );
      expect(message.length).toBeLessThan(1024);
    });
    expect(bounds(name)).toEqual([0, 10]);
    expect(bed.cloud.calls({ afterSeq: mark, mutating: true })).toEqual([]);
    expect(await eventReasons(bed, name)).not.toContain("BoundsNotConverging");
  });

  it("removes exactly the instance whose Node the autoscaler tainted when it decrements", async () => {
    const name = await createPool(bed, { replicas: 3, annotations: { [MIN]: "1", [MAX]: "5" } });
    await converged(bed, name, 3);
    const live = bed.cloud.inspect
      .instances({ group: groupName(name), states: ["running"] })
      .map((i) => i.id)
      .sort();
    // Neither the oldest nor the first by ID: a kit that ignores the taint takes another.
    const victim = live[1] as string;
    // Other writers (the Node's status updater, the kit's labels) race this update: a 409
    // means the read was stale, so read again and retry, as the autoscaler itself does.
    await eventually(async () => {
      const node = await bed.client.get(NodeResource, { name: victim });
      await bed.client.update(NodeResource, {
        ...node,
        spec: {
          ...node.spec,
          taints: [
            ...(node.spec?.taints ?? []).filter((t) => t.key !== TAINT),
            { key: TAINT, value: String(Math.floor(Date.now() / 1000)), effect: "NoSchedule" },
          ],
        },
      });
    });
    // The autoscaler drains the Node between the taint and the decrement.
    await eventually(async () => {
      const tainted = await bed.client.get(NodeResource, { name: victim });
      expect(tainted.spec?.taints?.map((t) => t.key)).toContain(TAINT);
    });
    await new Promise((r) => setTimeout(r, 300));
    await scaleTo(bed.client, name, 2);
    await converged(bed, name, 2);
    const after = bed.cloud.inspect
      .instances({ group: groupName(name), states: ["running"] })
      .map((i) => i.id)
      .sort();
    expect(after).toEqual(live.filter((id) => id !== victim));
  });
});
