/**
 * The manager's first request: one authenticated API discovery call, retried while the API server is
 * unreachable, that turns a wrong kubeconfig into an error naming its cause.
 *
 * @module
 */
import { KubeClient } from "./client.js";
import type { KubeconfigSource } from "./credentials.js";
import { ConnectionError, ForbiddenError, TimeoutError, UnauthorizedError } from "./errors.js";
import type { RuntimeLogger } from "./logging.js";

/** Where and how long {@link checkServerReachable} tries. */
export interface ReachabilityProbe {
  readonly kubeConfig: KubeconfigSource;
  /** The field manager of the probe's client (the manager's name). */
  readonly fieldManager: string;
  /** How long an unreachable API server is retried (`connectTimeoutMs`). */
  readonly timeoutMs: number;
  /** Ends the check without an error: the manager is stopping. */
  readonly signal: AbortSignal;
  readonly logger: RuntimeLogger;
}

/**
 * One authenticated discovery request before anything else, so that a wrong kubeconfig fails start()
 * within seconds with its real cause instead of as an informer that never syncs.
 */
export async function checkServerReachable(probe: ReachabilityProbe): Promise<void> {
  const { kubeConfig, timeoutMs, signal, logger } = probe;
  const server = kubeConfig.getCurrentCluster()?.server;
  if (!server) {
    throw new Error(
      `the kubeconfig has no current cluster (current-context "${kubeConfig.getCurrentContext()}"); pass --kubeconfig or fix its current-context`,
    );
  }
  const deadline = performance.now() + timeoutMs;
  const client = new KubeClient(kubeConfig, {
    fieldManager: probe.fieldManager,
    requestTimeoutMs: Math.min(5000, timeoutMs),
    maxThrottleRetries: 0,
  });
  for (let attempt = 0; ; attempt++) {
    try {
      await client.request({ method: "GET", path: "/api", signal });
      return;
    } catch (error) {
      if (signal.aborted) return;
      if (error instanceof UnauthorizedError) {
        throw new Error(
          `the API server at ${server} refused the kubeconfig's credentials (401 Unauthorized): the token or client certificate is wrong or expired; fix the user of the current context`,
          { cause: error },
        );
      }
      if (error instanceof ForbiddenError) {
        throw new Error(
          `the API server at ${server} forbids API discovery (403) to the kubeconfig's user: ${error.message}; bind it the system:discovery ClusterRole`,
          { cause: error },
        );
      }
      const reachable = !(error instanceof ConnectionError || error instanceof TimeoutError);
      const tls = /certificate|self[- ]signed|CERT_|TLS|SSL|altnames/i.test(
        error instanceof Error ? error.message : String(error),
      );
      if (reachable || tls || performance.now() >= deadline) {
        const why = error instanceof Error ? error.message : String(error);
        throw new Error(
          tls
            ? `cannot talk TLS to the API server at ${server}: ${why}; check the kubeconfig's certificate-authority and server address`
            : `cannot reach the API server at ${server} (tried for ${Math.round(timeoutMs / 1000)} s): ${why}`,
          { cause: error },
        );
      }
      logger.warn({ err: error, attempt }, "API server not reachable yet; retrying");
      await new Promise((resolve) => setTimeout(resolve, Math.min(1000, 100 * 2 ** attempt)));
    }
  }
}
