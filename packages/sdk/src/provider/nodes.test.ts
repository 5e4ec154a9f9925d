// The pure parts of the kit's Node management: what a MachinePool asks of its Nodes, what it may not
// own, the patch one Node needs (only what the kit applied is ever removed) and minReadySeconds.
import type { V1Node } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import type { MachinePool } from "../api/cluster.x-k8s.io/v1beta2.js";
import { isSyncedNodeLabel, nodeLabelRefusal, nodeTaintRefusal } from "./node-metadata-rules.js";
import {
  availableInMs,
  NodeMetadataAnnotations,
  type PoolNode,
  planNodeMetadata,
  poolNodeOf,
  readNodeMetadata,
} from "./nodes.js";

const UNINITIALIZED = { key: "node.cluster.x-k8s.io/uninitialized", effect: "NoSchedule" } as const;

function machinePool(
  template: { labels?: Record<string, string>; taints?: unknown[] } = {},
  annotations?: Record<string, string>,
): MachinePool {
  return {
    apiVersion: "cluster.x-k8s.io/v1beta2",
    kind: "MachinePool",
    metadata: { namespace: "default", name: "mp", ...(annotations ? { annotations } : {}) },
    spec: {
      clusterName: "c1",
      template: {
        ...(template.labels ? { metadata: { labels: template.labels } } : {}),
        spec: { clusterName: "c1", ...(template.taints ? { taints: template.taints } : {}) },
      },
    },
  } as unknown as MachinePool;
}

function node(fields: Partial<PoolNode> = {}): PoolNode {
  return {
    name: "n1",
    providerID: "fake:///i1",
    resourceVersion: "7",
    labels: {},
    annotations: {},
    taints: [],
    readySince: 0,
    ...fields,
  };
}

describe("isSyncedNodeLabel and the refusals", () => {
  it("syncs core's three domains and nothing else", () => {
    expect(isSyncedNodeLabel("node-role.kubernetes.io/worker")).toBe(true);
    expect(isSyncedNodeLabel("node-restriction.kubernetes.io/pool")).toBe(true);
    expect(isSyncedNodeLabel("team.node-restriction.kubernetes.io/pool")).toBe(true);
    expect(isSyncedNodeLabel("node.cluster.x-k8s.io/gpu")).toBe(true);
    expect(isSyncedNodeLabel("team.node.cluster.x-k8s.io/gpu")).toBe(true);
    // A subdomain of node-role.kubernetes.io is not core's (its rule is the exact domain).
    expect(isSyncedNodeLabel("x.node-role.kubernetes.io/worker")).toBe(false);
    expect(isSyncedNodeLabel("example.com/team")).toBe(false);
    expect(isSyncedNodeLabel("cluster.x-k8s.io/cluster-name")).toBe(false);
  });

  it("refuses the Kubernetes domains the kubelet owns, and invalid synced labels", () => {
    expect(nodeLabelRefusal("kubernetes.io/hostname", "a")).toMatch(/kubelet/);
    expect(nodeLabelRefusal("topology.kubernetes.io/zone", "a")).toMatch(/kubelet/);
    expect(nodeLabelRefusal("node.k8s.io/x", "a")).toMatch(/kubelet/);
    expect(nodeLabelRefusal("node-role.kubernetes.io/worker", "")).toBeUndefined();
    expect(nodeLabelRefusal("node-role.kubernetes.io/worker", "not valid!")).toMatch(/value/);
    expect(nodeLabelRefusal("example.com/team", "a")).toBeUndefined();
    // cluster.x-k8s.io is not a subdomain of k8s.io.
    expect(nodeLabelRefusal("cluster.x-k8s.io/cluster-name", "a")).toBeUndefined();
  });

  it("refuses the taints core's webhook and the cluster-autoscaler keep to themselves", () => {
    const refused = (key: string, effect = "NoSchedule") => nodeTaintRefusal({ key, effect });
    expect(refused("node.cluster.x-k8s.io/uninitialized")).toMatch(/core/);
    expect(refused("node.cluster.x-k8s.io/outdated-revision")).toMatch(/core/);
    expect(refused("node.kubernetes.io/not-ready")).toMatch(/node lifecycle/);
    expect(refused("node.kubernetes.io/out-of-service")).toBeUndefined();
    expect(refused("node.cloudprovider.kubernetes.io/uninitialized")).toMatch(/cloud/);
    expect(refused("node-role.kubernetes.io/master")).toMatch(/deprecated/);
    expect(refused("ToBeDeletedByClusterAutoscaler")).toMatch(/autoscaler/);
    expect(refused("dedicated", "Sometimes")).toMatch(/effect/);
    expect(refused("bad key!")).toMatch(/qualified name/);
    expect(nodeTaintRefusal({ key: "gpu", value: "x".repeat(64), effect: "NoExecute" })).toMatch(
      /value/,
    );
    expect(refused("node-role.kubernetes.io/control-plane")).toBeUndefined();
  });
});

describe("readNodeMetadata", () => {
  it("takes the synced labels, ignores the pool's own and names the refused ones", () => {
    const intent = readNodeMetadata(
      machinePool({
        labels: {
          "node-role.kubernetes.io/worker": "",
          "example.com/team": "a",
          "kubernetes.io/hostname": "x",
        },
      }),
      { labels: true },
    );
    expect([...intent.labels]).toEqual([["node-role.kubernetes.io/worker", ""]]);
    expect(intent.refused).toEqual([expect.stringMatching(/^label kubernetes\.io\/hostname: /)]);
    expect(intent.requested).toBe(true);
  });

  it("leaves the labels to core with MachinePool Machines, but still names a refused one", () => {
    const intent = readNodeMetadata(
      machinePool({ labels: { "node-role.kubernetes.io/worker": "", "kubernetes.io/os": "x" } }),
      { labels: false },
    );
    expect(intent.labels.size).toBe(0);
    expect(intent.refused).toHaveLength(1);
  });

  it("asks for nothing without taints or Node labels", () => {
    const intent = readNodeMetadata(machinePool({ labels: { "example.com/team": "a" } }), {
      labels: true,
    });
    expect(intent).toEqual({ labels: new Map(), taints: [], refused: [], requested: false });
  });

  it("reads the taints of the field and of the annotation; the field wins on key and effect", () => {
    const intent = readNodeMetadata(
      machinePool(
        {
          taints: [
            { key: "gpu", value: "field", effect: "NoSchedule", propagation: "OnInitialization" },
          ],
        },
        {
          [NodeMetadataAnnotations.NodeTaints]: JSON.stringify([
            { key: "gpu", value: "annotation", effect: "NoSchedule" },
            { key: "dedicated", effect: "NoExecute" },
          ]),
        },
      ),
      { labels: true },
    );
    expect(intent.taints).toEqual([
      { key: "dedicated", effect: "NoExecute", propagation: "Always" },
      { key: "gpu", value: "field", effect: "NoSchedule", propagation: "OnInitialization" },
    ]);
    expect(intent.refused).toEqual([]);
  });

  it("refuses a taint it may not own and an annotation it cannot read, naming each", () => {
    const forbidden = readNodeMetadata(
      machinePool(
        {},
        {
          [NodeMetadataAnnotations.NodeTaints]: JSON.stringify([
            { key: "node.kubernetes.io/unschedulable", effect: "NoSchedule" },
            { key: "gpu", effect: "NoSchedule", propagation: "Sometimes" },
            { key: "ok", effect: "NoSchedule" },
          ]),
        },
      ),
      { labels: true },
    );
    expect(forbidden.taints.map((t) => t.key)).toEqual(["ok"]);
    expect(forbidden.refused).toEqual([
      expect.stringMatching(/^taint node\.kubernetes\.io\/unschedulable:NoSchedule \(annotation/),
      expect.stringMatching(/^taint gpu:NoSchedule .*propagation/),
    ]);
    for (const raw of ["{not json", '{"key":"a"}', '[{"key":1,"effect":"NoSchedule"}]']) {
      const broken = readNodeMetadata(
        machinePool({}, { [NodeMetadataAnnotations.NodeTaints]: raw }),
        { labels: true },
      );
      expect(broken.taints).toEqual([]);
      expect(broken.refused).toEqual([
        expect.stringMatching(/^annotation capi-ts\.io\/node-taints: /),
      ]);
    }
  });

  it("keeps messages bounded whatever the annotation holds", () => {
    const intent = readNodeMetadata(
      machinePool({}, { [NodeMetadataAnnotations.NodeTaints]: "x".repeat(100_000) }),
      { labels: true },
    );
    expect(intent.refused.join("").length).toBeLessThan(200);
    const long = readNodeMetadata(
      machinePool(
        {},
        {
          [NodeMetadataAnnotations.NodeTaints]: JSON.stringify([
            { key: "k".repeat(5_000), effect: "NoSchedule" },
          ]),
        },
      ),
      { labels: true },
    );
    expect(long.refused[0]?.length).toBeLessThan(300);
  });
});

describe("planNodeMetadata", () => {
  const pool = (labels: Record<string, string>, taints: unknown[] = []) =>
    readNodeMetadata(machinePool({ labels, taints }), { labels: true });

  it("applies labels at once and waits with the taints while core's uninitialized taint is on", () => {
    const intent = pool({ "node-role.kubernetes.io/worker": "" }, [
      { key: "gpu", effect: "NoSchedule", propagation: "Always" },
    ]);
    const plan = planNodeMetadata(node({ taints: [UNINITIALIZED] }), intent, {
      manageLabels: true,
    });
    expect(plan.waiting).toBe(true);
    expect(plan.patch).toEqual({
      labels: { "node-role.kubernetes.io/worker": "" },
      annotations: { [NodeMetadataAnnotations.LabelsFromPool]: "node-role.kubernetes.io/worker" },
    });
  });

  it("adds the taints once initialized, keeping everyone else's, and records them", () => {
    const intent = pool({}, [
      { key: "gpu", value: "a100", effect: "NoSchedule", propagation: "Always" },
      { key: "init", effect: "NoExecute", propagation: "OnInitialization" },
    ]);
    const theirs = { key: "example.com/theirs", effect: "NoSchedule" } as const;
    const plan = planNodeMetadata(node({ taints: [theirs] }), intent, { manageLabels: true });
    expect(plan).toEqual({
      waiting: false,
      patch: {
        annotations: { [NodeMetadataAnnotations.TaintsFromPool]: "gpu:NoSchedule" },
        taints: [
          theirs,
          { key: "gpu", value: "a100", effect: "NoSchedule" },
          { key: "init", effect: "NoExecute" },
        ],
      },
    });
  });

  it("writes nothing to a Node that matches", () => {
    const intent = pool({ "node-role.kubernetes.io/worker": "" }, [
      { key: "gpu", effect: "NoSchedule", propagation: "Always" },
    ]);
    const synced = node({
      labels: { "node-role.kubernetes.io/worker": "" },
      annotations: {
        [NodeMetadataAnnotations.LabelsFromPool]: "node-role.kubernetes.io/worker",
        [NodeMetadataAnnotations.TaintsFromPool]: "gpu:NoSchedule",
      },
      taints: [{ key: "gpu", effect: "NoSchedule" }],
    });
    expect(planNodeMetadata(synced, intent, { manageLabels: true })).toEqual({
      patch: undefined,
      waiting: false,
    });
  });

  it("marks a Node of a pool without taints initialized once, then leaves it alone", () => {
    const first = planNodeMetadata(node(), pool({}), { manageLabels: true });
    expect(first.patch).toEqual({ annotations: { [NodeMetadataAnnotations.TaintsFromPool]: "" } });
    const marked = node({ annotations: { [NodeMetadataAnnotations.TaintsFromPool]: "" } });
    expect(planNodeMetadata(marked, pool({}), { manageLabels: true }).patch).toBeUndefined();
  });

  it("removes only what the kit applied and the pool no longer asks for", () => {
    const applied = node({
      labels: { "node-role.kubernetes.io/worker": "", "node-role.kubernetes.io/theirs": "" },
      annotations: {
        [NodeMetadataAnnotations.LabelsFromPool]: "node-role.kubernetes.io/worker",
        [NodeMetadataAnnotations.TaintsFromPool]: "gpu:NoSchedule",
      },
      taints: [
        { key: "gpu", effect: "NoSchedule" },
        { key: "theirs", effect: "NoSchedule" },
      ],
    });
    const plan = planNodeMetadata(applied, pool({}), { manageLabels: true });
    expect(plan.patch).toEqual({
      labels: { "node-role.kubernetes.io/worker": null },
      annotations: {
        [NodeMetadataAnnotations.LabelsFromPool]: null,
        [NodeMetadataAnnotations.TaintsFromPool]: "",
      },
      taints: [{ key: "theirs", effect: "NoSchedule" }],
    });
  });

  it("adds an OnInitialization taint only to a Node the kit never initialized, and lets it go", () => {
    const intent = pool({}, [
      { key: "init", effect: "NoSchedule", propagation: "OnInitialization" },
    ]);
    const initialized = node({
      annotations: { [NodeMetadataAnnotations.TaintsFromPool]: "" },
    });
    expect(planNodeMetadata(initialized, intent, { manageLabels: true }).patch).toBeUndefined();
    // Always → OnInitialization: the kit stops owning the taint but does not remove it.
    const owned = node({
      annotations: { [NodeMetadataAnnotations.TaintsFromPool]: "init:NoSchedule" },
      taints: [{ key: "init", effect: "NoSchedule" }],
    });
    expect(planNodeMetadata(owned, intent, { manageLabels: true }).patch).toEqual({
      annotations: { [NodeMetadataAnnotations.TaintsFromPool]: "" },
    });
  });

  it("puts back an Always taint someone removed and corrects its value", () => {
    const intent = pool({}, [
      { key: "gpu", value: "b", effect: "NoSchedule", propagation: "Always" },
    ]);
    const drifted = node({
      annotations: { [NodeMetadataAnnotations.TaintsFromPool]: "gpu:NoSchedule" },
      taints: [{ key: "gpu", value: "a", effect: "NoSchedule" }],
    });
    expect(planNodeMetadata(drifted, intent, { manageLabels: true }).patch).toEqual({
      taints: [{ key: "gpu", value: "b", effect: "NoSchedule" }],
    });
  });

  it("never removes what a forged record lists outside what the kit may own", () => {
    const forged = node({
      labels: { "node-role.kubernetes.io/worker": "" },
      annotations: {
        [NodeMetadataAnnotations.LabelsFromPool]: "kubernetes.io/hostname,example.com/x",
        [NodeMetadataAnnotations.TaintsFromPool]: "node.kubernetes.io/unschedulable:NoSchedule",
      },
      taints: [{ key: "node.kubernetes.io/unschedulable", effect: "NoSchedule" }],
    });
    const plan = planNodeMetadata(forged, pool({}), { manageLabels: true });
    expect(plan.patch).toEqual({
      annotations: {
        [NodeMetadataAnnotations.LabelsFromPool]: null,
        [NodeMetadataAnnotations.TaintsFromPool]: "",
      },
    });
  });

  it("leaves labels alone when core syncs them (MachinePool Machines)", () => {
    const intent = readNodeMetadata(
      machinePool({ labels: { "node-role.kubernetes.io/worker": "" } }),
      { labels: false },
    );
    const plan = planNodeMetadata(
      node({ annotations: { [NodeMetadataAnnotations.TaintsFromPool]: "" } }),
      intent,
      { manageLabels: false },
    );
    expect(plan.patch).toBeUndefined();
  });
});

describe("poolNodeOf and availableInMs", () => {
  it("copies only the synced labels, the kit's annotations and the Ready time", () => {
    const v1: V1Node = {
      metadata: {
        name: "n1",
        resourceVersion: "9",
        labels: { "kubernetes.io/hostname": "n1", "node-role.kubernetes.io/worker": "" },
        annotations: { other: "x".repeat(1000), [NodeMetadataAnnotations.TaintsFromPool]: "" },
      },
      spec: { providerID: "fake:///i1", taints: [{ key: "a", effect: "NoSchedule", value: "" }] },
      status: {
        conditions: [
          {
            type: "Ready",
            status: "True",
            lastTransitionTime: "2026-01-01T00:00:10Z" as unknown as Date,
          },
        ],
      },
    };
    expect(poolNodeOf(v1)).toEqual({
      name: "n1",
      providerID: "fake:///i1",
      resourceVersion: "9",
      labels: { "node-role.kubernetes.io/worker": "" },
      annotations: { [NodeMetadataAnnotations.TaintsFromPool]: "" },
      taints: [{ key: "a", effect: "NoSchedule" }],
      readySince: Date.parse("2026-01-01T00:00:10Z"),
    });
    const notReady = { ...v1, status: { conditions: [{ type: "Ready", status: "False" }] } };
    expect(poolNodeOf(notReady).readySince).toBeUndefined();
  });

  it("counts a Node available after minReadySeconds, never later under clock skew", () => {
    expect(availableInMs(undefined, 5_000, 10_000)).toBeUndefined();
    expect(availableInMs(10_000, 0, 10_000)).toBe(0);
    expect(availableInMs(10_000, 5_000, 12_000)).toBe(3_000);
    expect(availableInMs(10_000, 5_000, 15_000)).toBe(0);
    expect(availableInMs(20_000, 5_000, 10_000)).toBe(5_000);
  });
});
