// The drain before terminate, one reconcile at a time, on a fake workload cluster: cordon once,
// evict what CAPI's drain evicts, name the budget that refuses, time out, hold while unreachable,
// and give up (uncordon) a drain whose instance stays.
import type { V1Pod } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { ManualClock } from "../../runtime/clock.js";
import { PoolMemory } from "../memory.js";
import { budgetOfRefusal, nodeDrainTimeoutMs, podDrainAction } from "../node-drain.js";
import { fakeCloud, fakeScope, fakeWorkloadDrain, instanceOf } from "../testing.js";
import { DrainRound } from "./drain.js";

const victim = instanceOf("i1");
const pod = (name: string, extra: Partial<V1Pod> = {}): V1Pod => ({
  ...extra,
  metadata: { namespace: "default", name, ...extra.metadata },
  status: { phase: "Running", ...extra.status },
});

/** One reconcile's round over the same workload cluster, memory and clock. */
function rounds(options: { nodeDrainTimeoutSeconds?: number } = {}) {
  const workload = fakeWorkloadDrain();
  const memory = new PoolMemory();
  const clock = new ManualClock();
  const cloud = fakeCloud();
  const next = () => {
    const test = fakeScope({
      driver: cloud.driver,
      memory,
      clock,
      drainApi: workload.api,
      ...options,
    });
    return { round: new DrainRound(test.scope, true), events: test.events };
  };
  return { workload, memory, clock, next };
}

describe("DrainRound", () => {
  it("lets an instance without a Node go at once, writing nothing", async () => {
    const { workload, next, memory } = rounds();
    const { round } = next();
    expect(await round.mayDelete(victim, "shrink")).toBe(true);
    expect(await round.finish([victim])).toBeUndefined();
    expect(workload.writes).toEqual([]);
    expect(memory.drains.size).toBe(0);
  });

  it("cordons a Node without Pods and lets its instance go in the same reconcile", async () => {
    const { workload, next } = rounds();
    workload.addNode(victim.providerID, "node-1");
    const { round, events } = next();
    expect(await round.mayDelete(victim, "shrink")).toBe(true);
    expect(workload.cordoned("node-1")).toBe(true);
    expect(workload.writes).toEqual([{ verb: "cordon", name: "node-1" }]);
    expect(events.map((e) => e.reason)).toEqual(["DrainingNode"]);
  });

  it("leaves DaemonSet, mirror, finished and skip-labelled Pods alone", async () => {
    const { workload, next } = rounds();
    workload.addNode(victim.providerID, "node-1");
    workload.addPod(
      "node-1",
      pod("ds", {
        metadata: {
          ownerReferences: [
            { apiVersion: "apps/v1", kind: "DaemonSet", name: "ds", uid: "u", controller: true },
          ],
        },
      }),
    );
    workload.addPod(
      "node-1",
      pod("static", { metadata: { annotations: { "kubernetes.io/config.mirror": "abc" } } }),
    );
    workload.addPod("node-1", pod("done", { status: { phase: "Succeeded" } }));
    workload.addPod(
      "node-1",
      pod("kept", { metadata: { labels: { "cluster.x-k8s.io/drain": "skip" } } }),
    );
    const { round } = next();
    expect(await round.mayDelete(victim, "shrink")).toBe(true);
    expect(workload.writes.filter((w) => w.verb === "evict")).toEqual([]);
    expect(workload.podsOn("node-1")).toHaveLength(4);
  });

  it("holds the instance while a PodDisruptionBudget refuses, names it, and goes once it allows", async () => {
    const { workload, next, clock, memory } = rounds();
    workload.addNode(victim.providerID, "node-1");
    workload.addPod("node-1", pod("web-1"));
    workload.addPod("node-1", pod("free-1"));
    workload.block("web-1", "web");

    const first = next().round;
    expect(await first.mayDelete(victim, "shrink")).toBe(false);
    expect(first.heldShrinks).toBe(1);
    expect(await first.finish([victim])).toEqual({
      status: "True",
      reason: "DrainingNode",
      message:
        "Node node-1 (instance i1): 1 Pod left; PodDisruptionBudget default/web blocks eviction (no nodeDrainTimeoutSeconds)",
    });
    expect(workload.podsOn("node-1").map((p) => p.metadata?.name)).toEqual(["web-1"]);

    // Soon after (another event): no second cordon, no eviction storm; still held and named.
    clock.advance(10);
    const second = next().round;
    expect(await second.firstToGo([victim, instanceOf("i2")], true)).toEqual(
      new Set([victim.providerID]),
    );
    expect(await second.mayDelete(victim, "shrink")).toBe(false);
    expect((await second.finish([victim]))?.message).toContain("default/web");
    expect(workload.writes).toEqual([
      { verb: "cordon", name: "node-1" },
      { verb: "evict", name: "web-1" },
      { verb: "evict", name: "free-1" },
    ]);

    // At the poll interval the refused eviction is tried again; once the budget allows, it goes.
    clock.advance(100);
    workload.block("web-1", undefined);
    const third = next().round;
    expect(await third.mayDelete(victim, "shrink")).toBe(true);
    third.deleted(victim);
    expect(await third.finish([])).toBeUndefined();
    expect(workload.podsOn("node-1")).toEqual([]);
    expect(memory.drains.size).toBe(0);
    expect(workload.writes.filter((w) => w.verb === "cordon")).toHaveLength(1);
  });

  it("waits for a terminating Pod within its grace period, not after it", async () => {
    const { workload, next, clock } = rounds();
    workload.addNode(victim.providerID, "node-1");
    const until = new Date(clock.now() + 30_000).toISOString();
    workload.addPod(
      "node-1",
      pod("stopping", { metadata: { deletionTimestamp: until as unknown as Date } }),
    );
    expect(await next().round.mayDelete(victim, "replace")).toBe(false);
    expect(workload.writes.filter((w) => w.verb === "evict")).toEqual([]);
    clock.advance(30_000);
    expect(await next().round.mayDelete(victim, "replace")).toBe(true);
  });

  it("terminates after nodeDrainTimeoutSeconds with a Warning naming the budget", async () => {
    const { workload, next, clock } = rounds({ nodeDrainTimeoutSeconds: 30 });
    workload.addNode(victim.providerID, "node-1");
    workload.addPod("node-1", pod("web-1"));
    workload.block("web-1", "web");
    expect(await next().round.mayDelete(victim, "shrink")).toBe(false);
    clock.advance(29_000);
    expect(await next().round.mayDelete(victim, "shrink")).toBe(false);
    clock.advance(1_000);
    const { round, events } = next();
    expect(await round.mayDelete(victim, "shrink")).toBe(true);
    const warning = events.find((e) => e.type === "Warning");
    expect(warning?.reason).toBe("NodeDrainTimedOut");
    expect(warning?.message).toContain("PodDisruptionBudget default/web");
    const condition = await round.finish([victim]);
    expect(condition?.reason).toBe("NodeDrainTimedOut");
    expect(condition?.message).toContain("nodeDrainTimeoutSeconds (30s)");
  });

  it("holds the termination while the workload cluster is unreachable, whatever the timeout", async () => {
    const { workload, next, clock } = rounds({ nodeDrainTimeoutSeconds: 30 });
    workload.addNode(victim.providerID, "node-1");
    workload.addPod("node-1", pod("web-1"));
    workload.unreachable = true;
    const first = next().round;
    expect(await first.mayDelete(victim, "shrink")).toBe(false);
    const held = await first.finish([victim]);
    expect(held).toMatchObject({ status: "True", reason: "DrainHeld" });
    expect(held?.message).toContain("WorkloadClusterUnreachable");
    expect(held?.message).toContain("not terminated until its Node is drained");
    clock.advance(120_000);
    expect(await next().round.mayDelete(victim, "shrink")).toBe(false);
    workload.unreachable = false;
    expect(await next().round.mayDelete(victim, "shrink")).toBe(true);
    expect(workload.podsOn("node-1")).toEqual([]);
  });

  it("uncordons the Node of an instance that no longer leaves", async () => {
    const { workload, next, memory } = rounds();
    workload.addNode(victim.providerID, "node-1");
    workload.addPod("node-1", pod("web-1"));
    workload.block("web-1", "web");
    expect(await next().round.mayDelete(victim, "shrink")).toBe(false);
    const { round, events } = next();
    expect(await round.finish([victim])).toBeUndefined();
    expect(workload.cordoned("node-1")).toBe(false);
    expect(events.map((e) => e.reason)).toEqual(["NodeUncordoned"]);
    expect(memory.drains.size).toBe(0);
  });

  it("does nothing when disabled (MachinePool Machines: core drains)", async () => {
    const workload = fakeWorkloadDrain();
    workload.addNode(victim.providerID, "node-1");
    const test = fakeScope({ driver: fakeCloud().driver, drainApi: workload.api });
    const round = new DrainRound(test.scope, false);
    expect(await round.mayDelete(victim, "shrink")).toBe(true);
    expect(await round.finish([victim])).toBeUndefined();
    expect(workload.writes).toEqual([]);
  });
});

describe("the drain's pure rules", () => {
  it("takes only a valid budget name from a refusal", () => {
    const cause = (message: string) => [{ reason: "DisruptionBudget", message }];
    expect(
      budgetOfRefusal(cause("The disruption budget web needs 1 healthy pods and has 1 currently")),
    ).toBe("web");
    expect(
      budgetOfRefusal(cause("The disruption budget web is still being processed by the server.")),
    ).toBe("web");
    expect(budgetOfRefusal(cause("The disruption budget $(rm -rf) needs 1"))).toBeUndefined();
    expect(
      budgetOfRefusal([{ reason: "Other", message: "The disruption budget web needs 1" }]),
    ).toBeUndefined();
    expect(budgetOfRefusal(undefined)).toBeUndefined();
  });

  it("reads nodeDrainTimeoutSeconds as core does: unset or invalid waits forever", () => {
    const mp = (value: unknown) => ({
      spec: { template: { spec: { deletion: { nodeDrainTimeoutSeconds: value } } } },
    });
    expect(nodeDrainTimeoutMs(mp(90))).toBe(90_000);
    expect(nodeDrainTimeoutMs(mp(0))).toBe(0);
    expect(nodeDrainTimeoutMs(mp(-1))).toBe(0);
    expect(nodeDrainTimeoutMs(mp("90"))).toBe(0);
    expect(nodeDrainTimeoutMs(undefined)).toBe(0);
  });

  it("classifies Pods as CAPI's drain does", () => {
    expect(podDrainAction(pod("a"), 0)).toBe("evict");
    expect(podDrainAction(pod("a", { status: { phase: "Failed" } }), 0)).toBe("ignore");
    expect(podDrainAction(pod("a", { status: { phase: "Pending" } }), 0)).toBe("evict");
  });
});
