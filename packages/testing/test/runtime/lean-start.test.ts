import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { KubeClient } from "@capi-ts/sdk/runtime";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ApiServer, startApiServer } from "../../src/index.js";
import { GadgetResource, gadget, gadgetCrd, runFixture } from "./support.js";

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
    const { code, stdout, stderr } = await runFixture("lean-manager.ts", [kubeconfig]);
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
