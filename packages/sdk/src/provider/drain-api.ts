/**
 * The kit's {@link NodeDrainApi}: a workload cluster's Nodes and Pods through the `ClusterCache`
 * (the Cluster's kubeconfig Secret, never the management cluster), for the drain before terminate
 * of pools without MachinePool Machines. Nodes are looked up in the cache's Node informer by
 * providerID; Pods are listed by the Node's name; evictions are policy/v1 Evictions.
 *
 * A request the workload cluster does not answer (no connection, a timeout, refused credentials, a
 * 5xx) is a `WorkloadClusterUnavailableError`, as when the cache cannot connect: the drain holds.
 *
 * @module
 */
import type { V1Pod } from "@kubernetes/client-node";
import type { ClusterCache } from "../clustercache/clustercache.js";
import { WorkloadClusterUnavailableError } from "../clustercache/unavailable.js";
import { NODE_PROVIDER_ID_INDEX } from "../clustercache/workload-node.js";
import type { KubeClient } from "../runtime/client.js";
import {
  ConnectionError,
  NotFoundError,
  ServerError,
  TimeoutError,
  TooManyRequestsError,
  UnauthorizedError,
} from "../runtime/errors.js";
import { NodeResource, type ResourceDescriptor, resourcePath } from "../runtime/resource.js";
import { budgetOfRefusal, MAX_DRAIN_PODS, type NodeDrainApi } from "./node-drain.js";

const PodResource: ResourceDescriptor<V1Pod> = {
  group: "",
  version: "v1",
  kind: "Pod",
  plural: "pods",
  scope: "Namespaced",
};

/** A Node name as the API server validates it (a DNS subdomain): safe in a field selector. */
const NODE_NAME = /^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$/;
const PAGE = 250;
/** When a drain that lost the workload cluster mid-request looks again. */
const RETRY_AFTER_MS = 1_000;

/**
 * The drain API of the workload cluster of `cluster`, reached through `clusterCache`.
 *
 * @example
 * ```ts
 * const drain = workloadDrainApi(clusterCache, { namespace: "default", name: "c1" });
 * const node = await drain.nodeOf("aws:///us-east-1a/i-1");
 * ```
 */
export function workloadDrainApi(
  clusterCache: ClusterCache,
  cluster: { namespace: string; name: string },
): NodeDrainApi {
  const client = async <T>(use: (client: KubeClient) => Promise<T>): Promise<T> => {
    const { client } = await clusterCache.connect(cluster);
    try {
      return await use(client);
    } catch (error) {
      if (
        error instanceof ConnectionError ||
        error instanceof TimeoutError ||
        error instanceof UnauthorizedError ||
        error instanceof ServerError
      ) {
        throw new WorkloadClusterUnavailableError(
          cluster,
          "WorkloadClusterUnreachable",
          `the workload cluster of Cluster ${cluster.namespace}/${cluster.name} did not answer a drain request (${error.code || "no answer"} ${error.reason ?? ""}); the drain goes on once it answers`,
          RETRY_AFTER_MS,
        );
      }
      throw error;
    }
  };
  const checkedName = (name: string) => {
    if (!NODE_NAME.test(name)) throw new TypeError(`not a valid Node name: ${name.slice(0, 64)}`);
    return name;
  };
  return {
    async nodeOf(providerID) {
      const { nodes } = await clusterCache.connect(cluster);
      const node = nodes.byIndex(NODE_PROVIDER_ID_INDEX, providerID)[0];
      const name = node?.metadata?.name;
      return name ? { name, unschedulable: node?.spec?.unschedulable === true } : undefined;
    },
    cordon: (name) =>
      client(async (c) => {
        await c.mergePatch(
          NodeResource,
          { name: checkedName(name) },
          { spec: { unschedulable: true } },
        );
      }),
    uncordon: (name) =>
      client(async (c) => {
        try {
          await c.mergePatch(
            NodeResource,
            { name: checkedName(name) },
            { spec: { unschedulable: null } },
          );
        } catch (error) {
          if (!(error instanceof NotFoundError)) throw error;
        }
      }),
    podsOn: (name) =>
      client(async (c) => {
        const pods: V1Pod[] = [];
        let next: string | undefined;
        do {
          const page = await c.list(PodResource, {
            fieldSelector: `spec.nodeName=${checkedName(name)}`,
            limit: PAGE,
            ...(next ? { continue: next } : {}),
          });
          pods.push(...page.items);
          next = page.metadata.continue;
        } while (next && pods.length < MAX_DRAIN_PODS);
        return pods.slice(0, MAX_DRAIN_PODS);
      }),
    evict: (pod) =>
      client(async (c) => {
        try {
          await c.request({
            method: "POST",
            path: resourcePath(PodResource, pod, "eviction"),
            body: {
              apiVersion: "policy/v1",
              kind: "Eviction",
              metadata: { namespace: pod.namespace, name: pod.name },
            },
            contentType: "application/json",
          });
          return { kind: "evicted" };
        } catch (error) {
          if (error instanceof NotFoundError) return { kind: "gone" };
          if (error instanceof TooManyRequestsError) {
            return { kind: "blocked", budget: budgetOfRefusal(error.status.details?.causes) };
          }
          throw error;
        }
      }),
  };
}
