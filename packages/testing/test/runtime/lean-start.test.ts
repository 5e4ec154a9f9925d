import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { KubeClient } from "@capi-ts/sdk/runtime";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ApiServer, startApiServer } from "../../src/index.js";
import { GadgetResource, gadget, gadgetCrd } from "./support.js";

const here = dirname(fileURLToPath(import.meta.url));
let api: ApiServer;
let dir: string;

beforeAll(async () => {
  api = await startApiServer({ crds: [gadgetCrd] });
  dir = await mkdtemp(join(tmpdir(), "capi-ts-lean-"));
});
afterAll(async () => {
  await api.stop();
  await rm(dir, { recursive: true, force: true });
});

// What a manager loads is start-up time on every restart: what it does not use stays unloaded.
describe("a manager's start", () => {
  it("reconciles and serves /metrics without prom-client, either undici's index or client-node", async () => {
    const kubeconfig = join(dir, "kubeconfig");
    await api.writeKubeconfig(kubeconfig);
    await new KubeClient(api.kubeConfig).create(GadgetResource, gadget("lean", 1));
    const child = spawn(
      process.execPath,
      [
        "--conditions=capi-ts-source",
        "--import",
        "tsx",
        join(here, "fixtures", "lean-manager.ts"),
        kubeconfig,
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
    const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
    expect(code, stderr).toBe(0);
    const report = JSON.parse(stdout.trim().split("\n").at(-1) ?? "{}");
    expect(report).toEqual({
      status: 200,
      contentType: "text/plain; version=0.0.4; charset=utf-8",
      reconcileCounted: true,
      promClient: false,
      openTelemetry: false,
      undiciIndex: false,
      undiciAgent: true,
      clientNode: false,
      nodeUndici: false,
    });
  }, 60_000);
});
