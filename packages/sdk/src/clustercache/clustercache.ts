/**
 * Workload cluster access, CAPI's `ClusterCache` in TypeScript: one client and one Node informer per
 * workload cluster, built from the Cluster's `<cluster>-kubeconfig` Secret (key `value`), created on
 * demand, health-probed, torn down when the Cluster goes away or the Secret changes, and a watch source
 * that re-triggers a controller's reconciles on the workload cluster's Node events.
 *
 * @module
 */
import type { V1Secret } from "@kubernetes/client-node";
import type { Cluster } from "../api/cluster.x-k8s.io/v1beta2.js";
import { Labels } from "../contract/constants.js";
import { CoreCluster } from "../contract/core-kinds.js";
import type { KubeClient } from "../runtime/client.js";
import { UnauthorizedError } from "../runtime/errors.js";
import { compareResourceVersions } from "../runtime/informer-types.js";
import type { RuntimeLogger } from "../runtime/logging.js";
import {
  NodeResource,
  type ObjectKey,
  objectKeyString,
  SecretResource,
} from "../runtime/resource.js";
import type { RawSource, ReconcileRequest } from "../runtime/source.js";
import {
  type Accessor,
  type ConnectContext,
  type Connection,
  connectWithin,
  KUBECONFIG_SUFFIX,
} from "./connect.js";
import { ClusterCacheMetrics, labelsOf } from "./metrics.js";
import type {
  ClusterCacheHost,
  ClusterCacheOptions,
  WorkloadClusterConnection,
  WorkloadClusterEvent,
} from "./options.js";
import { WorkloadClusterUnavailableError } from "./unavailable.js";

/**
 * Workload cluster access for any controller, as CAPI core's `ClusterCache`: {@link ClusterCache.connect}
 * returns the Cluster's connection — a {@link KubeClient} and a synced Node informer of its workload
 * cluster, built from the `<cluster>-kubeconfig` Secret — or throws a
 * {@link WorkloadClusterUnavailableError} naming why. Connections are made on first use, probed every
 * `healthProbeIntervalMs` (dropped after `healthProbeFailureThreshold` failures, or at once on 401),
 * and torn down when the Cluster is deleted or its kubeconfig Secret changes or goes away. A failed
 * attempt is not repeated before its backoff ends (1 s doubling to 30 s), unless the Secret changes.
 * {@link ClusterCache.source} re-triggers reconciles on Node events and on connection changes.
 *
 * Build one per manager with its options, and hand it to every controller that reaches workload
 * clusters — the kit (`MachinePoolControllerOptions.clusterCache`) and a provider's own controllers —
 * as CAPI's `main.go` hands its ClusterCache to each reconciler: each workload cluster then gets one
 * connection and one Node informer, whoever reads it. Nothing is shared behind the caller's back: two
 * caches are two sets of connections. A cache adds itself to the manager, which closes its connections
 * when it stops.
 *
 * Metrics (in the host's registry): `capi_cluster_cache_connection_up`,
 * `capi_cluster_cache_healthcheck`, `capi_cluster_cache_healthchecks_total` (CAPI core's names) and
 * `capi_ts_cluster_cache_connection_attempts_total{result}`, each labelled by `cluster_name` and
 * `cluster_namespace`.
 *
 * @example
 * ```ts
 * const clusters = new ClusterCache(manager, { connectTimeoutMs: 5_000 });
 * machinePoolController(driver, { manager, kind: FooMachinePool, clusterCache: clusters });
 * manager.controller("foo")
 *   .for(FooResource)
 *   .watchesRawSource(clusters.source((event) => poolsOfCluster(event.cluster)))
 *   .complete(async (request) => {
 *     const { nodes } = await clusters.connect({ namespace: request.namespace, name: "c1" });
 *     const ready = nodes.list().filter(isNodeReady);
 *   });
 * ```
 */
export class ClusterCache {
  /** The name of the cache ({@link ClusterCacheOptions.name}). */
  readonly name: string;
  private readonly host: ClusterCacheHost;
  private readonly options: ClusterCacheOptions;
  private readonly log: RuntimeLogger;
  private readonly metrics: ClusterCacheMetrics;
  private readonly accessors = new Map<string, Accessor>();
  private readonly listeners = new Set<(event: WorkloadClusterEvent) => void>();
  private readonly retryMs: number;
  private readonly maxRetryMs: number;
  private readonly probeMs: number;
  private readonly probeThreshold: number;
  private readonly timeoutMs: number;
  private readonly connectContext: ConnectContext;
  private stopped = false;

  /**
   * Creates the cache with its options, adds it to the host (a `Manager`: it closes the connections
   * when it stops), and subscribes to the host's Cluster and kubeconfig Secret events. Connections are
   * made on first use. Throws a `RangeError` for a timing that is not a positive number, and an
   * `Error` when the manager already runs a cache of this name.
   *
   * @param host - the management cluster's side; a `Manager`
   * @param options - timings and settings; every one has a default
   */
  constructor(host: ClusterCacheHost, options: ClusterCacheOptions = {}) {
    this.host = host;
    this.options = options;
    this.name = options.name ?? "clustercache";
    if (typeof this.name !== "string" || this.name === "") {
      throw new TypeError("ClusterCache: name must be a non-empty string");
    }
    this.log = host.logger.child({
      component: "clustercache",
      ...(options.name !== undefined ? { clusterCache: this.name } : {}),
    });
    this.retryMs = positive("connectionRetryMs", options.connectionRetryMs, 1_000);
    this.maxRetryMs = positive("maxConnectionRetryMs", options.maxConnectionRetryMs, 30_000);
    this.probeMs = positive("healthProbeIntervalMs", options.healthProbeIntervalMs, 10_000);
    this.probeThreshold = positive(
      "healthProbeFailureThreshold",
      options.healthProbeFailureThreshold,
      5,
    );
    this.timeoutMs = positive("connectTimeoutMs", options.connectTimeoutMs, 10_000);
    this.connectContext = {
      managementClient: host.client,
      options,
      timeoutMs: this.timeoutMs,
      log: this.log,
      isStopped: () => this.stopped,
      emit: (event) => this.emit(event),
    };
    if (host.add) {
      try {
        host.add({ name: this.name, start: async () => {}, stop: () => this.stop() });
      } catch (error) {
        throw new Error(
          `ClusterCache: the manager already runs a runnable named "${this.name}" (another ClusterCache?): pass that one to every controller that needs it, or give this one another name`,
          { cause: error },
        );
      }
    }
    this.metrics = new ClusterCacheMetrics(host.metrics);
    const cache = host.cache;
    cache.informerFor(CoreCluster).addEventHandler({
      onDelete: (cluster: Cluster) => void this.disconnect(keyOf(cluster), "Cluster deleted", true),
    });
    const secretChanged = (secret: V1Secret) => {
      const name = secret.metadata?.name ?? "";
      if (!name.endsWith(KUBECONFIG_SUFFIX)) return;
      const cluster = {
        namespace: secret.metadata?.namespace ?? "",
        name: name.slice(0, -KUBECONFIG_SUFFIX.length),
      };
      const accessor = this.accessors.get(objectKeyString(cluster));
      if (!accessor) return;
      const version = secret.metadata?.resourceVersion ?? "";
      accessor.seenSecretVersion = version === "deleted" ? undefined : version;
      if (accessor.connection && accessor.connection.secretVersion !== version) {
        void this.disconnect(cluster, "kubeconfig Secret changed", false);
      }
      // A changed Secret is worth an attempt at once: forget the backoff and tell the controllers.
      if (accessor.failure && accessor.failure.secretVersion !== version) {
        accessor.failure = undefined;
        accessor.failures = 0;
        this.emit({ cluster, type: "disconnected" });
      }
    };
    // The kit's bootstrap Secret watch uses the same selector: one informer serves both.
    cache
      .informerFor(SecretResource, { labelSelector: Labels.ClusterName }, "the ClusterCache")
      .addEventHandler({
        onAdd: (secret, meta) => {
          if (!meta.initial) secretChanged(secret);
        },
        onUpdate: (_old, secret) => secretChanged(secret),
        onDelete: (secret) =>
          secretChanged({
            ...secret,
            metadata: { ...secret.metadata, resourceVersion: "deleted" },
          }),
      });
  }

  /** The live connection of a Cluster, if there is one (never connects). */
  get(cluster: ObjectKey): WorkloadClusterConnection | undefined {
    return this.accessors.get(objectKeyString(cluster))?.connection;
  }

  /**
   * The connection to a Cluster's workload cluster, made now if there is none. Throws a
   * {@link WorkloadClusterUnavailableError} when the Secret is missing or invalid or the server does
   * not answer — the same error again, without a new attempt, until its backoff ends.
   */
  async connect(cluster: ObjectKey): Promise<WorkloadClusterConnection> {
    if (this.stopped) throw new Error("ClusterCache is stopped");
    const id = objectKeyString(cluster);
    let accessor = this.accessors.get(id);
    if (!accessor) {
      accessor = { failures: 0 };
      this.accessors.set(id, accessor);
    }
    if (accessor.connection) return accessor.connection;
    if (accessor.connecting) return accessor.connecting;
    const failure = accessor.failure;
    if (failure) {
      const wait = this.backoffMs(accessor.failures) - (Date.now() - failure.at);
      if (wait > 0) {
        throw new WorkloadClusterUnavailableError(
          failure.error.cluster,
          failure.error.reason,
          failure.error.message,
          wait,
        );
      }
    }
    const attempt = connectWithin(this.connectContext, cluster);
    accessor.connecting = attempt;
    const labels = labelsOf(cluster);
    try {
      const connection = await attempt;
      const seen = accessor.seenSecretVersion;
      if (seen !== undefined && compareResourceVersions(seen, connection.secretVersion) === 1) {
        // The Secret changed while this connection was being built from its older version.
        await connection.cache.stop();
        accessor.connecting = undefined;
        return await this.connect(cluster);
      }
      accessor.connection = connection;
      accessor.failure = undefined;
      accessor.failures = 0;
      this.metrics.connectAttempts.inc({ ...labels, result: "success" });
      this.metrics.connectionUp.set(labels, 1);
      this.metrics.healthCheck.set(labels, 1);
      this.log.info({ cluster: id }, "connected to the workload cluster");
      this.startProbe(cluster, connection);
      this.emit({ cluster, type: "connected" });
      return connection;
    } catch (error) {
      if (!(error instanceof WorkloadClusterUnavailableError)) throw error;
      accessor.failures++;
      const retryAfterMs = this.backoffMs(accessor.failures);
      const failed = new WorkloadClusterUnavailableError(
        cluster,
        error.reason,
        error.message,
        retryAfterMs,
      );
      accessor.failure = {
        error: failed,
        at: Date.now(),
        secretVersion: (error as { secretVersion?: string }).secretVersion ?? "",
      };
      this.metrics.connectAttempts.inc({ ...labels, result: error.reason });
      this.metrics.connectionUp.set(labels, 0);
      this.log.info(
        { cluster: id, reason: error.reason, retryAfterMs, msg: error.message },
        "workload cluster unavailable; retrying later",
      );
      throw failed;
    } finally {
      accessor.connecting = undefined;
    }
  }

  /**
   * A watch source for `ControllerBuilder.watchesRawSource`: every Node event of every connected
   * workload cluster, and every connect and disconnect, is passed to `map`, whose requests are
   * enqueued. `map` errors are logged and the event dropped.
   */
  source(
    map: (
      event: WorkloadClusterEvent,
    ) => readonly ReconcileRequest[] | Promise<readonly ReconcileRequest[]>,
  ): RawSource {
    return {
      start: (enqueue) => {
        const listener = (event: WorkloadClusterEvent) => {
          Promise.resolve()
            .then(() => map(event))
            .then(enqueue, (error: unknown) =>
              this.log.error({ err: error }, "workload cluster event map failed; event dropped"),
            );
        };
        this.listeners.add(listener);
        return () => this.listeners.delete(listener);
      },
    };
  }

  /** Closes every connection. */
  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all([...this.accessors.keys()].map((id) => this.close(id)));
    this.accessors.clear();
    this.listeners.clear();
  }

  private backoffMs(failures: number): number {
    return Math.min(this.maxRetryMs, this.retryMs * 2 ** Math.max(0, failures - 1));
  }

  private emit(event: WorkloadClusterEvent): void {
    for (const listener of this.listeners) {
      try {
        listener(event);
      } catch (error) {
        this.log.error({ err: error }, "workload cluster event listener threw");
      }
    }
  }

  /**
   * One connection attempt, settled within `connectTimeoutMs` whatever the other side does: at the
   * deadline its requests are aborted and a cache it started is stopped.
   */
  private startProbe(cluster: ObjectKey, connection: Connection): void {
    const labels = labelsOf(cluster);
    const probe = async () => {
      let unauthorized = false;
      try {
        await connection.client.list(NodeResource, { limit: 1 });
        connection.probeFailures = 0;
        this.metrics.healthCheck.set(labels, 1);
        this.metrics.healthChecksTotal.inc({ ...labels, status: "success" });
      } catch (error) {
        connection.probeFailures++;
        unauthorized = error instanceof UnauthorizedError;
        this.metrics.healthCheck.set(labels, 0);
        this.metrics.healthChecksTotal.inc({ ...labels, status: "error" });
      }
      if (this.get(cluster) !== connection) return;
      if (unauthorized || connection.probeFailures >= this.probeThreshold) {
        await this.disconnect(
          cluster,
          unauthorized ? "health probe unauthorized" : "health probe failed",
          false,
        );
        return;
      }
      connection.probeTimer = setTimeout(probe, this.probeMs);
      connection.probeTimer.unref();
    };
    connection.probeTimer = setTimeout(probe, this.probeMs);
    connection.probeTimer.unref();
  }

  private async close(id: string): Promise<boolean> {
    const accessor = this.accessors.get(id);
    const connection = accessor?.connection;
    if (!accessor || !connection) return false;
    accessor.connection = undefined;
    if (connection.probeTimer) clearTimeout(connection.probeTimer);
    for (const stop of connection.stopHandlers) stop();
    await connection.cache.stop();
    connection.client.close();
    this.metrics.connectionUp.set(labelsOf(connection.cluster), 0);
    return true;
  }

  private async disconnect(cluster: ObjectKey, why: string, forget: boolean): Promise<void> {
    const id = objectKeyString(cluster);
    const closed = await this.close(id);
    if (forget) {
      this.accessors.delete(id);
      const labels = labelsOf(cluster);
      this.metrics.connectionUp.remove(labels);
      this.metrics.healthCheck.remove(labels);
    }
    if (!closed) return;
    this.log.info({ cluster: id, why }, "disconnected from the workload cluster");
    this.emit({ cluster, type: "disconnected" });
  }
}

function keyOf(obj: { metadata?: { namespace?: string; name?: string } }): ObjectKey {
  return { namespace: obj.metadata?.namespace ?? "", name: obj.metadata?.name ?? "" };
}

function positive(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isFinite(value) || value <= 0) {
    throw new RangeError(`ClusterCache: ${name} must be a positive number, got ${value}`);
  }
  return value;
}
