import type { ManagerOptions, RuntimeLogger } from "@capi-ts/sdk";
import {
  InformerCache,
  type InformerHandler,
  KubeClient,
  NodeResource,
  type ObjectKey,
  type ReconcileResult,
  UnauthorizedError,
} from "@capi-ts/sdk/runtime";
import { KubeConfig, type V1Node } from "@kubernetes/client-node";
import type { ClusterObject } from "./types.js";

/** The text of core's `clustercache.ErrClusterNotConnected`, which reconcile errors end with. */
export const CLUSTER_NOT_CONNECTED = "connection to the workload cluster is down";

/**
 * Core's `ErrClusterNotConnected` with the message prefix core puts in front of it (`error getting
 * client`, `error creating watch machinepool-watchNodes for *v1.Node`).
 */
export class ClusterNotConnectedError extends Error {
  constructor(prefix: string) {
    super(`${prefix}: ${CLUSTER_NOT_CONNECTED}`);
    this.name = "ClusterNotConnectedError";
  }
}

/**
 * Timings of the emulated core's ClusterCache (core's defaults in brackets): `CapiCoreOptions.clusterCache`.
 * Not the SDK's `ClusterCacheTimings` (`@capi-ts/sdk/clustercache`), which a provider's own cache takes.
 */
export interface CoreClusterCacheTimings {
  /** Wait after a failed connection attempt before the next one, ms [30,000]. */
  connectionRetryMs: number;
  /** Interval of the health probe of a connected workload cluster, ms [10,000]. */
  healthProbeIntervalMs: number;
  /** Consecutive failed probes that disconnect [5]. */
  healthProbeFailureThreshold: number;
  /** Timeout of the initial sync of a new connection's Node cache, ms [core: 5 min]. */
  initialSyncTimeoutMs: number;
}

/** One live connection: a client and a Node cache built from the kubeconfig Secret. */
export interface WorkloadConnection {
  /** Client of the workload cluster (writes to Nodes go through it). */
  readonly client: KubeClient;
  /** Cache of the workload cluster's Nodes (core's cached client reads Nodes from an informer). */
  readonly cache: InformerCache;
}

interface Connection extends WorkloadConnection {
  cache: InformerCache;
  /** resourceVersion of the Secret the connection was built from. */
  secretVersion: string;
  watches: Set<string>;
  stopHandlers: (() => void)[];
}

interface Accessor {
  connection?: Connection;
  lastConnectErrorAt?: number;
  /** resourceVersion of the Secret (if any) the last failed attempt used. */
  failedWithSecret?: string | undefined;
  lastProbeAt?: number;
  /** When a connect or health probe last succeeded (core's `LastProbeSuccessTime`), ms since the epoch. */
  lastProbeSuccessAt?: number;
  failures: number;
}

/** Core's `HealthCheckingState` of one Cluster's connection. */
export interface HealthCheckingState {
  /** When a connect or probe last succeeded, ms since the epoch; undefined when never. */
  lastProbeSuccessTime?: number;
  /** Failed connects and probes since the last success. */
  consecutiveFailures: number;
}

export interface ClusterCacheDeps {
  /** Reads `<cluster>-kubeconfig` Secrets (core reads them through a cached secret client). */
  getSecret: (key: ObjectKey) => Promise<
    | {
        metadata?: { resourceVersion?: string };
        data?: Record<string, string>;
      }
    | undefined
  >;
  getCluster: (key: ObjectKey) => Promise<ClusterObject | undefined>;
  /** Called after a connect or disconnect: core sends the Cluster to its controllers' cluster source. */
  onConnectionChange: (cluster: ObjectKey) => void;
  fieldManager: string;
  informer?: ManagerOptions["informer"];
  timings: CoreClusterCacheTimings;
  log: RuntimeLogger;
}

function keyString(key: ObjectKey): string {
  return `${key.namespace ?? ""}/${key.name}`;
}

/**
 * CAPI core's `ClusterCache` for the emulator: one accessor per Cluster, connected only once
 * `status.initialization.infrastructureProvisioned` is true, through the `<cluster>-kubeconfig` Secret
 * (key `value`); a connection is a client plus a Node informer of that workload cluster. Connection
 * attempts are retried every `connectionRetryMs` and health-probed every `healthProbeIntervalMs`, as core
 * does. Unlike core, a change of the Secret also drops the connection at once (core notices a rotated
 * kubeconfig only through an unauthorized probe), so a test can point a Cluster elsewhere, and a new or
 * changed Secret is tried at once instead of after the retry interval.
 */
export class WorkloadClusterCache {
  private readonly deps: ClusterCacheDeps;
  private readonly accessors = new Map<string, Accessor>();
  private stopped = false;

  constructor(deps: ClusterCacheDeps) {
    this.deps = deps;
  }

  /** True while a connection to the Cluster's workload cluster is up. */
  connected(cluster: ObjectKey): boolean {
    return this.accessors.get(keyString(cluster))?.connection !== undefined;
  }

  /** Core's `GetHealthCheckingState`: when the workload cluster last answered, and failures since. */
  healthCheckingState(cluster: ObjectKey): HealthCheckingState {
    const accessor = this.accessors.get(keyString(cluster));
    const state: HealthCheckingState = { consecutiveFailures: accessor?.failures ?? 0 };
    if (accessor?.lastProbeSuccessAt !== undefined)
      state.lastProbeSuccessTime = accessor.lastProbeSuccessAt;
    return state;
  }

  /** Core's `GetClient`: the connection, or `error getting client: connection to the workload cluster is down`. */
  getClient(cluster: ObjectKey): WorkloadConnection {
    const connection = this.accessors.get(keyString(cluster))?.connection;
    if (!connection) throw new ClusterNotConnectedError("error getting client");
    return connection;
  }

  /**
   * Core's `Watch` of Nodes: adds `handler` to the connection's Node informer once per watch name and
   * connection; fails with core's message while disconnected.
   */
  watchNodes(cluster: ObjectKey, name: string, handler: InformerHandler<V1Node>): void {
    const connection = this.accessors.get(keyString(cluster))?.connection;
    if (!connection) {
      throw new ClusterNotConnectedError(`error creating watch ${name} for *v1.Node`);
    }
    if (connection.watches.has(name)) return;
    connection.watches.add(name);
    connection.stopHandlers.push(
      connection.cache.informerFor(NodeResource).addEventHandler(handler),
    );
  }

  /** The ClusterCache reconciler: connect, probe, disconnect; returns when to look again. */
  async reconcile(key: ObjectKey): Promise<ReconcileResult | undefined> {
    const id = keyString(key);
    const cluster = await this.deps.getCluster(key);
    if (!cluster) {
      await this.disconnect(key, "Cluster has been deleted");
      this.accessors.delete(id);
      return undefined;
    }
    let accessor = this.accessors.get(id);
    if (!accessor) {
      accessor = { failures: 0 };
      this.accessors.set(id, accessor);
    }
    // Core waits for a new Cluster event: there is no point connecting before the infrastructure exists.
    if (cluster.status?.initialization?.infrastructureProvisioned !== true) return undefined;

    const { timings } = this.deps;
    const secret = await this.deps.getSecret({
      namespace: key.namespace ?? "",
      name: `${key.name}-kubeconfig`,
    });
    if (
      accessor.connection &&
      accessor.connection.secretVersion !== secret?.metadata?.resourceVersion
    ) {
      await this.disconnect(key, "kubeconfig Secret changed");
    }
    // A new or changed Secret is worth an immediate attempt (core would wait out its retry interval).
    const secretVersion = secret?.metadata?.resourceVersion;
    if (secretVersion !== accessor.failedWithSecret) accessor.lastConnectErrorAt = undefined;
    const delays: number[] = [];
    if (!accessor.connection) {
      const since =
        accessor.lastConnectErrorAt === undefined
          ? Infinity
          : Date.now() - accessor.lastConnectErrorAt;
      if (since < timings.connectionRetryMs) {
        delays.push(timings.connectionRetryMs - since);
      } else {
        try {
          accessor.connection = await this.connect(key, secret);
          accessor.lastProbeAt = Date.now();
          accessor.lastProbeSuccessAt = accessor.lastProbeAt;
          accessor.failures = 0;
          this.deps.log.info({ cluster: id }, "connected to the workload cluster");
          this.deps.onConnectionChange(key);
          delays.push(timings.healthProbeIntervalMs);
        } catch (error) {
          accessor.lastConnectErrorAt = Date.now();
          accessor.failedWithSecret = secretVersion;
          accessor.lastProbeAt = Date.now();
          accessor.failures++;
          this.deps.log.info(
            { cluster: id, err: error },
            "connection to the workload cluster failed; retrying later",
          );
          delays.push(timings.connectionRetryMs);
        }
      }
    } else {
      const since = Date.now() - (accessor.lastProbeAt ?? 0);
      if (since < timings.healthProbeIntervalMs) {
        delays.push(timings.healthProbeIntervalMs - since);
      } else {
        const unauthorized = await this.probe(accessor);
        if (unauthorized || accessor.failures >= timings.healthProbeFailureThreshold) {
          await this.disconnect(key, unauthorized ? "unauthorized" : "health probe failed");
          delays.push(unauthorized ? 1 : timings.connectionRetryMs);
        } else {
          delays.push(timings.healthProbeIntervalMs);
        }
      }
    }
    // Core falls back to 10 s when nothing asked for an earlier look.
    return { requeueAfter: Math.max(1, delays.length > 0 ? Math.min(...delays) : 10_000) };
  }

  private async probe(accessor: Accessor): Promise<boolean> {
    const connection = accessor.connection as Connection;
    accessor.lastProbeAt = Date.now();
    try {
      await connection.client.list(NodeResource, { limit: 1 });
      accessor.failures = 0;
      accessor.lastProbeSuccessAt = accessor.lastProbeAt;
      return false;
    } catch (error) {
      accessor.failures++;
      return error instanceof UnauthorizedError;
    }
  }

  private async connect(
    key: ObjectKey,
    secret: { metadata?: { resourceVersion?: string }; data?: Record<string, string> } | undefined,
  ): Promise<Connection> {
    const secretName = `${key.name}-kubeconfig`;
    if (!secret) {
      throw new Error(
        `error creating REST config: error getting kubeconfig secret: secrets "${secretName}" not found`,
      );
    }
    const encoded = secret.data?.value;
    if (encoded === undefined) {
      throw new Error(
        `error creating REST config: error getting kubeconfig secret: missing key "value" in secret data`,
      );
    }
    const kubeConfig = new KubeConfig();
    try {
      kubeConfig.loadFromString(Buffer.from(encoded, "base64").toString("utf8"));
    } catch (error) {
      throw new Error(
        `error creating REST config: error parsing kubeconfig: ${error instanceof Error ? error.message : String(error)}`,
      );
    }
    // Core's createRESTConfig refuses credential plugins (CAPI v1.14): a tenant's Secret must not run code.
    const user = kubeConfig.getCurrentUser();
    if (user?.exec || user?.authProvider) {
      throw new Error(
        "error creating REST config: kubeconfig uses an exec or auth provider, which are not supported",
      );
    }
    const client = new KubeClient(kubeConfig, {
      fieldManager: this.deps.fieldManager,
      requestTimeoutMs: 10_000,
    });
    // Core checks that the API server answers before it builds a cache (its health probe timeout, 5 s):
    // an informer would retry a dead server until the initial sync timeout, holding the reconcile.
    const probe = new KubeClient(kubeConfig, {
      fieldManager: this.deps.fieldManager,
      requestTimeoutMs: 5_000,
      maxThrottleRetries: 0,
    });
    try {
      await probe.list(NodeResource, { limit: 1 });
    } catch (error) {
      throw new Error(
        `error creating HTTP client and mapper: cluster is not reachable: ${error instanceof Error ? error.message : String(error)}`,
      );
    }
    const cache = new InformerCache({
      client,
      informerDefaults: { ...this.deps.informer },
      logger: this.deps.log,
    });
    cache.informerFor(NodeResource);
    cache.start();
    try {
      await cache.waitForSync(this.deps.timings.initialSyncTimeoutMs);
    } catch (error) {
      await cache.stop();
      throw new Error(
        `error when waiting for cache to sync: ${error instanceof Error ? error.message : String(error)}`,
      );
    }
    if (this.stopped) {
      await cache.stop();
      throw new Error("ClusterCache is shutdown");
    }
    return {
      client,
      cache,
      secretVersion: secret.metadata?.resourceVersion ?? "",
      watches: new Set(),
      stopHandlers: [],
    };
  }

  private async disconnect(key: ObjectKey, why: string): Promise<void> {
    const accessor = this.accessors.get(keyString(key));
    const connection = accessor?.connection;
    if (!accessor || !connection) return;
    accessor.connection = undefined;
    for (const stop of connection.stopHandlers) stop();
    await connection.cache.stop();
    this.deps.log.info({ cluster: keyString(key), why }, "disconnected from the workload cluster");
    this.deps.onConnectionChange(key);
  }

  /** Closes every connection. */
  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all(
      [...this.accessors.values()].map(async (accessor) => {
        const connection = accessor.connection;
        accessor.connection = undefined;
        if (connection) await connection.cache.stop();
      }),
    );
    this.accessors.clear();
  }
}
