import { describe, expect, it } from "vitest";
import { StrategicMergePatchError, strategicMergePatch } from "./index.js";

const node = () => ({
  apiVersion: "v1",
  kind: "Node",
  metadata: {
    name: "n1",
    labels: { a: "1", b: "2" },
    finalizers: ["x"],
    ownerReferences: [{ apiVersion: "v1", kind: "Thing", name: "t", uid: "u1" }],
  },
  spec: { podCIDRs: ["10.0.0.0/24"], taints: [{ key: "k", effect: "NoSchedule" }] },
  status: {
    conditions: [
      { type: "Ready", status: "True", reason: "KubeletReady" },
      { type: "MemoryPressure", status: "False" },
    ],
    addresses: [
      { type: "InternalIP", address: "10.0.0.1" },
      { type: "Hostname", address: "n1" },
    ],
  },
});

function statusOf(fn: () => unknown): number {
  try {
    fn();
  } catch (error) {
    if (error instanceof StrategicMergePatchError) return error.status;
    throw error;
  }
  throw new Error("expected a StrategicMergePatchError");
}

describe("strategicMergePatch", () => {
  it("merges Node conditions and addresses by type, ordered as kube-apiserver 1.35 orders them", () => {
    const out = strategicMergePatch("Node", node(), {
      status: {
        conditions: [
          { type: "Ready", status: "False" },
          { type: "DiskPressure", status: "False" },
        ],
        addresses: [{ type: "ExternalIP", address: "1.2.3.4" }],
      },
    }) as ReturnType<typeof node>;
    expect(out.status.conditions).toEqual([
      { type: "Ready", status: "False", reason: "KubeletReady" },
      { type: "DiskPressure", status: "False" },
      { type: "MemoryPressure", status: "False" },
    ]);
    expect(out.status.addresses.map((a) => a.type)).toEqual([
      "ExternalIP",
      "InternalIP",
      "Hostname",
    ]);
  });

  it("keeps the server order when a patch updates an existing item", () => {
    const out = strategicMergePatch("Node", node(), {
      status: { conditions: [{ type: "MemoryPressure", status: "True" }] },
    }) as ReturnType<typeof node>;
    expect(out.status.conditions.map((c) => `${c.type}=${c.status}`)).toEqual([
      "Ready=True",
      "MemoryPressure=True",
    ]);
  });

  it("replaces lists without a merge strategy (Node taints)", () => {
    const out = strategicMergePatch("Node", node(), {
      spec: { taints: [{ key: "other", effect: "NoExecute" }] },
    }) as ReturnType<typeof node>;
    expect(out.spec.taints).toEqual([{ key: "other", effect: "NoExecute" }]);
  });

  it("unions primitive merge lists and deletes from them with $deleteFromPrimitiveList", () => {
    const out = strategicMergePatch("Node", node(), {
      metadata: { finalizers: ["y", "x"], "$deleteFromPrimitiveList/finalizers": ["x"] },
    }) as ReturnType<typeof node>;
    expect(out.metadata.finalizers).toEqual(["y"]);
  });

  it("deletes keyed items with $patch: delete and fields with null", () => {
    const out = strategicMergePatch("Node", node(), {
      metadata: { labels: { a: null }, ownerReferences: [{ uid: "u1", $patch: "delete" }] },
      status: { conditions: [{ type: "MemoryPressure", $patch: "delete" }] },
    }) as ReturnType<typeof node>;
    expect(out.metadata.labels).toEqual({ b: "2" });
    expect(out.metadata.ownerReferences).toEqual([]);
    expect(out.status.conditions.map((c) => c.type)).toEqual(["Ready"]);
  });

  it("replaces a map or a list with $patch: replace", () => {
    const out = strategicMergePatch("Node", node(), {
      metadata: { labels: { c: "3", $patch: "replace" } },
      status: { conditions: [{ type: "Only", status: "True" }, { $patch: "replace" }] },
    }) as ReturnType<typeof node>;
    expect(out.metadata.labels).toEqual({ c: "3" });
    expect(out.status.conditions).toEqual([{ type: "Only", status: "True" }]);
  });

  it("keeps only $retainKeys and orders with $setElementOrder", () => {
    const out = strategicMergePatch("Node", node(), {
      metadata: { labels: { $retainKeys: ["b"] } },
      status: {
        "$setElementOrder/conditions": [{ type: "MemoryPressure" }, { type: "Ready" }],
      },
    }) as ReturnType<typeof node>;
    expect(out.metadata.labels).toEqual({ b: "2" });
    expect(out.status.conditions.map((c) => c.type)).toEqual(["MemoryPressure", "Ready"]);
  });

  it("merges a Secret's data map and ConfigMap fields", () => {
    const out = strategicMergePatch(
      "Secret",
      { metadata: { name: "s" }, data: { a: "YQ==", b: "Yg==" }, type: "Opaque" },
      { data: { b: null, c: "Yw==" } },
    );
    expect(out).toEqual({
      metadata: { name: "s" },
      data: { a: "YQ==", c: "Yw==" },
      type: "Opaque",
    });
  });

  it("refuses custom resources with 415 and malformed patches with 400", () => {
    expect(statusOf(() => strategicMergePatch("MachinePool", {}, {}))).toBe(415);
    expect(statusOf(() => strategicMergePatch("Node", node(), [1]))).toBe(400);
    expect(statusOf(() => strategicMergePatch("Node", node(), { spec: { $bogus: 1 } }))).toBe(400);
    // The server answers a keyed item without its key with a 500 and Go's rendering of the item.
    expect(() =>
      strategicMergePatch("Node", node(), { status: { conditions: [{ status: "x" }] } }),
    ).toThrowError("map: map[status:x] does not contain declared merge key: type");
    expect(
      statusOf(() =>
        strategicMergePatch("Node", node(), { status: { conditions: [{ status: "x" }] } }),
      ),
    ).toBe(500);
  });
});
