import type { RequestFilter, RequestRecord } from "../../src/index.js";
import type { Backend } from "./backend.js";

/**
 * Runs the assertions on what the client sent (request counts, content types, bodies) where they can
 * be read: the in-memory server logs every request; a real kube-apiserver keeps no log we can read, so
 * there only the behavioural assertions around this call run.
 */
export function onRequestLog(
  backend: Backend,
  filter: RequestFilter,
  check: (requests: RequestRecord[]) => void,
): void {
  const api = backend.capabilities.inMemory;
  if (api) {
    check(api.requests(filter));
  } else if (backend.name === "memory") {
    throw new Error("the memory backend has no request log: startBackend() must expose it");
  }
}

/** Empties the in-memory request log; nothing to do on a real server. */
export function clearRequestLog(backend: Backend): void {
  backend.capabilities.inMemory?.clearRequests();
}
