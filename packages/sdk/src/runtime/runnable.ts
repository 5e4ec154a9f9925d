/**
 * Something the {@link Manager} runs next to its controllers (controller-runtime's `Runnable`): a
 * webhook server, a cache warmer, a periodic job.
 *
 * @example
 * ```ts
 * manager.add({
 *   name: "heartbeat",
 *   needLeaderElection: true, // only while this replica leads
 *   async start() { timer = setInterval(beat, 10_000); },
 *   async stop() { clearInterval(timer); },
 * });
 * ```
 */
export interface Runnable {
  /** Names the runnable in logs and errors. */
  readonly name: string;
  /**
   * `true`: started once this replica leads (like controllers). `false` (default): started with the
   * manager's servers, before caches sync, on every replica — as webhook servers must be.
   */
  readonly needLeaderElection?: boolean;
  /**
   * Starts the runnable and resolves once it is up (e.g. listening). A rejection stops the manager,
   * whose `start()` then rejects with that error.
   */
  start(): Promise<void>;
  /** Stops it; called once on shutdown, within the graceful shutdown deadline. */
  stop(): Promise<void>;
}
