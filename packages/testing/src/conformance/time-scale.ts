import { availableParallelism, loadavg } from "node:os";

/**
 * How much longer than on an idle machine a wall-clock bound of the suite may take: the explicit
 * `CAPI_TS_TEST_TIME_SCALE` (a number ≥ 1, for a machine known to be slow) times the machine's
 * current load (one-minute load average per core, at least 1, at most 4). A bound the suite cannot
 * derive from behaviour alone (a converge deadline, a scenario's vitest timeout) is multiplied by it,
 * so a busy CI machine waits longer instead of failing; a bound on something that must not happen
 * (a steady-state window) is never scaled, since a longer window is only stricter.
 *
 * @example
 * ```ts
 * const deadline = Date.now() + 20_000 * timeScale(); // 20 s idle, up to 80 s under load
 * ```
 */
export function timeScale(): number {
  const raw = process.env.CAPI_TS_TEST_TIME_SCALE;
  let configured = 1;
  if (raw !== undefined && raw !== "") {
    configured = Number(raw);
    if (!Number.isFinite(configured) || configured < 1) {
      throw new Error(
        `CAPI_TS_TEST_TIME_SCALE=${JSON.stringify(raw)} is not a number ≥ 1; unset it to scale by the machine's load alone`,
      );
    }
  }
  const perCore = (loadavg()[0] ?? 0) / availableParallelism();
  return configured * Math.min(4, Math.max(1, perCore));
}

/**
 * `ms` scaled by {@link timeScale}, rounded to a whole millisecond.
 *
 * @example
 * ```ts
 * test("converges", { timeout: scaled(60_000) }, run);
 * ```
 */
export function scaled(ms: number): number {
  return Math.round(ms * timeScale());
}
