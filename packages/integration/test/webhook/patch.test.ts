// A defaulting webhook's JSON patch is exact (issue 46, finding 4), over HTTPS: keys named as
// Object.prototype's members (`constructor`, `toString`, `hasOwnProperty`, `__proto__`) are added,
// replaced and removed like any other, and a field a defaulter sets to `undefined` is removed (or
// left out when it was absent) rather than patched without a value. Each patch is applied to the
// original object by an RFC 6902 applier of the test's own and must give the defaulted object.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { silentLogger } from "@capi-ts/sdk/runtime";
import { defaultingWebhook, type JsonPatchOp, WebhookServer } from "@capi-ts/sdk/webhook";
import { createTestCertificates, type TestCertificates } from "@capi-ts/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { post, review } from "./support.js";

type Json = Record<string, unknown>;
type Defaulter = (object: Json) => void;

/** Sets an own property, whatever its name (`__proto__` included), as JSON.parse would. */
function own(target: Json, key: string, value: unknown): void {
  Object.defineProperty(target, key, {
    value,
    enumerable: true,
    writable: true,
    configurable: true,
  });
}

const spec = (object: Json) => object.spec as Json;

// Each case: the object's spec as JSON text (so `__proto__` is an own key), and the defaulter.
const CASES: ReadonlyArray<[string, string, Defaulter]> = [
  [
    "removes constructor",
    '{"constructor":"c","size":1}',
    (o) => Reflect.deleteProperty(spec(o), "constructor"),
  ],
  ["adds toString", '{"size":1}', (o) => own(spec(o), "toString", "t")],
  ["adds hasOwnProperty", '{"size":1}', (o) => own(spec(o), "hasOwnProperty", { deep: true })],
  ["replaces valueOf", '{"valueOf":1}', (o) => own(spec(o), "valueOf", 2)],
  [
    "removes __proto__",
    '{"__proto__":{"a":1},"size":1}',
    (o) => Reflect.deleteProperty(spec(o), "__proto__"),
  ],
  [
    "changes inside __proto__",
    '{"__proto__":{"a":1}}',
    (o) => own(Object.getOwnPropertyDescriptor(spec(o), "__proto__")?.value as Json, "a", 2),
  ],
  ["adds __proto__", '{"size":1}', (o) => own(spec(o), "__proto__", { a: 1 })],
  [
    "removes a field set to undefined",
    '{"zones":["a"],"size":1}',
    (o) => (spec(o).zones = undefined),
  ],
  ["leaves out an absent field set to undefined", '{"size":1}', (o) => (spec(o).zones = undefined)],
  [
    "sets an undefined field inside a new object",
    "{}",
    (o) => (spec(o).nested = { a: undefined, b: 1 }),
  ],
  ["removes the whole spec", '{"size":1}', (o) => (o.spec = undefined)],
  [
    "keys with / and ~",
    '{"a/b":1,"c~d":2}',
    (o) => {
      delete spec(o)["a/b"];
      spec(o)["c~d"] = 3;
      spec(o)["e~/f"] = 4;
    },
  ],
];

let dir: string;
let certs: TestCertificates;
let server: WebhookServer;
let port: number;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "capi-ts-webhook-patch-"));
  certs = await createTestCertificates();
  await certs.writeTo(dir);
  server = new WebhookServer({ certDir: dir, port: 0, host: "127.0.0.1", logger: silentLogger() });
  for (const [index, [, , mutate]] of CASES.entries()) {
    server.register(`/default-${index}`, defaultingWebhook<Json>(mutate));
  }
  await server.start();
  port = server.address()?.port ?? 0;
});

afterAll(async () => {
  await server?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** RFC 6902 add, remove and replace, strictly: a replace or remove of a missing member fails. */
function applyPatch(document: unknown, ops: readonly JsonPatchOp[]): unknown {
  let root = structuredClone(document);
  for (const op of ops) {
    expect(Object.hasOwn(op, "op") && Object.hasOwn(op, "path"), JSON.stringify(op)).toBe(true);
    if (op.op !== "remove")
      expect(Object.hasOwn(op, "value"), `${op.op} ${op.path} has a value`).toBe(true);
    if (op.path === "") {
      if (op.op === "remove") throw new Error("cannot remove the root");
      root = structuredClone(op.value);
      continue;
    }
    const segments = op.path
      .slice(1)
      .split("/")
      .map((segment) => segment.replaceAll("~1", "/").replaceAll("~0", "~"));
    let parent = root as Json;
    for (const segment of segments.slice(0, -1)) {
      if (!Object.hasOwn(parent, segment)) throw new Error(`${op.path}: ${segment} is missing`);
      parent = Object.getOwnPropertyDescriptor(parent, segment)?.value as Json;
    }
    const last = segments.at(-1) as string;
    const exists = Object.hasOwn(parent, last);
    if (op.op !== "add" && !exists) throw new Error(`${op.op} ${op.path}: the member is missing`);
    if (op.op === "remove") delete parent[last];
    else own(parent, last, structuredClone(op.value));
  }
  return root;
}

describe("defaulting patches are exact RFC 6902", () => {
  for (const [index, [name, specText, mutate]] of CASES.entries()) {
    it(name, async () => {
      const object = JSON.parse(
        `{"apiVersion":"v1","kind":"Thing","metadata":{"name":"t"},"spec":${specText}}`,
      ) as Json;
      const answer = await post(
        port,
        `/default-${index}`,
        review({ operation: "CREATE", object }),
        certs.caPem,
      );
      expect(answer.status).toBe(200);
      const response = answer.json().response as { allowed: boolean; patch?: string };
      expect(response.allowed).toBe(true);
      const ops = response.patch
        ? (JSON.parse(Buffer.from(response.patch, "base64").toString("utf8")) as JsonPatchOp[])
        : [];
      // What the API server would store of the defaulted object: JSON, undefined fields dropped.
      const defaulted = structuredClone(object);
      mutate(defaulted);
      const expected = JSON.parse(JSON.stringify(defaulted));
      expect(JSON.stringify(applyPatch(object, ops))).toBe(JSON.stringify(expected));
    });
  }
});
