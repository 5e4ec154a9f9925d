import { spawn } from "node:child_process";
import { join } from "node:path";
import type { ResourceDescriptor } from "@capi-ts/sdk/runtime";
import type { KubernetesObject } from "@kubernetes/client-node";
import { until } from "../support/eventually.js";

/** A test kind with a spec, a status subresource and validation. */
export interface Gadget extends KubernetesObject {
  spec: { size: number; owner?: string };
  status?: { observedSize?: number; observedGeneration?: number; ready?: boolean };
}

/** Resource metadata of {@link Gadget}, as codegen emits for real kinds. */
export const GadgetResource: ResourceDescriptor<Gadget> = {
  group: "test.capi-ts.dev",
  version: "v1",
  kind: "Gadget",
  plural: "gadgets",
  scope: "Namespaced",
  subresources: { status: true },
};

/** The CRD of {@link Gadget}. */
export const gadgetCrd = {
  apiVersion: "apiextensions.k8s.io/v1",
  kind: "CustomResourceDefinition",
  metadata: { name: "gadgets.test.capi-ts.dev" },
  spec: {
    group: "test.capi-ts.dev",
    scope: "Namespaced",
    names: { plural: "gadgets", singular: "gadget", kind: "Gadget", listKind: "GadgetList" },
    versions: [
      {
        name: "v1",
        served: true,
        storage: true,
        subresources: { status: {} },
        schema: {
          openAPIV3Schema: {
            type: "object",
            properties: {
              apiVersion: { type: "string" },
              kind: { type: "string" },
              metadata: { type: "object" },
              spec: {
                type: "object",
                required: ["size"],
                properties: {
                  size: { type: "integer", minimum: 0, maximum: 1000 },
                  owner: { type: "string" },
                },
              },
              status: {
                type: "object",
                properties: {
                  observedSize: { type: "integer" },
                  observedGeneration: { type: "integer" },
                  ready: { type: "boolean" },
                },
              },
            },
          },
        },
      },
    ],
  },
};

/** A Gadget object. */
export function gadget(name: string, size: number, namespace = "default"): Gadget {
  return {
    apiVersion: "test.capi-ts.dev/v1",
    kind: "Gadget",
    metadata: { name, namespace },
    spec: { size },
  };
}

/** Waits until `check` returns true; throws naming `what` on timeout (see support/eventually.ts). */
export async function eventually(
  check: () => boolean | Promise<boolean>,
  what: string,
  timeoutMs = 10_000,
  intervalMs = 10,
): Promise<void> {
  await until(check, what, timeoutMs, intervalMs);
}

/** Sleeps. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Runs a fixture of `test/runtime/fixtures` in a child process (from source, as the tests import
 * the SDK) to its end; what it printed and its exit code.
 */
export async function runFixture(
  fixture: string,
  args: readonly string[],
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(
    process.execPath,
    [
      "--conditions=capi-ts-source",
      "--import",
      "tsx",
      join(import.meta.dirname, "fixtures", fixture),
      ...args,
    ],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  // "close", not "exit": the child's output may still be in its pipes when it exits.
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once("error", reject);
    child.once("close", resolve);
  });
  return { code, stdout, stderr };
}
