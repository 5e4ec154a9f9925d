import { describe, expect, it } from "vitest";
import { IndexedStore } from "./indexed-store.js";

interface Pod {
  name: string;
  node?: string;
  owners: string[];
}

const byNode = (pod: Pod) => (pod.node ? [pod.node] : []);
const byOwner = (pod: Pod) => pod.owners;

describe("IndexedStore", () => {
  it("keeps every index in step when an object is put, replaced and removed", () => {
    const store = new IndexedStore<Pod>("Pod");
    store.addIndexer("node", byNode);
    store.put("ns/a", { name: "a", node: "n1", owners: ["u1"] });
    store.put("ns/b", { name: "b", node: "n1", owners: [] });
    expect(store.byIndex("node", "n1").map((p) => p.name)).toEqual(["a", "b"]);

    store.put("ns/a", { name: "a", node: "n2", owners: ["u1"] });
    expect(store.byIndex("node", "n1").map((p) => p.name)).toEqual(["b"]);
    expect(store.byIndex("node", "n2").map((p) => p.name)).toEqual(["a"]);

    store.remove("ns/b");
    store.remove("ns/missing");
    expect(store.byIndex("node", "n1")).toEqual([]);
    expect(store.size).toBe(1);
    expect(store.get("ns/b")).toBeUndefined();
  });

  it("indexes the objects it already holds when an index is added", () => {
    const store = new IndexedStore<Pod>("Pod");
    store.put("ns/a", { name: "a", owners: ["u1", "u2"] });
    store.put("ns/b", { name: "b", owners: ["u2"] });
    store.addIndexer("owner", byOwner);
    expect(store.byIndex("owner", "u2").map((p) => p.name)).toEqual(["a", "b"]);
    expect(store.byIndex("owner", "u3")).toEqual([]);
  });

  it("takes the same index function twice, and refuses another one under a taken name", () => {
    const store = new IndexedStore<Pod>("Pod");
    store.addIndexer("node", byNode);
    expect(() => store.addIndexer("node", byNode)).not.toThrow();
    expect(() => store.addIndexer("node", (pod) => [pod.name])).toThrow(
      'informer for Pod: an index named "node" already exists with another function',
    );
    expect(() => store.byIndex("zone", "a")).toThrow(
      'informer for Pod: no index named "zone"; add it with addIndexer(name, fn) first',
    );
  });

  it("hands out a copy of its entries, so a caller may remove while iterating", () => {
    const store = new IndexedStore<Pod>("Pod");
    for (const name of ["a", "b", "c"]) store.put(`ns/${name}`, { name, owners: [] });
    for (const [key] of store.entries()) store.remove(key);
    expect(store.size).toBe(0);
  });
});
