/**
 * An externally managed control plane for test Clusters (as EKS, AKS or GKE would be): an object of a
 * kind of the tests' own whose `status.externalManagedControlPlane` is true, set as the Cluster's
 * `spec.controlPlaneRef`. Core's Machine controller drains and deletes the Node of a deleted Machine
 * only in a Cluster with control-plane Machines or such a control plane (`isDeleteNodeAllowed`), so a
 * test bed without one never sees a drain.
 *
 * @module
 */
import { isAlreadyExists, type KubeClient, type ResourceDescriptor } from "@capi-ts/sdk/runtime";
import type { KubernetesObject } from "@kubernetes/client-node";

/** The kind of {@link setExternalControlPlane}'s objects (`controlplane.cluster.x-k8s.io/v1beta2`). */
export const ExternalControlPlanes: ResourceDescriptor<KubernetesObject> = {
  group: "controlplane.cluster.x-k8s.io",
  version: "v1beta2",
  kind: "ExternalControlPlane",
  plural: "externalcontrolplanes",
  scope: "Namespaced",
  subresources: { status: true },
};

/** The CRD of {@link ExternalControlPlanes}, with the contract label core resolves a `controlPlaneRef` by. */
export function externalControlPlaneCrd(): Record<string, unknown> {
  const { group, kind, plural, version } = ExternalControlPlanes;
  return {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name: `${plural}.${group}`, labels: { "cluster.x-k8s.io/v1beta2": version } },
    spec: {
      group,
      scope: "Namespaced",
      names: { plural, singular: kind.toLowerCase(), kind, listKind: `${kind}List` },
      versions: [
        {
          name: version,
          served: true,
          storage: true,
          subresources: { status: {} },
          schema: {
            openAPIV3Schema: {
              type: "object",
              properties: {
                apiVersion: { type: "string" },
                kind: { type: "string" },
                metadata: { type: "object" },
                // The contract's versions, which core's preflight checks (and the kit's) read.
                spec: { type: "object", properties: { version: { type: "string" } } },
                status: {
                  type: "object",
                  properties: {
                    version: { type: "string" },
                    externalManagedControlPlane: { type: "boolean" },
                    // The v1beta2 contract's field real core's Cluster controller reads.
                    initialization: {
                      type: "object",
                      properties: { controlPlaneInitialized: { type: "boolean" } },
                    },
                  },
                },
              },
            },
          },
        },
      ],
    },
  };
}

/**
 * Gives a Cluster an externally managed control plane that is up: creates `<cluster>-control-plane`
 * (an {@link ExternalControlPlanes} object, `status.externalManagedControlPlane: true` and
 * `status.initialization.controlPlaneInitialized: true`, carrying `labels`; no `spec.version`, so
 * that no preflight check applies until a test sets one)
 * and sets it as the Cluster's `spec.controlPlaneRef`. Install {@link externalControlPlaneCrd} first.
 *
 * @example
 * ```ts
 * await api.installCRDs([externalControlPlaneCrd()]);
 * await setExternalControlPlane(client, { namespace: "default", name: "c1" });
 * ```
 */
export async function setExternalControlPlane(
  client: KubeClient,
  cluster: { readonly namespace: string; readonly name: string },
  labels: Record<string, string> = {},
): Promise<void> {
  const { group, version, kind } = ExternalControlPlanes;
  const name = `${cluster.name}-control-plane`;
  const key = { namespace: cluster.namespace, name };
  try {
    await client.create(ExternalControlPlanes, {
      apiVersion: `${group}/${version}`,
      kind,
      metadata: { ...key, labels },
      spec: {},
    } as KubernetesObject);
  } catch (error) {
    if (!isAlreadyExists(error)) throw error;
  }
  await client.mergePatchStatus(ExternalControlPlanes, key, {
    status: {
      externalManagedControlPlane: true,
      initialization: { controlPlaneInitialized: true },
    },
  });
  const clusters: ResourceDescriptor<KubernetesObject> = {
    group: "cluster.x-k8s.io",
    version: "v1beta2",
    kind: "Cluster",
    plural: "clusters",
    scope: "Namespaced",
    subresources: { status: true },
  };
  await client.mergePatch(clusters, cluster, {
    spec: { controlPlaneRef: { apiGroup: group, kind, name } },
  });
}

/**
 * The template kind of {@link ExternalControlPlanes} (`ExternalControlPlaneTemplate`), which a
 * ClusterClass's `spec.controlPlane.templateRef` names: core's topology controller stamps the
 * Cluster's control plane out of it and sets its `spec.version`.
 */
export const ExternalControlPlaneTemplates: ResourceDescriptor<KubernetesObject> = {
  group: "controlplane.cluster.x-k8s.io",
  version: "v1beta2",
  kind: "ExternalControlPlaneTemplate",
  plural: "externalcontrolplanetemplates",
  scope: "Namespaced",
};

/** The CRD of {@link ExternalControlPlaneTemplates}, with the contract label core resolves a `templateRef` by. */
export function externalControlPlaneTemplateCrd(): Record<string, unknown> {
  const { group, kind, plural, version } = ExternalControlPlaneTemplates;
  return {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name: `${plural}.${group}`, labels: { "cluster.x-k8s.io/v1beta2": version } },
    spec: {
      group,
      scope: "Namespaced",
      names: { plural, singular: kind.toLowerCase(), kind, listKind: `${kind}List` },
      versions: [
        {
          name: version,
          served: true,
          storage: true,
          schema: {
            openAPIV3Schema: {
              type: "object",
              properties: {
                apiVersion: { type: "string" },
                kind: { type: "string" },
                metadata: { type: "object" },
                spec: {
                  type: "object",
                  required: ["template"],
                  properties: {
                    template: {
                      type: "object",
                      properties: {
                        metadata: { type: "object", "x-kubernetes-preserve-unknown-fields": true },
                        spec: { type: "object" },
                      },
                    },
                  },
                },
              },
            },
          },
        },
      ],
    },
  };
}

/** An {@link ExternalControlPlaneTemplates} object, for a ClusterClass to name (install its CRD first). */
export function externalControlPlaneTemplate(name: string, namespace: string): KubernetesObject {
  const { group, version, kind } = ExternalControlPlaneTemplates;
  return {
    apiVersion: `${group}/${version}`,
    kind,
    metadata: { name, namespace },
    spec: { template: { spec: {} } },
  } as KubernetesObject;
}

/** A running {@link playManagedControlPlanes}. */
export interface ManagedControlPlaneStandIn {
  /** Versions the stand-in has reported so far, oldest first (one entry per `status.version` write). */
  readonly reported: readonly string[];
  /** Stops it and waits for its last write. */
  stop(): Promise<void>;
}

/**
 * Plays the provider of the {@link ExternalControlPlanes} of one Cluster (label
 * `cluster.x-k8s.io/cluster-name`), as a managed control plane (EKS, AKS, GKE) would: it reports itself
 * externally managed and initialized, and once `spec.version` changes, `status.version` follows, so
 * core's topology controller sees the control plane upgraded and goes on to the workers. It polls
 * every `intervalMs` (default 100) until stopped.
 *
 * @example
 * ```ts
 * const standIn = playManagedControlPlanes(client, { namespace: "default", cluster: "c1" });
 * // … core's topology controller creates and upgrades the control plane
 * await standIn.stop();
 * ```
 */
export function playManagedControlPlanes(
  client: KubeClient,
  options: { readonly namespace: string; readonly cluster: string; readonly intervalMs?: number },
): ManagedControlPlaneStandIn {
  const reported: string[] = [];
  let stopped = false;
  const interval = options.intervalMs ?? 100;
  const loop = (async () => {
    while (!stopped) {
      try {
        const list = await client.list(ExternalControlPlanes, {
          namespace: options.namespace,
          labelSelector: `cluster.x-k8s.io/cluster-name=${options.cluster}`,
        });
        for (const cp of list.items as Array<
          KubernetesObject & {
            spec?: { version?: string };
            status?: {
              version?: string;
              externalManagedControlPlane?: boolean;
              initialization?: { controlPlaneInitialized?: boolean };
            };
          }
        >) {
          const version = cp.spec?.version;
          const status = cp.status;
          if (
            status?.externalManagedControlPlane === true &&
            status.initialization?.controlPlaneInitialized === true &&
            status.version === version
          ) {
            continue;
          }
          await client.mergePatchStatus(
            ExternalControlPlanes,
            { namespace: options.namespace, name: cp.metadata?.name ?? "" },
            {
              status: {
                externalManagedControlPlane: true,
                initialization: { controlPlaneInitialized: true },
                ...(version ? { version } : {}),
              },
            },
          );
          if (version && status?.version !== version) reported.push(version);
        }
      } catch {
        // A conflict or a control plane deleted meanwhile: the next round looks again.
      }
      await new Promise((r) => setTimeout(r, interval));
    }
  })();
  return {
    reported,
    stop: async () => {
      stopped = true;
      await loop;
    },
  };
}
