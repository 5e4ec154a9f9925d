// Attacks through a <cluster>-kubeconfig Secret, as whoever may write Secrets in a watched namespace
// (in CAPI, often a tenant) would try them: the Secret lives in the in-memory API server, the
// "workload cluster" is a hostile HTTP(S) server started here that records what reaches it. Each case
// asserts the safe behaviour: no process runs, no file of the manager is read, nothing is sent in
// clear or through a proxy, no content of the other side lands in the error, and connect() ends.
import { existsSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer as createHttpServer, type IncomingMessage, type Server } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ClusterCache, WorkloadClusterUnavailableError } from "@capi-ts/sdk/clustercache";
import { type KubeClient, Manager, selfSignedCertificate } from "@capi-ts/sdk/runtime";
import { dump } from "js-yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startApiServer } from "../../src/index.js";
import { Clusters, cluster, eventually, ns, startCapiApiServer } from "../capi/support.js";
import type { Backend } from "../support/backend.js";
import { writeKubeconfigSecret } from "./support.js";

const CANARY = "canary-7f3a-never-leaves-the-manager";
const certificate = selfSignedCertificate(["127.0.0.1", "localhost"]);
const caData = Buffer.from(certificate.cert).toString("base64");

let api: Backend;
let client: KubeClient;
let manager: Manager;
let running: Promise<void>;
let clusters: ClusterCache;
let dir: string;

/** A server that records every request (headers included) and answers as `answer` says. */
interface Hostile {
  readonly url: string;
  readonly received: { url: string; authorization: string | undefined }[];
  close(): Promise<void>;
}

async function hostile(
  tls: boolean,
  answer: (req: IncomingMessage, res: import("node:http").ServerResponse) => void = (_, res) => {
    res.writeHead(500, { "content-type": "text/plain" });
    res.end(`instance-credentials: ${CANARY}`);
  },
): Promise<Hostile> {
  const received: Hostile["received"] = [];
  const handler = (req: IncomingMessage, res: import("node:http").ServerResponse) => {
    received.push({ url: req.url ?? "", authorization: req.headers.authorization });
    answer(req, res);
  };
  const server: Server = tls
    ? (createHttpsServer(certificate, handler) as unknown as Server)
    : createHttpServer(handler);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `${tls ? "https" : "http"}://127.0.0.1:${port}`,
    received,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A kubeconfig with one context `c` → cluster `c1`, user `admin`, with the given entries. */
function kubeconfig(clusterEntry: Record<string, unknown>, user: Record<string, unknown>): string {
  return dump({
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name: "c1", cluster: clusterEntry }],
    users: [{ name: "admin", user }],
    contexts: [{ name: "c", context: { cluster: "c1", user: "admin" } }],
    "current-context": "c",
  });
}

function writeSecret(name: string, value: string | Buffer): Promise<void> {
  return writeKubeconfigSecret(client, ns, name, value);
}

let seq = 0;
/** A fresh Cluster whose Secret holds `value`; returns its name. */
async function clusterWith(value: string | Buffer): Promise<string> {
  const name = `atk-${++seq}`;
  await client.create(Clusters, cluster(name));
  await writeSecret(name, value);
  return name;
}

async function refusal(
  name: string,
  cache: ClusterCache = clusters,
): Promise<WorkloadClusterUnavailableError> {
  try {
    await cache.connect({ namespace: ns, name });
  } catch (error) {
    if (error instanceof WorkloadClusterUnavailableError) return error;
    throw error;
  }
  throw new Error(`connected to ${name}; expected a refusal`);
}

/** The refusal says what is wrong and what to do, and carries nothing of the Secret. */
function expectSafe(error: WorkloadClusterUnavailableError, ...forbidden: string[]): void {
  for (const text of [CANARY, dir, "ENOENT", ...forbidden]) {
    expect(error.message).not.toContain(text);
  }
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "capi-ts-attack-"));
  ({ api, client } = await startCapiApiServer());
  manager = new Manager({
    kubeConfig: api.kubeConfig,
    name: "attack-test",
    logger: { level: "silent" },
  });
  clusters = new ClusterCache(manager, {
    connectionRetryMs: 50,
    maxConnectionRetryMs: 100,
    connectTimeoutMs: 1_500,
  });
  running = manager.start();
  await manager.elected();
}, 30_000);
afterAll(async () => {
  await clusters?.stop();
  await manager?.stop();
  await running?.catch(() => undefined);
  await api?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe("a hostile <cluster>-kubeconfig Secret", { timeout: 20_000 }, () => {
  it("never runs an exec credential plugin", async () => {
    const server = await hostile(true);
    const marker = join(dir, "exec-ran");
    try {
      const name = await clusterWith(
        kubeconfig(
          { server: server.url, "certificate-authority-data": caData },
          {
            exec: {
              apiVersion: "client.authentication.k8s.io/v1",
              command: "/bin/sh",
              args: [
                "-c",
                `touch ${marker}; echo '{"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1","status":{"token":"x"}}'`,
              ],
              interactiveMode: "Never",
            },
          },
        ),
      );
      const error = await refusal(name);
      expect(error.reason).toBe("KubeconfigSecretInvalid");
      expect(error.message).toBe(
        `kubeconfig Secret ${ns}/${name}-kubeconfig: user 'admin' uses an exec credential plugin, which capi-ts never runs; write a token or client certificate (token, client-certificate-data and client-key-data) into the Secret`,
      );
      expectSafe(error, "/bin/sh", marker);
      expect(existsSync(marker)).toBe(false);
      expect(server.received).toEqual([]);
    } finally {
      await server.close();
    }
  });

  it("never runs an auth-provider's command nor reads its token file", async () => {
    const server = await hostile(true);
    const marker = join(dir, "auth-provider-ran");
    const tokenFile = join(dir, "sa-token");
    await writeFile(tokenFile, CANARY);
    try {
      for (const provider of [
        { name: "gcp", config: { "cmd-path": "/bin/sh", "cmd-args": `-c 'touch ${marker}'` } },
        { name: "tokenFile", config: { tokenFile } },
      ]) {
        const name = await clusterWith(
          kubeconfig(
            { server: server.url, "certificate-authority-data": caData },
            { "auth-provider": provider },
          ),
        );
        const error = await refusal(name);
        expect(error.reason).toBe("KubeconfigSecretInvalid");
        expect(error.message).toContain("user 'admin' uses an auth-provider");
        expectSafe(error, marker, tokenFile);
      }
      expect(existsSync(marker)).toBe(false);
      expect(server.received).toEqual([]);
    } finally {
      await server.close();
    }
  });

  it("never reads a file it names: token-file, client certificate and key, CA", async () => {
    const server = await hostile(true);
    const tokenFile = join(dir, "token");
    await writeFile(tokenFile, CANARY);
    const missing = join(dir, "nonexistent", "key.pem");
    const cases: [Record<string, unknown>, Record<string, unknown>, string][] = [
      [{}, { "token-file": tokenFile }, "user 'admin' refers to a token file (token-file)"],
      // /dev/zero never ends: read synchronously it would fill the heap.
      [{}, { "token-file": "/dev/zero" }, "user 'admin' refers to a token file (token-file)"],
      [{}, { tokenFile }, "user 'admin' refers to a token file (tokenFile)"],
      [
        {},
        { "client-certificate": missing, "client-key": missing },
        "user 'admin' refers to a certificate file (client-certificate)",
      ],
      [{}, { "client-key": missing, token: "t" }, "user 'admin' refers to a key file (client-key)"],
      [
        { "certificate-authority": missing },
        { token: "t" },
        "cluster 'c1' refers to a CA file (certificate-authority)",
      ],
    ];
    try {
      for (const [extraCluster, user, said] of cases) {
        const name = await clusterWith(
          kubeconfig(
            { server: server.url, "certificate-authority-data": caData, ...extraCluster },
            user,
          ),
        );
        const error = await refusal(name);
        expect(error.reason).toBe("KubeconfigSecretInvalid");
        expect(error.message).toContain(said);
        expectSafe(error, tokenFile, missing, "/dev/zero");
      }
      // Nothing reached the server, so no token was read and sent.
      expect(server.received).toEqual([]);
    } finally {
      await server.close();
    }
  });

  it("never sends a credential in clear, through a proxy, or to a path it chose", async () => {
    const plain = await hostile(false);
    const tls = await hostile(true);
    const cases: [Record<string, unknown>, string][] = [
      [{ server: plain.url }, "cluster 'c1' has a server that is not https://"],
      [
        {
          server: `${tls.url}/latest/meta-data/iam/security-credentials?x=`,
          "certificate-authority-data": caData,
        },
        "cluster 'c1' has a server with a path, query or fragment",
      ],
      [
        { server: tls.url, "certificate-authority-data": caData, "proxy-url": plain.url },
        "cluster 'c1' sets proxy-url",
      ],
      [
        { server: tls.url, "insecure-skip-tls-verify": true },
        "cluster 'c1' sets insecure-skip-tls-verify",
      ],
      [
        { server: "https://user:pass@127.0.0.1:1" },
        "cluster 'c1' has credentials in its server URL",
      ],
    ];
    try {
      for (const [clusterEntry, said] of cases) {
        const name = await clusterWith(kubeconfig(clusterEntry, { token: CANARY }));
        const error = await refusal(name);
        expect(error.reason).toBe("KubeconfigSecretInvalid");
        expect(error.message).toContain(said);
        expectSafe(error, "meta-data", plain.url);
      }
      expect(plain.received).toEqual([]);
      expect(tls.received).toEqual([]);
    } finally {
      await plain.close();
      await tls.close();
    }
  });

  it("accepts insecure-skip-tls-verify only when the ClusterCache allows it", async () => {
    const workload = await startApiServer({ tls: true });
    const lenient = new ClusterCache(manager, {
      name: "lenient-clustercache",
      allowInsecureSkipTLSVerify: true,
      connectTimeoutMs: 5_000,
    });
    try {
      const name = await clusterWith(
        kubeconfig({ server: workload.url, "insecure-skip-tls-verify": true }, { token: "t" }),
      );
      expect((await refusal(name)).reason).toBe("KubeconfigSecretInvalid");
      const connection = await lenient.connect({ namespace: ns, name });
      expect(connection.nodes.hasSynced()).toBe(true);
    } finally {
      await lenient.stop();
      await workload.stop();
    }
  });

  it("refuses YAML anchors and aliases before building anything, and a Secret over 1 MiB", async () => {
    let bomb = 'a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n';
    for (let i = 1; i < 12; i++) {
      bomb += `a${i}: &a${i} [${Array(9)
        .fill(`*a${i - 1}`)
        .join(",")}]\n`;
    }
    const bombed = await clusterWith(
      `${kubeconfig({ server: "https://127.0.0.1:1", "certificate-authority-data": caData }, { token: "t" })}${bomb}`,
    );
    const error = await refusal(bombed);
    expect(error.reason).toBe("KubeconfigSecretInvalid");
    expect(error.message).toContain("uses YAML anchors or aliases");

    const big = await clusterWith(
      `${kubeconfig({ server: "https://127.0.0.1:1", "certificate-authority-data": caData }, { token: "t" })}# ${"x".repeat(1024 * 1024)}\n`,
    );
    const tooBig = await refusal(big);
    expect(tooBig.reason).toBe("KubeconfigSecretInvalid");
    expect(tooBig.message).toContain("is larger than 1 MiB");
  });

  it("reflects nothing the workload server answers into the error", async () => {
    const answers: ((res: import("node:http").ServerResponse) => void)[] = [
      (res) => {
        res.writeHead(500, { "content-type": "text/plain" });
        res.end(`instance-credentials: ${CANARY}`);
      },
      (res) => {
        res.writeHead(403, { "content-type": "application/json" });
        res.end(
          JSON.stringify({
            kind: "Status",
            status: "Failure",
            code: 403,
            reason: CANARY,
            message: CANARY,
          }),
        );
      },
      (res) => {
        res.writeHead(200, { "content-type": "text/html" });
        res.end(`<html>${CANARY}</html>`);
      },
    ];
    for (const answer of answers) {
      const server = await hostile(true, (_, res) => answer(res));
      try {
        const name = await clusterWith(
          kubeconfig({ server: server.url, "certificate-authority-data": caData }, { token: "t" }),
        );
        const error = await refusal(name);
        expect(error.reason).toBe("WorkloadClusterUnreachable");
        // The Secret and the server are named; the answer is not.
        expect(error.message).toContain(`Secret ${ns}/${name}-kubeconfig`);
        expect(error.message).toContain(server.url);
        expectSafe(error, "<html>");
        expect(server.received.length).toBeGreaterThan(0);
      } finally {
        await server.close();
      }
    }
  });

  it("ends connect() within connectTimeoutMs against a server that drips, for every caller", async () => {
    // One byte every 300 ms, forever: a per-chunk timeout never fires.
    const timers = new Set<NodeJS.Timeout>();
    const server = await hostile(true, (_, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      const timer = setInterval(() => res.write(" "), 300);
      timers.add(timer);
      res.on("close", () => clearInterval(timer));
    });
    try {
      const name = await clusterWith(
        kubeconfig({ server: server.url, "certificate-authority-data": caData }, { token: "t" }),
      );
      const first = clusters.connect({ namespace: ns, name });
      const second = clusters.connect({ namespace: ns, name });
      const [a, b] = await Promise.allSettled([first, second]);
      expect(a.status).toBe("rejected");
      expect(b.status).toBe("rejected");
      const error = (a as PromiseRejectedResult).reason as WorkloadClusterUnavailableError;
      expect(error).toBeInstanceOf(WorkloadClusterUnavailableError);
      expect(error.reason).toBe("WorkloadClusterUnreachable");
      expect(error.message).toMatch(/within 1500 ms/);
      expect(((b as PromiseRejectedResult).reason as Error).message).toBe(error.message);
    } finally {
      for (const timer of timers) clearInterval(timer);
      await server.close();
    }
  });

  it("refuses TLS material that is not PEM, naming the field and quoting none of it", async () => {
    const workload = await hostile(true);
    try {
      const garbage = Buffer.from(`-----BEGIN CERTIFICATE-----\n${CANARY}\n`).toString("base64");
      const badCa = await clusterWith(
        kubeconfig({ server: workload.url, "certificate-authority-data": garbage }, { token: "t" }),
      );
      const caRefusal = await refusal(badCa);
      expect(caRefusal.reason).toBe("KubeconfigSecretInvalid");
      expect(caRefusal.message).toContain("certificate-authority(-data)");
      expectSafe(caRefusal, garbage);
      const badKey = await clusterWith(
        kubeconfig(
          { server: workload.url, "certificate-authority-data": caData },
          { "client-certificate-data": caData, "client-key-data": garbage },
        ),
      );
      const keyRefusal = await refusal(badKey);
      expect(keyRefusal.reason).toBe("KubeconfigSecretInvalid");
      expect(keyRefusal.message).toContain("client-key(-data)");
      expectSafe(keyRefusal, garbage);
      // Nothing was sent: the material is checked before a connection opens.
      expect(workload.received).toEqual([]);
    } finally {
      await workload.close();
    }
  });

  it("connects once the refused Secret is replaced by a kubeconfig of embedded data", async () => {
    const workload = await startApiServer({ tls: true });
    const workloadCa = workload.kubeConfig.getCurrentCluster()?.caData;
    try {
      const name = await clusterWith(
        kubeconfig(
          { server: workload.url, "certificate-authority-data": workloadCa },
          { exec: { command: "/bin/true", apiVersion: "client.authentication.k8s.io/v1" } },
        ),
      );
      expect((await refusal(name)).reason).toBe("KubeconfigSecretInvalid");
      await writeSecret(
        name,
        kubeconfig(
          { server: workload.url, "certificate-authority-data": workloadCa },
          { token: "t" },
        ),
      );
      // The Secret's change ends the backoff: the next look connects.
      await eventually(async () => {
        const connection = await clusters.connect({ namespace: ns, name });
        expect(connection.nodes.hasSynced()).toBe(true);
      });
    } finally {
      await workload.stop();
    }
  });
});
