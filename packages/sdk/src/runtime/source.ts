/**
 * What a controller's sources deliver: the {@link ReconcileRequest} (the key of a primary object), and
 * the {@link RawSource} seam, through which something other than a management-cluster informer (a
 * workload cluster's Nodes, a timer, a cloud's event stream) feeds a controller's queue, as
 * controller-runtime's `source.Source` of `WatchesRawSource` does.
 *
 * @module
 */

/** What to reconcile: the key of the primary object. */
export interface ReconcileRequest {
  /** Namespace (absent for cluster-scoped kinds). */
  namespace?: string;
  /** Name. */
  name: string;
}

/**
 * A watch source fed by something other than a management-cluster informer: a controller adds it with
 * `ControllerBuilder.watchesRawSource`, and it calls `enqueue` with the requests to reconcile.
 */
export interface RawSource {
  /** Starts delivering; returns the function that stops it. */
  start(enqueue: (requests: readonly ReconcileRequest[]) => void): () => void;
}
