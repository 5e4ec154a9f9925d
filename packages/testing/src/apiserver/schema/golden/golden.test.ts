import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import {
  ApplyConfigError,
  builtinMergeSchema,
  JsonPatchError,
  jsonPatch,
  StrategicMergePatchError,
  serverSideApply,
  strategicMergePatch,
  trackUpdate,
} from "../../merge/index.js";
import { crdVersion } from "../crd-fixtures.test-support.js";
import {
  compileStructuralSchema,
  type FieldCause,
  formatInvalidMessage,
  type StructuralSchema,
} from "../index.js";
import { crdFiles, type Step, steps, widgetCRD } from "./scenarios.js";

/*
 * Replays the requests of scenarios.ts through the engines the way kube-apiserver sequences them, and
 * compares with what a real kube-apiserver answered (kube-apiserver.golden.json, written by record.ts).
 */

type Obj = Record<string, unknown>;

interface Recorded {
  name: string;
  status: number;
  reason?: string;
  message?: string;
  causes?: FieldCause[];
  spec?: unknown;
  objectStatus?: unknown;
  labels?: unknown;
  finalizers?: unknown;
  managedFields?: Obj[];
}

const golden = JSON.parse(
  readFileSync(resolve(import.meta.dirname, "kube-apiserver.golden.json"), "utf8"),
) as { server: string; responses: Recorded[] };

const machinePoolVersion = crdVersion(crdFiles[0] as string, "v1beta2");
const machinePools = compileStructuralSchema(machinePoolVersion.schema.openAPIV3Schema);
const scale = machinePoolVersion.subresources?.scale as
  | { specReplicasPath: string; statusReplicasPath: string }
  | undefined;
const widgets = compileStructuralSchema(widgetCRD.spec.versions[0]?.schema.openAPIV3Schema);
const nodeSchema = builtinMergeSchema("Node");
const NOW = "2026-01-01T00:00:00Z";

function mergePatch(target: unknown, patch: unknown): unknown {
  if (patch === null || typeof patch !== "object" || Array.isArray(patch)) return patch;
  const out: Obj =
    target !== null && typeof target === "object" && !Array.isArray(target)
      ? { ...(target as Obj) }
      : {};
  for (const [k, v] of Object.entries(patch as Obj)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

function clone<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}

function sortedCauses(causes: readonly FieldCause[]): string[] {
  return causes.map((c) => `${c.field} | ${c.reason} | ${c.message}`).sort();
}

function managedFields(obj: Obj): Obj[] {
  const meta = obj.metadata as Obj;
  return ((meta.managedFields as Obj[] | undefined) ?? []).map((e) => {
    const { time: _time, ...rest } = e;
    return rest;
  });
}

function byManager(entries: Obj[]): Obj[] {
  const key = (e: Obj) => `${e.manager}/${e.operation}/${e.subresource ?? ""}`;
  return [...entries].sort((a, b) => (key(a) < key(b) ? -1 : 1));
}

function query(step: Step): URLSearchParams {
  return new URL(step.path, "https://server").searchParams;
}

function qualifiedKind(obj: Obj): string {
  const [group] = String(obj.apiVersion).split("/");
  return `${obj.kind}.${group}`;
}

/** The engines' answer to each step, with the state the sequence builds. */
class Replay {
  readonly objects = new Map<string, Obj>();

  schemaFor(path: string): StructuralSchema {
    return path.includes("machinepools") ? machinePools : widgets;
  }

  /** Prune, default and validate as the custom resource strategy does; returns the causes. */
  admit(
    schema: StructuralSchema,
    obj: Obj,
    old: Obj | undefined,
    status = false,
    applied = false,
  ): FieldCause[] {
    schema.prune(obj);
    schema.applyDefaults(obj, { keepNulls: applied });
    const useScale = schema === machinePools ? scale : undefined;
    return schema.validate(obj, old, {
      objectMeta: !status,
      ...(status ? { subresource: "status" as const } : {}),
      ...(useScale !== undefined ? { scale: useScale } : {}),
    });
  }
}

const replay = new Replay();

function expectInvalid(recorded: Recorded, obj: Obj, causes: FieldCause[]): void {
  expect(recorded.status).toBe(422);
  expect(sortedCauses(causes)).toEqual(sortedCauses(recorded.causes ?? []));
  const name = String((obj.metadata as Obj).name);
  expect(formatInvalidMessage(qualifiedKind(obj), name, recorded.causes ?? [])).toBe(
    recorded.message,
  );
}

function run(step: Step, recorded: Recorded): void {
  const q = query(step);
  const manager = q.get("fieldManager") ?? "unknown";
  const path = step.path.split("?")[0] as string;

  if (path.startsWith("/api/v1/nodes")) {
    runNode(step, recorded, manager);
    return;
  }

  if (step.contentType === "application/apply-patch+yaml") {
    const status = path.endsWith("/status");
    const objectPath = status ? path.slice(0, -"/status".length) : path;
    const schema = replay.schemaFor(path);
    const live = replay.objects.get(objectPath);
    const applied = JSON.parse(String(step.body)) as Obj;
    let result: ReturnType<typeof serverSideApply>;
    try {
      result = serverSideApply({
        live,
        applied,
        manager,
        force: q.get("force") === "true",
        schema: schema.root,
        now: NOW,
        ...(status
          ? { subresource: "status", ignoredFields: [["spec"]] }
          : { ignoredFields: [["status"]] }),
      });
    } catch (error) {
      if (!(error instanceof ApplyConfigError)) throw error;
      expect(error.status).toBe(recorded.status);
      expect(error.message).toBe(recorded.message);
      return;
    }
    if ("conflicts" in result) {
      expect(recorded.status).toBe(409);
      expect(result.message).toBe(recorded.message);
      expect(
        result.conflicts.map((c) => ({
          reason: "FieldManagerConflict",
          message: c.message,
          field: c.field,
        })),
      ).toEqual(recorded.causes);
      return;
    }
    // The main resource keeps the stored status; /status keeps the stored spec.
    const next = result.object;
    if (live !== undefined) {
      if (status) next.spec = live.spec;
      else if (live.status !== undefined) next.status = live.status;
      else delete next.status;
    } else delete next.status;
    const causes = replay.admit(schema, next, live, status, true);
    if (causes.length > 0) {
      expectInvalid(recorded, next, causes);
      return;
    }
    expect(recorded.status).toBe(live === undefined ? 201 : 200);
    expect(next.spec).toEqual(recorded.spec);
    expect(next.status).toEqual(recorded.objectStatus);
    expect((next.metadata as Obj).labels).toEqual(recorded.labels);
    expect(byManager(managedFields(next))).toEqual(byManager(recorded.managedFields ?? []));
    replay.objects.set(objectPath, next);
    return;
  }

  if (step.method === "GET") {
    const obj = replay.objects.get(path) as Obj;
    expect(obj.spec).toEqual(recorded.spec);
    expect(byManager(managedFields(obj))).toEqual(byManager(recorded.managedFields ?? []));
    return;
  }

  if (step.method === "POST") {
    const obj = clone(step.body) as Obj;
    delete obj.status;
    const schema = replay.schemaFor(path);
    const causes = replay.admit(schema, obj, undefined);
    if (causes.length > 0) {
      expectInvalid(recorded, obj, causes);
      return;
    }
    expect(recorded.status).toBe(201);
    const stored = trackUpdate({
      live: undefined,
      updated: obj,
      manager,
      operation: "Update",
      schema: schema.root,
      now: NOW,
      ignoredFields: [["status"]],
    });
    expect(stored.spec).toEqual(recorded.spec);
    expect(byManager(managedFields(stored))).toEqual(byManager(recorded.managedFields ?? []));
    replay.objects.set(`${path}/${(obj.metadata as Obj).name}`, stored);
    return;
  }

  // PATCH of a custom resource (merge, JSON or strategic).
  const status = path.endsWith("/status");
  const objectPath = status ? path.slice(0, -"/status".length) : path;
  const live = replay.objects.get(objectPath);
  const schema = replay.schemaFor(path);
  if (step.contentType === "application/strategic-merge-patch+json") {
    expect(() => strategicMergePatch("Widget", live, step.body)).toThrowError(
      recorded.message as string,
    );
    expect(recorded.status).toBe(415);
    return;
  }
  if (live === undefined) {
    expect(recorded.status).toBe(404);
    return;
  }
  let next: Obj;
  if (step.contentType === "application/json-patch+json") {
    try {
      next = jsonPatch(live, step.body) as Obj;
    } catch (error) {
      if (!(error instanceof JsonPatchError)) throw error;
      expect(error.status).toBe(recorded.status);
      expect(error.message).toBe(recorded.message);
      return;
    }
  } else {
    next = mergePatch(live, step.body) as Obj;
  }
  if (status) next = { ...live, status: next.status };
  else if (live.status !== undefined) next.status = live.status;
  else delete next.status;
  const causes = replay.admit(schema, next, live, status);
  if (causes.length > 0) {
    expectInvalid(recorded, next, causes);
    return;
  }
  expect(recorded.status).toBe(200);
  const stored = trackUpdate({
    live,
    updated: next,
    manager,
    operation: "Update",
    schema: schema.root,
    now: NOW,
    ...(status
      ? { subresource: "status", ignoredFields: [["spec"]] }
      : { ignoredFields: [["status"]] }),
  });
  expect(stored.spec).toEqual(recorded.spec);
  expect(stored.status).toEqual(recorded.objectStatus);
  expect(byManager(managedFields(stored))).toEqual(byManager(recorded.managedFields ?? []));
  replay.objects.set(objectPath, stored);
}

/** Node steps: the real server adds typed defaults (podCIDR, null times, an admission taint); those are left out. */
function runNode(step: Step, recorded: Recorded, manager: string): void {
  const path = "/api/v1/nodes/n1";
  if (step.method === "POST") {
    const stored = trackUpdate({
      live: undefined,
      updated: clone(step.body) as Obj,
      manager,
      operation: "Update",
      schema: nodeSchema,
      now: NOW,
    });
    const expected = byManager(recorded.managedFields ?? []).map((e) => {
      const fields = clone(e.fieldsV1) as { "f:spec": Obj };
      delete fields["f:spec"]["f:podCIDR"];
      return { ...e, fieldsV1: fields };
    });
    expect(byManager(managedFields(stored))).toEqual(expected);
    expect((stored.metadata as Obj).finalizers).toEqual(recorded.finalizers);
    replay.objects.set(path, stored);
    return;
  }
  const live = replay.objects.get(path) as Obj;
  if (step.contentType === "application/apply-patch+yaml") {
    const q = query(step);
    const result = serverSideApply({
      live,
      applied: JSON.parse(String(step.body)) as Obj,
      manager,
      force: q.get("force") === "true",
      schema: nodeSchema,
      now: NOW,
      subresource: "status",
      ignoredFields: [["spec"]],
    });
    if ("conflicts" in result) throw new Error(result.message);
    const addresses = (o: Obj) =>
      ((o.status as Obj).addresses as Obj[]).map((a) => [a.type, a.address]);
    expect(addresses(result.object)).toEqual(addresses({ status: recorded.objectStatus }));
    const applier = (entries: Obj[]) => entries.filter((e) => e.manager === manager);
    expect(applier(managedFields(result.object))).toEqual(applier(recorded.managedFields ?? []));
    return;
  }
  let next: Obj;
  try {
    next = strategicMergePatch("Node", live, step.body) as Obj;
  } catch (error) {
    if (!(error instanceof StrategicMergePatchError)) throw error;
    expect(error.status).toBe(recorded.status);
    expect(error.message).toBe(recorded.message);
    return;
  }
  expect(recorded.status).toBe(200);
  const summary = (o: unknown) => {
    const s = (o ?? {}) as { conditions?: Obj[]; addresses?: Obj[] };
    return {
      conditions: (s.conditions ?? []).map((c) => [c.type, c.status, c.reason ?? ""]),
      addresses: (s.addresses ?? []).map((a) => [a.type, a.address]),
    };
  };
  expect(summary(next.status)).toEqual(summary(recorded.objectStatus));
  expect((next.metadata as Obj).finalizers).toEqual(recorded.finalizers);
  const taints = (spec: unknown) =>
    (((spec ?? {}) as Obj).taints as Obj[] | undefined)?.filter(
      (t) => t.key !== "node.kubernetes.io/not-ready",
    );
  expect(taints(next.spec)).toEqual(taints(recorded.spec));
  replay.objects.set(path, next);
}

describe(`engines replay requests answered by a real kube-apiserver (${golden.server})`, () => {
  it("has a recorded answer for every step", () => {
    expect(golden.responses.map((r) => r.name)).toEqual(steps.map((s) => s.name));
  });

  // The steps build on each other (creates, then patches and applies), so they run in order.
  steps.forEach((step, i) => {
    it(`${step.method} ${step.name}`, () => {
      const recorded = golden.responses[i];
      if (recorded === undefined) throw new Error(`no recorded answer for ${step.name}`);
      run(step, recorded);
    });
  });
});
