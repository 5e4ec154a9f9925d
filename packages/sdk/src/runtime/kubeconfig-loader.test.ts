import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { parseExecCredential, resolveCredentials } from "./credentials.js";
import { parseWorkloadKubeconfig } from "./kubeconfig.js";
import { inClusterKubeconfig, Kubeconfig, loadKubeconfig } from "./kubeconfig-loader.js";

const scratchRoot = resolve(import.meta.dirname, "..", "..", ".tmp");
mkdirSync(scratchRoot, { recursive: true });
const scratch = () => mkdtempSync(join(scratchRoot, "kubeconfig-"));

function kubeconfigFile(dir: string, name: string, body: Record<string, unknown>): string {
  const path = join(dir, name);
  writeFileSync(path, JSON.stringify({ apiVersion: "v1", kind: "Config", ...body }));
  return path;
}

describe("loadKubeconfig", () => {
  it("merges KUBECONFIG as kubectl: the first file to name an entry or a current-context wins", () => {
    const dir = scratch();
    const first = kubeconfigFile(dir, "a", {
      clusters: [
        { name: "c", cluster: { server: "https://first:6443", "certificate-authority": "ca.pem" } },
      ],
      users: [{ name: "u", user: { token: "first-token" } }],
      contexts: [{ name: "x", context: { cluster: "c", user: "u", namespace: "team" } }],
    });
    const second = kubeconfigFile(dir, "b", {
      clusters: [{ name: "c", cluster: { server: "https://second:6443" } }],
      users: [{ name: "u", user: { token: "second-token" } }],
      contexts: [{ name: "x", context: { cluster: "c", user: "u" } }],
      "current-context": "x",
    });
    const config = loadKubeconfig({
      env: { KUBECONFIG: [join(dir, "missing"), first, second].join(":") },
    });
    expect(config.getCurrentCluster()?.server).toBe("https://first:6443");
    expect(config.getCurrentCluster()?.caFile).toBe(join(dir, "ca.pem"));
    expect(config.getCurrentUser()?.token).toBe("first-token");
    expect(config.getCurrentNamespace()).toBe("team");
  });

  it("says what to do when an explicit path is missing or nothing is configured", () => {
    expect(() => loadKubeconfig({ path: join(scratch(), "nope") })).toThrow(
      /does not exist; fix the path/,
    );
    expect(() => loadKubeconfig({ env: { HOME: scratch() } })).toThrow(
      /pass --kubeconfig, set KUBECONFIG/,
    );
  });

  it("builds the in-cluster config from the service account mount, its token as a file", async () => {
    const dir = scratch();
    writeFileSync(join(dir, "token"), "token-one\n");
    writeFileSync(join(dir, "namespace"), "capi-system");
    const config = inClusterKubeconfig({
      env: { KUBERNETES_SERVICE_HOST: "10.0.0.1", KUBERNETES_SERVICE_PORT: "443" },
      serviceAccountDir: dir,
    });
    expect(config.getCurrentCluster()?.server).toBe("https://10.0.0.1:443");
    expect(config.getCurrentNamespace()).toBe("capi-system");
    expect((await resolveCredentials(config)).headers.authorization).toBe("Bearer token-one");
    // Rotation: the file is read again on the next resolution.
    writeFileSync(join(dir, "token"), "token-two\n");
    expect((await resolveCredentials(config, true)).headers.authorization).toBe("Bearer token-two");
  });

  it("runs an exec plugin of the operator's kubeconfig and uses its token", async () => {
    const dir = scratch();
    const plugin = join(dir, "plugin.mjs");
    writeFileSync(
      plugin,
      `#!${process.execPath}\nprocess.stdout.write(JSON.stringify({apiVersion: "client.authentication.k8s.io/v1", kind: "ExecCredential", status: {token: "from-exec-" + JSON.parse(process.env.KUBERNETES_EXEC_INFO).spec.interactive}}));\n`,
      { mode: 0o755 },
    );
    const config = new Kubeconfig({
      clusters: [{ name: "c", server: "https://h:6443", skipTLSVerify: false }],
      users: [
        {
          name: "u",
          exec: {
            apiVersion: "client.authentication.k8s.io/v1",
            command: plugin,
            interactiveMode: "Never",
          },
        },
      ],
      contexts: [{ name: "x", cluster: "c", user: "u" }],
      currentContext: "x",
    });
    const credentials = await resolveCredentials(config);
    expect(credentials.headers.authorization).toBe("Bearer from-exec-false");
    expect(credentials.refreshable).toBe(true);
  });

  it("keeps an exec credential until its expirationTimestamp", () => {
    const at = new Date(Date.now() + 60_000).toISOString();
    const result = parseExecCredential(
      JSON.stringify({
        apiVersion: "client.authentication.k8s.io/v1beta1",
        kind: "ExecCredential",
        status: { token: "t", expirationTimestamp: at },
      }),
      "client.authentication.k8s.io/v1beta1",
    );
    expect(result.expiresAt).toBeGreaterThan(performance.now() + 50_000);
    expect(result.expiresAt).toBeLessThan(performance.now() + 61_000);
    expect(() =>
      parseExecCredential(
        JSON.stringify({
          kind: "ExecCredential",
          apiVersion: "client.authentication.k8s.io/v1",
          status: {},
        }),
        "client.authentication.k8s.io/v1",
      ),
    ).toThrow(/neither a token nor a client certificate/);
  });
});

describe("a workload kubeconfig (from a Secret)", () => {
  it("is data: the client refuses files and plugins even in a hand-built one", async () => {
    const parsed = parseWorkloadKubeconfig(
      "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://w:6443'}}]\nusers: [{name: u, user: {token: t}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n",
      "Secret ns/c-kubeconfig",
    );
    expect(parsed.localCredentials).toBe(false);
    expect((await resolveCredentials(parsed)).headers.authorization).toBe("Bearer t");
    const smuggled = new Kubeconfig({
      localCredentials: false,
      clusters: [{ name: "c", server: "https://w:6443", skipTLSVerify: false }],
      users: [{ name: "u", tokenFile: "/var/run/secrets/kubernetes.io/serviceaccount/token" }],
      contexts: [{ name: "x", cluster: "c", user: "u" }],
      currentContext: "x",
    });
    await expect(resolveCredentials(smuggled)).rejects.toThrow(
      /refers to a token file, which a kubeconfig read from a Secret may not use/,
    );
  });
});
