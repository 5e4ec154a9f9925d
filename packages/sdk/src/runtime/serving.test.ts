// The guard and the header deadline every server of the manager gets (webhook, diagnostics, health):
// a handler's throw or rejection is answered 500 and logged without its message, the server keeps
// serving, and on a TLS server the first request's headers are due headerReadTimeoutMs after the TCP
// connection, not after the handshake.
import { createServer as createHttpServer, request as httpRequest, type Server } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { AddressInfo } from "node:net";
import { connect as netConnect, type Socket } from "node:net";
import { Writable } from "node:stream";
import { connect as tlsConnect } from "node:tls";
import { afterEach, describe, expect, it } from "vitest";
import { createLogger } from "./logging.js";
import { selfSignedCertificate } from "./selfsigned.js";
import {
  applyServingLimits,
  DEFAULT_SERVING_LIMITS,
  guardRequests,
  servingOptions,
} from "./serving.js";

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(
    servers.splice(0).map(
      (server) =>
        new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeAllConnections();
        }),
    ),
  );
});

function listen(server: Server): Promise<number> {
  servers.push(server);
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () => resolve((server.address() as AddressInfo).port)),
  );
}

function get(port: number, path: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const call = httpRequest({ host: "127.0.0.1", port, path, agent: false }, (response) => {
      let text = "";
      response.on("data", (chunk) => {
        text += chunk;
      });
      response.on("end", () => resolve({ status: response.statusCode ?? 0, text }));
      response.on("error", reject);
    });
    call.on("error", reject);
    call.end();
  });
}

describe("guardRequests", () => {
  it("answers 500 to a throw or a rejection, logs no message, and keeps serving", async () => {
    const lines: string[] = [];
    const logger = createLogger({
      destination: new Writable({
        write(chunk, _encoding, done) {
          lines.push(String(chunk));
          done();
        },
      }),
    });
    const rejections: unknown[] = [];
    const onRejection = (reason: unknown) => rejections.push(reason);
    process.on("unhandledRejection", onRejection);
    try {
      const port = await listen(
        createHttpServer(
          guardRequests("test-server", logger, async (request, response) => {
            if (request.url === "/throws") throw new Error("secret-from-the-body");
            if (request.url === "/rejects") {
              await Promise.resolve();
              JSON.stringify(JSON.parse(`${"[".repeat(10_000)}${"]".repeat(10_000)}`));
            }
            if (request.url === "/half") {
              response.writeHead(200).write("partial");
              throw new Error("after the headers");
            }
            response.end("ok");
          }),
        ),
      );
      for (const path of ["/throws", "/rejects"]) {
        const answer = await get(port, path);
        expect(answer.status).toBe(500);
        expect(answer.text).toBe(
          "test-server: the request could not be handled (the manager's log has the error)\n",
        );
      }
      // Once the answer is under way, the connection is closed instead.
      await expect(get(port, "/half")).rejects.toThrow();
      expect(await get(port, "/")).toEqual({ status: 200, text: "ok" });
      expect(rejections).toEqual([]);
      const logged = lines.join("");
      expect(logged).toContain("request handler failed; answered 500");
      expect(logged).toContain('"error":"RangeError"');
      expect(logged).not.toContain("secret-from-the-body");
    } finally {
      process.off("unhandledRejection", onRejection);
    }
  });
});

describe("applyServingLimits", () => {
  it("counts the header deadline of a TLS server from the TCP connection", async () => {
    const timeoutMs = 5000;
    const limits = { ...DEFAULT_SERVING_LIMITS, headerReadTimeoutMs: timeoutMs };
    const certificate = selfSignedCertificate();
    const server = createHttpsServer(
      { cert: certificate.cert, key: certificate.key, ...servingOptions(limits) },
      (_request, response) => response.end("ok"),
    );
    applyServingLimits(server, limits);
    const port = await listen(server);
    const raw = await new Promise<Socket>((resolve, reject) => {
      const socket = netConnect(port, "127.0.0.1", () => resolve(socket));
      socket.once("error", reject);
    });
    // A ClientHello late by 0.6 of the deadline, then headers one byte at a time.
    await new Promise((resolve) => setTimeout(resolve, timeoutMs * 0.6));
    const socket = await new Promise<ReturnType<typeof tlsConnect>>((resolve, reject) => {
      const tls = tlsConnect({ socket: raw, rejectUnauthorized: false }, () => resolve(tls));
      tls.once("error", reject);
    });
    const handshaken = performance.now();
    const head = `GET / HTTP/1.1\r\nHost: x\r\nX-Slow: ${"a".repeat(10_000)}`;
    let next = 0;
    const trickle = setInterval(() => socket.write(head.charAt(next++)), 100);
    const answer = await new Promise<string>((resolve) => {
      let text = "";
      socket.on("data", (chunk) => {
        text += chunk;
      });
      socket.on("error", () => undefined);
      socket.on("close", () => resolve(text));
      setTimeout(() => resolve("still open"), 30_000);
    });
    clearInterval(trickle);
    socket.destroy();
    expect(answer).toMatch(/^HTTP\/1\.1 408/);
    // Counted from the handshake's end (Node's own clock), the headers would have had all of it.
    expect(performance.now() - handshaken).toBeLessThan(timeoutMs);
  }, 60_000);
});
