// Whether the `testing@real` project can run, computed without printing or throwing: the vitest
// config reads it to pick its tests, the project's global setup (which runs only when the project's
// tests do) says it out loud and fails when the real backend was asked for and is missing.
import { existsSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

/** What the environment allows for the real-backend suites. */
export interface RealBackendStatus {
  /** Set when CAPI_TS_BACKENDS leaves `real` out: the project has no tests at all. */
  disabled?: string;
  /** Why the real suites are skipped (no binaries, and not asked for explicitly); undefined when they run. */
  skipReason?: string;
  /** Why the run must fail: CAPI_TS_BACKENDS names `real` and the binaries are missing. */
  missingButRequired?: string;
}

function realBinaryDir(env: NodeJS.ProcessEnv): string {
  return (
    env.KUBEBUILDER_ASSETS ||
    fileURLToPath(new URL("../../../../tools/controlplane/bin", import.meta.url))
  );
}

/**
 * Whether the real control plane runs kube-controller-manager (garbage collector, namespace
 * controller): `./dev controlplane` builds it, an envtest folder has none.
 */
export function realHasControllers(env: NodeJS.ProcessEnv = process.env): boolean {
  return existsSync(join(realBinaryDir(env), "kube-controller-manager"));
}

/** Reads CAPI_TS_BACKENDS and looks for kube-apiserver and etcd (KUBEBUILDER_ASSETS or `./dev controlplane`). */
export function realBackendStatus(env: NodeJS.ProcessEnv = process.env): RealBackendStatus {
  const binaryDir = realBinaryDir(env);
  const requested = env.CAPI_TS_BACKENDS?.split(",").map((name) => name.trim());
  if (requested !== undefined && !requested.includes("real"))
    return { disabled: `CAPI_TS_BACKENDS=${env.CAPI_TS_BACKENDS} does not include "real"` };
  if (["kube-apiserver", "etcd"].every((name) => existsSync(join(binaryDir, name)))) return {};
  const why = `no kube-apiserver and etcd in ${binaryDir}; run \`./dev controlplane\` (needs Go) or set KUBEBUILDER_ASSETS`;
  if (requested !== undefined)
    return { missingButRequired: `CAPI_TS_BACKENDS asks for "real", but there are ${why}.` };
  return { skipReason: why };
}
