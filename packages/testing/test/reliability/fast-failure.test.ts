// Finding 9: a Manager with a kubeconfig that cannot work failed only after the 120 s cache sync
// timeout, with a message about RBAC and served kinds. It now fails start() within seconds, naming
// the cause.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Manager } from "@capi-ts/sdk";
import { KubeConfig } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ControlPlane, findControlPlaneBinaries, startControlPlane } from "../../src/index.js";
import { GadgetResource } from "../runtime/support.js";

function kubeConfigFor(
  server: string,
  user: Record<string, string> = { token: "t" },
  caData?: string,
): KubeConfig {
  const config = new KubeConfig();
  config.loadFromOptions({
    clusters: [
      caData
        ? { name: "c", server, caData, skipTLSVerify: false }
        : { name: "c", server, skipTLSVerify: server.startsWith("http:") },
    ],
    users: [{ name: "u", ...user }],
    contexts: [{ name: "x", cluster: "c", user: "u" }],
    currentContext: "x",
  });
  return config;
}

async function startFailure(kubeConfig: KubeConfig, connectTimeoutMs = 2000) {
  const manager = new Manager({
    kubeConfig,
    logger: { level: "silent" },
    connectTimeoutMs,
  });
  manager
    .controller("gadgets")
    .for(GadgetResource)
    .complete(async () => undefined);
  const started = performance.now();
  const error = await manager.start().then(
    () => new Error("start() resolved"),
    (failure: unknown) => failure as Error,
  );
  return { error, seconds: (performance.now() - started) / 1000 };
}

function listen(handler: Parameters<typeof createServer>[1]): Promise<Server> {
  const server = createServer(handler);
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(server)));
}

const servers: Server[] = [];
afterAll(() => {
  for (const server of servers) server.closeAllConnections();
  for (const server of servers) server.close();
});

describe("Manager.start() fails fast with the real cause", { timeout: 20_000 }, () => {
  it("connection refused", async () => {
    const server = await listen(() => undefined);
    const { port } = server.address() as AddressInfo;
    server.close();
    const { error, seconds } = await startFailure(kubeConfigFor(`http://127.0.0.1:${port}`));
    expect(error.message).toMatch(/cannot reach the API server at http:\/\/127\.0\.0\.1:\d+/);
    expect(error.message).toMatch(/ECONNREFUSED|refused/);
    expect(seconds).toBeLessThan(8);
  });

  it("a server that accepts and never answers", async () => {
    const server = await listen(() => undefined);
    servers.push(server);
    const { port } = server.address() as AddressInfo;
    const { error, seconds } = await startFailure(kubeConfigFor(`http://127.0.0.1:${port}`));
    expect(error.message).toMatch(/cannot reach the API server .*no complete response within/);
    expect(seconds).toBeLessThan(8);
  });

  it("401: credentials refused", async () => {
    const server = await listen((_request, response) => {
      response.writeHead(401, { "content-type": "application/json" }).end(
        JSON.stringify({
          kind: "Status",
          apiVersion: "v1",
          status: "Failure",
          message: "Unauthorized",
          reason: "Unauthorized",
          code: 401,
        }),
      );
    });
    servers.push(server);
    const { port } = server.address() as AddressInfo;
    const { error, seconds } = await startFailure(kubeConfigFor(`http://127.0.0.1:${port}`));
    expect(error.message).toMatch(/refused the kubeconfig's credentials \(401 Unauthorized\)/);
    expect(seconds).toBeLessThan(3);
  });

  it("no current cluster: the constructor says so", () => {
    expect(() => new Manager({ kubeConfig: new KubeConfig() })).toThrow(
      /the kubeconfig has no current cluster/,
    );
  });
});

const binaries = findControlPlaneBinaries();
describe.skipIf(!binaries)("on a real kube-apiserver", { timeout: 120_000 }, () => {
  let plane: ControlPlane;
  beforeAll(async () => {
    plane = await startControlPlane();
  }, 120_000);
  afterAll(async () => {
    await plane?.stop();
  });

  it("a wrong token: 401 at once", async () => {
    const caData = plane.kubeConfig.getCurrentCluster()?.caData;
    const { error, seconds } = await startFailure(
      kubeConfigFor(plane.url, { token: "wrong" }, caData),
    );
    expect(error.message).toMatch(/401 Unauthorized/);
    expect(seconds).toBeLessThan(3);
  });

  it("a CA that did not sign the server's certificate: a TLS error at once", async () => {
    const good = plane.kubeConfig;
    const cluster = good.getCurrentCluster();
    const user = good.getCurrentUser();
    if (!cluster || !user) throw new Error("the control plane kubeconfig has no cluster/user");
    const config = new KubeConfig();
    // The system CA bundle: a real CA, just not the one of this server.
    config.loadFromOptions({
      clusters: [{ name: "c", server: plane.url, skipTLSVerify: false }],
      users: [{ name: "u", token: user.token ?? "" }],
      contexts: [{ name: "x", cluster: "c", user: "u" }],
      currentContext: "x",
    });
    const { error, seconds } = await startFailure(config);
    expect(error.message).toMatch(/cannot talk TLS to the API server/);
    expect(seconds).toBeLessThan(3);
  });
});
