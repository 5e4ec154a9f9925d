import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { KubeConfig } from "@kubernetes/client-node";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { KubeClient } from "./client.js";
import type { KubeClientOptions } from "./client-types.js";
import {
  ApiError,
  GoneError,
  InvalidError,
  ResponseTooLargeError,
  TooManyRequestsError,
} from "./errors.js";
import { retryAfterSeconds, statusFromBody } from "./http-transport.js";
import { SecretResource } from "./resource.js";
import { parseWatchLine, watchLines } from "./watch-lines.js";

const request = { method: "GET", path: "/api/v1/secrets" };

describe("retryAfterSeconds", () => {
  it("takes a Retry-After header of whole or fractional seconds, zero included", () => {
    expect(retryAfterSeconds({ "retry-after": "3" }, {})).toBe(3);
    expect(retryAfterSeconds({ "retry-after": "0" }, {})).toBe(0);
    expect(retryAfterSeconds({ "retry-after": "1.5" }, {})).toBe(1.5);
    expect(retryAfterSeconds({ "retry-after": ["2", "9"] }, {})).toBe(2);
  });

  it("prefers the header over the Status's details", () => {
    expect(retryAfterSeconds({ "retry-after": "4" }, { details: { retryAfterSeconds: 7 } })).toBe(
      4,
    );
  });

  it("falls back to the Status when the header is absent, a date, negative or garbage", () => {
    const status = { details: { retryAfterSeconds: 7 } };
    expect(retryAfterSeconds({}, status)).toBe(7);
    expect(retryAfterSeconds({ "retry-after": "Wed, 21 Oct 2026 07:28:00 GMT" }, status)).toBe(7);
    expect(retryAfterSeconds({ "retry-after": "-1" }, status)).toBe(7);
    expect(retryAfterSeconds({ "retry-after": "soon" }, status)).toBe(7);
    expect(retryAfterSeconds({ "retry-after": "Infinity" }, status)).toBe(7);
  });

  it("is undefined when neither says anything", () => {
    expect(retryAfterSeconds({}, {})).toBeUndefined();
    expect(retryAfterSeconds({ "retry-after": "later" }, { kind: "Status" })).toBeUndefined();
  });
});

describe("statusFromBody", () => {
  it("keeps a Kubernetes Status as sent", () => {
    const status = { kind: "Status", status: "Failure", reason: "NotFound", code: 404 };
    expect(statusFromBody(404, JSON.stringify(status), "application/json")).toEqual(status);
  });

  it("describes any other body without quoting it", () => {
    const page = "<html><body>secret proxy page</body></html>";
    const status = statusFromBody(502, page, "text/html; charset=utf-8");
    expect(status).toEqual({
      kind: "Status",
      status: "Failure",
      code: 502,
      message: `HTTP 502 with a body of ${page.length} bytes that is not a Kubernetes Status (text/html)`,
    });
    expect(statusFromBody(500, '{"kind":"Pod"}', "").message).toBe(
      "HTTP 500 with a body of 14 bytes that is not a Kubernetes Status",
    );
    expect(statusFromBody(503, "", "text/plain").message).toBe("HTTP 503");
  });
});

describe("parseWatchLine", () => {
  it("passes ADDED, MODIFIED, DELETED and BOOKMARK through", () => {
    for (const type of ["ADDED", "MODIFIED", "DELETED", "BOOKMARK"] as const) {
      const object = { metadata: { name: "a", resourceVersion: "5" } };
      expect(parseWatchLine(JSON.stringify({ type, object }), request)).toEqual({ type, object });
    }
  });

  it("raises an ERROR event as the typed error of its Status: 410 Gone means relist", () => {
    const gone = {
      type: "ERROR",
      object: { kind: "Status", code: 410, reason: "Expired", message: "too old resource version" },
    };
    const error = catchError(() => parseWatchLine(JSON.stringify(gone), request));
    expect(error).toBeInstanceOf(GoneError);
    expect((error as GoneError).code).toBe(410);
    expect((error as GoneError).request).toEqual(request);

    const invalid = { type: "ERROR", object: { kind: "Status", code: 422, reason: "Invalid" } };
    expect(catchError(() => parseWatchLine(JSON.stringify(invalid), request))).toBeInstanceOf(
      InvalidError,
    );
  });

  it("treats an ERROR event without a code as a server error", () => {
    const error = catchError(() => parseWatchLine('{"type":"ERROR"}', request));
    expect(error).toBeInstanceOf(ApiError);
    expect((error as ApiError).code).toBe(500);
  });

  it("refuses a line that is not JSON without quoting it, and an unknown event type", () => {
    const error = catchError(() => parseWatchLine('{"token":"hunter2"', request));
    expect(error).toBeInstanceOf(ApiError);
    expect((error as Error).message).toContain("a line of 18 characters that is not JSON");
    expect((error as Error).message).not.toContain("hunter2");
    expect(() => parseWatchLine('{"type":"PATCHED","object":{}}', request)).toThrow(
      /unknown watch event type/,
    );
  });
});

/** Reads every line the splitter yields from `chunks`, counting the chunks it pulled. */
async function linesOf(
  chunks: (string | Buffer)[],
  maxLineBytes = 1024,
): Promise<{ lines: string[]; pulled: number; error?: unknown }> {
  let pulled = 0;
  async function* source() {
    for (const chunk of chunks) {
      pulled++;
      yield typeof chunk === "string" ? Buffer.from(chunk) : chunk;
    }
  }
  const lines: string[] = [];
  try {
    for await (const line of watchLines(source(), maxLineBytes, () => new Error("too long"))) {
      lines.push(line);
    }
  } catch (error) {
    return { lines, pulled, error };
  }
  return { lines, pulled };
}

describe("watchLines", () => {
  it("joins a line split across chunks and splits a chunk holding several lines", async () => {
    const { lines } = await linesOf(['{"a":', "1}\n", '{"b":2}\n{"c"', ":3}\n"]);
    expect(lines).toEqual(['{"a":1}', '{"b":2}', '{"c":3}']);
  });

  it("joins a multi-byte character cut between two chunks", async () => {
    const bytes = Buffer.from('{"name":"é"}\n');
    const cut = bytes.indexOf(0xc3) + 1;
    const { lines } = await linesOf([bytes.subarray(0, cut), bytes.subarray(cut)]);
    expect(lines).toEqual(['{"name":"é"}']);
  });

  it("skips blank lines and keeps a last line that has no newline", async () => {
    const { lines } = await linesOf(["\n  \n", '{"a":1}\n\n', '{"b":2}  ']);
    expect(lines).toEqual(['{"a":1}', '{"b":2}']);
  });

  it("yields nothing for an empty stream", async () => {
    expect((await linesOf([])).lines).toEqual([]);
    expect((await linesOf(["", "\n"])).lines).toEqual([]);
  });

  it("accepts a line of exactly the cap and refuses one byte more", async () => {
    expect((await linesOf([`${"x".repeat(8)}\n`], 8)).lines).toEqual(["x".repeat(8)]);
    const over = await linesOf(["xxxx", `xxxxx\n`, "never read\n"], 8);
    expect(over.error).toEqual(new Error("too long"));
    expect(over.lines).toEqual([]);
    expect(over.pulled).toBe(2);
  });

  it("stops a line that never ends at the cap, without waiting for its newline", async () => {
    const result = await linesOf(['{"ok":1}\n', "x".repeat(6), "x".repeat(6), "x".repeat(6)], 10);
    expect(result.lines).toEqual(['{"ok":1}']);
    expect(result.error).toEqual(new Error("too long"));
    // The third chunk pushed the line past 10 bytes; the fourth is never read.
    expect(result.pulled).toBe(3);
  });

  it("judges the cap per line, not per chunk", async () => {
    const { lines, error } = await linesOf([`${"a".repeat(8)}\n${"b".repeat(8)}\n`], 8);
    expect(error).toBeUndefined();
    expect(lines).toEqual(["a".repeat(8), "b".repeat(8)]);
  });
});

type Handler = (request: IncomingMessage, response: ServerResponse) => void;

describe("KubeClient over HTTP", () => {
  let handler: Handler = (_, response) => response.end();
  const seen: string[] = [];
  const server = createServer((request, response) => {
    seen.push(`${request.method} ${request.url}`);
    handler(request, response);
  });
  let url = "";

  function client(options: KubeClientOptions = {}): KubeClient {
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromOptions({
      clusters: [{ name: "c", server: url, skipTLSVerify: true }],
      users: [{ name: "u" }],
      contexts: [{ name: "x", cluster: "c", user: "u" }],
      currentContext: "x",
    });
    return new KubeClient(kubeConfig, options);
  }

  beforeAll(async () => {
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
  beforeEach(() => {
    seen.length = 0;
  });

  const secret = { apiVersion: "v1", kind: "Secret", metadata: { name: "s", namespace: "d" } };
  const throttled = (response: ServerResponse, retryAfter?: string) => {
    response.writeHead(429, {
      "content-type": "application/json",
      ...(retryAfter === undefined ? {} : { "retry-after": retryAfter }),
    });
    response.end(JSON.stringify({ kind: "Status", code: 429, reason: "TooManyRequests" }));
  };

  it("retries a 429 that carries Retry-After, then returns the answer", async () => {
    let calls = 0;
    handler = (_, response) => {
      if (++calls <= 2) return throttled(response, "0");
      response.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(secret));
    };
    const kube = client();
    await expect(kube.get(SecretResource, { namespace: "d", name: "s" })).resolves.toEqual(secret);
    expect(seen).toEqual(Array(3).fill("GET /api/v1/namespaces/d/secrets/s"));
    kube.close();
  });

  it("gives up after maxThrottleRetries with the server's Retry-After on the error", async () => {
    handler = (_, response) => throttled(response, "0");
    const kube = client({ maxThrottleRetries: 2 });
    const error = await kube.get(SecretResource, { namespace: "d", name: "s" }).catch((e) => e);
    expect(error).toBeInstanceOf(TooManyRequestsError);
    expect((error as TooManyRequestsError).retryAfterSeconds).toBe(0);
    expect(seen).toHaveLength(3);
    kube.close();
  });

  it("does not retry a 429 that says nothing of when to come back", async () => {
    handler = (_, response) => throttled(response);
    const kube = client();
    const error = await kube.get(SecretResource, { namespace: "d", name: "s" }).catch((e) => e);
    expect(error).toBeInstanceOf(TooManyRequestsError);
    expect((error as TooManyRequestsError).retryAfterSeconds).toBeUndefined();
    expect(seen).toHaveLength(1);
    kube.close();
  });

  it("refuses a body whose Content-Length passes maxResponseBytes", async () => {
    handler = (_, response) => {
      const body = JSON.stringify({ ...secret, data: { big: "x".repeat(200) } });
      response.writeHead(200, { "content-type": "application/json" }).end(body);
    };
    const kube = client({ maxResponseBytes: 100 });
    await expect(kube.get(SecretResource, { namespace: "d", name: "s" })).rejects.toBeInstanceOf(
      ResponseTooLargeError,
    );
    kube.close();
  });

  it("streams watch events written in pieces, then raises a 410 as GoneError", async () => {
    let query = "";
    handler = (request, response) => {
      query = request.url ?? "";
      response.writeHead(200, { "content-type": "application/json" });
      const added = JSON.stringify({ type: "ADDED", object: secret });
      response.write(added.slice(0, 10));
      setImmediate(() => {
        response.write(`${added.slice(10)}\n`);
        const bookmark = { type: "BOOKMARK", object: { metadata: { resourceVersion: "9" } } };
        response.write(`${JSON.stringify(bookmark)}\n`);
        const gone = { type: "ERROR", object: { kind: "Status", code: 410, reason: "Expired" } };
        response.end(`${JSON.stringify(gone)}\n`);
      });
    };
    const kube = client();
    const events: string[] = [];
    const error = await (async () => {
      for await (const event of kube.watch(SecretResource, { resourceVersion: "7" })) {
        events.push(`${event.type} ${event.object.metadata?.resourceVersion ?? ""}`.trim());
      }
    })().catch((e) => e);
    expect(events).toEqual(["ADDED", "BOOKMARK 9"]);
    expect(error).toBeInstanceOf(GoneError);
    expect(query).toContain("watch=true");
    expect(query).toContain("resourceVersion=7");
    expect(query).toContain("allowWatchBookmarks=true");
    kube.close();
  });

  it("ends a watch whose event passes maxWatchEventBytes", async () => {
    handler = (_, response) => {
      response.writeHead(200, { "content-type": "application/json" });
      response.end(`${JSON.stringify({ type: "ADDED", object: { pad: "x".repeat(500) } })}\n`);
    };
    const kube = client({ maxWatchEventBytes: 100 });
    const error = await (async () => {
      for await (const _ of kube.watch(SecretResource)) {
        // no event fits
      }
    })().catch((e) => e);
    expect(error).toBeInstanceOf(ResponseTooLargeError);
    expect((error as Error).message).toMatch(/longer than 100 bytes/);
    kube.close();
  });
});

function catchError(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error("expected a throw");
}
