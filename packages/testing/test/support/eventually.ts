// The one way the suites wait for state that other processes change: vitest's `vi.waitFor`, with the
// two shapes of check the suites write. Their timeouts are bounds on something that must happen, so
// they stretch with the machine's load (timeScale) instead of failing a busy CI run.
import { vi } from "vitest";
import { scaled } from "../../src/conformance/time-scale.js";

/**
 * Retries `check` until it stops throwing (an `expect` inside it passes) and returns its value; on
 * timeout, rethrows its last failure.
 */
export function eventually<T>(
  check: () => T | Promise<T>,
  timeoutMs = 10_000,
  intervalMs = 20,
): Promise<T> {
  return vi.waitFor(check, { timeout: scaled(timeoutMs), interval: intervalMs });
}

/**
 * Retries `check` until it returns a truthy value and returns it; on timeout, throws an error naming
 * `what` (and the last error `check` threw, if any).
 */
export function until<T>(
  check: () => T | Promise<T>,
  what: string,
  timeoutMs = 10_000,
  intervalMs = 20,
): Promise<NonNullable<T>> {
  const timeout = scaled(timeoutMs);
  return vi.waitFor(
    async () => {
      const value = await check();
      if (!value) throw new Error(`timed out after ${timeout} ms waiting for: ${what}`);
      return value as NonNullable<T>;
    },
    { timeout, interval: intervalMs },
  );
}
