import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { KubeConfig } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KubeClient } from "./client.js";
import { objectNameProblem, pathSegmentNameProblem } from "./object-name.js";
import { NamespaceResource, SecretResource } from "./resource.js";

describe("object names as path segments", () => {
  const requests: string[] = [];
  const server = createServer((request, response) => {
    requests.push(`${request.method} ${request.url}`);
    response.writeHead(200, { "content-type": "application/json" });
    response.end(JSON.stringify({ kind: "SecretList", apiVersion: "v1", items: [] }));
  });
  let client: KubeClient;

  beforeAll(async () => {
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const kubeConfig = new KubeConfig();
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
    client = new KubeClient(kubeConfig);
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  // `..` would be resolved away: a GET of Secret ".." is a LIST of the namespace's Secrets.
  it.each([".", "..", "a/b", "a%2F", "x".repeat(254)])(
    "refuses %j in a get, patch or delete, sending nothing",
    async (name) => {
      const key = { namespace: "default", name };
      await expect(client.get(SecretResource, key)).rejects.toThrow(
        /^Secret: the name .*; an object name must be a single path segment \(no request was sent\)$/,
      );
      await expect(client.mergePatch(SecretResource, key, { data: {} })).rejects.toThrow(
        /single path segment/,
      );
      await expect(client.delete(SecretResource, key)).rejects.toThrow(/single path segment/);
      await expect(client.get(SecretResource, { namespace: name, name: "s" })).rejects.toThrow(
        /^Secret: namespace: .*a namespace must be a single path segment/,
      );
      await expect(client.get(NamespaceResource, { name })).rejects.toThrow(/single path segment/);
      expect(requests).toEqual([]);
    },
  );

  it("still sends a valid name", async () => {
    await client.get(SecretResource, { namespace: "default", name: "creds.v1" });
    expect(requests).toEqual(["GET /api/v1/namespaces/default/secrets/creds.v1"]);
  });

  it("says what is wrong with a name, quoting at most 64 characters", () => {
    expect(pathSegmentNameProblem("..")).toBe('the name may not be ".."');
    expect(pathSegmentNameProblem("ok:name")).toBeUndefined();
    expect(objectNameProblem("ok:name")).toMatch(/is not a valid object name/);
    expect(objectNameProblem("a".repeat(253))).toBeUndefined();
    expect(objectNameProblem(`${"%".repeat(1000)}`)?.length).toBeLessThan(120);
  });
});
