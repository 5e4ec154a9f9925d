import { type ChildProcess, spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { KubeClient, LeaseResource } from "@capi-ts/sdk/runtime";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type ApiServer, startApiServer } from "../../src/index.js";
import { eventually, GadgetResource, gadget, gadgetCrd } from "./support.js";

const here = dirname(fileURLToPath(import.meta.url));
let api: ApiServer;
let dir: string;
let child: ChildProcess | undefined;

beforeEach(async () => {
  api = await startApiServer({ crds: [gadgetCrd] });
  dir = await mkdtemp(join(tmpdir(), "capi-ts-shutdown-"));
});
afterEach(async () => {
  if (child && child.exitCode === null) child.kill("SIGKILL");
  await api.stop();
  await rm(dir, { recursive: true, force: true });
});

describe("graceful shutdown", () => {
  it("on SIGTERM finishes in-flight work, releases the lease and exits on its own", async () => {
    const kubeconfig = join(dir, "kubeconfig");
    await api.writeKubeconfig(kubeconfig);
    const client = new KubeClient(api.kubeConfig);
    await client.create(GadgetResource, gadget("in-flight", 1));
    child = spawn(
      process.execPath,
      [
        "--conditions=capi-ts-source",
        "--import",
        "tsx",
        join(here, "fixtures", "sigterm-manager.ts"),
        kubeconfig,
      ],
      { cwd: join(here, "..", ".."), stdio: ["ignore", "pipe", "pipe"] },
    );
    let stdout = "";
    let stderr = "";
    child.stdout?.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr?.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>(
      (resolve) => child?.once("exit", (code, signal) => resolve({ code, signal, at: Date.now() })),
    );
    await eventually(
      () => stdout.includes("START in-flight"),
      `reconcile started (stderr: ${stderr})`,
      30_000,
    );
    const lease = () =>
      client.get(LeaseResource, {
        namespace: "default",
        name: "sigterm-test-leader-election",
      }) as Promise<{
        spec?: { holderIdentity?: string };
      }>;
    expect((await lease()).spec?.holderIdentity).toBe("child");
    const signalledAt = Date.now();
    child.kill("SIGTERM");
    const { code, signal, at } = await exited;
    expect({ code, signal, stderr }).toEqual({ code: 0, signal: null, stderr: "" });
    // The in-flight reconcile ran to completion before the process went away.
    expect(stdout).toContain("DONE in-flight");
    expect(stdout.trim().endsWith("STOPPED")).toBe(true);
    const obj = await client.get(GadgetResource, { namespace: "default", name: "in-flight" });
    expect(obj.status?.ready).toBe(true);
    expect((await lease()).spec?.holderIdentity).toBeUndefined();
    // No handle kept it alive: it exited right after the work finished, far inside the deadline.
    expect(at - signalledAt).toBeLessThan(8000);
  }, 60_000);
});
