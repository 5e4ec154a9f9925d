import { generateKeyPairSync, randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { KubeConfig } from "@kubernetes/client-node";
import { dump } from "js-yaml";
import type { RequestRecord } from "../apiserver/http.js";
import { AuditLogReader, auditArgs, CONTROLLER_MANAGER_USER } from "./audit.js";
import { type ControlPlaneBinaries, requireControlPlaneBinaries } from "./binaries.js";
import {
  type RealCapiCore,
  type RealCapiCoreOptions,
  realCapiRelease,
  startRealCapiCore,
} from "./capi-core.js";
import { type CRDSource, installCRDsOn } from "./crds.js";
import { type RawTarget, rawRequest } from "./http.js";
import { freePort, sleep } from "./ports.js";
import { GuardedProcess } from "./process.js";

/**
 * What a test backend can do beyond plain Kubernetes API calls, so that a suite running on several
 * backends can skip (and say it skipped) what one of them cannot do.
 */
export interface BackendCapabilities {
  /** `requests()` / `clearRequests()`: a log of every request the server answered. */
  readonly requestLog: boolean;
  /** `faults`: injected errors, latency and cut watches. */
  readonly faults: boolean;
  /** `restart()`: drop every connection and come back with the same state. */
  readonly restart: boolean;
  /**
   * Whether the controllers of kube-controller-manager run (namespace finalization, garbage
   * collection of dependents): on the real control plane when its `kube-controller-manager` runs
   * (`./dev controlplane` builds it; envtest has none), always in memory.
   */
  readonly controllers: boolean;
}

/** Options of {@link startControlPlane}. */
export interface ControlPlaneOptions {
  /**
   * A folder holding `kube-apiserver` and `etcd`. Default: `KUBEBUILDER_ASSETS`, then the
   * `tools/controlplane/bin` folder that `./dev controlplane` fills.
   */
  binaryDir?: string;
  /** How long to wait for etcd and then `/readyz` of kube-apiserver. Default 120 000 ms. */
  startTimeoutMs?: number;
  /** How long each process gets to stop after SIGTERM before it is killed. Default 5 000 ms. */
  stopGraceMs?: number;
  /** Keep the data folder (etcd data, certificates, logs) after `stop()`, for debugging. Default false. */
  keepDataDir?: boolean;
  /** Extra `--flag=value` arguments for kube-apiserver; later flags win over the defaults. */
  apiServerArgs?: readonly string[];
  /** Extra `--flag=value` arguments for etcd. */
  etcdArgs?: readonly string[];
  /**
   * Run kube-controller-manager (its garbage collector and namespace controller, as every cluster
   * has) next to the API server, so dependents of a deleted owner are collected and a deleted
   * namespace is emptied and removed. Default: when the binary is found next to kube-apiserver;
   * `true` without one throws, `false` leaves it out (as envtest does).
   */
  controllerManager?: boolean;
  /** Extra `--flag=value` arguments for kube-controller-manager. */
  controllerManagerArgs?: readonly string[];
  /**
   * Also run Cluster API core: CAPI's own manager, as clusterctl deploys it (every controller and
   * webhook, clusterctl's default feature gates plus `MachinePool` and `ClusterTopology`), of the
   * release {@link ControlPlaneOptions.capiRelease} names: `true` for the defaults, or options. The CAPI CRDs of that release are
   * installed first (with conversion served by core). Needs `./dev controlplane --capi`. Reach it as
   * {@link ControlPlane.capiCore}.
   */
  capiCore?: boolean | RealCapiCoreOptions;
  /**
   * The CAPI release core runs, e.g. `v1.13.6` (built by `./dev controlplane --capi-release v1.13.6`).
   * Default: `CAPI_TS_CAPI_RELEASE`, else the release the SDK targets.
   */
  capiRelease?: string;
  /**
   * Keep a log of every request (the API server's audit log at the Metadata level: verb, resource,
   * name, answer, user agent, field manager; never a body), readable through
   * {@link ControlPlane.requests} like the in-memory server's. Default false.
   */
  requestLog?: boolean;
}

/** A running kube-apiserver + etcd on loopback; see {@link startControlPlane}. */
export interface ControlPlane {
  /** Which kind of backend this is (the in-memory server says `"memory"`). */
  readonly backend: "real";
  /** What this backend supports beyond the Kubernetes API. */
  readonly capabilities: BackendCapabilities;
  /** A client-node `KubeConfig` that reaches the server as a `system:masters` user over verified TLS. */
  readonly kubeConfig: KubeConfig;
  /** The server's URL, `https://127.0.0.1:PORT`. */
  readonly url: string;
  /** The Kubernetes version the server reports at `/version`, for example `v1.35.4`. */
  readonly version: string;
  /** The throwaway folder with etcd's data, certificates and the two processes' logs. */
  readonly dataDir: string;
  /** The executables that were started. */
  readonly binaries: ControlPlaneBinaries;
  /** Writes a kubeconfig file (mode 0600) for `kubectl` or any other client. */
  writeKubeconfig(path: string): Promise<void>;
  /**
   * Creates the CRDs (files, folders or objects; existing ones are replaced) and waits until each is
   * Established and listed in discovery.
   */
  installCRDs(crds: CRDSource | readonly CRDSource[]): Promise<void>;
  /** Stops kube-apiserver and starts it again on the same port; etcd, and so all state, stays. */
  restart(): Promise<void>;
  /**
   * Freezes etcd for `ms` (SIGSTOP, then SIGCONT), as a stalled disk or a paused VM does: the API
   * server keeps accepting requests but cannot answer those that need storage until etcd runs again.
   * Resolves once etcd is thawed.
   */
  pauseEtcd(ms: number): Promise<void>;
  /** kube-controller-manager's log, when it runs (see {@link ControlPlaneOptions.controllerManager}). */
  readonly controllerManagerLog: string | undefined;
  /** Cluster API core, when started with `capiCore`; `undefined` otherwise. */
  readonly capiCore: RealCapiCore | undefined;
  /**
   * The requests the server answered since the start or the last {@link clearRequests}, read from its
   * audit log, in the in-memory server's record shape (no bodies, no content types). Requests of the
   * server to itself are left out. Throws unless started with `requestLog: true`.
   */
  requests(): RequestRecord[];
  /** Forgets the requests logged so far. */
  clearRequests(): void;
  /** Stops kube-apiserver, then etcd, and removes the data folder. Safe to call twice. */
  stop(): Promise<void>;
}

const REAL_CAPABILITIES: BackendCapabilities = Object.freeze({
  requestLog: false,
  faults: false,
  restart: true,
  controllers: false,
});

/** The controllers of kube-controller-manager that run: the ones every API object's life depends on. */
const CONTROLLERS = ["garbage-collector-controller", "namespace-controller"];
/** What the garbage collector logs once its informers synced (or gave up waiting) and it collects. */
const GARBAGE_COLLECTOR_RUNNING = "Proceeding to collect garbage";

class StartError extends Error {
  constructor(
    message: string,
    readonly portClash: boolean,
  ) {
    super(message);
  }
}

function failure(server: GuardedProcess, what: string): StartError {
  const tail = server.logTail();
  return new StartError(
    `${server.name} ${what}. Last lines of ${server.logFile}:\n${tail}`,
    /address already in use/i.test(tail),
  );
}

/** Polls `check` until it returns true, failing early when `server` exits. */
async function waitUntil(
  server: GuardedProcess,
  deadline: number,
  what: string,
  check: () => Promise<boolean>,
): Promise<void> {
  for (;;) {
    if (!server.running)
      throw failure(server, `exited with code ${server.exitCode} before ${what}`);
    if (await check().catch(() => false)) return;
    if (Date.now() > deadline) throw failure(server, `was not ${what} in time`);
    await sleep(150);
  }
}

async function etcdHealthy(port: number): Promise<boolean> {
  const response = await fetch(`http://127.0.0.1:${port}/health`, {
    signal: AbortSignal.timeout(2_000),
  });
  const body = (await response.json()) as { health?: unknown };
  return response.ok && body.health === "true";
}

interface Layout {
  dataDir: string;
  certDir: string;
  tokenFile: string;
  serviceAccountKey: string;
  token: string;
  /** The controller manager's own token: its requests are its own user's, left out of the request log. */
  controllerManagerToken: string;
}

async function prepareDataDir(): Promise<Layout> {
  const dataDir = await mkdtemp(join(tmpdir(), "capi-ts-controlplane-"));
  const certDir = join(dataDir, "pki");
  await mkdir(certDir, { recursive: true });
  const token = randomBytes(24).toString("hex");
  const controllerManagerToken = randomBytes(24).toString("hex");
  const tokenFile = join(dataDir, "tokens.csv");
  // Static token file format: token,user,uid,"group1,group2".
  await writeFile(
    tokenFile,
    `${token},capi-ts-admin,capi-ts-admin,"system:masters"\n` +
      `${controllerManagerToken},${CONTROLLER_MANAGER_USER},${CONTROLLER_MANAGER_USER},"system:masters"\n`,
    { mode: 0o600 },
  );
  const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
  const serviceAccountKey = join(dataDir, "service-account.key");
  await writeFile(serviceAccountKey, privateKey.export({ type: "pkcs8", format: "pem" }), {
    mode: 0o600,
  });
  return { dataDir, certDir, tokenFile, serviceAccountKey, token, controllerManagerToken };
}

interface Ports {
  etcdClient: number;
  etcdPeer: number;
  apiServer: number;
}

function etcdArgs(layout: Layout, ports: Ports, extra: readonly string[]): string[] {
  const client = `http://127.0.0.1:${ports.etcdClient}`;
  const peer = `http://127.0.0.1:${ports.etcdPeer}`;
  return [
    "--name=capi-ts",
    `--data-dir=${join(layout.dataDir, "etcd")}`,
    `--listen-client-urls=${client}`,
    `--advertise-client-urls=${client}`,
    `--listen-peer-urls=${peer}`,
    `--initial-advertise-peer-urls=${peer}`,
    `--initial-cluster=capi-ts=${peer}`,
    // The data is thrown away after the run: durability buys nothing and fsync costs a lot.
    "--unsafe-no-fsync=true",
    "--log-level=warn",
    ...extra,
  ];
}

function apiServerArgs(layout: Layout, ports: Ports, extra: readonly string[]): string[] {
  return [
    `--etcd-servers=http://127.0.0.1:${ports.etcdClient}`,
    `--secure-port=${ports.apiServer}`,
    "--bind-address=127.0.0.1",
    "--advertise-address=127.0.0.1",
    // Without --tls-cert-file the server writes a self-signed pair (with its CA) into --cert-dir,
    // valid for the advertise address; the client trusts that CA.
    `--cert-dir=${layout.certDir}`,
    `--token-auth-file=${layout.tokenFile}`,
    "--authorization-mode=RBAC",
    `--service-account-issuer=https://127.0.0.1:${ports.apiServer}`,
    `--service-account-key-file=${layout.serviceAccountKey}`,
    `--service-account-signing-key-file=${layout.serviceAccountKey}`,
    "--service-cluster-ip-range=10.0.0.0/24",
    "--allow-privileged=true",
    // As envtest: no controller-manager creates the default service accounts that this plugin wants.
    "--disable-admission-plugins=ServiceAccount",
    // No Service/Endpoints of its own for a loopback test server.
    "--endpoint-reconciler-type=none",
    ...extra,
  ];
}

/**
 * Starts kube-controller-manager with only {@link CONTROLLERS}, its own credentials (no per-controller
 * service accounts: nothing creates them here), no leader election and no serving port, and waits
 * until its garbage collector collects. A CRD installed later is seen at the collector's next
 * discovery, within 30 s.
 */
async function startControllerManager(
  binary: string,
  kubeconfigFile: string,
  dataDir: string,
  graceMs: number,
  deadline: number,
  extra: readonly string[],
): Promise<GuardedProcess> {
  const manager = GuardedProcess.start(
    "kube-controller-manager",
    binary,
    [
      `--kubeconfig=${kubeconfigFile}`,
      `--controllers=${CONTROLLERS.join(",")}`,
      "--use-service-account-credentials=false",
      "--leader-elect=false",
      "--secure-port=0",
      ...extra,
    ],
    join(dataDir, "kube-controller-manager.log"),
    graceMs,
  );
  try {
    await waitUntil(manager, deadline, "collecting garbage", async () =>
      manager.logTail(400).includes(GARBAGE_COLLECTOR_RUNNING),
    );
  } catch (error) {
    await manager.stop();
    throw error;
  }
  return manager;
}

/**
 * Starts a real kube-apiserver and etcd on free loopback ports, envtest-style: a throwaway data
 * folder, a self-signed serving certificate, a bearer token in `system:masters`, RBAC on. Resolves
 * once `/readyz` answers. The processes stop when `stop()` is called and also when the calling process
 * ends in any way, so an interrupted test run leaves no servers behind.
 *
 * The binaries come from `options.binaryDir`, else `KUBEBUILDER_ASSETS`, else the build of
 * `./dev controlplane`; without any, it throws an error that says how to get them.
 *
 * @example
 * ```ts
 * import { CoreV1Api } from "@kubernetes/client-node";
 * import { startControlPlane } from "@capi-ts/testing";
 *
 * const api = await startControlPlane();
 * try {
 *   await api.installCRDs("crds/capi");
 *   const core = api.kubeConfig.makeApiClient(CoreV1Api);
 *   await core.createNamespacedSecret({ namespace: "default", body: { metadata: { name: "s" } } });
 * } finally {
 *   await api.stop();
 * }
 * ```
 */
export async function startControlPlane(options: ControlPlaneOptions = {}): Promise<ControlPlane> {
  const binaries = requireControlPlaneBinaries(options.binaryDir);
  if (options.controllerManager === true && !binaries.kubeControllerManager) {
    throw new Error(
      `startControlPlane({ controllerManager: true }): there is no kube-controller-manager next to ${binaries.kubeApiServer}. Run \`./dev controlplane\` to build it, or leave the option out to run without one (no garbage collector, no namespace controller).`,
    );
  }
  const startTimeoutMs = options.startTimeoutMs ?? 120_000;
  const graceMs = options.stopGraceMs ?? 5_000;
  const layout = await prepareDataDir();

  let etcd: GuardedProcess | undefined;
  let apiServer: GuardedProcess | undefined;
  let ports: Ports | undefined;
  let args: string[] = [];
  const target: RawTarget = { url: "", ca: "", token: layout.token };
  const auditLog = join(layout.dataDir, "audit.log");
  const auditReader = new AuditLogReader(auditLog);

  const startApiServer = async (deadline: number) => {
    const server = GuardedProcess.start(
      "kube-apiserver",
      binaries.kubeApiServer,
      args,
      join(layout.dataDir, "kube-apiserver.log"),
      graceMs,
    );
    apiServer = server;
    const certFile = join(layout.certDir, "apiserver.crt");
    await waitUntil(server, deadline, "serving", async () => {
      if (!target.ca) {
        if (!existsSync(certFile)) return false;
        target.ca = await readFile(certFile, "utf8");
      }
      const response = await rawRequest(target, "GET", "/readyz", undefined, 2_000);
      return response.status === 200;
    });
  };

  try {
    // A port found free can be taken before the server binds it: start again on new ports then.
    for (let attempt = 1; ; attempt++) {
      const deadline = Date.now() + startTimeoutMs;
      ports = {
        etcdClient: await freePort(),
        etcdPeer: await freePort(),
        apiServer: await freePort(),
      };
      target.url = `https://127.0.0.1:${ports.apiServer}`;
      target.ca = "";
      args = apiServerArgs(layout, ports, [
        ...(options.requestLog
          ? auditArgs(join(layout.dataDir, "audit-policy.yaml"), auditLog)
          : []),
        ...(options.apiServerArgs ?? []),
      ]);
      try {
        const etcdPorts = ports;
        etcd = GuardedProcess.start(
          "etcd",
          binaries.etcd,
          etcdArgs(layout, ports, options.etcdArgs ?? []),
          join(layout.dataDir, "etcd.log"),
          graceMs,
          // etcd stops last, so its guardian clears the data folder when the test process died.
          options.keepDataDir ? "" : layout.dataDir,
        );
        await waitUntil(etcd, deadline, "healthy", () => etcdHealthy(etcdPorts.etcdClient));
        await startApiServer(deadline);
        break;
      } catch (error) {
        await apiServer?.stop();
        await etcd?.stop();
        if (!(error instanceof StartError && error.portClash && attempt < 3)) throw error;
        await rm(join(layout.dataDir, "etcd"), { recursive: true, force: true });
      }
    }
  } catch (error) {
    if (!options.keepDataDir) await rm(layout.dataDir, { recursive: true, force: true });
    throw error;
  }

  const versionResponse = await rawRequest(target, "GET", "/version");
  const versionBody = versionResponse.body as { gitVersion?: unknown };
  const version = typeof versionBody.gitVersion === "string" ? versionBody.gitVersion : "unknown";

  const name = "capi-ts-controlplane";
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromOptions({
    clusters: [
      {
        name,
        server: target.url,
        caData: Buffer.from(target.ca).toString("base64"),
        skipTLSVerify: false,
      },
    ],
    users: [{ name: "capi-ts-admin", token: layout.token }],
    contexts: [{ name, cluster: name, user: "capi-ts-admin" }],
    currentContext: name,
  });

  const kubeconfigText = (user = "capi-ts-admin", token = layout.token) =>
    dump({
      apiVersion: "v1",
      kind: "Config",
      clusters: [
        {
          name,
          cluster: {
            server: target.url,
            "certificate-authority-data": Buffer.from(target.ca).toString("base64"),
          },
        },
      ],
      users: [{ name: user, user: { token } }],
      contexts: [{ name, context: { cluster: name, user } }],
      "current-context": name,
    });
  const writeKubeconfig = async (path: string) => {
    await mkdir(dirname(path), { recursive: true });
    await writeFile(path, kubeconfigText(), { mode: 0o600 });
  };

  let capiCore: RealCapiCore | undefined;
  let controllerManager: GuardedProcess | undefined;
  let stopped: Promise<void> | undefined;
  const stop = () => {
    stopped ??= (async () => {
      await capiCore?.stop();
      await controllerManager?.stop();
      await apiServer?.stop();
      await etcd?.stop();
      if (!options.keepDataDir) await rm(layout.dataDir, { recursive: true, force: true });
    })();
    return stopped;
  };

  const controllerManagerBinary = binaries.kubeControllerManager;
  if (controllerManagerBinary && options.controllerManager !== false) {
    const kubeconfigFile = join(layout.dataDir, "kube-controller-manager.kubeconfig");
    try {
      await mkdir(dirname(kubeconfigFile), { recursive: true });
      await writeFile(
        kubeconfigFile,
        kubeconfigText(CONTROLLER_MANAGER_USER, layout.controllerManagerToken),
        { mode: 0o600 },
      );
      controllerManager = await startControllerManager(
        controllerManagerBinary,
        kubeconfigFile,
        layout.dataDir,
        graceMs,
        Date.now() + startTimeoutMs,
        options.controllerManagerArgs ?? [],
      );
    } catch (error) {
      await stop();
      throw error;
    }
  }

  if (options.capiCore) {
    const kubeconfigFile = join(layout.dataDir, "kubeconfig");
    try {
      await writeKubeconfig(kubeconfigFile);
      capiCore = await startRealCapiCore(
        target,
        kubeconfigFile,
        layout.dataDir,
        binaries,
        options.capiCore === true ? {} : options.capiCore,
        options.capiRelease ?? realCapiRelease(),
      );
    } catch (error) {
      await stop();
      throw error;
    }
  }

  return {
    backend: "real",
    capabilities: Object.freeze({
      ...REAL_CAPABILITIES,
      requestLog: options.requestLog === true,
      controllers: controllerManager !== undefined,
    }),
    controllerManagerLog: controllerManager?.logFile,
    kubeConfig,
    url: target.url,
    version,
    dataDir: layout.dataDir,
    binaries,
    capiCore,
    writeKubeconfig,
    installCRDs: (crds) => installCRDsOn(target, crds),
    async pauseEtcd(ms: number) {
      if (stopped || !etcd) throw new Error("pauseEtcd(): this control plane is not running.");
      await etcd.pause(ms);
    },
    async restart() {
      if (stopped) throw new Error("restart(): this control plane was stopped; start a new one.");
      await apiServer?.stop();
      await startApiServer(Date.now() + startTimeoutMs);
    },
    requests() {
      if (!options.requestLog) {
        throw new Error(
          "requests(): this control plane keeps no request log; start it with startControlPlane({ requestLog: true }).",
        );
      }
      return auditReader.records();
    },
    clearRequests() {
      auditReader.clear();
    },
    stop,
  };
}
