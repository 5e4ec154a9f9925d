// The request log of a real control plane, read from kube-apiserver's audit log as it grows: each
// read parses only what was appended, a line still being written waits for its end, a clear skips
// what came before, and a log that starts over is read from its start.
import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { AuditLogReader } from "./audit.js";

function event(name: string, extra: Record<string, unknown> = {}): string {
  return `${JSON.stringify({
    stage: "ResponseComplete",
    verb: "patch",
    requestURI: `/api/v1/namespaces/default/configmaps/${name}?fieldManager=suite`,
    user: { username: "admin" },
    objectRef: {
      apiGroup: "",
      apiVersion: "v1",
      resource: "configmaps",
      namespace: "default",
      name,
    },
    responseStatus: { code: 200 },
    requestReceivedTimestamp: "2026-01-01T00:00:00.000000Z",
    stageTimestamp: "2026-01-01T00:00:00.250000Z",
    ...extra,
  })}\n`;
}

describe("AuditLogReader", () => {
  let dir: string;
  let file: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "audit-"));
    file = join(dir, "audit.log");
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("reads nothing before the server wrote its first line", () => {
    expect(new AuditLogReader(file).records()).toEqual([]);
  });

  it("turns each completed request into a record, leaving the server's own out", () => {
    writeFileSync(
      file,
      event("a") +
        event("internal", { user: { username: "system:apiserver" } }) +
        event("started", { stage: "ResponseStarted" }),
    );
    const [record, ...rest] = new AuditLogReader(file).records();
    expect(rest).toEqual([]);
    expect(record).toMatchObject({
      verb: "patch",
      method: "PATCH",
      path: "/api/v1/namespaces/default/configmaps/a",
      group: "",
      version: "v1",
      resource: "configmaps",
      namespace: "default",
      name: "a",
      status: 200,
      fieldManager: "suite",
      durationMs: 250,
    });
  });

  it("parses what was appended since the last read, and a line only once it ends", () => {
    const reader = new AuditLogReader(file);
    writeFileSync(file, event("a"));
    expect(reader.records().map((r) => r.name)).toEqual(["a"]);
    const b = event("b");
    appendFileSync(file, b.slice(0, 40));
    expect(reader.records().map((r) => r.name)).toEqual(["a"]);
    appendFileSync(file, b.slice(40) + event("c"));
    expect(reader.records().map((r) => r.name)).toEqual(["a", "b", "c"]);
  });

  it("hands out copies: a caller's changes do not reach the next read", () => {
    const reader = new AuditLogReader(file);
    writeFileSync(file, event("a"));
    reader.records().pop();
    expect(reader.records()).toHaveLength(1);
  });

  it("forgets what came before a clear", () => {
    const reader = new AuditLogReader(file);
    writeFileSync(file, event("a"));
    reader.clear();
    expect(reader.records()).toEqual([]);
    appendFileSync(file, event("b"));
    expect(reader.records().map((r) => r.name)).toEqual(["b"]);
  });

  it("reads a log that started over from its start", () => {
    const reader = new AuditLogReader(file);
    writeFileSync(file, event("a") + event("b"));
    expect(reader.records()).toHaveLength(2);
    writeFileSync(file, event("c"));
    expect(reader.records().map((r) => r.name)).toEqual(["a", "b", "c"]);
  });
});
