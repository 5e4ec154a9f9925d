// The webhook server's bounds, over real TLS, as an attacker who reaches the port would try them
// (issue 22, item 4): a Content-Type other than application/json, bodies past the 7 MiB cap (by
// Content-Length, and chunked without one), a flood of ~7 MiB reviews while the API server sends a
// legitimate one (answered within the API server's 10 s, the flood refused with 503 before its bodies
// are read), slow headers, idle connections, a connection limit, and a review of another kind.
import { mkdtemp, rm } from "node:fs/promises";
import { request as httpsRequest } from "node:https";
import { connect as netConnect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect, type TLSSocket } from "node:tls";
import { FakeCloudMachinePool } from "@capi-ts/examples";
import { silentLogger } from "@capi-ts/sdk/runtime";
import {
  DEFAULT_WEBHOOK_SERVER_LIMITS,
  infraMachinePoolWebhooks,
  WebhookServer,
  type WebhookServerOptions,
  webhookPath,
} from "@capi-ts/sdk/webhook";
import { createTestCertificates, type TestCertificates } from "@capi-ts/testing";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { post, review } from "./support.js";

const MiB = 1024 * 1024;
const group = FakeCloudMachinePool.group;
const poolPath = webhookPath("validate", group, "v1beta2", "FakeCloudMachinePool");

let dir: string;
let certs: TestCertificates;
const servers: WebhookServer[] = [];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "capi-ts-webhook-bounds-"));
  certs = await createTestCertificates();
  await certs.writeTo(dir);
});

afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.stop()));
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function start(options: WebhookServerOptions = {}): Promise<number> {
  const server = new WebhookServer({
    certDir: dir,
    port: 0,
    host: "127.0.0.1",
    logger: silentLogger(),
    ...options,
  });
  server.register(infraMachinePoolWebhooks(FakeCloudMachinePool, {}));
  servers.push(server);
  await server.start();
  return server.address()?.port ?? 0;
}

const validPool = review({
  operation: "CREATE",
  object: {
    apiVersion: `${group}/v1beta2`,
    kind: "FakeCloudMachinePool",
    metadata: { name: "pool-a", namespace: "default" },
    spec: { instanceType: "small", minSize: 0, maxSize: 3 },
  },
});

/** A valid pool review padded to `bytes` with an annotation (the JSON stays an AdmissionReview). */
function paddedReview(bytes: number): Buffer {
  const base = JSON.stringify(validPool);
  const pad = "x".repeat(Math.max(0, bytes - base.length - 64));
  const padded = review({
    operation: "CREATE",
    object: {
      apiVersion: `${group}/v1beta2`,
      kind: "FakeCloudMachinePool",
      metadata: { name: "pool-a", namespace: "default", annotations: { pad } },
      spec: { instanceType: "small", minSize: 0, maxSize: 3 },
    },
  });
  return Buffer.from(JSON.stringify(padded));
}

interface Outcome {
  status: number | "reset";
  text: string;
  /** Body bytes the client had handed to its socket when the exchange ended. */
  written: number;
}

/**
 * POSTs `body` in 256 KiB writes that respect backpressure, as a client that streams a large review;
 * `chunked` leaves out the Content-Length. Settles on the answer (or on a reset: a refused connection).
 */
function stream(
  port: number,
  body: Buffer,
  options: {
    chunked?: boolean;
    onProgress?: (written: number) => void;
    /** The client's own address (any of 127.0.0.0/8), as distinct clients would have. */
    localAddress?: string;
  } = {},
): Promise<Outcome> {
  return new Promise((resolve) => {
    let written = 0;
    let settled = false;
    const settle = (outcome: Outcome) => {
      if (settled) return;
      settled = true;
      call.destroy();
      resolve(outcome);
    };
    const call = httpsRequest(
      {
        host: "127.0.0.1",
        port,
        path: poolPath,
        method: "POST",
        ca: certs.caPem,
        agent: false,
        ...(options.localAddress ? { localAddress: options.localAddress } : {}),
        headers: {
          "content-type": "application/json",
          ...(options.chunked ? {} : { "content-length": body.length }),
        },
      },
      (response) => {
        let text = "";
        response.on("data", (chunk) => {
          text += chunk;
        });
        response.on("end", () => settle({ status: response.statusCode ?? 0, text, written }));
        response.on("error", () => settle({ status: response.statusCode ?? 0, text, written }));
      },
    );
    call.on("error", () => settle({ status: "reset", text: "", written }));
    const step = 256 * 1024;
    const pump = () => {
      while (written < body.length && !settled) {
        const more = call.write(body.subarray(written, written + step));
        written = Math.min(body.length, written + step);
        options.onProgress?.(written);
        if (!more) {
          call.once("drain", pump);
          return;
        }
      }
      if (!settled) call.end();
    };
    pump();
  });
}

describe("WebhookServer bounds", () => {
  it("has controller-runtime's defaults", () => {
    expect(DEFAULT_WEBHOOK_SERVER_LIMITS).toEqual({
      maxBodyBytes: 7 * MiB,
      maxBytesInFlight: 16 * MiB,
      headerReadTimeoutMs: 32_000,
      requestTimeoutMs: 60_000,
      idleTimeoutMs: 5_000,
      maxConnections: 512,
    });
    expect(() => new WebhookServer({ maxBodyBytes: 0 })).toThrow(
      "WebhookServer: maxBodyBytes must be a whole number ≥ 1, got 0",
    );
    expect(() => new WebhookServer({ headerReadTimeoutMs: 5000, requestTimeoutMs: 1000 })).toThrow(
      /headerReadTimeoutMs \(5000\) must not exceed requestTimeoutMs \(1000\)/,
    );
    expect(() => new WebhookServer({ maxBytesInFlight: 8 * MiB })).toThrow(
      /maxBytesInFlight \(8388608\) must hold at least one body of maxBodyBytes/,
    );
  });

  it("answers 400 to a Content-Type other than application/json, as controller-runtime", async () => {
    const port = await start();
    const answer = await new Promise<{ status: number; text: string }>((resolve, reject) => {
      const call = httpsRequest(
        {
          host: "127.0.0.1",
          port,
          path: poolPath,
          method: "POST",
          ca: certs.caPem,
          headers: { "content-type": "text/plain" },
        },
        (response) => {
          let text = "";
          response.on("data", (chunk) => {
            text += chunk;
          });
          response.on("end", () => resolve({ status: response.statusCode ?? 0, text }));
        },
      );
      call.on("error", reject);
      call.end(JSON.stringify(validPool));
    });
    expect(answer.status).toBe(400);
    expect(answer.text).toContain("the Content-Type must be application/json");
    // application/json (with a charset parameter too) is served.
    expect((await post(port, poolPath, validPool, certs.caPem)).json().response).toEqual({
      uid: "4f1c2b8e-1",
      allowed: true,
    });
  });

  it("answers 413 to a body over 7 MiB without reading it, and stops reading a chunked one at the cap", async () => {
    const port = await start();
    const big = paddedReview(7 * MiB + 512 * 1024);
    const declared = await stream(port, big);
    expect(declared.status).toBe(413);
    expect(declared.text).toContain(`the body exceeds ${7 * MiB} bytes (maxBodyBytes)`);
    // Refused on its headers: the client had written far less than the body when the answer came.
    expect(declared.written).toBeLessThan(big.length);
    const chunked = await stream(port, Buffer.concat([big, big]), { chunked: true });
    expect(chunked.status).toBe(413);
    expect(chunked.written).toBeLessThan(2 * big.length);
    // A legitimate review just under the cap is still served.
    const near = await stream(port, paddedReview(6.5 * MiB));
    expect(near.status).toBe(200);
    expect(JSON.parse(near.text).response).toEqual({ uid: "4f1c2b8e-1", allowed: true });
  }, 60_000);

  it("answers a legitimate review within 10 s while 150 concurrent ~7 MiB reviews flood it, refusing the excess with 503", async () => {
    const port = await start();
    // One shared payload: the flood's clients stream the same bytes, so the test process holds 7 MiB.
    const flood = paddedReview(7 * MiB - 64 * 1024);
    const floodSize = 150;
    const progressed = new Set<number>();
    let ready: () => void = () => undefined;
    const inFlight = new Promise<void>((resolve) => {
      ready = resolve;
    });
    const mark = (index: number) => {
      progressed.add(index);
      if (progressed.size === floodSize) ready();
    };
    const rssBefore = process.memoryUsage().rss;
    let rssPeak = rssBefore;
    const sampler = setInterval(() => {
      rssPeak = Math.max(rssPeak, process.memoryUsage().rss);
    }, 50);
    // Each flooding client has an address of its own, so the bound at work is the server's, not the
    // share of one address (the next test).
    const outcomes = Array.from({ length: floodSize }, (_, index) =>
      stream(port, flood, {
        localAddress: `127.0.1.${index + 1}`,
        onProgress: (written) => {
          if (written >= MiB) mark(index);
        },
      }).then((outcome) => {
        mark(index);
        return outcome;
      }),
    );
    // Every flood request has either been answered or has a MiB of its body on the wire.
    await inFlight;
    const started = performance.now();
    const legitimate = await post(port, poolPath, validPool, certs.caPem);
    const legitimateMs = performance.now() - started;
    const results = await Promise.all(outcomes);
    clearInterval(sampler);
    const statuses = new Map<string, number>();
    for (const { status } of results) {
      statuses.set(String(status), (statuses.get(String(status)) ?? 0) + 1);
    }
    console.log(
      `flood: legitimate review answered in ${Math.round(legitimateMs)} ms; flood statuses ${JSON.stringify(Object.fromEntries(statuses))}; RSS +${Math.round((rssPeak - rssBefore) / MiB)} MiB at peak`,
    );
    expect(legitimate.status).toBe(200);
    expect(legitimate.json().response).toEqual({ uid: "4f1c2b8e-1", allowed: true });
    expect(legitimateMs).toBeLessThan(10_000);
    // Not a server that buffered 1 GiB: reviews that fit were judged, the rest refused with 503
    // before their bodies were read (the server closes such a connection once it answered, so a
    // client still sending may see it closed rather than read the 503: a "reset", body half sent).
    for (const { status } of results) expect([200, 503, "reset"]).toContain(status);
    const refused = results.filter((outcome) => outcome.status !== 200);
    expect(refused.length).toBeGreaterThan(floodSize / 2);
    for (const outcome of refused) {
      if (outcome.status === 503) expect(outcome.text).toContain("too many reviews in flight");
      else expect(outcome.written).toBeLessThan(flood.length);
    }
  }, 120_000);

  it("keeps room for a legitimate review while one address holds connections that declare large bodies and send one byte", async () => {
    // Issue 46, found on a scaffolded provider: reservations go by Content-Length, so 23 connections
    // declaring 7 MiB, 6 MiB and 1 MiB bodies, each sending one byte, held all the bytes in flight
    // until the request timeout (60 s), and every review of the API server got 503.
    const port = await start();
    const attacker = "127.0.0.2";
    const declared = [...Array<number>(6).fill(7 * MiB), 6 * MiB, ...Array<number>(16).fill(MiB)];
    const sockets: TLSSocket[] = [];
    const answers: string[] = [];
    let answeredAll: () => void = () => undefined;
    // Its share (one 7 MiB body plus 1 MiB) holds two of them; the server answers the others at once.
    const refusedCount = declared.length - 2;
    const refused = new Promise<void>((resolve) => {
      answeredAll = resolve;
    });
    for (const size of declared) {
      const raw = await new Promise<Socket>((resolve, reject) => {
        const tcp = netConnect({ host: "127.0.0.1", port, localAddress: attacker }, () =>
          resolve(tcp),
        );
        tcp.once("error", reject);
      });
      const socket = await tlsConnect(port, raw);
      sockets.push(socket);
      socket.once("data", (chunk) => {
        answers.push(String(chunk));
        if (answers.length === refusedCount) answeredAll();
      });
      socket.on("error", () => undefined);
      await new Promise<void>((resolve) =>
        socket.write(
          `POST ${poolPath} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${size}\r\n\r\n{`,
          () => resolve(),
        ),
      );
    }
    try {
      // A review from the same address, answered after every request above was read: by then the
      // server has reserved (or refused) each of them.
      const sentinel = await stream(port, Buffer.from(JSON.stringify(validPool)), {
        localAddress: attacker,
      });
      expect([200, 503]).toContain(sentinel.status);
      const legitimate = await post(port, poolPath, validPool, certs.caPem);
      expect(legitimate.status).toBe(200);
      expect(legitimate.json().response).toEqual({ uid: "4f1c2b8e-1", allowed: true });
      // The attacker's requests past its share were refused at once, naming why.
      await Promise.race([refused, new Promise((resolve) => setTimeout(resolve, 20_000))]);
      expect(answers.length).toBe(refusedCount);
      for (const text of answers) {
        expect(text).toMatch(/^HTTP\/1\.1 503/);
        expect(text).toContain("too many reviews in flight");
      }
    } finally {
      for (const socket of sockets) socket.destroy();
    }
  }, 60_000);

  it("cuts a client that trickles its headers once headerReadTimeoutMs passed", async () => {
    const port = await start({ headerReadTimeoutMs: 1000, requestTimeoutMs: 2000 });
    const socket = await tlsConnect(port);
    socket.write(`POST ${poolPath} HTTP/1.1\r\nHost: 127.0.0.1\r\n`);
    const trickle = setInterval(() => socket.write("X"), 100);
    const started = performance.now();
    const answer = await closed(socket);
    clearInterval(trickle);
    expect(performance.now() - started).toBeLessThan(15_000);
    expect(answer).toMatch(/^HTTP\/1\.1 408/);
  }, 30_000);

  it("counts headerReadTimeoutMs from the connection, TLS handshake included, not from the handshake's end", async () => {
    // Node's own header timeout starts once the handshake is done, so a client that waits before its
    // ClientHello and then trickles its headers kept the connection for the handshake's time plus the
    // header timeout (issue 46: 50 s, documented 32 s). The request timeout stays at its 60 s
    // default: only the header deadline can end this.
    const timeoutMs = 5000;
    const port = await start({ headerReadTimeoutMs: timeoutMs });
    const raw = await new Promise<Socket>((resolve, reject) => {
      const socket = netConnect(port, "127.0.0.1", () => resolve(socket));
      socket.once("error", reject);
    });
    await new Promise((resolve) => setTimeout(resolve, timeoutMs * 0.6));
    const socket = await tlsConnect(port, raw);
    const handshaken = performance.now();
    const head = `POST ${poolPath} HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ${"a".repeat(10_000)}`;
    let next = 0;
    const trickle = setInterval(() => socket.write(head.charAt(next++)), 100);
    const answer = await Promise.race([
      closed(socket),
      new Promise<string>((resolve) => setTimeout(() => resolve("still open"), 30_000)),
    ]);
    clearInterval(trickle);
    socket.destroy();
    expect(answer).toMatch(/^HTTP\/1\.1 408/);
    // Cut by the deadline counted from the connection: the headers alone had less than the timeout
    // (counted from the handshake's end, they always get all of it).
    expect(performance.now() - handshaken).toBeLessThan(timeoutMs);
  }, 60_000);

  it("cuts a client that drips its body once requestTimeoutMs passed", async () => {
    const port = await start({ headerReadTimeoutMs: 1000, requestTimeoutMs: 2000 });
    const socket = await tlsConnect(port);
    socket.write(
      `POST ${poolPath} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{`,
    );
    const drip = setInterval(() => socket.write(" "), 100);
    const started = performance.now();
    const answer = await closed(socket);
    clearInterval(drip);
    expect(performance.now() - started).toBeLessThan(15_000);
    expect(answer).toMatch(/^HTTP\/1\.1 408/);
  }, 30_000);

  it("closes a kept-alive connection idle for idleTimeoutMs", async () => {
    const port = await start({ idleTimeoutMs: 100 });
    const socket = await tlsConnect(port);
    const body = JSON.stringify(validPool);
    socket.write(
      `POST ${poolPath} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
    const started = performance.now();
    const answer = await closed(socket);
    // Node adds a second to the keep-alive timeout (keepAliveTimeoutBuffer); its default is 5 s.
    expect(performance.now() - started).toBeLessThan(4000);
    expect(answer).toMatch(/^HTTP\/1\.1 200/);
  }, 30_000);

  it("closes connections past maxConnections, and serves again once they are gone", async () => {
    const port = await start({ maxConnections: 3 });
    const held = await Promise.all([tlsConnect(port), tlsConnect(port), tlsConnect(port)]);
    const refused = await tlsConnect(port).then(
      (socket) => closed(socket).then(() => "closed after the handshake"),
      () => "refused",
    );
    expect(refused).toBe("refused");
    for (const socket of held) socket.destroy();
    let served = 0;
    for (let attempt = 0; attempt < 100 && served !== 200; attempt++) {
      served = await post(port, poolPath, validPool, certs.caPem).then(
        (answer) => answer.status,
        () => 0,
      );
      if (served !== 200) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(served).toBe(200);
  }, 30_000);

  it("denies a review of another kind sent to a kind's path, naming both", async () => {
    const port = await start();
    const secret = review({
      operation: "CREATE",
      kind: { group: "", version: "v1", kind: "Secret" },
      resource: { group: "", version: "v1", resource: "secrets" },
      object: { apiVersion: "v1", kind: "Secret", metadata: { name: "s", namespace: "default" } },
    });
    const answer = await post(port, poolPath, secret, certs.caPem);
    expect(answer.status).toBe(200);
    expect(answer.json().response).toEqual({
      uid: "4f1c2b8e-1",
      allowed: false,
      status: {
        code: 400,
        reason: "BadRequest",
        message: `webhook ${poolPath} serves ${group}/v1beta2 FakeCloudMachinePool, not v1 Secret: point the webhook configuration's rules for this kind at its own webhook`,
      },
    });
    // A kind the API server would never send is not echoed back.
    const odd = review({
      operation: "CREATE",
      kind: { group: "<script>", version: "v1", kind: "Secret" },
      object: {},
    });
    const oddAnswer = await post(port, poolPath, odd, certs.caPem);
    expect(JSON.stringify(oddAnswer.json().response)).not.toContain("<script>");
    expect(oddAnswer.json().response).toMatchObject({ allowed: false });
  });
});

function tlsConnect(port: number, over?: Socket): Promise<TLSSocket> {
  return new Promise((resolve, reject) => {
    const socket = connect(
      { host: "127.0.0.1", port, ca: certs.caPem, ...(over ? { socket: over } : {}) },
      () => resolve(socket),
    );
    socket.once("error", reject);
    socket.once("close", () => reject(new Error("closed before the handshake")));
  });
}

/** Everything the server sent, once it closed the connection. */
function closed(socket: TLSSocket): Promise<string> {
  return new Promise((resolve) => {
    let text = "";
    socket.on("data", (chunk) => {
      text += chunk;
    });
    socket.on("error", () => undefined);
    socket.on("close", () => resolve(text));
  });
}
