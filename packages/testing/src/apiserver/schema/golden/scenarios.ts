/**
 * Requests replayed against a real kube-apiserver (by `record.ts`) and through the engines (by
 * `golden.test.ts`): CAPI MachinePool creates and /status patches with targeted mistakes, a test CRD
 * exercising every schema keyword, CEL, defaults and server-side apply, and patches of a Node.
 */

import { capiMachinePool } from "../crd-fixtures.test-support.js";

/** One request. `body` is JSON, or a string for `application/apply-patch+yaml`. */
export interface Step {
  name: string;
  method: "GET" | "POST" | "PATCH";
  path: string;
  body?: unknown;
  contentType?: string;
}

type Obj = Record<string, unknown>;

const MACHINE_POOLS = "/apis/cluster.x-k8s.io/v1beta2/namespaces/default/machinepools";
/** The test CRD's collection. */
export const WIDGETS = "/apis/test.capi-ts.io/v1/namespaces/default/widgets";

const condition = {
  type: "Available",
  status: "True",
  reason: "Available",
  message: "",
  lastTransitionTime: "2026-01-01T00:00:00Z",
};

function spec(o: Obj): Obj {
  return o.spec as Obj;
}
function templateSpec(o: Obj): Obj {
  return (spec(o).template as Obj).spec as Obj;
}

const mutations: [string, (o: Obj) => void][] = [
  ["replicas-string", (o) => (spec(o).replicas = "three")],
  ["replicas-float", (o) => (spec(o).replicas = 1.5)],
  [
    "missing-configref-name",
    (o) => delete ((templateSpec(o).bootstrap as Obj).configRef as Obj).name,
  ],
  ["providerid-too-long", (o) => (spec(o).providerIDList as string[]).push("x".repeat(513))],
  ["clustername-empty", (o) => (spec(o).clusterName = "")],
  ["pattern", (o) => ((templateSpec(o).infrastructureRef as Obj).name = "Not_A_Name")],
  ["template-meta-empty", (o) => ((spec(o).template as Obj).metadata = {})],
  ["label-int", (o) => ((((spec(o).template as Obj).metadata as Obj).labels as Obj).pool = 7)],
  [
    "too-many-fd",
    (o) => (spec(o).failureDomains = Array.from({ length: 101 }, (_, i) => `fd-${i}`)),
  ],
  ["int32-overflow", (o) => (spec(o).replicas = 2 ** 31)],
  [
    "two-errors",
    (o) => {
      spec(o).replicas = "x";
      delete spec(o).clusterName;
    },
  ],
  ["null-replicas", (o) => (spec(o).replicas = null)],
  ["minready-overflow", (o) => (templateSpec(o).minReadySeconds = 2 ** 31)],
  ["drain-negative", (o) => (templateSpec(o).deletion = { nodeDrainTimeoutSeconds: -1 })],
  ["deletion-empty", (o) => (templateSpec(o).deletion = {})],
  [
    "polarity-bad",
    (o) => (((templateSpec(o).readinessGates as Obj[])[0] as Obj).polarity = "Sideways"),
  ],
  ["taint-missing", (o) => (templateSpec(o).taints = [{ key: "k", effect: "NoSchedule" }])],
  ["replicas-negative", (o) => (spec(o).replicas = -1)],
  ["replicas-bool", (o) => (spec(o).replicas = true)],
  ["spec-string", (o) => (o.spec = "nope")],
  ["gates-empty", (o) => (templateSpec(o).readinessGates = [])],
  [
    "readiness-dup",
    (o) =>
      (templateSpec(o).readinessGates as Obj[]).push({
        conditionType: "example.com/Ready",
        polarity: "Negative",
      }),
  ],
];

function widget(name: string, widgetSpec: Obj): Obj {
  return {
    apiVersion: "test.capi-ts.io/v1",
    kind: "Widget",
    metadata: { name, namespace: "default" },
    spec: widgetSpec,
  };
}

function apply(name: string, manager: string, applied: Obj, force = false): Step {
  return {
    name,
    method: "PATCH",
    path: `${WIDGETS}/w-ssa?fieldManager=${manager}${force ? "&force=true" : ""}`,
    body: JSON.stringify(widget("w-ssa", applied)),
    contentType: "application/apply-patch+yaml",
  };
}

const mergePatch = "application/merge-patch+json";
const strategic = "application/strategic-merge-patch+json";
const jsonPatchType = "application/json-patch+json";

/** The requests, in order. */
export const steps: Step[] = [
  { name: "mp-ok", method: "POST", path: MACHINE_POOLS, body: capiMachinePool("mp-ok") },
  ...mutations.map(([name, mutate]): Step => {
    const body = capiMachinePool(name);
    mutate(body);
    return { name, method: "POST", path: MACHINE_POOLS, body };
  }),
  { name: "bad-name", method: "POST", path: MACHINE_POOLS, body: capiMachinePool("Bad_Name") },
  ...(
    [
      ["status-phase", { phase: "Exploding" }],
      ["status-dup-cond", { conditions: [condition, { ...condition, status: "False" }] }],
      ["status-bad-time", { conditions: [{ ...condition, lastTransitionTime: "yesterday" }] }],
      ["status-ok", { conditions: [condition], phase: "Running" }],
    ] as [string, Obj][]
  ).map(
    ([name, status]): Step => ({
      name,
      method: "PATCH",
      path: `${MACHINE_POOLS}/mp-ok/status`,
      body: { status },
      contentType: mergePatch,
    }),
  ),
  {
    name: "w-cel",
    method: "POST",
    path: WIDGETS,
    body: widget("w-cel", { min: 5, max: 1, legacy: "v1", labels: { tooLong: "abcdef" } }),
  },
  {
    name: "w-keywords",
    method: "POST",
    path: WIDGETS,
    body: widget("w-keywords", {
      n: 10,
      port: true,
      tags: ["a", "b", "a"],
      emoji: "😀😀😀",
      inner: { kind: "Pod" },
    }),
  },
  {
    name: "w-ok-keywords",
    method: "POST",
    path: WIDGETS,
    body: widget("w-ok-keywords", {
      n: 9.5,
      port: "http",
      maybe: null,
      tags: ["a", "b"],
      emoji: "😀😀",
      inner: { apiVersion: "v1", kind: "Pod", metadata: { name: "p", bogus: 1 }, x: 1 },
    }),
  },
  {
    name: "w-blocking",
    method: "POST",
    path: WIDGETS,
    body: widget("w-blocking", { min: "a", max: 1 }),
  },
  {
    name: "w-trans",
    method: "POST",
    path: WIDGETS,
    body: widget("w-trans", { min: 1, max: 2, name: "a" }),
  },
  {
    name: "w-trans-update",
    method: "PATCH",
    path: `${WIDGETS}/w-trans`,
    body: { spec: { name: "b" } },
    contentType: mergePatch,
  },
  {
    name: "w-defaults",
    method: "POST",
    path: WIDGETS,
    body: widget("w-defaults", {
      min: 1,
      max: 2,
      list: [{}, { mode: "manual" }],
      byName: { first: {} },
      a: null,
      b: null,
      c: null,
      typo: 1,
    }),
  },
  { name: "w-nosuchkey", method: "POST", path: WIDGETS, body: widget("w-nosuchkey", { min: 3 }) },
  apply("ssa-a", "a", {
    min: 1,
    max: 2,
    replicas: 2,
    conditions: [{ type: "Ready", status: "True" }],
    items: ["x", "y"],
  }),
  apply("ssa-b-conflict", "b", { replicas: 5 }),
  apply("ssa-b-same", "b", { replicas: 2 }),
  apply("ssa-b-force", "b", { replicas: 5 }, true),
  apply("ssa-b-cond", "b", { conditions: [{ type: "Synced", status: "True" }] }),
  apply("ssa-a-drop", "a", { min: 1, max: 2, conditions: [] }),
  {
    name: "ssa-edit",
    method: "PATCH",
    path: `${WIDGETS}/w-ssa?fieldManager=kubectl-edit`,
    body: { spec: { max: 7 } },
    contentType: mergePatch,
  },
  apply("ssa-a-after-edit", "a", { min: 1, max: 2 }),
  apply("ssa-a-multi", "a", { min: 9, max: 3, replicas: 1 }),
  apply("ssa-null", "a", { min: 1, max: 3, b: null }, true),
  {
    name: "ssa-status-apply",
    method: "PATCH",
    path: `${WIDGETS}/w-ssa/status?fieldManager=ctrl`,
    body: JSON.stringify({ ...widget("w-ssa", {}), spec: undefined, status: { phase: "Ready" } }),
    contentType: "application/apply-patch+yaml",
  },
  {
    name: "ssa-status-update",
    method: "PATCH",
    path: `${WIDGETS}/w-ssa/status?fieldManager=ctrl2`,
    body: { status: { phase: "Done" } },
    contentType: mergePatch,
  },
  {
    name: "ssa-status-reapply",
    method: "PATCH",
    path: `${WIDGETS}/w-ssa/status?fieldManager=ctrl`,
    body: JSON.stringify({ ...widget("w-ssa", {}), spec: undefined, status: { phase: "Ready" } }),
    contentType: "application/apply-patch+yaml",
  },
  { name: "ssa-get", method: "GET", path: `${WIDGETS}/w-ssa` },
  {
    name: "w-embedded-meta",
    method: "POST",
    path: WIDGETS,
    body: widget("w-embedded-meta", {
      inner: {
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name: "a/b", labels: { "bad key!": "v" } },
      },
    }),
  },
  { name: "w-root-rule", method: "POST", path: WIDGETS, body: widget("forbidden", { min: 1 }) },
  {
    name: "apply-required-default",
    method: "PATCH",
    path: `${WIDGETS}/w-apply?fieldManager=a`,
    body: JSON.stringify(widget("w-apply", { min: 1 })),
    contentType: "application/apply-patch+yaml",
  },
  {
    name: "apply-labels",
    method: "PATCH",
    path: `${WIDGETS}/w-apply?fieldManager=a`,
    body: JSON.stringify({
      ...widget("w-apply", { min: 1 }),
      metadata: { name: "w-apply", namespace: "default", labels: { team: "x", tier: "y" } },
    }),
    contentType: "application/apply-patch+yaml",
  },
  {
    name: "apply-drop-label",
    method: "PATCH",
    path: `${WIDGETS}/w-apply?fieldManager=a`,
    body: JSON.stringify({
      ...widget("w-apply", { min: 1 }),
      metadata: { name: "w-apply", namespace: "default", labels: { team: "x" } },
    }),
    contentType: "application/apply-patch+yaml",
  },
  {
    name: "apply-dup-keys",
    method: "PATCH",
    path: `${WIDGETS}/w-apply?fieldManager=a`,
    body: JSON.stringify(
      widget("w-apply", { min: 1, conditions: [{ type: "A" }, { type: "A", status: "x" }] }),
    ),
    contentType: "application/apply-patch+yaml",
  },
  {
    name: "apply-missing-key",
    method: "PATCH",
    path: `${WIDGETS}/w-apply?fieldManager=a`,
    body: JSON.stringify(widget("w-apply", { min: 1, conditions: [{ status: "x" }] })),
    contentType: "application/apply-patch+yaml",
  },
  {
    name: "jp-add-no-value",
    method: "PATCH",
    path: `${WIDGETS}/w-apply`,
    body: [{ op: "add", path: "/spec/max" }],
    contentType: "application/json-patch+json",
  },
  {
    name: "apply-null-with-default",
    method: "PATCH",
    path: `${WIDGETS}/w-apply?fieldManager=a`,
    body: JSON.stringify(widget("w-apply", { min: 1, a: null })),
    contentType: "application/apply-patch+yaml",
  },
  {
    name: "upd-create",
    method: "POST",
    path: `${WIDGETS}?fieldManager=manager`,
    body: widget("w-upd", {
      min: 1,
      max: 2,
      template: { spec: { x: "y" } },
      conditions: [{ type: "A", status: "x" }],
    }),
  },
  {
    name: "jp-test-fail",
    method: "PATCH",
    path: `${WIDGETS}/w-upd`,
    body: [{ op: "test", path: "/spec/min", value: 2 }],
    contentType: jsonPatchType,
  },
  {
    name: "jp-not-list",
    method: "PATCH",
    path: `${WIDGETS}/w-upd`,
    body: { op: "add" },
    contentType: jsonPatchType,
  },
  {
    name: "jp-missing",
    method: "PATCH",
    path: `${WIDGETS}/w-upd`,
    body: [{ op: "replace", path: "/spec/nope", value: 1 }],
    contentType: jsonPatchType,
  },
  {
    name: "smp-cr",
    method: "PATCH",
    path: `${WIDGETS}/w-upd`,
    body: { spec: { min: 1 } },
    contentType: strategic,
  },
  {
    name: "node-create",
    method: "POST",
    path: "/api/v1/nodes",
    body: {
      apiVersion: "v1",
      kind: "Node",
      metadata: { name: "n1", finalizers: ["example.com/x"] },
      spec: { podCIDRs: ["10.0.0.0/24"], taints: [{ key: "k", effect: "NoSchedule" }] },
    },
  },
  {
    name: "node-status",
    method: "PATCH",
    path: "/api/v1/nodes/n1/status",
    body: {
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
    },
    contentType: strategic,
  },
  {
    name: "node-smp",
    method: "PATCH",
    path: "/api/v1/nodes/n1/status",
    body: {
      status: {
        conditions: [
          { type: "Ready", status: "False" },
          { type: "DiskPressure", status: "False" },
        ],
        addresses: [{ type: "ExternalIP", address: "1.2.3.4" }],
      },
    },
    contentType: strategic,
  },
  {
    name: "node-smp-del",
    method: "PATCH",
    path: "/api/v1/nodes/n1",
    body: {
      metadata: {
        finalizers: ["example.com/y"],
        "$deleteFromPrimitiveList/finalizers": ["example.com/x"],
      },
      spec: { taints: [{ key: "o", effect: "NoExecute" }] },
    },
    contentType: strategic,
  },
  {
    name: "node-smp-nokey",
    method: "PATCH",
    path: "/api/v1/nodes/n1/status",
    body: { status: { conditions: [{ status: "x" }] } },
    contentType: strategic,
  },
  {
    name: "node-apply",
    method: "PATCH",
    path: "/api/v1/nodes/n1/status?fieldManager=kubelet2&force=true",
    body: JSON.stringify({
      apiVersion: "v1",
      kind: "Node",
      metadata: { name: "n1" },
      status: { addresses: [{ type: "InternalIP", address: "10.0.0.9" }] },
    }),
    contentType: "application/apply-patch+yaml",
  },
];

/** The test CRD: one field per keyword, CEL rules (incl. a transition rule), defaults, list types. */
export const widgetCRD = {
  apiVersion: "apiextensions.k8s.io/v1",
  kind: "CustomResourceDefinition",
  metadata: { name: "widgets.test.capi-ts.io" },
  spec: {
    group: "test.capi-ts.io",
    scope: "Namespaced",
    names: { plural: "widgets", singular: "widget", kind: "Widget", listKind: "WidgetList" },
    versions: [
      {
        name: "v1",
        served: true,
        storage: true,
        subresources: { status: {} },
        schema: {
          openAPIV3Schema: {
            type: "object",
            "x-kubernetes-validations": [
              { rule: "self.metadata.name != 'forbidden'", message: "this name is reserved" },
            ],
            properties: {
              spec: {
                type: "object",
                required: ["mode"],
                "x-kubernetes-validations": [
                  {
                    rule: "!has(self.min) || !has(self.max) || self.min <= self.max",
                    message: "min must not exceed max",
                  },
                  {
                    rule: "!has(self.legacy)",
                    messageExpression: "'legacy is gone, got ' + self.legacy",
                    fieldPath: ".legacy",
                    reason: "FieldValueForbidden",
                  },
                  { rule: "!has(self.min) || self.min != 3 || self.nosuch == 1" },
                ],
                properties: {
                  min: { type: "integer" },
                  max: { type: "integer" },
                  replicas: { type: "integer" },
                  legacy: { type: "string" },
                  nosuch: { type: "integer" },
                  name: {
                    type: "string",
                    "x-kubernetes-validations": [
                      { rule: "self == oldSelf", message: "name is immutable" },
                    ],
                  },
                  labels: {
                    type: "object",
                    additionalProperties: {
                      type: "string",
                      "x-kubernetes-validations": [{ rule: "self.size() < 5" }],
                    },
                  },
                  n: {
                    type: "number",
                    minimum: 0,
                    exclusiveMaximum: true,
                    maximum: 10,
                    multipleOf: 0.5,
                  },
                  port: {
                    "x-kubernetes-int-or-string": true,
                    anyOf: [{ type: "integer" }, { type: "string" }],
                  },
                  maybe: { type: "string", nullable: true },
                  tags: {
                    type: "array",
                    items: { type: "string" },
                    "x-kubernetes-list-type": "set",
                  },
                  emoji: { type: "string", maxLength: 2 },
                  inner: {
                    type: "object",
                    "x-kubernetes-embedded-resource": true,
                    "x-kubernetes-preserve-unknown-fields": true,
                  },
                  list: {
                    type: "array",
                    items: {
                      type: "object",
                      properties: {
                        mode: { type: "string", default: "auto" },
                        n: { type: "integer" },
                      },
                    },
                  },
                  byName: {
                    type: "object",
                    additionalProperties: {
                      type: "object",
                      properties: { on: { type: "boolean", default: true } },
                    },
                  },
                  a: { type: "string", default: "x" },
                  b: { type: "string" },
                  c: { type: "string", nullable: true },
                  mode: { type: "string", default: "auto" },
                  template: {
                    type: "object",
                    properties: {
                      spec: { type: "object", properties: { x: { type: "string" } } },
                    },
                  },
                  conditions: {
                    type: "array",
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["type"],
                    items: {
                      type: "object",
                      required: ["type"],
                      properties: { type: { type: "string" }, status: { type: "string" } },
                    },
                  },
                  items: { type: "array", items: { type: "string" } },
                },
              },
              status: { type: "object", "x-kubernetes-preserve-unknown-fields": true },
            },
          },
        },
      },
    ],
  },
};

/** The CAPI CRD files the recording installs (relative to the shared `crds/` folder). */
export const crdFiles = ["capi/cluster.x-k8s.io_machinepools.yaml"];
