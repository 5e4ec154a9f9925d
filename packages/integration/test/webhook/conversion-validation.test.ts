// Conversion output is checked against the schema of its version (issue 46, findings 2 and 3), over
// HTTPS at /convert: a tenant who writes the conversion-data annotation at the spoke cannot smuggle a
// value the hub's schema refuses (`rootVolumeGiB: -5`, `1e308`, `"eight"`, `{}`, `2.5`) into the
// stored hub, nor stop the process with an annotation nested thousands deep; the refusal is a
// Failure naming the field or the annotation and its bound, never the value. The example's kind
// checks what it copies from `restored`, so its own conversion drops such a value.
import { mkdtemp, rm } from "node:fs/promises";
import { request as httpsRequest } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FakeCloudMachinePoolV0_2 } from "@capi-ts/examples";
import { Annotations } from "@capi-ts/sdk/contract";
import { defineInfraMachinePool, type InfraMachinePoolContent } from "@capi-ts/sdk/crd";
import { expectLosslessConversion } from "@capi-ts/sdk/provider/testing";
import { silentLogger } from "@capi-ts/sdk/runtime";
import { CONVERSION_WEBHOOK_PATH, conversionWebhook, WebhookServer } from "@capi-ts/sdk/webhook";
import { createTestCertificates, type TestCertificates } from "@capi-ts/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";

// A kind whose spoke copies what the hub holds from `restored` without looking, as the guide's
// example did before: the SDK's check of the hub is what keeps a tampered annotation out.
const GROUP = "infrastructure.naive.capi-ts.dev";
const hubSpec = z.object({
  instanceType: z.string().min(1),
  rootVolumeGiB: z.number().int().min(8).optional(),
});
const spokeSpec = z.object({ instanceType: z.string().min(1) });
type Hub = InfraMachinePoolContent<z.output<typeof hubSpec>>;
const NaiveMachinePool = defineInfraMachinePool({
  group: GROUP,
  kind: "NaiveMachinePool",
  versions: ["v1beta1", "v1beta2"],
  spec: hubSpec,
  spokes: {
    v1beta1: {
      spec: spokeSpec,
      toHub(spoke: { spec: z.output<typeof spokeSpec> }, { restored }): Hub {
        return { spec: { ...spoke.spec, rootVolumeGiB: restored?.spec.rootVolumeGiB } };
      },
      fromHub(hub) {
        const { rootVolumeGiB: _dropped, ...spec } = hub.spec;
        return { spec };
      },
    },
  },
});

// The kind of the zero-to-release guide's "Add a version", as written there.
const guideHubSpec = z.object({
  instanceType: z.string(),
  subnets: z.array(z.string()).optional(),
});
const FooMachinePool = defineInfraMachinePool({
  group: "infrastructure.foo.com",
  kind: "FooMachinePool",
  versions: ["v1beta1", "v1beta2"],
  storageVersion: "v1beta2",
  spec: guideHubSpec,
  spokes: {
    v1beta1: {
      spec: z.object({ instanceType: z.string(), subnet: z.string().optional() }),
      toHub(spoke: { spec: { instanceType: string; subnet?: string } }, { restored }) {
        const { subnet, ...rest } = spoke.spec;
        const kept = guideHubSpec.shape.subnets.safeParse(restored?.spec.subnets);
        const subnets =
          kept.success && kept.data?.[0] === subnet ? kept.data : subnet ? [subnet] : undefined;
        return { spec: { ...rest, ...(subnets ? { subnets } : {}) } };
      },
      fromHub(hub) {
        const { subnets, ...rest } = hub.spec;
        return { spec: { ...rest, ...(subnets?.[0] ? { subnet: subnets[0] } : {}) } };
      },
    },
  },
});

let server: WebhookServer;
let certs: TestCertificates;
let dir: string;
let port: number;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "capi-ts-conversion-validation-"));
  certs = await createTestCertificates({ ipAddresses: ["127.0.0.1"] });
  await certs.writeTo(dir);
  server = new WebhookServer({ certDir: dir, port: 0, host: "127.0.0.1", logger: silentLogger() });
  server.register(
    CONVERSION_WEBHOOK_PATH,
    conversionWebhook([NaiveMachinePool, FakeCloudMachinePoolV0_2, FooMachinePool]),
  );
  await server.start();
  port = server.address()?.port ?? 0;
});

afterAll(async () => {
  await server?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

interface Converted {
  uid: string;
  result: { status: string; message?: string };
  convertedObjects: Array<{ spec: Record<string, unknown>; metadata: Record<string, unknown> }>;
}

function convert(desiredAPIVersion: string, object: unknown): Promise<Converted> {
  const body = JSON.stringify({
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "ConversionReview",
    request: { uid: "conv-1", desiredAPIVersion, objects: [object] },
  });
  return new Promise((resolve, reject) => {
    const call = httpsRequest(
      {
        host: "127.0.0.1",
        port,
        path: CONVERSION_WEBHOOK_PATH,
        method: "POST",
        ca: certs.caPem,
        headers: { "content-type": "application/json" },
      },
      (response) => {
        let text = "";
        response.on("data", (chunk: Buffer) => {
          text += chunk.toString("utf8");
        });
        response.on("end", () => {
          try {
            expect(response.statusCode).toBe(200);
            resolve(JSON.parse(text).response as Converted);
          } catch (error) {
            reject(error);
          }
        });
      },
    );
    call.on("error", reject);
    call.end(body);
  });
}

/** A spoke object whose conversion-data annotation is `data` (the text a tenant wrote). */
function spokeWith(group: string, version: string, kind: string, data: string) {
  return {
    apiVersion: `${group}/${version}`,
    kind,
    metadata: {
      name: "pool-a",
      namespace: "tenant",
      annotations: { [Annotations.ConversionData]: data },
    },
    spec: { instanceType: "small", minSize: 0, maxSize: 3 },
  };
}

const SMUGGLED = ["-5", "1e308", '"eight"', "{}", "2.5", "[8]"];

describe("conversion output is checked against its version's schema", () => {
  it("refuses a hub the spoke's toHub filled with a value the hub's schema refuses, naming the field", async () => {
    for (const value of SMUGGLED) {
      const data = `{"spec":{"instanceType":"small","rootVolumeGiB":${value}}}`;
      const answer = await convert(
        `${GROUP}/v1beta2`,
        spokeWith(GROUP, "v1beta1", "NaiveMachinePool", data),
      );
      expect(answer.result.status, value).toBe("Failure");
      expect(answer.convertedObjects).toEqual([]);
      expect(answer.result.message).toContain(
        "objects[0]: NaiveMachinePool tenant/pool-a: converting v1beta1 to v1beta2 gave spec.rootVolumeGiB",
      );
      expect(answer.result.message).toContain("the v1beta2 schema");
      if (value !== "{}" && value !== "[8]") expect(answer.result.message).not.toContain(value);
    }
    // What the schema accepts converts.
    const fine = await convert(
      `${GROUP}/v1beta2`,
      spokeWith(GROUP, "v1beta1", "NaiveMachinePool", '{"spec":{"rootVolumeGiB":20}}'),
    );
    expect(fine.result.status).toBe("Success");
    expect(fine.convertedObjects[0]?.spec).toMatchObject({
      instanceType: "small",
      rootVolumeGiB: 20,
    });
  });

  it("refuses a spoke that fromHub filled with a value the spoke's schema refuses", async () => {
    // A hub stored before the check (or written by hand into etcd): the spoke must not carry it on.
    const answer = await convert(`${GROUP}/v1beta1`, {
      apiVersion: `${GROUP}/v1beta2`,
      kind: "NaiveMachinePool",
      metadata: { name: "pool-a", namespace: "tenant" },
      spec: { instanceType: 42 },
    });
    expect(answer.result).toEqual({
      status: "Failure",
      message: expect.stringContaining(
        "converting v1beta2 to v1beta1 gave spec.instanceType, which the v1beta1 schema refuses",
      ),
    });
  });

  it("refuses a conversion-data annotation past its size or depth bound, naming the annotation", async () => {
    const deep = `{"spec":{"rootVolumeGiB":${"[".repeat(5000)}${"]".repeat(5000)}}}`;
    const tooDeep = await convert(
      `${GROUP}/v1beta2`,
      spokeWith(GROUP, "v1beta1", "NaiveMachinePool", deep),
    );
    expect(tooDeep.result).toEqual({
      status: "Failure",
      message: `objects[0]: NaiveMachinePool tenant/pool-a: the ${Annotations.ConversionData} annotation nests JSON deeper than 100 levels; remove the annotation (the object then converts from what it holds)`,
    });
    const big = `{"spec":{"instanceType":"${"x".repeat(300 * 1024)}"}}`;
    const tooBig = await convert(
      `${GROUP}/v1beta2`,
      spokeWith(GROUP, "v1beta1", "NaiveMachinePool", big),
    );
    expect(tooBig.result).toEqual({
      status: "Failure",
      message: `objects[0]: NaiveMachinePool tenant/pool-a: the ${Annotations.ConversionData} annotation is over 262144 bytes (256 KiB, what the API server allows for all annotations of an object); remove the annotation (the object then converts from what it holds)`,
    });
  });

  it("the example's kind copies from restored only a value its hub schema accepts", async () => {
    const { group } = FakeCloudMachinePoolV0_2;
    for (const value of SMUGGLED) {
      const answer = await convert(
        `${group}/v1beta3`,
        spokeWith(group, "v1beta2", "FakeCloudMachinePool", `{"spec":{"rootVolumeGiB":${value}}}`),
      );
      expect(answer.result.status, value).toBe("Success");
      expect(answer.convertedObjects[0]?.spec, value).toEqual({
        instanceType: "small",
        minSize: 0,
        maxSize: 3,
      });
    }
    const kept = await convert(
      `${group}/v1beta3`,
      spokeWith(group, "v1beta2", "FakeCloudMachinePool", '{"spec":{"rootVolumeGiB":40}}'),
    );
    expect(kept.convertedObjects[0]?.spec).toMatchObject({ rootVolumeGiB: 40 });
  });

  it("the guide's kind copies subnets from restored only when the hub accepts them", async () => {
    const spoke = (data: string) => ({
      ...spokeWith("infrastructure.foo.com", "v1beta1", "FooMachinePool", data),
      spec: { instanceType: "small", subnet: "a" },
    });
    const tampered = await convert(
      "infrastructure.foo.com/v1beta2",
      spoke('{"spec":{"subnets":["a",{"x":1},7]}}'),
    );
    expect(tampered.convertedObjects[0]?.spec).toEqual({ instanceType: "small", subnets: ["a"] });
    const kept = await convert(
      "infrastructure.foo.com/v1beta2",
      spoke('{"spec":{"subnets":["a","b"]}}'),
    );
    expect(kept.convertedObjects[0]?.spec).toEqual({ instanceType: "small", subnets: ["a", "b"] });
  });

  it("leaves the example's and the guide's conversions lossless", () => {
    expect(
      expectLosslessConversion(FakeCloudMachinePoolV0_2, { random: { count: 25 } }),
    ).toBeGreaterThan(0);
    expect(expectLosslessConversion(FooMachinePool, { random: { count: 25 } })).toBeGreaterThan(0);
  });
});
