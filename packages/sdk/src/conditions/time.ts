/**
 * Formats a time the way `metav1.Time` serialises it: UTC, RFC 3339, truncated to whole seconds.
 *
 * @example
 * ```ts
 * toConditionTime(new Date("2024-05-06T07:08:09.999Z")); // "2024-05-06T07:08:09Z"
 * ```
 */
export function toConditionTime(time: Date | string): string {
  const date = typeof time === "string" ? new Date(time) : time;
  const ms = date.getTime();
  if (Number.isNaN(ms)) {
    throw new Error(
      `invalid condition time ${JSON.stringify(String(time))}: expected an RFC 3339 timestamp such as "2024-01-02T03:04:05Z"`,
    );
  }
  const truncated = new Date(Math.floor(ms / 1000) * 1000);
  return truncated.toISOString().replace(/\.\d{3}Z$/, "Z");
}

/** Milliseconds since epoch for a condition time, 0 (Go's zero time sorts first) when absent/invalid. */
export function conditionTimeMillis(time: string | undefined): number {
  if (!time) return Number.NEGATIVE_INFINITY;
  const ms = Date.parse(time);
  return Number.isNaN(ms) ? Number.NEGATIVE_INFINITY : ms;
}
