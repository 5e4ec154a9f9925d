/**
 * The ClusterCache's connection metrics, with CAPI core's names and labels.
 *
 * @module
 */
import type { ControllerHost } from "../runtime/controller.js";
import type { CounterFamily, GaugeFamily } from "../runtime/metric-families.js";
import type { ObjectKey } from "../runtime/resource.js";

/** Metrics of the connections, with CAPI core's names and labels. */
export class ClusterCacheMetrics {
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

/** The labels of a Cluster's series. */
export function labelsOf(cluster: ObjectKey): { cluster_name: string; cluster_namespace: string } {
  return { cluster_name: cluster.name, cluster_namespace: cluster.namespace ?? "" };
}
