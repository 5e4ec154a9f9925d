import { createRequire } from "node:module";
import { Writable } from "node:stream";
import type { DestinationStream, LevelWithSilent, Logger } from "pino";
import { redactError, redactValue } from "./redact.js";

type Pino = typeof import("pino")["pino"];
let loadedPino: Pino | undefined;

/**
 * pino, loaded on the first logger rather than with the module: a process that imports the runtime
 * pays for it only once it creates a manager (pino is CommonJS, so a synchronous require works).
 */
function loadPino(): Pino {
  loadedPino ??= (createRequire(import.meta.url)("pino") as { pino: Pino }).pino;
  return loadedPino;
}

/** A pino logger, as used throughout the runtime. */
export type RuntimeLogger = Logger;

/** Options of {@link createLogger}. */
export interface LoggerOptions {
  /** Minimum level: `trace`, `debug`, `info`, `warn`, `error`, `fatal` or `silent`. Default `info`. */
  level?: LevelWithSilent;
  /** `json` (one object per line, the default) or `text` (`time level msg key=value…`, for humans). */
  format?: "json" | "text";
  /** Where lines go; default stdout. */
  destination?: DestinationStream | NodeJS.WritableStream;
  /** Fields added to every line, e.g. `{ provider: "aws" }`. */
  base?: Record<string, unknown>;
}

const LEVEL_NAMES: Record<number, string> = {
  10: "TRACE",
  20: "DEBUG",
  30: "INFO",
  40: "WARN",
  50: "ERROR",
  60: "FATAL",
};

function formatValue(value: unknown): string {
  if (typeof value === "string") return /[\s"=]/.test(value) ? JSON.stringify(value) : value;
  return JSON.stringify(value);
}

/** Turns pino's JSON lines into `time LEVEL msg key=value` lines. */
function textStream(target: NodeJS.WritableStream): Writable {
  return new Writable({
    write(chunk: Buffer, _encoding, callback) {
      for (const line of chunk.toString("utf8").split("\n")) {
        if (line === "") continue;
        try {
          const { time, level, msg, ...fields } = JSON.parse(line) as Record<string, unknown>;
          const pairs = Object.entries(fields)
            .map(([key, value]) => `${key}=${formatValue(value)}`)
            .join(" ");
          const stamp = typeof time === "number" ? new Date(time).toISOString() : String(time);
          target.write(
            `${stamp} ${LEVEL_NAMES[level as number] ?? level} ${String(msg ?? "")}${pairs ? ` ${pairs}` : ""}\n`,
          );
        } catch {
          target.write(`${line}\n`);
        }
      }
      callback();
    },
  });
}

/**
 * Creates the structured logger of a manager. Controllers derive children carrying `controller`,
 * `kind`, `namespace`, `name` and `reconcileID`. Every line goes through the SDK's redaction layer
 * (`redactValue`, `redactError`): registered secrets, credential-shaped text and credential-named
 * fields are replaced by `[REDACTED]`, and errors are logged without the requests they carry.
 *
 * @example
 * ```ts
 * const log = createLogger({ level: "debug", format: "text" });
 * log.child({ controller: "awsmachinepool" }).info({ namespace: "ns", name: "pool" }, "reconciling");
 * ```
 */
export function createLogger(options: LoggerOptions = {}): RuntimeLogger {
  const level = options.level ?? "info";
  const known = ["trace", "debug", "info", "warn", "error", "fatal", "silent"];
  if (!known.includes(level)) {
    throw new RangeError(`log level "${level}" is not one of ${known.join(", ")}`);
  }
  const format = options.format ?? "json";
  if (format !== "json" && format !== "text") {
    throw new RangeError(`log format "${String(format)}" is not one of json, text`);
  }
  const target = options.destination ?? process.stdout;
  const destination =
    format === "text" ? textStream(target as NodeJS.WritableStream) : (target as DestinationStream);
  const pinoOptions: Parameters<Pino>[0] = {
    level,
    serializers: { err: redactError, error: redactError },
    hooks: {
      logMethod(args, method) {
        const safe = args.map((arg) => redactValue(arg)) as typeof args;
        method.apply(this, safe);
      },
    },
  };
  if (options.base) pinoOptions.base = options.base;
  else pinoOptions.base = null;
  return loadPino()(pinoOptions, destination) as unknown as RuntimeLogger;
}

/** A logger that drops everything (the default when none is given). */
export function silentLogger(): RuntimeLogger {
  return loadPino()({ level: "silent" });
}
