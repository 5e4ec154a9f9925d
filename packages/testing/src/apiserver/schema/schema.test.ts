import { describe, expect, it } from "vitest";
import { formatBadValue } from "./causes.js";
import { capiMachinePool, crdSchema } from "./crd-fixtures.test-support.js";
import {
  compileStructuralSchema,
  type FieldCause,
  formatInvalidMessage,
  NonStructuralSchemaError,
  validateObjectMeta,
} from "./index.js";

const machinePoolSchema = compileStructuralSchema(
  crdSchema("capi/cluster.x-k8s.io_machinepools.yaml", "v1beta2"),
);

function machinePool(): Record<string, unknown> {
  return {
    ...capiMachinePool(),
    status: {
      phase: "Running",
      replicas: 3,
      conditions: [
        {
          type: "Available",
          status: "True",
          reason: "Available",
          message: "",
          lastTransitionTime: "2026-01-01T00:00:00Z",
        },
      ],
    },
  };
}

function at(obj: Record<string, unknown>, path: (string | number)[]): Record<string, unknown> {
  let node: unknown = obj;
  for (const p of path) node = (node as Record<string | number, unknown>)[p];
  return node as Record<string, unknown>;
}

function only(causes: FieldCause[]): FieldCause {
  expect(causes).toHaveLength(1);
  return causes[0] as FieldCause;
}

describe("validate: a CAPI v1beta2 MachinePool", () => {
  it("accepts a correct object", () => {
    expect(machinePoolSchema.validate(machinePool())).toEqual([]);
  });

  it("reports a wrong type the way the server does", () => {
    const mp = machinePool();
    at(mp, ["spec"]).replicas = "three";
    expect(only(machinePoolSchema.validate(mp))).toEqual({
      field: "spec.replicas",
      reason: "FieldValueTypeInvalid",
      message: 'Invalid value: "string": spec.replicas in body must be of type integer: "string"',
    });
  });

  it("reports a number where an integer is required", () => {
    const mp = machinePool();
    at(mp, ["spec"]).replicas = 1.5;
    expect(only(machinePoolSchema.validate(mp))).toEqual({
      field: "spec.replicas",
      reason: "FieldValueTypeInvalid",
      message: 'Invalid value: "number": spec.replicas in body must be of type integer: "number"',
    });
  });

  it("reports a missing required field at its full path", () => {
    const mp = machinePool();
    delete at(mp, ["spec", "template", "spec", "bootstrap", "configRef"]).name;
    expect(only(machinePoolSchema.validate(mp))).toEqual({
      field: "spec.template.spec.bootstrap.configRef.name",
      reason: "FieldValueRequired",
      message: "Required value",
    });
  });

  it("reports list items with their index", () => {
    const mp = machinePool();
    (at(mp, ["spec"]).providerIDList as string[]).push("x".repeat(513));
    expect(only(machinePoolSchema.validate(mp))).toEqual({
      field: "spec.providerIDList[2]",
      reason: "FieldValueTooLong",
      message: "Too long: may not be more than 512 bytes",
    });
  });

  it("reports a string shorter than minLength", () => {
    const mp = machinePool();
    at(mp, ["spec"]).clusterName = "";
    expect(only(machinePoolSchema.validate(mp))).toEqual({
      field: "spec.clusterName",
      reason: "FieldValueInvalid",
      message: 'Invalid value: "": spec.clusterName in body should be at least 1 chars long',
    });
  });

  it("reports an unsupported enum value with the supported list", () => {
    const mp = machinePool();
    at(mp, ["status"]).phase = "Exploding";
    expect(only(machinePoolSchema.validate(mp))).toEqual({
      field: "status.phase",
      reason: "FieldValueNotSupported",
      message:
        'Unsupported value: "Exploding": supported values: "Pending", "Provisioning", "Provisioned", "Running", "ScalingUp", "ScalingDown", "Scaling", "Deleting", "Failed", "Unknown"',
    });
  });

  it("reports a pattern mismatch quoting the pattern", () => {
    const mp = machinePool();
    at(mp, ["spec", "template", "spec", "infrastructureRef"]).name = "Not_A_Name";
    expect(only(machinePoolSchema.validate(mp))).toEqual({
      field: "spec.template.spec.infrastructureRef.name",
      reason: "FieldValueInvalid",
      message:
        "Invalid value: \"Not_A_Name\": spec.template.spec.infrastructureRef.name in body should match '^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$'",
    });
  });

  it("matches patterns with RE2, in linear time, as the server does", () => {
    const schema = compileStructuralSchema({
      type: "object",
      properties: {
        nested: { type: "string", pattern: "^(a+)+$" },
        posix: { type: "string", pattern: "^[[:alpha:]]+\\z" },
      },
    });
    // A backtracking RegExp needed 1.5 s at 28 characters here, doubling with each one.
    let started = performance.now();
    expect(schema.validate({ nested: `${"a".repeat(30)}b` })).toHaveLength(1);
    expect(performance.now() - started).toBeLessThan(500);
    started = performance.now();
    expect(schema.validate({ nested: `${"a".repeat(100_000)}b` })).toHaveLength(1);
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(schema.validate({ nested: "aaa", posix: "abc" })).toEqual([]);
    expect(schema.validate({ posix: "ab1" })).toHaveLength(1);
  });

  it("rejects a CRD whose pattern RE2 cannot compile (lookahead, backreference)", () => {
    for (const pattern of ["^(?=.*[0-9]).{8,}$", "^(a+)-\\1$"]) {
      expect(() =>
        compileStructuralSchema({
          type: "object",
          properties: { password: { type: "string", pattern } },
        }),
      ).toThrowError(NonStructuralSchemaError);
    }
  });

  it("reports minProperties on the pod template metadata", () => {
    const mp = machinePool();
    at(mp, ["spec", "template"]).metadata = {};
    expect(only(machinePoolSchema.validate(mp))).toEqual({
      field: "spec.template.metadata",
      reason: "FieldValueInvalid",
      message: "Invalid value: 0: spec.template.metadata in body should have at least 1 properties",
    });
  });

  it("names map entries with a dot in OpenAPI errors", () => {
    const mp = machinePool();
    at(mp, ["spec", "template", "metadata", "labels"]).pool = 7;
    expect(only(machinePoolSchema.validate(mp))).toEqual({
      field: "spec.template.metadata.labels.pool",
      reason: "FieldValueTypeInvalid",
      message:
        'Invalid value: "integer": spec.template.metadata.labels.pool in body must be of type string: "integer"',
    });
  });

  it("reports too many items", () => {
    const mp = machinePool();
    at(mp, ["spec"]).failureDomains = Array.from({ length: 101 }, (_, i) => `fd-${i}`);
    expect(only(machinePoolSchema.validate(mp))).toEqual({
      field: "spec.failureDomains",
      reason: "FieldValueTooMany",
      message: "Too many: 101: must have at most 100 items",
    });
  });

  it("reports a duplicate key in a list-map with the key values", () => {
    const mp = machinePool();
    const conditions = at(mp, ["status"]).conditions as unknown[];
    conditions.push({ ...(conditions[0] as object), status: "False" });
    expect(only(machinePoolSchema.validate(mp))).toEqual({
      field: "status.conditions[1]",
      reason: "FieldValueDuplicate",
      message: 'Duplicate value: {"type":"Available"}',
    });
  });

  it("validates date-time formats", () => {
    const mp = machinePool();
    const condition = (at(mp, ["status"]).conditions as Record<string, unknown>[])[0];
    if (condition === undefined) throw new Error("fixture has a condition");
    condition.lastTransitionTime = "yesterday";
    expect(only(machinePoolSchema.validate(mp))).toEqual({
      field: "status.conditions[0].lastTransitionTime",
      reason: "FieldValueTypeInvalid",
      message:
        'Invalid value: "yesterday": status.conditions[0].lastTransitionTime in body must be of type date-time: "yesterday"',
    });
  });

  it("checks the scale subresource's replicas like the server (int32 range, int64 type)", () => {
    const scale = { specReplicasPath: ".spec.replicas", statusReplicasPath: ".status.replicas" };
    const mp = machinePool();
    at(mp, ["spec"]).replicas = 2 ** 31;
    expect(only(machinePoolSchema.validate(mp, undefined, { scale }))).toEqual({
      field: ".spec.replicas",
      reason: "FieldValueInvalid",
      message: "Invalid value: 2147483648: should be less than or equal to 2147483647",
    });
    at(mp, ["spec"]).replicas = "three";
    expect(machinePoolSchema.validate(mp, undefined, { scale })).toEqual([
      {
        field: "spec.replicas",
        reason: "FieldValueTypeInvalid",
        message: 'Invalid value: "string": spec.replicas in body must be of type integer: "string"',
      },
      {
        field: ".spec.replicas",
        reason: "FieldValueInvalid",
        message:
          "Invalid value: 0: .spec.replicas accessor error: three is of the type string, expected int64",
      },
    ]);
  });

  it("validates writes through /status against the status schema, messages relative to it", () => {
    const mp = machinePool();
    const updated = structuredClone(mp);
    const condition = (at(updated, ["status"]).conditions as Record<string, unknown>[])[0];
    if (condition === undefined) throw new Error("fixture has a condition");
    condition.lastTransitionTime = "yesterday";
    at(updated, ["metadata"]).name = "Not_Checked_Here";
    expect(machinePoolSchema.validate(updated, mp, { subresource: "status" })).toEqual([
      {
        field: "status.conditions[0].lastTransitionTime",
        reason: "FieldValueTypeInvalid",
        message:
          'Invalid value: "yesterday": conditions[0].lastTransitionTime in body must be of type date-time: "yesterday"',
      },
    ]);
  });

  it("ratchets unchanged items of map lists (conditions keyed by type)", () => {
    const old = machinePool();
    const bad = (at(old, ["status"]).conditions as Record<string, unknown>[])[0];
    if (bad === undefined) throw new Error("fixture has a condition");
    bad.reason = "not a valid reason!";
    const updated = structuredClone(old);
    (at(updated, ["status"]).conditions as unknown[]).unshift({
      type: "Ready",
      status: "True",
      reason: "Ok",
      message: "",
      lastTransitionTime: "2026-01-01T00:00:00Z",
    });
    expect(machinePoolSchema.validate(updated, old, { subresource: "status" })).toEqual([]);
    expect(machinePoolSchema.validate(updated, undefined)).toHaveLength(1);
  });

  it("validates metadata.name at the top when asked (objectMeta)", () => {
    const mp = machinePool();
    at(mp, ["metadata"]).name = "Bad_Name";
    expect(machinePoolSchema.validate(mp)).toEqual([]);
    const cause = only(machinePoolSchema.validate(mp, undefined, { objectMeta: true }));
    expect(cause.field).toBe("metadata.name");
    expect(cause.reason).toBe("FieldValueInvalid");
    expect(cause.message).toMatch(/^Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain/);
  });

  it("reports several causes in one pass and formats the Status message", () => {
    const mp = machinePool();
    at(mp, ["spec"]).replicas = "x";
    delete at(mp, ["spec"]).clusterName;
    const causes = machinePoolSchema.validate(mp);
    expect(causes.map((c) => `${c.field}:${c.reason}`).sort()).toEqual([
      "spec.clusterName:FieldValueRequired",
      "spec.replicas:FieldValueTypeInvalid",
    ]);
    expect(formatInvalidMessage("MachinePool.cluster.x-k8s.io", "mp-0", causes)).toMatch(
      /^MachinePool\.cluster\.x-k8s\.io "mp-0" is invalid: \[spec\..*, spec\..*\]$/,
    );
  });

  it("ratchets: an unchanged invalid value does not fail an update", () => {
    const old = machinePool();
    at(old, ["spec"]).clusterName = "";
    const updated = structuredClone(old);
    at(updated, ["spec"]).replicas = 5;
    expect(machinePoolSchema.validate(updated, old)).toEqual([]);
    at(updated, ["spec"]).clusterName = "";
    expect(machinePoolSchema.validate(updated)).toHaveLength(1);
  });
});

describe("prune", () => {
  it("drops unknown fields and reports their paths", () => {
    const mp = machinePool();
    at(mp, ["spec"]).typo = true;
    at(mp, ["spec", "template", "spec", "readinessGates", 0]).extra = 1;
    at(mp, ["metadata"]).whatever = "kept at the root";
    const dropped = machinePoolSchema.prune(mp);
    expect(dropped.sort()).toEqual(["spec.template.spec.readinessGates[0].extra", "spec.typo"]);
    expect(at(mp, ["spec"]).typo).toBeUndefined();
    expect(at(mp, ["metadata"]).whatever).toBe("kept at the root");
    expect(mp.apiVersion).toBe("cluster.x-k8s.io/v1beta2");
  });

  it("keeps unknown fields under x-kubernetes-preserve-unknown-fields, pruning known children", () => {
    const schema = compileStructuralSchema({
      type: "object",
      properties: {
        spec: {
          type: "object",
          "x-kubernetes-preserve-unknown-fields": true,
          properties: { known: { type: "object", properties: { a: { type: "string" } } } },
        },
      },
    });
    const obj = { spec: { anything: { deep: 1 }, known: { a: "x", b: "pruned" } } };
    expect(schema.prune(obj)).toEqual(["spec.known.b"]);
    expect(obj).toEqual({ spec: { anything: { deep: 1 }, known: { a: "x" } } });
  });

  it("keeps apiVersion/kind/metadata of embedded resources and reduces metadata to ObjectMeta", () => {
    const schema = compileStructuralSchema({
      type: "object",
      properties: {
        spec: {
          type: "object",
          properties: {
            template: {
              type: "object",
              "x-kubernetes-embedded-resource": true,
              properties: { data: { type: "string" } },
            },
          },
        },
      },
    });
    const obj = {
      spec: {
        template: {
          apiVersion: "v1",
          kind: "ConfigMap",
          metadata: { name: "x", bogus: 1 },
          data: "d",
          extra: 1,
        },
      },
    };
    expect(schema.prune(obj).sort()).toEqual([
      "spec.template.extra",
      "spec.template.metadata.bogus",
    ]);
    expect(obj.spec.template).toEqual({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "x" },
      data: "d",
    });
  });
});

describe("applyDefaults", () => {
  const awsMachinePool = compileStructuralSchema(
    crdSchema("aws/infrastructure.cluster.x-k8s.io_awsmachinepools.yaml", "v1beta2"),
  );

  it("fills absent fields whose parent exists, and nothing below absent parents", () => {
    const obj: Record<string, unknown> = {
      apiVersion: "infrastructure.cluster.x-k8s.io/v1beta2",
      kind: "AWSMachinePool",
      metadata: { name: "a" },
      spec: { awsLaunchTemplate: { instanceType: "m5.large" } },
    };
    awsMachinePool.applyDefaults(obj);
    expect(at(obj, ["spec"]).minSize).toBe(1);
    expect(at(obj, ["spec"]).maxSize).toBe(1);
    expect(at(obj, ["spec", "awsLaunchTemplate"]).instanceMetadataOptions).toBeUndefined();
    expect(at(obj, ["spec"]).mixedInstancesPolicy).toBeUndefined();
  });

  it("defaults inside an existing parent and keeps given values", () => {
    const obj: Record<string, unknown> = {
      spec: {
        minSize: 0,
        awsLaunchTemplate: { instanceMetadataOptions: { httpTokens: "required" } },
      },
    };
    awsMachinePool.applyDefaults(obj);
    expect(at(obj, ["spec"]).minSize).toBe(0);
    expect(at(obj, ["spec", "awsLaunchTemplate", "instanceMetadataOptions"])).toEqual({
      httpEndpoint: "enabled",
      httpProtocolIpv6: "disabled",
      httpPutResponseHopLimit: 1,
      httpTokens: "required",
      instanceMetadataTags: "disabled",
    });
  });

  it("defaults array items and map values, replaces non-nullable nulls, drops other nulls", () => {
    const schema = compileStructuralSchema({
      type: "object",
      properties: {
        list: {
          type: "array",
          items: {
            type: "object",
            properties: { mode: { type: "string", default: "auto" }, n: { type: "integer" } },
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
      },
    });
    const obj: Record<string, unknown> = {
      list: [{}, { mode: "manual" }],
      byName: { first: {} },
      a: null,
      b: null,
      c: null,
    };
    schema.applyDefaults(obj);
    expect(obj).toEqual({
      list: [{ mode: "auto" }, { mode: "manual" }],
      byName: { first: { on: true } },
      a: "x",
      c: null,
    });
  });
});

describe("validate: keywords and CEL", () => {
  it("enforces CEL rules of CAPI's CRDs (extraArgs names must be unique)", () => {
    const schema = compileStructuralSchema(
      crdSchema("capi/bootstrap.cluster.x-k8s.io_kubeadmconfigs.yaml", "v1beta2"),
    );
    expect(schema.skippedRules).toEqual([]);
    const obj = {
      apiVersion: "bootstrap.cluster.x-k8s.io/v1beta2",
      kind: "KubeadmConfig",
      metadata: { name: "k" },
      spec: {
        clusterConfiguration: {
          apiServer: {
            extraArgs: [
              { name: "v", value: "1" },
              { name: "v", value: "2" },
            ],
          },
        },
      },
    };
    expect(only(schema.validate(obj))).toEqual({
      field: "spec.clusterConfiguration.apiServer.extraArgs",
      reason: "FieldValueInvalid",
      message: "Invalid value: extraArgs name must be unique",
    });
  });

  const celSchema = compileStructuralSchema({
    type: "object",
    properties: {
      spec: {
        type: "object",
        "x-kubernetes-validations": [
          { rule: "self.min <= self.max", message: "min must not exceed max" },
          {
            rule: "!has(self.legacy)",
            messageExpression: "'legacy is gone, got ' + self.legacy",
            fieldPath: ".legacy",
            reason: "FieldValueForbidden",
          },
        ],
        properties: {
          min: { type: "integer" },
          max: { type: "integer" },
          legacy: { type: "string" },
          name: {
            type: "string",
            "x-kubernetes-validations": [{ rule: "self == oldSelf", message: "name is immutable" }],
          },
          labels: {
            type: "object",
            additionalProperties: {
              type: "string",
              "x-kubernetes-validations": [{ rule: "self.size() < 5" }],
            },
          },
        },
      },
    },
  });

  it("reports rule failures with message, messageExpression, fieldPath and reason", () => {
    const causes = celSchema.validate({
      metadata: { name: "x" },
      spec: { min: 5, max: 1, legacy: "v1", labels: { tooLong: "abcdef" } },
    });
    expect(causes).toEqual([
      {
        field: "spec",
        reason: "FieldValueInvalid",
        message: "Invalid value: min must not exceed max",
      },
      {
        field: "spec.legacy",
        reason: "FieldValueForbidden",
        message: "Forbidden: legacy is gone, got v1",
      },
      {
        field: "spec.labels[tooLong]",
        reason: "FieldValueInvalid",
        message: 'Invalid value: "abcdef": failed rule: self.size() < 5',
      },
    ]);
  });

  it("runs transition rules only on update", () => {
    const old = { metadata: { name: "x" }, spec: { min: 1, max: 2, name: "a" } };
    const next = { metadata: { name: "x" }, spec: { min: 1, max: 2, name: "b" } };
    expect(celSchema.validate(next)).toEqual([]);
    expect(celSchema.validate(next, old)).toEqual([
      {
        field: "spec.name",
        reason: "FieldValueInvalid",
        message: 'Invalid value: "b": name is immutable',
      },
    ]);
  });

  it("skips CEL when the object already has a blocking error, as the server does", () => {
    const causes = celSchema.validate({ metadata: { name: "x" }, spec: { min: "a", max: 1 } });
    expect(causes.map((c) => c.field)).toEqual(["spec.min", "<nil>"]);
    expect(causes[1]?.message).toContain("some validation rules were not checked");
  });

  it("records rules it cannot compile instead of rejecting objects", () => {
    const schema = compileStructuralSchema({
      type: "object",
      properties: {
        spec: {
          type: "object",
          "x-kubernetes-validations": [{ rule: "self.foo(" }, { rule: "has(self.a)" }],
          properties: { a: { type: "string" } },
        },
      },
    });
    expect(schema.skippedRules).toHaveLength(1);
    expect(schema.skippedRules[0]?.rule).toBe("self.foo(");
    expect(schema.validate({ metadata: { name: "x" }, spec: {} })).toHaveLength(1);
  });

  it("checks numbers, int-or-string, nullable, sets and embedded resources", () => {
    const schema = compileStructuralSchema({
      type: "object",
      properties: {
        spec: {
          type: "object",
          properties: {
            n: { type: "number", minimum: 0, exclusiveMaximum: true, maximum: 10, multipleOf: 0.5 },
            port: {
              "x-kubernetes-int-or-string": true,
              anyOf: [{ type: "integer" }, { type: "string" }],
            },
            maybe: { type: "string", nullable: true },
            tags: { type: "array", items: { type: "string" }, "x-kubernetes-list-type": "set" },
            emoji: { type: "string", maxLength: 2 },
            inner: {
              type: "object",
              "x-kubernetes-embedded-resource": true,
              "x-kubernetes-preserve-unknown-fields": true,
            },
          },
        },
      },
    });
    const ok = {
      metadata: { name: "x" },
      spec: {
        n: 9.5,
        port: "http",
        maybe: null,
        tags: ["a", "b"],
        emoji: "😀😀",
        inner: { apiVersion: "v1", kind: "Pod" },
      },
    };
    expect(schema.validate(ok)).toEqual([]);
    const bad = {
      metadata: { name: "x" },
      spec: { n: 10, port: true, tags: ["a", "b", "a"], emoji: "😀😀😀", inner: { kind: "Pod" } },
    };
    // The same causes as kube-apiserver 1.35 for this object (its order follows Go map iteration).
    const byField = (a: FieldCause, b: FieldCause) =>
      `${a.field}${a.message}` < `${b.field}${b.message}` ? -1 : 1;
    expect(schema.validate(bad).sort(byField)).toEqual(
      [
        {
          field: "spec.n",
          reason: "FieldValueInvalid",
          message: "Invalid value: 10: spec.n in body should be less than 10",
        },
        {
          field: "spec.n",
          reason: "FieldValueInvalid",
          message: "Invalid value: 0: factor MultipleOf declared for spec.n must be positive: 0",
        },
        {
          field: "<nil>",
          reason: "FieldValueInvalid",
          message: 'Invalid value: "": "spec.port" must validate at least one schema (anyOf)',
        },
        {
          field: "spec.port",
          reason: "FieldValueTypeInvalid",
          message:
            'Invalid value: "boolean": spec.port in body must be of type integer,string: "boolean"',
        },
        {
          field: "spec.port",
          reason: "FieldValueTypeInvalid",
          message: 'Invalid value: "boolean": spec.port in body must be of type integer: "boolean"',
        },
        {
          field: "spec.emoji",
          reason: "FieldValueTooLong",
          message: "Too long: may not be more than 2 bytes",
        },
        { field: "spec.inner.apiVersion", reason: "FieldValueRequired", message: "Required value" },
        { field: "spec.tags[2]", reason: "FieldValueDuplicate", message: 'Duplicate value: "a"' },
      ].sort(byField),
    );
  });

  it("rejects a schema that is not structural, listing every problem", () => {
    expect(() =>
      compileStructuralSchema({
        type: "object",
        properties: { spec: { properties: { a: { type: "string" } } }, ref: { $ref: "#/x" } },
      }),
    ).toThrowError(NonStructuralSchemaError);
    try {
      compileStructuralSchema({ type: "object", properties: { spec: {} } });
    } catch (error) {
      expect((error as NonStructuralSchemaError).problems).toEqual([
        "openAPIV3Schema.properties[spec].type: Required value: must not be empty for specified object fields",
      ]);
    }
  });

  it("answers list and map type lookups for server-side apply", () => {
    expect(machinePoolSchema.listTypeAt(["status", "conditions"])).toBe("map");
    expect(machinePoolSchema.listMapKeysAt(["status", "conditions"])).toEqual(["type"]);
    expect(machinePoolSchema.listMapKeysAt(["spec", "template", "spec", "taints"])).toEqual([
      "key",
      "effect",
    ]);
    expect(machinePoolSchema.listTypeAt(["spec", "providerIDList"])).toBe("atomic");
    expect(machinePoolSchema.mapTypeAt(["spec", "template"])).toBe("granular");
    expect(machinePoolSchema.nodeAt(["status", "conditions", 0, "type"])?.type).toBe("string");
    expect(machinePoolSchema.listTypeAt(["spec", "nope"])).toBeUndefined();
  });
});

describe("validateObjectMeta", () => {
  it("requires a name or generateName", () => {
    expect(validateObjectMeta({})).toEqual([
      {
        field: "metadata.name",
        reason: "FieldValueRequired",
        message: "Required value: name or generateName is required",
      },
    ]);
    expect(validateObjectMeta({ generateName: "mp-" })).toEqual([]);
  });

  it("validates label keys and values", () => {
    const causes = validateObjectMeta({
      name: "a",
      labels: { "bad key!": "ok", good: "bad value!" },
    });
    expect(causes.map((c) => `${c.field}:${c.reason}`)).toEqual([
      "metadata.labels:FieldValueInvalid",
      "metadata.labels:FieldValueInvalid",
    ]);
  });
});

describe("value formatting", () => {
  it("prints floats as Go's %v does", () => {
    expect(formatBadValue(1.5)).toBe("1.5");
    expect(formatBadValue(1234567.5)).toBe("1.2345675e+06");
    expect(formatBadValue(0.00001)).toBe("1e-05");
    expect(formatBadValue(100000.5)).toBe("100000.5");
    expect(formatBadValue(3)).toBe("3");
    expect(formatBadValue({ b: 1, a: "<" })).toBe('{"a":"\\u003c","b":1}');
  });
});
