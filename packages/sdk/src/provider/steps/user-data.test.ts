// The user data a template version is created with: gzip, a store, the cloud's limit.
import { gunzipSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { redactText } from "../../runtime/redact.js";
import type { BootstrapDataStore, UserDataOptions } from "../driver.js";
import { StepFailure } from "../errors.js";
import { type FakeSpec, fakeCloud, fakeScope } from "../testing.js";
import { pruneStoredUserData, userDataFor } from "./user-data.js";

const STAMP = { specHash: "spec-1", bootstrapHash: "boot-1", bootstrapRef: "default/b" };
const CLOUD_CONFIG = `#cloud-config\nwrite_files:\n${"  - path: /etc/x\n    content: aaaaaaaaaa\n".repeat(400)}`;

function scopeWith(userData: UserDataOptions<FakeSpec> | undefined) {
  const cloud = fakeCloud();
  return fakeScope({ driver: { ...cloud.driver, ...(userData ? { userData } : {}) } });
}

function memoryStore() {
  const objects = new Map<string, string>();
  const calls: string[] = [];
  const store: BootstrapDataStore<FakeSpec> = {
    async put(_ctx, { key, data }) {
      calls.push(`put ${key}`);
      objects.set(key, data);
      return `#cloud-config\n#include https://store.example/${key}?sig=s3cr3t-signature-abcdef\n`;
    },
    async prune(_ctx, keep) {
      calls.push(`prune keep=${[...keep].join(",")}`);
      for (const key of [...objects.keys()]) if (!keep.has(key)) objects.delete(key);
    },
  };
  return { store, objects, calls };
}

describe("userDataFor", () => {
  it("sends the bootstrap data as it is without options", async () => {
    const test = scopeWith(undefined);
    const input = await userDataFor(
      test.scope,
      "createTemplateVersion",
      { userData: CLOUD_CONFIG, format: "cloud-config" },
      STAMP,
    );
    expect(input.userData).toBe(CLOUD_CONFIG);
    expect(Buffer.from(input.userDataBase64, "base64").toString("utf8")).toBe(CLOUD_CONFIG);
    expect(input).toMatchObject({ format: "cloud-config", stamp: STAMP });
  });

  it("gzips cloud-config within the limit, and leaves Ignition uncompressed", async () => {
    const test = scopeWith({ compress: "gzip", limitBytes: 16_384 });
    expect(Buffer.byteLength(CLOUD_CONFIG)).toBeGreaterThan(16_384);
    const input = await userDataFor(
      test.scope,
      "createTemplateVersion",
      { userData: CLOUD_CONFIG, format: "cloud-config" },
      STAMP,
    );
    const sent = Buffer.from(input.userDataBase64, "base64");
    expect(sent.length).toBeLessThanOrEqual(16_384);
    expect(gunzipSync(sent).toString("utf8")).toBe(CLOUD_CONFIG);
    // The compressed form is as secret as the text.
    expect(redactText(`sent ${input.userDataBase64}`)).toBe("sent [REDACTED]");
    const ignition = await userDataFor(
      scopeWith({ compress: "gzip" }).scope,
      "createTemplateVersion",
      { userData: '{"ignition":{"version":"3.4.0"}}', format: "ignition" },
      STAMP,
    );
    expect(Buffer.from(ignition.userDataBase64, "base64").toString("utf8")).toBe(
      '{"ignition":{"version":"3.4.0"}}',
    );
  });

  it("refuses data over the limit with its size, the limit and the ways out, creating nothing", async () => {
    const test = scopeWith({ limitBytes: 16_384 });
    const failure = await userDataFor(
      test.scope,
      "createTemplateVersion",
      { userData: CLOUD_CONFIG, format: "cloud-config" },
      STAMP,
    ).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(StepFailure);
    expect((failure as StepFailure).failure).toMatchObject({
      kind: "terminal",
      reason: "BootstrapDataTooLarge",
    });
    expect((failure as StepFailure).failure.message).toMatch(
      /^the bootstrap data is \d\d,\d{3} bytes \(cloud-config\), over the cloud's user data limit of 16,384 bytes: compress it \(driver userData\.compress: "gzip"; cloud-init reads gzip\), or keep it in an object store \(driver userData\.store\)$/,
    );
    const ignition = await userDataFor(
      scopeWith({ limitBytes: 10, store: memoryStore().store }).scope,
      "createTemplateVersion",
      { userData: "x".repeat(100), format: "ignition" },
      STAMP,
    ).catch((e: unknown) => (e as StepFailure).failure.message);
    expect(ignition).toMatch(/make the bootstrap configuration smaller$/);
  });

  it("puts the payload into the store and sends what fetches it, registered as a secret", async () => {
    const { store, objects, calls } = memoryStore();
    const test = scopeWith({ store, limitBytes: 16_384 });
    const input = await userDataFor(
      test.scope,
      "createTemplateVersion",
      { userData: CLOUD_CONFIG, format: "cloud-config" },
      STAMP,
    );
    expect(calls).toEqual(["put boot-1"]);
    expect(objects.get("boot-1")).toBe(CLOUD_CONFIG);
    expect(input.userData).toMatch(/^#cloud-config\n#include https:\/\/store\.example\/boot-1/);
    expect(redactText(input.userData)).toBe("[REDACTED]");
  });

  it("prunes stored payloads no remaining version names, and all of them at teardown", async () => {
    const { store, objects, calls } = memoryStore();
    const test = scopeWith({ store });
    objects.set("boot-1", "old").set("boot-2", "new");
    await pruneStoredUserData(test.scope, [
      { version: "2", stamp: { ...STAMP, bootstrapHash: "boot-2" } },
      { version: "3", stamp: undefined },
    ]);
    expect([...objects.keys()]).toEqual(["boot-2"]);
    await pruneStoredUserData(test.scope, []);
    expect(objects.size).toBe(0);
    expect(calls).toEqual(["prune keep=boot-2", "prune keep="]);
    const none = scopeWith(undefined);
    await pruneStoredUserData(none.scope, []);
  });
});
