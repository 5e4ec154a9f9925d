/**
 * moto's server (PyPI `moto[server]`), the AWS API emulator the AWS reference provider is tested
 * against: found where `./dev moto --install` puts it, started on a free port per test bed.
 *
 * @module
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { createServer } from "node:net";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** The command that installs moto, for skip messages. */
export const MOTO_INSTALL_COMMAND = "./dev moto --install";

/** Where moto is (or would be) installed, and its pinned version. */
export interface MotoInstall {
  /** The pinned version (`MOTO_VERSION` of the `dev` script). */
  readonly version: string;
  /** The `moto_server` executable. */
  readonly server: string;
  /** Whether it is installed. */
  readonly installed: boolean;
}

/** The checkout's root: the folder with the `dev` script, above this file. */
function checkoutRoot(): string | undefined {
  let folder = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(join(folder, "dev")) && existsSync(join(folder, "pnpm-workspace.yaml"))) {
      return folder;
    }
    const parent = dirname(folder);
    if (parent === folder) return undefined;
    folder = parent;
  }
}

/**
 * The moto installation of this checkout, `undefined` outside one (a packed install of the package).
 *
 * @example
 * ```ts
 * const moto = findMoto();
 * if (!moto?.installed) console.warn(`!!! SKIPPED BACKEND: no moto; run ${MOTO_INSTALL_COMMAND}`);
 * ```
 */
export function findMoto(): MotoInstall | undefined {
  const root = checkoutRoot();
  if (!root) return undefined;
  // One pin, in the script that installs it.
  const version = /^MOTO_VERSION="([^"]+)"/m.exec(readFileSync(join(root, "dev"), "utf8"))?.[1];
  if (!version) return undefined;
  const server = join(root, ".dev", `moto-${version}`, "bin", "moto_server");
  return { version, server, installed: existsSync(server) };
}

/** A running moto server. */
export interface MotoServer {
  /** `http://127.0.0.1:<port>`: the endpoint of every service. */
  readonly endpoint: string;
  /** moto's version. */
  readonly version: string;
  /** Stops the server (and forgets every resource in it). */
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  return await new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

async function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  await new Promise<void>((resolve) => child.once("exit", () => resolve()));
}

/**
 * Starts moto's server on a free port and resolves once it answers.
 *
 * @throws Error when moto is not installed (with the command that installs it) or does not start.
 * @example
 * ```ts
 * const moto = await startMoto();
 * const ec2 = new EC2Client({ endpoint: moto.endpoint, region: "us-east-1", credentials });
 * await moto.stop();
 * ```
 */
export async function startMoto(): Promise<MotoServer> {
  const install = findMoto();
  if (!install?.installed) throw new Error(`moto is not installed: run ${MOTO_INSTALL_COMMAND}`);
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    const child = spawn(install.server, ["-H", "127.0.0.1", "-p", String(port)], {
      stdio: ["ignore", "ignore", "pipe"],
    });
    // Keep only the tail of what it says: enough to explain a failed start, bounded.
    let stderr = "";
    child.stderr?.on("data", (chunk: Buffer) => {
      stderr = (stderr + chunk.toString("utf8")).slice(-4096);
    });
    const endpoint = `http://127.0.0.1:${port}`;
    const stop = async () => {
      child.kill("SIGTERM");
      await exited(child);
    };
    // Python starts slowly on a busy machine; a minute without an answer is a hung start.
    for (let probe = 0; probe < 600; probe++) {
      if (child.exitCode !== null) break;
      try {
        const response = await fetch(`${endpoint}/moto-api/reset`, { method: "POST" });
        if (response.ok) return { endpoint, version: install.version, stop };
      } catch {
        // not listening yet
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    await stop();
    // Another process may have taken the port between the probe and moto's bind.
    if (attempt >= 3) throw new Error(`moto_server did not start: ${stderr.trim()}`);
  }
}
