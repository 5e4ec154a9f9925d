// Helpers of the ClusterCache suites: the management cluster's side of a workload cluster.
import { type KubeClient, SecretResource } from "@capi-ts/sdk/runtime";

/**
 * Writes `value` as the `<cluster>-kubeconfig` Secret of `cluster` in `namespace` (labelled as CAPI
 * labels it), creating it or replacing its data.
 */
export async function writeKubeconfigSecret(
  client: KubeClient,
  namespace: string,
  cluster: string,
  value: string | Buffer,
): Promise<void> {
  const name = `${cluster}-kubeconfig`;
  const data = { value: Buffer.from(value).toString("base64") };
  const current = await client.get(SecretResource, { namespace, name }).catch(() => undefined);
  if (current) {
    await client.mergePatch(SecretResource, current, { data });
    return;
  }
  await client.create(SecretResource, {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name, namespace, labels: { "cluster.x-k8s.io/cluster-name": cluster } },
    data,
  });
}
