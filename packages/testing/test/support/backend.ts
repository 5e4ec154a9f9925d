import { join, resolve } from "node:path";
import type { KubeConfig } from "@kubernetes/client-node";
import { type ApiServer, startApiServer } from "../../src/index.js";

/** What a test suite needs from an API server, whichever implementation provides it. */
export interface Backend {
  kubeConfig: KubeConfig;
  installCRDs(sources: (string | Record<string, unknown>)[]): Promise<void>;
  stop(): Promise<void>;
  /** Features only the in-memory server has; tests that use them skip on a real server. */
  capabilities: {
    /** Fault injection, request log and restart. */
    inMemory?: ApiServer;
  };
}

/** The folder of shared reference material (CRDs). */
export function sharedDir(): string {
  return process.env.CAPI_TS_SHARED ?? resolve(import.meta.dirname, "../../../../../shared");
}

/** CAPI CRD file from the shared folder. */
export function capiCrd(file: string): string {
  return join(sharedDir(), "crds", "capi", file);
}

/**
 * Starts the backend the suite runs against: the in-memory server by default. A later backend
 * (a real kube-apiserver from a kubeconfig) plugs in here without touching the tests.
 */
export async function startBackend(
  options: { bookmarkIntervalMs?: number; watchWindow?: number } = {},
): Promise<Backend> {
  const api = await startApiServer(options);
  return {
    kubeConfig: api.kubeConfig,
    installCRDs: async (sources) => {
      await api.installCRDs(sources);
    },
    stop: () => api.stop(),
    capabilities: { inMemory: api },
  };
}
