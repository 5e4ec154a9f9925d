import { type ChildProcess, spawn } from "node:child_process";
import { closeSync, openSync, readFileSync } from "node:fs";

/*
 * Each server runs under a small Node "guardian" whose stdin is a pipe from this process. When this
 * process ends in any way (even SIGKILL, which runs no handler), the pipe closes and the guardian
 * stops the server: no orphaned etcd or kube-apiserver after an interrupted test run. The guardian
 * also passes SIGTERM/SIGINT on and escalates to SIGKILL when the server does not stop in time.
 */
const GUARDIAN = `
const { spawn } = require("node:child_process");
const { rmSync } = require("node:fs");
const [binary, graceMs, orphanCleanupDir, ...args] = process.argv.slice(1);
const server = spawn(binary, args, { stdio: ["ignore", "inherit", "inherit"] });
let stopping = false;
let orphaned = false;
function stop() {
  if (stopping) return;
  stopping = true;
  server.kill("SIGTERM");
  setTimeout(() => server.kill("SIGKILL"), Number(graceMs)).unref();
}
function parentGone() {
  orphaned = true;
  stop();
}
process.stdin.on("end", parentGone);
process.stdin.on("close", parentGone);
process.stdin.on("error", parentGone);
process.stdin.resume();
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
// Freeze and thaw the server itself (a stalled disk, a GC pause): the guardian stays responsive.
process.on("SIGUSR1", () => server.kill("SIGSTOP"));
process.on("SIGUSR2", () => server.kill("SIGCONT"));
server.on("error", (error) => { console.error("guardian: " + error.message); process.exit(127); });
server.on("exit", (code, signal) => {
  if (orphaned && orphanCleanupDir) rmSync(orphanCleanupDir, { recursive: true, force: true });
  process.exit(code ?? (signal === "SIGTERM" ? 0 : 1));
});
`;

/** A server process started under a guardian; its output goes to a log file. */
export class GuardedProcess {
  readonly #child: ChildProcess;
  readonly #exited: Promise<number | null>;
  #exitCode: number | null | undefined;

  private constructor(
    readonly name: string,
    readonly logFile: string,
    child: ChildProcess,
  ) {
    this.#child = child;
    this.#exited = new Promise((resolve) => {
      child.once("exit", (code) => {
        this.#exitCode = code;
        live.delete(this);
        resolve(code);
      });
    });
    live.add(this);
    installExitHooks();
  }

  /**
   * Starts `binary args…`, appending its stdout and stderr to `logFile`. When this process dies
   * without stopping the server, the guardian removes `orphanCleanupDir` (if given) after the server.
   */
  static start(
    name: string,
    binary: string,
    args: readonly string[],
    logFile: string,
    graceMs: number,
    orphanCleanupDir = "",
  ): GuardedProcess {
    const log = openSync(logFile, "a");
    try {
      const env = { ...process.env };
      // The test runner's loaders and flags are not for the guardian.
      delete env.NODE_OPTIONS;
      const child = spawn(
        process.execPath,
        ["-e", GUARDIAN, binary, String(graceMs), orphanCleanupDir, ...args],
        {
          stdio: ["pipe", log, log],
          env,
        },
      );
      // The pipe must not keep the test process alive, and an error on it only means the guardian is gone.
      child.stdin?.on("error", () => {});
      (child.stdin as unknown as { unref?: () => void } | null)?.unref?.();
      child.unref();
      return new GuardedProcess(name, logFile, child);
    } finally {
      closeSync(log);
    }
  }

  /** Whether the server (and its guardian) is still running. */
  get running(): boolean {
    return this.#exitCode === undefined;
  }

  /** The exit code once it has stopped (`null` when killed by a signal). */
  get exitCode(): number | null | undefined {
    return this.#exitCode;
  }

  /** Resolves with the exit code when the process has stopped. */
  get exited(): Promise<number | null> {
    return this.#exited;
  }

  /** The guardian's process id (the server is its only child). */
  get pid(): number | undefined {
    return this.#child.pid;
  }

  /** Asks the server to stop (SIGTERM; SIGKILL after the grace period) and waits until it has. */
  async stop(): Promise<void> {
    if (!this.running) return;
    // Started unreferenced so a forgotten stop() cannot hang the test process; waiting for the exit
    // must hold the event loop open, though.
    this.#child.ref();
    this.#child.kill("SIGTERM");
    await this.#exited;
  }

  /**
   * Freezes the server (SIGSTOP through the guardian) for `ms`, then thaws it: every request to it
   * hangs meanwhile, as on a stalled disk or a long pause. Resolves once it runs again.
   */
  async pause(ms: number): Promise<void> {
    if (!this.running) throw new Error(`${this.name} is not running; it cannot be paused`);
    this.#child.kill("SIGUSR1");
    try {
      await new Promise((resolve) => setTimeout(resolve, ms));
    } finally {
      if (this.running) this.#child.kill("SIGUSR2");
    }
  }

  /** Sends SIGTERM without waiting: for exit hooks, where nothing asynchronous runs any more. */
  stopNow(): void {
    if (this.running) this.#child.kill("SIGTERM");
  }

  /** The last `lines` lines of the log, for error messages. */
  logTail(lines = 40): string {
    try {
      const text = readFileSync(this.logFile, "utf8").trimEnd().split("\n");
      return text.slice(-lines).join("\n");
    } catch {
      return "(no log)";
    }
  }
}

const live = new Set<GuardedProcess>();
let hooksInstalled = false;

function stopAllNow(): void {
  for (const guarded of live) guarded.stopNow();
}

/*
 * On SIGINT/SIGTERM the servers are told to stop at once; when nobody else listens for the signal,
 * the listener removes itself and raises the signal again, so the process still ends as it would have.
 */
function installExitHooks(): void {
  if (hooksInstalled) return;
  hooksInstalled = true;
  process.once("exit", stopAllNow);
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    const onSignal = () => {
      stopAllNow();
      if (process.listenerCount(signal) === 1) {
        process.removeListener(signal, onSignal);
        process.kill(process.pid, signal);
      }
    };
    process.on(signal, onSignal);
  }
}
