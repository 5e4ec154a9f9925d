import { randomUUID } from "node:crypto";
import type { KubernetesObject } from "@kubernetes/client-node";
import type { InformerCache } from "./cache.js";
import type { KubeClient } from "./client.js";
import type { Clock } from "./clock.js";
import {
  FencedError,
  ReconcileTimeoutError,
  TerminalError,
  TooManyRequestsError,
} from "./errors.js";
import type { EventRecorder } from "./events.js";
import type { InformerHandler } from "./informer-types.js";
import { type EventLoopMonitor, eventLoopTurnIfDue } from "./liveness.js";
import type { RuntimeLogger } from "./logging.js";
import type { ControllerMetrics, RuntimeMetrics } from "./metrics.js";
import { evaluatePredicate, type Predicate } from "./predicates.js";
import { QueuePriority, WorkQueue } from "./queue.js";
import type { RateLimiter } from "./ratelimiter.js";
import { defaultControllerRateLimiter } from "./ratelimiter.js";
import {
  isNamespaced,
  objectKeyString,
  parseObjectKey,
  type ResourceDescriptor,
} from "./resource.js";
import type { ReconcileRequest } from "./source.js";

/** What a reconcile asks for next. Returning nothing means "done until something changes". */
export interface ReconcileResult {
  /** Reconcile again after this many milliseconds (resets the error backoff). */
  requeueAfter?: number;
  /** Reconcile again soon, with the rate limiter's backoff. */
  requeue?: boolean;
}

/** Everything a reconcile needs besides the request. */
export interface ReconcileContext {
  /** Controller name. */
  controller: string;
  /** Unique id of this reconcile (also in every log line). */
  reconcileID: string;
  /** Logger with controller, kind, namespace, name and reconcileID bound. */
  log: RuntimeLogger;
  /**
   * Aborted the moment this reconcile must stop: leadership lost, the graceful shutdown deadline
   * passed, or the reconcile timed out. Pass it to every cloud SDK call and long operation.
   */
  signal: AbortSignal;
  /**
   * Call right before every side effect (a cloud mutation, a write): throws {@link FencedError} once
   * this process may no longer act (the signal aborted, or leadership lost or no longer provable, e.g.
   * after the process was frozen past its lease). Cheap and synchronous.
   */
  fence(): void;
  /** Direct client: writes, and reads that must bypass the cache. */
  client: KubeClient;
  /** Cached reads with read-your-own-writes. */
  cache: InformerCache;
  /** Records Kubernetes Events against objects. */
  recorder: EventRecorder;
}

/** The reconcile function of a controller. Throw to retry with backoff, `TerminalError` to stop. */
export type Reconciler = (
  request: ReconcileRequest,
  context: ReconcileContext,
  // biome-ignore lint/suspicious/noConfusingVoidType: lets `async () => {}` reconcilers type-check.
) => Promise<ReconcileResult | undefined | void>;

/** Maps an event's object to the primary objects to reconcile (e.g. MachinePool → its InfraMachinePool). */
export type MapFunc<T extends KubernetesObject> = (
  obj: T,
) => ReconcileRequest[] | Promise<ReconcileRequest[]>;

/** Options of a controller. */
export interface ControllerOptions {
  /** Workers reconciling different keys in parallel. Default 1 (the manager's `--concurrency`). */
  maxConcurrentReconciles?: number;
  /** Abort and retry a reconcile that runs longer than this, ms. Default: no limit. */
  reconcileTimeoutMs?: number;
  /** Retry delays; default per-item 5 ms → 1000 s exponential plus an overall 10 qps / 100 bucket. */
  rateLimiter?: RateLimiter;
  /** Time source of the queue and rate limiter. Default: the manager's clock. */
  clock?: Clock;
}

/** What a controller needs from its host (the {@link Manager}). */
export interface ControllerHost {
  /** Client for writes. */
  readonly client: KubeClient;
  /** Shared informer cache. */
  readonly cache: InformerCache;
  /** Root logger. */
  readonly logger: RuntimeLogger;
  /** Metrics. */
  readonly metrics: RuntimeMetrics;
  /** Defaults from the manager's flags. */
  readonly controllerDefaults: { maxConcurrentReconciles: number };
  /** The time source of the host (queues, rate limiters), when it has one. */
  readonly clock?: Clock;
  /** The event recorder for a component. */
  recorderFor(component: string): EventRecorder;
  /** Whether this process may reconcile now (leading); absent means always. */
  isLeader?(): boolean;
  /** Registers a built controller so the manager starts and stops it. */
  register(controller: Controller): void;
  /** Told of every reconcile, so that a blocked event loop can be blamed on the one that ran. */
  readonly eventLoop?: Pick<EventLoopMonitor, "track">;
}

/**
 * A controller: a work queue of primary-object keys fed by informers, and workers that run the
 * reconciler with controller-runtime's semantics (one reconcile per key at a time, backoff on error,
 * `requeueAfter`, `TerminalError`, reconcile timeout). Build one with {@link ControllerBuilder}.
 */
export class Controller {
  /** Controller name (metrics label, log field). */
  readonly name: string;
  /** The primary kind. */
  readonly resource: ResourceDescriptor;
  /** The work queue (exposed for tests and metrics). */
  readonly queue: WorkQueue;
  private readonly host: ControllerHost;
  private readonly reconciler: Reconciler;
  private readonly concurrency: number;
  private readonly timeoutMs: number | undefined;
  private readonly log: RuntimeLogger;
  private readonly recorder: EventRecorder;
  private readonly inFlight = new Map<string, AbortController>();
  private readonly halted = new AbortController();
  private workers: Promise<void>[] = [];
  private started = false;
  private metricsTimer: NodeJS.Timeout | undefined;
  private readonly metrics: ControllerMetrics;

  /** Creates a stopped controller; prefer the builder. */
  constructor(
    host: ControllerHost,
    name: string,
    resource: ResourceDescriptor,
    reconciler: Reconciler,
    options: ControllerOptions = {},
  ) {
    this.host = host;
    this.name = name;
    this.resource = resource;
    this.reconciler = reconciler;
    this.concurrency =
      options.maxConcurrentReconciles ?? host.controllerDefaults.maxConcurrentReconciles;
    if (!Number.isInteger(this.concurrency) || this.concurrency < 1) {
      throw new RangeError(
        `controller ${name}: maxConcurrentReconciles must be a positive integer, got ${this.concurrency}`,
      );
    }
    this.timeoutMs = options.reconcileTimeoutMs;
    const clock = options.clock ?? host.clock;
    const queueOptions: ConstructorParameters<typeof WorkQueue>[0] = {
      rateLimiter: options.rateLimiter ?? defaultControllerRateLimiter(clock ? { clock } : {}),
      metrics: host.metrics.queueMetrics(name),
    };
    if (clock) queueOptions.clock = clock;
    this.queue = new WorkQueue(queueOptions);
    this.log = host.logger.child({ controller: name, kind: resource.kind });
    this.recorder = host.recorderFor(name);
    host.metrics.maxConcurrentReconciles.set({ controller: name }, this.concurrency);
    this.metrics = host.metrics.controllerMetrics(name);
    this.metrics.moveActiveWorkers(0);
  }

  /** Adds a request to the queue. */
  enqueue(request: ReconcileRequest, priority: number = QueuePriority.Normal): void {
    this.queue.add(objectKeyString(request), { priority });
  }

  /** Starts the workers. */
  start(): void {
    if (this.started) return;
    this.started = true;
    this.log.info({ workers: this.concurrency }, "starting workers");
    for (let i = 0; i < this.concurrency; i++) this.workers.push(this.worker());
    this.metricsTimer = setInterval(() => this.queue.reportUnfinished(), 1000);
    this.metricsTimer.unref();
  }

  /**
   * Stops intake and lets in-flight reconciles finish. After `deadlineMs` their signals are aborted;
   * resolves `true` if everything finished in time.
   */
  async stop(deadlineMs: number): Promise<boolean> {
    this.queue.shutdown();
    if (this.metricsTimer) clearInterval(this.metricsTimer);
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), deadlineMs);
    });
    const finished = await Promise.race([Promise.all(this.workers).then(() => true), deadline]);
    if (timer) clearTimeout(timer);
    if (!finished) {
      this.log.warn(
        { inFlight: [...this.inFlight.keys()] },
        "graceful shutdown deadline passed; aborting in-flight reconciles",
      );
      this.abort(new FencedError("the graceful shutdown deadline passed"));
    }
    return finished;
  }

  /**
   * Stops at once: no new reconcile starts and every in-flight one sees its signal aborted with
   * `reason` (its next `fence()` throws). For lost leadership, where waiting is not allowed.
   */
  abort(reason: Error): void {
    this.queue.shutdown();
    if (this.metricsTimer) clearInterval(this.metricsTimer);
    if (!this.halted.signal.aborted) this.halted.abort(reason);
    for (const controller of this.inFlight.values()) controller.abort(reason);
  }

  /** Resolves `true` once no reconcile runs any more, `false` if some still run after `timeoutMs`. */
  async drained(timeoutMs: number): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), timeoutMs);
    });
    const done = await Promise.race([Promise.all(this.workers).then(() => true), timeout]);
    if (timer) clearTimeout(timer);
    return done;
  }

  /** Handler for the primary kind: enqueue the object itself. */
  forHandler<T extends KubernetesObject>(predicates: Predicate<T>[]): InformerHandler<T> {
    return this.handler(predicates, (obj) => [keyOf(obj)]);
  }

  /** Handler for owned objects: enqueue their controller owner if it is of the primary kind. */
  ownsHandler<T extends KubernetesObject>(predicates: Predicate<T>[]): InformerHandler<T> {
    const { group, kind } = this.resource;
    return this.handler(predicates, (obj) => {
      const refs = obj.metadata?.ownerReferences ?? [];
      const requests: ReconcileRequest[] = [];
      for (const ref of refs) {
        if (!ref.controller || ref.kind !== kind) continue;
        const refGroup = ref.apiVersion.includes("/") ? ref.apiVersion.split("/")[0] : "";
        if (refGroup !== group) continue;
        const namespace = obj.metadata?.namespace;
        requests.push(
          namespace && isNamespaced(this.resource)
            ? { namespace, name: ref.name }
            : { name: ref.name },
        );
      }
      return requests;
    });
  }

  /** Handler for mapped watches. */
  mapHandler<T extends KubernetesObject>(
    map: MapFunc<T>,
    predicates: Predicate<T>[],
  ): InformerHandler<T> {
    return this.handler(predicates, map);
  }

  private handler<T extends KubernetesObject>(
    predicates: Predicate<T>[],
    map: MapFunc<T>,
  ): InformerHandler<T> {
    const passes = (event: "create" | "update" | "delete", obj: T, oldObj?: T) =>
      predicates.every((predicate) => evaluatePredicate(predicate, event, obj, oldObj));
    const mapSafely = (obj: T): ReconcileRequest[] | Promise<ReconcileRequest[]> => {
      try {
        return map(obj);
      } catch (error) {
        this.log.error({ err: error }, "map function threw; event dropped");
        return [];
      }
    };
    // Every object of one event is mapped first and the keys deduplicated before any is enqueued: an
    // idle worker takes a key the moment it is added, so adding the same key twice in one event
    // would run a second reconcile for nothing.
    const enqueueMapped = (objects: T[], priority: number) => {
      const mapped = objects.map(mapSafely);
      const enqueueAll = (lists: ReconcileRequest[][]) => {
        const keys = new Set<string>();
        for (const list of lists) for (const request of list) keys.add(objectKeyString(request));
        for (const key of keys) this.queue.add(key, { priority });
      };
      if (mapped.every(Array.isArray)) {
        enqueueAll(mapped as ReconcileRequest[][]);
        return;
      }
      Promise.all(mapped).then(enqueueAll, (error: unknown) =>
        this.log.error({ err: error }, "map function failed; event dropped"),
      );
    };
    return {
      onAdd: (obj, meta) => {
        if (passes("create", obj))
          enqueueMapped([obj], meta.initial ? QueuePriority.Low : QueuePriority.Normal);
      },
      onUpdate: (oldObj, newObj, meta) => {
        if (!passes("update", newObj, oldObj)) return;
        const priority = meta.initial ? QueuePriority.Low : QueuePriority.Normal;
        // The old object may map elsewhere (an owner or label changed): reconcile that target too.
        enqueueMapped(oldObj !== newObj ? [newObj, oldObj] : [newObj], priority);
      },
      onDelete: (obj) => {
        if (passes("delete", obj)) enqueueMapped([obj], QueuePriority.Normal);
      },
    };
  }

  private async worker(): Promise<void> {
    for (;;) {
      const key = await this.queue.get();
      if (key === undefined) return;
      try {
        await this.process(key);
      } finally {
        this.queue.done(key);
      }
      // A reconcile that reads only the cache resolves on microtasks, which run to the end before any
      // timer or socket: without a turn here a backlog of ready keys would starve lease renewals,
      // watch events, probes and signals for as long as it lasts.
      const turn = eventLoopTurnIfDue();
      if (turn) await turn;
    }
  }

  private async process(key: string): Promise<void> {
    const request = parseObjectKey(key);
    // The ID and the bound logger are made on first use: a reconcile that finds nothing to do and
    // logs nothing (the no-op resync of every object) pays for neither, which was ~6% of it.
    let reconcileID: string | undefined;
    let log: RuntimeLogger | undefined;
    const idOf = () => {
      reconcileID ??= randomUUID();
      return reconcileID;
    };
    const logOf = () => {
      log ??= this.log.child({
        ...(request.namespace ? { namespace: request.namespace } : {}),
        name: request.name,
        reconcileID: idOf(),
      });
      return log;
    };
    const abort = new AbortController();
    if (this.halted.signal.aborted) abort.abort(this.halted.signal.reason);
    this.inFlight.set(key, abort);
    const metrics = this.metrics;
    metrics.moveActiveWorkers(1);
    const untrack = this.host.eventLoop?.track(this.name, key);
    const started = performance.now();
    let timedOut = false;
    let timer: NodeJS.Timeout | undefined;
    try {
      const context: ReconcileContext = {
        controller: this.name,
        get reconcileID() {
          return idOf();
        },
        get log() {
          return logOf();
        },
        signal: abort.signal,
        fence: () => {
          if (!abort.signal.aborted && this.host.isLeader && !this.host.isLeader()) {
            abort.abort(new FencedError("this process no longer holds the leader lease"));
          }
          if (abort.signal.aborted) {
            const reason: unknown = abort.signal.reason;
            throw reason instanceof FencedError
              ? reason
              : new FencedError(reason instanceof Error ? reason.message : String(reason), {
                  cause: reason,
                });
          }
        },
        client: this.host.client,
        cache: this.host.cache,
        recorder: this.recorder,
      };
      const running = Promise.resolve().then(() => this.reconciler(request, context));
      if (this.timeoutMs !== undefined) {
        const timeoutMs = this.timeoutMs;
        timer = setTimeout(() => {
          timedOut = true;
          abort.abort(new ReconcileTimeoutError(key, timeoutMs));
        }, timeoutMs);
      }
      // The key stays held until the reconcile really returns, even after a timeout: two reconciles
      // of one object must never overlap. The aborted signal tells it to stop.
      const result = await running;
      if (timedOut) throw new ReconcileTimeoutError(key, this.timeoutMs ?? 0);
      this.onSuccess(key, result ?? undefined, logOf);
    } catch (error) {
      this.onError(key, error, timedOut, logOf());
    } finally {
      if (timer) clearTimeout(timer);
      untrack?.();
      this.inFlight.delete(key);
      metrics.moveActiveWorkers(-1);
      metrics.reconcileTime((performance.now() - started) / 1000);
    }
  }

  private onSuccess(
    key: string,
    result: ReconcileResult | undefined,
    logOf: () => RuntimeLogger,
  ): void {
    // A logger handed in by the caller may not be pino's: without the check, log as asked.
    const debug = typeof this.log.isLevelEnabled !== "function" || this.log.isLevelEnabled("debug");
    if (result?.requeueAfter !== undefined && result.requeueAfter > 0) {
      this.queue.forget(key);
      this.queue.add(key, { after: result.requeueAfter });
      this.metrics.reconciled("requeue_after");
      if (debug)
        logOf().debug({ requeueAfterMs: result.requeueAfter }, "reconciled; requeue scheduled");
      return;
    }
    if (result?.requeue) {
      this.queue.add(key, { rateLimited: true });
      this.metrics.reconciled("requeue");
      if (debug) logOf().debug("reconciled; requeue requested");
      return;
    }
    this.queue.forget(key);
    this.metrics.reconciled("success");
    if (debug) logOf().debug("reconciled");
  }

  private onError(key: string, error: unknown, timedOut: boolean, log: RuntimeLogger): void {
    const metrics = this.metrics;
    metrics.reconciled("error");
    const terminal = error instanceof TerminalError;
    const deadline = !terminal && (timedOut || error instanceof ReconcileTimeoutError);
    metrics.errored(terminal ? "terminal" : deadline ? "timeout" : "error");
    if (error instanceof FencedError && !timedOut) {
      this.queue.forget(key);
      log.warn({ err: error }, "reconcile stopped by its fence; not retrying in this process");
      return;
    }
    if (terminal) {
      this.queue.forget(key);
      log.error({ err: error }, "reconcile failed with a terminal error; not retrying");
      return;
    }
    const retryAfterMs =
      error instanceof TooManyRequestsError && error.retryAfterSeconds !== undefined
        ? error.retryAfterSeconds * 1000
        : 0;
    this.queue.add(key, { rateLimited: true, after: retryAfterMs });
    log.error(
      { err: error, retries: this.queue.numRequeues(key) },
      "reconcile failed; retrying with backoff",
    );
  }
}

function keyOf(obj: KubernetesObject): ReconcileRequest {
  const name = obj.metadata?.name ?? "";
  const namespace = obj.metadata?.namespace;
  return namespace ? { namespace, name } : { name };
}
