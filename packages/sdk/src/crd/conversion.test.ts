import { describe, expect, it } from "vitest";
import { z } from "zod";
import { renderComponents } from "../manifests/components.js";
import {
  ConversionRoundTripError,
  expectLosslessConversion,
  firstDifference,
} from "../provider/testing-conversion.js";
import { conversionWebhook } from "../webhook/conversion.js";
import { ConversionError } from "./conversion.js";
import { defineInfraMachinePool } from "./define.js";
import type { InfraMachinePoolContent } from "./definition.js";
import { generateInfraMachinePoolTypes } from "./generate-types.js";
import type { Manifest } from "./manifest.js";

const hubSpec = z.object({
  instanceType: z.string().min(1),
  subnets: z.array(z.string()).optional(),
  spot: z.object({ maxPrice: z.string() }).optional(),
});
const v1beta1Spec = z.object({ instanceType: z.string().min(1), subnet: z.string().optional() });
const poolStatus = z.object({ asgName: z.string().optional() });
type Hub = InfraMachinePoolContent<z.output<typeof hubSpec>, z.output<typeof poolStatus>>;
type V1beta1 = {
  spec: z.output<typeof v1beta1Spec> & Record<string, unknown>;
  status?: Hub["status"];
};
const crdSpec = (crd: Manifest) =>
  crd.spec as { versions: unknown[]; conversion?: Record<string, unknown> };

function defineFoo(lossy = false, throwing?: Error) {
  return defineInfraMachinePool({
    group: "infrastructure.foo.com",
    kind: "FooMachinePool",
    versions: ["v1beta1", "v1beta2"],
    spec: hubSpec,
    status: poolStatus,
    spokes: {
      v1beta1: {
        spec: v1beta1Spec,
        status: poolStatus,
        toHub(spoke: V1beta1, { restored }) {
          if (throwing) throw throwing;
          const { subnet, ...rest } = spoke.spec;
          // The spoke holds the first subnet: the rest come back while it is unchanged.
          const subnets =
            restored && restored.spec.subnets?.[0] === subnet
              ? restored.spec.subnets
              : subnet !== undefined
                ? [subnet]
                : undefined;
          const hub: Hub = {
            spec: {
              ...rest,
              ...(subnets ? { subnets } : {}),
              ...(restored?.spec.spot && !lossy ? { spot: restored.spec.spot } : {}),
            },
            ...(spoke.status ? { status: spoke.status } : {}),
          };
          return hub;
        },
        fromHub(hub): V1beta1 {
          const { subnets, spot: _spot, ...rest } = hub.spec;
          return {
            spec: { ...rest, ...(subnets?.[0] ? { subnet: subnets[0] } : {}) },
            ...(hub.status ? { status: hub.status } : {}),
          };
        },
      },
    },
  });
}

const Foo = defineFoo();
const hubPool = {
  apiVersion: "infrastructure.foo.com/v1beta2",
  kind: "FooMachinePool",
  metadata: { name: "pool-1", namespace: "default" },
  spec: {
    instanceType: "m5.large",
    subnets: ["a", "b"],
    spot: { maxPrice: "0.1" },
    providerIDList: ["foo://1"],
  },
  status: { asgName: "asg-1", ready: true, replicas: 1 },
};

describe("defineInfraMachinePool with spokes", () => {
  it("writes a schema per version, storage on the hub only, and a webhook conversion", () => {
    const versions = crdSpec(Foo.crd).versions as Array<{
      name: string;
      storage: boolean;
      schema: {
        openAPIV3Schema: { properties: { spec: { properties: Record<string, unknown> } } };
      };
    }>;
    expect(versions.map((v) => [v.name, v.storage])).toEqual([
      ["v1beta1", false],
      ["v1beta2", true],
    ]);
    const fields = (name: string) =>
      Object.keys(
        versions.find((v) => v.name === name)?.schema.openAPIV3Schema.properties.spec.properties ??
          {},
      ).sort();
    expect(fields("v1beta1")).toEqual(["instanceType", "providerID", "providerIDList", "subnet"]);
    expect(fields("v1beta2")).toContain("spot");
    expect(crdSpec(Foo.crd).conversion).toMatchObject({
      strategy: "Webhook",
      webhook: {
        conversionReviewVersions: ["v1"],
        clientConfig: { service: { path: "/convert" } },
      },
    });
    expect(crdSpec(Foo.templateCrd).conversion).toMatchObject({ strategy: "Webhook" });
    expect(Foo.crd.metadata.labels?.["cluster.x-k8s.io/v1beta2"]).toBe("v1beta1_v1beta2");
  });

  it("generates the types of every version from the CRDs", async () => {
    const files = await generateInfraMachinePoolTypes(Foo, { runtime: "source" });
    const text = files.map((file) => file.content).join("\n");
    expect(files.map((file) => file.path).join(" ")).toMatch(/v1beta1/);
    expect(text).toContain("subnet");
    expect(text).toContain("spot");
  });

  it("keeps the single-schema form as it was (no conversion)", () => {
    const single = defineInfraMachinePool({
      group: "infrastructure.foo.com",
      kind: "BarMachinePool",
      versions: ["v1beta1", "v1beta2"],
      spec: hubSpec,
    });
    expect(single.conversion).toBeUndefined();
    expect(crdSpec(single.crd).conversion).toBeUndefined();
  });

  it("refuses spokes that miss a version or name the hub", () => {
    const base = {
      group: "infrastructure.foo.com",
      kind: "BazMachinePool",
      versions: ["v1alpha1", "v1beta1", "v1beta2"],
      spec: hubSpec,
    };
    const spoke = {
      spec: v1beta1Spec,
      toHub: () => ({ spec: { instanceType: "x" } }),
      fromHub: () => ({ spec: {} }),
    };
    expect(() => defineInfraMachinePool({ ...base, spokes: { v1beta1: spoke } })).toThrow(
      /version v1alpha1 has no entry in spokes/,
    );
    expect(() =>
      defineInfraMachinePool({
        ...base,
        spokes: { v1alpha1: spoke, v1beta1: spoke, v1beta2: spoke },
      }),
    ).toThrow(/spokes.v1beta2 is the storage version/);
  });
});

describe("KindConversion", () => {
  const conversion = Foo.conversion;
  if (!conversion) throw new Error("Foo has no conversion");

  it("keeps what the spoke cannot hold in the conversion-data annotation, and restores it", () => {
    const spoke = conversion.convert(hubPool, "v1beta1");
    expect(spoke).toMatchObject({
      apiVersion: "infrastructure.foo.com/v1beta1",
      spec: { instanceType: "m5.large", subnet: "a", providerIDList: ["foo://1"] },
      status: { asgName: "asg-1", ready: true },
    });
    const annotations = (spoke.metadata as { annotations: Record<string, string> }).annotations;
    expect(JSON.parse(annotations["cluster.x-k8s.io/conversion-data"] ?? "")).toMatchObject({
      spec: { spot: { maxPrice: "0.1" }, subnets: ["a", "b"] },
    });
    const back = conversion.convert(spoke, "v1beta2");
    expect(back).toEqual(hubPool);
  });

  it("writes no annotation when the spoke holds everything", () => {
    const plain = { ...hubPool, spec: { instanceType: "m5.large", subnets: ["a"] } };
    const spoke = conversion.convert(plain, "v1beta1");
    expect((spoke.metadata as { annotations?: unknown }).annotations).toBeUndefined();
  });

  it("converts templates through spec.template.spec", () => {
    const template = {
      apiVersion: "infrastructure.foo.com/v1beta2",
      kind: "FooMachinePoolTemplate",
      metadata: { name: "t", namespace: "default" },
      spec: { template: { metadata: { labels: { a: "b" } }, spec: hubPool.spec } },
    };
    const spoke = conversion.convert(template, "v1beta1");
    expect(spoke.spec).toEqual({
      template: {
        metadata: { labels: { a: "b" } },
        spec: { instanceType: "m5.large", subnet: "a", providerIDList: ["foo://1"] },
      },
    });
    expect(conversion.convert(spoke, "v1beta2")).toEqual(template);
  });

  it("names an unknown version or kind without quoting the object", () => {
    expect(() => conversion.convert(hubPool, "v9")).toThrow(ConversionError);
    expect(() =>
      conversion.convert({ ...hubPool, apiVersion: "infrastructure.foo.com/v7" }, "v1beta1"),
    ).toThrow(
      /FooMachinePool default\/pool-1: apiVersion infrastructure.foo.com\/v7 is not a served/,
    );
    expect(() => conversion.convert({ ...hubPool, kind: "Secret" }, "v1beta1")).toThrow(
      /the kind is not one of FooMachinePool, FooMachinePoolTemplate/,
    );
  });
});

describe("conversionWebhook", () => {
  const review = (objects: unknown[], desiredAPIVersion = "infrastructure.foo.com/v1beta1") => ({
    uid: "u-1",
    desiredAPIVersion,
    objects,
  });

  it("converts every object of a review", async () => {
    const answer = await conversionWebhook([Foo])(review([hubPool, hubPool]));
    expect(answer.result.status).toBe("Success");
    expect(answer.convertedObjects.map((o) => o.apiVersion)).toEqual([
      "infrastructure.foo.com/v1beta1",
      "infrastructure.foo.com/v1beta1",
    ]);
  });

  it("answers Failure for an unknown version, a malformed request and a throwing conversion", async () => {
    const webhook = conversionWebhook([Foo]);
    expect(await webhook(review([hubPool], "infrastructure.foo.com/v3"))).toMatchObject({
      result: { status: "Failure", message: expect.stringMatching(/v3 is not a served version/) },
      convertedObjects: [],
    });
    expect(
      (await webhook({ uid: "u", desiredAPIVersion: 3, objects: "x" } as never)).result.status,
    ).toBe("Failure");
    const secret = "s3cr3t-value";
    const throwing = conversionWebhook([defineFoo(false, new Error(`bad ${secret}`))]);
    const errors: unknown[] = [];
    const logger = { error: (...args: unknown[]) => errors.push(args) } as never;
    const spoke = { ...conversion(hubPool), metadata: { name: "p", namespace: "ns" } };
    const answer = await throwing(review([spoke], "infrastructure.foo.com/v1beta2"), logger);
    expect(answer.result).toEqual({
      status: "Failure",
      message:
        "objects[0]: FooMachinePool ns/p: converting v1beta1 to v1beta2 threw (the provider's log has the error)",
    });
    expect(JSON.stringify(answer)).not.toContain(secret);
    expect(errors).toHaveLength(1);
    const told = conversionWebhook([defineFoo(false, new ConversionError("subnet is not a name"))]);
    expect((await told(review([spoke], "infrastructure.foo.com/v1beta2"))).result.message).toBe(
      "objects[0]: FooMachinePool ns/p: converting v1beta1 to v1beta2: subnet is not a name",
    );
  });

  function conversion(object: Record<string, unknown>) {
    return Foo.conversion?.convert(object, "v1beta1") as Record<string, unknown>;
  }
});

describe("renderComponents with a converting kind", () => {
  it("points the CRDs' conversion webhook at the Service and injects the CA", () => {
    const objects = renderComponents({
      name: "foo",
      kinds: [Foo],
      image: "foo:v1",
      validating: false,
    });
    const crds = objects.filter((o) => o.kind === "CustomResourceDefinition");
    expect(crds).toHaveLength(2);
    for (const crd of crds) {
      expect(crd.metadata.annotations).toEqual({
        "cert-manager.io/inject-ca-from": "foo-provider-system/foo-provider-serving-cert",
      });
      expect(crdSpec(crd).conversion).toMatchObject({
        strategy: "Webhook",
        webhook: {
          clientConfig: {
            service: {
              name: "foo-provider-webhook-service",
              namespace: "foo-provider-system",
              path: "/convert",
            },
          },
        },
      });
    }
    // The webhook server and its certificate come along though no admission webhook is served.
    expect(objects.map((o) => o.kind)).toEqual(
      expect.arrayContaining(["Service", "Certificate", "Issuer"]),
    );
  });
});

describe("expectLosslessConversion", () => {
  it("passes a lossless kind on samples and seeded random objects", () => {
    expect(
      expectLosslessConversion(Foo, { samples: [hubPool], random: { count: 20, seed: 7 } }),
    ).toBe(41);
  });

  it("fails a lossy conversion with the path of the first difference", () => {
    let caught: unknown;
    try {
      expectLosslessConversion(defineFoo(true), { samples: [hubPool] });
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(ConversionRoundTripError);
    expect((caught as ConversionRoundTripError).path).toBe("spec.spot");
    expect((caught as Error).message).toMatch(
      /FooMachinePool pool #0: v1beta2 → v1beta1 → v1beta2 differs at spec.spot: expected \{"maxPrice":"0.1"\}, got nothing/,
    );
  });

  it("fails a throwing conversion", () => {
    expect(() =>
      expectLosslessConversion(defineFoo(false, new Error("boom")), { samples: [hubPool] }),
    ).toThrow(/the conversion threw/);
  });

  it("finds the first differing path", () => {
    expect(firstDifference({ a: [1, { b: 2 }] }, { a: [1, { b: 3 }] })).toBe("a[1].b");
    expect(firstDifference({ a: 1 }, { a: 1 })).toBeUndefined();
  });
});
