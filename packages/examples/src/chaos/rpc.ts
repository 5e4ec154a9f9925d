/**
 * The fake cloud shared by provider processes: a loopback HTTP RPC in front of one
 * {@link FakeScalingCloud}, so managers running as separate OS processes act on the same state, and a
 * log of every call with the caller and the moment its effect landed (the chaos suite judges "one
 * active leader" by these effects). A hold hook lets a test freeze or kill a caller while its call is
 * in flight.
 *
 * @module
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import {
  CloudError,
  type CloudErrorCode,
  type CloudOperation,
  type FakeScalingCloud,
  MUTATING_OPERATIONS,
  type ScalingCloudClient,
} from "../cloud/index.js";

/** One call that reached the cloud. */
export interface CloudEffect {
  /** Order of execution. */
  readonly seq: number;
  /** The operation. */
  readonly op: CloudOperation;
  /** Who called (the manager's identity). */
  readonly caller: string;
  /** True for an operation that changes cloud state. */
  readonly mutating: boolean;
  /** When the cloud executed it (ms, wall clock). */
  readonly at: number;
  /** False when the cloud answered an error. */
  readonly ok: boolean;
}

/** Decides whether to hold a call before the cloud executes it; the hold ends when the promise does. */
export type CallHold = (call: {
  op: CloudOperation;
  caller: string;
  mutating: boolean;
}) => Promise<void> | undefined;

/** A loopback RPC server for one fake cloud. */
export class CloudRpcServer {
  /** Every call executed, in order. */
  readonly effects: CloudEffect[] = [];
  /** Set to hold calls (see {@link CallHold}). */
  hold: CallHold | undefined;
  private server: Server | undefined;

  /** Serves `cloud`. */
  constructor(private readonly cloud: FakeScalingCloud) {}

  /** Listens on 127.0.0.1 and resolves the base URL. */
  async start(): Promise<string> {
    const server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on("data", (chunk: Buffer) => chunks.push(chunk));
      request.on("end", () => {
        const op = (request.url ?? "/").slice(1) as CloudOperation;
        const caller = String(request.headers["x-caller"] ?? "unknown");
        void this.execute(op, caller, Buffer.concat(chunks).toString("utf8")).then(
          ({ status, body }) => {
            if (!response.destroyed) {
              response.writeHead(status, { "content-type": "application/json" }).end(body);
            }
          },
        );
      });
    });
    this.server = server;
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }

  /** Stops listening. */
  async stop(): Promise<void> {
    const server = this.server;
    if (!server) return;
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  }

  /** Mutating effects from `from` on (an index into {@link CloudRpcServer.effects}). */
  mutations(from = 0): CloudEffect[] {
    return this.effects.slice(from).filter((effect) => effect.mutating && effect.ok);
  }

  private async execute(
    op: CloudOperation,
    caller: string,
    text: string,
  ): Promise<{ status: number; body: string }> {
    const method = (this.cloud.client as unknown as Record<string, unknown>)[op];
    if (typeof method !== "function") {
      return { status: 404, body: JSON.stringify({ message: `no cloud operation ${op}` }) };
    }
    const mutating = MUTATING_OPERATIONS.has(op);
    // A held call is in flight: whatever happens to its caller, the cloud executes it afterwards.
    await this.hold?.({ op, caller, mutating });
    const args = JSON.parse(text || "[]") as unknown[];
    try {
      const value = await (method as (...a: unknown[]) => Promise<unknown>).apply(
        this.cloud.client,
        args,
      );
      this.record(op, caller, mutating, true);
      return { status: 200, body: JSON.stringify({ value: value ?? null }) };
    } catch (error) {
      this.record(op, caller, mutating, false);
      if (error instanceof CloudError) {
        const message = error.message.replace(`${error.code}: `, "");
        return {
          status: error.status,
          body: JSON.stringify({ code: error.code, message, retryAfterMs: error.retryAfterMs }),
        };
      }
      return {
        status: 500,
        body: JSON.stringify({ code: "InternalError", message: String(error) }),
      };
    }
  }

  private record(op: CloudOperation, caller: string, mutating: boolean, ok: boolean): void {
    this.effects.push({ seq: this.effects.length, op, caller, mutating, at: Date.now(), ok });
  }
}

/**
 * A {@link ScalingCloudClient} that calls a {@link CloudRpcServer}; cloud errors come back as
 * {@link CloudError}s, so a driver cannot tell it from the in-process cloud.
 *
 * @example
 * ```ts
 * const cloud = cloudRpcClient("http://127.0.0.1:4567", "manager-a");
 * await cloud.describeGroup("pool-a");
 * ```
 */
export function cloudRpcClient(url: string, caller: string): ScalingCloudClient {
  return new Proxy({} as ScalingCloudClient, {
    get(_target, op) {
      if (typeof op !== "string" || op === "then") return undefined;
      return async (...args: unknown[]) => {
        const response = await fetch(`${url}/${op}`, {
          method: "POST",
          headers: { "content-type": "application/json", "x-caller": caller },
          body: JSON.stringify(args),
        });
        const body = (await response.json()) as {
          value?: unknown;
          code?: CloudErrorCode;
          message?: string;
          retryAfterMs?: number;
        };
        if (response.ok) return body.value === null ? undefined : body.value;
        throw new CloudError(
          body.code ?? "InternalError",
          body.message ?? `HTTP ${response.status}`,
          body.retryAfterMs,
        );
      };
    },
  });
}
