// The webhook server over real TLS (a test CA), in memory: the InfraMachinePool webhooks (validation,
// defaulting as a JSON patch, template immutability with the R19 topology dry-run exemption), and the
// failure modes: a handler that throws or hangs answers an admission error, missing certificate files
// fail start() (and the manager) naming the file.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FakeCloudMachinePool } from "@capi-ts/examples";
import { Manager } from "@capi-ts/sdk";
import { silentLogger } from "@capi-ts/sdk/runtime";
import {
  infraMachinePoolWebhooks,
  jsonPatchDiff,
  type SpecValidator,
  WebhookServer,
  webhookPath,
} from "@capi-ts/sdk/webhook";
import { createTestCertificates, startApiServer, type TestCertificates } from "@capi-ts/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { post, review } from "./support.js";

type Spec = Parameters<SpecValidator<{ minSize: number; maxSize: number }>>[0];
const validate = (spec: Spec) =>
  spec.minSize > spec.maxSize
    ? [
        `spec.minSize: Invalid value: ${spec.minSize}: must not exceed spec.maxSize (${spec.maxSize})`,
      ]
    : [];
const group = FakeCloudMachinePool.group;
const poolPath = webhookPath("validate", group, "v1beta2", "FakeCloudMachinePool");
const templatePath = webhookPath("validate", group, "v1beta2", "FakeCloudMachinePoolTemplate");
const mutatePath = webhookPath("mutate", group, "v1beta2", "FakeCloudMachinePool");

let dir: string;
let certs: TestCertificates;
let server: WebhookServer;
let port: number;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "capi-ts-webhook-"));
  certs = await createTestCertificates();
  await certs.writeTo(dir);
  server = new WebhookServer({
    certDir: dir,
    port: 0,
    host: "127.0.0.1",
    handlerTimeoutMs: 300,
    logger: silentLogger(),
  });
  server.register(
    infraMachinePoolWebhooks(FakeCloudMachinePool, {
      validate,
      default: (spec) => {
        spec.zones ??= ["zone-a"];
      },
    }),
  );
  server.register("/throws", () => {
    throw new Error("cloud quota lookup exploded");
  });
  server.register("/hangs", () => new Promise(() => undefined));
  await server.start();
  port = server.address()?.port ?? 0;
});

afterAll(async () => {
  await server?.stop();
  await rm(dir, { recursive: true, force: true });
});

const pool = (spec: Record<string, unknown>, annotations?: Record<string, string>) => ({
  apiVersion: `${group}/v1beta2`,
  kind: "FakeCloudMachinePool",
  metadata: { name: "pool-a", namespace: "default", ...(annotations ? { annotations } : {}) },
  spec,
});
const template = (spec: Record<string, unknown>, annotations?: Record<string, string>) => ({
  ...pool({ template: { spec } }, annotations),
  kind: "FakeCloudMachinePoolTemplate",
});

describe("infraMachinePoolWebhooks", () => {
  it("denies an invalid pool with 422 Invalid naming the field, echoing the uid", async () => {
    const answer = await post(
      port,
      poolPath,
      review({ operation: "CREATE", object: pool({ instanceType: "s", minSize: 5, maxSize: 1 }) }),
      certs.caPem,
    );
    expect(answer.status).toBe(200);
    const response = answer.json().response;
    expect(response).toMatchObject({
      uid: "4f1c2b8e-1",
      allowed: false,
      status: { code: 422, reason: "Invalid" },
    });
    expect(String((response.status as { message: string }).message)).toBe(
      'FakeCloudMachinePool "pool-a" is invalid: spec.minSize: Invalid value: 5: must not exceed spec.maxSize (1)',
    );
  });

  it("admits a valid pool", async () => {
    const answer = await post(
      port,
      poolPath,
      review({ operation: "CREATE", object: pool({ instanceType: "s", minSize: 0, maxSize: 3 }) }),
      certs.caPem,
    );
    expect(answer.json().response).toEqual({ uid: "4f1c2b8e-1", allowed: true });
  });

  it("defaults by answering the JSON patch of what the defaulter changed", async () => {
    const answer = await post(
      port,
      mutatePath,
      review({ operation: "CREATE", object: pool({ instanceType: "s", minSize: 0, maxSize: 3 }) }),
      certs.caPem,
    );
    const response = answer.json().response as {
      allowed: boolean;
      patchType: string;
      patch: string;
    };
    expect(response.allowed).toBe(true);
    expect(response.patchType).toBe("JSONPatch");
    expect(JSON.parse(Buffer.from(response.patch, "base64").toString())).toEqual([
      { op: "add", path: "/spec/zones", value: ["zone-a"] },
    ]);
  });

  it("validates a template's spec.template.spec with the pool's rules (paths rewritten)", async () => {
    const answer = await post(
      port,
      templatePath,
      review({
        operation: "CREATE",
        object: template({ instanceType: "s", minSize: 2, maxSize: 1 }),
      }),
      certs.caPem,
    );
    expect(JSON.stringify(answer.json().response)).toContain(
      "spec.template.spec.minSize: Invalid value: 2",
    );
  });

  it("keeps spec.template.spec immutable, except for a topology dry run (R19)", async () => {
    const before = template({ instanceType: "s", minSize: 0, maxSize: 1 });
    const changed = (annotations?: Record<string, string>) =>
      template({ instanceType: "large", minSize: 0, maxSize: 1 }, annotations);
    const update = await post(
      port,
      templatePath,
      review({ operation: "UPDATE", object: changed(), oldObject: before }),
      certs.caPem,
    );
    expect(update.json().response).toMatchObject({ allowed: false, status: { code: 422 } });
    expect(JSON.stringify(update.json().response)).toContain(
      "spec.template.spec field is immutable",
    );

    const dryRunAnnotated = await post(
      port,
      templatePath,
      review({
        operation: "UPDATE",
        dryRun: true,
        object: changed({ "topology.cluster.x-k8s.io/dry-run": "" }),
        oldObject: before,
      }),
      certs.caPem,
    );
    expect(dryRunAnnotated.json().response).toEqual({ uid: "4f1c2b8e-1", allowed: true });

    // A dry run alone, or the annotation alone, is not the topology controller's dry run.
    const dryRunOnly = await post(
      port,
      templatePath,
      review({ operation: "UPDATE", dryRun: true, object: changed(), oldObject: before }),
      certs.caPem,
    );
    expect(dryRunOnly.json().response).toMatchObject({ allowed: false });
    const annotationOnly = await post(
      port,
      templatePath,
      review({
        operation: "UPDATE",
        object: changed({ "topology.cluster.x-k8s.io/dry-run": "" }),
        oldObject: before,
      }),
      certs.caPem,
    );
    expect(annotationOnly.json().response).toMatchObject({ allowed: false });

    const metadataOnly = await post(
      port,
      templatePath,
      review({
        operation: "UPDATE",
        object: template({ instanceType: "s", minSize: 0, maxSize: 1 }, { note: "x" }),
        oldObject: before,
      }),
      certs.caPem,
    );
    expect(metadataOnly.json().response).toMatchObject({ allowed: true });
  });
});

describe("WebhookServer failures", () => {
  it("answers an admission error, not a hung request, when a handler throws", async () => {
    const answer = await post(
      port,
      "/throws",
      review({ operation: "CREATE", object: {} }),
      certs.caPem,
    );
    expect(answer.status).toBe(200);
    expect(answer.json().response).toEqual({
      uid: "4f1c2b8e-1",
      allowed: false,
      status: {
        code: 500,
        reason: "InternalError",
        message: "webhook /throws failed: cloud quota lookup exploded",
      },
    });
  });

  it("answers an admission error when a handler hangs past handlerTimeoutMs", async () => {
    const started = Date.now();
    const answer = await post(
      port,
      "/hangs",
      review({ operation: "CREATE", object: {} }),
      certs.caPem,
    );
    expect(answer.json().response).toMatchObject({
      allowed: false,
      status: {
        code: 500,
        message: "webhook /hangs failed: the webhook did not answer within 300 ms",
      },
    });
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it("answers 400 to a body that is not an AdmissionReview and 404 to an unknown path", async () => {
    expect((await post(port, poolPath, "{not json", certs.caPem)).status).toBe(400);
    expect((await post(port, poolPath, { kind: "AdmissionReview" }, certs.caPem)).text).toContain(
      "request.uid",
    );
    expect(
      (await post(port, "/nowhere", review({ operation: "CREATE" }), certs.caPem)).status,
    ).toBe(404);
  });

  it("fails start() naming the missing certificate file", async () => {
    const empty = await mkdtemp(join(tmpdir(), "capi-ts-webhook-empty-"));
    try {
      const missing = new WebhookServer({ certDir: empty, port: 0 });
      await expect(missing.start()).rejects.toThrow(
        `cannot read the webhook TLS certificate ${join(empty, "tls.crt")} (ENOENT)`,
      );
    } finally {
      await rm(empty, { recursive: true, force: true });
    }
  });

  it("fails start() when the key does not match the certificate", async () => {
    const other = await createTestCertificates();
    const mixed = await mkdtemp(join(tmpdir(), "capi-ts-webhook-mixed-"));
    try {
      await certs.writeTo(mixed);
      const { writeFile } = await import("node:fs/promises");
      await writeFile(join(mixed, "tls.key"), other.keyPem);
      await expect(new WebhookServer({ certDir: mixed, port: 0 }).start()).rejects.toThrow(
        /are not a usable PEM pair/,
      );
    } finally {
      await rm(mixed, { recursive: true, force: true });
    }
  });

  it("stops the manager: start() rejects with the webhook server's reason", async () => {
    const api = await startApiServer();
    const empty = await mkdtemp(join(tmpdir(), "capi-ts-webhook-manager-"));
    try {
      const manager = new Manager({
        kubeConfig: api.kubeConfig,
        name: "webhook-test",
        logger: { level: "silent" },
      });
      manager.add(new WebhookServer({ certDir: empty, port: 0 }));
      await expect(manager.start()).rejects.toThrow(
        `webhook-server: cannot read the webhook TLS certificate ${join(empty, "tls.crt")}`,
      );
    } finally {
      await api.stop();
      await rm(empty, { recursive: true, force: true });
    }
  });
});

describe("jsonPatchDiff", () => {
  it("adds, removes and replaces, escaping ~ and / in keys", () => {
    expect(
      jsonPatchDiff(
        { metadata: { annotations: { "a/b": "1", "c~d": "x" } }, spec: { list: [1] } },
        { metadata: { annotations: { "a/b": "2" } }, spec: { list: [1, 2], size: 3 } },
      ),
    ).toEqual([
      { op: "remove", path: "/metadata/annotations/c~0d" },
      { op: "replace", path: "/metadata/annotations/a~1b", value: "2" },
      { op: "replace", path: "/spec/list", value: [1, 2] },
      { op: "add", path: "/spec/size", value: 3 },
    ]);
  });
});
