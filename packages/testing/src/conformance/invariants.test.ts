import { describe, expect, it } from "vitest";
import { type ConformancePoolObject, checkPoolObject, InvariantMonitor } from "./invariants.js";

const pool = (over: Partial<ConformancePoolObject> = {}): ConformancePoolObject => ({
  apiVersion: "infrastructure.cluster.x-k8s.io/v1beta2",
  kind: "FooMachinePool",
  metadata: { namespace: "default", name: "p", uid: "u1" },
  ...over,
});

const checks = (p: ConformancePoolObject) => checkPoolObject(p).map((e) => e.message);

describe("conformance invariants on one stored pool", () => {
  it("accepts a sorted, unique list with agreeing ready fields", () => {
    expect(
      checks(
        pool({
          spec: { providerIDList: ["fake:///a/1", "fake:///b/2"] },
          status: { ready: true, initialization: { provisioned: true }, replicas: 2 },
        }),
      ),
    ).toEqual([]);
  });

  it("names each broken invariant", () => {
    expect(checks(pool({ spec: { providerIDList: ["b", "a"] } }))).toEqual([
      '[status.providerIDList] providerIDList must be sorted: got ["b","a"] on default/p',
    ]);
    expect(checks(pool({ spec: { providerIDList: ["a", "a"] } }))[0]).toMatch(
      /^\[status\.providerIDList\] providerIDList must not repeat an ID/,
    );
    expect(
      checks(pool({ status: { ready: true, initialization: { provisioned: false } } }))[0],
    ).toMatch(/^\[status\.readyAndProvisionedAgree\]/);
    expect(checks(pool({ status: { failureReason: "x" } }))[0]).toMatch(
      /^\[status\.noFailureFields\]/,
    );
    expect(
      checks(
        pool({
          metadata: {
            name: "p",
            namespace: "default",
            ownerReferences: [
              { apiVersion: "v1", kind: "ConfigMap", name: "c", uid: "x", controller: true },
            ],
          },
        }),
      )[0],
    ).toMatch(
      /^\[ownership\.noForeignController\] only the MachinePool may be the controller owner: got ConfigMap c/,
    );
  });
});

describe("InvariantMonitor", () => {
  it("records provisioned going back to false, per object UID", () => {
    const monitor = new InvariantMonitor();
    monitor.observe(pool({ status: { ready: true, initialization: { provisioned: true } } }));
    monitor.observe(pool({ metadata: { name: "q", namespace: "default", uid: "u2" }, status: {} }));
    expect(() => monitor.assertClean()).not.toThrow();
    monitor.observe(pool({ status: { ready: false, initialization: { provisioned: false } } }));
    expect(() => monitor.assertClean()).toThrow(/^\[status\.provisionedSticky\] status\.ready/);
  });

  it("remembers the first finalizers seen", () => {
    const monitor = new InvariantMonitor();
    monitor.observe(pool());
    expect(monitor.finalizersSeen("u1")).toBeUndefined();
    monitor.observe(
      pool({ metadata: { name: "p", namespace: "default", uid: "u1", finalizers: ["f"] } }),
    );
    expect(monitor.finalizersSeen("u1")).toEqual(["f"]);
  });
});
