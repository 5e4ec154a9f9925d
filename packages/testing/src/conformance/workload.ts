/**
 * Workload-cluster scenarios: what a provider must do when the workload cluster behind a Cluster's
 * `<cluster>-kubeconfig` Secret does not answer, when that Secret is rotated, and when Nodes join late.
 * They run on both judges with the same bodies; the judge only decides how credentials are issued
 * and revoked ({@link WorkloadAccessIssuer}).
 *
 * @module
 */
import { randomBytes } from "node:crypto";
import { request as httpsRequest } from "node:https";
import { createServer, type Server, type Socket, connect as tcpConnect } from "node:net";
import {
  EventResource,
  isAlreadyExists,
  type KubeClient,
  type ResourceDescriptor,
  SecretResource,
} from "@capi-ts/sdk/runtime";
import { KubeConfig, type KubernetesObject } from "@kubernetes/client-node";
import { kubeconfigYaml, markWorkloadClusterReady } from "../capi/index.js";
import { ConformanceError, type ConformancePoolObject } from "./invariants.js";
import { WORKLOAD_CLUSTER_SCENARIOS, type WorkloadClusterScenario } from "./scenario-ids.js";
import { scaled } from "./time-scale.js";
import type { ConformanceCore, ConformancePool, ConformanceProvider } from "./types.js";

/** The Node join delay of `nodesJoinLate`, wall milliseconds. */
export const LATE_NODE_JOIN_MS = 500;

/** Credentials of their own for the workload cluster, which the judge can revoke. */
export interface WorkloadAccess {
  /** A kubeconfig with these credentials, for the workload cluster's server or `server` (a relay). */
  kubeConfig(server?: string): KubeConfig;
  /** Revokes the credentials: the workload cluster answers 401 to them from now on. */
  revoke(): Promise<void>;
}

/** Issues workload-cluster credentials; see {@link realWorkloadAccess} and {@link openWorkloadAccess}. */
export interface WorkloadAccessIssuer {
  /** Whether revoked credentials are refused (a real kube-apiserver: yes; the in-memory one: no). */
  readonly revocable: boolean;
  /** New credentials. */
  issue(): Promise<WorkloadAccess>;
}

/** A kubeconfig for `server` with a bearer token, trusting `base`'s CA (if any). */
function tokenKubeConfig(
  base: KubeConfig,
  server: string,
  token: string,
  name: string,
): KubeConfig {
  const cluster = base.getCurrentCluster();
  if (!cluster) throw new Error("conformance: the workload KubeConfig has no current cluster");
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromOptions({
    clusters: [
      {
        name,
        server,
        ...(cluster.caData ? { caData: cluster.caData } : {}),
        ...(cluster.caFile ? { caFile: cluster.caFile } : {}),
        skipTLSVerify: cluster.skipTLSVerify,
      },
    ],
    users: [{ name: `${name}-user`, token }],
    contexts: [{ name, cluster: name, user: `${name}-user` }],
    currentContext: name,
  });
  return kubeConfig;
}

/**
 * The in-memory API server authenticates nobody: a token is only content of the Secret, and revoking
 * it changes nothing (the scenarios close the old address instead).
 */
export function openWorkloadAccess(workload: KubeConfig): WorkloadAccessIssuer {
  let seq = 0;
  return {
    revocable: false,
    issue: async () => {
      const n = ++seq;
      const token = `capi-ts-workload-${n}-${randomBytes(8).toString("hex")}`;
      const server = workload.getCurrentCluster()?.server ?? "";
      return {
        kubeConfig: (at = server) => tokenKubeConfig(workload, at, token, `workload-${n}`),
        revoke: async () => undefined,
      };
    },
  };
}

const ClusterRoleBindings: ResourceDescriptor<KubernetesObject> = {
  group: "rbac.authorization.k8s.io",
  version: "v1",
  kind: "ClusterRoleBinding",
  plural: "clusterrolebindings",
  scope: "Cluster",
  subresources: { status: false },
};

/** The group the workload credentials carry; bound to `cluster-admin` once. */
const WORKLOAD_ADMIN_GROUP = "system:bootstrappers:capi-ts-workload-admin";

/**
 * Credentials of a real kube-apiserver started with `--enable-bootstrap-token-auth`: each is a
 * bootstrap token (a Secret in kube-system, revoked by deleting it) in a group bound to
 * `cluster-admin`, standing in for the client certificate a control plane provider rotates.
 *
 * @param admin - a client of the workload cluster with the right to create Secrets and RBAC
 * @param workload - the workload cluster's admin KubeConfig (its server and CA are reused)
 */
export function realWorkloadAccess(admin: KubeClient, workload: KubeConfig): WorkloadAccessIssuer {
  let bound: Promise<void> | undefined;
  const bind = async () => {
    try {
      await admin.create(ClusterRoleBindings, {
        apiVersion: "rbac.authorization.k8s.io/v1",
        kind: "ClusterRoleBinding",
        metadata: { name: "capi-ts-workload-admin" },
        roleRef: {
          apiGroup: "rbac.authorization.k8s.io",
          kind: "ClusterRole",
          name: "cluster-admin",
        },
        subjects: [
          { apiGroup: "rbac.authorization.k8s.io", kind: "Group", name: WORKLOAD_ADMIN_GROUP },
        ],
      } as KubernetesObject);
    } catch (error) {
      if (!isAlreadyExists(error)) throw error;
    }
  };
  return {
    revocable: true,
    issue: async () => {
      bound ??= bind();
      await bound;
      const id = randomBytes(3).toString("hex");
      const secret = randomBytes(8).toString("hex");
      const key = { namespace: "kube-system", name: `bootstrap-token-${id}` };
      await admin.create(SecretResource, {
        apiVersion: "v1",
        kind: "Secret",
        type: "bootstrap.kubernetes.io/token",
        metadata: key,
        stringData: {
          "token-id": id,
          "token-secret": secret,
          "usage-bootstrap-authentication": "true",
          "auth-extra-groups": WORKLOAD_ADMIN_GROUP,
        },
      });
      const token = `${id}.${secret}`;
      const server = workload.getCurrentCluster()?.server ?? "";
      // The authenticator reads tokens from a Secret informer: wait until it knows this one.
      const probe = tokenKubeConfig(workload, server, token, "probe");
      const deadline = Date.now() + scaled(10_000);
      for (;;) {
        const response = await fetchWith(probe, "/api/v1/nodes?limit=1").catch(() => 0);
        if (response === 200) break;
        if (Date.now() > deadline) {
          throw new Error(
            `conformance: the workload cluster does not accept a new bootstrap token (last status ${response}); start it with --enable-bootstrap-token-auth`,
          );
        }
        await sleep(100);
      }
      return {
        kubeConfig: (at = server) => tokenKubeConfig(workload, at, token, `workload-${id}`),
        revoke: async () => {
          await admin.delete(SecretResource, key);
          for (const end = Date.now() + scaled(10_000); Date.now() < end; ) {
            if ((await fetchWith(probe, "/api/v1/nodes?limit=1").catch(() => 0)) === 401) return;
            await sleep(100);
          }
          throw new Error(
            "conformance: a deleted bootstrap token is still accepted after 10 s (scaled by load)",
          );
        },
      };
    },
  };
}

/** The status of a GET through `kubeConfig` (its CA and token). */
async function fetchWith(kubeConfig: KubeConfig, path: string): Promise<number> {
  const cluster = kubeConfig.getCurrentCluster();
  const user = kubeConfig.getCurrentUser();
  const url = new URL(path, cluster?.server);
  return await new Promise<number>((resolve, reject) => {
    const req = httpsRequest(
      url,
      {
        method: "GET",
        headers: { authorization: `Bearer ${user?.token ?? ""}` },
        ...(cluster?.caData ? { ca: Buffer.from(cluster.caData, "base64") } : {}),
        timeout: 5_000,
      },
      (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      },
    );
    req.on("error", reject);
    req.on("timeout", () => req.destroy(new Error("timeout")));
    req.end();
  });
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * A TCP relay on 127.0.0.1 in front of the workload cluster's API server: a second address for it
 * that the suite can make unresponsive (`hangup`: every connection is accepted and closed at once,
 * nothing is ever answered), cut (live connections dropped), or close. It counts connections, which
 * is how the suite sees a client's retry rate. TLS passes through untouched: the server's
 * certificate names 127.0.0.1, whatever the port.
 */
export class WorkloadRelay {
  /** Connections accepted so far. */
  connections = 0;
  /** `forward` to the target, or `hangup`. */
  mode: "forward" | "hangup";
  readonly #server: Server;
  readonly #sockets = new Set<Socket>();
  readonly #target: URL;

  private constructor(target: URL, mode: "forward" | "hangup") {
    this.#target = target;
    this.mode = mode;
    this.#server = createServer((socket) => this.#accept(socket));
  }

  /**
   * Listens on a free port of 127.0.0.1.
   *
   * @param target - the server URL to relay to (`http(s)://127.0.0.1:PORT`)
   * @param mode - what to do with connections
   */
  static async start(target: string, mode: "forward" | "hangup"): Promise<WorkloadRelay> {
    const relay = new WorkloadRelay(new URL(target), mode);
    await new Promise<void>((resolve, reject) => {
      relay.#server.once("error", reject);
      relay.#server.listen(0, "127.0.0.1", () => resolve());
    });
    return relay;
  }

  /** The relay's URL: the target's scheme with the relay's port. */
  get url(): string {
    const address = this.#server.address();
    const port = typeof address === "object" && address ? address.port : 0;
    return `${this.#target.protocol}//127.0.0.1:${port}`;
  }

  #accept(socket: Socket): void {
    this.connections++;
    if (this.mode === "hangup") {
      socket.destroy();
      return;
    }
    const upstream = tcpConnect(Number(this.#target.port), this.#target.hostname);
    this.#sockets.add(socket);
    this.#sockets.add(upstream);
    const drop = () => {
      socket.destroy();
      upstream.destroy();
      this.#sockets.delete(socket);
      this.#sockets.delete(upstream);
    };
    socket.on("error", drop).on("close", drop);
    upstream.on("error", drop).on("close", drop);
    socket.pipe(upstream).pipe(socket);
  }

  /** Drops every live connection (new ones are still accepted). */
  cut(): void {
    for (const socket of this.#sockets) socket.destroy();
    this.#sockets.clear();
  }

  /** Stops listening and drops every connection. */
  async close(): Promise<void> {
    this.cut();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}

/** What the workload-cluster scenarios need of the suite (the harness fills it in). */
export interface WorkloadScenarioHost {
  /** The management cluster, as the suite writes it. */
  readonly client: KubeClient;
  /** The InfraMachinePool kind under test. */
  readonly pools: ResourceDescriptor<ConformancePoolObject>;
  /** The workload cluster's admin KubeConfig (the Nodes live there). */
  readonly workloadKubeConfig: KubeConfig;
  /** How credentials of the workload cluster are issued and revoked on this judge. */
  readonly access: WorkloadAccessIssuer;
  /** Which core judges. */
  readonly core: ConformanceCore;
  /** The provider under test. */
  readonly provider: ConformanceProvider;
  /** The suite's convergence timeout. */
  readonly convergeMs: number;
  /** Creates a Cluster carrying the suite's watch filter (no Secret, not ready yet). */
  createCluster(name: string): Promise<void>;
  /** Creates a pool in `cluster`. */
  createPool(replicas: number, cluster: string): Promise<ConformancePool>;
  /** Sets the MachinePool's replicas. */
  setReplicas(pool: ConformancePool, replicas: number): Promise<void>;
  /** Waits until converged as core sees it. */
  converged(pool: ConformancePool, replicas: number, timeoutMs?: number): Promise<void>;
  /** Deletes the pool and waits until it is gone with its cloud resources. */
  deletePool(pool: ConformancePool): Promise<void>;
  /** Polls `check` (undefined = satisfied, else the reason) until it passes or times out. */
  until(what: string, check: () => Promise<string | undefined>, timeoutMs?: number): Promise<void>;
  /** Ready Nodes of the pool's live instances, read in the workload cluster. */
  readyNodes(pool: ConformancePool): Promise<number>;
  /** Creates a pool, rolls every instance, checking the availability floor throughout; deletes it. */
  rollout(replicas: number): Promise<void>;
}

/** A workload-cluster scenario: id, title, why it is skipped, body. */
export interface WorkloadScenario {
  /** Scenario id. */
  readonly id: WorkloadClusterScenario;
  /** What it checks. */
  readonly title: string;
  /** Why it cannot run with this provider, or undefined. */
  skipReason(): string | undefined;
  /** The body. */
  run(): Promise<void>;
}

/** Real core retries a failed connection every 30 s and drops a dead one after 5 probes 10 s apart. */
const REAL_CORE_RECONNECT_MS = 35_000;

/**
 * The three workload-cluster scenarios over `host`.
 *
 * - `workloadUnreachable`: a Cluster whose Secret names an address that accepts connections and
 *   closes them unanswered; its pool must report Ready=False with reason `WorkloadClusterUnreachable`,
 *   neither the Ready message nor the pool's Events may carry the Secret's credentials, the provider
 *   (with core) may open at most 2 connections a second to it (backoff, not a hot loop), and the pool
 *   converges once the Secret names the workload cluster again.
 * - `kubeconfigRotation`: a converged pool; its Cluster's Secret is rotated to new credentials at a new
 *   address; the old credentials are revoked (real kube-apiserver) and the old address's connections
 *   cut, or the old address closed (in-memory, where tokens are not checked); the pool must then
 *   scale up to 2 with both Nodes seen Ready through the new Secret by the provider and by core.
 * - `nodesJoinLate`: with the cloud's Nodes joining {@link LATE_NODE_JOIN_MS} after boot
 *   (`cloud.actors.setNodeJoinDelay`), a template rollout of 3 keeps Ready Nodes in the workload
 *   cluster ≥ replicas − maxUnavailable at every step (`rollout.availability`).
 */
export function workloadClusterScenarios(
  host: () => WorkloadScenarioHost,
  options: { hasTemplateChange: boolean; joinDelayActor: () => boolean },
): WorkloadScenario[] {
  const slack = () => (host().core === "real" ? REAL_CORE_RECONNECT_MS : 0);
  return [
    {
      id: "workloadUnreachable",
      title: WORKLOAD_CLUSTER_SCENARIOS[0].title,
      skipReason: () => undefined,
      run: () => unreachable(host(), slack()),
    },
    {
      id: "kubeconfigRotation",
      title: WORKLOAD_CLUSTER_SCENARIOS[1].title,
      skipReason: () => undefined,
      run: () => rotation(host(), slack()),
    },
    {
      id: "nodesJoinLate",
      title: WORKLOAD_CLUSTER_SCENARIOS[2].title,
      skipReason: () =>
        !options.hasTemplateChange
          ? "no templateChange option"
          : options.joinDelayActor()
            ? undefined
            : "cloud.actors.setNodeJoinDelay missing",
      run: () => nodesJoinLate(host()),
    },
  ];
}

/** Strings of a kubeconfig that must never show in a status or Event: credentials and the whole. */
function secretContent(kubeConfig: KubeConfig): string[] {
  const user = kubeConfig.getCurrentUser();
  const yaml = kubeconfigYaml(kubeConfig);
  return [
    user?.token,
    user?.password,
    user?.certData,
    user?.keyData,
    yaml,
    Buffer.from(yaml).toString("base64"),
  ].filter((s): s is string => typeof s === "string" && s.length >= 8);
}

async function writeKubeconfig(
  host: WorkloadScenarioHost,
  cluster: string,
  kubeConfig: KubeConfig,
) {
  await markWorkloadClusterReady(host.client, { namespace: "default", name: cluster }, kubeConfig);
}

async function unreachable(host: WorkloadScenarioHost, slack: number): Promise<void> {
  const cluster = "conformance-unreachable";
  const server = host.workloadKubeConfig.getCurrentCluster()?.server ?? "";
  const relay = await WorkloadRelay.start(server, "hangup");
  try {
    const access = await host.access.issue();
    const dead = access.kubeConfig(relay.url);
    await host.createCluster(cluster);
    await writeKubeconfig(host, cluster, dead);
    const pool = await host.createPool(1, cluster);
    let message = "";
    // A connection attempt to a server that never answers may take the client's whole timeout.
    await host.until(
      `${pool.name} to report Ready=False (WorkloadClusterUnreachable)`,
      async () => {
        const imp = await host.client.get(host.pools, {
          namespace: pool.namespace,
          name: pool.name,
        });
        const ready = imp.status?.conditions?.find((c) => c.type === "Ready");
        if (ready?.status === "False" && ready.reason === "WorkloadClusterUnreachable") {
          message = ready.message ?? "";
          return undefined;
        }
        return `workload.unreachableReason: Ready is ${ready ? `${ready.status} (${ready.reason}: ${ready.message ?? ""})` : "missing"}; a pool whose workload cluster does not answer must say Ready=False with reason WorkloadClusterUnreachable`;
      },
      host.convergeMs + 15_000,
    );
    const secrets = secretContent(dead);
    const events = await host.client.list(EventResource, { namespace: pool.namespace });
    const said = [
      { where: "the Ready message", text: message },
      ...events.items
        .filter((e) => e.involvedObject?.name === pool.name)
        .map((e) => ({ where: `Event ${e.reason}`, text: e.message ?? "" })),
    ];
    for (const { where, text } of said) {
      if (secrets.some((s) => text.includes(s))) {
        throw new ConformanceError(
          "workload.noSecretInMessages",
          `${where} of ${pool.name} carries content of the kubeconfig Secret (a credential): report where the workload cluster is and why it failed, never the Secret's data`,
        );
      }
    }
    // Backoff: the provider (and core, each on its own schedule) must not hammer a dead server.
    const windowMs = 4_000;
    const before = relay.connections;
    await sleep(windowMs);
    const attempts = relay.connections - before;
    const allowed = (windowMs / 1000) * 2;
    if (attempts > allowed) {
      throw new ConformanceError(
        "workload.backoff",
        `${attempts} connections to the unreachable workload cluster in ${windowMs} ms (at most ${allowed}): retry a failed workload cluster with a growing backoff, not on every reconcile`,
      );
    }
    // Recovery: the Secret names a server that answers again.
    await writeKubeconfig(host, cluster, access.kubeConfig());
    await host.converged(pool, 1, host.convergeMs + slack);
    await host.deletePool(pool);
  } finally {
    await relay.close();
  }
}

async function rotation(host: WorkloadScenarioHost, slack: number): Promise<void> {
  const cluster = "conformance-rotation";
  const server = host.workloadKubeConfig.getCurrentCluster()?.server ?? "";
  const relay = await WorkloadRelay.start(server, "forward");
  try {
    const before = await host.access.issue();
    await host.createCluster(cluster);
    await writeKubeconfig(host, cluster, before.kubeConfig(relay.url));
    const pool = await host.createPool(1, cluster);
    await host.converged(pool, 1, host.convergeMs + slack);
    // Rotation: new credentials at another address of the same workload cluster.
    const after = await host.access.issue();
    await writeKubeconfig(host, cluster, after.kubeConfig());
    if (host.access.revocable) {
      // The old credentials stop working and every connection made with them is dropped: a client
      // that kept them sees 401 on its next request, as after a real rotation once they expire.
      await before.revoke();
      relay.cut();
    } else {
      await relay.close();
    }
    await host.setReplicas(pool, 2);
    try {
      await host.converged(pool, 2, host.convergeMs + slack);
    } catch (error) {
      if (!(error instanceof ConformanceError)) throw error;
      throw new ConformanceError(
        "workload.kubeconfigRotation",
        `after the kubeconfig Secret of ${cluster} was rotated (new credentials, new address; the old ones dead), ${error.message}; reconnect to the workload cluster when its Secret changes or its credentials are refused`,
      );
    }
    const ready = await host.readyNodes(pool);
    if (ready !== 2) {
      throw new ConformanceError(
        "workload.kubeconfigRotation",
        `${ready} of 2 Nodes Ready in the workload cluster after the rotation`,
      );
    }
    await host.deletePool(pool);
  } finally {
    await relay.close();
  }
}

async function nodesJoinLate(host: WorkloadScenarioHost): Promise<void> {
  const setDelay = host.provider.cloud.actors?.setNodeJoinDelay;
  if (!setDelay) return;
  await setDelay(LATE_NODE_JOIN_MS);
  try {
    await host.rollout(3);
  } finally {
    await setDelay(undefined);
  }
}
