import { describe, expect, it } from "vitest";
import { z } from "zod";
import {
  defineInfraMachinePool,
  generateInfraMachinePoolTypes,
  NonStructuralSchemaError,
  zodToStructuralSchema,
} from "./index.js";

const Foo = defineInfraMachinePool({
  group: "infrastructure.foo.com",
  kind: "FooMachinePool",
  versions: ["v1beta1", "v1beta2"],
  spec: z.object({
    instanceType: z.string().min(1).describe("cloud instance type"),
    subnets: z.array(z.string()).max(16).optional(),
    tags: z.record(z.string(), z.string()).optional(),
    spot: z.object({ maxPrice: z.string().optional() }).optional(),
    size: z.enum(["small", "large"]).default("small"),
  }),
  status: z.object({ asgName: z.string().optional() }),
  machinePoolMachines: true,
});

type Crd = {
  metadata: { name: string; labels: Record<string, string> };
  spec: {
    group: string;
    scope: string;
    names: { kind: string; plural: string; listKind: string; categories: string[] };
    versions: Array<{
      name: string;
      served: boolean;
      storage: boolean;
      subresources?: { status?: object };
      additionalPrinterColumns?: Array<{ name: string; jsonPath: string }>;
      schema: {
        openAPIV3Schema: {
          properties: Record<string, { properties: Record<string, unknown>; required?: string[] }>;
        };
      };
    }>;
  };
};

describe("defineInfraMachinePool", () => {
  const crd = Foo.crd as unknown as Crd;
  const version = crd.spec.versions[1];
  const root = version?.schema.openAPIV3Schema.properties ?? {};

  it("names, labels and scope follow the contract (R1, R4, R5, R6, R7)", () => {
    expect(crd.metadata.name).toBe("foomachinepools.infrastructure.foo.com");
    expect(crd.metadata.labels).toEqual({ "cluster.x-k8s.io/v1beta2": "v1beta1_v1beta2" });
    expect(crd.spec.scope).toBe("Namespaced");
    expect(crd.spec.names).toMatchObject({
      kind: "FooMachinePool",
      listKind: "FooMachinePoolList",
      plural: "foomachinepools",
    });
    expect(crd.spec.names.categories).toEqual(["cluster-api"]);
    expect(crd.spec.versions.map((v) => [v.name, v.served, v.storage])).toEqual([
      ["v1beta1", true, false],
      ["v1beta2", true, true],
    ]);
    expect(version?.subresources).toEqual({ status: {} });
    expect(version?.additionalPrinterColumns?.map((c) => c.name)).toEqual([
      "Cluster",
      "Replicas",
      "Provisioned",
      "Age",
    ]);
    expect(Foo.resource).toEqual({
      group: "infrastructure.foo.com",
      version: "v1beta2",
      plural: "foomachinepools",
      kind: "FooMachinePool",
      scope: "Namespaced",
      subresources: { status: true },
    });
    expect(Foo.finalizer).toBe("foomachinepool.infrastructure.foo.com");
  });

  it("injects the contract fields with their exact validation", () => {
    expect(root.spec?.properties.providerIDList).toEqual({
      type: "array",
      description: expect.any(String),
      maxItems: 10000,
      items: { type: "string", minLength: 1, maxLength: 512 },
      "x-kubernetes-list-type": "atomic",
    });
    expect(root.spec?.properties.providerID).toMatchObject({
      type: "string",
      minLength: 1,
      maxLength: 512,
    });
    const status = root.status?.properties ?? {};
    expect(status.ready).toMatchObject({ type: "boolean" });
    expect(status.initialization).toMatchObject({
      type: "object",
      minProperties: 1,
      properties: { provisioned: { type: "boolean" } },
    });
    expect(status.replicas).toMatchObject({ type: "integer", format: "int32" });
    expect(status.conditions).toMatchObject({
      type: "array",
      maxItems: 32,
      "x-kubernetes-list-type": "map",
      "x-kubernetes-list-map-keys": ["type"],
    });
    expect(status.infrastructureMachineKind).toMatchObject({ type: "string", minLength: 1 });
    expect(status.instances).toMatchObject({ type: "array" });
    expect(status.failureReason).toBeUndefined();
    expect(status.asgName).toEqual({ type: "string" });
  });

  it("converts the provider's own fields", () => {
    expect(root.spec?.properties.instanceType).toEqual({
      type: "string",
      minLength: 1,
      description: "cloud instance type",
    });
    expect(root.spec?.properties.tags).toEqual({
      type: "object",
      additionalProperties: { type: "string" },
    });
    expect(root.spec?.properties.size).toEqual({
      type: "string",
      enum: ["small", "large"],
      default: "small",
    });
    expect(root.spec?.required).toEqual(["instanceType"]);
  });

  it("derives the template CRD and the aggregated ClusterRole (R3, R18)", () => {
    const t = Foo.templateCrd as unknown as Crd;
    expect(t.metadata.name).toBe("foomachinepooltemplates.infrastructure.foo.com");
    expect(t.metadata.labels).toEqual({ "cluster.x-k8s.io/v1beta2": "v1beta1_v1beta2" });
    const tspec = t.spec.versions[0]?.schema.openAPIV3Schema.properties.spec as unknown as {
      properties: { template: { properties: { metadata: object; spec: object } } };
    };
    expect(tspec.properties.template.properties.metadata).toMatchObject({ minProperties: 1 });
    expect(tspec.properties.template.properties.spec).toEqual(root.spec);
    expect(t.spec.versions[0]?.subresources).toBeUndefined();
    expect(Foo.clusterRole).toMatchObject({
      kind: "ClusterRole",
      metadata: { labels: { "cluster.x-k8s.io/aggregate-to-manager": "true" } },
      rules: [
        {
          apiGroups: ["infrastructure.foo.com"],
          resources: [
            "foomachinepools",
            "foomachinepools/finalizers",
            "foomachinepooltemplates",
            "foomachinepoolmachines",
            "foomachinepoolmachines/finalizers",
          ],
        },
      ],
    });
    expect(Foo.toYAML()).toContain("kind: CustomResourceDefinition");
  });

  it("refuses contract fields, failure fields and bad names in the input", () => {
    expect(() =>
      defineInfraMachinePool({
        group: "infrastructure.foo.com",
        kind: "FooMachinePool",
        versions: ["v1beta2"],
        spec: z.object({ providerIDList: z.array(z.string()) }),
      }),
    ).toThrow(/spec.providerIDList: is a contract field/);
    expect(() =>
      defineInfraMachinePool({
        group: "infrastructure.foo.com",
        kind: "FooMachinePool",
        versions: ["v1beta2"],
        spec: z.object({}),
        status: z.object({ failureReason: z.string() }),
      }),
    ).toThrow(/panics/);
    expect(() =>
      defineInfraMachinePool({
        group: "foo",
        kind: "FooMachinePool",
        versions: ["v1beta2"],
        spec: z.object({}),
      }),
    ).toThrow(/DNS subdomain/);
    expect(() =>
      defineInfraMachinePool({
        group: "a.b",
        kind: "fooPool",
        versions: ["v1beta2"],
        spec: z.object({}),
      }),
    ).toThrow(/CamelCase/);
    expect(() =>
      defineInfraMachinePool({ group: "a.b", kind: "Foo", versions: [], spec: z.object({}) }),
    ).toThrow(/at least one/);
  });

  it("adds status.capacity and status.nodeInfo as the cluster-autoscaler reads them (scale from zero)", () => {
    const status = root.status?.properties ?? {};
    // Strings only (not int-or-string as a ResourceList): the autoscaler ignores a map with one integer.
    expect(status.capacity).toMatchObject({
      type: "object",
      maxProperties: 64,
      additionalProperties: { type: "string", maxLength: 64, pattern: expect.any(String) },
    });
    const pattern = new RegExp(
      (status.capacity as { additionalProperties: { pattern: string } }).additionalProperties
        .pattern,
    );
    expect(["4", "500m", "16Gi", "1e3"].every((q) => pattern.test(q))).toBe(true);
    expect(["lots", "-1", "4 cpus", ""].some((q) => pattern.test(q))).toBe(false);
    const nodeInfo = status.nodeInfo as {
      properties: Record<string, { type: string; enum: string[] }>;
    };
    expect(Object.keys(nodeInfo.properties)).toEqual(["architecture", "operatingSystem"]);
    expect(nodeInfo.properties.architecture?.enum).toEqual(
      expect.arrayContaining(["amd64", "arm64", "s390x"]),
    );
    expect(nodeInfo.properties.operatingSystem?.enum).toEqual(["linux", "windows"]);
    expect(() =>
      defineInfraMachinePool({
        group: "infrastructure.foo.com",
        kind: "FooMachinePool",
        versions: ["v1beta2"],
        spec: z.object({}),
        status: z.object({ capacity: z.record(z.string(), z.string()) }),
      }),
    ).toThrow(/status.capacity: is a contract field/);
    const object = (capacity: unknown) => ({
      apiVersion: "infrastructure.foo.com/v1beta2",
      kind: "FooMachinePool",
      metadata: { name: "p" },
      spec: { instanceType: "m5.large" },
      status: { capacity, nodeInfo: { architecture: "arm64", operatingSystem: "linux" } },
    });
    expect(Foo.schema.safeParse(object({ cpu: "2", memory: "8Gi" })).success).toBe(true);
    expect(Foo.schema.safeParse(object({ cpu: "lots", memory: "8Gi" })).success).toBe(false);
    expect(Foo.schema.safeParse(object({ cpu: 2, memory: "8Gi" })).success).toBe(false);
  });

  it("the zod schema of the whole object includes the contract fields", () => {
    const ok = Foo.schema.safeParse({
      apiVersion: "infrastructure.foo.com/v1beta2",
      kind: "FooMachinePool",
      metadata: { name: "p" },
      spec: { instanceType: "m5.large", providerIDList: ["aws:///x"] },
      status: { ready: true, replicas: 1 },
    });
    expect(ok.success).toBe(true);
    const bad = Foo.schema.safeParse({
      apiVersion: "infrastructure.foo.com/v1beta2",
      kind: "FooMachinePool",
      metadata: { name: "p" },
      spec: { instanceType: "m5.large", providerIDList: [""] },
    });
    expect(bad.success).toBe(false);
    expect(bad.error?.issues[0]?.path).toEqual(["spec", "providerIDList", 0]);
  });

  it("generates the TypeScript types from the CRDs through the codegen", async () => {
    const files = await generateInfraMachinePoolTypes(Foo);
    // One module per served version, its runtime compiled to JavaScript with declarations.
    expect(files.map((f) => f.path)).toEqual([
      "common.d.ts",
      "common.js",
      "index.ts",
      "infrastructure.foo.com/v1beta1.runtime.d.ts",
      "infrastructure.foo.com/v1beta1.runtime.js",
      "infrastructure.foo.com/v1beta1.ts",
      "infrastructure.foo.com/v1beta2.runtime.d.ts",
      "infrastructure.foo.com/v1beta2.runtime.js",
      "infrastructure.foo.com/v1beta2.ts",
    ]);
    const content = (path: string) => files.find((f) => f.path === path)?.content ?? "";
    const module = content("infrastructure.foo.com/v1beta2.ts");
    const spec = module.slice(module.indexOf("export interface FooMachinePoolSpec {"));
    expect(spec.slice(0, spec.indexOf("\n}"))).toMatch(
      /instanceType: string;[\s\S]*providerIDList\?: string\[\];[\s\S]*providerID\?: string;/,
    );
    expect(module).toContain("export interface FooMachinePoolTemplate {");
    const runtime = content("infrastructure.foo.com/v1beta2.runtime.d.ts");
    expect(runtime).toContain("export declare const FooMachinePoolResource");
    expect(runtime).toContain("export declare class FooMachinePoolModel");

    const source = await generateInfraMachinePoolTypes(Foo, { runtime: "source" });
    expect(source.map((f) => f.path)).toContain("infrastructure.foo.com/v1beta2.runtime.ts");
    expect(source.some((f) => f.path.endsWith(".js"))).toBe(false);
  }, 60_000);
});

describe("zodToStructuralSchema", () => {
  it.each([
    ["union of different types", z.object({ a: z.union([z.string(), z.number()]) }), "spec.a"],
    [
      "intersection of different types",
      z.object({ a: z.intersection(z.string(), z.number()) }),
      "spec.a",
    ],
    ["tuple", z.object({ t: z.array(z.tuple([z.string(), z.number()])) }), "spec.t[]"],
    [
      "lookahead pattern",
      z.object({ r: z.record(z.string(), z.string().regex(/^(?!x)/)) }),
      "spec.r{}",
    ],
  ])("refuses %s with the zod path", (_name, schema, path) => {
    try {
      zodToStructuralSchema(schema, "spec");
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(NonStructuralSchemaError);
      expect((error as NonStructuralSchemaError).path).toBe(path);
    }
  });

  it("accepts intersections of objects (zod merges them)", () => {
    expect(
      zodToStructuralSchema(
        z.object({ a: z.intersection(z.object({ x: z.string() }), z.object({ y: z.string() })) }),
      ),
    ).toEqual({
      type: "object",
      properties: {
        a: {
          type: "object",
          properties: { x: { type: "string" }, y: { type: "string" } },
          required: ["x", "y"],
        },
      },
      required: ["a"],
    });
  });

  it("refuses recursive schemas", () => {
    const Node: z.ZodType = z.lazy(() => z.object({ children: z.array(Node).optional() }));
    expect(() => zodToStructuralSchema(z.object({ tree: Node }), "spec")).toThrow(
      NonStructuralSchemaError,
    );
  });

  it("maps literal unions to enums, ints to formats, nullables, unknown to preserve-unknown-fields", () => {
    expect(
      zodToStructuralSchema(
        z.object({
          mode: z.union([z.literal("a"), z.literal("b")]),
          n32: z.int32(),
          n: z.int().min(1),
          maybe: z.string().nullable(),
          anything: z.unknown().optional(),
          email: z.email(),
        }),
      ),
    ).toEqual({
      type: "object",
      properties: {
        mode: { type: "string", enum: ["a", "b"] },
        n32: { type: "integer", format: "int32", minimum: -2147483648, maximum: 2147483647 },
        n: { type: "integer", minimum: 1 },
        maybe: { type: "string", nullable: true },
        anything: { "x-kubernetes-preserve-unknown-fields": true },
        email: { type: "string", format: "email" },
      },
      required: ["mode", "n32", "n", "maybe", "email"],
    });
  });
});

describe("names the API server would refuse", () => {
  it("refuses a kind and group whose finalizer is over 63 characters, saying what to shorten", () => {
    // What `create-capi-provider ec2-vm-pool --machine-pool-machines` once produced: the InfraMachine
    // finalizer was 66 characters and real core's every InfraMachine create failed with a 422.
    const define = () =>
      defineInfraMachinePool({
        group: "infrastructure.ec2-vm-pool.example.com",
        kind: "Ec2VmPoolMachinePool",
        versions: ["v1beta2"],
        spec: z.object({ size: z.string() }),
        machinePoolMachines: true,
      });
    expect(define).toThrow(
      /finalizer "ec2vmpoolmachinepoolmachine\.infrastructure\.ec2-vm-pool\.example\.com" \(<kind>\.<group>\) is 66 characters.*shorten the kind or the group by at least 3 characters/,
    );
    // The pool's own finalizer (59 characters) fits: without MachinePool Machines it defines.
    expect(
      defineInfraMachinePool({
        group: "infrastructure.ec2-vm-pool.example.com",
        kind: "Ec2VmPoolMachinePool",
        versions: ["v1beta2"],
        spec: z.object({ size: z.string() }),
      }).finalizer,
    ).toHaveLength(59);
  });
});
