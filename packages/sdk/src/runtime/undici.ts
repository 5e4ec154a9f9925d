/**
 * The parts of undici the client sends through, required from their own modules. undici's index also
 * loads fetch, WebSocket, EventSource, the cache stores and the mock agents (about 110 files, some
 * 40 ms of a manager's start on a shared core) that the SDK never uses; the `Agent` and the `request`
 * API are a third of that. undici is CommonJS and declares no `exports` map, so its modules are
 * public paths; should a release move them, the index is loaded instead and nothing breaks.
 *
 * @module
 */
import { createRequire } from "node:module";
import type { Dispatcher } from "undici";

type Undici = typeof import("undici");
type RequestOptions = Dispatcher.RequestOptions;

interface UndiciCore {
  readonly Agent: Undici["Agent"];
  readonly request: (this: Dispatcher, options: RequestOptions) => Promise<Dispatcher.ResponseData>;
}

const requireFromHere = createRequire(import.meta.url);
let core: UndiciCore | undefined;
let index: Undici | undefined;

function undiciIndex(): Undici {
  index ??= requireFromHere("undici") as Undici;
  return index;
}

function undiciCore(): UndiciCore {
  if (core) return core;
  try {
    core = {
      Agent: requireFromHere("undici/lib/dispatcher/agent.js") as Undici["Agent"],
      request: requireFromHere("undici/lib/api/api-request.js") as UndiciCore["request"],
    };
  } catch {
    const { Agent, Dispatcher } = undiciIndex();
    // The index puts the request API on every dispatcher's prototype.
    const request = (Dispatcher.prototype as { request: UndiciCore["request"] }).request;
    core = { Agent, request };
  }
  return core;
}

/** undici's `Agent` class. */
export function undiciAgent(): Undici["Agent"] {
  return undiciCore().Agent;
}

/**
 * undici's `ProxyAgent` class, from the index: tunnelling through a proxy uses the `connect` API
 * that the index adds to every dispatcher. Only a kubeconfig with `proxy-url` pays for it.
 */
export function undiciProxyAgent(): Undici["ProxyAgent"] {
  return undiciIndex().ProxyAgent;
}

/**
 * Sends one request through `dispatcher`, as `undici.request(url, options)` does: `url` is parsed
 * into the origin and the path with its query.
 */
export function sendThrough(
  dispatcher: Dispatcher,
  url: string,
  options: Omit<RequestOptions, "origin" | "path">,
): Promise<Dispatcher.ResponseData> {
  const parsed = new URL(url);
  return undiciCore().request.call(dispatcher, {
    ...options,
    origin: parsed.origin,
    path: `${parsed.pathname}${parsed.search}`,
  });
}
