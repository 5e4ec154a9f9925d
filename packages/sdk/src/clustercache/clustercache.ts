/**
 * Workload cluster access, CAPI's `ClusterCache` in TypeScript: one client and one Node informer per
 * workload cluster, built from the Cluster's `<cluster>-kubeconfig` Secret (key `value`), created on
 * demand, health-probed, torn down when the Cluster goes away or the Secret changes, and a watch source
 * that re-triggers a controller's reconciles on the workload cluster's Node events.
 *
 * @module
 */
import type {
  KubernetesObject,
  V1NodeCondition,
  V1NodeSpec,
  V1NodeSystemInfo,
  V1ObjectMeta,
  V1Secret,
  V1Taint,
} from "@kubernetes/client-node";
import type { Cluster } from "../api/cluster.x-k8s.io/v1beta2.js";
import { Labels } from "../contract/constants.js";
import { CoreCluster } from "../contract/core-kinds.js";
import { InformerCache, type SharedInformerDefaults } from "../runtime/cache.js";
import { KubeClient } from "../runtime/client.js";
import type { ControllerHost } from "../runtime/controller.js";
import {
  ApiError,
  ConnectionError,
  isNotFound,
  ResponseTooLargeError,
  TimeoutError,
  TlsMaterialError,
  UnauthorizedError,
} from "../runtime/errors.js";
import { compareResourceVersions, type Informer } from "../runtime/informer.js";
import {
  KubeconfigRefusedError,
  MAX_KUBECONFIG_BYTES,
  parseWorkloadKubeconfig,
} from "../runtime/kubeconfig.js";
import type { Kubeconfig } from "../runtime/kubeconfig-loader.js";
import type { RuntimeLogger } from "../runtime/logging.js";
import type { CounterFamily, GaugeFamily } from "../runtime/metric-families.js";
import {
  NodeResource,
  type ObjectKey,
  objectKeyString,
  type ResourceDescriptor,
  resourcePath,
  SecretResource,
} from "../runtime/resource.js";
import type { RawSource, ReconcileRequest } from "../runtime/source.js";

/** Why a workload cluster cannot be reached (a condition reason a controller can publish as is). */
export type WorkloadClusterUnavailableReason =
  /** The `<cluster>-kubeconfig` Secret does not exist (yet: the control plane writes it). */
  | "KubeconfigSecretNotFound"
  /**
   * The Secret exists but has no `value` key, is not a kubeconfig with a current cluster, or asks for
   * something capi-ts refuses (an exec plugin, an auth provider, a file, a proxy, a server that is
   * not `https://`, skipped TLS verification; see the security guide).
   */
  | "KubeconfigSecretInvalid"
  /** The kubeconfig is fine but the API server did not answer, refused it, or its cache did not sync. */
  | "WorkloadClusterUnreachable";

/**
 * The workload cluster of a Cluster cannot be reached. `reason` names why; the message says which
 * Secret or server and what to do, and never carries the Secret's content. `retryAfterMs` is when the
 * {@link ClusterCache} tries again (earlier if the Secret changes).
 */
export class WorkloadClusterUnavailableError extends Error {
  override readonly name = "WorkloadClusterUnavailableError";

  /**
   * @param cluster - the Cluster
   * @param reason - why
   * @param message - what is wrong and what to do (no secret content)
   * @param retryAfterMs - when the next connection attempt is due
   */
  constructor(
    readonly cluster: ObjectKey,
    readonly reason: WorkloadClusterUnavailableReason,
    message: string,
    readonly retryAfterMs: number,
  ) {
    super(message);
  }
}

/** A live connection to one workload cluster. */
export interface WorkloadClusterConnection {
  /** The Cluster. */
  readonly cluster: ObjectKey;
  /** Client of the workload cluster's API server (built from the kubeconfig Secret). */
  readonly client: KubeClient;
  /**
   * The workload cluster's Node informer (synced), indexed by `spec.providerID` under
   * {@link NODE_PROVIDER_ID_INDEX} (as CAPI's ClusterCache indexes Nodes), so a reconcile looks up
   * the Nodes of its own instances instead of listing every Node. It holds each Node's
   * {@link WorkloadNode} projection, never the whole object: read anything else (addresses,
   * capacity, images) with `client`.
   */
  readonly nodes: Informer<WorkloadNode>;
}

/** An event of a workload cluster, as {@link ClusterCache.source} hands it to a map function. */
export interface WorkloadClusterEvent {
  /** The Cluster whose workload cluster it happened in. */
  readonly cluster: ObjectKey;
  /** `node`: a Node was added, changed or deleted; `connected` / `disconnected`: the connection. */
  readonly type: "node" | "connected" | "disconnected";
  /** The Node (for `node` events), as the cache holds it. */
  readonly node?: WorkloadNode;
  /** The Node before the change (for `node` updates), as the cache holds it. */
  readonly oldNode?: WorkloadNode;
}

/** Timings of a {@link ClusterCache} (CAPI core's defaults in brackets where they differ). */
export interface ClusterCacheTimings {
  /** First wait after a failed connection attempt, ms. Default 1,000 [30,000 fixed]. */
  connectionRetryMs?: number;
  /** Longest wait between attempts (the wait doubles after each failure), ms. Default 30,000. */
  maxConnectionRetryMs?: number;
  /** Health probe interval of a live connection, ms. Default 10,000. */
  healthProbeIntervalMs?: number;
  /** Consecutive failed probes that drop a connection. Default 5. */
  healthProbeFailureThreshold?: number;
  /**
   * Deadline of a whole connection attempt (reading the Secret, the first Node list, the Node cache's
   * sync), and of each request of a workload client, ms. Default 10,000 (CAPI's workload client
   * timeout). A second `connect()` during an attempt waits for the same attempt, never longer.
   */
  connectTimeoutMs?: number;
}

/**
 * The management cluster's side of a {@link ClusterCache}: its client reads the kubeconfig Secrets, its
 * cache's Cluster and Secret informers tell when a Cluster goes away or its Secret changes, its
 * metrics get the connection metrics. A `Manager` fits.
 */
export interface ClusterCacheHost
  extends Pick<ControllerHost, "client" | "cache" | "logger" | "metrics"> {
  /**
   * Runs a runnable with the host, stopped when the host stops (a `Manager`'s `add`): the cache adds
   * itself, so its connections close with the manager. A host without it leaves that to
   * {@link ClusterCache.stop}.
   */
  add?(runnable: { readonly name: string; start(): Promise<void>; stop(): Promise<void> }): void;
}

/** Options of {@link ClusterCache}, given at construction. */
export interface ClusterCacheOptions extends ClusterCacheTimings {
  /**
   * Names the cache in logs and as the host's runnable, which must be unique in a manager. Default
   * `clustercache`. A second cache in one manager needs a name of its own, though sharing the first
   * is usually what is wanted.
   */
  readonly name?: string;
  /** Field manager of writes to workload clusters. Default: the management client's. */
  readonly fieldManager?: string;
  /** Informer settings of the workload clusters' Node informers. */
  readonly informer?: SharedInformerDefaults;
  /**
   * Accept a kubeconfig whose cluster sets `insecure-skip-tls-verify: true`. Default false: such a
   * Secret is refused with `KubeconfigSecretInvalid`, since the credentials would go to whoever
   * answers. Only for development clusters without a CA the Secret could carry.
   */
  readonly allowInsecureSkipTLSVerify?: boolean;
  /**
   * Most connections to one workload cluster's server for requests (the Node watch holds one more),
   * shared by the clusters whose kubeconfigs name the same server and TLS identity. Default
   * {@link WORKLOAD_MAX_CONNECTIONS_PER_SERVER}: a workload cluster is read through its Node
   * informer, its requests are few (probes, Node patches, evictions).
   */
  readonly maxConnectionsPerServer?: number;
}

/**
 * Default of {@link ClusterCacheOptions.maxConnectionsPerServer}: one connection for requests and
 * one for the Node watch, so two sockets per workload cluster.
 */
export const WORKLOAD_MAX_CONNECTIONS_PER_SERVER = 1;

interface Connection extends WorkloadClusterConnection {
  readonly cache: InformerCache;
  readonly secretVersion: string;
  readonly stopHandlers: (() => void)[];
  probeTimer: NodeJS.Timeout | undefined;
  probeFailures: number;
}

interface Accessor {
  connection?: Connection;
  connecting?: Promise<Connection>;
  failure?: { error: WorkloadClusterUnavailableError; at: number; secretVersion: string };
  failures: number;
  /** The Secret's resourceVersion as last seen by an event (`deleted` once it is gone). */
  seenSecretVersion?: string;
}

const KUBECONFIG_SUFFIX = "-kubeconfig";

/** Metrics of the connections, with CAPI core's names and labels. */
class ClusterCacheMetrics {
  readonly connectionUp: GaugeFamily<"cluster_name" | "cluster_namespace">;
  readonly healthCheck: GaugeFamily<"cluster_name" | "cluster_namespace">;
  readonly healthChecksTotal: CounterFamily<"cluster_name" | "cluster_namespace" | "status">;
  readonly connectAttempts: CounterFamily<"cluster_name" | "cluster_namespace" | "result">;

  // The families are defined once per manager: a second ClusterCache of it shares their series.
  constructor(metrics: ControllerHost["metrics"]) {
    this.connectionUp = metrics.gauge({
      name: "capi_cluster_cache_connection_up",
      help: "Whether the connection to the cluster is up.",
      labelNames: ["cluster_name", "cluster_namespace"],
    });
    this.healthCheck = metrics.gauge({
      name: "capi_cluster_cache_healthcheck",
      help: "Result of the last clustercache healthcheck for a cluster.",
      labelNames: ["cluster_name", "cluster_namespace"],
    });
    this.healthChecksTotal = metrics.counter({
      name: "capi_cluster_cache_healthchecks_total",
      help: "Results of all clustercache healthchecks.",
      labelNames: ["cluster_name", "cluster_namespace", "status"],
    });
    this.connectAttempts = metrics.counter({
      name: "capi_ts_cluster_cache_connection_attempts_total",
      help: "Connection attempts to workload clusters by result (success or a WorkloadClusterUnavailableReason).",
      labelNames: ["cluster_name", "cluster_namespace", "result"],
    });
  }
}

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
    const attempt = this.openWithin(cluster);
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
  private openWithin(cluster: ObjectKey): Promise<Connection> {
    const abort = new AbortController();
    const where = `Secret ${cluster.namespace ?? ""}/${cluster.name}${KUBECONFIG_SUFFIX}`;
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        abort.abort();
        reject(
          Object.assign(
            new WorkloadClusterUnavailableError(
              cluster,
              "WorkloadClusterUnreachable",
              `the workload cluster of ${where} did not connect within ${this.timeoutMs} ms (connectTimeoutMs); check that its API server answers`,
              0,
            ),
            { secretVersion: "" },
          ),
        );
      }, this.timeoutMs);
    });
    const attempt = this.open(cluster, abort.signal);
    // A late result of an attempt that lost the race is dropped (open stops its cache itself).
    attempt.catch(() => undefined);
    return Promise.race([attempt, deadline]).finally(() => clearTimeout(timer));
  }

  private async open(cluster: ObjectKey, signal: AbortSignal): Promise<Connection> {
    const namespace = cluster.namespace ?? "";
    const secretName = `${cluster.name}${KUBECONFIG_SUFFIX}`;
    const where = `Secret ${namespace}/${secretName}`;
    const unavailable = (
      reason: WorkloadClusterUnavailableReason,
      message: string,
      secretVersion: string,
    ) =>
      Object.assign(new WorkloadClusterUnavailableError(cluster, reason, message, 0), {
        secretVersion,
      });
    let secret: V1Secret;
    try {
      secret = await this.host.client.get(
        SecretResource,
        { namespace, name: secretName },
        { signal },
      );
    } catch (error) {
      if (isNotFound(error)) {
        throw unavailable(
          "KubeconfigSecretNotFound",
          `${where} does not exist: the control plane provider writes it once the workload cluster's API server is up`,
          "",
        );
      }
      throw unavailable(
        "WorkloadClusterUnreachable",
        `cannot read ${where} from the management cluster: ${(error as Error).message}`,
        "",
      );
    }
    const secretVersion = secret.metadata?.resourceVersion ?? "";
    const encoded = secret.data?.value;
    if (encoded === undefined || encoded === "") {
      throw unavailable(
        "KubeconfigSecretInvalid",
        `${where} has no "value" key: put the workload cluster's kubeconfig under data.value`,
        secretVersion,
      );
    }
    // Measured before decoding: base64 is 4 characters per 3 bytes.
    if (
      typeof encoded !== "string" ||
      Math.floor((encoded.length * 3) / 4) > MAX_KUBECONFIG_BYTES + 2
    ) {
      throw unavailable(
        "KubeconfigSecretInvalid",
        `kubeconfig ${where}: data.value is larger than ${MAX_KUBECONFIG_BYTES / 1024 / 1024} MiB; write a kubeconfig with only the workload cluster's context`,
        secretVersion,
      );
    }
    let kubeConfig: Kubeconfig;
    try {
      kubeConfig = parseWorkloadKubeconfig(
        Buffer.from(encoded, "base64").toString("utf8"),
        where,
        this.options.allowInsecureSkipTLSVerify ? { allowInsecureSkipTLSVerify: true } : {},
      );
    } catch (error) {
      // The refusal names the field; anything else (a parser bug) must not leak the content either.
      const message =
        error instanceof KubeconfigRefusedError
          ? error.message
          : `kubeconfig ${where}: data.value is not a valid kubeconfig (YAML with clusters, users, contexts and current-context)`;
      throw unavailable("KubeconfigSecretInvalid", message, secretVersion);
    }
    const server = kubeConfig.getCurrentCluster()?.server ?? "";
    const client = new KubeClient(kubeConfig, {
      fieldManager: this.options.fieldManager ?? this.host.client.fieldManager,
      requestTimeoutMs: this.timeoutMs,
      maxThrottleRetries: 0,
      maxConnectionsPerServer:
        this.options.maxConnectionsPerServer ?? WORKLOAD_MAX_CONNECTIONS_PER_SERVER,
    });
    const cache = new InformerCache({
      client,
      informerDefaults: { ...this.options.informer },
      logger: this.log.child({ cluster: objectKeyString(cluster) }),
    });
    const nodes = cache.informerFor(WorkloadNodeResource, {
      // One table per workload cluster: what one cluster's Nodes send never crowds out another's.
      transform: (
        (strings) => (node: WorkloadNode) =>
          projectWorkloadNode(node, strings.intern)
      )(new StringTable()),
      indexers: { [NODE_PROVIDER_ID_INDEX]: indexNodeByProviderID },
    });
    // Probe first: an informer retries forever, a connection attempt must fail with a reason.
    try {
      await client.request({
        method: "GET",
        path: resourcePath(NodeResource, {}),
        query: { limit: 1 },
        signal,
      });
    } catch (error) {
      client.close();
      if (error instanceof TlsMaterialError) {
        throw unavailable(
          "KubeconfigSecretInvalid",
          `kubeconfig ${where}: ${error.message}`,
          secretVersion,
        );
      }
      throw unavailable(
        "WorkloadClusterUnreachable",
        `the workload cluster's API server ${server} (from ${where}) did not answer a Node list: ${describeWorkloadFailure(error, this.timeoutMs)}`,
        secretVersion,
      );
    }
    if (signal.aborted) {
      client.close();
      throw new Error("connection attempt timed out");
    }
    cache.start();
    const stopOnAbort = () => void cache.stop();
    signal.addEventListener("abort", stopOnAbort, { once: true });
    try {
      await cache.waitForSync(this.timeoutMs);
    } catch {
      await cache.stop();
      client.close();
      throw unavailable(
        "WorkloadClusterUnreachable",
        `the Node cache of the workload cluster ${server} (from ${where}) did not sync within ${this.timeoutMs} ms`,
        secretVersion,
      );
    } finally {
      signal.removeEventListener("abort", stopOnAbort);
    }
    if (this.stopped || signal.aborted) {
      await cache.stop();
      client.close();
      throw new Error(this.stopped ? "ClusterCache is stopped" : "connection attempt timed out");
    }
    const connection: Connection = {
      cluster,
      client,
      nodes,
      cache,
      secretVersion,
      stopHandlers: [],
      probeTimer: undefined,
      probeFailures: 0,
    };
    connection.stopHandlers.push(
      nodes.addEventHandler({
        onAdd: (node) => this.emit({ cluster, type: "node", node }),
        onUpdate: (oldNode, node, meta) => {
          if (!meta.initial) this.emit({ cluster, type: "node", node, oldNode });
        },
        onDelete: (node) => this.emit({ cluster, type: "node", node }),
      }),
    );
    return connection;
  }

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

/**
 * What went wrong talking to a workload cluster, in words of our own: an HTTP code and a well-known
 * reason, a timeout, a connection error's code. Never the server's message or body, which whoever
 * wrote the Secret controls, nor a cause's text (a TLS error quotes the server's certificate).
 */
function describeWorkloadFailure(error: unknown, timeoutMs: number): string {
  if (error instanceof ResponseTooLargeError)
    return "its answer was larger than the client accepts";
  if (error instanceof TimeoutError && error.code === 0) {
    return `no complete answer within ${timeoutMs} ms`;
  }
  if (error instanceof ConnectionError) {
    const code = errorCode(error.cause) ?? errorCode((error.cause as { cause?: unknown })?.cause);
    return code ? `connection failed (${code})` : "connection failed";
  }
  if (error instanceof ApiError) {
    const reason = error.status.reason;
    return `HTTP ${error.code}${reason && KNOWN_REASONS.has(reason) ? ` (${reason})` : ""}`;
  }
  return "request failed";
}

/** A Node error code such as `ECONNREFUSED` or `DEPTH_ZERO_SELF_SIGNED_CERT` (ours to name). */
function errorCode(cause: unknown): string | undefined {
  const code = (cause as { code?: unknown })?.code;
  return typeof code === "string" && /^[A-Z][A-Z0-9_]{1,47}$/.test(code) ? code : undefined;
}

/** `metav1.StatusReason` values: safe to repeat, whoever sent them. */
const KNOWN_REASONS = new Set([
  "Unauthorized",
  "Forbidden",
  "NotFound",
  "AlreadyExists",
  "Conflict",
  "Gone",
  "Invalid",
  "ServerTimeout",
  "Timeout",
  "TooManyRequests",
  "BadRequest",
  "MethodNotAllowed",
  "NotAcceptable",
  "RequestEntityTooLarge",
  "UnsupportedMediaType",
  "InternalError",
  "Expired",
  "ServiceUnavailable",
]);

function keyOf(obj: { metadata?: { namespace?: string; name?: string } }): ObjectKey {
  return { namespace: obj.metadata?.namespace ?? "", name: obj.metadata?.name ?? "" };
}

function labelsOf(cluster: ObjectKey): { cluster_name: string; cluster_namespace: string } {
  return { cluster_name: cluster.name, cluster_namespace: cluster.namespace ?? "" };
}

function positive(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isFinite(value) || value <= 0) {
    throw new RangeError(`ClusterCache: ${name} must be a positive number, got ${value}`);
  }
  return value;
}

/** The index of a workload cluster's Nodes by `spec.providerID` (see {@link WorkloadClusterConnection.nodes}). */
export const NODE_PROVIDER_ID_INDEX = "spec.providerID";

/** Index function: a Node's `spec.providerID`, if it has one. */
export function indexNodeByProviderID(node: WorkloadNode): readonly string[] {
  const id = node.spec?.providerID;
  return id ? [id] : [];
}

/** A Node is Ready: its `Ready` condition is `True`. */
export function isNodeReady(node: WorkloadNode): boolean {
  return node.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") === true;
}

/**
 * A workload cluster's Node as the {@link ClusterCache} keeps it: what the kit and CAPI's contract
 * read (name, providerID, Ready, taints, cordon, labels, the SDK's and CAPI's annotations, the
 * kubelet version), not the whole object. A real Node is mostly its image list, addresses,
 * capacity, daemon endpoints and heartbeats, and a manager holds every Node of every workload
 * cluster it reaches. A `V1Node` is a `WorkloadNode`, so helpers taking one take both.
 */
export interface WorkloadNode extends KubernetesObject {
  /** Name, uid and resourceVersion; all labels; only annotations of {@link WORKLOAD_NODE_ANNOTATION_DOMAINS}. */
  metadata?: Pick<V1ObjectMeta, "name" | "uid" | "resourceVersion" | "labels" | "annotations">;
  /** `providerID`, `unschedulable` (cordon) and `taints`. */
  spec?: Pick<V1NodeSpec, "providerID" | "unschedulable" | "taints">;
  /** The conditions (without heartbeats) and the kubelet's version. */
  status?: {
    /** Type, status, reason, message and transition time of each condition. */
    conditions?: V1NodeCondition[];
    /** Only the kubelet's version. */
    nodeInfo?: Pick<V1NodeSystemInfo, "kubeletVersion">;
  };
}

/**
 * The domains whose Node annotations a {@link WorkloadNode} keeps (each with its subdomains): the
 * SDK's own records on a Node (`capi-ts.io/labels-from-pool`, `capi-ts.io/taints-from-pool`) and
 * CAPI core's (`cluster.x-k8s.io/machine`, `cluster.x-k8s.io/cluster-name`, …). Others (a CNI's,
 * the volume controllers') are dropped at ingest.
 */
export const WORKLOAD_NODE_ANNOTATION_DOMAINS: readonly string[] = [
  "capi-ts.io",
  "cluster.x-k8s.io",
];

/** Core v1 Node, read into the {@link WorkloadNode} shape by the ClusterCache's transform. */
const WorkloadNodeResource: ResourceDescriptor<WorkloadNode> = NodeResource;

/**
 * The {@link WorkloadNode} of a Node as the workload cluster's API server sent it: new objects of
 * the kept fields only, so nothing else of the response stays reachable. The answer is the
 * workload cluster's, which whoever controls that cluster writes: a field of the wrong type is
 * dropped, not trusted. `intern` maps the label values and the condition texts, which repeat from
 * Node to Node, to one copy each (the ClusterCache passes a bounded table per workload cluster).
 *
 * @example
 * ```ts
 * const slim = projectWorkloadNode(await client.get(NodeResource, { name: "node-1" }));
 * ```
 */
export function projectWorkloadNode(
  node: WorkloadNode,
  intern: (value: string) => string = (value) => value,
): WorkloadNode {
  const metadata = node.metadata;
  const spec = node.spec;
  const status = node.status;
  const projected: WorkloadNode = {
    apiVersion: "v1",
    kind: "Node",
    metadata: {
      ...stringField("name", metadata?.name),
      ...stringField("uid", metadata?.uid),
      ...stringField("resourceVersion", metadata?.resourceVersion),
      ...mapField("labels", metadata?.labels, () => true, intern),
      ...mapField("annotations", metadata?.annotations, isKeptAnnotation, intern),
    },
  };
  if (spec !== undefined && spec !== null) {
    const taints = Array.isArray(spec.taints) ? spec.taints.filter(isTaint).map(copyTaint) : [];
    projected.spec = {
      ...stringField("providerID", spec.providerID),
      ...(spec.unschedulable === true ? { unschedulable: true } : {}),
      ...(taints.length > 0 ? { taints } : {}),
    };
  }
  if (status !== undefined && status !== null) {
    const conditions = Array.isArray(status.conditions)
      ? status.conditions.filter(isCondition).map((c) => copyCondition(c, intern))
      : [];
    const kubeletVersion = status.nodeInfo?.kubeletVersion;
    projected.status = {
      ...(conditions.length > 0 ? { conditions } : {}),
      ...(typeof kubeletVersion === "string"
        ? { nodeInfo: { kubeletVersion: intern(kubeletVersion) } }
        : {}),
    };
  }
  return projected;
}

function stringField<K extends string>(key: K, value: unknown): { [P in K]?: string } {
  return (typeof value === "string" ? { [key]: value } : {}) as { [P in K]?: string };
}

function mapField<K extends string>(
  key: K,
  value: unknown,
  keep: (key: string) => boolean,
  intern: (value: string) => string,
): { [P in K]?: Record<string, string> } {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return {};
  const copy: Record<string, string> = {};
  let kept = 0;
  for (const [k, v] of Object.entries(value)) {
    if (typeof v === "string" && keep(k)) {
      copy[k] = intern(v);
      kept++;
    }
  }
  return (kept > 0 ? { [key]: copy } : {}) as { [P in K]?: Record<string, string> };
}

function isKeptAnnotation(key: string): boolean {
  const slash = key.indexOf("/");
  if (slash < 0) return false;
  const domain = key.slice(0, slash);
  return WORKLOAD_NODE_ANNOTATION_DOMAINS.some((d) => domain === d || domain.endsWith(`.${d}`));
}

function isTaint(taint: unknown): taint is V1Taint {
  const t = taint as V1Taint | null;
  return typeof t?.key === "string" && typeof t.effect === "string";
}

function copyTaint(taint: V1Taint): V1Taint {
  return {
    key: taint.key,
    effect: taint.effect,
    ...(typeof taint.value === "string" ? { value: taint.value } : {}),
    ...(taint.timeAdded !== undefined ? { timeAdded: taint.timeAdded } : {}),
  };
}

function isCondition(condition: unknown): condition is V1NodeCondition {
  const c = condition as V1NodeCondition | null;
  return typeof c?.type === "string" && typeof c.status === "string";
}

/** Without `lastHeartbeatTime`: the kubelet bumps it every few seconds and nothing reads it. */
function copyCondition(
  condition: V1NodeCondition,
  intern: (value: string) => string,
): V1NodeCondition {
  const text = (value: unknown) => (typeof value === "string" ? intern(value) : undefined);
  const reason = text(condition.reason);
  const message = text(condition.message);
  const since = condition.lastTransitionTime;
  return {
    type: intern(condition.type),
    status: intern(condition.status),
    ...(reason !== undefined ? { reason } : {}),
    ...(message !== undefined ? { message } : {}),
    // Typed a Date by client-node; on the wire (and so here) it is the RFC 3339 text.
    ...(since !== undefined
      ? { lastTransitionTime: (typeof since === "string" ? intern(since) : since) as Date }
      : {}),
  };
}

/** What one workload cluster's table holds at most: strings, characters, and one string's length. */
const INTERN_MAX_STRINGS = 4096;
const INTERN_MAX_CHARACTERS = 128 * 1024;
const INTERN_MAX_LENGTH = 512;

/**
 * A table that hands back one copy of each string it has seen. The strings are the workload
 * cluster's, so it is bounded (at most {@link INTERN_MAX_STRINGS} strings and
 * {@link INTERN_MAX_CHARACTERS} characters; a string longer than {@link INTERN_MAX_LENGTH} is
 * returned as it came), and it starts over when full: strings that never repeat (hostnames,
 * transition times) cannot pin it, and the ones that do come back on their next use. Starting over
 * frees only the table's own references; Nodes already projected keep theirs.
 */
export class StringTable {
  private table = new Map<string, string>();
  private held = 0;

  /** The table's copy of `value` (`value` itself the first time it is seen). */
  readonly intern = (value: string): string => {
    if (value.length > INTERN_MAX_LENGTH) return value;
    const known = this.table.get(value);
    if (known !== undefined) return known;
    if (this.table.size >= INTERN_MAX_STRINGS || this.held + value.length > INTERN_MAX_CHARACTERS) {
      this.table = new Map();
      this.held = 0;
    }
    this.table.set(value, value);
    this.held += value.length;
    return value;
  };

  /** Strings and characters the table holds now. */
  get size(): { strings: number; characters: number } {
    return { strings: this.table.size, characters: this.held };
  }
}
