/**
 * The plain values the core handles: JSON objects, their deep copies, and timestamps as the server
 * writes them.
 *
 * @module
 */

/** Timestamps as the server writes them: RFC 3339, seconds precision. */
export function nowTimestamp(clock: () => Date): string {
  return `${clock().toISOString().slice(0, 19)}Z`;
}

export function clone<T>(v: T): T {
  return structuredClone(v);
}

export function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}
