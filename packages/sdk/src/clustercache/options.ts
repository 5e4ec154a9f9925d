/**
 * The options of a {@link ClusterCache}, the host it runs in, and what it hands out: connections and
 * workload cluster events.
 *
 * @module
 */
import type { SharedInformerDefaults } from "../runtime/cache.js";
import type { KubeClient } from "../runtime/client.js";
import type { ControllerHost } from "../runtime/controller.js";
import type { Informer } from "../runtime/informer.js";
import type { ObjectKey } from "../runtime/resource.js";
import type { WorkloadNode } from "./workload-node.js";

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
