import { readFileSync } from "node:fs";
import { type ConditionInput, setCondition } from "@capi-ts/sdk/conditions";
import {
  isAlreadyExists,
  isNotFound,
  type KubeClient,
  type KubeconfigSource,
  type ObjectKey,
  type ResourceDescriptor,
  SecretResource,
} from "@capi-ts/sdk/runtime";
import type { KubernetesObject } from "@kubernetes/client-node";
import { dump } from "js-yaml";
import { ClusterResource } from "./types.js";

/** The Secret type CAPI gives the secrets it owns for a Cluster (kubeconfig, CA, …). */
const CLUSTER_SECRET_TYPE = "cluster.x-k8s.io/secret";

/**
 * A kubeconfig (YAML) that reaches the current context of `kubeConfig` with its credentials, as a
 * control plane provider writes into `<cluster>-kubeconfig`.
 */
export function kubeconfigYaml(kubeConfig: KubeconfigSource, name = "workload"): string {
  const cluster = kubeConfig.getCurrentCluster();
  const user = kubeConfig.getCurrentUser();
  if (!cluster) throw new Error("kubeconfigYaml: the KubeConfig has no current cluster");
  // Flattened, as a control plane provider writes it: files become data (a ClusterCache reads none).
  const clusterEntry: Record<string, unknown> = { server: cluster.server };
  const caData = cluster.caData ?? fileData(cluster.caFile);
  if (caData) clusterEntry["certificate-authority-data"] = caData;
  if (cluster.skipTLSVerify) clusterEntry["insecure-skip-tls-verify"] = true;
  const userEntry: Record<string, unknown> = {};
  if (user?.token) userEntry.token = user.token;
  const certData = user?.certData ?? fileData(user?.certFile);
  const keyData = user?.keyData ?? fileData(user?.keyFile);
  if (certData) userEntry["client-certificate-data"] = certData;
  if (keyData) userEntry["client-key-data"] = keyData;
  if (user?.username) userEntry.username = user.username;
  if (user?.password) userEntry.password = user.password;
  return dump({
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name, cluster: clusterEntry }],
    users: [{ name: `${name}-admin`, user: userEntry }],
    contexts: [{ name, context: { cluster: name, user: `${name}-admin` } }],
    "current-context": name,
  });
}

function fileData(path: string | undefined): string | undefined {
  return path ? readFileSync(path).toString("base64") : undefined;
}

/**
 * CAPD's test infrastructure kind (its CRD ships with this package): the InfraCluster of the
 * Clusters {@link markWorkloadClusterReady} provisions.
 */
export const DevClusterResource: ResourceDescriptor<KubernetesObject> = {
  group: "infrastructure.cluster.x-k8s.io",
  version: "v1beta2",
  kind: "DevCluster",
  plural: "devclusters",
  scope: "Namespaced",
  subresources: { status: true },
};

/**
 * Plays the infrastructure provider of a Cluster whose `spec.infrastructureRef` is a DevCluster: the
 * DevCluster exists, its `spec.controlPlaneEndpoint` is the workload cluster's API server, and it
 * reports `status.initialization.provisioned`. Real core's Cluster controller reads it (a Cluster whose
 * provisioned infrastructure went missing is a reconcile error there). Nothing happens for another kind,
 * or where DevClusterResource are not served.
 */
async function standInInfrastructure(
  client: KubeClient,
  namespace: string,
  infrastructureRef: { apiGroup?: string; kind?: string; name?: string } | undefined,
  workload: KubeconfigSource,
): Promise<void> {
  if (
    infrastructureRef?.apiGroup !== DevClusterResource.group ||
    infrastructureRef.kind !== DevClusterResource.kind ||
    !infrastructureRef.name
  ) {
    return;
  }
  const server = new URL(workload.getCurrentCluster()?.server ?? "https://127.0.0.1:6443");
  const key = { namespace, name: infrastructureRef.name };
  try {
    await client.create(DevClusterResource, {
      apiVersion: `${DevClusterResource.group}/${DevClusterResource.version}`,
      kind: DevClusterResource.kind,
      metadata: key,
      spec: {
        backend: { docker: {} },
        controlPlaneEndpoint: {
          host: server.hostname,
          port: Number(server.port || (server.protocol === "https:" ? 443 : 80)),
        },
      },
    } as KubernetesObject);
  } catch (error) {
    if (isNotFound(error)) return; // the kind is not served here
    if (!isAlreadyExists(error)) throw error;
  }
  await client.mergePatchStatus(DevClusterResource, key, {
    status: { initialization: { provisioned: true } },
  });
}

/** Options of {@link markWorkloadClusterReady}. */
export interface WorkloadClusterOptions {
  /**
   * Write the `<cluster>-kubeconfig` Secret. Default true; false leaves the Cluster without one, as
   * when the control plane provider has not written it yet (core then cannot reach the cluster).
   */
  kubeconfigSecret?: boolean;
}

/**
 * Makes a Cluster look to CAPI core as it does once its infrastructure and control plane are up, the
 * part of a cluster's life that a test of an InfraMachinePool provider does not run: writes the
 * `<cluster>-kubeconfig` Secret (key `value`, type `cluster.x-k8s.io/secret`, the cluster-name label)
 * pointing at `workload`, and sets `status.initialization.{infrastructureProvisioned,
 * controlPlaneInitialized}` and the `InfrastructureReady` and `ControlPlaneInitialized` conditions.
 * A DevCluster `spec.infrastructureRef` is made to exist and report itself provisioned (the
 * infrastructure provider's part, which real core's Cluster controller reads and then sets the
 * Cluster's status from).
 * Real core's ClusterCache connects to the workload cluster only then, and its MachinePool controller
 * reads Nodes (and so sets nodeRefs and ready replicas) through it. The workload cluster may be the
 * management cluster itself, as in CAPI's own envtest suites.
 *
 * @param client - a client of the management cluster
 * @param cluster - the Cluster (it must exist)
 * @param workload - how to reach the workload cluster's API server
 * @example
 * ```ts
 * const cp = await startControlPlane({ capiCore: true });
 * const client = new KubeClient(cp.kubeConfig);
 * await client.create(ClusterResource, cluster);
 * await markWorkloadClusterReady(client, { namespace: "default", name: "c1" }, cp.kubeConfig);
 * ```
 */
export async function markWorkloadClusterReady(
  client: KubeClient,
  cluster: ObjectKey,
  workload: KubeconfigSource,
  options: WorkloadClusterOptions = {},
): Promise<void> {
  const namespace = cluster.namespace ?? "default";
  if (options.kubeconfigSecret ?? true) {
    const secret = {
      apiVersion: "v1",
      kind: "Secret",
      type: CLUSTER_SECRET_TYPE,
      metadata: {
        name: `${cluster.name}-kubeconfig`,
        namespace,
        labels: { "cluster.x-k8s.io/cluster-name": cluster.name },
      },
      data: { value: Buffer.from(kubeconfigYaml(workload, cluster.name)).toString("base64") },
    };
    try {
      await client.create(SecretResource, secret);
    } catch (error) {
      if (!isAlreadyExists(error)) throw error;
      const current = await client.get(SecretResource, { namespace, name: secret.metadata.name });
      await client.update(SecretResource, {
        ...secret,
        metadata: { ...secret.metadata, resourceVersion: current.metadata?.resourceVersion },
      });
    }
  }
  const current = await client
    .get(ClusterResource, { namespace, name: cluster.name })
    .catch((error: unknown) => {
      if (isNotFound(error))
        throw new Error(
          `markWorkloadClusterReady: Cluster ${namespace}/${cluster.name} does not exist; create it first`,
        );
      throw error;
    });
  await standInInfrastructure(
    client,
    namespace,
    (current.spec as { infrastructureRef?: { apiGroup?: string; kind?: string; name?: string } })
      ?.infrastructureRef,
    workload,
  );
  const status = { ...(current.status ?? {}) };
  const target = { metadata: current.metadata, status };
  const ready = (type: string, reason: string): ConditionInput => ({
    type,
    status: "True",
    reason,
  });
  setCondition(target, ready("InfrastructureReady", "Ready"));
  setCondition(target, ready("ControlPlaneInitialized", "Initialized"));
  await client.mergePatchStatus(
    ClusterResource,
    { namespace, name: cluster.name },
    {
      status: {
        initialization: {
          ...(status.initialization ?? {}),
          infrastructureProvisioned: true,
          controlPlaneInitialized: true,
        },
        conditions: target.status.conditions,
      },
    },
  );
}
