/**
 * The API servers the conformance suite runs on and the core that judges there: in memory with the
 * CAPI core emulator, or real kube-apiservers with real CAPI core, each beside a workload cluster.
 *
 * @module
 */
import { KubeClient } from "@capi-ts/sdk/runtime";
import type { KubeConfig } from "@kubernetes/client-node";
import type { ApiServer, RequestRecord } from "../apiserver/index.js";
import { startApiServer } from "../apiserver/index.js";
import {
  type CapiCore,
  externalControlPlaneCrd,
  externalControlPlaneTemplateCrd,
  startCapiCore,
} from "../capi/index.js";
import type { CRDSource } from "../controlplane/crds.js";
import { type RealCapiCore, startControlPlane } from "../controlplane/index.js";
import { capiCrdsFolder, certManagerStandInCrdsFolder } from "../crds.js";
import { SUITE_NAMESPACE as NAMESPACE, sleep } from "./core-scenarios.js";
import type {
  ConformanceCore,
  ConformanceProvider,
  MachinePoolConformanceOptions,
} from "./types.js";
import { openWorkloadAccess, realWorkloadAccess, type WorkloadAccessIssuer } from "./workload.js";

/** The field manager of the suite's own writes, which the steady-state checks leave out. */
export const FIELD_MANAGER = "capi-ts-conformance";

/** The API server the suite runs on, whichever core judges. */
export interface SuiteBackend {
  readonly kubeConfig: KubeConfig;
  /** The workload cluster: where Nodes live, reached by core only through the kubeconfig Secret. */
  readonly workloadKubeConfig: KubeConfig;
  /** Credentials of the workload cluster for the workload-cluster scenarios. */
  readonly workloadAccess: WorkloadAccessIssuer;
  /** Requests answered so far (the in-memory log, or the real server's audit log). */
  requests(): RequestRecord[];
  /** Requests the workload cluster answered so far (its Node writes). */
  workloadRequests(): RequestRecord[];
  /** Fault injection: in-memory only. */
  readonly faults: ApiServer["faults"] | undefined;
  /** Real core, when it judges. */
  readonly realCore: RealCapiCore | undefined;
  /** Installs CRDs on the management cluster. */
  installCRDs(crds: readonly CRDSource[]): Promise<void>;
  stop(): Promise<void>;
}

/** A started suite: its API servers, the core that judges, the suite's client and the provider. */
export interface SuiteEnv {
  readonly api: SuiteBackend;
  readonly core: CapiCore;
  readonly client: KubeClient;
  readonly provider: ConformanceProvider;
}

/** The core to judge by: the option, else CAPI_TS_CONFORMANCE_CORE, else the emulator. */
export function chosenCore(option: ConformanceCore | undefined): ConformanceCore {
  const value = option ?? process.env.CAPI_TS_CONFORMANCE_CORE ?? "emulator";
  if (value !== "emulator" && value !== "real") {
    throw new Error(
      `conformance: core must be "emulator" or "real", got ${JSON.stringify(value)} (option core or CAPI_TS_CONFORMANCE_CORE)`,
    );
  }
  return value;
}

/** The emulator's rate limit: the option, else CAPI_TS_CONFORMANCE_RATE_LIMIT_MS, else core's 1 s. */
export function chosenRateLimit(option: number | undefined): number {
  const raw = process.env.CAPI_TS_CONFORMANCE_RATE_LIMIT_MS;
  const value = option ?? (raw === undefined || raw === "" ? 1_000 : Number(raw));
  if (!Number.isInteger(value) || value < 0) {
    throw new Error(
      `conformance: the emulator's rate limit must be a whole number of ms ≥ 0 (1000 is core's; 0 measures the provider alone), got ${JSON.stringify(option ?? raw)} (option emulatorRateLimitMs or CAPI_TS_CONFORMANCE_RATE_LIMIT_MS)`,
    );
  }
  return value;
}

/** The CRDs the suite installs for the provider: its kinds' and the control plane stand-in's. */
export function providerCrds(options: MachinePoolConformanceOptions): Record<string, unknown>[] {
  const kind = options.kind;
  return [
    externalControlPlaneCrd(),
    externalControlPlaneTemplateCrd(),
    kind.crd,
    ...(kind.templateCrd ? [kind.templateCrd] : []),
    ...(kind.machine ? [kind.machine.crd] : []),
  ];
}

/**
 * Starts the management and workload API servers: a real kube-apiserver each for real core, in
 * memory for the emulator. No CRD is installed yet and no core runs ({@link startJudge} does that),
 * so a caller that holds the servers from here on can stop them whatever fails next.
 */
export async function startSuiteBackend(core: ConformanceCore): Promise<SuiteBackend> {
  if (core === "real") {
    // The workload cluster is a second kube-apiserver + etcd (no core, no CRDs): Nodes live only
    // there, and core and the provider reach it only through the <cluster>-kubeconfig Secret.
    // Bootstrap tokens give the workload scenarios credentials they can revoke.
    const [management, workload] = await Promise.allSettled([
      startControlPlane({ capiCore: true, requestLog: true }),
      startControlPlane({
        apiServerArgs: ["--enable-bootstrap-token-auth=true"],
        requestLog: true,
        // The disruption controller keeps PodDisruptionBudgets' status, which evictions read.
        controllerManagerArgs: [
          "--controllers=garbage-collector-controller,namespace-controller,disruption-controller",
        ],
      }),
    ]);
    if (management.status === "rejected" || workload.status === "rejected") {
      if (management.status === "fulfilled") await management.value.stop();
      if (workload.status === "fulfilled") await workload.value.stop();
      throw management.status === "rejected"
        ? management.reason
        : (workload as PromiseRejectedResult).reason;
    }
    const cp = management.value;
    const wl = workload.value;
    return {
      kubeConfig: cp.kubeConfig,
      workloadKubeConfig: wl.kubeConfig,
      workloadAccess: realWorkloadAccess(
        new KubeClient(wl.kubeConfig, { fieldManager: FIELD_MANAGER }),
        wl.kubeConfig,
      ),
      requests: () => cp.requests(),
      workloadRequests: () => wl.requests(),
      faults: undefined,
      realCore: cp.capiCore,
      installCRDs: (crds) => cp.installCRDs(crds),
      stop: async () => {
        await cp.stop();
        await wl.stop();
      },
    };
  }
  const api = await startApiServer();
  // A second in-memory API server is the workload cluster: Nodes register and are read there only,
  // so core and the provider must reach them through the <cluster>-kubeconfig Secret.
  // HTTPS, as a real workload cluster: the SDK's ClusterCache refuses a plain-HTTP server.
  const workload = await startApiServer({ tls: true });
  return {
    kubeConfig: api.kubeConfig,
    workloadKubeConfig: workload.kubeConfig,
    workloadAccess: openWorkloadAccess(workload.kubeConfig),
    requests: () => api.requests(),
    workloadRequests: () => workload.requests(),
    faults: api.faults,
    realCore: undefined,
    installCRDs: async (crds) => {
      await api.installCRDs([...crds]);
    },
    stop: async () => {
      await api.stop();
      await workload.stop();
    },
  };
}

/** What {@link startJudge} needs besides the servers. */
export interface JudgeSetup {
  readonly core: ConformanceCore;
  readonly options: MachinePoolConformanceOptions;
  /** The provider's CRDs ({@link providerCrds}). */
  readonly providerCrds: readonly Record<string, unknown>[];
  /** The emulator's rate limit ({@link chosenRateLimit}). */
  readonly rateLimitMs: number;
}

/**
 * Installs the CRDs on the management cluster and starts the CAPI core stand-in there: on real core
 * only its bootstrap provider (real core has none; the stand-in answers the pools' KubeadmConfigs),
 * against the emulator the whole of core with the CAPI CRDs of the target release.
 */
export async function startJudge(backend: SuiteBackend, setup: JudgeSetup): Promise<CapiCore> {
  const { options } = setup;
  if (setup.core === "real") {
    await backend.installCRDs(setup.providerCrds);
    // clusterctl finds cert-manager installed when its Issuer and Certificate kinds are served.
    if (options.providerUpgrade) await backend.installCRDs([certManagerStandInCrdsFolder]);
    return startCapiCore({ kubeConfig: backend.kubeConfig, machinePools: false });
  }
  await backend.installCRDs([options.capiCrds ?? capiCrdsFolder]);
  await backend.installCRDs(setup.providerCrds);
  return startCapiCore({ kubeConfig: backend.kubeConfig, rateLimitIntervalMs: setup.rateLimitMs });
}

/**
 * On real core: waits until core's ClusterCache logs `Connected` for the Cluster (its connection to
 * the workload cluster, built from the kubeconfig Secret), so a test bed that core cannot reach fails
 * here with core's log instead of as a timeout in the first scenario.
 */
export async function coreConnected(
  realCore: RealCapiCore | undefined,
  cluster: string,
): Promise<void> {
  if (!realCore) return;
  const deadline = Date.now() + 60_000;
  while (!realCore.connected({ namespace: NAMESPACE, name: cluster })) {
    if (Date.now() > deadline) {
      throw new Error(
        `conformance: real core's ClusterCache did not connect to the workload cluster of Cluster ${NAMESPACE}/${cluster} within 60 s (through its <cluster>-kubeconfig Secret). Core's log (${realCore.logFile}):\n${realCore.logTail(30)}`,
      );
    }
    await sleep(200);
  }
}
