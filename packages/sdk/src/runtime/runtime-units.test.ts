import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import {
  AlreadyExistsError,
  ApiError,
  ConflictError,
  errorFromStatus,
  ForbiddenError,
  GoneError,
  InvalidError,
  NotFoundError,
  ServerError,
  TimeoutError,
  TooManyRequestsError,
  UnauthorizedError,
} from "./errors.js";
import { HelpRequested, parseManagerFlags } from "./flags.js";
import { compareResourceVersions, dropManagedFields, indexByOwnerUID } from "./informer-types.js";
import { parseLabelSelector } from "./labels.js";
import { createLogger } from "./logging.js";
import { RuntimeMetrics } from "./metrics.js";
import {
  allPredicates,
  anyPredicate,
  evaluatePredicate,
  generationChanged,
  labelSelectorMatches,
  negatePredicate,
} from "./predicates.js";
import {
  ConfigMapResource,
  LeaseResource,
  NodeResource,
  parseObjectKey,
  resourcePath,
} from "./resource.js";

const request = { method: "GET", path: "/x" };

describe("resourcePath", () => {
  it("addresses core, grouped, namespaced, cluster-scoped and subresource paths", () => {
    expect(resourcePath(ConfigMapResource, { namespace: "ns", name: "a" })).toBe(
      "/api/v1/namespaces/ns/configmaps/a",
    );
    expect(resourcePath(ConfigMapResource, {})).toBe("/api/v1/configmaps");
    expect(resourcePath(LeaseResource, { namespace: "kube-system" })).toBe(
      "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases",
    );
    expect(resourcePath(NodeResource, { name: "n1" }, "status")).toBe("/api/v1/nodes/n1/status");
    expect(resourcePath(ConfigMapResource, { namespace: "a b", name: "x:y" })).toBe(
      "/api/v1/namespaces/a%20b/configmaps/x%3Ay",
    );
  });

  it("explains addressing mistakes", () => {
    expect(() => resourcePath(NodeResource, { namespace: "ns", name: "n" })).toThrow(
      /Node is cluster-scoped/,
    );
    expect(() => resourcePath(ConfigMapResource, { name: "a" })).toThrow(
      /namespaced: pass the namespace/,
    );
    expect(() => resourcePath(ConfigMapResource, { namespace: "ns", name: "" })).toThrow(
      /name is empty/,
    );
    expect(() => resourcePath(ConfigMapResource, { namespace: "ns" }, "status")).toThrow(
      /needs an object name/,
    );
  });
});

describe("errorFromStatus", () => {
  it("maps reasons and codes to typed errors", () => {
    const cases: Array<[number, string | undefined, unknown]> = [
      [404, "NotFound", NotFoundError],
      [409, "AlreadyExists", AlreadyExistsError],
      [409, "Conflict", ConflictError],
      [409, undefined, ConflictError],
      [422, "Invalid", InvalidError],
      [410, "Expired", GoneError],
      [401, "Unauthorized", UnauthorizedError],
      [403, "Forbidden", ForbiddenError],
      [429, "TooManyRequests", TooManyRequestsError],
      [504, "Timeout", TimeoutError],
      [500, "InternalError", ServerError],
      [418, undefined, ApiError],
    ];
    for (const [code, reason, type] of cases) {
      const error = errorFromStatus(code, reason ? { reason, code } : { code }, request);
      expect(error).toBeInstanceOf(type as typeof ApiError);
      expect(error).toBeInstanceOf(ApiError);
      expect(error.code).toBe(code);
    }
  });

  it("keeps field causes and retry-after from the Status", () => {
    const invalid = errorFromStatus(
      422,
      {
        reason: "Invalid",
        details: { causes: [{ field: "spec.size", reason: "FieldValueInvalid" }] },
      },
      request,
    ) as InvalidError;
    expect(invalid.causes).toEqual([{ field: "spec.size", reason: "FieldValueInvalid" }]);
    const throttled = errorFromStatus(
      429,
      { details: { retryAfterSeconds: 3 } },
      request,
    ) as TooManyRequestsError;
    expect(throttled.retryAfterSeconds).toBe(3);
    const header = errorFromStatus(429, {}, request, 9) as TooManyRequestsError;
    expect(header.retryAfterSeconds).toBe(9);
    expect(header.message).toBe("GET /x: 429 Error: no message");
  });
});

describe("label selectors", () => {
  it("parses equality, set and existence requirements", () => {
    const selector = parseLabelSelector("a=1, b!=2, c in (x, y), d notin (z), e, !f");
    expect(selector.matches({ a: "1", c: "x", e: "" })).toBe(true);
    expect(selector.matches({ a: "1", c: "x", e: "", f: "" })).toBe(false);
    expect(selector.matches({ a: "1", b: "2", c: "x", e: "" })).toBe(false);
    expect(selector.matches({ a: "1", c: "q", e: "" })).toBe(false);
    expect(selector.matches({ a: "1", c: "y", d: "z", e: "" })).toBe(false);
    expect(parseLabelSelector("").matches(undefined)).toBe(true);
    expect(
      parseLabelSelector("cluster.x-k8s.io/cluster-name==c1").matches({
        "cluster.x-k8s.io/cluster-name": "c1",
      }),
    ).toBe(true);
  });

  it("rejects malformed selectors", () => {
    expect(() => parseLabelSelector("a b c")).toThrow(/cannot parse "a b c"/);
    expect(() => parseLabelSelector("bad key!=x")).toThrow(/cannot parse|not a valid label key/);
  });
});

describe("predicates", () => {
  const obj = (
    generation: number,
    labels: Record<string, string> = {},
    annotations: Record<string, string> = {},
  ) => ({
    metadata: { name: "x", generation, labels, annotations },
  });

  it("generationChanged drops status-only updates and resyncs", () => {
    const predicate = generationChanged();
    expect(evaluatePredicate(predicate, "update", obj(2), obj(1))).toBe(true);
    expect(evaluatePredicate(predicate, "update", obj(1), obj(1))).toBe(false);
    expect(evaluatePredicate(predicate, "create", obj(1))).toBe(true);
  });

  it("combines with all/any/negate", () => {
    const labelled = labelSelectorMatches("a=1");
    const changed = generationChanged();
    expect(
      evaluatePredicate(allPredicates(labelled, changed), "update", obj(2, { a: "1" }), obj(1)),
    ).toBe(true);
    expect(evaluatePredicate(allPredicates(labelled, changed), "update", obj(2), obj(1))).toBe(
      false,
    );
    expect(evaluatePredicate(anyPredicate(labelled, changed), "update", obj(2), obj(1))).toBe(true);
    expect(evaluatePredicate(negatePredicate(labelled), "create", obj(1, { a: "1" }))).toBe(false);
  });
});

describe("informer helpers", () => {
  it("orders integer resourceVersions and refuses to order opaque ones", () => {
    expect(compareResourceVersions("9", "10")).toBe(-1);
    expect(compareResourceVersions("100", "99")).toBe(1);
    expect(compareResourceVersions("42", "42")).toBe(0);
    expect(compareResourceVersions("a1", "2")).toBeUndefined();
  });

  it("drops managedFields without touching the rest, and indexes owners", () => {
    const obj = {
      metadata: {
        name: "x",
        namespace: "ns",
        managedFields: [{ manager: "m" }],
        labels: { "cluster.x-k8s.io/cluster-name": "c1" },
        ownerReferences: [{ apiVersion: "v1", kind: "K", name: "o", uid: "u-1" }],
      },
      data: { a: "b" },
    };
    const slim = dropManagedFields(obj);
    expect(slim.metadata?.managedFields).toBeUndefined();
    expect(slim.data).toEqual({ a: "b" });
    expect(obj.metadata.managedFields).toHaveLength(1);
    expect(indexByOwnerUID(obj)).toEqual(["u-1"]);
    expect(parseObjectKey("ns/x")).toEqual({ namespace: "ns", name: "x" });
    expect(parseObjectKey("node-1")).toEqual({ name: "node-1" });
  });
});

describe("flags", () => {
  it("parses the standard flags with CAPI-style defaults", () => {
    const defaults = parseManagerFlags([]);
    expect(defaults).toMatchObject({
      leaderElect: false,
      leaseDurationMs: 15_000,
      renewDeadlineMs: 10_000,
      retryPeriodMs: 2_000,
      diagnosticsAddress: ":8443",
      insecureDiagnostics: false,
      healthProbeBindAddress: ":9440",
      concurrency: 10,
      syncPeriodMs: 600_000,
      eventLoopBlockThresholdMs: 5_000,
      logLevel: "info",
      logFormat: "json",
    });
    const flags = parseManagerFlags([
      "--kubeconfig",
      "config/kubeconfig.yaml",
      "--namespace",
      "team-a",
      "--watch-filter",
      "blue",
      "--leader-elect",
      "--leader-election-namespace",
      "capi-system",
      "--diagnostics-address",
      "127.0.0.1:9000",
      "--insecure-diagnostics",
      "--concurrency",
      "4",
      "--sync-period",
      "5m",
      "--event-loop-block-threshold",
      "0",
      "--log-level",
      "debug",
      "--log-format",
      "text",
    ]);
    expect(flags).toMatchObject({
      kubeconfig: "config/kubeconfig.yaml",
      namespace: "team-a",
      watchFilter: "blue",
      leaderElect: true,
      leaderElectionNamespace: "capi-system",
      diagnosticsAddress: "127.0.0.1:9000",
      insecureDiagnostics: true,
      concurrency: 4,
      syncPeriodMs: 300_000,
      eventLoopBlockThresholdMs: 0,
      logLevel: "debug",
      logFormat: "text",
    });
  });

  it("answers --help with the usage, as a HelpRequested and not a failure", () => {
    let thrown: unknown;
    try {
      parseManagerFlags(["--help"]);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(HelpRequested);
    expect((thrown as HelpRequested).usage).toMatch(/--leader-elect/);
    expect(() => parseManagerFlags(["-h"])).toThrow(HelpRequested);
  });

  it("explains bad flags", () => {
    expect(() => parseManagerFlags(["--concurrency", "0"])).toThrow(/positive whole number/);
    expect(() => parseManagerFlags(["--sync-period", "10"])).toThrow(/invalid Go duration "10"/);
    expect(() => parseManagerFlags(["--log-format", "xml"])).toThrow(/xml/);
    expect(() => parseManagerFlags(["--event-loop-block-threshold", "-1s"])).toThrow(/negative/);
    expect(() => parseManagerFlags(["--diagnostics-address", "8443"])).toThrow(/host:port/);
    expect(() => parseManagerFlags(["--metrics-bind-address", ":8080"])).toThrow(/unknown option/);
    expect(() => parseManagerFlags(["--bogus"])).toThrow(/unknown option/);
    const saved = process.env.POD_NAMESPACE;
    delete process.env.POD_NAMESPACE;
    expect(() => parseManagerFlags(["--leader-elect"])).toThrow(/--leader-election-namespace/);
    if (saved !== undefined) process.env.POD_NAMESPACE = saved;
  });
});

describe("logging and metrics", () => {
  it("writes JSON or key=value text lines with the bound fields", async () => {
    const jsonOut = new PassThrough();
    const json: string[] = [];
    jsonOut.on("data", (chunk: Buffer) => json.push(chunk.toString()));
    createLogger({ destination: jsonOut }).child({ controller: "c" }).info({ name: "x" }, "hello");
    const textOut = new PassThrough();
    const text: string[] = [];
    textOut.on("data", (chunk: Buffer) => text.push(chunk.toString()));
    createLogger({ destination: textOut, format: "text" }).warn({ name: "has space" }, "careful");
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(JSON.parse(json.join(""))).toMatchObject({
      level: 30,
      controller: "c",
      name: "x",
      msg: "hello",
    });
    expect(text.join("")).toMatch(/^\S+Z WARN careful name="has space"\n$/);
    expect(() => createLogger({ level: "loud" as never })).toThrow(/not one of/);
  });

  it("keeps controller-runtime's metric names, per manager", async () => {
    const metrics = new RuntimeMetrics();
    const queue = metrics.queueMetrics("pools");
    queue.added();
    queue.retried();
    queue.depth(3);
    metrics.reconcileTotal.inc({ controller: "pools", result: "success" });
    expect(await metrics.value("workqueue_adds_total", { name: "pools" })).toBe(1);
    expect(await metrics.value("workqueue_depth", { controller: "pools" })).toBe(3);
    const text = await metrics.text();
    for (const name of [
      "controller_runtime_reconcile_total",
      "controller_runtime_reconcile_errors_total",
      "controller_runtime_terminal_reconcile_errors_total",
      "controller_runtime_reconcile_time_seconds",
      "workqueue_depth",
      "workqueue_adds_total",
      "workqueue_retries_total",
      "workqueue_queue_duration_seconds",
      "workqueue_work_duration_seconds",
      "leader_election_master_status",
    ]) {
      expect(text).toContain(`# TYPE ${name}`);
    }
    // Two managers in one process do not collide.
    expect(() => new RuntimeMetrics()).not.toThrow();
  });
});
