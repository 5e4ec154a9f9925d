/**
 * What an informer asks of the API server and how it waits between requests: the options of its
 * LIST and of each watch, a watch's timeouts, the backoff after a failure, and timers on its clock.
 *
 * @module
 */
import type { KubernetesObject } from "@kubernetes/client-node";
import type { KubeClient } from "./client.js";
import type { Clock } from "./clock.js";
import type { BackoffOptions, InformerOptions } from "./informer-types.js";

/** The options of the informer's LIST: its page size and its scope. */
export function listRequestOptions<T extends KubernetesObject>(
  options: InformerOptions<T>,
): Parameters<KubeClient["listAll"]>[1] {
  const listOptions: Parameters<KubeClient["listAll"]>[1] = {
    limit: options.pageSize ?? 500,
  };
  if (options.namespace) listOptions.namespace = options.namespace;
  if (options.labelSelector) listOptions.labelSelector = options.labelSelector;
  if (options.fieldSelector) listOptions.fieldSelector = options.fieldSelector;
  return listOptions;
}

/**
 * A watch's server-side timeout (5 to 10 minutes at random unless set, so that informers do not all
 * restart at once) and how long it may stay quiet before the watchdog restarts it.
 */
export function watchTimeouts<T extends KubernetesObject>(
  options: InformerOptions<T>,
): {
  timeoutSeconds: number;
  staleMs: number;
} {
  const timeoutSeconds = options.watchTimeoutSeconds ?? Math.floor(300 + Math.random() * 300);
  const staleMs = options.staleWatchTimeoutMs ?? (timeoutSeconds + 60) * 1000;
  return { timeoutSeconds, staleMs };
}

/** What one watch request starts from. */
export interface WatchRequest {
  readonly timeoutSeconds: number;
  readonly signal: AbortSignal;
  /** The resourceVersion the cache is at, if any. */
  readonly lastResourceVersion: string | undefined;
  /** A WatchList, whose initial events fill the cache. */
  readonly initial: boolean;
}

/** The options of one watch: bookmarks, its timeout and signal, where it starts, its scope. */
export function watchRequestOptions<T extends KubernetesObject>(
  options: InformerOptions<T>,
  request: WatchRequest,
): Parameters<KubeClient["watch"]>[1] {
  const { initial } = request;
  const watchOptions: Parameters<KubeClient["watch"]>[1] = {
    allowWatchBookmarks: true,
    timeoutSeconds: request.timeoutSeconds,
    signal: request.signal,
  };
  // A WatchList reads the current state (no resourceVersion: a consistent read), as after a 410
  // the last one is too old to start from.
  if (request.lastResourceVersion !== undefined && !initial) {
    watchOptions.resourceVersion = request.lastResourceVersion;
  }
  if (initial) {
    watchOptions.sendInitialEvents = true;
    watchOptions.resourceVersionMatch = "NotOlderThan";
  }
  if (options.namespace) watchOptions.namespace = options.namespace;
  if (options.labelSelector) watchOptions.labelSelector = options.labelSelector;
  if (options.fieldSelector) watchOptions.fieldSelector = options.fieldSelector;
  return watchOptions;
}

/** The wait before the next list or watch after `failures` failures in a row: capped, jittered. */
export function backoffDelay(backoff: BackoffOptions | undefined, failures: number): number {
  const initial = backoff?.initialMs ?? 800;
  const max = backoff?.maxMs ?? 30_000;
  const jitter = backoff?.jitter ?? 0.2;
  const base = Math.min(max, initial * 2 ** Math.max(0, failures - 1));
  return base * (1 + jitter * (Math.random() * 2 - 1));
}

/** Waits the backoff after `failures` failures in a row on the informer's clock, or until `signal` aborts. */
export function backoffSleep<T extends KubernetesObject>(
  options: InformerOptions<T>,
  failures: number,
  signal: AbortSignal,
): Promise<void> {
  return abortableSleep(options.clock, backoffDelay(options.backoff, failures), signal);
}

/**
 * Runs `callback` after `ms` on `clock`; returns its cancel function. Without a clock, a Node timer
 * that keeps the process alive only when `keepAlive` says so.
 */
export function clockTimer(
  clock: Clock | undefined,
  ms: number,
  callback: () => void,
  keepAlive: boolean,
): () => void {
  if (clock) {
    const handle = clock.setTimer(callback, ms);
    return () => clock.clearTimer(handle);
  }
  const timer = setTimeout(callback, ms);
  if (!keepAlive) timer.unref();
  return () => clearTimeout(timer);
}

/** Waits `ms` on `clock` (a timer that keeps the process alive), or until `signal` aborts. */
export function abortableSleep(
  clock: Clock | undefined,
  ms: number,
  signal: AbortSignal,
): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const cancel = clockTimer(clock, ms, done, true);
    function done() {
      cancel();
      signal.removeEventListener("abort", done);
      resolve();
    }
    signal.addEventListener("abort", done, { once: true });
  });
}
