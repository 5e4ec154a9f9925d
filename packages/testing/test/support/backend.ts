import type { KubeConfig } from "@kubernetes/client-node";
import { type ApiServer, capiCrdFile, startApiServer, startControlPlane } from "../../src/index.js";

/**
 * The backend this run uses: `real` (a kube-apiserver + etcd from `./dev controlplane` or
 * KUBEBUILDER_ASSETS) when the vitest project sets CAPI_TS_BACKEND=real, else the in-memory server.
 * The `testing@real` project (`vitest.config.real.ts`) sets it; its tests are skipped when the binaries are missing.
 */
export const backendName: "memory" | "real" =
  process.env.CAPI_TS_BACKEND === "real" ? "real" : "memory";

/** True on the real control plane: for `it.skipIf(onReal)` on tests of in-memory-only features. */
export const onReal = backendName === "real";

/** What a test suite needs from an API server, whichever implementation provides it. */
export interface Backend {
  /** Which implementation this is. */
  name: "memory" | "real";
  kubeConfig: KubeConfig;
  installCRDs(sources: (string | Record<string, unknown>)[]): Promise<void>;
  stop(): Promise<void>;
  /** Features only the in-memory server has; tests that use them skip on a real server. */
  capabilities: {
    /** Fault injection, request log and restart. */
    inMemory?: ApiServer;
  };
}

/** CAPI CRD file of the release the SDK targets (shipped in packages/testing/crds/capi). */
export function capiCrd(file: string): string {
  return capiCrdFile(file);
}

/**
 * Starts the backend the suite runs against: the in-memory server by default. A later backend
 * (a real kube-apiserver from a kubeconfig) plugs in here without touching the tests.
 */
export async function startBackend(
  options: { bookmarkIntervalMs?: number; watchWindow?: number; tls?: boolean } = {},
): Promise<Backend> {
  if (backendName === "real") {
    const real = await startControlPlane();
    return {
      name: "real",
      kubeConfig: real.kubeConfig,
      installCRDs: (sources) => real.installCRDs(sources),
      stop: () => real.stop(),
      capabilities: {},
    };
  }
  const api = await startApiServer(options);
  return {
    name: "memory",
    kubeConfig: api.kubeConfig,
    installCRDs: async (sources) => {
      await api.installCRDs(sources);
    },
    stop: () => api.stop(),
    capabilities: { inMemory: api },
  };
}
