// No request can stop the process (issue 46, findings 1 and 2): a manager wired as the scaffold's
// main.ts (the webhook server with the admission webhooks of a two-version kind and /convert, the
// health probes, the authenticated diagnostics endpoint) is sent, on every path it serves, bodies an
// attacker who reaches its ports would try: JSON nested thousands deep in every field, uid and
// apiVersion of every JSON type, non-JSON, empty, truncated, oversized, wrong content types and
// methods. Every request gets an answer, nothing is left as an unhandled rejection, and afterwards a
// legitimate review, a conversion, a health probe and a scrape are still served.
import { mkdtemp, rm } from "node:fs/promises";
import { Agent, request as httpsRequest } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FakeCloudMachinePoolV0_2 } from "@capi-ts/examples";
import { Annotations } from "@capi-ts/sdk/contract";
import { Manager, silentLogger } from "@capi-ts/sdk/runtime";
import {
  CONVERSION_WEBHOOK_PATH,
  conversionWebhook,
  infraMachinePoolWebhooks,
  WebhookServer,
  webhookPath,
} from "@capi-ts/sdk/webhook";
import {
  type ApiServer,
  createTestCertificates,
  startApiServer,
  type TestCertificates,
} from "@capi-ts/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const group = FakeCloudMachinePoolV0_2.group;
const hub = FakeCloudMachinePoolV0_2.storageVersion;
const kinds = [FakeCloudMachinePoolV0_2.kind, FakeCloudMachinePoolV0_2.templateKind];
const admissionPaths = kinds.flatMap((kind) => [
  webhookPath("validate", group, hub, kind),
  webhookPath("mutate", group, hub, kind),
]);

const rejections: unknown[] = [];
const onRejection = (reason: unknown) => rejections.push(reason);

let api: ApiServer;
let manager: Manager;
let webhooks: WebhookServer;
let dir: string;
let certs: TestCertificates;
// Kept-alive connections, so a thousand requests do not cost a thousand TLS handshakes.
const agent = new Agent({ keepAlive: true, maxSockets: 8 });

beforeAll(async () => {
  process.on("unhandledRejection", onRejection);
  api = await startApiServer();
  dir = await mkdtemp(join(tmpdir(), "capi-ts-no-crash-"));
  certs = await createTestCertificates({ ipAddresses: ["127.0.0.1"] });
  await certs.writeTo(dir);
  manager = new Manager({
    kubeConfig: api.kubeConfig,
    name: "no-crash-test",
    logger: silentLogger(),
    diagnosticsAddress: "127.0.0.1:0",
    healthProbeBindAddress: "127.0.0.1:0",
  });
  webhooks = new WebhookServer({
    certDir: dir,
    port: 0,
    host: "127.0.0.1",
    logger: silentLogger(),
  })
    .register(
      infraMachinePoolWebhooks(FakeCloudMachinePoolV0_2, {
        validate: (spec) => (spec.minSize > spec.maxSize ? ["spec.minSize: exceeds maxSize"] : []),
        default: (spec) => {
          spec.zones ??= ["zone-a"];
        },
      }),
    )
    .register(CONVERSION_WEBHOOK_PATH, conversionWebhook([FakeCloudMachinePoolV0_2]));
  manager.add(webhooks);
  void manager.start();
  for (let i = 0; i < 200 && !(webhooks.address() && manager.diagnosticsAddress()); i++) {
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  expect(webhooks.address()).toBeDefined();
  expect(manager.healthAddress()).toBeDefined();
  expect(manager.diagnosticsAddress()).toBeDefined();
}, 60_000);

afterAll(async () => {
  agent.destroy();
  await manager?.stop();
  await api?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
  process.off("unhandledRejection", onRejection);
});

interface Answer {
  status: number;
  text: string;
}

/** One HTTPS request; settles on the whole answer, or rejects on a reset or a missing answer. */
function send(
  port: number,
  path: string,
  options: {
    method?: string;
    body?: string | Buffer;
    contentType?: string | undefined;
    headers?: Record<string, string>;
  },
): Promise<Answer> {
  const { method = "POST", body, contentType = "application/json" } = options;
  return new Promise((resolve, reject) => {
    const call = httpsRequest(
      {
        host: "127.0.0.1",
        port,
        path,
        method,
        agent,
        // The diagnostics endpoint serves a self-signed certificate; what is checked here is answers.
        rejectUnauthorized: false,
        headers: {
          ...(contentType !== undefined ? { "content-type": contentType } : {}),
          ...options.headers,
        },
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on("data", (chunk: Buffer) => chunks.push(chunk));
        response.on("end", () =>
          resolve({
            status: response.statusCode ?? 0,
            text: Buffer.concat(chunks).toString("utf8"),
          }),
        );
        response.on("error", reject);
      },
    );
    call.setTimeout(30_000, () => call.destroy(new Error(`no answer from ${path}`)));
    call.on("error", reject);
    call.end(body);
  });
}

/** Plain HTTP (the health probes). */
async function sendPlain(
  port: number,
  path: string,
  options: { method?: string; body?: string | Buffer; contentType?: string },
): Promise<Answer> {
  const { request } = await import("node:http");
  return new Promise((resolve, reject) => {
    const call = request(
      {
        host: "127.0.0.1",
        port,
        path,
        method: options.method ?? "POST",
        headers: options.contentType ? { "content-type": options.contentType } : {},
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on("data", (chunk: Buffer) => chunks.push(chunk));
        response.on("end", () =>
          resolve({
            status: response.statusCode ?? 0,
            text: Buffer.concat(chunks).toString("utf8"),
          }),
        );
      },
    );
    call.setTimeout(30_000, () => call.destroy(new Error(`no answer from ${path}`)));
    call.on("error", reject);
    call.end(options.body);
  });
}

const deepArray = (depth: number) => `${"[".repeat(depth)}${"]".repeat(depth)}`;
const deepObject = (depth: number) => `${'{"a":'.repeat(depth)}1${"}".repeat(depth)}`;

/** JSON texts of every type and shape an attacker would put into a field. */
const VALUES: readonly string[] = [
  deepArray(5000),
  deepObject(5000),
  deepArray(100_000),
  "null",
  "0",
  "-1e308",
  "true",
  '""',
  JSON.stringify("u".repeat(100_000)),
  "{}",
  "[]",
  '{"__proto__":{"polluted":1},"constructor":{"prototype":{"polluted":1}}}',
  '"\\ud800"',
];

const MARK = "\u0000mark";

/** `template` with the field at `path` (dot-separated) replaced by the raw JSON text `value`. */
function inject(template: unknown, path: string, value: string): string {
  const copy = structuredClone(template) as Record<string, unknown>;
  const keys = path.split(".");
  let at: Record<string, unknown> = copy;
  for (const key of keys.slice(0, -1)) {
    at[key] ??= {};
    at = at[key] as Record<string, unknown>;
  }
  at[keys.at(-1) as string] = MARK;
  return JSON.stringify(copy).replace(JSON.stringify(MARK), value);
}

const pool = {
  apiVersion: `${group}/${hub}`,
  kind: FakeCloudMachinePoolV0_2.kind,
  metadata: { name: "pool-a", namespace: "default" },
  spec: { instanceType: "small", minSize: 0, maxSize: 3 },
};

const admissionReview = {
  apiVersion: "admission.k8s.io/v1",
  kind: "AdmissionReview",
  request: {
    uid: "4f1c2b8e-1",
    kind: { group, version: hub, kind: FakeCloudMachinePoolV0_2.kind },
    resource: { group, version: hub, resource: "fakecloudmachinepools" },
    name: "pool-a",
    namespace: "default",
    operation: "CREATE",
    object: pool,
  },
};

const spokePool = { ...pool, apiVersion: `${group}/v1beta2` };
const conversionReview = {
  apiVersion: "apiextensions.k8s.io/v1",
  kind: "ConversionReview",
  request: { uid: "c0ffee-1", desiredAPIVersion: `${group}/${hub}`, objects: [spokePool] },
};

const ADMISSION_FIELDS = [
  "apiVersion",
  "kind",
  "request",
  "request.uid",
  "request.kind",
  "request.kind.kind",
  "request.operation",
  "request.name",
  "request.object",
  "request.object.metadata",
  "request.object.metadata.annotations",
  "request.object.spec",
  "request.object.spec.zones",
  "request.oldObject",
  "request.userInfo",
  "request.options",
  "request.dryRun",
];

const CONVERSION_FIELDS = [
  "apiVersion",
  "request",
  "request.uid",
  "request.desiredAPIVersion",
  "request.objects",
  "request.objects.0",
  "request.objects.0.apiVersion",
  "request.objects.0.kind",
  "request.objects.0.metadata",
  "request.objects.0.spec",
  "request.objects.0.spec.instanceType",
  "request.objects.0.status",
];

/** Bodies that are not JSON reviews at all. */
const RAW_BODIES: readonly string[] = [
  "",
  "not json",
  "{",
  JSON.stringify(admissionReview).slice(0, 100),
  JSON.stringify(conversionReview).slice(0, 100),
  "null",
  "42",
  '"review"',
  "[]",
  deepArray(5000),
  deepObject(5000),
  "\u0000\uffff",
];

/** Every body an attacker would send to a JSON endpoint, as [label, body]. */
function hostileBodies(template: unknown, fields: readonly string[]): Array<[string, string]> {
  const bodies: Array<[string, string]> = RAW_BODIES.map((body) => [
    `raw ${body.slice(0, 20)}`,
    body,
  ]);
  for (const field of fields) {
    for (const value of VALUES) {
      bodies.push([`${field} = ${value.slice(0, 20)}`, inject(template, field, value)]);
    }
  }
  return bodies;
}

/** Conversion-data annotations holding what a tenant may write (finding 2). */
function hostileConversionData(): Array<[string, string]> {
  const restored = (spec: string) => `{"spec":${spec}}`;
  const data = [
    restored(`{"instanceType":"small","minSize":0,"maxSize":3,"rootVolumeGiB":${deepArray(5000)}}`),
    restored(`{"rootVolumeGiB":${deepObject(5000)}}`),
    deepArray(5000),
    restored(`{"rootVolumeGiB":"${"x".repeat(300_000)}"}`),
  ];
  return data.map((text, index) => [
    `conversion-data ${index}`,
    JSON.stringify({
      ...conversionReview,
      request: {
        ...conversionReview.request,
        objects: [
          {
            ...spokePool,
            metadata: {
              ...spokePool.metadata,
              annotations: { [Annotations.ConversionData]: text },
            },
          },
        ],
      },
    }),
  ]);
}

/**
 * An answer to a hostile request: a status, and a short text that does not echo the body (but for
 * a successful conversion, whose answer is the objects themselves).
 */
function expectRefusalOrAnswer(full: string, answer: Answer): void {
  const label = full.slice(0, 120);
  expect([200, 400, 401, 404, 405, 413, 415, 429], label).toContain(answer.status);
  if (answer.text.startsWith("{") && answer.text.includes('"result":{"status":"Success"}')) return;
  expect(answer.text.length, label).toBeLessThan(4 * 1024);
}

describe("no request stops the process", () => {
  it("answers every hostile body on every webhook path, then still serves a legitimate review", async () => {
    const port = webhooks.address()?.port ?? 0;
    const cases: Array<[string, string, string]> = [];
    for (const path of admissionPaths) {
      for (const [label, body] of hostileBodies(admissionReview, ADMISSION_FIELDS))
        cases.push([path, label, body]);
    }
    // A denial names the object: a name of any shape must not come back whole.
    const denied = structuredClone(admissionReview);
    denied.request.object.spec = { instanceType: "small", minSize: 5, maxSize: 1 };
    for (const path of admissionPaths.filter((path) => path.startsWith("/validate"))) {
      for (const [label, body] of hostileBodies(denied, ["request.name"]))
        cases.push([path, `denied, ${label}`, body]);
    }
    for (const [label, body] of [
      ...hostileBodies(conversionReview, CONVERSION_FIELDS),
      ...hostileConversionData(),
    ])
      cases.push([CONVERSION_WEBHOOK_PATH, label, body]);
    // One at a time in a few lanes: a busy machine answers them all, none waits on another's fate.
    const lanes = 4;
    await Promise.all(
      Array.from({ length: lanes }, async (_, lane) => {
        for (let index = lane; index < cases.length; index += lanes) {
          const [path, label, body] = cases[index] as [string, string, string];
          const answer = await send(port, path, { body });
          expectRefusalOrAnswer(`${path}: ${label}`, answer);
        }
      }),
    );
    // Wrong methods, content types, sizes, and a path nobody serves.
    for (const path of [
      ...admissionPaths,
      CONVERSION_WEBHOOK_PATH,
      "/",
      "/nope",
      `/${"a".repeat(12_000)}`,
      `/%3Cscript%3E${"b".repeat(300)}`,
    ]) {
      for (const method of ["GET", "PUT", "DELETE"]) {
        expectRefusalOrAnswer(`${method} ${path}`, await send(port, path, { method }));
      }
      for (const contentType of ["text/plain", "application/yaml", "", undefined]) {
        const answer = await send(port, path, {
          body: JSON.stringify(admissionReview),
          contentType,
        });
        expectRefusalOrAnswer(`${path} as ${String(contentType)}`, answer);
      }
      const oversized = await send(port, path, {
        body: Buffer.alloc(8 * 1024 * 1024, 0x5b),
      }).catch(() => ({ status: 413, text: "" }));
      expectRefusalOrAnswer(`${path} oversized`, oversized);
    }
    await expectStillServing();
  }, 300_000);

  it("answers hostile requests to the health and diagnostics endpoints, then still serves them", async () => {
    const health = manager.healthAddress()?.port ?? 0;
    const diagnostics = manager.diagnosticsAddress()?.port ?? 0;
    const bodies = [...RAW_BODIES, JSON.stringify(admissionReview)];
    for (const path of ["/healthz", "/livez", "/readyz", "/metrics", "/debug/pprof", "/%", "//"]) {
      for (const method of ["GET", "POST", "PUT", "DELETE"]) {
        for (const body of method === "GET" ? [undefined] : bodies) {
          const probe = await sendPlain(health, path, {
            method,
            ...(body !== undefined ? { body, contentType: "application/json" } : {}),
          });
          expectRefusalOrAnswer(`health ${method} ${path}`, { ...probe, status: okAs(probe) });
          for (const authorization of [
            undefined,
            "Bearer ",
            `Bearer ${"t".repeat(8000)}`,
            "Basic x",
          ]) {
            const scrape = await send(diagnostics, path, {
              method,
              ...(body !== undefined ? { body } : {}),
              headers: authorization ? { authorization } : {},
            });
            expectRefusalOrAnswer(`diagnostics ${method} ${path}`, scrape);
          }
        }
      }
    }
    await expectStillServing();
  }, 300_000);
});

/** A health probe answers 500 when a check fails: an answer all the same. */
function okAs(answer: Answer): number {
  return answer.status === 500 ? 200 : answer.status;
}

async function expectStillServing(): Promise<void> {
  const port = webhooks.address()?.port ?? 0;
  const review = await send(port, admissionPaths[0] as string, {
    body: JSON.stringify(admissionReview),
  });
  expect(review.status).toBe(200);
  expect(JSON.parse(review.text).response).toEqual({ uid: "4f1c2b8e-1", allowed: true });
  const converted = await send(port, CONVERSION_WEBHOOK_PATH, {
    body: JSON.stringify(conversionReview),
  });
  expect(JSON.parse(converted.text).response).toMatchObject({
    uid: "c0ffee-1",
    result: { status: "Success" },
  });
  const probe = await sendPlain(manager.healthAddress()?.port ?? 0, "/healthz", { method: "GET" });
  expect(probe.status).toBe(200);
  const scrape = await send(manager.diagnosticsAddress()?.port ?? 0, "/metrics", {
    method: "GET",
  });
  expect(scrape.status).toBe(401);
  expect(rejections).toEqual([]);
}
