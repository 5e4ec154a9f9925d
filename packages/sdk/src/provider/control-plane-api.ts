/**
 * `PoolApi.readControlPlane` over the manager's client: the object a Cluster's `controlPlaneRef`
 * names, found as core finds a contract reference — the CRD `calculateCRDName(group, kind)`, the
 * newest version its `cluster.x-k8s.io/v1beta2` (else `v1beta1`) contract label lists, its plural.
 * Read with GETs (no informer): only a reconcile about to launch instances asks.
 *
 * @module
 */
import { contractLabel } from "../contract/constants.js";
import { calculateCRDName } from "../contract/format.js";
import type { KubeClient } from "../runtime/client.js";
import { isNotFound } from "../runtime/errors.js";
import type { ResourceDescriptor } from "../runtime/resource.js";
import type { ControlPlaneObject } from "./scope.js";

interface CrdObject extends ControlPlaneObject {
  spec?: { names?: { plural?: string }; scope?: string };
}

const CrdResource: ResourceDescriptor<CrdObject> = {
  group: "apiextensions.k8s.io",
  version: "v1",
  kind: "CustomResourceDefinition",
  plural: "customresourcedefinitions",
  scope: "Cluster",
};

/** Kube-aware order of API versions: v1 > v1beta2 > v1beta1 > v1alpha1; others below, lexically. */
function versionRank(version: string): [number, number, number] {
  const match = /^v(\d+)(?:(alpha|beta)(\d+))?$/.exec(version);
  if (!match) return [-1, 0, 0];
  const stage = match[2] === undefined ? 2 : match[2] === "beta" ? 1 : 0;
  return [stage, Number(match[1]), Number(match[3] ?? 0)];
}

function newest(versions: readonly string[]): string | undefined {
  return [...versions].sort((a, b) => {
    const [x, y] = [versionRank(a), versionRank(b)];
    for (let i = 0; i < 3; i++) if (x[i] !== y[i]) return (x[i] ?? 0) - (y[i] ?? 0);
    return a < b ? -1 : a > b ? 1 : 0;
  })[versions.length - 1];
}

/** Reads the control plane object `ref` names in `namespace`; `undefined` when it does not exist. */
export async function readControlPlane(
  client: KubeClient,
  ref: { readonly apiGroup: string; readonly kind: string; readonly name: string },
  namespace: string,
  signal?: AbortSignal,
): Promise<ControlPlaneObject | undefined> {
  const crdName = calculateCRDName(ref.apiGroup, ref.kind);
  const crd = await client.get(CrdResource, { name: crdName }, signal ? { signal } : {});
  const labels = crd.metadata?.labels ?? {};
  const listed = labels[contractLabel("v1beta2")] ?? labels[contractLabel("v1beta1")];
  const version = listed ? newest(listed.split("_").filter((v) => v !== "")) : undefined;
  if (!version) {
    throw new Error(
      `the CRD ${crdName} has no ${contractLabel("v1beta2")} contract label naming its versions`,
    );
  }
  const resource: ResourceDescriptor<ControlPlaneObject> = {
    group: ref.apiGroup,
    version,
    kind: ref.kind,
    plural: crd.spec?.names?.plural ?? crdName.slice(0, crdName.indexOf(".")),
    scope: crd.spec?.scope === "Cluster" ? "Cluster" : "Namespaced",
  };
  try {
    return await client.get(
      resource,
      resource.scope === "Cluster" ? { name: ref.name } : { namespace, name: ref.name },
      signal ? { signal } : {},
    );
  } catch (error) {
    if (isNotFound(error)) return undefined;
    throw error;
  }
}
