/**
 * A watch stream read as it arrives: its lines, bounded in length, and each line as an event.
 *
 * @module
 */
import type { WatchEvent } from "./client-types.js";
import { ApiError, type ApiStatus, errorFromStatus } from "./errors.js";

/**
 * The lines of a watch stream (newline-delimited JSON), whatever the chunks' boundaries: a line split
 * across chunks is joined, blank lines are skipped, and a last line without its newline still counts.
 * A line longer than `maxLineBytes` throws `tooLong()` before more of it is buffered, so a server that
 * never ends a line costs at most the cap. Each chunk is searched once for its newlines, so a long
 * line costs linear time, not a rescan of everything buffered per chunk.
 */
export async function* watchLines(
  chunks: AsyncIterable<Buffer>,
  maxLineBytes: number,
  tooLong: () => Error,
): AsyncGenerator<string, void, undefined> {
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  for await (const chunk of chunks) {
    let start = 0;
    let newline = chunk.indexOf(0x0a, start);
    while (newline >= 0) {
      const piece = chunk.subarray(start, newline);
      if (pendingBytes + piece.length > maxLineBytes) throw tooLong();
      const line = pendingBytes === 0 ? piece : Buffer.concat([...pending, piece]);
      pending = [];
      pendingBytes = 0;
      start = newline + 1;
      newline = chunk.indexOf(0x0a, start);
      const text = line.toString("utf8");
      if (text.trim() === "") continue;
      yield text;
    }
    if (start < chunk.length) {
      const rest = chunk.subarray(start);
      pendingBytes += rest.length;
      if (pendingBytes > maxLineBytes) throw tooLong();
      pending.push(rest);
    }
  }
  const rest = Buffer.concat(pending).toString("utf8").trim();
  if (rest !== "") yield rest;
}

/**
 * One line of a watch stream as an event. An ERROR event becomes the typed error of its Status
 * ({@link GoneError} for an expired resourceVersion, so the informer relists); a line that is not
 * JSON, or names no known event type, is an {@link ApiError} that describes it without quoting it.
 */
export function parseWatchLine<T>(
  line: string,
  request: { method: string; path: string },
): WatchEvent<T> {
  let event: { type?: string; object?: unknown };
  try {
    event = JSON.parse(line) as { type?: string; object?: unknown };
  } catch (cause) {
    throw new ApiError(
      0,
      { message: `malformed watch event: a line of ${line.length} characters that is not JSON` },
      request,
      { cause },
    );
  }
  if (event.type === "ERROR") {
    const status = (event.object ?? {}) as ApiStatus;
    throw errorFromStatus(status.code ?? 500, status, request);
  }
  if (
    event.type !== "ADDED" &&
    event.type !== "MODIFIED" &&
    event.type !== "DELETED" &&
    event.type !== "BOOKMARK"
  ) {
    throw new ApiError(0, { message: "unknown watch event type" }, request);
  }
  return { type: event.type, object: event.object as T };
}
