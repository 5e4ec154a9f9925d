import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { KubeConfig } from "@kubernetes/client-node";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { silentLogger } from "./logging.js";
import { Manager } from "./manager.js";
import type { Runnable } from "./runnable.js";

// The manager's order of things, against a local HTTP server that answers its discovery probe (the
// only request a manager without controllers sends): which runnables start when, what a failing
// one does to the manager, and what shutdown stops.

describe("Manager runnables", () => {
  const log: string[] = [];
  const server = createServer((request, response) => {
    log.push(`${request.method} ${request.url}`);
    response.writeHead(200, { "content-type": "application/json" });
    response.end(JSON.stringify({ kind: "APIVersions", versions: ["v1"] }));
  });
  let kubeConfig: KubeConfig;

  beforeAll(async () => {
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    kubeConfig = new KubeConfig();
    kubeConfig.loadFromOptions({
      clusters: [
        {
          name: "c",
          server: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
          skipTLSVerify: true,
        },
      ],
      users: [{ name: "u" }],
      contexts: [{ name: "x", cluster: "c", user: "u" }],
      currentContext: "x",
    });
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
  beforeEach(() => {
    log.length = 0;
  });

  function manager(): Manager {
    return new Manager({ kubeConfig, logger: silentLogger(), eventLoopBlockThresholdMs: 0 });
  }

  /** A runnable that logs its start and stop; `start` may be held open or fail. */
  function runnable(
    name: string,
    options: { leader?: boolean; start?: () => Promise<void>; stop?: () => Promise<void> } = {},
  ): Runnable {
    return {
      name,
      needLeaderElection: options.leader ?? false,
      start: async () => {
        log.push(`start ${name}`);
        await options.start?.();
      },
      stop: async () => {
        log.push(`stop ${name}`);
        await options.stop?.();
      },
    };
  }

  /** For steps without I/O only: a wait on the server is a wait on a promise (`elected()`). */
  async function until(condition: () => boolean, what: string): Promise<void> {
    for (let turn = 0; turn < 500; turn++) {
      if (condition()) return;
      await new Promise((resolve) => setImmediate(resolve));
    }
    throw new Error(`never happened: ${what}`);
  }

  it("starts the others first, probes the server, then the leader-election runnables", async () => {
    let webhookUp: () => void = () => {};
    const m = manager();
    m.add(runnable("leader-job", { leader: true }));
    m.add(
      runnable("webhook", { start: () => new Promise<void>((resolve) => (webhookUp = resolve)) }),
    );
    m.add(runnable("warmer"));
    const running = m.start();
    await until(() => log.includes("start warmer"), "the other runnables start");
    // Nothing goes further while a runnable that does not need leadership is still starting.
    for (let turn = 0; turn < 20; turn++) await new Promise((resolve) => setImmediate(resolve));
    expect(log).toEqual(["start webhook", "start warmer"]);
    webhookUp();
    // elected() waits for the probe's answer; the leader-election runnables start in the same turn.
    await expect(m.elected()).resolves.toBe(true);
    expect(log).toEqual(["start webhook", "start warmer", "GET /api", "start leader-job"]);

    // Added after its moment passed, a runnable starts at once.
    m.add(runnable("late", { leader: true }));
    await until(() => log.includes("start late"), "the late runnable starts");

    await m.stop();
    await running;
    const stops = log.filter((line) => line.startsWith("stop "));
    expect(stops.sort()).toEqual(["stop late", "stop leader-job", "stop warmer", "stop webhook"]);
  });

  it("stops the manager, naming the runnable, when one fails to start; the leader ones never start", async () => {
    const m = manager();
    m.add(runnable("leader-job", { leader: true }));
    m.add(runnable("webhook"));
    m.add(runnable("broken", { start: () => Promise.reject(new Error("port 9443 in use")) }));
    await expect(m.start()).rejects.toThrow("broken: port 9443 in use");
    expect(log).not.toContain("start leader-job");
    expect(log).not.toContain("GET /api");
    // What started is stopped; what never started is not.
    expect(log).toContain("stop webhook");
    expect(log).not.toContain("stop leader-job");
    await expect(m.elected()).resolves.toBe(false);
  });

  it("stops the manager, naming the runnable, when a leader-election one fails to start", async () => {
    const m = manager();
    m.add(runnable("webhook"));
    m.add(
      runnable("leader-job", {
        leader: true,
        start: () => Promise.reject(new Error("no cloud credentials")),
      }),
    );
    const error = await m.start().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).toBe("leader-job: no cloud credentials");
    expect(((error as Error).cause as Error).message).toBe("no cloud credentials");
    expect(log).toContain("stop webhook");
    expect(log).toContain("stop leader-job");
  });

  it("stops every started runnable even when one fails to stop", async () => {
    const m = manager();
    m.add(runnable("first", { stop: () => Promise.reject(new Error("stuck")) }));
    m.add(runnable("second", { leader: true }));
    const running = m.start();
    await expect(m.elected()).resolves.toBe(true);
    expect(log).toContain("start second");
    await m.stop();
    await expect(running).resolves.toBeUndefined();
    expect(log.filter((line) => line.startsWith("stop ")).sort()).toEqual([
      "stop first",
      "stop second",
    ]);
  });

  it("refuses a second runnable of the same name", () => {
    const m = manager();
    m.add(runnable("webhook"));
    expect(() => m.add(runnable("webhook"))).toThrow(/already added; names must be unique/);
  });
});
