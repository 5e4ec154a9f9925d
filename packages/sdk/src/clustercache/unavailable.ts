/**
 * Why a workload cluster cannot be reached, as an error a controller can publish as is: a reason of
 * three, and a message in the SDK's own words that never quotes the Secret or the server.
 *
 * @module
 */
import {
  ApiError,
  ConnectionError,
  ResponseTooLargeError,
  TimeoutError,
} from "../runtime/errors.js";
import type { ObjectKey } from "../runtime/resource.js";

/** Why a workload cluster cannot be reached (a condition reason a controller can publish as is). */
export type WorkloadClusterUnavailableReason =
  /** The `<cluster>-kubeconfig` Secret does not exist (yet: the control plane writes it). */
  | "KubeconfigSecretNotFound"
  /**
   * The Secret exists but has no `value` key, is not a kubeconfig with a current cluster, or asks for
   * something capi-ts refuses (an exec plugin, an auth provider, a file, a proxy, a server that is
   * not `https://`, skipped TLS verification; see the security guide).
   */
  | "KubeconfigSecretInvalid"
  /** The kubeconfig is fine but the API server did not answer, refused it, or its cache did not sync. */
  | "WorkloadClusterUnreachable";

/**
 * The workload cluster of a Cluster cannot be reached. `reason` names why; the message says which
 * Secret or server and what to do, and never carries the Secret's content. `retryAfterMs` is when the
 * {@link ClusterCache} tries again (earlier if the Secret changes).
 */
export class WorkloadClusterUnavailableError extends Error {
  override readonly name = "WorkloadClusterUnavailableError";

  /**
   * @param cluster - the Cluster
   * @param reason - why
   * @param message - what is wrong and what to do (no secret content)
   * @param retryAfterMs - when the next connection attempt is due
   */
  constructor(
    readonly cluster: ObjectKey,
    readonly reason: WorkloadClusterUnavailableReason,
    message: string,
    readonly retryAfterMs: number,
  ) {
    super(message);
  }
}

/**
 * What went wrong talking to a workload cluster, in words of our own: an HTTP code and a well-known
 * reason, a timeout, a connection error's code. Never the server's message or body, which whoever
 * wrote the Secret controls, nor a cause's text (a TLS error quotes the server's certificate).
 */
export function describeWorkloadFailure(error: unknown, timeoutMs: number): string {
  if (error instanceof ResponseTooLargeError)
    return "its answer was larger than the client accepts";
  if (error instanceof TimeoutError && error.code === 0) {
    return `no complete answer within ${timeoutMs} ms`;
  }
  if (error instanceof ConnectionError) {
    const code = errorCode(error.cause) ?? errorCode((error.cause as { cause?: unknown })?.cause);
    return code ? `connection failed (${code})` : "connection failed";
  }
  if (error instanceof ApiError) {
    const reason = error.status.reason;
    return `HTTP ${error.code}${reason && KNOWN_REASONS.has(reason) ? ` (${reason})` : ""}`;
  }
  return "request failed";
}

/** A Node error code such as `ECONNREFUSED` or `DEPTH_ZERO_SELF_SIGNED_CERT` (ours to name). */
function errorCode(cause: unknown): string | undefined {
  const code = (cause as { code?: unknown })?.code;
  return typeof code === "string" && /^[A-Z][A-Z0-9_]{1,47}$/.test(code) ? code : undefined;
}

/** `metav1.StatusReason` values: safe to repeat, whoever sent them. */
const KNOWN_REASONS = new Set([
  "Unauthorized",
  "Forbidden",
  "NotFound",
  "AlreadyExists",
  "Conflict",
  "Gone",
  "Invalid",
  "ServerTimeout",
  "Timeout",
  "TooManyRequests",
  "BadRequest",
  "MethodNotAllowed",
  "NotAcceptable",
  "RequestEntityTooLarge",
  "UnsupportedMediaType",
  "InternalError",
  "Expired",
  "ServiceUnavailable",
]);
