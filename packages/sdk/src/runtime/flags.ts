import { Command, CommanderError, InvalidArgumentError, Option } from "commander";
import type { LevelWithSilent } from "pino";
import { parseGoDuration } from "./duration.js";
import { loadKubeconfig } from "./kubeconfig-loader.js";
import type { ManagerOptions } from "./manager-options.js";

/** The standard flags of a provider binary, parsed. Durations are in milliseconds. */
export interface ManagerFlags {
  /** `--kubeconfig`: path; absent means `$KUBECONFIG`, in-cluster, then `~/.kube/config`. */
  kubeconfig?: string;
  /** `--namespace`: watch only this namespace. */
  namespace?: string;
  /** `--watch-filter`: only objects labelled `cluster.x-k8s.io/watch-filter=<value>`. */
  watchFilter?: string;
  /** `--leader-elect`. */
  leaderElect: boolean;
  /** `--leader-election-namespace`. */
  leaderElectionNamespace?: string;
  /** `--leader-election-id`: the Lease name. */
  leaderElectionId?: string;
  /** `--leader-elect-lease-duration` (default 15s). */
  leaseDurationMs: number;
  /** `--leader-elect-renew-deadline` (default 10s). */
  renewDeadlineMs: number;
  /** `--leader-elect-retry-period` (default 2s). */
  retryPeriodMs: number;
  /**
   * `--diagnostics-address` (default `:8443`, as CAPI providers; `0` disables): `/metrics` over HTTPS
   * behind TokenReview + SubjectAccessReview. `:port` binds every interface.
   */
  diagnosticsAddress: string;
  /** `--insecure-diagnostics`: serve diagnostics over plain HTTP without authentication. */
  insecureDiagnostics: boolean;
  /** `--health-probe-bind-address` (default `:9440`, as CAPI providers; plain HTTP). */
  healthProbeBindAddress: string;
  /** `--concurrency`: workers per controller (default 10). */
  concurrency: number;
  /** `--sync-period` (default 10m). */
  syncPeriodMs: number;
  /** `--graceful-shutdown-timeout` (default 30s). */
  gracefulShutdownTimeoutMs: number;
  /**
   * `--event-loop-block-threshold` (default 5s): `/healthz` fails after the event loop was blocked
   * this long; `0` turns that check off (the delay metrics stay).
   */
  eventLoopBlockThresholdMs: number;
  /** `--log-level` (default info). */
  logLevel: LevelWithSilent;
  /** `--log-format`: json or text (default json). */
  logFormat: "json" | "text";
  /** `--webhook-port`: the webhook server's port (default 9443). */
  webhookPort: number;
  /** `--webhook-cert-dir`: where `tls.crt` and `tls.key` are mounted (default `/tmp/k8s-webhook-server/serving-certs`). */
  webhookCertDir: string;
}

/**
 * A duration flag: Go's grammar ({@link parseGoDuration}) in milliseconds, and not negative (a
 * negative period or timeout means nothing to the manager).
 */
function durationFlag(text: string): number {
  let value: number;
  try {
    value = parseGoDuration(text);
  } catch (error) {
    throw new InvalidArgumentError((error as Error).message);
  }
  if (value < 0) {
    throw new InvalidArgumentError(`"${text}" is negative; a period or timeout must be 0 or more`);
  }
  return value;
}

function positiveInteger(text: string): number {
  const value = Number(text);
  if (!Number.isInteger(value) || value < 1) {
    throw new InvalidArgumentError(`"${text}" is not a positive whole number`);
  }
  return value;
}

function bindAddress(text: string): string {
  if (text !== "0" && !/^.*:\d+$/.test(text)) {
    throw new InvalidArgumentError(`"${text}" must be host:port, :port, or 0 to disable`);
  }
  return text;
}

/** Builds the commander program with every standard flag (add your own options to it before parsing). */
export function managerFlagsCommand(name = "manager"): Command {
  return new Command(name)
    .exitOverride()
    .configureOutput({ writeErr: () => {}, writeOut: () => {} })
    .option(
      "--kubeconfig <path>",
      "path to a kubeconfig; default $KUBECONFIG, in-cluster, ~/.kube/config",
    )
    .option("--namespace <namespace>", "watch and reconcile only this namespace")
    .option(
      "--watch-filter <value>",
      "reconcile only objects labelled cluster.x-k8s.io/watch-filter=<value>",
    )
    .option("--leader-elect", "enable leader election (one active replica)", false)
    .option("--leader-election-namespace <namespace>", "namespace of the leader election Lease")
    .option("--leader-election-id <name>", "name of the leader election Lease")
    .addOption(
      new Option("--leader-elect-lease-duration <duration>", "lease duration")
        .default(15_000, "15s")
        .argParser(durationFlag),
    )
    .addOption(
      new Option("--leader-elect-renew-deadline <duration>", "renew deadline")
        .default(10_000, "10s")
        .argParser(durationFlag),
    )
    .addOption(
      new Option("--leader-elect-retry-period <duration>", "retry period")
        .default(2_000, "2s")
        .argParser(durationFlag),
    )
    .addOption(
      new Option(
        "--diagnostics-address <address>",
        "diagnostics (/metrics) address, HTTPS with TokenReview/SubjectAccessReview authorization; :port binds every interface; 0 disables",
      )
        .default(":8443")
        .argParser(bindAddress),
    )
    .option(
      "--insecure-diagnostics",
      "serve diagnostics over plain HTTP without authentication",
      false,
    )
    .addOption(
      new Option(
        "--health-probe-bind-address <address>",
        "health probe address (plain HTTP); :port binds every interface; 0 disables",
      )
        .default(":9440")
        .argParser(bindAddress),
    )
    .addOption(
      new Option("--concurrency <n>", "reconciles in parallel per controller")
        .default(10)
        .argParser(positiveInteger),
    )
    .addOption(
      new Option("--sync-period <duration>", "how often every watched object is reconciled again")
        .default(600_000, "10m")
        .argParser(durationFlag),
    )
    .addOption(
      new Option(
        "--graceful-shutdown-timeout <duration>",
        "how long in-flight work may take on shutdown",
      )
        .default(30_000, "30s")
        .argParser(durationFlag),
    )
    .addOption(
      new Option(
        "--event-loop-block-threshold <duration>",
        "/healthz fails after the event loop was blocked this long; 0 turns the check off",
      )
        .default(5_000, "5s")
        .argParser(durationFlag),
    )
    .addOption(
      new Option("--log-level <level>", "log level")
        .choices(["trace", "debug", "info", "warn", "error", "fatal", "silent"])
        .default("info"),
    )
    .addOption(
      new Option("--log-format <format>", "log format").choices(["json", "text"]).default("json"),
    )
    .addOption(
      new Option("--webhook-port <port>", "port of the webhook server")
        .default(9443)
        .argParser(positiveInteger),
    )
    .option(
      "--webhook-cert-dir <path>",
      "folder holding the webhook server's tls.crt and tls.key",
      "/tmp/k8s-webhook-server/serving-certs",
    );
}

/**
 * Thrown by {@link parseManagerFlags} for `--help` (or `-h`): not a failure. Print {@link usage} to
 * standard output and exit 0, as every command-line tool does.
 *
 * @example
 * ```ts
 * try {
 *   parseManagerFlags(process.argv.slice(2));
 * } catch (error) {
 *   if (error instanceof HelpRequested) {
 *     console.log(error.usage);
 *     process.exit(0);
 *   }
 *   throw error;
 * }
 * ```
 */
export class HelpRequested extends Error {
  /** The usage text: every flag with its default. */
  readonly usage: string;

  /** Carries `usage` (also the message, for callers that only print messages). */
  constructor(usage: string) {
    super(usage);
    this.name = "HelpRequested";
    this.usage = usage;
  }
}

/**
 * Parses the standard flags. `argv` is the user arguments (`process.argv.slice(2)`). Throws an `Error`
 * whose message names the bad flag and what is expected; `--help` throws {@link HelpRequested} with the
 * usage text (print it and exit 0).
 *
 * @example
 * ```ts
 * const flags = parseManagerFlags(process.argv.slice(2));
 * const manager = new Manager({ ...managerOptionsFromFlags(flags), name: "foo-provider" });
 * ```
 */
export function parseManagerFlags(
  argv: readonly string[],
  command = managerFlagsCommand(),
): ManagerFlags {
  try {
    command.parse([...argv], { from: "user" });
  } catch (error) {
    if (error instanceof CommanderError) {
      if (error.code === "commander.helpDisplayed" || error.code === "commander.help") {
        throw new HelpRequested(command.helpInformation());
      }
      throw new Error(`${error.message.replace(/^error: /, "")} (see --help)`);
    }
    throw error;
  }
  const o = command.opts();
  if (o.leaderElect && !o.leaderElectionNamespace && !process.env.POD_NAMESPACE) {
    throw new Error(
      "--leader-elect needs --leader-election-namespace (or the POD_NAMESPACE environment variable)",
    );
  }
  const flags: ManagerFlags = {
    leaderElect: Boolean(o.leaderElect),
    leaseDurationMs: o.leaderElectLeaseDuration,
    renewDeadlineMs: o.leaderElectRenewDeadline,
    retryPeriodMs: o.leaderElectRetryPeriod,
    diagnosticsAddress: o.diagnosticsAddress,
    insecureDiagnostics: Boolean(o.insecureDiagnostics),
    healthProbeBindAddress: o.healthProbeBindAddress,
    concurrency: o.concurrency,
    syncPeriodMs: o.syncPeriod,
    gracefulShutdownTimeoutMs: o.gracefulShutdownTimeout,
    eventLoopBlockThresholdMs: o.eventLoopBlockThreshold,
    logLevel: o.logLevel,
    logFormat: o.logFormat,
    webhookPort: o.webhookPort,
    webhookCertDir: o.webhookCertDir,
  };
  if (o.kubeconfig) flags.kubeconfig = o.kubeconfig;
  if (o.namespace) flags.namespace = o.namespace;
  if (o.watchFilter) flags.watchFilter = o.watchFilter;
  const leaseNamespace = o.leaderElectionNamespace ?? process.env.POD_NAMESPACE;
  if (leaseNamespace) flags.leaderElectionNamespace = leaseNamespace;
  if (o.leaderElectionId) flags.leaderElectionId = o.leaderElectionId;
  return flags;
}

/**
 * Turns parsed flags into {@link ManagerOptions}, loading the kubeconfig with the SDK's loader
 * (`loadKubeconfig`: `--kubeconfig`, else `$KUBECONFIG`, in-cluster, `~/.kube/config`, as
 * controller-runtime).
 */
export function managerOptionsFromFlags(flags: ManagerFlags): ManagerOptions {
  const kubeConfig = loadKubeconfig({ path: flags.kubeconfig });
  const options: ManagerOptions = {
    kubeConfig,
    diagnosticsAddress: flags.diagnosticsAddress,
    insecureDiagnostics: flags.insecureDiagnostics,
    healthProbeBindAddress: flags.healthProbeBindAddress,
    maxConcurrentReconciles: flags.concurrency,
    syncPeriodMs: flags.syncPeriodMs,
    gracefulShutdownTimeoutMs: flags.gracefulShutdownTimeoutMs,
    eventLoopBlockThresholdMs: flags.eventLoopBlockThresholdMs,
    logger: { level: flags.logLevel, format: flags.logFormat },
    handleSignals: true,
  };
  if (flags.namespace) options.namespace = flags.namespace;
  if (flags.watchFilter) options.watchFilterValue = flags.watchFilter;
  if (flags.leaderElect) {
    options.leaderElection = {
      namespace: flags.leaderElectionNamespace ?? "default",
      leaseDurationMs: flags.leaseDurationMs,
      renewDeadlineMs: flags.renewDeadlineMs,
      retryPeriodMs: flags.retryPeriodMs,
    };
    if (flags.leaderElectionId) options.leaderElection.name = flags.leaderElectionId;
  }
  return options;
}
