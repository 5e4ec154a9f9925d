import { execFile } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import { loadAll } from "js-yaml";
import { capiRelease } from "../crds.js";
import { type ControlPlaneBinaries, devBuildFolder, isExecutableFile } from "./binaries.js";
import { installCRDsOn, loadCRDs } from "./crds.js";
import { createOrReplace, type RawTarget, rawRequest } from "./http.js";
import { freePort, sleep } from "./ports.js";
import { GuardedProcess } from "./process.js";

/** Options of the real CAPI core a control plane runs ({@link ControlPlaneOptions.capiCore}). */
export interface RealCapiCoreOptions {
  /**
   * CAPI's manager executable (`./dev controlplane --capi` builds it as `capi/<release>/manager`). Its
   * folder must also hold what `./dev controlplane` writes beside it: `crds/`, `webhooks.yaml` and
   * `release.json`. Default: the release's folder next to the kube-apiserver that was started (so a
   * `KUBEBUILDER_ASSETS` folder may hold it too), else in `tools/controlplane/bin` of the enclosing
   * capi-ts checkout.
   */
  binary?: string;
  /**
   * Register CAPI's defaulting, validating and conversion webhooks (served over TLS, reached at
   * 127.0.0.1) with the API server, as on a real management cluster. Default true.
   */
  webhooks?: boolean;
  /** Core's `--watch-filter`: reconcile only objects labelled `cluster.x-k8s.io/watch-filter=<value>`. */
  watchFilter?: string;
  /** How often core reconciles every object again, ms. Default CAPI's 600,000 (10 minutes). */
  syncPeriodMs?: number;
  /**
   * Reconciles at the same time of each kind the suites exercise (`--machinepool-concurrency` and
   * `--machine-concurrency`). Default CAPI's (50 and 100).
   */
  concurrency?: number;
  /**
   * Feature gates over clusterctl's defaults (which `./dev controlplane` read from the release's
   * manager.yaml, with `MachinePool` and `ClusterTopology` on), e.g. `{ MachineTaintPropagation: true }`.
   */
  featureGates?: Readonly<Record<string, boolean>>;
  /** Extra flags for the manager (for example `--v=4` for more logging). */
  args?: readonly string[];
  /** How long to wait for core and its webhooks to serve, ms. Default 90,000. */
  startTimeoutMs?: number;
}

/**
 * Cluster API core running next to a real control plane: CAPI's own manager (every controller and
 * webhook clusterctl deploys), built from one release.
 * Get it from `startControlPlane({ capiCore: true }).capiCore`.
 */
export interface RealCapiCore {
  /** The CAPI release, e.g. `v1.14.2`. */
  readonly release: string;
  /** The executable that runs. */
  readonly binary: string;
  /** The feature gates it runs with (`--feature-gates`). */
  readonly featureGates: string;
  /** The folder of the release's CRDs that were installed. */
  readonly crds: string;
  /** Core's log (JSON, one object a line). */
  readonly logFile: string;
  /** Whether the process still runs. */
  readonly running: boolean;
  /** Whether CAPI's webhooks are registered. */
  readonly webhooks: boolean;
  /** The last `lines` lines of core's log, for failure messages (stack traces left out, long lines cut). */
  logTail(lines?: number): string;
  /**
   * The reconciles that returned an error (controller-runtime's `Reconciler error` log lines), oldest
   * first, optionally only those of one object.
   */
  reconcileErrors(filter?: ReconcileErrorFilter): CoreReconcileError[];
  /** Whether core's ClusterCache has logged `Connected` for the Cluster (its workload cluster is reachable). */
  connected(cluster: { readonly namespace: string; readonly name: string }): boolean;
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

/** A line of the manager's JSON log (component-base's JSON format). */
type LogLine = Record<string, unknown> & { ts?: number; msg?: string };

function parseLogLine(line: string): LogLine | undefined {
  if (!line.startsWith("{")) return undefined;
  try {
    return JSON.parse(line) as LogLine;
  } catch {
    return undefined;
  }
}

/**
 * The log lines for a failure message: each JSON line without the stack traces of its error causes,
 * and cut at 800 characters.
 */
function compactLog(text: string): string {
  return text
    .split("\n")
    .map((line) => {
      const entry = parseLogLine(line);
      if (entry) {
        delete entry.errCauses;
        delete entry.errorVerbose;
        line = JSON.stringify(entry);
      }
      return line.length > 800 ? `${line.slice(0, 800)}…` : line;
    })
    .join("\n");
}

/** Turns controller-runtime's `Reconciler error` line into a {@link CoreReconcileError}. */
function reconcileError(entry: LogLine): CoreReconcileError | undefined {
  if (entry.msg !== "Reconciler error") return undefined;
  const kind = String(entry.controllerKind ?? "");
  const object = (entry[kind] ?? {}) as { name?: string; namespace?: string };
  return {
    controller: String(entry.controller ?? ""),
    kind,
    namespace: object.namespace ?? String(entry.namespace ?? ""),
    name: object.name ?? String(entry.name ?? ""),
    error: String(entry.err ?? entry.error ?? ""),
    at: new Date(typeof entry.ts === "number" ? entry.ts : 0),
  };
}

const HOW_TO_BUILD =
  "Run `./dev controlplane --capi` in the capi-ts repository (needs Go) to build it into tools/controlplane/bin/capi/<release>/ " +
  "(`--capi-release vX.Y.Z` for a release other than the target), or pass `capiCore: { binary }`.";

const RELEASE_PATTERN = /^v\d+\.\d+\.\d+$/;

/**
 * The CAPI release real core runs by default: `CAPI_TS_CAPI_RELEASE` when set (what
 * `./dev conformance --core real --capi-release …` sets), else the target {@link capiRelease}.
 *
 * @throws Error when `CAPI_TS_CAPI_RELEASE` is not a release such as `v1.13.6`.
 * @example
 * ```ts
 * console.log(`real core: CAPI ${realCapiRelease()}`);
 * ```
 */
export function realCapiRelease(): string {
  const chosen = process.env.CAPI_TS_CAPI_RELEASE;
  if (chosen === undefined || chosen === "") return capiRelease();
  if (!RELEASE_PATTERN.test(chosen)) {
    throw new Error(
      `CAPI_TS_CAPI_RELEASE=${JSON.stringify(chosen)} is not a CAPI release; set it to one such as v1.13.6 (or unset it for the target, ${capiRelease()}).`,
    );
  }
  return chosen;
}

function releaseFolders(
  binaries: Pick<ControlPlaneBinaries, "kubeApiServer"> | undefined,
  release: string,
): string[] {
  const folders = binaries ? [join(dirname(binaries.kubeApiServer), "capi", release)] : [];
  const built = devBuildFolder();
  if (built) folders.push(join(built, "capi", release));
  return folders;
}

/**
 * Finds CAPI's manager of a release: `binary` when given, else `capi/<release>/manager` next to the
 * kube-apiserver of `binaries`, else in `tools/controlplane/bin` of the enclosing capi-ts checkout.
 *
 * @param binaries - the control plane's executables, whose folder is searched first.
 * @param binary - an explicit path; when given nothing else is looked at.
 * @param release - the CAPI release; default {@link realCapiRelease}.
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
  release: string = realCapiRelease(),
): string | undefined {
  if (binary !== undefined) return isExecutableFile(binary) ? binary : undefined;
  return releaseFolders(binaries, release)
    .map((folder) => join(folder, "manager"))
    .find(isExecutableFile);
}

/**
 * Why CAPI's manager of a release is not there, for a `!!! SKIPPED BACKEND` line: what
 * `./dev controlplane --capi-release` recorded when its build failed (which module, and why), else
 * that it was never built.
 *
 * @param binaries - the control plane's executables, whose folder is searched first.
 * @param release - the CAPI release; default {@link realCapiRelease}.
 * @example
 * ```ts
 * if (!findCapiCoreBinary(binaries)) console.warn(`!!! SKIPPED BACKEND: ${capiCoreMissingReason(binaries)}`);
 * ```
 */
export function capiCoreMissingReason(
  binaries: Pick<ControlPlaneBinaries, "kubeApiServer"> | undefined,
  release: string = realCapiRelease(),
): string {
  for (const folder of releaseFolders(binaries, release)) {
    const error = join(folder, "build-error.txt");
    if (existsSync(error)) {
      return `CAPI ${release} failed to build: ${readFileSync(error, "utf8").trim().slice(0, 600)}`;
    }
  }
  const flag = release === capiRelease() ? "--capi" : `--capi-release ${release}`;
  return `CAPI ${release}'s manager is not built (run \`./dev controlplane ${flag}\`)`;
}

/** What `./dev controlplane` wrote next to a release's manager. */
interface ReleaseBuild {
  release: string;
  featureGates: string;
  crds: string;
  webhooks: string;
}

function readReleaseBuild(manager: string, release: string): ReleaseBuild {
  const folder = dirname(manager);
  const file = join(folder, "release.json");
  let info: { release?: unknown; featureGates?: unknown };
  try {
    info = JSON.parse(readFileSync(file, "utf8")) as typeof info;
  } catch (error) {
    throw new Error(
      `startControlPlane({ capiCore }): ${file} is missing or unreadable (${(error as Error).message}); the manager's folder must be one \`./dev controlplane --capi\` wrote. ${HOW_TO_BUILD}`,
    );
  }
  if (info.release !== release || typeof info.featureGates !== "string") {
    throw new Error(
      `startControlPlane({ capiCore }): ${file} describes CAPI ${String(info.release)}, not ${release} (or has no featureGates); rebuild with \`./dev controlplane --capi-release ${release}\`.`,
    );
  }
  for (const needed of ["crds", "webhooks.yaml"]) {
    if (!existsSync(join(folder, needed))) {
      throw new Error(
        `startControlPlane({ capiCore }): ${join(folder, needed)} is missing next to the manager. ${HOW_TO_BUILD}`,
      );
    }
  }
  return {
    release,
    featureGates: info.featureGates,
    crds: join(folder, "crds"),
    webhooks: join(folder, "webhooks.yaml"),
  };
}

/** Gates of `base` (`A=true,B=false`) with `overrides` applied, in the base's order. */
function mergeGates(base: string, overrides: Readonly<Record<string, boolean>>): string {
  const gates = new Map(
    base
      .split(",")
      .filter((pair) => pair.includes("="))
      .map((pair) => pair.split("=") as [string, string]),
  );
  for (const [gate, on] of Object.entries(overrides)) {
    if (!/^[A-Za-z][A-Za-z0-9]*$/.test(gate)) {
      throw new Error(
        `startControlPlane({ capiCore: { featureGates } }): ${JSON.stringify(gate)} is not a feature gate name (letters and digits, e.g. MachineTaintPropagation).`,
      );
    }
    gates.set(gate, String(on));
  }
  return [...gates].map(([gate, on]) => `${gate}=${on}`).join(",");
}

/** The API groups whose CRDs CAPI's manager converts (its conversion webhook, `/convert`). */
const CONVERTED_GROUPS = new Set([
  "cluster.x-k8s.io",
  "addons.cluster.x-k8s.io",
  "ipam.cluster.x-k8s.io",
  "runtime.cluster.x-k8s.io",
]);

interface WebhookManifest {
  kind?: string;
  metadata?: { name?: string };
  webhooks?: Array<Record<string, unknown> & { clientConfig?: { service?: { path?: string } } }>;
}

/**
 * The release's webhook configurations (its `config/webhook/manifests.yaml`), pointed at the manager
 * on 127.0.0.1 instead of the in-cluster Service, with the test bed's CA.
 */
function webhookConfigurations(file: string, url: string, caBundle: string) {
  const documents = loadAll(readFileSync(file, "utf8")) as WebhookManifest[];
  return documents
    .filter(
      (doc) =>
        doc?.kind === "MutatingWebhookConfiguration" ||
        doc?.kind === "ValidatingWebhookConfiguration",
    )
    .map((doc) => ({
      apiVersion: "admissionregistration.k8s.io/v1",
      kind: doc.kind as string,
      metadata: { name: `capi-${doc.metadata?.name ?? doc.kind}` },
      webhooks: (doc.webhooks ?? []).map((webhook) => {
        const path = webhook.clientConfig?.service?.path;
        if (!path) throw new Error(`${file}: webhook ${String(webhook.name)} has no service path`);
        return { ...webhook, clientConfig: { url: `${url}${path}`, caBundle } };
      }),
    }));
}

async function putObject(target: RawTarget, path: string, body: { metadata: { name: string } }) {
  const response = await createOrReplace(target, path, body);
  if (response.status >= 300) {
    throw new Error(
      `CAPI core: the API server refused ${path}/${body.metadata.name} (HTTP ${response.status}): ${JSON.stringify(response.body)}`,
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

/** The `serving-cert` helper `./dev controlplane` builds next to kube-apiserver. */
function servingCertBinary(binaries: ControlPlaneBinaries): string {
  const candidates = [join(dirname(binaries.kubeApiServer), "serving-cert")];
  const built = devBuildFolder();
  if (built) candidates.push(join(built, "serving-cert"));
  const found = candidates.find(isExecutableFile);
  if (!found) {
    throw new Error(
      `startControlPlane({ capiCore }): no serving-cert executable (${candidates.join(", ")}): it writes the webhook serving certificate. Run \`./dev controlplane\`.`,
    );
  }
  return found;
}

/**
 * Installs the CAPI CRDs of the release, writes a serving certificate, starts CAPI's manager against
 * the API server and, with webhooks, registers them (conversion on core's CRDs, the release's
 * admission configurations) once it serves them. Used by `startControlPlane({ capiCore })`.
 *
 * The manager has no flag for its webhook server's address, so it listens on every interface (TLS,
 * a free port); the API server reaches it at 127.0.0.1, the name the certificate is for.
 *
 * @internal
 */
export async function startRealCapiCore(
  target: RawTarget,
  kubeconfigFile: string,
  workDir: string,
  binaries: ControlPlaneBinaries,
  options: RealCapiCoreOptions,
  release: string,
): Promise<RealCapiCore> {
  if (!RELEASE_PATTERN.test(release)) {
    throw new Error(
      `startControlPlane({ capiRelease }): ${JSON.stringify(release)} is not a CAPI release; pass one such as v1.13.6.`,
    );
  }
  const binary = findCapiCoreBinary(binaries, options.binary, release);
  if (!binary) {
    throw new Error(
      `startControlPlane({ capiCore }): no CAPI ${release} manager${options.binary ? ` at ${options.binary}` : ""}: ${capiCoreMissingReason(binaries, release)}. ${HOW_TO_BUILD}`,
    );
  }
  const build = readReleaseBuild(binary, release);
  const featureGates = mergeGates(build.featureGates, options.featureGates ?? {});
  const webhooks = options.webhooks ?? true;
  const timeoutMs = options.startTimeoutMs ?? 90_000;
  const crds = await loadCRDs(build.crds);
  // Core's informers need the kinds served before it starts; conversion is added once it serves.
  await installCRDsOn(
    target,
    crds.map((crd) => crd.object),
    timeoutMs,
  );

  const certDir = join(workDir, "capi-core-certs");
  await mkdir(certDir, { recursive: true });
  await promisify(execFile)(servingCertBinary(binaries), [`--dir=${certDir}`, "--host=127.0.0.1"]);
  const concurrency = options.concurrency;
  const logFile = join(workDir, "capi-core.log");
  const deadline = Date.now() + timeoutMs;
  const started = async () => {
    // A free port is only free until someone binds it: another test file's server may take one of
    // these between the check and the manager's bind.
    const ports = {
      webhook: await freePort(),
      health: await freePort(),
      diagnostics: await freePort(),
    };
    const args = [
      `--kubeconfig=${kubeconfigFile}`,
      "--logging-format=json",
      `--health-addr=127.0.0.1:${ports.health}`,
      `--diagnostics-address=127.0.0.1:${ports.diagnostics}`,
      `--webhook-port=${ports.webhook}`,
      `--webhook-cert-dir=${certDir}`,
      `--feature-gates=${featureGates}`,
      `--sync-period=${Math.round((options.syncPeriodMs ?? 600_000) / 1000)}s`,
      ...(concurrency === undefined
        ? []
        : [`--machinepool-concurrency=${concurrency}`, `--machine-concurrency=${concurrency}`]),
      ...(options.watchFilter ? [`--watch-filter=${options.watchFilter}`] : []),
      ...(options.args ?? []),
    ];
    return {
      ports,
      process: GuardedProcess.start(`CAPI ${release} manager`, binary, args, logFile, 5_000),
    };
  };
  let { ports, process: core } = await started();
  const failed = (what: string) =>
    new Error(
      `CAPI ${release}'s manager ${what}. Last lines of ${logFile}:\n${compactLog(core.logTail(30))}\n(core: ${binary})`,
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
    // /readyz includes the webhook server's start. A manager that lost one of its ports to another
    // process exits at once: start it again on new ones (twice at most).
    for (let attempt = 1; ; attempt++) {
      try {
        await waitFor("ready (/readyz)", async () => {
          const response = await fetch(`http://127.0.0.1:${ports.health}/readyz`, {
            signal: AbortSignal.timeout(2_000),
          });
          return response.ok;
        });
        break;
      } catch (error) {
        if (core.running || attempt >= 3 || !core.logTail(10).includes("address already in use")) {
          throw error;
        }
        ({ ports, process: core } = await started());
      }
    }
    if (webhooks) {
      const caBundle = Buffer.from(readFileSync(join(certDir, "ca.crt"), "utf8")).toString(
        "base64",
      );
      const url = `https://127.0.0.1:${ports.webhook}`;
      const converted = crds
        .filter((crd) => CONVERTED_GROUPS.has(crd.group))
        .map((crd) => ({
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
        }));
      await installCRDsOn(target, converted, timeoutMs);
      const admission = "/apis/admissionregistration.k8s.io/v1";
      for (const configuration of webhookConfigurations(build.webhooks, url, caBundle)) {
        await putObject(target, `${admission}/${configuration.kind.toLowerCase()}s`, configuration);
      }
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

  /** The log lines that carry `marker` (a cheap test before parsing), parsed. */
  const entries = (marker: string): LogLine[] => {
    let log = "";
    try {
      log = readFileSync(logFile, "utf8");
    } catch {
      return [];
    }
    return log
      .split("\n")
      .filter((line) => line.includes(marker))
      .map(parseLogLine)
      .filter((entry): entry is LogLine => entry !== undefined);
  };

  return {
    release,
    binary,
    featureGates,
    crds: build.crds,
    logFile,
    get running() {
      return core.running;
    },
    webhooks,
    logTail: (lines = 40) => compactLog(core.logTail(lines)),
    reconcileErrors(filter: ReconcileErrorFilter = {}) {
      return entries('"Reconciler error"')
        .map(reconcileError)
        .filter((entry): entry is CoreReconcileError => entry !== undefined)
        .filter(
          (entry) =>
            (filter.kind === undefined || entry.kind === filter.kind) &&
            (filter.namespace === undefined || entry.namespace === filter.namespace) &&
            (filter.name === undefined || entry.name === filter.name),
        );
    },
    connected(cluster) {
      return entries('"Connected"').some((entry) => {
        if (entry.msg !== "Connected") return false;
        const object = entry.Cluster as { name?: string; namespace?: string } | undefined;
        return object?.name === cluster.name && object?.namespace === cluster.namespace;
      });
    },
    stop: () => core.stop(),
  };
}
