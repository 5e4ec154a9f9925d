/**
 * The controller manager: one process's controllers and runnables over shared informers, with leader
 * election, health probes and metrics, and a graceful shutdown, as controller-runtime's manager.
 *
 * @module
 */
import type { AddressInfo } from "node:net";
import { checkServerReachable } from "./api-reachability.js";
import { InformerCache, type SharedInformerDefaults } from "./cache.js";
import { KubeClient } from "./client.js";
import { type Clock, systemClock } from "./clock.js";
import type { Controller, ControllerHost } from "./controller.js";
import { ControllerBuilder } from "./controller-builder.js";
import { resolveDiagnosticsLimits } from "./diagnostics.js";
import { LeaderElectionLostError } from "./errors.js";
import { EventRecorder } from "./events.js";
import type { HealthCheck } from "./health-checks.js";
import { LeaderElector } from "./leaderelection.js";
import { EventLoopMonitor } from "./liveness.js";
import { createLogger, type RuntimeLogger } from "./logging.js";
import { type ManagerOptions, parseBindAddress } from "./manager-options.js";
import { ManagerServers } from "./manager-servers.js";
import { RuntimeMetrics } from "./metrics.js";
import type { Runnable } from "./runnable.js";

function isLogger(value: unknown): value is RuntimeLogger {
  return typeof (value as RuntimeLogger | undefined)?.child === "function";
}

/**
 * Runs controllers: one shared informer per kind, leader election on a Lease (only the leader
 * reconciles), `/healthz` + `/readyz` (ready once caches synced) and `/metrics` (controller-runtime
 * names), an Event recorder, structured logs, and graceful shutdown: stop intake, let in-flight
 * reconciles finish within the deadline, release the lease, close everything so the process can exit
 * on its own.
 *
 * @example
 * ```ts
 * const manager = new Manager({
 *   kubeConfig, name: "foo-provider", handleSignals: true,
 *   leaderElection: { namespace: "capi-system" },
 *   diagnosticsAddress: ":8443", healthProbeBindAddress: ":9440",
 * });
 * manager.controller("foomachinepool").for(FooMachinePoolResource).complete(reconcile);
 * await manager.start(); // resolves after SIGTERM once everything has stopped
 * ```
 */
export class Manager implements ControllerHost {
  /** Client whose writes feed the cache's read-your-own-writes. */
  readonly client: KubeClient;
  /** Shared informers and cached reads. */
  readonly cache: InformerCache;
  /** Prometheus metrics. */
  readonly metrics: RuntimeMetrics;
  /** Root logger. */
  readonly logger: RuntimeLogger;
  /**
   * What controllers of this manager start from: the builders' concurrency, and the `--watch-filter`
   * value that CAPI-aware controllers apply (see {@link ManagerOptions.watchFilterValue}).
   */
  readonly controllerDefaults: { maxConcurrentReconciles: number; watchFilterValue?: string };
  /** The manager name. */
  readonly name: string;
  /** The time source (see {@link ManagerOptions.clock}). */
  readonly clock: Clock;
  /** Event-loop delay and blocks (see {@link ManagerOptions.eventLoopBlockThresholdMs}). */
  readonly eventLoop: EventLoopMonitor;
  private readonly options: ManagerOptions;
  private readonly controllers: Controller[] = [];
  private readonly runnables: Runnable[] = [];
  private readonly startedRunnables = new Set<Runnable>();
  private readonly recorders = new Map<string, EventRecorder>();
  private readonly healthChecks = new Map<string, HealthCheck>();
  private readonly readyChecks = new Map<string, HealthCheck>();
  private readonly servers: ManagerServers;
  private elector: LeaderElector | undefined;
  private readonly stopSignal = new AbortController();
  private stopping: Promise<void> | undefined;
  private running: Promise<void> | undefined;
  private readonly electedPromise: Promise<boolean>;
  private resolveElected: (leading: boolean) => void = () => {};
  private controllersStarted = false;
  private serversStarted = false;
  private signalHandler: (() => void) | undefined;
  private stopError: Error | undefined;
  private leadershipLost = false;

  /** Creates a manager; validates the options (bind addresses, leader election timings). */
  constructor(options: ManagerOptions) {
    this.options = options;
    this.name = options.name ?? "capi-ts";
    this.clock = options.clock ?? systemClock;
    this.electedPromise = new Promise((resolve) => {
      this.resolveElected = resolve;
    });
    this.logger = isLogger(options.logger) ? options.logger : createLogger(options.logger ?? {});
    this.metrics = new RuntimeMetrics({ processMetrics: options.processMetrics ?? false });
    this.client = new KubeClient(options.kubeConfig, {
      ...options.client,
      fieldManager: this.name,
    });
    const informerDefaults: SharedInformerDefaults = {
      ...options.informer,
      resyncPeriodMs: options.syncPeriodMs ?? 10 * 60 * 60 * 1000,
      metrics: this.metrics.informerMetrics(),
      ...(options.clock ? { clock: options.clock } : {}),
    };
    const cacheOptions: ConstructorParameters<typeof InformerCache>[0] = {
      client: this.client,
      informerDefaults,
      logger: this.logger,
    };
    if (options.namespace) cacheOptions.namespace = options.namespace;
    if (options.readYourWritesTimeoutMs !== undefined)
      cacheOptions.readYourWritesTimeoutMs = options.readYourWritesTimeoutMs;
    this.cache = new InformerCache(cacheOptions);
    this.servers = new ManagerServers({
      options,
      client: this.client,
      logger: this.logger,
      metrics: this.metrics,
      healthChecks: this.healthChecks,
      readyChecks: this.readyChecks,
    });
    this.controllerDefaults = { maxConcurrentReconciles: options.maxConcurrentReconciles ?? 1 };
    if (options.watchFilterValue)
      this.controllerDefaults.watchFilterValue = options.watchFilterValue;
    // Validate early so a bad flag fails at construction, not at start.
    parseBindAddress(options.diagnosticsAddress ?? "0", "diagnostics address");
    resolveDiagnosticsLimits(options.diagnosticsLimits);
    parseBindAddress(options.healthProbeBindAddress ?? "0", "health probe bind address");
    if (options.leaderElection) {
      const election = options.leaderElection;
      if (!election.namespace) {
        throw new TypeError(
          "leader election needs a namespace for its Lease (leaderElection.namespace / --leader-election-namespace)",
        );
      }
      const renewDeadlineMs = election.renewDeadlineMs ?? 10_000;
      const electionClient = new KubeClient(options.kubeConfig, {
        fieldManager: this.name,
        requestTimeoutMs: Math.max(1000, Math.floor(renewDeadlineMs / 2)),
        maxThrottleRetries: 0,
      });
      this.elector = new LeaderElector({
        client: electionClient,
        namespace: election.namespace,
        name: election.name ?? `${this.name}-leader-election`,
        ...(election.identity ? { identity: election.identity } : {}),
        ...(election.leaseDurationMs !== undefined
          ? { leaseDurationMs: election.leaseDurationMs }
          : {}),
        renewDeadlineMs,
        ...(election.retryPeriodMs !== undefined ? { retryPeriodMs: election.retryPeriodMs } : {}),
        logger: this.logger,
        onStatus: (leading) =>
          this.metrics.leaderStatus.set(
            { name: election.name ?? `${this.name}-leader-election` },
            leading ? 1 : 0,
          ),
      });
    }
    this.eventLoop = new EventLoopMonitor({
      ...(options.eventLoopBlockThresholdMs !== undefined
        ? { blockThresholdMs: options.eventLoopBlockThresholdMs }
        : {}),
      logger: this.logger,
      metrics: this.metrics,
    });
    this.addHealthCheck("ping", () => undefined);
    if (this.eventLoop.blockThresholdMs > 0) {
      this.addHealthCheck("event-loop", () => this.eventLoop.healthCheck());
    }
    this.addReadyCheck("informers-synced", () =>
      this.cache.hasSynced() ? undefined : "informer caches have not synced yet",
    );
  }

  /**
   * Starts building a controller named `name` (lower-case; also its metrics label).
   *
   * @example
   * ```ts
   * manager.controller("pools").for(PoolResource).owns(SecretResource).complete(reconcile);
   * ```
   */
  controller(name: string): ControllerBuilder {
    if (this.controllers.some((controller) => controller.name === name)) {
      throw new Error(`a controller named "${name}" is already registered; names must be unique`);
    }
    return new ControllerBuilder(this, name);
  }

  /** Registers a controller built elsewhere; it starts when the manager leads. */
  register(controller: Controller): void {
    this.controllers.push(controller);
    if (this.controllersStarted) controller.start();
  }

  /**
   * Adds a {@link Runnable}: one that does not need leader election (a webhook server) starts with the
   * manager's servers on every replica; one that does starts with the controllers once this replica
   * leads. Added after start, it starts right away if its moment has passed.
   *
   * @example
   * ```ts
   * manager.add(new WebhookServer({ certDir: flags.webhookCertDir }).register(fooWebhooks));
   * ```
   */
  add(runnable: Runnable): void {
    if (this.runnables.some((added) => added.name === runnable.name)) {
      throw new Error(`a runnable named "${runnable.name}" is already added; names must be unique`);
    }
    this.runnables.push(runnable);
    const due = runnable.needLeaderElection ? this.controllersStarted : this.serversStarted;
    if (due) {
      void this.startRunnable(runnable).catch((error: unknown) => void this.stop(error as Error));
    }
  }

  /** The Event recorder of a component (cached per name). */
  recorderFor(component: string): EventRecorder {
    let recorder = this.recorders.get(component);
    if (!recorder) {
      recorder = new EventRecorder(this.client, {
        component,
        logger: this.logger,
        clock: this.clock,
      });
      this.recorders.set(component, recorder);
    }
    return recorder;
  }

  /** Adds a `/healthz` check. */
  addHealthCheck(name: string, check: HealthCheck): void {
    this.healthChecks.set(name, check);
  }

  /** Adds a `/readyz` check. */
  addReadyCheck(name: string, check: HealthCheck): void {
    this.readyChecks.set(name, check);
  }

  /**
   * True while this manager may reconcile (leading, or leader election off). With leader election it
   * is judged on this process's own clock at the moment of the call (see `LeaderElector.isLeader`), so
   * reconciles can fence every side effect on it.
   */
  isLeader(): boolean {
    return this.elector ? this.elector.isLeader() : this.controllersStarted;
  }

  /** This manager's leader-election identity, if leader election is on. */
  get identity(): string | undefined {
    return this.elector?.identity;
  }

  /** Address of the health probe server once started. */
  healthAddress(): AddressInfo | undefined {
    return this.servers.healthAddress;
  }

  /** Address of the diagnostics (metrics) server once started. */
  diagnosticsAddress(): AddressInfo | undefined {
    return this.servers.diagnosticsAddress;
  }

  /** Resolves `true` once controllers run (leadership acquired), `false` if stopped first. */
  elected(): Promise<boolean> {
    return this.electedPromise;
  }

  /**
   * Starts servers, caches, leader election and controllers. Resolves when the manager has stopped
   * (after {@link Manager.stop} or a signal); rejects if the caches could not sync or leadership was
   * lost, after shutting down.
   */
  start(): Promise<void> {
    if (this.running) return this.running;
    this.running = this.run();
    return this.running;
  }

  /** Stops gracefully; resolves once everything is closed. Safe to call more than once. */
  stop(reason?: Error): Promise<void> {
    if (!this.stopping) {
      if (reason) this.stopError = reason;
      this.stopSignal.abort(reason ?? new Error("manager stopped"));
      this.stopping = this.shutdown();
    }
    return this.stopping;
  }

  private async run(): Promise<void> {
    this.eventLoop.start();
    if (this.options.handleSignals) {
      this.signalHandler = () => {
        this.logger.info("signal received; shutting down gracefully");
        void this.stop();
      };
      process.once("SIGTERM", this.signalHandler);
      process.once("SIGINT", this.signalHandler);
    }
    try {
      await this.servers.start();
      this.serversStarted = true;
      await Promise.all(
        this.runnables.filter((r) => !r.needLeaderElection).map((r) => this.startRunnable(r)),
      );
      await checkServerReachable({
        kubeConfig: this.options.kubeConfig,
        fieldManager: this.name,
        timeoutMs: this.options.connectTimeoutMs ?? 10_000,
        signal: this.stopSignal.signal,
        logger: this.logger,
      });
      this.cache.start();
      const syncTimeout = this.options.cacheSyncTimeoutMs ?? 120_000;
      await Promise.race([
        this.cache.waitForSync(syncTimeout),
        new Promise<void>((resolve) =>
          this.stopSignal.signal.addEventListener("abort", () => resolve()),
        ),
      ]);
      if (!this.stopSignal.signal.aborted) {
        this.logger.info({ informers: this.cache.allInformers().length }, "caches synced");
        if (this.elector) {
          const elector = this.elector;
          const leading = await elector.acquire(this.stopSignal.signal);
          if (leading && !this.stopSignal.signal.aborted) {
            void elector.lost.then(() => this.onLeadershipLost());
            this.startControllers();
          }
        } else {
          this.startControllers();
        }
      }
    } catch (error) {
      this.logger.error({ err: error }, "manager failed to start");
      await this.stop(error as Error);
    }
    await new Promise<void>((resolve) => {
      if (this.stopSignal.signal.aborted) resolve();
      else this.stopSignal.signal.addEventListener("abort", () => resolve(), { once: true });
    });
    await this.stopping;
    if (this.stopError) throw this.stopError;
  }

  private startControllers(): void {
    this.controllersStarted = true;
    this.resolveElected(true);
    for (const controller of this.controllers) controller.start();
    for (const runnable of this.runnables.filter((r) => r.needLeaderElection)) {
      void this.startRunnable(runnable).catch((error: unknown) => void this.stop(error as Error));
    }
  }

  private async startRunnable(runnable: Runnable): Promise<void> {
    if (this.stopSignal.signal.aborted) return;
    this.startedRunnables.add(runnable);
    try {
      await runnable.start();
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      throw new Error(`${runnable.name}: ${message}`, { cause: error });
    }
  }

  /**
   * Lost leadership (as controller-runtime: no graceful shutdown): every reconcile is aborted at once,
   * so the next fence in each throws before another cloud call, and the manager stops without
   * touching the Lease, which belongs to someone else by now.
   */
  private onLeadershipLost(): void {
    if (this.leadershipLost) return;
    this.leadershipLost = true;
    const error = new LeaderElectionLostError();
    this.logger.error("leader election lost: aborting every reconcile now");
    for (const controller of this.controllers) controller.abort(error);
    this.stopError ??= error;
    void this.stop(error).then(() => {
      if (this.options.handleSignals) process.exit(1);
    });
  }

  private async shutdown(): Promise<void> {
    this.resolveElected(false);
    const deadline = this.leadershipLost ? 0 : (this.options.gracefulShutdownTimeoutMs ?? 30_000);
    this.logger.info(
      { deadlineMs: deadline },
      "stopping: no new work, finishing in-flight reconciles",
    );
    const results = await Promise.all(
      this.controllers.map((controller) => controller.stop(deadline)),
    );
    if (results.some((finished) => !finished)) {
      this.logger.warn("some reconciles did not finish within the graceful shutdown deadline");
    }
    // Aborted reconciles stop at their next fence, but a cloud call already sent runs to its end.
    // The lease is handed over only once none runs: a successor must not act beside one.
    const drainMs = this.leadershipLost
      ? 0
      : (this.options.leaderElection?.leaseDurationMs ?? 15_000);
    const drained = (
      await Promise.all(this.controllers.map((controller) => controller.drained(drainMs)))
    ).every(Boolean);
    await Promise.all(
      [...this.startedRunnables].map((runnable) =>
        runnable.stop().catch((error: unknown) => {
          this.logger.warn({ err: error, runnable: runnable.name }, "runnable failed to stop");
        }),
      ),
    );
    await Promise.all([...this.recorders.values()].map((recorder) => recorder.flush()));
    if (this.elector) {
      const release =
        drained && !this.leadershipLost && (this.options.leaderElection?.releaseOnCancel ?? true);
      if (!drained) {
        this.logger.warn(
          "reconciles still run after being aborted; leaving the lease to expire instead of releasing it",
        );
      }
      if (release) await this.elector.release();
      else await this.elector.stop();
    }
    await this.cache.stop();
    await this.servers.close();
    if (this.signalHandler) {
      process.removeListener("SIGTERM", this.signalHandler);
      process.removeListener("SIGINT", this.signalHandler);
    }
    this.eventLoop.stop();
    this.logger.info("stopped");
  }
}
