/**
 * Workload cluster access, as CAPI core's `ClusterCache`: one client and one Node informer per
 * workload cluster, built from the Cluster's `<cluster>-kubeconfig` Secret, and a watch source that
 * re-triggers a controller's reconciles on that cluster's Node events. It sits above the contract
 * layer (it speaks CAPI: the Cluster kind, the cluster-name label, the kubeconfig Secret), as CAPI's
 * sits above controller-runtime, and is handed to whoever needs it: the kit
 * (`MachinePoolControllerOptions.clusterCache`) or a provider's own controller.
 *
 * @example
 * ```ts
 * import { ClusterCache } from "@capi-ts/sdk/clustercache";
 *
 * const clusters = new ClusterCache(manager, { connectTimeoutMs: 5_000 }); // one per manager
 * machinePoolController(fooDriver, { manager, kind: FooMachinePool, clusterCache: clusters });
 * ```
 *
 * @packageDocumentation
 */

// The runtime client the cache hands out. Re-exported so that this entry's declarations import it
// from its shared chunk rather than through another entry (see crd/index.ts).
export type { KubeClient } from "../runtime/client.js";
export { ClusterCache } from "./clustercache.js";
export {
  type ClusterCacheHost,
  type ClusterCacheOptions,
  type ClusterCacheTimings,
  WORKLOAD_MAX_CONNECTIONS_PER_SERVER,
  type WorkloadClusterConnection,
  type WorkloadClusterEvent,
} from "./options.js";
export {
  WorkloadClusterUnavailableError,
  type WorkloadClusterUnavailableReason,
} from "./unavailable.js";
export {
  indexNodeByProviderID,
  isNodeReady,
  NODE_PROVIDER_ID_INDEX,
  projectWorkloadNode,
  WORKLOAD_NODE_ANNOTATION_DOMAINS,
  type WorkloadNode,
} from "./workload-node.js";
