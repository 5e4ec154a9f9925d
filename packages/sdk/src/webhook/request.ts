/**
 * The HTTP side of one webhook request, before its review is decoded: refusing it with a status,
 * its declared content type and length, and reading its body within a size limit.
 *
 * @module
 */
import type { IncomingMessage, ServerResponse } from "node:http";

/** A body that did not arrive whole, answered 400. */
class BadRequest extends Error {}
/** A body past the size limit, answered 413. */
export class BodyTooLarge extends Error {}

export function refuse(
  response: ServerResponse,
  status: number,
  message: string,
  headers: Record<string, string> = {},
): void {
  if (response.headersSent || response.destroyed) return;
  // The body (if any) is left unread: `connection: close` ends the exchange once this answer is out.
  response
    .writeHead(status, {
      "content-type": "text/plain; charset=utf-8",
      connection: "close",
      ...headers,
    })
    .end(`${message}\n`);
}

export function isJson(contentType: string | undefined): boolean {
  return contentType?.split(";")[0]?.trim().toLowerCase() === "application/json";
}

export function contentLength(request: IncomingMessage): number | undefined | "invalid" {
  const header = request.headers["content-length"];
  if (header === undefined) return undefined;
  return /^\d{1,15}$/.test(header) ? Number(header) : "invalid";
}

/** Reads at most `limit` bytes; one more ends the request (its connection closes) with {@link BodyTooLarge}. */
export function readBody(request: IncomingMessage, limit: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    request.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        request.pause();
        request.removeAllListeners("data");
        reject(new BodyTooLarge(`the body exceeds ${limit} bytes (maxBodyBytes)`));
        return;
      }
      chunks.push(chunk);
    });
    request.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    request.on("error", reject);
    // A client that goes away (or the request timeout) ends the wait, so its bytes in flight are freed.
    request.on("close", () => reject(new BadRequest("the client closed the connection mid-body")));
  });
}
