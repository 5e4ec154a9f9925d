import { readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import { load } from "js-yaml";
import ts from "typescript";
import { beforeAll, describe, expect, test } from "vitest";
import type { z } from "zod";
import { compileModule } from "./emit/compile.js";
import { compileRuntimeDialect } from "./emit/fast-compile.js";
import { checkGenerated, GENERATED_HEADER, type GenerateResult, generate } from "./generate.js";
import {
  awsCrdsDir,
  capiCrdsDir,
  generateInto,
  importModule,
  packageDir,
  repoRoot,
  typecheck,
  writeText,
} from "./test-helpers.js";

const capi = capiCrdsDir;
const aws = awsCrdsDir;

type Module = Record<string, unknown>;
interface SchemaIssue {
  readonly path: string;
  readonly message: string;
  readonly code: string;
}
interface ModelInstance {
  validate(): void;
  toJSON(): unknown;
}
type ModelClass = (new (
  data?: unknown,
) => ModelInstance) & { is(value: unknown): boolean; apiVersion: string; kind: string };

let dir = "";
let result: GenerateResult;
let index: Module;

async function fixture(name: string): Promise<Record<string, unknown>> {
  return load(await readFile(join(packageDir, "test", "fixtures", name), "utf8")) as Record<
    string,
    unknown
  >;
}

function ns(name: string): Module {
  return index[name] as Module;
}

function schema(module: Module, name: string): z.ZodType {
  return module[`${name}Schema`] as z.ZodType;
}

/** Parses and returns the issues as "path: code". */
function issues(module: Module, kind: string, value: unknown): string[] {
  const parsed = schema(module, kind).safeParse(value);
  if (parsed.success) return [];
  const format = index.formatFieldPath as (path: readonly PropertyKey[]) => string;
  return parsed.error.issues.map((issue) => `${format(issue.path)}: ${issue.code}`);
}

beforeAll(async () => {
  ({ dir, result } = await generateInto({ inputs: [capi, aws] }, "reference"));
  index = await importModule<Module>(join(dir, "index.ts"));
}, 120_000);

/** A consumer of the generated types: what must and must not compile against them. */
const CONSUMER = `import { clusterv1beta2 } from "./index.js";
type MP = clusterv1beta2.MachinePool;
const base = { apiVersion: "cluster.x-k8s.io/v1beta2", kind: "MachinePool" } as const;
const template = { spec: { clusterName: "c", bootstrap: {}, infrastructureRef: { apiGroup: "g", kind: "K", name: "n" } } };
export const ok: MP = { ...base, spec: { clusterName: "c", template } };
type Effect = NonNullable<MP["spec"]["template"]["spec"]["taints"]>[number]["effect"];
export const effect: Effect = "NoSchedule";
// @ts-expect-error enum violation
export const badEffect: Effect = "Bogus";
// @ts-expect-error missing required clusterName
export const missing: MP = { ...base, spec: { template } };
// @ts-expect-error unknown field
export const unknown: MP = { ...base, spec: { clusterName: "c", template, bogusField: 1 } };
// @ts-expect-error replicas is a number
export const replicas: MP = { ...base, spec: { clusterName: "c", template, replicas: "3" } };
type Surge = NonNullable<NonNullable<NonNullable<NonNullable<NonNullable<clusterv1beta2.MachineDeployment["spec"]>["rollout"]>["strategy"]>["rollingUpdate"]>["maxSurge"]>;
export const surgePercent: Surge = "25%";
export const surgeCount: Surge = 3;
// @ts-expect-error int-or-string is not boolean
export const surgeBool: Surge = true;
type Value = clusterv1beta2.ClusterSpecTopologyVariable["value"];
export const v1: Value = "str";
export const v2: Value = 3;
export const v3: Value = { a: { b: [1, null] } };
// @ts-expect-error a function is not JSON
export const v4: Value = () => 1;
// @ts-expect-error wrong apiVersion literal
export const wrongVersion: MP = { ...base, apiVersion: "cluster.x-k8s.io/v1beta1", spec: { clusterName: "c", template } };
// @ts-expect-error metadata.name is a string
export const badName: MP = { ...base, metadata: { name: 3 }, spec: { clusterName: "c", template } };
export const model = new clusterv1beta2.MachinePool({ spec: { clusterName: "c", template } });
export const fromModel: MP = model;
export const version: "cluster.x-k8s.io/v1beta2" = clusterv1beta2.MachinePool.apiVersion;
export const guard = (x: unknown): string | undefined => (clusterv1beta2.MachinePool.is(x) ? x.spec?.clusterName : undefined);
`;

describe("every CRD of the target CAPI release and of the AWS reference set", () => {
  test("generates one module per served group/version, skipping unserved versions", () => {
    const summary = result.groupVersions.map((gv) => `${gv.alias}: ${gv.kinds.join(",")}`);
    expect(summary).toContain(
      "clusterv1beta2: Cluster,ClusterClass,Machine,MachineDeployment,MachineDrainRule,MachineHealthCheck,MachinePool,MachineSet",
    );
    expect(summary).toContain("bootstrapv1beta1: KubeadmConfig,KubeadmConfigTemplate");
    expect(summary).toContain(
      "controlplanev1beta2: KubeadmControlPlane,KubeadmControlPlaneTemplate",
    );
    const infraV1beta2 = result.groupVersions.find((gv) => gv.alias === "infrastructurev1beta2");
    expect(infraV1beta2?.kinds).toEqual(
      expect.arrayContaining([
        "AWSMachinePool",
        "DevMachinePool",
        "DevMachinePoolTemplate",
        "ROSAMachinePool",
      ]),
    );
    // The AWS v1beta1 versions are served: false, so v1beta1 holds only the Dev kinds.
    const infraV1beta1 = result.groupVersions.find((gv) => gv.alias === "infrastructurev1beta1");
    expect(infraV1beta1?.kinds.some((kind) => kind.startsWith("AWS"))).toBe(false);
    expect(result.files.map((f) => f.path)).toEqual(
      expect.arrayContaining([
        "cluster.x-k8s.io/v1beta2.ts",
        "cluster.x-k8s.io/v1beta2.runtime.d.ts",
        "cluster.x-k8s.io/v1beta2.runtime.js",
        "common.d.ts",
        "common.js",
        "index.ts",
      ]),
    );
  });

  test("regenerates byte-identically, whatever the input order", { timeout: 60_000 }, async () => {
    const files = [capi, aws];
    const again = await generate({ inputs: [...files].reverse() });
    expect(again.files).toEqual(result.files);
  });

  test("type-checks under strict NodeNext, with typed int-or-string and free-form fields", async () => {
    await writeText(join(dir, "consumer.ts"), CONSUMER);
    expect(await typecheck(dir)).toEqual([]);
  }, 240_000);

  test("with the runtime as TypeScript, every schema, Model class and resource type-checks against its interface", async () => {
    // The compiled runtime's declarations are only as right as the code they come from: this is
    // where the compiler proves that code against the interfaces.
    const source = await generateInto(
      { inputs: [capi, aws], runtime: "source" },
      "reference-source",
    );
    try {
      expect(source.result.files.some((f) => f.path.endsWith(".js"))).toBe(false);
      await writeText(join(source.dir, "consumer.ts"), CONSUMER);
      expect(await typecheck(source.dir)).toEqual([]);
    } finally {
      await rm(source.dir, { recursive: true, force: true });
    }
  }, 240_000);

  test("the compiled runtime is the TypeScript runtime, compiled: the common module by tsc, the others in the generator's dialect without it", async () => {
    const source = await generate({ inputs: [capi, aws], runtime: "source" });
    const compiled = new Map(result.files.map((f) => [f.path, f.content]));
    const runtimeSources = source.files.filter(
      (f) => f.path.endsWith(".runtime.ts") || f.path === "common.ts",
    );
    expect(runtimeSources.length).toBe(result.groupVersions.length + 1);
    // TypeScript's reading of a module, printed without comments: equal means the same program.
    const program = (js: string) =>
      ts.transpileModule(js, {
        compilerOptions: {
          target: ts.ScriptTarget.ES2022,
          module: ts.ModuleKind.ESNext,
          removeComments: true,
        },
      }).outputText;
    for (const file of runtimeSources) {
      const base = file.path.replace(/\.ts$/, "");
      const text = file.content.slice(GENERATED_HEADER.length + 1);
      const { js, dts } = compileModule(file.path, text);
      expect(compiled.get(`${base}.d.ts`), file.path).toBe(`${GENERATED_HEADER}\n${dts}`);
      if (file.path === "common.ts") {
        expect(compiled.get(`${base}.js`)).toBe(`${GENERATED_HEADER}\n${js}`);
        continue;
      }
      const refusals: string[] = [];
      const fast = compileRuntimeDialect(text, (reason) => refusals.push(reason));
      expect(refusals, file.path).toEqual([]);
      expect(compiled.get(`${base}.js`)).toBe(`${GENERATED_HEADER}\n${fast?.js}`);
      expect(program(fast?.js ?? ""), file.path).toBe(program(js));
    }
    // Everything else is the same in both forms.
    const others = source.files.filter((f) => !runtimeSources.includes(f));
    for (const file of others) expect(compiled.get(file.path)).toBe(file.content);
  }, 120_000);
});

describe("validation of real objects", () => {
  test.each([
    ["cluster-v1beta2.yaml", "clusterv1beta2", "Cluster"],
    ["machinepool-v1beta2.yaml", "clusterv1beta2", "MachinePool"],
    ["devmachinepool-v1beta2.yaml", "infrastructurev1beta2", "DevMachinePool"],
    ["awsmachinepool-v1beta2.yaml", "infrastructurev1beta2", "AWSMachinePool"],
  ])("%s validates with the schema and the Model class", async (file, alias, kind) => {
    const object = await fixture(file);
    const module = ns(alias);
    expect(issues(module, kind, object)).toEqual([]);
    const Model = module[kind] as ModelClass;
    const { apiVersion: _a, kind: _k, ...data } = object;
    const model = new Model(data);
    expect(() => model.validate()).not.toThrow();
    expect(model.toJSON()).toEqual(object);
    expect(Model.is(object)).toBe(true);
    expect(Model.is({ ...object, kind: "Other" })).toBe(false);
  });

  test.each([
    [
      "wrong type",
      (o: MPObject) => {
        o.spec.replicas = "3";
      },
      "spec.replicas: invalid_type",
    ],
    [
      "enum violation",
      (o: MPObject) => {
        o.spec.template.spec.taints[0].effect = "Bogus";
      },
      "spec.template.spec.taints[0].effect: invalid_value",
    ],
    [
      "too long",
      (o: MPObject) => {
        o.spec.clusterName = "x".repeat(64);
      },
      "spec.clusterName: too_big",
    ],
    [
      "too many items",
      (o: MPObject) => {
        o.spec.failureDomains = Array.from({ length: 101 }, (_, i) => `fd${i}`);
      },
      "spec.failureDomains: too_big",
    ],
    [
      "missing required",
      (o: MPObject) => void delete o.spec.clusterName,
      "spec.clusterName: invalid_type",
    ],
    [
      "pattern",
      (o: MPObject) => {
        o.spec.template.spec.taints[0].key = "-bad-";
      },
      "spec.template.spec.taints[0].key: invalid_format",
    ],
    [
      "int32 range",
      (o: MPObject) => {
        o.spec.replicas = 2 ** 40;
      },
      "spec.replicas: too_big",
    ],
    [
      "date-time format",
      (o: MPObject) => {
        o.status.conditions[0].lastTransitionTime = "yesterday";
      },
      "status.conditions[0].lastTransitionTime: invalid_format",
    ],
    [
      "map-list key uniqueness",
      (o: MPObject) => void o.spec.template.spec.taints.push({ ...o.spec.template.spec.taints[0] }),
      "spec.template.spec.taints[1]: custom",
    ],
    [
      "wrong apiVersion",
      (o: MPObject) => {
        o.apiVersion = "cluster.x-k8s.io/v1beta1";
      },
      "apiVersion: invalid_value",
    ],
  ])("a MachinePool with a %s is rejected at the right path", async (_name, mutate, expected) => {
    const object = (await fixture("machinepool-v1beta2.yaml")) as unknown as MPObject;
    mutate(object);
    expect(issues(ns("clusterv1beta2"), "MachinePool", object)).toEqual([expected]);
  });

  test("Model.validate() throws a SchemaValidationError naming every problem", async () => {
    const module = ns("clusterv1beta2");
    const Model = module.MachinePool as ModelClass;
    const object = (await fixture("machinepool-v1beta2.yaml")) as unknown as MPObject;
    object.spec.clusterName = "";
    object.spec.template.spec.taints[0].effect = "Bogus";
    const { apiVersion: _a, kind: _k, ...data } = object;
    let error: unknown;
    try {
      new Model(data).validate();
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(index.SchemaValidationError as new () => Error);
    const found = (error as { issues: SchemaIssue[] }).issues.map((i) => i.path);
    expect(found).toEqual(["spec.clusterName", "spec.template.spec.taints[0].effect"]);
    expect((error as Error).message).toMatch(
      /^MachinePool cluster\.x-k8s\.io\/v1beta2 is invalid: spec\.clusterName: /,
    );
  });

  test("unknown fields are kept by parse (round-trip safe), not stripped", async () => {
    const object = await fixture("devmachinepool-v1beta2.yaml");
    const withExtra = { ...object, spec: { ...(object.spec as object), futureField: { x: 1 } } };
    const parsed = schema(ns("infrastructurev1beta2"), "DevMachinePool").parse(withExtra);
    expect(parsed).toEqual(withExtra);
  });
});

interface Taint {
  effect: string;
  key: string;
}

interface MPObject {
  apiVersion: string;
  kind: string;
  spec: {
    clusterName?: string;
    replicas?: unknown;
    failureDomains?: string[];
    template: { spec: { taints: [Taint, ...Taint[]] } };
  };
  status: { conditions: [{ lastTransitionTime: string }] };
}

describe("defaults and metadata", () => {
  test("applyDefaults fills defaults the way the API server does", () => {
    const module = ns("infrastructurev1beta2");
    const applyDefaults = index.applyDefaults as (resource: unknown, object: unknown) => unknown;
    const object = {
      apiVersion: "infrastructure.cluster.x-k8s.io/v1beta2",
      kind: "AWSMachinePool",
      spec: { awsLaunchTemplate: {}, mixedInstancesPolicy: { instancesDistribution: {} } },
    };
    applyDefaults(module.AWSMachinePoolResource, object);
    expect(object.spec).toEqual({
      // absent scalars with defaults are set; absent objects (instanceMetadataOptions, ignition) stay absent
      minSize: 1,
      maxSize: 1,
      awsLaunchTemplate: {},
      mixedInstancesPolicy: {
        instancesDistribution: {
          onDemandAllocationStrategy: "prioritized",
          onDemandBaseCapacity: 0,
          onDemandPercentageAboveBaseCapacity: 100,
          spotAllocationStrategy: "lowest-price",
        },
      },
    });
    // present values are kept
    const explicit = { spec: { minSize: 4, awsLaunchTemplate: {} } };
    applyDefaults(module.AWSMachinePoolResource, explicit);
    expect(explicit.spec.minSize).toBe(4);
  });

  test("resource metadata comes from the CRD", () => {
    expect(ns("clusterv1beta2").MachinePoolResource).toMatchObject({
      group: "cluster.x-k8s.io",
      version: "v1beta2",
      apiVersion: "cluster.x-k8s.io/v1beta2",
      kind: "MachinePool",
      listKind: "MachinePoolList",
      plural: "machinepools",
      singular: "machinepool",
      scope: "Namespaced",
      served: true,
      storage: true,
      storageVersion: "v1beta2",
      servedVersions: ["v1beta1", "v1beta2"],
      deprecated: false,
      shortNames: ["mp"],
      categories: ["cluster-api"],
      labels: {},
      subresources: {
        status: true,
        scale: { specReplicasPath: ".spec.replicas", statusReplicasPath: ".status.replicas" },
      },
    });
    expect(ns("clusterv1beta1").MachinePoolResource).toMatchObject({
      served: true,
      storage: false,
      deprecated: true,
    });
    expect(ns("clusterv1beta2").MachineDrainRuleResource).toMatchObject({
      subresources: { status: false },
    });
    expect(ns("runtimev1beta2").ExtensionConfigResource).toMatchObject({ scope: "Cluster" });
  });
});

test("the committed SDK types (packages/sdk/src/api) are up to date; run ./dev generate if this fails", async () => {
  const fresh = await generate({ inputs: [capi] });
  const report = await checkGenerated(fresh.files, join(repoRoot, "packages", "sdk", "src", "api"));
  expect(report).toEqual({ changed: [], missing: [], extra: [] });
});
