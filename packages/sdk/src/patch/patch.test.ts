import { ApiException, KubeConfig } from "@kubernetes/client-node";
import { describe, expect, expectTypeOf, it } from "vitest";
import { clusterv1beta2 } from "../api/index.js";
import { setCondition } from "../conditions/index.js";
import { KubeClient } from "../runtime/client.js";
import { ConflictError, ConnectionError, NotFoundError } from "../runtime/errors.js";
import { NodeResource, SecretResource } from "../runtime/resource.js";
import {
  createMergePatch,
  httpStatusOf,
  normalizeOmitEmpty,
  PatchHelper,
  type PatchTransport,
  type ResourceRef,
  resourceOf,
} from "./index.js";
import { toTransport } from "./transport.js";

interface Pool {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace?: string;
    generation?: number;
    resourceVersion?: string;
    finalizers?: string[];
  };
  spec?: { providerIDList?: string[]; providerID?: string; extra?: Record<string, string> };
  status?: {
    ready?: boolean;
    replicas?: number;
    observedGeneration?: number;
    conditions?: Array<{
      type: string;
      status: string;
      reason: string;
      message: string;
      lastTransitionTime: string;
    }>;
  };
}

function pool(): Pool {
  return {
    apiVersion: "infrastructure.example.com/v1beta2",
    kind: "FooMachinePool",
    metadata: { name: "p", namespace: "ns", generation: 2, resourceVersion: "10" },
    spec: { providerIDList: ["foo://a"] },
    status: {
      replicas: 1,
      conditions: [
        {
          type: "Ready",
          status: "False",
          reason: "NotReady",
          message: "",
          lastTransitionTime: "2024-01-01T00:00:00Z",
        },
      ],
    },
  };
}

describe("normalizeOmitEmpty", () => {
  it("treats missing, undefined, null, [] and {} alike, recursively", () => {
    expect(
      normalizeOmitEmpty({
        a: undefined,
        b: null,
        c: [],
        d: {},
        e: { f: [] },
        g: 0,
        h: "",
        i: false,
      }),
    ).toEqual({
      g: 0,
      h: "",
      i: false,
    });
    expect(normalizeOmitEmpty({ list: [{}, { a: [] }, 1] })).toEqual({ list: [{}, {}, 1] });
  });
});

describe("createMergePatch (RFC 7386)", () => {
  it("sets changed values, nulls removed keys, replaces arrays", () => {
    expect(
      createMergePatch({ a: 1, b: [1, 2], c: { d: 1, e: 2 } }, { a: 2, b: [2], c: { d: 1 } }),
    ).toEqual({
      a: 2,
      b: [2],
      c: { e: null },
    });
  });

  it("empties a vanished object instead of deleting it", () => {
    expect(createMergePatch({ spec: { a: 1, n: { b: 2 } } }, {})).toEqual({
      spec: { a: null, n: { b: null } },
    });
  });

  it("is empty when nothing differs", () => {
    expect(createMergePatch({ a: { b: [1] } }, { a: { b: [1] } })).toEqual({});
  });
});

describe("PatchHelper.changes", () => {
  it("no change, and nil -> [] / undefined / {} are no change (Go omitempty)", () => {
    const obj = pool();
    const helper = PatchHelper.snapshot(obj);
    expect(helper.hasChanges(obj)).toBe(false);
    obj.spec = { ...obj.spec, extra: {} };
    (obj.status as Record<string, unknown>).instances = [];
    (obj.metadata as Record<string, unknown>).labels = undefined;
    expect(helper.hasChanges(obj)).toBe(false);
  });

  it("server-owned metadata (resourceVersion, generation, managedFields) is never diffed", () => {
    const obj = pool();
    const helper = PatchHelper.snapshot(obj);
    obj.metadata.resourceVersion = "11";
    obj.metadata.generation = 3;
    (obj.metadata as Record<string, unknown>).managedFields = [{ manager: "x" }];
    expect(helper.hasChanges(obj)).toBe(false);
  });

  it("spec only: a merge patch of metadata+spec, nothing for status", () => {
    const obj = pool();
    const helper = PatchHelper.snapshot(obj);
    obj.spec = { providerIDList: ["foo://a", "foo://b"] };
    obj.metadata.finalizers = ["foomachinepool.infrastructure.example.com"];
    const c = helper.changes(obj);
    expect(c.spec).toEqual({
      metadata: { finalizers: ["foomachinepool.infrastructure.example.com"] },
      spec: { providerIDList: ["foo://a", "foo://b"] },
    });
    expect(c.status).toEqual({});
    expect(c.conditions).toEqual([]);
  });

  it("status only: conditions are left out of the status patch", () => {
    const obj = pool();
    const helper = PatchHelper.snapshot(obj);
    (obj.status as NonNullable<Pool["status"]>).replicas = 3;
    (obj.status as NonNullable<Pool["status"]>).ready = true;
    const c = helper.changes(obj);
    expect(c.spec).toEqual({});
    expect(c.status).toEqual({ status: { replicas: 3, ready: true } });
    expect(c.conditions).toEqual([]);
  });

  it("conditions only: per-type operations, empty spec and status patches", () => {
    const obj = pool();
    const helper = PatchHelper.snapshot(obj);
    setCondition(
      obj,
      { type: "Ready", status: "True", reason: "Ready" },
      { clock: { now: () => Date.parse("2024-02-02T00:00:00Z") } },
    );
    setCondition(obj, { type: "Paused", status: "False", reason: "NotPaused" });
    const c = helper.changes(obj);
    expect(c.spec).toEqual({});
    expect(c.status).toEqual({});
    expect(c.conditions.map((op) => [op.op, "after" in op ? op.after.type : ""])).toEqual([
      ["change", "Ready"],
      ["add", "Paused"],
    ]);
  });

  it("statusObservedGeneration is only added when something else changed", () => {
    const obj = pool();
    const helper = PatchHelper.snapshot(obj);
    expect(helper.changes(obj, { statusObservedGeneration: true }).status).toEqual({});
    (obj.status as NonNullable<Pool["status"]>).replicas = 2;
    expect(helper.changes(obj, { statusObservedGeneration: true }).status).toEqual({
      status: { replicas: 2, observedGeneration: 2 },
    });
  });

  it("v1beta1 objects: v1beta2 conditions are under status.v1beta2 and excluded from the status patch", () => {
    const mp = {
      apiVersion: "cluster.x-k8s.io/v1beta1",
      kind: "MachinePool",
      metadata: { name: "mp", namespace: "ns", generation: 1 },
      status: {
        conditions: [{ type: "Ready", status: "True", lastTransitionTime: "2024-01-01T00:00:00Z" }],
      },
    };
    const helper = PatchHelper.snapshot(mp);
    setCondition(mp, { type: "Paused", status: "False", reason: "NotPaused" });
    const c = helper.changes(mp);
    expect(c.status).toEqual({});
    expect(c.conditions).toHaveLength(1);
    expect(c.v1beta1Conditions).toEqual([]);
  });
});

describe("resourceOf", () => {
  it("derives group, version and the CRD plural", () => {
    expect(resourceOf({ apiVersion: "cluster.x-k8s.io/v1beta2", kind: "MachinePool" })).toEqual({
      group: "cluster.x-k8s.io",
      version: "v1beta2",
      plural: "machinepools",
    });
    expect(() => resourceOf({ metadata: { name: "x" } })).toThrow(/pass \{ resource/);
  });
});

describe("httpStatusOf", () => {
  const request = { method: "PATCH", path: "/api/v1/namespaces/ns/secrets/s" };
  it("reads the runtime's typed errors by their HTTP code, not their Status object", () => {
    expect(httpStatusOf(new ConflictError(409, { reason: "Conflict", code: 409 }, request))).toBe(
      409,
    );
    expect(httpStatusOf(new NotFoundError(404, { reason: "NotFound" }, request))).toBe(404);
    // No response at all: there is no HTTP status to report.
    expect(httpStatusOf(new ConnectionError(0, { reason: "ConnectionError" }, request))).toBe(
      undefined,
    );
  });

  it("accepts any error with a numeric status or code (custom transports, client-node)", () => {
    expect(httpStatusOf({ status: 409 })).toBe(409);
    expect(httpStatusOf(Object.assign(new Error("gone"), { code: 404 }))).toBe(404);
    expect(httpStatusOf(new ApiException(409, "conflict", "{}", {}))).toBe(409);
    expect(httpStatusOf({ status: "409" })).toBe(undefined);
    expect(httpStatusOf(new Error("boom"))).toBe(undefined);
    expect(httpStatusOf(null)).toBe(undefined);
  });
});

describe("what the patch helper writes through", () => {
  function kubeConfigFor(server: string): KubeConfig {
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromOptions({
      clusters: [{ name: "c", server, skipTLSVerify: true }],
      users: [{ name: "u" }],
      contexts: [{ name: "x", cluster: "c", user: "u" }],
      currentContext: "x",
    });
    return kubeConfig;
  }

  it("makes one transport per KubeConfig and per KubeClient; a custom transport is used as is", () => {
    const kubeConfig = kubeConfigFor("http://127.0.0.1:1");
    expect(toTransport(kubeConfig)).toBe(toTransport(kubeConfig));
    expect(toTransport(kubeConfig)).not.toBe(toTransport(kubeConfigFor("http://127.0.0.1:1")));
    const client = new KubeClient(kubeConfig);
    expect(toTransport(client)).toBe(toTransport(client));
    const custom: PatchTransport = {
      get: async () => ({}),
      patch: async () => ({}),
    };
    expect(toTransport(custom)).toBe(custom);
  });

  it("refuses a KubeConfig without a current cluster, saying what to do", () => {
    expect(() => toTransport(new KubeConfig())).toThrow(/no current cluster; load one/);
  });

  it("takes the runtime's descriptors and generated resource metadata as the resource", () => {
    expectTypeOf(SecretResource).toExtend<ResourceRef>();
    expectTypeOf(NodeResource).toExtend<ResourceRef>();
    expectTypeOf(clusterv1beta2.MachinePoolResource).toExtend<ResourceRef>();
    expectTypeOf({ group: "", version: "v1", plural: "configmaps" }).toExtend<ResourceRef>();
    expectTypeOf({ group: "", version: "v1" }).not.toExtend<ResourceRef>();
  });
});
