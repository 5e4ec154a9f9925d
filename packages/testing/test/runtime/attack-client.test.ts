// KubeClient against a hostile API server (a node:http server of the test): endless and oversized
// bodies, a watch line that never ends, a body that drips. Each request must end with a typed error,
// in bounded memory and time, and no content of the answer in its message.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import {
  ApiError,
  KubeClient,
  NodeResource,
  ResponseTooLargeError,
  TimeoutError,
} from "@capi-ts/sdk/runtime";
import { KubeConfig } from "@kubernetes/client-node";
import { afterEach, describe, expect, it } from "vitest";

const CANARY = "canary-b41d-from-the-other-side";
const MiB = 1024 * 1024;

interface Hostile {
  readonly kubeConfig: KubeConfig;
  /** Bytes the server managed to write before the client let go. */
  written: number;
  close(): Promise<void>;
}

let open: Hostile[] = [];
afterEach(async () => {
  await Promise.all(open.map((h) => h.close()));
  open = [];
});

async function hostile(answer: (req: IncomingMessage, res: ServerResponse, h: Hostile) => void) {
  const timers = new Set<NodeJS.Timeout>();
  const h: Hostile = {
    kubeConfig: new KubeConfig(),
    written: 0,
    close: async () => {
      for (const timer of timers) clearInterval(timer);
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  const server: Server = createServer((req, res) => answer(req, res, h));
  (h as { timers?: Set<NodeJS.Timeout> }).timers = timers;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  h.kubeConfig.loadFromOptions({
    clusters: [
      {
        name: "h",
        server: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        skipTLSVerify: true,
      },
    ],
    users: [{ name: "h", token: "t" }],
    contexts: [{ name: "h", cluster: "h", user: "h" }],
    currentContext: "h",
  });
  open.push(h);
  return { h, timers };
}

/** Writes `chunk` as fast as the socket takes it, until the client goes away. */
function flood(res: ServerResponse, h: Hostile, chunk: Buffer): void {
  const pump = () => {
    while (!res.destroyed) {
      h.written += chunk.length;
      if (!res.write(chunk)) {
        res.once("drain", pump);
        return;
      }
    }
  };
  res.on("close", () => res.removeAllListeners("drain"));
  pump();
}

async function failure(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (error) {
    return error as Error;
  }
  throw new Error("the request succeeded; expected it to be refused");
}

describe("KubeClient against a hostile server", { timeout: 30_000 }, () => {
  it("cuts an endless list body at maxResponseBytes", async () => {
    const { h } = await hostile((_, res, self) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.write('{"kind":"NodeList","items":[');
      flood(res, self, Buffer.from(`{"metadata":{"name":"${"n".repeat(1000)}"}},`));
    });
    const client = new KubeClient(h.kubeConfig, { maxResponseBytes: 4 * MiB });
    const error = await failure(client.list(NodeResource));
    expect(error).toBeInstanceOf(ResponseTooLargeError);
    expect(error.message).toContain("larger than 4194304 bytes");
    // Cut near the cap: the socket buffers a little more, never gigabytes.
    expect(h.written).toBeLessThan(64 * MiB);
  });

  it("refuses a body by its Content-Length without reading it", async () => {
    let bodyWritten = 0;
    const { h } = await hostile((_, res) => {
      res.writeHead(200, {
        "content-type": "application/json",
        "content-length": String(1024 * MiB),
      });
      res.on("close", () => undefined);
      // Trickle a little; a client that read on would wait for the rest.
      res.write("{", () => {
        bodyWritten = 1;
      });
    });
    const client = new KubeClient(h.kubeConfig, { requestTimeoutMs: 20_000 });
    const error = await failure(client.list(NodeResource));
    expect(error).toBeInstanceOf(ResponseTooLargeError);
    expect(error.message).toContain(`larger than ${64 * MiB} bytes`);
    expect(bodyWritten).toBeLessThanOrEqual(1);
  });

  it("ends a watch whose line never ends at maxWatchEventBytes", async () => {
    const { h } = await hostile((_, res, self) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.write('{"type":"ADDED","object":{"metadata":{"name":"');
      flood(res, self, Buffer.alloc(64 * 1024, "a"));
    });
    const client = new KubeClient(h.kubeConfig, { maxWatchEventBytes: 2 * MiB });
    const events: unknown[] = [];
    const error = await failure(
      (async () => {
        for await (const event of client.watch(NodeResource)) events.push(event);
      })(),
    );
    expect(error).toBeInstanceOf(ResponseTooLargeError);
    expect(error.message).toContain("longer than 2097152 bytes");
    expect(events).toEqual([]);
    expect(h.written).toBeLessThan(64 * MiB);
  });

  it("ends a request whose body drips within requestTimeoutMs, however steady the drip", async () => {
    const { h, timers } = await hostile((_, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      const timer = setInterval(() => res.write(" "), 200);
      timers.add(timer);
      res.on("close", () => clearInterval(timer));
    });
    const client = new KubeClient(h.kubeConfig, { requestTimeoutMs: 1_000 });
    const error = await failure(client.list(NodeResource));
    expect(error).toBeInstanceOf(TimeoutError);
    expect(error.message).toContain("no complete response within 1000 ms");
  });

  it("describes an answer that is not a Status without quoting it", async () => {
    const { h } = await hostile((req, res) => {
      if (req.url?.includes("limit=2")) {
        res.writeHead(200, { "content-type": "text/html" });
        res.end(`<html>${CANARY}</html>`);
        return;
      }
      res.writeHead(502, { "content-type": "text/html" });
      res.end(`<html>${CANARY}</html>`);
    });
    const client = new KubeClient(h.kubeConfig);
    const error = await failure(client.list(NodeResource));
    expect(error).toBeInstanceOf(ApiError);
    expect((error as ApiError).code).toBe(502);
    expect(error.message).toContain("not a Kubernetes Status (text/html)");
    expect(error.message).not.toContain(CANARY);
    const notJson = await failure(client.list(NodeResource, { limit: 2 }));
    expect(notJson.message).toContain("response is not JSON");
    expect(notJson.message).not.toContain(CANARY);
  });

  it("rejects a malformed watch line without quoting it", async () => {
    const { h } = await hostile((_, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(`not json ${CANARY}\n`);
    });
    const client = new KubeClient(h.kubeConfig);
    const error = await failure(
      (async () => {
        for await (const _ of client.watch(NodeResource)) {
          // no event is expected
        }
      })(),
    );
    expect(error.message).toContain("malformed watch event");
    expect(error.message).not.toContain(CANARY);
  });
});
