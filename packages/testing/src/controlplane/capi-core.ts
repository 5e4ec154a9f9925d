import { existsSync, readFileSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import { dirname, join } from "node:path";
import { capiCrdsFolder, capiRelease } from "../crds.js";
import { type ControlPlaneBinaries, devBuildFolder, isExecutableFile } from "./binaries.js";
import { installCRDsOn, loadCRDs } from "./crds.js";
import { createOrReplace, type RawTarget, rawRequest } from "./http.js";
import { freePort, sleep } from "./ports.js";
import { GuardedProcess } from "./process.js";

/** Options of the real CAPI core a control plane runs ({@link ControlPlaneOptions.capiCore}). */
export interface RealCapiCoreOptions {
  /**
   * The `capi-core` executable (`./dev controlplane --capi` builds it). Default: next to the
   * kube-apiserver that was started (so a `KUBEBUILDER_ASSETS` folder may hold it too), else the
   * `tools/controlplane/bin` folder of the enclosing capi-ts checkout.
   */
  binary?: string;
  /**
   * Serve CAPI's defaulting, validating and conversion webhooks over TLS on 127.0.0.1 and register
   * them with the API server, as on a real management cluster. Default true.
   */
  webhooks?: boolean;
  /** Core's `--watch-filter`: reconcile only objects labelled `cluster.x-k8s.io/watch-filter=<value>`. */
  watchFilter?: string;
  /** How often core reconciles every object again, ms. Default CAPI's 600,000 (10 minutes). */
  syncPeriodMs?: number;
  /** Reconciles of each kind at the same time. Default CAPI's 10. */
  concurrency?: number;
  /** Extra flags for `capi-core` (for example `--v=4` for more logging). */
  args?: readonly string[];
  /** How long to wait for core and its webhooks to serve, ms. Default 60,000. */
  startTimeoutMs?: number;
}

/**
 * Cluster API core running next to a real control plane: CAPI's own MachinePool and Machine
 * controllers, its ClusterCache and its webhooks, built from the release {@link capiRelease} names.
 * Get it from `startControlPlane({ capiCore: true }).capiCore`.
 */
export interface RealCapiCore {
  /** The CAPI release, e.g. `v1.14.2`. */
  readonly release: string;
  /** The executable that runs. */
  readonly binary: string;
  /** Core's log (controller-runtime's development format). */
  readonly logFile: string;
  /** Whether the process still runs. */
  readonly running: boolean;
  /** Whether CAPI's webhooks are served and registered. */
  readonly webhooks: boolean;
  /** The last `lines` lines of core's log, for failure messages. */
  logTail(lines?: number): string;
  /**
   * The reconciles that returned an error (controller-runtime's `Reconciler error` log lines), oldest
   * first, optionally only those of one object.
   */
  reconcileErrors(filter?: ReconcileErrorFilter): CoreReconcileError[];
  /** Stops core (SIGTERM, then SIGKILL after the grace period). Safe to call twice. */
  stop(): Promise<void>;
}

/** One failed reconcile of real core, read from its log. */
export interface CoreReconcileError {
  /** The controller, e.g. `machinepool`. */
  controller: string;
  /** The reconciled object's kind, e.g. `MachinePool`. */
  kind: string;
  /** Namespace of the reconciled object (empty for a cluster-scoped one). */
  namespace: string;
  /** Name of the reconciled object, as core's log line gives it. */
  name: string;
  /** The error core returned, e.g. `failed to reconcile infrastructure: …`. */
  error: string;
  /** When it was logged. */
  at: Date;
}

/** Which failed reconciles {@link RealCapiCore.reconcileErrors} returns. */
export interface ReconcileErrorFilter {
  /** Only this kind, e.g. `MachinePool`. */
  kind?: string;
  /** Only objects in this namespace. */
  namespace?: string;
  /** Only objects with this name. */
  name?: string;
}

/** Parses controller-runtime's development log line `TIME\tERROR\tReconciler error\t{json}`. */
function parseReconcileError(line: string): CoreReconcileError | undefined {
  if (!line.includes("\tReconciler error\t")) return undefined;
  const [time, , , json] = line.split("\t");
  try {
    const fields = JSON.parse(json ?? "") as Record<string, unknown>;
    const kind = String(fields.controllerKind ?? "");
    const object = (fields[kind] ?? {}) as { name?: string; namespace?: string };
    return {
      controller: String(fields.controller ?? ""),
      kind,
      namespace: object.namespace ?? "",
      name: object.name ?? "",
      error: String(fields.error ?? ""),
      at: new Date(time ?? 0),
    };
  } catch {
    return undefined;
  }
}

const HOW_TO_BUILD =
  "Run `./dev controlplane --capi` in the capi-ts repository (needs Go) to build it into tools/controlplane/bin/, " +
  "or pass `capiCore: { binary }`.";

/**
 * Finds the `capi-core` executable: `binary` when given, else next to the kube-apiserver of
 * `binaries`, else in `tools/controlplane/bin` of the enclosing capi-ts checkout.
 *
 * @param binaries - the control plane's executables, whose folder is searched first.
 * @param binary - an explicit path; when given nothing else is looked at.
 * @returns the path, or `undefined` when there is none.
 * @example
 * ```ts
 * const core = findCapiCoreBinary(findControlPlaneBinaries());
 * if (!core) console.warn("no CAPI core: run ./dev controlplane --capi");
 * ```
 */
export function findCapiCoreBinary(
  binaries: Pick<ControlPlaneBinaries, "kubeApiServer"> | undefined,
  binary?: string,
): string | undefined {
  if (binary !== undefined) return isExecutableFile(binary) ? binary : undefined;
  const candidates = binaries ? [join(dirname(binaries.kubeApiServer), "capi-core")] : [];
  const built = devBuildFolder();
  if (built) candidates.push(join(built, "capi-core"));
  return candidates.find(isExecutableFile);
}

/** The cluster.x-k8s.io kinds whose conversion (v1beta1 <-> v1beta2) capi-core serves at /convert. */
const CONVERTED_CRDS = new Set(
  [
    "clusters",
    "clusterclasses",
    "machines",
    "machinesets",
    "machinedeployments",
    "machinehealthchecks",
    "machinepools",
    "machinedrainrules",
  ].map((plural) => `${plural}.cluster.x-k8s.io`),
);

/** The admission webhooks capi-core serves, on the paths CAPI's manifests use. */
const ADMISSION = [
  { kind: "Cluster", resource: "clusters" },
  { kind: "Machine", resource: "machines" },
  { kind: "MachinePool", resource: "machinepools" },
] as const;

function webhookPath(mutating: boolean, kind: string): string {
  return `/${mutating ? "mutate" : "validate"}-cluster-x-k8s-io-v1beta2-${kind.toLowerCase()}`;
}

function webhookConfiguration(mutating: boolean, url: string, caBundle: string) {
  return {
    apiVersion: "admissionregistration.k8s.io/v1",
    kind: mutating ? "MutatingWebhookConfiguration" : "ValidatingWebhookConfiguration",
    metadata: { name: `capi-core-${mutating ? "mutating" : "validating"}` },
    webhooks: ADMISSION.map(({ kind, resource }) => ({
      name: `${mutating ? "default" : "validation"}.${kind.toLowerCase()}.cluster.x-k8s.io`,
      admissionReviewVersions: ["v1"],
      clientConfig: { url: `${url}${webhookPath(mutating, kind)}`, caBundle },
      failurePolicy: "Fail",
      matchPolicy: "Equivalent",
      sideEffects: "None",
      rules: [
        {
          apiGroups: ["cluster.x-k8s.io"],
          apiVersions: ["v1beta2"],
          operations: ["CREATE", "UPDATE"],
          resources: [resource],
        },
      ],
    })),
  };
}

async function putObject(target: RawTarget, path: string, body: { metadata: { name: string } }) {
  const response = await createOrReplace(target, path, body);
  if (response.status >= 300) {
    throw new Error(
      `capi-core: the API server refused ${path}/${body.metadata.name} (HTTP ${response.status}): ${JSON.stringify(response.body)}`,
    );
  }
}

/** A MachinePool that CAPI's webhooks accept, sent as a dry run to prove they answer. */
const PROBE_MACHINE_POOL = {
  apiVersion: "cluster.x-k8s.io/v1beta2",
  kind: "MachinePool",
  metadata: { name: "capi-core-webhook-probe", namespace: "default" },
  spec: {
    clusterName: "probe",
    template: {
      spec: {
        clusterName: "probe",
        bootstrap: { dataSecretName: "probe" },
        infrastructureRef: {
          apiGroup: "infrastructure.cluster.x-k8s.io",
          kind: "DevMachinePool",
          name: "probe",
        },
      },
    },
  },
};

/**
 * Installs the CAPI CRDs of the release, starts `capi-core` against the API server and, with
 * webhooks, registers them (conversion on the CRDs, admission configurations) once core serves them.
 * Used by `startControlPlane({ capiCore })`.
 *
 * @internal
 */
export async function startRealCapiCore(
  target: RawTarget,
  kubeconfigFile: string,
  workDir: string,
  binaries: ControlPlaneBinaries,
  options: RealCapiCoreOptions,
): Promise<RealCapiCore> {
  const binary = findCapiCoreBinary(binaries, options.binary);
  if (!binary) {
    throw new Error(
      `startControlPlane({ capiCore }): no capi-core executable${options.binary ? ` at ${options.binary}` : ""}. ${HOW_TO_BUILD}`,
    );
  }
  const webhooks = options.webhooks ?? true;
  const timeoutMs = options.startTimeoutMs ?? 60_000;
  const crds = await loadCRDs(capiCrdsFolder);
  // Core's informers need the kinds served before it starts; conversion is added once it serves.
  await installCRDsOn(
    target,
    crds.map((crd) => crd.object),
    timeoutMs,
  );

  const certDir = join(workDir, "capi-core-certs");
  await mkdir(certDir, { recursive: true });
  const webhookPort = webhooks ? await freePort() : 0;
  const healthPort = await freePort();
  const args = [
    `--kubeconfig=${kubeconfigFile}`,
    `--health-addr=127.0.0.1:${healthPort}`,
    `--concurrency=${options.concurrency ?? 10}`,
    `--sync-period=${Math.round((options.syncPeriodMs ?? 600_000) / 1000)}s`,
    ...(options.watchFilter ? [`--watch-filter=${options.watchFilter}`] : []),
    ...(webhooks
      ? [
          `--webhook-port=${webhookPort}`,
          "--webhook-host=127.0.0.1",
          `--webhook-cert-dir=${certDir}`,
          "--webhook-self-signed",
        ]
      : []),
    ...(options.args ?? []),
  ];
  const logFile = join(workDir, "capi-core.log");
  const core = GuardedProcess.start("capi-core", binary, args, logFile, 5_000);
  const deadline = Date.now() + timeoutMs;
  const failed = (what: string) =>
    new Error(
      `capi-core ${what}. Last lines of ${logFile}:\n${core.logTail(30)}\n(core: ${binary})`,
    );
  const waitFor = async (what: string, check: () => Promise<boolean>) => {
    for (;;) {
      if (!core.running) throw failed(`exited with code ${core.exitCode} before ${what}`);
      if (await check().catch(() => false)) return;
      if (Date.now() > deadline) throw failed(`was not ${what} within ${timeoutMs} ms`);
      await sleep(150);
    }
  };

  try {
    if (webhooks) {
      const caFile = join(certDir, "ca.crt");
      await waitFor("writing its webhook certificate", async () => existsSync(caFile));
      const caBundle = Buffer.from(readFileSync(caFile, "utf8")).toString("base64");
      const url = `https://127.0.0.1:${webhookPort}`;
      const converted = crds.map((crd) =>
        CONVERTED_CRDS.has(crd.name)
          ? {
              ...crd.object,
              spec: {
                ...(crd.object.spec as Record<string, unknown>),
                conversion: {
                  strategy: "Webhook",
                  webhook: {
                    conversionReviewVersions: ["v1"],
                    clientConfig: { url: `${url}/convert`, caBundle },
                  },
                },
              },
            }
          : crd.object,
      );
      await installCRDsOn(
        target,
        converted.filter((crd) => CONVERTED_CRDS.has((crd.metadata as { name: string }).name)),
        timeoutMs,
      );
      const admission = "/apis/admissionregistration.k8s.io/v1";
      await putObject(
        target,
        `${admission}/mutatingwebhookconfigurations`,
        webhookConfiguration(true, url, caBundle),
      );
      await putObject(
        target,
        `${admission}/validatingwebhookconfigurations`,
        webhookConfiguration(false, url, caBundle),
      );
    }
    await waitFor("ready (/readyz)", async () => {
      const response = await fetch(`http://127.0.0.1:${healthPort}/readyz`, {
        signal: AbortSignal.timeout(2_000),
      });
      return response.ok;
    });
    if (webhooks) {
      // Registration takes effect asynchronously in the API server; a dry run goes through the
      // mutating and validating webhooks, so a 201 proves the API server reaches them.
      let last = "";
      await waitFor("reachable from the API server through its webhooks", async () => {
        const response = await rawRequest(
          target,
          "POST",
          "/apis/cluster.x-k8s.io/v1beta2/namespaces/default/machinepools?dryRun=All",
          PROBE_MACHINE_POOL,
        );
        last = `HTTP ${response.status} ${JSON.stringify(response.body).slice(0, 300)}`;
        const defaulted = (response.body as { metadata?: { labels?: Record<string, string> } })
          .metadata?.labels?.["cluster.x-k8s.io/cluster-name"];
        return response.status === 201 && defaulted === "probe";
      }).catch((error: unknown) => {
        throw new Error(`${(error as Error).message}\nlast webhook probe: ${last}`);
      });
    }
  } catch (error) {
    await core.stop();
    throw error;
  }

  return {
    release: capiRelease(),
    binary,
    logFile,
    get running() {
      return core.running;
    },
    webhooks,
    logTail: (lines = 40) => core.logTail(lines),
    reconcileErrors(filter: ReconcileErrorFilter = {}) {
      let log = "";
      try {
        log = readFileSync(logFile, "utf8");
      } catch {
        return [];
      }
      return log
        .split("\n")
        .map(parseReconcileError)
        .filter((entry): entry is CoreReconcileError => entry !== undefined)
        .filter(
          (entry) =>
            (filter.kind === undefined || entry.kind === filter.kind) &&
            (filter.namespace === undefined || entry.namespace === filter.namespace) &&
            (filter.name === undefined || entry.name === filter.name),
        );
    },
    stop: () => core.stop(),
  };
}
