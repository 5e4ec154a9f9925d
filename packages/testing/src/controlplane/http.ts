import { request as httpsRequest } from "node:https";

/** The answer to a raw request: status code and the parsed JSON body (or the text when not JSON). */
export interface RawResponse {
  status: number;
  body: unknown;
}

/** How to reach the kube-apiserver without a client: its URL, the CA to trust and a bearer token. */
export interface RawTarget {
  url: string;
  ca: string;
  token: string;
}

/*
 * A deliberately small JSON-over-HTTPS helper for the launcher's own calls (readiness, /version, CRDs):
 * client-node's typed models rename `x-kubernetes-*` schema keys when they serialise plain objects, so
 * CRDs read from YAML must go to the server as they are.
 */
export function rawRequest(
  target: RawTarget,
  method: string,
  path: string,
  body?: unknown,
  timeoutMs = 10_000,
): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const req = httpsRequest(
      new URL(path, target.url),
      {
        method,
        ca: target.ca,
        headers: {
          authorization: `Bearer ${target.token}`,
          accept: "application/json",
          ...(payload === undefined
            ? {}
            : { "content-type": "application/json", "content-length": Buffer.byteLength(payload) }),
        },
        timeout: timeoutMs,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8");
          let parsed: unknown = text;
          try {
            parsed = JSON.parse(text);
          } catch {
            // Not JSON (for example the plain "ok" of /readyz): keep the text.
          }
          resolve({ status: res.statusCode ?? 0, body: parsed });
        });
        res.on("error", reject);
      },
    );
    req.on("timeout", () =>
      req.destroy(new Error(`${method} ${path} timed out after ${timeoutMs} ms`)),
    );
    req.on("error", reject);
    req.end(payload);
  });
}

/**
 * Creates the object at the collection `path`, or replaces it (PUT at the stored resourceVersion) when
 * one of that name exists: installing CRDs and webhook configurations twice is not an error.
 */
export async function createOrReplace(
  target: RawTarget,
  path: string,
  body: { metadata: { name: string; resourceVersion?: string } & Record<string, unknown> },
): Promise<RawResponse> {
  const { resourceVersion: _ignored, ...metadata } = body.metadata;
  const fresh = { ...body, metadata };
  let response = await rawRequest(target, "POST", path, fresh);
  // 409 on create: it exists, so replace it at the version just read. 409 on replace: someone wrote
  // it in between (CAPI's manager migrates and annotates its CRDs as it starts), so read again.
  for (let attempt = 0; response.status === 409 && attempt < 10; attempt++) {
    if (attempt > 0) await new Promise((resolve) => setTimeout(resolve, 50 * attempt));
    const current = await rawRequest(target, "GET", `${path}/${metadata.name}`);
    const stored = (current.body as { metadata?: { resourceVersion?: string } }).metadata;
    response = await rawRequest(target, "PUT", `${path}/${metadata.name}`, {
      ...fresh,
      metadata: { ...metadata, resourceVersion: stored?.resourceVersion },
    });
  }
  return response;
}
