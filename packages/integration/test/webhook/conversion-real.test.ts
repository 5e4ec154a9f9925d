// The conversion webhook: a kind with two versions (v1beta2 the hub, v1beta1 a spoke that holds one
// subnet and no spot settings). Over HTTPS, malformed and oversized reviews are answered as the
// contract says; on a real kube-apiserver, the CRD's webhook conversion calls this process's
// WebhookServer at /convert, so an object written at one version reads at the other, and the fields
// v1beta1 cannot hold travel in the conversion-data annotation and come back.
// The real part is skipped, loudly, without the control plane binaries.
import { mkdtemp, rm } from "node:fs/promises";
import { request as httpsRequest } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { defineInfraMachinePool, type InfraMachinePoolContent } from "@capi-ts/sdk/crd";
import { expectLosslessConversion } from "@capi-ts/sdk/provider/testing";
import { KubeClient, silentLogger } from "@capi-ts/sdk/runtime";
import { CONVERSION_WEBHOOK_PATH, conversionWebhook, WebhookServer } from "@capi-ts/sdk/webhook";
import {
  type ControlPlane,
  createTestCertificates,
  findControlPlaneBinaries,
  startControlPlane,
  type TestCertificates,
} from "@capi-ts/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";

const hubSpec = z.object({
  instanceType: z.string().min(1),
  subnets: z.array(z.string()).optional(),
  spot: z.object({ maxPrice: z.string() }).optional(),
});
const v1beta1Spec = z.object({ instanceType: z.string().min(1), subnet: z.string().optional() });
type Hub = InfraMachinePoolContent<z.output<typeof hubSpec>>;
type V1beta1 = { spec: z.output<typeof v1beta1Spec>; status?: Hub["status"] };

const GROUP = "infrastructure.conversion.capi-ts.dev";
const ConvMachinePool = defineInfraMachinePool({
  group: GROUP,
  kind: "ConvMachinePool",
  versions: ["v1beta1", "v1beta2"],
  spec: hubSpec,
  spokes: {
    v1beta1: {
      spec: v1beta1Spec,
      toHub(spoke: V1beta1, { restored }): Hub {
        const { subnet, ...rest } = spoke.spec;
        // v1beta1 holds the first subnet: the others come back while it is unchanged.
        const subnets =
          restored && restored.spec.subnets?.[0] === subnet
            ? restored.spec.subnets
            : subnet !== undefined
              ? [subnet]
              : undefined;
        return {
          spec: {
            ...rest,
            ...(subnets ? { subnets } : {}),
            ...(restored?.spec.spot ? { spot: restored.spec.spot } : {}),
          },
          ...(spoke.status ? { status: spoke.status } : {}),
        };
      },
      fromHub(hub): V1beta1 {
        const { subnets, spot: _spot, ...rest } = hub.spec;
        return {
          spec: { ...rest, ...(subnets?.[0] !== undefined ? { subnet: subnets[0] } : {}) },
          ...(hub.status ? { status: hub.status } : {}),
        };
      },
    },
  },
});

const hubPool = {
  apiVersion: `${GROUP}/v1beta2`,
  kind: "ConvMachinePool",
  metadata: { name: "spotty", namespace: "default" },
  spec: { instanceType: "large", subnets: ["a", "b"], spot: { maxPrice: "0.25" } },
};

async function post(
  port: number,
  certs: TestCertificates,
  body: string,
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const request = httpsRequest(
      {
        host: "127.0.0.1",
        port,
        path: CONVERSION_WEBHOOK_PATH,
        method: "POST",
        ca: certs.caPem,
        headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) },
      },
      (response) => {
        let text = "";
        response.on("data", (chunk: Buffer) => {
          text += chunk.toString("utf8");
        });
        response.on("end", () => resolve({ status: response.statusCode ?? 0, text }));
      },
    );
    request.on("error", reject);
    request.end(body);
  });
}

let server: WebhookServer;
let certs: TestCertificates;
let dir: string;
let port: number;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "capi-ts-conversion-"));
  certs = await createTestCertificates({ ipAddresses: ["127.0.0.1"] });
  await certs.writeTo(dir);
  server = new WebhookServer({
    certDir: dir,
    port: 0,
    host: "127.0.0.1",
    logger: silentLogger(),
    maxBodyBytes: 64 * 1024,
    maxBytesInFlight: 1024 * 1024,
  });
  server.register(CONVERSION_WEBHOOK_PATH, conversionWebhook([ConvMachinePool]));
  await server.start();
  port = server.address()?.port ?? 0;
});

afterAll(async () => {
  await server?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe("the conversion webhook over HTTPS", () => {
  it("converts without loss (the round-trip helper)", () => {
    expect(
      expectLosslessConversion(ConvMachinePool, { samples: [hubPool], random: { count: 25 } }),
    ).toBeGreaterThan(0);
  });

  it("answers a malformed review with a Failure result, and an oversized one with 413", async () => {
    const malformed = await post(port, certs, "{not json");
    expect(malformed.status).toBe(200);
    expect(JSON.parse(malformed.text)).toEqual({
      apiVersion: "apiextensions.k8s.io/v1",
      kind: "ConversionReview",
      response: {
        uid: "",
        result: {
          status: "Failure",
          message:
            "the body is not a ConversionReview (apiextensions.k8s.io/v1) with a request.uid",
        },
        convertedObjects: [],
      },
    });
    const unknown = await post(
      port,
      certs,
      JSON.stringify({
        apiVersion: "apiextensions.k8s.io/v1",
        kind: "ConversionReview",
        request: { uid: "u-2", desiredAPIVersion: `${GROUP}/v9`, objects: [hubPool] },
      }),
    );
    expect(JSON.parse(unknown.text).response).toMatchObject({
      uid: "u-2",
      result: { status: "Failure", message: expect.stringContaining("v9 is not a served version") },
    });
    const oversized = await post(port, certs, JSON.stringify({ padding: "x".repeat(100_000) }));
    expect(oversized.status).toBe(413);
  });
});

const binaries = findControlPlaneBinaries();
if (!binaries) {
  console.warn(
    "\n!!! SKIPPED: the conversion webhook on a real kube-apiserver (no binaries). Set KUBEBUILDER_ASSETS.\n",
  );
}

describe.skipIf(!binaries)("webhook conversion on a real kube-apiserver", () => {
  let plane: ControlPlane;
  let client: KubeClient;

  beforeAll(async () => {
    plane = await startControlPlane();
    client = new KubeClient(plane.kubeConfig, { fieldManager: "conversion-test" });
  }, 180_000);

  afterAll(async () => {
    await plane?.stop();
  });

  // The CRDs as defined, their conversion webhook pointed at this process instead of a Service; once.
  let installed: Promise<void> | undefined;
  const install = () => {
    installed ??= installCrds();
    return installed;
  };
  const installCrds = async () => {
    const crds = [ConvMachinePool.crd, ConvMachinePool.templateCrd].map((crd) => {
      const copy = structuredClone(crd);
      const spec = copy.spec as { conversion: { webhook: { clientConfig: unknown } } };
      spec.conversion.webhook.clientConfig = {
        url: `https://127.0.0.1:${port}${CONVERSION_WEBHOOK_PATH}`,
        caBundle: certs.caBundle,
      };
      return copy;
    });
    await plane.installCRDs(crds);
  };
  const at = (version: string, name = "") =>
    `/apis/${GROUP}/${version}/namespaces/default/convmachinepools${name ? `/${name}` : ""}`;

  it("reads an object at the other version, the spoke-less fields in the annotation", async () => {
    await install();

    // Written at the hub, read at v1beta1: one subnet, the rest in the annotation.
    await expect
      .poll(
        async () => {
          try {
            await client.request({ method: "POST", path: at("v1beta2"), body: hubPool });
            return "created";
          } catch (error) {
            return (error as Error).message;
          }
        },
        { timeout: 20_000, interval: 250 },
      )
      .toBe("created");
    const spoke = (await client.request({ method: "GET", path: at("v1beta1", "spotty") })) as {
      apiVersion: string;
      metadata: { annotations?: Record<string, string> };
      spec: Record<string, unknown>;
    };
    expect(spoke.apiVersion).toBe(`${GROUP}/v1beta1`);
    expect(spoke.spec).toEqual({ instanceType: "large", subnet: "a" });
    const data = JSON.parse(
      spoke.metadata.annotations?.["cluster.x-k8s.io/conversion-data"] ?? "{}",
    );
    expect(data.spec).toEqual({
      instanceType: "large",
      subnets: ["a", "b"],
      spot: { maxPrice: "0.25" },
    });

    // Updated through v1beta1 (the annotation goes along), read at the hub: nothing was lost.
    spoke.spec.instanceType = "xlarge";
    await client.request({ method: "PUT", path: at("v1beta1", "spotty"), body: spoke });
    const hub = (await client.request({ method: "GET", path: at("v1beta2", "spotty") })) as {
      metadata: { annotations?: Record<string, string> };
      spec: Record<string, unknown>;
    };
    expect(hub.spec).toEqual({
      instanceType: "xlarge",
      subnets: ["a", "b"],
      spot: { maxPrice: "0.25" },
    });
    expect(hub.metadata.annotations?.["cluster.x-k8s.io/conversion-data"]).toBeUndefined();

    // Written at v1beta1, read at the hub: the subnet becomes a list, no annotation is needed.
    await client.request({
      method: "POST",
      path: at("v1beta1"),
      body: {
        apiVersion: `${GROUP}/v1beta1`,
        kind: "ConvMachinePool",
        metadata: { name: "plain", namespace: "default" },
        spec: { instanceType: "small", subnet: "z" },
      },
    });
    const plain = (await client.request({ method: "GET", path: at("v1beta2", "plain") })) as {
      spec: Record<string, unknown>;
    };
    expect(plain.spec).toEqual({ instanceType: "small", subnets: ["z"] });

    // The template converts with the same functions, on spec.template.spec.
    const templates = (version: string, name = "") =>
      `/apis/${GROUP}/${version}/namespaces/default/convmachinepooltemplates${name ? `/${name}` : ""}`;
    await client.request({
      method: "POST",
      path: templates("v1beta2"),
      body: {
        apiVersion: `${GROUP}/v1beta2`,
        kind: "ConvMachinePoolTemplate",
        metadata: { name: "tpl", namespace: "default" },
        spec: { template: { spec: hubPool.spec } },
      },
    });
    const template = (await client.request({
      method: "GET",
      path: templates("v1beta1", "tpl"),
    })) as {
      metadata: { annotations?: Record<string, string> };
      spec: { template: { spec: Record<string, unknown> } };
    };
    expect(template.spec.template.spec).toEqual({ instanceType: "large", subnet: "a" });
    expect(
      JSON.parse(template.metadata.annotations?.["cluster.x-k8s.io/conversion-data"] ?? "{}").spec,
    ).toEqual(hubPool.spec);
  }, 90_000);

  it("refuses a write at v1beta1 whose conversion-data holds what the hub's schema refuses, and keeps serving", async () => {
    await install();
    const written = async (name: string, data?: string) => {
      try {
        await client.request({
          method: "POST",
          path: at("v1beta1"),
          body: {
            apiVersion: `${GROUP}/v1beta1`,
            kind: "ConvMachinePool",
            metadata: {
              name,
              namespace: "default",
              ...(data ? { annotations: { "cluster.x-k8s.io/conversion-data": data } } : {}),
            },
            spec: { instanceType: "small", subnet: "z" },
          },
        });
        return "created";
      } catch (error) {
        return (error as Error).message;
      }
    };
    // The webhook is reachable once a plain write at v1beta1 goes through.
    await expect.poll(() => written("fine"), { timeout: 20_000, interval: 250 }).toBe("created");
    const smuggled = await written(
      "smuggled",
      '{"spec":{"instanceType":"small","spot":{"maxPrice":5}}}',
    );
    expect(smuggled).toContain(
      "converting v1beta1 to v1beta2 gave spec.spot.maxPrice, which the v1beta2 schema refuses",
    );
    const deep = await written("deep", `{"spec":{"spot":${"[".repeat(5000)}${"]".repeat(5000)}}}`);
    expect(deep).toContain(
      "the cluster.x-k8s.io/conversion-data annotation nests JSON deeper than 100 levels",
    );
    // Neither was stored, and the webhook still converts.
    await expect(
      client.request({ method: "GET", path: at("v1beta2", "smuggled") }),
    ).rejects.toThrow();
    expect(await written("after")).toBe("created");
  }, 90_000);
});
