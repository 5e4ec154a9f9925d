/**
 * The options of a {@link Manager}, and how its bind addresses are read.
 *
 * @module
 */
import type { SharedInformerDefaults } from "./cache.js";
import type { KubeClientOptions } from "./client-types.js";
import type { Clock } from "./clock.js";
import type { KubeconfigSource } from "./credentials.js";
import type { DiagnosticsLimits } from "./diagnostics.js";
import type { LoggerOptions, RuntimeLogger } from "./logging.js";

/** Leader election settings of a manager. */
export interface ManagerLeaderElectionOptions {
  /** Namespace of the Lease. Required when leader election is on. */
  namespace: string;
  /** Lease name. Default `<manager name>-leader-election`. */
  name?: string;
  /** Identity; default `<hostname>_<random>`. */
  identity?: string;
  /** Default 15,000 ms. */
  leaseDurationMs?: number;
  /** Default 10,000 ms. */
  renewDeadlineMs?: number;
  /** Default 2,000 ms. */
  retryPeriodMs?: number;
  /** Clear the holder on shutdown so a standby takes over at once. Default true. */
  releaseOnCancel?: boolean;
}

/** Options of {@link Manager}. */
export interface ManagerOptions {
  /**
   * Cluster access: the SDK's `Kubeconfig` (`loadKubeconfig()`, what `managerOptionsFromFlags` loads)
   * or `@kubernetes/client-node`'s `KubeConfig`.
   */
  kubeConfig: KubeconfigSource;
  /** Manager name: field manager of writes, Event source, Lease name prefix. Default `capi-ts`. */
  name?: string;
  /** Watch and reconcile only this namespace (`--namespace`). */
  namespace?: string;
  /**
   * The value of CAPI's `--watch-filter`, kept for the controllers: the runtime does not interpret
   * it. CAPI-aware controllers (the provider kit) filter their watches with
   * `hasWatchFilterLabel(manager.controllerDefaults.watchFilterValue)` of `@capi-ts/sdk/contract`, as
   * each of CAPI's controllers applies `ResourceHasFilterLabel` itself.
   */
  watchFilterValue?: string;
  /** Leader election; off when absent. */
  leaderElection?: ManagerLeaderElectionOptions;
  /**
   * `host:port` of the diagnostics endpoint (`/metrics`); `"0"` or absent disables it. Port 0 picks a
   * free port. `:port` binds every interface (as Go's `net.Listen`); write `127.0.0.1:port` to keep it
   * on the loopback. Served over HTTPS, and only to a bearer token that a `TokenReview` accepts and
   * whose user a `SubjectAccessReview` allows `get` on the non-resource URL `/metrics` (as CAPI
   * providers' `--diagnostics-address`); the manager's own identity needs `create` on `tokenreviews`
   * and `subjectaccessreviews`. See {@link ManagerOptions.insecureDiagnostics}.
   */
  diagnosticsAddress?: string;
  /** Serve diagnostics over plain HTTP without authentication (`--insecure-diagnostics`). Default false. */
  insecureDiagnostics?: boolean;
  /**
   * Folder with the diagnostics endpoint's `tls.crt` and `tls.key`. Absent: a self-signed certificate
   * made in memory at start, as controller-runtime's metrics server does.
   */
  diagnosticsCertDir?: string;
  /**
   * Bounds of the diagnostics endpoint: its caches, the failed authentications a source may turn into
   * `TokenReview`s before it is answered 429, and its connections (defaults:
   * `DEFAULT_DIAGNOSTICS_LIMITS`). The connection bounds apply to the health probe endpoint too.
   */
  diagnosticsLimits?: DiagnosticsLimits;
  /**
   * `host:port` for `/healthz` and `/readyz` (always plain HTTP and unauthenticated: the kubelet
   * probes it); `"0"` or absent disables it. `:port` binds every interface.
   */
  healthProbeBindAddress?: string;
  /** How long shutdown waits for in-flight reconciles, ms. Default 30,000. */
  gracefulShutdownTimeoutMs?: number;
  /**
   * Default workers per controller. Default 1, as controller-runtime's manager; the `--concurrency`
   * flag defaults to 10, as CAPI providers' flags do, so a binary built with `parseManagerFlags`
   * gets 10.
   */
  maxConcurrentReconciles?: number;
  /**
   * Re-announce every cached object this often, ms. Default 10 h, as controller-runtime's manager;
   * the `--sync-period` flag defaults to 10 min, as CAPI providers' flags do.
   */
  syncPeriodMs?: number;
  /** How long start() waits for caches to sync, ms. Default 120,000. */
  cacheSyncTimeoutMs?: number;
  /**
   * How long start() keeps trying to reach the API server before it fails with the cause (connection
   * refused, no answer, DNS), ms. Refused credentials (401), a forbidden discovery (403) and TLS
   * failures (wrong CA, expired certificate) fail at once. Default 10,000.
   */
  connectTimeoutMs?: number;
  /** Read-your-own-writes wait bound, ms. Default 10,000. */
  readYourWritesTimeoutMs?: number;
  /** Informer tuning (watch timeout, watchdog, backoff); mostly for tests. */
  informer?: Omit<SharedInformerDefaults, "resyncPeriodMs" | "metrics">;
  /** Client tuning. */
  client?: Omit<KubeClientOptions, "fieldManager">;
  /** Logger, or options to create one. */
  logger?: RuntimeLogger | LoggerOptions;
  /**
   * The manager owns the process: stop gracefully on SIGTERM and SIGINT (a second signal during
   * shutdown ends the process at once, Node's default), and end the process with exit code 1 once
   * leadership is lost and every reconcile was stopped, as controller-runtime binaries do. Default
   * false (then `start()` rejects with `LeaderElectionLostError`); `managerOptionsFromFlags` turns it on.
   */
  handleSignals?: boolean;
  /**
   * Export the process and Node.js metrics too (CPU, memory, file descriptors, event-loop lag, heap
   * spaces, GC durations: prom-client's default metrics, by the same names). Default false.
   */
  processMetrics?: boolean;
  /**
   * `/healthz` fails once the event loop was blocked this long (no timer, socket or signal served),
   * ms, and keeps failing for as long again (at least 10 s), so that a process whose loop keeps
   * blocking gets restarted by its liveness probe. Every block of a second or more is logged with the
   * controller and key that ran. Default 5,000: a reconcile must never hold the loop that long, and a
   * full GC of a large heap stays well below it. 0 turns the check off (the delay metric
   * `capi_ts_event_loop_delay_seconds` and the log stay).
   */
  eventLoopBlockThresholdMs?: number;
  /**
   * The time source of everything the manager runs: work queues and rate limiters, informers
   * (resync, backoff, watchdog, read-your-own-writes waits), Event timestamps, the patch helper's
   * retries in the provider kit, and the kit's own timing (grace periods, tolerance, rollout
   * retries). Default: the system clock. Tests pass a `ManualClock` to drive time by hand.
   */
  clock?: Clock;
}

export function parseBindAddress(
  value: string,
  flag: string,
): { host: string; port: number } | undefined {
  if (value === "0" || value === "") return undefined;
  const match = /^(.*):(\d+)$/.exec(value);
  if (!match) {
    throw new TypeError(`${flag} "${value}" must be host:port, :port, or 0 to disable`);
  }
  const port = Number(match[2]);
  if (port > 65535) throw new TypeError(`${flag} "${value}": port ${port} is out of range`);
  return { host: match[1] || "0.0.0.0", port };
}
