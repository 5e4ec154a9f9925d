// `./dev demo` as a person runs it: a subprocess that must exit 0 and show every phase, on the
// in-memory API server with the emulator, on real CAPI core (when built), and with --kubeconfig
// against a cluster that only has the CAPI CRDs (refused without core, run with --core emulator), and
// with --cloud aws on moto (when installed).
import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import {
  capiCrdsFolder,
  findCapiCoreBinary,
  findControlPlaneBinaries,
  startApiServer,
} from "@capi-ts/testing";
import { describe, expect, it } from "vitest";
import { findMoto, MOTO_INSTALL_COMMAND } from "./aws/index.js";

const DEMO = resolve(import.meta.dirname, "demo.ts");
const PHASES = [
  "== setup ==",
  "== create a Cluster, a MachinePool (3 replicas) and its FakeCloudMachinePool ==",
  "== scale to 5 ==",
  "== rotate the bootstrap token ==",
  "== roll a template change (instanceType small -> medium) ==",
  "== pause, change replicas while paused, unpause ==",
  "== scale to 0 ==",
  "== delete the MachinePool ==",
  "== summary ==",
];

function runDemo(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((done, fail) => {
    const child = spawn(
      process.execPath,
      ["--conditions=capi-ts-source", "--import", "tsx", DEMO, ...args],
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
    child.on("error", fail);
    child.on("close", (code) => done({ code, stdout, stderr }));
  });
}

const binaries = findControlPlaneBinaries();
const haveRealCore = binaries !== undefined && findCapiCoreBinary(binaries) !== undefined;
if (!haveRealCore) {
  console.warn(
    "\n!!! SKIPPED BACKEND: `./dev demo --core real` is NOT checked (no kube-apiserver/etcd or no CAPI manager; run `./dev controlplane --capi`).\n",
  );
}

const haveMoto = findMoto()?.installed === true;
if (!haveMoto) {
  console.warn(
    `\n!!! SKIPPED BACKEND: \`./dev demo --cloud aws\` is NOT checked (no moto server; run \`${MOTO_INSTALL_COMMAND}\`, which needs Python 3.9+).\n`,
  );
}

function expectEveryPhase(stdout: string, phases = PHASES): void {
  const positions = phases.map((phase) => stdout.indexOf(phase));
  expect(positions.every((p) => p >= 0)).toBe(true);
  expect([...positions].sort((a, b) => a - b)).toEqual(positions);
  expect(stdout).toMatch(/instances replaced: 0/);
  expect(stdout).toMatch(/paused for 1s with replicas changed to 4: 0 cloud calls/);
  expect(stdout).toMatch(/cloud groups left: 0, templates left: 0/);
}

describe("./dev demo", { timeout: 120_000 }, () => {
  it("runs every phase on the in-memory API server and exits 0", async () => {
    const { code, stdout, stderr } = await runDemo([]);
    expect(stderr).not.toMatch(/demo failed/);
    expect(code).toBe(0);
    expectEveryPhase(stdout);
  });

  it.skipIf(!haveRealCore)(
    "runs every phase with --core real (real kube-apiserver, CAPI core and its webhooks)",
    { timeout: 240_000 },
    async () => {
      const { code, stdout, stderr } = await runDemo(["--core", "real"]);
      expect(stderr).not.toMatch(/demo failed/);
      expect(code).toBe(0);
      expect(stdout).toMatch(
        /with CAPI core v\d+\.\d+\.\d+ \(MachinePool \+ Machine controllers, webhooks\)/,
      );
      expectEveryPhase(stdout);
      // The provider's writes are counted from the real server's audit log.
      expect(stdout).toMatch(/provider API writes: [1-9]\d*/);
    },
  );

  it.skipIf(!haveMoto)(
    "runs every phase with --cloud aws (the AWS reference provider on the AWS SDK, against moto)",
    async () => {
      const { code, stdout, stderr } = await runDemo(["--cloud", "aws"]);
      expect(stderr).not.toMatch(/demo failed/);
      expect(code).toBe(0);
      expect(stdout).toMatch(/moto \d+\.\d+\.\d+ \(EC2 and Auto Scaling APIs\)/);
      expectEveryPhase(
        stdout,
        PHASES.map((phase) =>
          phase
            .replace("FakeCloudMachinePool", "ASGMachinePool")
            .replace("small -> medium", "t3.small -> t3.medium"),
        ),
      );
      // Every providerID is the AWS cloud-controller-manager's.
      expect(stdout).toMatch(/providerIDList: us-east-1[ab]\/i-[0-9a-f]+/);
    },
  );

  it("refuses --kubeconfig to a cluster without CAPI core and says how to add it", async () => {
    const api = await startApiServer({ tls: true });
    const dir = await mkdtemp(join(tmpdir(), "capi-ts-demo-"));
    try {
      await api.installCRDs([capiCrdsFolder]);
      const kubeconfig = join(dir, "kubeconfig");
      await api.writeKubeconfig(kubeconfig);
      const { code, stderr } = await runDemo(["--kubeconfig", kubeconfig]);
      expect(code).toBe(1);
      expect(stderr).toMatch(/runs no CAPI core/);
      expect(stderr).toMatch(/clusterctl init/);
      expect(stderr).toMatch(/--core emulator/);
    } finally {
      await api.stop();
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("runs against a cluster given by --kubeconfig with --core emulator (an API server with only the CAPI CRDs)", async () => {
    const api = await startApiServer({ tls: true });
    const dir = await mkdtemp(join(tmpdir(), "capi-ts-demo-"));
    try {
      await api.installCRDs([capiCrdsFolder]);
      const kubeconfig = join(dir, "kubeconfig");
      await api.writeKubeconfig(kubeconfig);
      const { code, stdout, stderr } = await runDemo([
        "--kubeconfig",
        kubeconfig,
        "--core",
        "emulator",
      ]);
      expect(stderr).not.toMatch(/demo failed/);
      expect(code).toBe(0);
      expect(stdout).toContain(`using the cluster in ${kubeconfig}`);
      expect(stdout).toContain("== summary ==");
      // The demo's provider really wrote to that cluster.
      expect(
        api.requests((r) => r.resource === "fakecloudmachinepools" && r.verb === "patch").length,
      ).toBeGreaterThan(0);
    } finally {
      await api.stop();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
